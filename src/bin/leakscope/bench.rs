//! `leakscope bench`: the engine's speed per batch size, as a table of ms per step, kernel
//! launches per step, the rate of the work the engine counts (`plan::cost`), seconds per attack
//! and peak memory.
use clap::Args;
use leakscope::options::ProtocolKind;
use leakscope::table::Dataset;
use leakscope::{AttackConfig, BackendKind, RunOptions, Runtime, run_attack};

use crate::args::{self, CliResult, EngineArgs, Hidden, ProtocolArg, TableArgs};
use crate::io::load;

/// `leakscope bench`'s settings.
#[derive(Args)]
pub struct BenchArgs {
    #[arg(long, default_value = "data/adult-sample.csv")]
    pub csv: std::path::PathBuf,
    #[arg(long, default_value = "salary")]
    pub label: String,
    #[arg(long, default_value_t = 30)]
    pub ensemble: usize,
    /// Steps actually run per batch size (the rate is extrapolated to --full-steps).
    #[arg(long, default_value_t = 150)]
    pub iterations: usize,
    #[arg(long, default_value_t = 1500)]
    pub full_steps: usize,
    #[arg(long, value_delimiter = ',', default_value = "8,32,128")]
    pub batch_sizes: Vec<usize>,
    #[arg(long, value_enum, default_value = "cpu")]
    pub backend: args::BackendArg,
    #[arg(long, value_enum, default_value = "accelerated")]
    pub engine: args::EngineArg,
    /// What the client sends: a gradient (fedsgd, the default) or θ0 − θE (fedavg).
    #[arg(long, value_enum, default_value = "fedsgd")]
    pub protocol: ProtocolArg,
    /// FedAvg: local epochs.
    #[arg(long, default_value_t = 1)]
    pub local_epochs: usize,
    /// FedAvg: rows per local step.
    #[arg(long, default_value_t = 8)]
    pub local_batch: usize,
    /// Hidden layer sizes of the client's network (default 100,100).
    #[arg(long, value_parser = args::parse_hidden)]
    pub hidden: Option<Hidden>,
}

/// The engine's speed per batch size: a table of ms per step and seconds per attack.
pub fn bench(args: BenchArgs) -> CliResult<()> {
    let BenchArgs {
        csv,
        label,
        ensemble,
        iterations,
        full_steps,
        batch_sizes,
        backend: b,
        engine,
        protocol,
        local_epochs,
        local_batch,
        hidden,
    } = args;
    let table = TableArgs {
        csv: csv.clone(),
        label,
        kinds: Vec::new(),
        ignore: Vec::new(),
        include: Vec::new(),
        task: Default::default(),
    };
    let dataset = load(&table)?;
    let rt = EngineArgs {
        backend: b,
        engine,
        quiet: true,
    }
    .runtime()?;
    println!(
        "TabLeak, ensemble {ensemble}, d = {} ({} rows of {}), {iterations} steps run per size, rate extrapolated to {full_steps}",
        dataset.d(),
        dataset.n(),
        csv.display()
    );
    println!("backend: {}", rt.info.label);
    println!(
        "| B | ms/step | steps/s | launches/step | counted GFLOP/s | setup+matching s | s per {full_steps}-step attack | peak RSS MiB |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for &bs in &batch_sizes {
        let options = RunOptions {
            label: dataset.label.clone(),
            batch_size: bs,
            ensemble: Some(ensemble),
            iterations: iterations.max(2),
            protocol: match protocol {
                ProtocolArg::Fedsgd => ProtocolKind::Fedsgd,
                ProtocolArg::Fedavg => ProtocolKind::Fedavg,
            },
            local_epochs,
            local_batch,
            hidden: hidden
                .as_ref()
                .map_or_else(|| RunOptions::default().hidden, |h| h.0.clone()),
            ..RunOptions::default()
        };
        let config = AttackConfig {
            report_every: 1,
            // Every step is timed: no member may stop.
            early_stop: false,
            ..options.attack_config().map_err(|e| e.to_string())?
        };
        // The work the engine counts for one step of the whole ensemble (`plan::cost`).
        let work = config.work(&dataset);
        let flops_per_step = work.flops_per_member_step() * work.members as f64;
        let mut marks: Vec<(usize, f64)> = Vec::new();
        let t0 = std::time::Instant::now();
        let mut on_progress = |p: &leakscope::attack::Progress| {
            marks.push((p.step, p.elapsed));
            true
        };
        pollster::block_on(run_attack(&rt, &dataset, &config, &mut on_progress)).map_err(|e| e.to_string())?;
        let total = t0.elapsed().as_secs_f64();
        // Steady-state rate between the first and the last report (step 1 pays warm-up).
        let (s0, t_first) = marks[0];
        let (s1, t_last) = *marks.last().unwrap();
        let per_step = (t_last - t_first) / (s1 - s0) as f64;
        let fixed = (total - t_last).max(0.0) + t_first;
        println!(
            "| {bs} | {:.2} | {:.1} | {} | {:.1} | {:.2} | {:.1} | {:.0} |",
            per_step * 1e3,
            1.0 / per_step,
            launches_per_step(&rt, &dataset, &config)?,
            flops_per_step / per_step / 1e9,
            fixed,
            fixed + per_step * full_steps as f64,
            peak_rss_mib()
        );
    }
    Ok(())
}

/// GPU kernel launches per attack step (cubecl's launch observer): the difference between a
/// 12-step and a 2-step run, so setup and the final relaxation cancel out. "—" on the CPU.
#[cfg(any(feature = "wgpu", feature = "cuda"))]
fn launches_per_step(rt: &Runtime, dataset: &Dataset, config: &AttackConfig) -> CliResult<String> {
    if rt.kind() == BackendKind::Cpu {
        return Ok("—".into());
    }
    let count = |steps: usize| -> CliResult<usize> {
        let c = AttackConfig {
            iterations: steps,
            report_every: 1000,
            ..config.clone()
        };
        let (n, out) =
            leakscope::runtime::count_launches(|| pollster::block_on(run_attack(rt, dataset, &c, &mut |_| true)));
        out.map_err(|e| e.to_string())?;
        Ok(n)
    };
    Ok(format!("{:.1}", (count(12)? as f64 - count(2)? as f64) / 10.0))
}

#[cfg(not(any(feature = "wgpu", feature = "cuda")))]
fn launches_per_step(_: &Runtime, _: &Dataset, _: &AttackConfig) -> CliResult<String> {
    Ok("—".into())
}

/// Peak resident memory of this process so far (Linux), in MiB.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

//! leakscope command line: attack one batch, sweep many, or benchmark the engine.
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use leakscope::config::{EpochPrior, ProtocolKind};
use leakscope::report::render_text;
use leakscope::table::{ColumnKind, Dataset, DatasetOptions, parse_csv, summarize};
use leakscope::{AttackConfig, AttackKind, BackendKind, LabelMode, Report, RunOptions, Runtime, run_attack};

#[derive(Parser)]
#[command(
    name = "leakscope",
    version,
    about = "How much of your table could a federated-learning server reconstruct?"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show the columns, their inferred kinds and the likely label columns of a CSV.
    Inspect {
        #[arg(long)]
        csv: PathBuf,
    },
    /// Attack one batch drawn from the table and print what leaked.
    Attack {
        #[command(flatten)]
        common: Common,
        #[arg(long, value_enum, default_value = "tableak")]
        attack: AttackArg,
        #[arg(long, default_value_t = 32)]
        batch_size: usize,
        /// Rows to print (the JSON report holds them all).
        #[arg(long, default_value_t = 8)]
        rows: usize,
    },
    /// Many batches × batch sizes × attacks: mean ± std of accuracy (the paper's Table 1 layout).
    Sweep {
        #[command(flatten)]
        common: Common,
        #[arg(long, value_delimiter = ',', default_value = "8,32,128")]
        batch_sizes: Vec<usize>,
        #[arg(long, default_value_t = 10)]
        batches: usize,
        #[arg(long, value_delimiter = ',', value_enum, default_value = "tableak,cosine,random")]
        attacks: Vec<AttackArg>,
        /// FedAvg: local epochs to sweep (overrides --local-epochs).
        #[arg(long = "local-epochs-list", value_delimiter = ',')]
        local_epochs_list: Vec<usize>,
        /// FedAvg: local batch sizes to sweep (overrides --local-batch).
        #[arg(long = "local-batches", value_delimiter = ',')]
        local_batches: Vec<usize>,
    },
    /// Time TabLeak steps at B = 8, 32, 128 and extrapolate a full attack.
    Bench {
        #[arg(long, default_value = "data/adult-sample.csv")]
        csv: PathBuf,
        #[arg(long, default_value = "salary")]
        label: String,
        #[arg(long, default_value_t = 30)]
        ensemble: usize,
        /// Steps actually run per batch size (the rate is extrapolated to --full-steps).
        #[arg(long, default_value_t = 150)]
        iterations: usize,
        #[arg(long, default_value_t = 1500)]
        full_steps: usize,
        #[arg(long, value_delimiter = ',', default_value = "8,32,128")]
        batch_sizes: Vec<usize>,
        #[arg(long, value_enum, default_value = "cpu")]
        backend: BackendArg,
        #[arg(long, value_enum, default_value = "accelerated")]
        engine: EngineArg,
    },
}

#[derive(Args)]
struct Common {
    #[arg(long)]
    csv: PathBuf,
    #[arg(long)]
    label: String,
    /// TabLeak's members (default 30 on FedSGD, 15 on FedAvg).
    #[arg(long)]
    ensemble: Option<usize>,
    /// Optimisation steps (default 1500).
    #[arg(long)]
    iterations: Option<usize>,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[arg(long, value_enum, default_value = "known")]
    labels: LabelArg,
    /// What the client sends: a gradient (fedsgd) or θ0 − θE after local training (fedavg, with
    /// `--batch-size` as its rows).
    #[arg(long, value_enum, default_value = "fedsgd")]
    protocol: ProtocolArg,
    /// FedAvg: rows per local step (default 32).
    #[arg(long)]
    local_batch: Option<usize>,
    /// FedAvg: local epochs (default 1).
    #[arg(long)]
    local_epochs: Option<usize>,
    /// FedAvg: the client's SGD step (default 0.01).
    #[arg(long)]
    client_lr: Option<f64>,
    /// TabLeak on FedAvg: the epoch prior's weight λ, or `auto` to choose it by how well each
    /// candidate's reconstruction fits the update (no ground truth; default).
    #[arg(long, value_parser = parse_prior)]
    epoch_prior: Option<EpochPrior>,
    #[arg(long, value_enum, default_value = "cpu")]
    backend: BackendArg,
    /// What computes the steps: the backend's accelerator (the fused CPU kernel, the GPU kernels) or
    /// the definition itself as burn tensor ops (slower; what the accelerators are tested against).
    #[arg(long, value_enum, default_value = "accelerated")]
    engine: EngineArg,
    /// Hidden layer sizes of the client's network (default 100,100).
    #[arg(long, value_delimiter = ',')]
    hidden: Option<Vec<usize>>,
    /// Force a column's kind: NAME=categorical or NAME=continuous (repeatable).
    #[arg(long = "kind", value_parser = parse_kind)]
    kinds: Vec<(String, ColumnKind)>,
    /// Leave a column out (repeatable).
    #[arg(long)]
    ignore: Vec<String>,
    /// Defence: clip each client's update to this L2 norm.
    #[arg(long)]
    clip: Option<f64>,
    /// Defence: Gaussian noise multiplier σ (noise std σ·C, or σ without clipping).
    #[arg(long, default_value_t = 0.0)]
    noise: f64,
    /// Defence: CAFE's fake gradients, the closest of this many random draws.
    #[arg(long)]
    fake_gradients: Option<usize>,
    /// The δ at which the report states the (ε, δ) of one release (default 1e-5).
    #[arg(long)]
    delta: Option<f64>,
    /// Clients whose updates are averaged before the server sees them (secure aggregation):
    /// the attack faces clients × batch-size rows.
    #[arg(long, default_value_t = 1)]
    clients: usize,
    /// Train the network this many epochs on the table before the attacked round.
    #[arg(long, default_value_t = 0)]
    train_epochs: usize,
    /// Adam learning rate (default: 0.1 for TabLeak, the reference's 0.06 for the baselines).
    #[arg(long)]
    lr: Option<f64>,
    /// Write the full report(s) as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum AttackArg {
    Tableak,
    Cosine,
    Dlg,
    Random,
}

#[derive(Clone, Copy, ValueEnum)]
enum ProtocolArg {
    Fedsgd,
    Fedavg,
}

fn parse_prior(s: &str) -> Result<EpochPrior, String> {
    if s == "auto" {
        return Ok(EpochPrior::Auto);
    }
    s.parse::<f64>()
        .map(EpochPrior::Fixed)
        .map_err(|_| format!("{s:?} is neither a number nor auto"))
}

#[derive(Clone, Copy, ValueEnum)]
enum LabelArg {
    Known,
    Restored,
}

#[derive(Clone, Copy, ValueEnum)]
enum BackendArg {
    /// The CPU: the fused kernel (burn's flex backend for the definition).
    Cpu,
    /// Another name for the CPU backend.
    #[value(alias = "flex")]
    Ndarray,
    /// burn's wgpu backend: Vulkan, Metal or DX12.
    Wgpu,
    /// burn's CUDA backend (a build with `--features cuda`).
    Cuda,
}

#[derive(Clone, Copy, ValueEnum)]
enum EngineArg {
    Accelerated,
    Definition,
}

fn parse_kind(s: &str) -> Result<(String, ColumnKind), String> {
    let (name, kind) = s.rsplit_once('=').ok_or("expected NAME=categorical|continuous")?;
    let kind = match kind {
        "categorical" | "cat" => ColumnKind::Categorical,
        "continuous" | "cont" | "numeric" => ColumnKind::Continuous,
        other => return Err(format!("unknown kind {other:?}: use categorical or continuous")),
    };
    Ok((name.to_string(), kind))
}

impl From<AttackArg> for AttackKind {
    fn from(a: AttackArg) -> Self {
        match a {
            AttackArg::Tableak => AttackKind::Tableak,
            AttackArg::Cosine => AttackKind::Cosine,
            AttackArg::Dlg => AttackKind::Dlg,
            AttackArg::Random => AttackKind::Random,
        }
    }
}

fn backend(b: BackendArg) -> BackendKind {
    match b {
        BackendArg::Cpu | BackendArg::Ndarray => BackendKind::Cpu,
        BackendArg::Wgpu => BackendKind::Wgpu,
        BackendArg::Cuda => BackendKind::Cuda,
    }
}

type CliResult<T> = Result<T, String>;

/// Read a CSV, refusing one over the size limit before loading it into memory.
fn read_csv(csv: &Path) -> CliResult<leakscope::table::RawTable> {
    let limit = leakscope::table::MAX_CSV_BYTES;
    let size = std::fs::metadata(csv)
        .map_err(|e| format!("cannot read {}: {e}", csv.display()))?
        .len();
    if size > limit as u64 {
        let e = leakscope::Error::TooLarge {
            size: size as usize,
            limit,
        };
        return Err(format!("{}: {e}", csv.display()));
    }
    let bytes = std::fs::read(csv).map_err(|e| format!("cannot read {}: {e}", csv.display()))?;
    parse_csv(&bytes, limit).map_err(|e| format!("{}: {e}", csv.display()))
}

fn load(csv: &Path, label: &str, kinds: &[(String, ColumnKind)], ignore: &[String]) -> CliResult<Dataset> {
    let raw = read_csv(csv)?;
    let options = DatasetOptions {
        label: label.to_string(),
        kinds: kinds.to_vec(),
        ignore: ignore.to_vec(),
    };
    Dataset::from_raw(&raw, &options).map_err(|e| format!("{}: {e}", csv.display()))
}

impl Common {
    /// The options as the engine takes them: what is not given keeps the engine's default.
    fn options(&self, attack: AttackKind, batch_size: usize, seed: u64) -> RunOptions {
        let mut o = RunOptions {
            label: self.label.clone(),
            attack,
            batch_size,
            ensemble: self.ensemble,
            seed,
            labels: match self.labels {
                LabelArg::Known => LabelMode::Known,
                LabelArg::Restored => LabelMode::Restored,
            },
            protocol: match self.protocol {
                ProtocolArg::Fedsgd => ProtocolKind::Fedsgd,
                ProtocolArg::Fedavg => ProtocolKind::Fedavg,
            },
            lr: self.lr,
            clip: self.clip,
            noise: self.noise,
            fake_gradients: self.fake_gradients,
            delta: self.delta,
            clients: self.clients,
            training_epochs: self.train_epochs,
            ..RunOptions::default()
        };
        if let Some(v) = self.iterations {
            o.iterations = v;
        }
        if let Some(v) = &self.hidden {
            o.hidden = v.clone();
        }
        if let Some(v) = self.local_batch {
            o.local_batch = v;
        }
        if let Some(v) = self.local_epochs {
            o.local_epochs = v;
        }
        if let Some(v) = self.client_lr {
            o.client_lr = v;
        }
        if let Some(v) = self.epoch_prior {
            o.epoch_prior = v;
        }
        o
    }

    fn config(&self, attack: AttackKind, batch_size: usize, seed: u64) -> AttackConfig {
        self.options(attack, batch_size, seed).attack_config()
    }
}

/// Write a file whole or not at all: to a sibling temporary file, then rename.
fn write_atomically(path: &Path, text: &str) -> CliResult<()> {
    let tmp = path.with_extension("json.partial");
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn bar(quiet: bool, len: u64, prefix: String) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} steps, {msg} ({elapsed}, eta {eta})")
            .unwrap()
            .progress_chars("=> "),
    );
    pb.set_prefix(prefix);
    pb
}

fn attack_once(runtime: &Runtime, dataset: &Dataset, config: &AttackConfig, pb: &ProgressBar) -> CliResult<Report> {
    let mut on_progress = |p: &leakscope::attack::Progress| {
        pb.set_position(p.step as u64);
        if let Some(l) = p.loss {
            pb.set_message(format!("loss {l:.4}"));
        }
        true
    };
    pollster::block_on(run_attack(runtime, dataset, config, &mut on_progress)).map_err(|e| e.to_string())
}

fn runtime(b: BackendArg, engine: EngineArg) -> CliResult<Runtime> {
    let rt = pollster::block_on(Runtime::select(backend(b))).map_err(|e| e.to_string())?;
    Ok(match engine {
        EngineArg::Accelerated => rt,
        EngineArg::Definition => rt.definition(),
    })
}

fn run(cli: Cli) -> CliResult<()> {
    match cli.command {
        Command::Inspect { csv } => {
            let raw = read_csv(&csv)?;
            let s = summarize(&raw);
            println!("{} rows, {} with a missing value", s.rows, s.rows_with_missing);
            println!(
                "{:<24} {:<12} {:>8} {:>8}  examples",
                "column", "kind", "distinct", "missing"
            );
            for c in &s.columns {
                let kind = format!("{:?}", c.kind).to_lowercase();
                println!(
                    "{:<24} {:<12} {:>8} {:>8}  {}",
                    c.name,
                    kind,
                    c.distinct,
                    c.missing,
                    c.examples.join(", ")
                );
            }
            println!("label candidates: {}", s.label_candidates.join(", "));
        }
        Command::Attack {
            common,
            attack,
            batch_size,
            rows,
        } => {
            let dataset = load(&common.csv, &common.label, &common.kinds, &common.ignore)?;
            let rt = runtime(common.backend, common.engine)?;
            let config = common.config(attack.into(), batch_size, common.seed);
            let pb = bar(
                common.quiet || matches!(attack, AttackArg::Random),
                config.iterations as u64,
                "attack".into(),
            );
            let report = attack_once(&rt, &dataset, &config, &pb)?;
            pb.finish_and_clear();
            print!("{}", render_text(&report, rows));
            if let Some(path) = &common.json {
                write_atomically(path, &serde_json::to_string_pretty(&report).unwrap())?;
                println!("report written to {}", path.display());
            }
        }
        Command::Sweep {
            mut common,
            batch_sizes,
            batches,
            attacks,
            local_epochs_list,
            local_batches,
        } => {
            // Batch k is drawn with seed + k: all of them must be seeds, checked before any runs.
            if common.seed.checked_add(batches.saturating_sub(1) as u64).is_none() {
                return Err(format!(
                    "--seed {} with --batches {batches} runs past the largest seed ({}): use a seed of at most {}",
                    common.seed,
                    u64::MAX,
                    u64::MAX - batches.saturating_sub(1) as u64
                ));
            }
            let dataset = load(&common.csv, &common.label, &common.kinds, &common.ignore)?;
            let rt = runtime(common.backend, common.engine)?;
            let mut all: Vec<Report> = Vec::new();
            let mut lines = Vec::new();
            // FedAvg sweeps its local epochs × local batches too (one point each for FedSGD).
            let fedavg = matches!(common.protocol, ProtocolArg::Fedavg);
            let epochs_axis: Vec<Option<usize>> = if fedavg && !local_epochs_list.is_empty() {
                local_epochs_list.iter().map(|&e| Some(e)).collect()
            } else {
                vec![common.local_epochs]
            };
            let batches_axis: Vec<Option<usize>> = if fedavg && !local_batches.is_empty() {
                local_batches.iter().map(|&b| Some(b)).collect()
            } else {
                vec![common.local_batch]
            };
            for &b in &batch_sizes {
                for &epochs in &epochs_axis {
                    for &local_batch in &batches_axis {
                        common.local_epochs = epochs;
                        common.local_batch = local_batch;
                        for &a in &attacks {
                            let kind: AttackKind = a.into();
                            let mut reports = Vec::new();
                            for k in 0..batches {
                                // Batch k has the same seed for every attack, so attacks are compared on the same rows.
                                let config = common.config(kind, b, common.seed + k as u64);
                                let quiet = common.quiet || kind == AttackKind::Random;
                                let pb = bar(
                                    quiet,
                                    config.iterations as u64,
                                    format!("{kind} B={b} batch {}/{batches}", k + 1),
                                );
                                let r = attack_once(&rt, &dataset, &config, &pb)?;
                                pb.finish_and_clear();
                                reports.push(r);
                            }
                            lines.push(summary_line(&reports[0].config, kind, &reports));
                            eprintln!("{}", lines.last().unwrap());
                            all.extend(reports);
                        }
                    }
                }
            }
            println!("\n{}", summary_header());
            for l in &lines {
                println!("{l}");
            }
            println!("backend: {}", rt.info.label);
            if let Some(path) = &common.json {
                write_atomically(path, &serde_json::to_string_pretty(&all).unwrap())?;
                println!("reports written to {}", path.display());
            }
        }
        Command::Bench {
            csv,
            label,
            ensemble,
            iterations,
            full_steps,
            batch_sizes,
            backend: b,
            engine,
        } => {
            let dataset = load(&csv, &label, &[], &[])?;
            let rt = runtime(b, engine)?;
            println!(
                "TabLeak, ensemble {ensemble}, d = {} ({} rows of {}), {iterations} steps run per size, rate extrapolated to {full_steps}",
                dataset.d(),
                dataset.n(),
                csv.display()
            );
            println!("backend: {}", rt.info.label);
            println!(
                "| B | ms/step | steps/s | launches/step | setup+matching s | s per {full_steps}-step attack | peak RSS MiB |"
            );
            println!("|---|---|---|---|---|---|---|");
            for &bs in &batch_sizes {
                let config = AttackConfig {
                    batch_size: bs,
                    ensemble,
                    iterations: iterations.max(2),
                    report_every: 1,
                    ..AttackConfig::default()
                };
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
                    "| {bs} | {:.2} | {:.1} | {} | {:.2} | {:.1} | {:.0} |",
                    per_step * 1e3,
                    1.0 / per_step,
                    launches_per_step(&rt, &dataset, &config)?,
                    fixed,
                    fixed + per_step * full_steps as f64,
                    peak_rss_mib()
                );
            }
        }
    }
    Ok(())
}

fn summary_header() -> String {
    format!(
        "| {:>5} | {:<14} | {:<8} | {:>7} | {:<15} | {:<15} | {:<15} |\n|---|---|---|---|---|---|---|",
        "batch", "protocol", "attack", "batches", "accuracy %", "categorical %", "continuous %"
    )
}

fn summary_line(config: &AttackConfig, kind: AttackKind, reports: &[Report]) -> String {
    let b = config.batch_size;
    let protocol = match &config.protocol {
        leakscope::config::Protocol::Fedsgd => "FedSGD".to_string(),
        leakscope::config::Protocol::Fedavg(t) => format!("FedAvg E={} b={}", t.epochs, t.local_batch),
    };
    let stat = |vals: Vec<f64>| {
        if vals.is_empty() {
            return "—".to_string();
        }
        let n = vals.len() as f64;
        let mean = vals.iter().sum::<f64>() / n;
        let sd = if vals.len() > 1 {
            (vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        format!("{:.1} ± {:.1}", 100.0 * mean, 100.0 * sd)
    };
    format!(
        "| {:>5} | {:<14} | {:<8} | {:>7} | {:<15} | {:<15} | {:<15} |",
        b,
        protocol,
        kind.to_string(),
        reports.len(),
        stat(reports.iter().map(|r| r.accuracy.total).collect()),
        stat(reports.iter().filter_map(|r| r.accuracy.categorical).collect()),
        stat(reports.iter().filter_map(|r| r.accuracy.continuous).collect()),
    )
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

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

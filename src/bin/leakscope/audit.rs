//! `leakscope audit` and `leakscope merge`: a grid of attacks on one table, whole or one share at
//! a time, and the shares joined. Files are written whole (temporary name, then rename), so an
//! interrupted run never leaves a half report.
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use leakscope::audit::svg::all_svgs;
use leakscope::audit::{Audit, AuditOptions, Shard, ShardResults, merge, render_table, run_shard};
use leakscope::options::ProtocolKind;

use crate::args::CliResult;
use crate::args::{AttackArg, AttackArgs, EngineArgs, TableArgs, run_options};
use crate::io::{load, write_atomically};

#[derive(Clone, Copy, PartialEq, ValueEnum)]
pub enum StudyArg {
    BatchSize,
    Noise,
    Clients,
    Fedavg,
    ClientRows,
    Training,
}

/// The audit's grid. Lists left out keep the library's defaults (`AuditOptions::default`).
#[derive(Args)]
pub struct AuditArgs {
    #[command(flatten)]
    pub table: TableArgs,
    #[command(flatten)]
    pub attack: AttackArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Directory for audit.json, audit.md and the plots (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Batches per setting (default 5).
    #[arg(long)]
    pub batches: Option<usize>,
    #[arg(long, value_delimiter = ',', value_enum)]
    pub attacks: Option<Vec<AttackArg>>,
    /// The batch the other studies hold fixed (default 32).
    #[arg(long)]
    pub reference_batch: Option<usize>,
    /// FedSGD batch sizes (default 8,32,128).
    #[arg(long, value_delimiter = ',')]
    pub batch_sizes: Option<Vec<usize>>,
    /// Noise multipliers σ, each with clipping to --clip (default 0,0.001,0.01,0.1).
    #[arg(long, value_delimiter = ',')]
    pub noise_scales: Option<Vec<f64>>,
    /// Clipping norm of the noise study (default 1).
    #[arg(long)]
    pub clip: Option<f64>,
    /// The δ of the ε reported beside each noise scale (default 1e-5).
    #[arg(long)]
    pub delta: Option<f64>,
    /// Rounds of training the noise study's ε is accounted over (default 100; `--rounds` is CAFE's).
    #[arg(long)]
    pub training_rounds: Option<u64>,
    /// The chance a client takes part in a round, for that account (default 1).
    #[arg(long)]
    pub sample_rate: Option<f64>,
    /// Run this many canaries (and as many held out) through each noise scale's DP-FedAvg over
    /// those rounds: an ε measured beside the accountant's (default 0: none).
    #[arg(long)]
    pub canaries: Option<usize>,
    /// Clients averaged (default 1,2,4,8).
    #[arg(long, value_delimiter = ',')]
    pub clients: Option<Vec<usize>>,
    /// FedAvg local epochs (default 1,5) × --local-batches (default 32,8).
    #[arg(long, value_delimiter = ',')]
    pub local_epochs: Option<Vec<usize>>,
    #[arg(long, value_delimiter = ',')]
    pub local_batches: Option<Vec<usize>>,
    /// FedAvg: the client's rows in the client-size study (default 32,64,128,256,512; sizes above
    /// the table's rows are left out), each at every --client-epochs (default 1,5) in local
    /// batches of --client-batch (default 32), trained by the recipe the flags state.
    #[arg(long, value_delimiter = ',')]
    pub client_rows: Option<Vec<usize>>,
    #[arg(long, value_delimiter = ',')]
    pub client_epochs: Option<Vec<usize>>,
    #[arg(long)]
    pub client_batch: Option<usize>,
    /// Epochs of training before the attack (default 0,1,5).
    #[arg(long, value_delimiter = ',')]
    pub train_epochs: Option<Vec<usize>>,
    /// Leave studies out.
    #[arg(long, value_delimiter = ',', value_enum)]
    pub skip: Vec<StudyArg>,
    /// The smaller grid the page runs (`AuditOptions::quick`), before the lists above.
    #[arg(long)]
    pub quick: bool,
    /// Run share i of n (0 ≤ i < n) and write DIR/shard-i-of-n.json for `leakscope merge`.
    #[arg(long)]
    pub shard: Option<Shard>,
}

impl AuditArgs {
    fn options(&self) -> AuditOptions {
        let mut o = if self.quick {
            AuditOptions::quick()
        } else {
            AuditOptions::default()
        };
        o.run = run_options(&self.table, &self.attack, None);
        o.run.protocol = ProtocolKind::Fedsgd;
        o.run.delta = self.delta;
        if let Some(v) = self.batches {
            o.batches = v;
        }
        if let Some(v) = &self.attacks {
            o.attacks = v.iter().map(|&a| a.into()).collect();
        }
        if let Some(v) = self.reference_batch {
            o.reference_batch = v;
        }
        if let Some(v) = &self.batch_sizes {
            o.batch_sizes = v.clone();
        }
        if let Some(v) = &self.noise_scales {
            o.noise_scales = v.clone();
        }
        if let Some(v) = self.clip {
            o.clip = v;
        }
        if let Some(v) = self.training_rounds {
            o.rounds = v;
        }
        if let Some(v) = self.sample_rate {
            o.sample_rate = v;
        }
        if let Some(v) = self.canaries {
            o.canaries = v;
        }
        if let Some(v) = &self.clients {
            o.clients = v.clone();
        }
        if let Some(v) = &self.local_epochs {
            o.local_epochs = v.clone();
        }
        if let Some(v) = &self.local_batches {
            o.local_batches = v.clone();
        }
        if let Some(v) = &self.train_epochs {
            o.training_epochs = v.clone();
        }
        if let Some(v) = &self.client_rows {
            o.client_rows = v.clone();
        }
        if let Some(v) = &self.client_epochs {
            o.client_epochs = v.clone();
        }
        if let Some(v) = self.client_batch {
            o.client_batch = v;
        }
        for s in &self.skip {
            match s {
                StudyArg::BatchSize => o.batch_sizes.clear(),
                StudyArg::Noise => o.noise_scales.clear(),
                StudyArg::Clients => o.clients.clear(),
                StudyArg::Fedavg => {
                    o.local_epochs.clear();
                    o.local_batches.clear();
                }
                StudyArg::ClientRows => {
                    o.client_rows.clear();
                    o.client_epochs.clear();
                }
                StudyArg::Training => o.training_epochs.clear(),
            }
        }
        o
    }
}

fn create_dir(dir: &Path) -> CliResult<()> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

/// audit.json, audit.md and one SVG per plot.
fn write_audit(dir: &Path, audit: &Audit) -> CliResult<Vec<PathBuf>> {
    create_dir(dir)?;
    let mut written = Vec::new();
    let mut put = |name: String, text: &str| -> CliResult<()> {
        let path = dir.join(name);
        write_atomically(&path, text)?;
        written.push(path);
        Ok(())
    };
    put("audit.json".into(), &serde_json::to_string_pretty(audit).unwrap())?;
    put("audit.md".into(), &render_table(audit))?;
    for (stem, svg) in all_svgs(audit) {
        put(format!("{stem}.svg"), &svg)?;
    }
    Ok(written)
}

pub fn audit(args: AuditArgs) -> CliResult<()> {
    let mut options = args.options();
    let dataset = load(&args.table)?;
    let over = options.fit_table(dataset.n());
    if !over.is_empty() {
        eprintln!(
            "client sizes {over:?} left out of the client-size study: the table has {} rows",
            dataset.n()
        );
    }
    // Every setting is checked against the table before anything runs.
    let cells = options.cells(&dataset).map_err(|e| e.to_string())?;
    let shard = args.shard.unwrap_or(Shard::WHOLE);
    let rt = args.engine.runtime()?;
    let mine = cells.iter().filter(|c| shard.holds(c.index)).count();
    eprintln!(
        "audit of {}: {} cells{} on {}",
        args.table.csv.display(),
        cells.len(),
        if shard.count > 1 {
            format!(", share {}/{} runs {mine}", shard.index, shard.count)
        } else {
            String::new()
        },
        rt.info.label
    );
    let pb = if args.engine.quiet {
        ProgressBar::hidden()
    } else {
        let pb = ProgressBar::new(1000);
        pb.set_style(
            ProgressStyle::with_template("audit [{bar:30}] {percent}% cell {msg} ({elapsed}, eta {eta})")
                .unwrap()
                .progress_chars("=> "),
        );
        pb
    };
    let mut on = |p: &leakscope::audit::AuditProgress| {
        pb.set_position((1000.0 * p.fraction) as u64);
        pb.set_message(format!("{}/{}: {}", p.done + 1, p.cells, p.current));
        true
    };
    let results: ShardResults =
        pollster::block_on(run_shard(&rt, &dataset, &options, shard, &mut on)).map_err(|e| e.to_string())?;
    pb.finish_and_clear();
    if shard.count > 1 {
        create_dir(&args.out)?;
        let path = args.out.join(format!("shard-{}-of-{}.json", shard.index, shard.count));
        write_atomically(&path, &serde_json::to_string_pretty(&results).unwrap())?;
        println!(
            "share {}/{}: {} cells written to {}; join the shares with `leakscope merge DIR... --out DIR`",
            shard.index,
            shard.count,
            results.results.len(),
            path.display()
        );
        return Ok(());
    }
    // One run is one share merged, through the same JSON a share is written as: serde_json reads
    // some floats back a bit off, and this keeps one run byte-identical to merged shares.
    let reread: ShardResults = serde_json::from_str(&serde_json::to_string(&results).unwrap()).unwrap();
    let audit = merge(vec![reread]).map_err(|e| e.to_string())?;
    print!("{}", render_table(&audit));
    for path in write_audit(&args.out, &audit)? {
        println!("wrote {}", path.display());
    }
    Ok(())
}

#[derive(Args)]
pub struct MergeArgs {
    /// Directories holding shard-*.json files (or the files themselves).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    #[arg(long)]
    pub out: PathBuf,
}

fn shard_files(input: &Path) -> CliResult<Vec<PathBuf>> {
    if input.is_file() {
        return Ok(vec![input.to_path_buf()]);
    }
    let entries = std::fs::read_dir(input).map_err(|e| format!("cannot read {}: {e}", input.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with("shard-") && name.ends_with(".json")
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("{} holds no shard-*.json files", input.display()));
    }
    Ok(files)
}

pub fn merge_command(args: MergeArgs) -> CliResult<()> {
    let mut shares = Vec::new();
    for input in &args.inputs {
        for file in shard_files(input)? {
            let text = std::fs::read_to_string(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            let share: ShardResults =
                serde_json::from_str(&text).map_err(|e| format!("{} is not an audit share: {e}", file.display()))?;
            shares.push(share);
        }
    }
    let n = shares.len();
    let audit = merge(shares).map_err(|e| e.to_string())?;
    print!("{}", render_table(&audit));
    eprintln!("merged {n} shares, {} cells", audit.cells.len());
    for path in write_audit(&args.out, &audit)? {
        println!("wrote {}", path.display());
    }
    Ok(())
}

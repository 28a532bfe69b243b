//! leakscope command line: attack one batch, sweep many, audit a table over a grid of settings,
//! or benchmark the engine. A thin shell: every default and rule is the library's.
mod args;
mod audit;
mod bench;
mod io;
mod received;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use indicatif::ProgressBar;
use leakscope::audit::summary::MeanStd;
use leakscope::audit::{AuditProgress, Job, run_jobs};
use leakscope::report::text::render_text;
use leakscope::table::{Dataset, summarize};
use leakscope::{AttackConfig, AttackKind, AttackSpec, Report, Runtime, run_attack};

use args::{AttackArg, AttackArgs, CliResult, ClientArgs, EngineArgs, TableArgs, run_options};
use io::{bar, load, read_csv, write_atomically};

#[derive(Parser)]
#[command(
    name = "leakscope",
    version,
    about = "How much of your table could a federated-learning server reconstruct?",
    // A later option wins over an earlier one (scripts append overrides).
    args_override_self = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show how a CSV is read: its encoding and delimiter, each column's kind and whether it is
    /// used (and why not), what is dropped, and the likely label columns.
    Inspect {
        #[arg(long)]
        csv: std::path::PathBuf,
        /// Print the schema as JSON: the object the npm package's `inspect` returns.
        #[arg(long)]
        json: bool,
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
        show: usize,
    },
    /// Many batches × batch sizes × attacks: mean ± std of accuracy (the paper's Table 1 layout).
    Sweep(SweepArgs),
    /// A table's exposure over a grid of settings (batch size, noise, clients averaged, FedAvg, the
    /// FedAvg client's size, training first): accuracy of each attack, mean ± std over batches,
    /// plots and a verdict.
    Audit(Box<audit::AuditArgs>),
    /// Join the shares of an audit run with --shard into the report one run would give.
    Merge(audit::MergeArgs),
    /// Write a table's encoding (columns, categories, standardisation) as JSON, for
    /// `attack-update` and for a client exporting its update; --hidden, --activation and --head
    /// are written beside it, and an update attacked against it is taken as that model.
    Encoding(received::EncodingArgs),
    /// Attack an update that came from elsewhere (safetensors or JSON): the reconstruction and
    /// its confidence, without accuracy (there is no ground truth).
    AttackUpdate(Box<received::AttackUpdateArgs>),
    /// Time TabLeak steps at B = 8, 32, 128 and extrapolate a full attack.
    Bench(bench::BenchArgs),
    /// ε over many rounds of clipped, noised updates with client sampling (RDP accounting, as
    /// Opacus), beside ε per round and ε against the server that knows whom it sampled.
    Privacy(PrivacyArgs),
}

/// `leakscope privacy`'s settings.
#[derive(Args)]
struct PrivacyArgs {
    /// Noise std over the clipping norm (σ in `--noise`).
    #[arg(long)]
    noise_multiplier: f64,
    /// Probability that a client takes part in a round.
    #[arg(long, default_value_t = 1.0)]
    sample_rate: f64,
    #[arg(long)]
    rounds: u64,
    #[arg(long, default_value_t = leakscope::client::privacy::DEFAULT_DELTA)]
    delta: f64,
    /// Run this many canaries through the same mechanism for an ε measured beside the
    /// accountant's (Andrew et al., ICLR 2024; on the Gaussian mechanism alone).
    #[arg(long)]
    canaries: Option<usize>,
    /// Canaries drawn alike and never inserted, which check the estimate's null [default: as many
    /// as --canaries].
    #[arg(long, requires = "canaries")]
    held_out: Option<usize>,
    /// The model's number of parameters, the canaries' dimension: well above the canaries × rounds
    /// over σ², or the model they train carries them beside its noise.
    #[arg(long, requires = "canaries", default_value_t = 100_000)]
    dimension: usize,
    #[arg(long, requires = "canaries", default_value_t = 0)]
    canary_seed: u64,
    /// Print the figures as JSON (`epsilon`, `per_round`, …) instead of words.
    #[arg(long)]
    json: bool,
}

/// `leakscope sweep`'s settings.
#[derive(Args)]
struct SweepArgs {
    #[command(flatten)]
    pub common: Common,
    #[arg(long, value_delimiter = ',', default_value = "8,32,128")]
    pub batch_sizes: Vec<usize>,
    #[arg(long, default_value_t = 10)]
    pub batches: usize,
    #[arg(long, value_delimiter = ',', value_enum, default_value = "tableak,cosine,random")]
    pub attacks: Vec<AttackArg>,
    /// FedAvg: local epochs to sweep (overrides --local-epochs).
    #[arg(long = "local-epochs-list", value_delimiter = ',')]
    pub local_epochs_list: Vec<usize>,
    /// FedAvg: local batch sizes to sweep (overrides --local-batch).
    #[arg(long = "local-batches", value_delimiter = ',')]
    pub local_batches: Vec<usize>,
}

/// One attack's options: the table, the attacker, the client, the engine.
#[derive(Args)]
struct Common {
    #[command(flatten)]
    table: TableArgs,
    #[command(flatten)]
    attack: AttackArgs,
    #[command(flatten)]
    client: ClientArgs,
    #[command(flatten)]
    engine: EngineArgs,
    /// Write the full report(s) as JSON here.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

impl Common {
    fn config(&self, attack: AttackKind, batch_size: usize, seed: u64) -> CliResult<AttackConfig> {
        let mut o = run_options(&self.table, &self.attack, Some(&self.client));
        o.attack = attack;
        o.batch_size = batch_size;
        o.seed = seed;
        o.attack_config().map_err(|e| e.to_string())
    }
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

fn run(cli: Cli) -> CliResult<()> {
    match cli.command {
        Command::Inspect { csv, json } => {
            let s = summarize(&read_csv(&csv)?);
            if json {
                println!("{}", serde_json::to_string_pretty(&s).unwrap());
            } else {
                print!("{}", render_schema(&s));
            }
        }
        Command::Attack {
            common,
            attack,
            batch_size,
            show,
        } => {
            let dataset = load(&common.table)?;
            let rt = common.engine.runtime()?;
            let config = common.config(attack.into(), batch_size, common.attack.seed)?;
            let pb = bar(
                common.engine.quiet || config.attacker().inversion().is_none(),
                config.iterations as u64,
                "attack".into(),
            );
            let report = attack_once(&rt, &dataset, &config, &pb)?;
            pb.finish_and_clear();
            print!("{}", render_text(&report, show));
            if let Some(path) = &common.json {
                write_atomically(path, &serde_json::to_string_pretty(&report).unwrap())?;
                println!("report written to {}", path.display());
            }
        }
        Command::Sweep(args) => sweep(args)?,
        Command::Audit(args) => audit::audit(*args)?,
        Command::Merge(args) => audit::merge_command(args)?,
        Command::Encoding(args) => received::encoding(args)?,
        Command::AttackUpdate(args) => received::attack_update(*args)?,
        Command::Bench(args) => bench::bench(args)?,
        Command::Privacy(args) => {
            let query = leakscope::client::accountant::PrivacyQuery {
                noise_multiplier: args.noise_multiplier,
                sample_rate: Some(args.sample_rate),
                rounds: args.rounds,
                delta: Some(args.delta),
                canaries: args.canaries.map(|inserted| leakscope::client::canary::CanaryQuery {
                    inserted,
                    held_out: args.held_out,
                    dimension: args.dimension,
                    seed: Some(args.canary_seed),
                }),
            };
            let answer = query.account().map_err(|e| e.to_string())?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&answer).map_err(|e| e.to_string())?);
            } else {
                for line in answer.lines() {
                    println!("{line}");
                }
            }
        }
    }
    Ok(())
}

/// Attacks on many batches at each setting, with a table of mean ± std.
fn sweep(args: SweepArgs) -> CliResult<()> {
    let SweepArgs {
        mut common,
        batch_sizes,
        batches,
        attacks,
        local_epochs_list,
        local_batches,
    } = args;
    // Batch k is drawn with seed + k: all of them must be seeds, checked before any runs.
    let seed = common.attack.seed;
    if seed.checked_add(batches.saturating_sub(1) as u64).is_none() {
        return Err(format!(
            "--seed {} with --batches {batches} runs past the largest seed ({}): use a seed of at most {}",
            seed,
            u64::MAX,
            u64::MAX - batches.saturating_sub(1) as u64
        ));
    }
    let dataset = load(&common.table)?;
    let rt = common.engine.runtime()?;
    let mut all: Vec<Report> = Vec::new();
    let mut lines = Vec::new();
    let mut attribute_lines = Vec::new();
    // FedAvg sweeps its local epochs × local batches too (one point each for FedSGD).
    let fedavg = common.client.protocol == Some(args::ProtocolArg::Fedavg)
        || (common.client.protocol.is_none() && common.attack.sensitive.is_some());
    let epochs_axis: Vec<Option<usize>> = if fedavg && !local_epochs_list.is_empty() {
        local_epochs_list.iter().map(|&e| Some(e)).collect()
    } else {
        vec![common.client.local_epochs]
    };
    let batches_axis: Vec<Option<usize>> = if fedavg && !local_batches.is_empty() {
        local_batches.iter().map(|&b| Some(b)).collect()
    } else {
        vec![common.client.local_batch]
    };
    // Every attack of the sweep, `batches` in a row per setting and attack, run by the audit's
    // runner.
    let mut jobs = Vec::new();
    for &b in &batch_sizes {
        for &epochs in &epochs_axis {
            for &local_batch in &batches_axis {
                common.client.local_epochs = epochs;
                common.client.local_batch = local_batch;
                for &a in &attacks {
                    let kind: AttackKind = a.into();
                    for k in 0..batches {
                        // Batch k has the same seed for every attack, so attacks are compared on the same rows.
                        jobs.push(Job {
                            label: format!("{kind} B={b} batch {}/{batches}", k + 1),
                            config: common.config(kind, b, seed + k as u64)?,
                        });
                    }
                }
            }
        }
    }
    let pb = bar(common.engine.quiet, 0, String::new());
    let mut current = usize::MAX;
    let mut on_progress = |p: &AuditProgress| {
        if p.done != current {
            current = p.done;
            pb.reset();
            pb.set_length(p.steps as u64);
            pb.set_prefix(p.current.clone());
        }
        pb.set_position(p.step as u64);
        true
    };
    let mut group = Vec::new();
    let mut on_report = |k: usize, report: Report| {
        group.push(report);
        // A setting and attack's batches are done: its line.
        if (k + 1).is_multiple_of(batches.max(1)) {
            let reports = std::mem::take(&mut group);
            lines.push(summary_line(&reports[0].config, reports[0].attack, &reports));
            pb.suspend(|| eprintln!("{}", lines.last().unwrap()));
            if reports[0].attribute().is_some() {
                attribute_lines.push(attribute_line(&reports[0].config, &reports));
                pb.suspend(|| eprintln!("{}", attribute_lines.last().unwrap()));
            }
            all.extend(reports);
        }
        Ok(())
    };
    pollster::block_on(run_jobs(&rt, &dataset, &jobs, &mut on_progress, &mut on_report)).map_err(|e| e.to_string())?;
    pb.finish_and_clear();
    println!("\n{}", summary_header());
    for l in &lines {
        println!("{l}");
    }
    if !attribute_lines.is_empty() {
        println!("\n{}", attribute_header());
        for l in &attribute_lines {
            println!("{l}");
        }
    }
    println!("backend: {}", rt.info.label);
    if let Some(path) = &common.json {
        write_atomically(path, &serde_json::to_string_pretty(&all).unwrap())?;
        println!("reports written to {}", path.display());
    }
    Ok(())
}

/// `leakscope inspect`'s table: the dialect, a line per column with its notes below it, the
/// warnings.
fn render_schema(s: &leakscope::table::SchemaSummary) -> String {
    use leakscope::table::Treatment;
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "read as {}", s.read_as);
    let _ = writeln!(out, "{} rows, {} with a missing value", s.rows, s.rows_with_missing);
    let _ = writeln!(
        out,
        "{:<24} {:<12} {:>8} {:>8}  {:<10}  examples",
        "column", "kind", "distinct", "missing", "use"
    );
    for c in &s.columns {
        let kind = format!("{:?}", c.kind).to_lowercase();
        let treatment = match c.treatment {
            Treatment::Used => "used",
            Treatment::Identifier | Treatment::Index => "left out",
            Treatment::Empty => "dropped",
        };
        let _ = writeln!(
            out,
            "{:<24} {:<12} {:>8} {:>8}  {:<10}  {}",
            c.name,
            kind,
            c.distinct,
            c.missing,
            treatment,
            c.examples.join(", ")
        );
        for note in &c.notes {
            let _ = writeln!(out, "{:<24} ↳ {note}", "");
        }
    }
    let _ = writeln!(out, "label candidates: {}", s.label_candidates.join(", "));
    for w in &s.warnings {
        let _ = writeln!(out, "note: {w}");
    }
    out
}

fn summary_header() -> String {
    format!(
        "| {:>5} | {:<14} | {:<8} | {:>7} | {:<15} | {:<15} | {:<15} | {:>7} | {:>10} | {:<9} | {:>7} | {:>9} | {:>10} |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        "batch",
        "protocol",
        "attack",
        "batches",
        "accuracy %",
        "categorical %",
        "continuous %",
        "s/attack",
        "mean steps",
        "span rank",
        "proved",
        "2nd layer",
        "prior cells"
    )
}

/// Mean ± sample std of shares, in percent ("—" for none).
fn percent_mean_std(values: Vec<f64>) -> String {
    match MeanStd::of(&values) {
        Some(m) => format!("{:.1} ± {:.1}", 100.0 * m.mean, 100.0 * m.std),
        None => "—".to_string(),
    }
}

fn attribute_header() -> String {
    "| column | rows | local batch | rounds | matching | membership | batches | attack % | attack + public prior % | public classifier % | most frequent % | uniform % | s/attack |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|".into()
}

/// The attribute attack against its baselines, mean ± std over the batches.
fn attribute_line(config: &AttackConfig, reports: &[Report]) -> String {
    let stat = |f: &dyn Fn(&leakscope::attack::attribute::AttributeReport) -> f64| {
        percent_mean_std(reports.iter().filter_map(|r| r.attribute()).map(f).collect())
    };
    let first = reports[0].attribute();
    let local = match &config.protocol {
        leakscope::config::Protocol::Fedavg(t) if t.local_batch >= config.batch_size => "all".to_string(),
        leakscope::config::Protocol::Fedavg(t) => t.local_batch.to_string(),
        leakscope::config::Protocol::Fedsgd => "FedSGD".into(),
    };
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} |",
        first.map_or("—", |a| a.column.as_str()),
        config.batch_size,
        local,
        match &config.attack {
            AttackSpec::Attribute(a) => a.rounds,
            _ => 1,
        },
        if first.is_some_and(|a| a.l2) { "L2" } else { "cosine" },
        match reports
            .iter()
            .filter_map(|r| r.attribute()?.membership.as_ref())
            .collect::<Vec<_>>()
        {
            m if m.is_empty() => "known".to_string(),
            m => format!(
                "inferred {:.0} %",
                100.0 * m.iter().map(|m| m.accuracy).sum::<f64>() / m.len() as f64
            ),
        },
        reports.len(),
        stat(&|a| a.accuracy),
        stat(&|a| a.with_public_prior),
        stat(&|a| a.public_classifier),
        stat(&|a| a.marginal),
        stat(&|a| a.random),
        reports.iter().map(|r| r.seconds).sum::<f64>() / reports.len().max(1) as f64,
    )
}

fn summary_line(config: &AttackConfig, kind: AttackKind, reports: &[Report]) -> String {
    let b = config.batch_size;
    let protocol = match &config.protocol {
        leakscope::config::Protocol::Fedsgd => "FedSGD".to_string(),
        leakscope::config::Protocol::Fedavg(t) => format!("FedAvg E={} b={}", t.epochs, t.local_batch),
    };
    let stat = percent_mean_std;
    let mean = |vals: Vec<f64>| vals.iter().sum::<f64>() / vals.len().max(1) as f64;
    let steps: Vec<f64> = reports
        .iter()
        .flat_map(|r| r.member_steps.iter().map(|&s| s as f64))
        .collect();
    let ranks: Vec<&leakscope::attack::priors::subspace::SubspaceSummary> =
        reports.iter().filter_map(|r| r.subspace()).collect();
    let rank = match ranks.first() {
        Some(first) => format!(
            "{:.0}/{}{}",
            mean(ranks.iter().map(|s| s.rank as f64).collect()),
            first.feasible,
            if ranks.iter().all(|s| s.weight == 0.0) {
                " off"
            } else {
                ""
            }
        ),
        None => "—".into(),
    };
    let all_rows = reports.len() * config.rows();
    format!(
        "| {:>5} | {:<14} | {:<8} | {:>7} | {:<15} | {:<15} | {:<15} | {:>7.1} | {:>10} | {:<9} | {:>7} | {:>9} | {:>10} |",
        b,
        protocol,
        kind.to_string(),
        reports.len(),
        stat(reports.iter().map(|r| r.accuracy.total).collect()),
        stat(reports.iter().filter_map(|r| r.accuracy.categorical).collect()),
        stat(reports.iter().filter_map(|r| r.accuracy.continuous).collect()),
        mean(reports.iter().map(|r| r.seconds).collect()),
        if steps.is_empty() {
            "—".to_string()
        } else {
            format!("{:.0}", mean(steps))
        },
        rank,
        // Rows proved exactly from the ReLU pattern, and by the second layer, over all batches.
        rows_share(ranks.iter().map(|s| s.proved_rows), all_rows),
        rows_share(
            reports
                .iter()
                .filter_map(|r| Some(r.row_details()?.second_layer.as_ref()?.certified_rows)),
            all_rows,
        ),
        // Cells that fell back to the marginals under a perturbing defence, over all cells.
        rows_share(
            reports
                .iter()
                .filter_map(|r| Some(r.row_details()?.fallback.as_ref()?.prior_cells)),
            all_rows * reports.first().map_or(0, |r| r.features.len()),
        ),
    )
}

/// The rows (or cells) a part of the attack delivered, as a share of all the batches' rows (or
/// cells) ("—" where the part did not run).
fn rows_share(counts: impl Iterator<Item = usize>, all_rows: usize) -> String {
    let counts: Vec<usize> = counts.collect();
    match counts.is_empty() {
        true => "—".to_string(),
        false => format!(
            "{:.0} %",
            100.0 * counts.iter().sum::<usize>() as f64 / all_rows.max(1) as f64
        ),
    }
}

fn main() -> ExitCode {
    // Output piped into a reader that stops early (`| head`) ends the program quietly, as for
    // any Unix tool, instead of a panic in println!.
    #[cfg(unix)]
    // SAFETY: restoring a signal's default disposition, once, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Two flags of one command with one name (a flattened group's and the command's own) pass
    /// the compiler and fail only when the command runs.
    #[test]
    fn every_command_parses_its_flags() {
        super::Cli::command().debug_assert();
    }
}

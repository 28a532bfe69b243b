//! The audit: how exposed one table is over a grid of federated settings (batch size, noise,
//! clients averaged, FedAvg's local training, training first), with the attacks compared on the
//! same batches, mean ± std, plots and a verdict. `grid` says what runs, `summary` what it
//! found, `svg` draws it; a shard of the grid runs anywhere and `merge` joins the shares.
pub mod grid;
pub mod pool;
mod shown;
pub mod summary;
pub mod svg;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub use grid::{AuditOptions, Cell, Point, Shard, Study};
pub use pool::{AuditPlan, AuditProgress, PlannedCell, RunningCell, cell_cost, config_cost};
pub use summary::{Audit, CellResult, TableInfo, summarise};

use crate::attack::inversion::driver::Progress;
use crate::config::AttackConfig;
use crate::error::{Error, Result};
use crate::report::Report;
use crate::run::run_attack;
use crate::runtime::Runtime;
use crate::table::Dataset;

/// Run one cell: one attack on one batch.
pub async fn run_cell(
    runtime: &Runtime,
    dataset: &Dataset,
    cell: &Cell,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<CellResult> {
    let report = run_attack(runtime, dataset, &cell.config, progress).await?;
    Ok(CellResult::of(cell.index, &report))
}

/// What one share of an audit writes: enough to check on merging that every share ran the same
/// grid on the same table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ShardResults {
    pub leakscope: String,
    pub options: AuditOptions,
    pub table: TableInfo,
    pub shard: Shard,
    pub cells: usize,
    pub results: Vec<CellResult>,
}

/// One attack of many: what progress calls it, and its settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub label: String,
    pub config: AttackConfig,
}

/// Run attacks one after another: the one runner of the CLI's sweep and of an audit's grid.
/// Progress is weighted by each attack's cost (`cell_cost`); `done` takes each report as it comes
/// (with the job's index). `progress` returning false cancels.
pub async fn run_jobs(
    runtime: &Runtime,
    dataset: &Dataset,
    jobs: &[Job],
    progress: &mut dyn FnMut(&AuditProgress) -> bool,
    done: &mut dyn FnMut(usize, Report) -> Result<()>,
) -> Result<()> {
    let total: f64 = jobs.iter().map(|j| config_cost(&j.config)).sum();
    let mut spent = 0.0;
    for (k, job) in jobs.iter().enumerate() {
        let cost = config_cost(&job.config);
        let steps = job.config.iterations;
        // An attack's stages count their steps together (`run_attack`): `of` is all of them.
        let mut on = |p: &Progress| {
            progress(&AuditProgress {
                done: k,
                cells: jobs.len(),
                current: job.label.clone(),
                step: p.step,
                steps: p.of,
                fraction: (spent + cost * p.step.min(p.of) as f64 / p.of.max(1) as f64) / total.max(1.0),
            })
        };
        let start = Progress {
            phase: "setup".into(),
            step: 0,
            of: steps,
            loss: None,
            elapsed: 0.0,
        };
        if !on(&start) {
            return Err(Error::Cancelled);
        }
        let report = run_attack(runtime, dataset, &job.config, &mut on).await?;
        done(k, report)?;
        spent += cost;
    }
    Ok(())
}

/// Run the cells of `shard` in order. `progress` returning false cancels.
pub async fn run_shard(
    runtime: &Runtime,
    dataset: &Dataset,
    options: &AuditOptions,
    shard: Shard,
    progress: &mut dyn FnMut(&AuditProgress) -> bool,
) -> Result<ShardResults> {
    let cells = options.cells(dataset)?;
    let mine: Vec<&Cell> = cells.iter().filter(|c| shard.holds(c.index)).collect();
    let jobs: Vec<Job> = mine
        .iter()
        .map(|c| Job {
            label: pool::cell_label(c),
            config: c.config.clone(),
        })
        .collect();
    let mut results = Vec::new();
    run_jobs(runtime, dataset, &jobs, progress, &mut |k, report| {
        results.push(CellResult::of(mine[k].index, &report));
        Ok(())
    })
    .await?;
    Ok(ShardResults {
        leakscope: env!("CARGO_PKG_VERSION").into(),
        options: options.clone(),
        table: TableInfo::of(dataset, &options.run),
        shard,
        cells: cells.len(),
        results,
    })
}

/// Join shares into the audit one run would give: every share of the same grid on the same table,
/// every cell once.
pub fn merge(shares: Vec<ShardResults>) -> Result<Audit> {
    let Some(first) = shares.first() else {
        return Err(Error::Config("no audit shares to merge".into()));
    };
    let cells = first.options.grid()?;
    let (options, table) = (first.options.clone(), first.table.clone());
    for s in &shares {
        if s.options != options {
            return Err(Error::Config(format!(
                "share {}/{} ran other audit settings than share {}/{}",
                s.shard.index, s.shard.count, first.shard.index, first.shard.count
            )));
        }
        if s.table != table {
            return Err(Error::Config(format!(
                "share {}/{} ran on another table ({} rows, label {:?}) than share {}/{} ({} rows, label {:?})",
                s.shard.index,
                s.shard.count,
                s.table.rows,
                s.table.label,
                first.shard.index,
                first.shard.count,
                table.rows,
                table.label
            )));
        }
        if s.cells != cells.len() {
            return Err(Error::Config(format!(
                "share {}/{} is of a grid of {} cells; these settings make {}",
                s.shard.index,
                s.shard.count,
                s.cells,
                cells.len()
            )));
        }
    }
    let results = shares.into_iter().flat_map(|s| s.results).collect();
    summarise(&options, table, &cells, results)
}

/// The summary as a Markdown table, then the verdict.
pub fn render_table(audit: &Audit) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let pm = |m: &summary::MeanStd| format!("{:.1} ± {:.1}", 100.0 * m.mean, 100.0 * m.std);
    let _ = writeln!(
        s,
        "| setting | attack | batches | accuracy % | categorical % | continuous % | random % | guessing % (the better of random and the table's guess) | ε | ε over {} rounds, q = {} (against the server) | ε canaries measure{} | model % | cells shown % |",
        audit.options.rounds,
        audit.options.sample_rate,
        match audit.options.canaries {
            0 => " (none run)".to_string(),
            k => format!(" ({k} inserted, every round seen; 95 % interval)"),
        }
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in &audit.rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {} | {} | {} | {} | {} |",
            r.point.label(),
            r.attack,
            r.batches,
            pm(&r.accuracy),
            r.categorical.as_ref().map_or("—".into(), pm),
            r.continuous.as_ref().map_or("—".into(), pm),
            100.0 * r.random.mean,
            100.0 * r.guessing.mean,
            r.epsilon.map_or("—".into(), crate::report::fmt_epsilon),
            r.over_rounds.map_or("—".into(), |o| format!(
                "{} ({})",
                crate::report::fmt_epsilon(o.epsilon),
                crate::report::fmt_epsilon(o.epsilon_against_server)
            )),
            r.canaries.as_ref().map_or("—".into(), |c| c.every_round.brief()),
            r.model_accuracy.map_or("—".into(), |m| format!("{:.1}", 100.0 * m)),
            r.cells_shown.map_or("—".into(), |m| format!("{:.1}", 100.0 * m)),
        );
    }
    let _ = writeln!(
        s,
        "\n| column | kind | recovered % | guessing % | gain (points) | entropy |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for f in &audit.features {
        let _ = writeln!(
            s,
            "| {} | {:?} | {:.1} | {:.1} | {:+.1} | {} |",
            f.feature.name,
            f.feature.kind,
            100.0 * f.accuracy,
            100.0 * f.random,
            100.0 * f.gain,
            f.entropy.map_or("—".into(), |e| format!("{e:.2}"))
        );
    }
    let _ = writeln!(s);
    for line in &audit.verdict.sentences {
        let _ = writeln!(s, "- {line}");
    }
    s
}

/// One plot of an audit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct NamedSvg {
    /// The file stem the CLI writes it under ("batch-size", "noise", …, "features").
    pub name: String,
    pub svg: String,
}

/// An audit with what a page shows of it: the table as Markdown and the plots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct AuditReport {
    pub audit: Audit,
    pub markdown: String,
    pub svgs: Vec<NamedSvg>,
}

impl AuditReport {
    pub fn of(audit: Audit) -> AuditReport {
        AuditReport {
            markdown: render_table(&audit),
            svgs: svg::all_svgs(&audit)
                .into_iter()
                .map(|(name, svg)| NamedSvg { name, svg })
                .collect(),
            audit,
        }
    }
}

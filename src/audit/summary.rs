//! An audit's results: each cell's numbers, their mean ± std per setting and attack, the columns
//! that leak most, and a verdict in plain words. Everything here is computed from the cells'
//! results alone, so shards run anywhere and merged give what one run gives.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::grid::{AuditOptions, Cell, Point, STUDIES, Study};
use crate::client::accountant::OverRounds;
use crate::client::canary::{CanaryAudit, gaussian_mechanism};
use crate::client::privacy::DEFAULT_DELTA;
use crate::config::AttackKind;
use crate::error::{Error, Result};
use crate::report::{FeatureHeader, Report, fmt_epsilon};
use crate::table::Dataset;

/// Points within which TabLeak counts as no better than guessing.
pub const SAFE_MARGIN: f64 = 0.02;

/// What one cell measured (a report without its rows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct CellResult {
    pub index: usize,
    pub accuracy: f64,
    pub categorical: Option<f64>,
    pub continuous: Option<f64>,
    pub per_feature: Vec<f64>,
    /// Mean ensemble entropy per feature (null without an ensemble).
    pub per_feature_entropy: Vec<Option<f64>>,
    /// Rows drawn from the marginals, scored on the same batch.
    pub random_accuracy: f64,
    /// The table's guess on the same batch (`Report::table_baseline`), where the server holds
    /// the table: what an attack whose every cell falls back scores there.
    #[serde(default)]
    pub table_accuracy: Option<f64>,
    pub epsilon: Option<f64>,
    pub model_accuracy: Option<f64>,
    pub epoch_prior: Option<f64>,
    /// Share of the cells moved that the update shows on its own (`report::shown::CellsShown`;
    /// null where the check does not apply: FedSGD, noise, orders not known).
    #[serde(default)]
    pub cells_shown: Option<f64>,
    pub seconds: f64,
    /// What ran it (shards may run on different machines).
    pub backend: String,
}

impl CellResult {
    /// What the server guesses of the batch without the update: the better of the marginals'
    /// draw and the table's guess.
    pub fn guessing(&self) -> f64 {
        self.table_accuracy.unwrap_or(0.0).max(self.random_accuracy)
    }

    pub fn of(index: usize, r: &Report) -> CellResult {
        CellResult {
            index,
            accuracy: r.accuracy.total,
            categorical: r.accuracy.categorical,
            continuous: r.accuracy.continuous,
            per_feature: r.accuracy.per_feature.clone(),
            per_feature_entropy: r.per_feature_entropy.clone(),
            random_accuracy: r.random_baseline,
            table_accuracy: r.table_baseline,
            epsilon: r.privacy.and_then(|p| p.epsilon),
            model_accuracy: r.model_accuracy,
            epoch_prior: r.row_details().and_then(|d| d.epoch_prior),
            cells_shown: (r.row_details().and_then(|d| d.cells_shown.as_ref()))
                .filter(|c| c.tested > 0)
                .map(|c| c.shown as f64 / c.tested as f64),
            seconds: r.seconds,
            backend: r.backend.label.clone(),
        }
    }
}

/// The table an audit ran on, as far as merging shards needs to know it is the same.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct TableInfo {
    pub rows: usize,
    pub label: String,
    pub encoded_width: usize,
    pub features: Vec<FeatureHeader>,
    /// The network's parameters on this table (the canaries' dimension); 0 in shares written
    /// before canaries.
    #[serde(default)]
    pub parameters: usize,
}

impl TableInfo {
    pub fn of(dataset: &Dataset, run: &crate::options::RunOptions) -> TableInfo {
        TableInfo {
            rows: dataset.n(),
            label: dataset.label.clone(),
            encoded_width: dataset.d(),
            features: FeatureHeader::of(dataset),
            parameters: super::grid::model_parameters(run, dataset),
        }
    }
}

/// Mean and sample standard deviation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct MeanStd {
    pub mean: f64,
    pub std: f64,
}

impl MeanStd {
    pub fn of(values: &[f64]) -> Option<MeanStd> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let std = if values.len() > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Some(MeanStd { mean, std })
    }
}

/// One setting × attack over the audit's batches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SummaryRow {
    pub point: Point,
    pub attack: AttackKind,
    pub batches: usize,
    pub accuracy: MeanStd,
    pub categorical: Option<MeanStd>,
    pub continuous: Option<MeanStd>,
    /// The same batches' marginal guess.
    pub random: MeanStd,
    /// The better per batch of that and the table's guess (`CellResult::table_accuracy`): the
    /// verdict's "guessing". An attack that learnt nothing scores the latter where it is held.
    #[serde(default)]
    pub guessing: MeanStd,
    /// Noise: ε of one release at the defence's δ.
    pub epsilon: Option<f64>,
    /// Noise: ε over the audit's rounds and sampling rate (RDP), and against the server.
    pub over_rounds: Option<OverRounds>,
    /// Noise, where the audit ran canaries: the ε they measure over the same rounds.
    pub canaries: Option<CanaryAudit>,
    /// Training: the network's accuracy on the table.
    pub model_accuracy: Option<f64>,
    /// FedAvg: the mean share of the cells moved that each batch's update shows on its own.
    #[serde(default)]
    pub cells_shown: Option<f64>,
}

/// How much one column leaks: TabLeak at the reference setting against guessing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct FeatureLeak {
    pub feature: FeatureHeader,
    pub accuracy: f64,
    pub random: f64,
    /// accuracy − random: what the update gives away beyond the marginals.
    pub gain: f64,
    pub entropy: Option<f64>,
}

/// Per study, the first setting (in the study's order) at which TabLeak's mean accuracy is within
/// `SAFE_MARGIN` of guessing on the same batches (`SummaryRow::guessing`); null when none is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct Threshold {
    pub study: Study,
    pub point: Option<Point>,
    /// The largest setting tried when none was safe, or the safe one.
    pub at: Point,
    pub tableak: f64,
    /// Guessing there (`SummaryRow::guessing`).
    pub random: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub thresholds: Vec<Threshold>,
    /// The verdict in plain words, a sentence per finding.
    pub sentences: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct Audit {
    pub options: AuditOptions,
    pub table: TableInfo,
    pub rows: Vec<SummaryRow>,
    /// The attack the verdict, the column table and the plots read (`AuditOptions::judged`):
    /// none when only guessing ran.
    pub judged: Option<AttackKind>,
    /// Columns by what the judged attack recovers beyond guessing at the reference batch, most first.
    pub features: Vec<FeatureLeak>,
    pub verdict: Verdict,
    pub cells: Vec<CellResult>,
    /// Compute time summed over the cells.
    pub seconds: f64,
}

/// The results of every cell, checked: each cell of the grid once.
fn check_complete(cells: &[Cell], results: &[CellResult]) -> Result<()> {
    let mut seen = vec![false; cells.len()];
    for r in results {
        match seen.get_mut(r.index) {
            None => {
                return Err(Error::Config(format!(
                    "a result is for cell {} but the grid has {} cells: the shards are of another audit",
                    r.index,
                    cells.len()
                )));
            }
            Some(true) => return Err(Error::Config(format!("cell {} has two results", r.index))),
            Some(s) => *s = true,
        }
    }
    let missing: Vec<usize> = (0..cells.len()).filter(|&i| !seen[i]).collect();
    if !missing.is_empty() {
        let some: Vec<String> = missing.iter().take(8).map(usize::to_string).collect();
        return Err(Error::Config(format!(
            "{} of {} cells have no result (cells {}{}): is a shard missing?",
            missing.len(),
            cells.len(),
            some.join(", "),
            if missing.len() > 8 { ", …" } else { "" }
        )));
    }
    Ok(())
}

/// The audit from every cell's result.
pub fn summarise(
    options: &AuditOptions,
    table: TableInfo,
    cells: &[Cell],
    mut results: Vec<CellResult>,
) -> Result<Audit> {
    check_complete(cells, &results)?;
    // A number per column of the table, in every result (the columns' leakage is read from them).
    let columns = table.features.len();
    if let Some(r) = results
        .iter()
        .find(|r| r.per_feature.len() != columns || r.per_feature_entropy.len() != columns)
    {
        return Err(Error::Config(format!(
            "the result of cell {} has accuracies for {} columns and entropies for {}; the table has {columns}: \
             the shards are of another table",
            r.index,
            r.per_feature.len(),
            r.per_feature_entropy.len()
        )));
    }
    results.sort_by_key(|r| r.index);
    let mut rows = Vec::new();
    for point in options.points() {
        let canaries = canary_audit(options, &table, point)?;
        for &attack in &options.attacks {
            let of: Vec<&CellResult> = cells
                .iter()
                .filter(|c| c.attack == attack && c.points.contains(&point))
                .map(|c| &results[c.index])
                .collect();
            let values = |f: &dyn Fn(&CellResult) -> Option<f64>| of.iter().filter_map(|r| f(r)).collect::<Vec<f64>>();
            rows.push(SummaryRow {
                point,
                attack,
                batches: of.len(),
                accuracy: MeanStd::of(&values(&|r| Some(r.accuracy))).expect("a cell per batch"),
                categorical: MeanStd::of(&values(&|r| r.categorical)),
                continuous: MeanStd::of(&values(&|r| r.continuous)),
                random: MeanStd::of(&values(&|r| Some(r.random_accuracy))).expect("a cell per batch"),
                guessing: MeanStd::of(&values(&|r| Some(r.guessing()))).expect("a cell per batch"),
                epsilon: of.first().and_then(|r| r.epsilon),
                // Where one release has a guarantee (an unclipped update has none).
                over_rounds: of.first().and_then(|r| r.epsilon).and(over_rounds(options, point)),
                canaries: canaries.clone(),
                model_accuracy: MeanStd::of(&values(&|r| r.model_accuracy)).map(|m| m.mean),
                cells_shown: MeanStd::of(&values(&|r| r.cells_shown)).map(|m| m.mean),
            });
        }
    }
    let judged = options.judged();
    let features = judged.map_or_else(Vec::new, |a| feature_leaks(options, a, &table, cells, &results));
    let verdict = verdict(options, judged, &rows, &features);
    Ok(Audit {
        options: options.clone(),
        judged,
        table,
        seconds: results.iter().map(|r| r.seconds).sum(),
        rows,
        features,
        verdict,
        cells: results,
    })
}

/// A noise point's ε over the audit's rounds (the noise study holds one client, clipped).
fn over_rounds(options: &AuditOptions, point: Point) -> Option<OverRounds> {
    let Point::Noise { sigma } = point else {
        return None;
    };
    let delta = options.run.delta.unwrap_or(DEFAULT_DELTA);
    OverRounds::of(sigma, options.sample_rate, options.rounds, delta).ok()
}

/// A noise point's canaries: run through the audit's DP-FedAvg (clipping, σ, sampling rate and
/// rounds) at the network's dimension. The client's own clipped update is left out: it only adds
/// to the aggregate's norm, which shrinks the statistic, so leaving it out gives the larger ε.
fn canary_audit(options: &AuditOptions, table: &TableInfo, point: Point) -> Result<Option<CanaryAudit>> {
    let Point::Noise { sigma } = point else {
        return Ok(None);
    };
    if options.canaries == 0 {
        return Ok(None);
    }
    if table.parameters == 0 {
        return Err(Error::Config(
            "these shares were written before the audit ran canaries: they do not say the network's size".into(),
        ));
    }
    let query = options.canary_query(table.parameters)?;
    let delta = options.run.delta.unwrap_or(DEFAULT_DELTA);
    let mut audit = gaussian_mechanism(&query, sigma, options.sample_rate, options.rounds, delta)?;
    audit.mechanism = format!(
        "the audit's DP-FedAvg at σ = {sigma} (updates clipped to C = {}, {} rounds, sampling rate {}; the \
         client's own update left out)",
        options.clip, options.rounds, options.sample_rate
    );
    Ok(Some(audit))
}

/// The judged attack at the reference batch, per column, against guessing.
fn feature_leaks(
    options: &AuditOptions,
    attack: AttackKind,
    table: &TableInfo,
    cells: &[Cell],
    results: &[CellResult],
) -> Vec<FeatureLeak> {
    let reference = Point::BatchSize {
        batch: options.reference_batch,
    };
    let at = |a: AttackKind| -> Vec<&CellResult> {
        cells
            .iter()
            .filter(|c| c.attack == a && c.points.contains(&reference))
            .map(|c| &results[c.index])
            .collect()
    };
    let attacked = at(attack);
    // The random guess per column: the random attack's cells where it ran, else nothing to beat.
    let guessed = at(AttackKind::Random);
    let mut leaks: Vec<FeatureLeak> = table
        .features
        .iter()
        .enumerate()
        .map(|(f, header)| {
            let mean = |rs: &[&CellResult]| {
                (!rs.is_empty()).then(|| rs.iter().map(|r| r.per_feature[f]).sum::<f64>() / rs.len() as f64)
            };
            let entropies: Vec<f64> = attacked.iter().filter_map(|r| r.per_feature_entropy[f]).collect();
            let accuracy = mean(&attacked).unwrap_or(0.0);
            let random = mean(&guessed).unwrap_or(0.0);
            FeatureLeak {
                feature: header.clone(),
                accuracy,
                random,
                gain: accuracy - random,
                entropy: (!entropies.is_empty()).then(|| entropies.iter().sum::<f64>() / entropies.len() as f64),
            }
        })
        .collect();
    leaks.sort_by(|a, b| b.gain.total_cmp(&a.gain));
    leaks
}

fn pct(v: f64) -> String {
    format!("{:.0}%", 100.0 * v)
}

fn verdict(
    options: &AuditOptions,
    judged: Option<AttackKind>,
    rows: &[SummaryRow],
    features: &[FeatureLeak],
) -> Verdict {
    let mut thresholds = Vec::new();
    let mut sentences = Vec::new();
    let Some(attack) = judged else {
        sentences.push("Only random guessing ran: there is no attack to judge.".into());
        return Verdict { thresholds, sentences };
    };
    let line = |study: Study| -> Vec<&SummaryRow> {
        rows.iter()
            .filter(|r| r.attack == attack && r.point.study() == study)
            .collect()
    };
    for study in STUDIES {
        let points = line(study);
        if points.is_empty() {
            continue;
        }
        let safe = |r: &SummaryRow| r.accuracy.mean <= r.guessing.mean + SAFE_MARGIN;
        match study {
            Study::BatchSize | Study::Noise | Study::Clients => {
                let hit = points.iter().find(|r| safe(r));
                let at = hit.copied().unwrap_or(points[points.len() - 1]);
                thresholds.push(Threshold {
                    study,
                    point: hit.map(|r| r.point),
                    at: at.point,
                    tableak: at.accuracy.mean,
                    random: at.guessing.mean,
                });
                sentences.push(threshold_sentence(options, attack, study, hit.is_some(), at, points[0]));
            }
            Study::Fedavg => sentences.push(fedavg_sentence(options, attack, &points)),
            Study::ClientRows => {
                for sentence in client_rows_sentences(options, attack, &points, &mut thresholds) {
                    sentences.push(sentence);
                }
            }
            Study::Training => {
                let first = points[0];
                let last = points[points.len() - 1];
                if let (Point::Training { epochs: k0 }, Point::Training { epochs: k1 }) = (first.point, last.point)
                    && k1 > k0
                {
                    let model = last
                        .model_accuracy
                        .map(|m| format!(" (the model then gets {} of the table right)", pct(m)))
                        .unwrap_or_default();
                    sentences.push(format!(
                        "Training first does not make updates safe by itself: after {k1} epoch{}{model}, {attack} \
                         recovers {} of cells, against {} after {k0}; guessing gets {}.",
                        if k1 == 1 { "" } else { "s" },
                        pct(last.accuracy.mean),
                        pct(first.accuracy.mean),
                        pct(last.guessing.mean)
                    ));
                }
            }
        }
    }
    let shown = (rows.iter().filter(|r| r.attack == attack))
        .map(|r| super::shown::ShownPoint {
            label: r.point.label(),
            accuracy: r.accuracy.mean,
            random: r.guessing.mean,
            shown: r.cells_shown,
        })
        .collect::<Vec<_>>();
    sentences.extend(super::shown::shown_sentence(&attack.to_string(), &shown, SAFE_MARGIN));
    if features.len() >= 2 {
        let top: Vec<String> = features
            .iter()
            .take(3)
            .map(|f| {
                format!(
                    "{} ({} right, guessing {})",
                    f.feature.name,
                    pct(f.accuracy),
                    pct(f.random)
                )
            })
            .collect();
        let bottom = &features[features.len() - 1];
        sentences.push(format!(
            "At a batch of {}, the columns that leak most beyond guessing are {}; the least, {} ({} against {}).",
            options.reference_batch,
            top.join(", "),
            bottom.feature.name,
            pct(bottom.accuracy),
            pct(bottom.random)
        ));
    }
    Verdict { thresholds, sentences }
}

/// The FedAvg client's optimiser and order as the audit states them: "SGD (lr 0.01, momentum 0.9),
/// rows reshuffled every epoch".
fn recipe_words(options: &AuditOptions) -> String {
    let recipe = options.run.protocol_recipe();
    let order = match recipe.order {
        crate::client::fedavg::LocalOrder::Given => "",
        crate::client::fedavg::LocalOrder::Shuffled => ", rows reshuffled every epoch",
    };
    format!("{}{order}", recipe.optimizer.describe(recipe.lr))
}

/// The FedAvg study in one sentence: the most and the least the attack recovers over its settings.
fn fedavg_sentence(options: &AuditOptions, attack: AttackKind, points: &[&SummaryRow]) -> String {
    let most = points
        .iter()
        .max_by(|a, b| a.accuracy.mean.total_cmp(&b.accuracy.mean))
        .unwrap();
    let least = points
        .iter()
        .min_by(|a, b| a.accuracy.mean.total_cmp(&b.accuracy.mean))
        .unwrap();
    let (
        Point::Fedavg {
            epochs: e1,
            local_batch: b1,
        },
        Point::Fedavg {
            epochs: e2,
            local_batch: b2,
        },
    ) = (most.point, least.point)
    else {
        unreachable!()
    };
    format!(
        "Under FedAvg (a client of {} rows, {}), {attack} recovers {} of cells after {e1} local \
         epoch{} of batches of {b1} and {} after {e2} of batches of {b2}, against {} by guessing.",
        options.reference_batch,
        recipe_words(options),
        pct(most.accuracy.mean),
        if e1 == 1 { "" } else { "s" },
        pct(least.accuracy.mean),
        pct(least.guessing.mean),
    )
}

/// The client-size study, one sentence per local-epoch count: from what size of client the
/// attack falls to guessing through the stated recipe, or that no size tried does.
fn client_rows_sentences(
    options: &AuditOptions,
    attack: AttackKind,
    points: &[&SummaryRow],
    thresholds: &mut Vec<Threshold>,
) -> Vec<String> {
    let mut epochs: Vec<usize> = points
        .iter()
        .filter_map(|r| match r.point {
            Point::ClientRows { epochs, .. } => Some(epochs),
            _ => None,
        })
        .collect();
    epochs.dedup();
    let mut out = Vec::new();
    for e in epochs {
        let line: Vec<&SummaryRow> = points
            .iter()
            .copied()
            .filter(|r| matches!(r.point, Point::ClientRows { epochs, .. } if epochs == e))
            .collect();
        let rows_of = |r: &SummaryRow| match r.point {
            Point::ClientRows { rows, .. } => rows,
            _ => 0,
        };
        let hit = line.iter().find(|r| r.accuracy.mean <= r.guessing.mean + SAFE_MARGIN);
        let (first, last) = (line[0], line[line.len() - 1]);
        let at = hit.copied().unwrap_or(last);
        thresholds.push(Threshold {
            study: Study::ClientRows,
            point: hit.map(|r| r.point),
            at: at.point,
            tableak: at.accuracy.mean,
            random: at.guessing.mean,
        });
        let how = format!(
            "{} epoch{} of batches of {}, {}",
            e,
            if e == 1 { "" } else { "s" },
            options.client_batch,
            recipe_words(options)
        );
        out.push(match hit {
            Some(h) if h.point == first.point => format!(
                "Client size ({how}): already at {} rows {attack} gets no more than guessing ({} against {}).",
                rows_of(h),
                pct(h.accuracy.mean),
                pct(h.guessing.mean)
            ),
            Some(h) => format!(
                "Client size ({how}): {attack} recovers {} of a {}-row client's cells and falls to within {:.0} points \
                 of guessing from {} rows ({} against {}).",
                pct(first.accuracy.mean),
                rows_of(first),
                100.0 * SAFE_MARGIN,
                rows_of(h),
                pct(h.accuracy.mean),
                pct(h.guessing.mean)
            ),
            None => format!(
                "Client size ({how}): no client size tried stops the leak: at {} rows {attack} still recovers {} of \
                 cells against {} by guessing ({} at {} rows).",
                rows_of(last),
                pct(last.accuracy.mean),
                pct(last.guessing.mean),
                pct(first.accuracy.mean),
                rows_of(first)
            ),
        });
    }
    out
}

fn threshold_sentence(
    options: &AuditOptions,
    attack: AttackKind,
    study: Study,
    safe: bool,
    at: &SummaryRow,
    first: &SummaryRow,
) -> String {
    let within = format!("within {:.0} points of guessing", 100.0 * SAFE_MARGIN);
    let numbers = format!(
        "{} against {} by guessing",
        pct(at.accuracy.mean),
        pct(at.guessing.mean)
    );
    let b = options.reference_batch;
    let delta = fmt_delta(options.run.delta.unwrap_or(DEFAULT_DELTA));
    let epsilon = at.epsilon.map_or("—".into(), fmt_epsilon);
    let over = at.over_rounds.map_or_else(String::new, |o| {
        format!(
            "; over {} rounds with each client sampled at rate {}, ε = {} (RDP accounting), and ε = {} against \
             the server, which sees the client in {} of them",
            o.rounds,
            o.sample_rate,
            fmt_epsilon(o.epsilon),
            fmt_epsilon(o.epsilon_against_server),
            o.releases_seen
        )
    });
    let over = match &at.canaries {
        Some(c) => format!(
            "{over}; {} canaries run through the same rounds measure ε {}",
            c.canaries,
            c.every_round.brief()
        ),
        None => over,
    };
    // Safe at the study's first setting, where that has no defence: the defence is not what makes
    // it so (a grid whose first noise scale is σ > 0 is safe by that noise).
    let undefended = match first.point {
        Point::Noise { sigma } => sigma == 0.0,
        Point::Clients { clients } => clients <= 1,
        _ => true,
    };
    let already = safe && at.point == first.point && undefended;
    match (study, at.point) {
        (Study::BatchSize, Point::BatchSize { batch }) if already => format!(
            "Batch size: even at the smallest batch tried ({batch} rows) {attack} gets no more than guessing \
             ({numbers}): raise --iterations or the ensemble before trusting this."
        ),
        (Study::BatchSize, Point::BatchSize { batch }) if safe => format!(
            "Batch size: {attack} falls to {within} from a batch of {batch} rows ({numbers}); at {} rows it \
             recovers {}.",
            match first.point {
                Point::BatchSize { batch } => batch,
                _ => 0,
            },
            pct(first.accuracy.mean)
        ),
        (Study::BatchSize, Point::BatchSize { batch }) => {
            format!("Batch size: no batch size tried is safe: even at {batch} rows {attack} recovers {numbers}.")
        }
        (Study::Noise | Study::Clients, _) if already => format!(
            "{}: at a batch of {b} rows {attack} already gets no more than guessing without it ({numbers}).",
            if study == Study::Noise {
                "Noise"
            } else {
                "Secure aggregation"
            }
        ),
        (Study::Noise, Point::Noise { sigma }) if safe => format!(
            "Noise: with each update clipped to norm {} and noise σ = {sigma}·C added, {attack} falls to {within} \
             at a batch of {b} ({numbers}); that noise gives ε = {epsilon} per release at δ = {delta}{over}.",
            options.clip
        ),
        (Study::Noise, Point::Noise { sigma }) => format!(
            "Noise: no noise scale tried is enough at a batch of {b}: at σ = {sigma}·C (clipping to C = {}; \
             ε = {epsilon} per release at δ = {delta}{over}) {attack} still recovers {numbers}.",
            options.clip
        ),
        (Study::Clients, Point::Clients { clients }) if safe => format!(
            "Secure aggregation: averaging {clients} clients' updates of {b} rows each brings {attack} to {within} \
             ({numbers})."
        ),
        (Study::Clients, Point::Clients { clients }) => format!(
            "Secure aggregation: averaging up to {clients} clients' updates of {b} rows each is not enough: \
             {attack} still recovers {numbers}."
        ),
        _ => String::new(),
    }
}

/// δ for people: 1e-5 rather than 0.00001.
fn fmt_delta(d: f64) -> String {
    if d < 1e-3 { format!("{d:e}") } else { d.to_string() }
}

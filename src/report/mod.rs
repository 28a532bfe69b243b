//! What one attack leaked, as a plain serialisable object and as text for a terminal.
use crate::attack::priors::subspace::SubspaceSummary;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::attack::attribute::AttributeReport;
use crate::attack::cafe::CafeReport;

use crate::assess::fallback::FallbackSummary;
use crate::assess::scoring::{Accuracy, Scored};
use crate::attack::inversion::driver::StepTiming;
use crate::client::privacy::Privacy;
use crate::config::{AttackConfig, AttackKind, LabelMode};
use crate::runtime::BackendInfo;
use crate::table::{ColumnKind, Dataset, Value};

pub mod provenance;
pub mod reconstruction;
pub mod shown;
pub mod text;

pub use provenance::{PROVENANCES, Provenance, ProvenanceGroup, ReasonCount, SecondLayerSummary, reason_counts};

/// Continuous entropies below this are reported as this (members agreeing exactly give −∞).
pub const ENTROPY_FLOOR: f64 = -20.0;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct FeatureHeader {
    pub name: String,
    pub kind: ColumnKind,
}

impl FeatureHeader {
    /// The table's features, in order.
    pub fn of(dataset: &Dataset) -> Vec<FeatureHeader> {
        dataset
            .features
            .iter()
            .map(|f| FeatureHeader {
                name: f.name.clone(),
                kind: if f.is_categorical() {
                    ColumnKind::Categorical
                } else {
                    ColumnKind::Continuous
                },
            })
            .collect()
    }
}

/// How far the attacker can trust a reconstructed cell, from the ensemble's entropy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    High,
    Medium,
    Low,
    /// No ensemble, so no confidence.
    None,
}

/// The entropy below which a cell is of high, and of medium, confidence, per feature kind. The same
/// scale as `entropy_buckets`' first two edges.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct ConfidenceLevels {
    pub categorical: [f64; 2],
    pub continuous: [f64; 2],
}

pub const CONFIDENCE_LEVELS: ConfidenceLevels = ConfidenceLevels {
    categorical: [0.1, 0.3],
    continuous: [-1.0, 0.0],
};

impl Confidence {
    pub fn of(kind: ColumnKind, entropy: Option<f64>) -> Confidence {
        let Some(e) = entropy else { return Confidence::None };
        let [high, medium] = match kind {
            ColumnKind::Categorical => CONFIDENCE_LEVELS.categorical,
            ColumnKind::Continuous => CONFIDENCE_LEVELS.continuous,
        };
        if e < high {
            Confidence::High
        } else if e < medium {
            Confidence::Medium
        } else {
            Confidence::Low
        }
    }
}

/// One true row beside the reconstructed row matched to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RowReport {
    pub truth: Vec<String>,
    pub reconstructed: Vec<String>,
    pub correct: Vec<bool>,
    /// Per cell, lower = more confident; null for attacks without an ensemble.
    pub entropy: Vec<Option<f64>>,
    /// Per cell, the entropy read on `confidence_levels`.
    pub confidence: Vec<Confidence>,
    /// How the reconstructed row was obtained (null where the attack does not say).
    pub provenance: Option<Provenance>,
    /// Why a row that fits the update is not proved (`consistent` rows only).
    #[serde(default)]
    pub why_not_proved: Option<String>,
    /// The reconstructed row's label, where the attack read it off the update (the rows explain
    /// its last layer exactly: `attack::priors::row_labels`), and a regression's always (the server
    /// reconstructs it with the row); null elsewhere.
    pub label: Option<String>,
    /// A regression's true label of the row, and whether the reconstructed one is within the
    /// label's tolerance of it (null for a classifier).
    #[serde(default)]
    pub truth_label: Option<String>,
    #[serde(default)]
    pub label_correct: Option<bool>,
}

/// A regression's labels as the attack reconstructed them, against the truth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RegressionLabels {
    pub label: String,
    /// A label counts as right within this distance (0.319 of its std, as a continuous cell).
    pub tolerance: f64,
    /// Share of rows whose reconstructed label is within the tolerance, and the mean distance.
    pub within_tolerance: f64,
    pub mean_absolute_error: f64,
    /// The same for labels drawn from the table (what the server knows without the update).
    pub random_within_tolerance: f64,
    pub random_mean_absolute_error: f64,
    /// Whether the labels were read off the last layer exactly (every row proved,
    /// `attack::priors::row_labels::read_values`) rather than pooled from the ensemble.
    pub read_off_update: bool,
    /// Rows whose label is the table's likeliest value (`baselines::likeliest_value`) rather than
    /// the update's: on a shadow client the guess scored higher (never a proved row's).
    pub prior_labels: usize,
    /// On that shadow client, the share of labels within tolerance from the update and from the
    /// guess (null where no shadow client ran).
    pub shadow_update_within_tolerance: Option<f64>,
    pub shadow_prior_within_tolerance: Option<f64>,
}

/// The paper's Table 4: how right the attacker is on the cells it is surest of. Per feature kind,
/// the accuracy of the quarter of cells with the lowest ensemble entropy against all cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ConfidentQuarter {
    pub kind: ColumnKind,
    pub cells: usize,
    pub accuracy: f64,
    /// The lowest-entropy quarter (rounded up), its accuracy, and the entropy it reaches up to.
    pub quarter_cells: usize,
    pub quarter_accuracy: f64,
    pub quarter_entropy_max: f64,
}

/// One epoch-prior candidate's fit to the observed update.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct PriorFit {
    pub lambda: f64,
    pub fit: f64,
}

/// Accuracy of the cells whose entropy falls in [from, to); a null edge is unbounded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct EntropyBucket {
    pub kind: ColumnKind,
    pub from: Option<f64>,
    pub to: Option<f64>,
    pub cells: usize,
    pub accuracy: Option<f64>,
}

impl EntropyBucket {
    pub fn holds(&self, entropy: f64) -> bool {
        self.from.is_none_or(|f| entropy >= f) && self.to.is_none_or(|t| entropy < t)
    }
}

/// The format of a report's JSON: the name and a version that changes when a field does.
pub const REPORT_FORMAT: &str = "leakscope-report/2";

/// What a report says about one attack alone, by what it reconstructs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum AttackDetails {
    /// The client's rows (TabLeak, the baselines).
    Rows(RowDetails),
    /// One column of rows the server knows otherwise (the attribute attack).
    Attribute(AttributeReport),
    /// Vertically split rows (CAFE).
    Cafe(CafeReport),
}

/// What an attack on a table's rows composed: the epoch prior on FedAvg and the first layer's span
/// (TabLeak; the baselines compose neither).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct RowDetails {
    /// TabLeak on FedAvg: the epoch prior's weight used (the one `auto` chose)...
    pub epoch_prior: Option<f64>,
    /// ...and, when it chose, how well each candidate's pooled rows fit the observed update
    /// (1 − cos of their simulated update: lower is better; the truth plays no part).
    pub epoch_prior_fits: Vec<PriorFit>,
    /// The first layer's span as a prior on the rows: its rank, weight and the rows it solved
    /// and proved (null when the attack did not use it).
    pub subspace: Option<SubspaceSummary>,
    /// The second layer's certificate: rows proved from the span of the rows' first-layer
    /// activations (null where it did not apply: FedAvg, the baselines, a span too wide to check).
    pub second_layer: Option<SecondLayerSummary>,
    /// Cells that fell back to the table's marginals under a perturbing defence, with the shadow
    /// client's figures that chose them (null where the attack did not fall back).
    pub fallback: Option<FallbackSummary>,
    /// Where every row of the batch was proved (or consistent: placed near a batch row, held by
    /// rows that explain the update to its rounding, `assess::seen_rows`, or inverted alone on
    /// what the others leave and explaining it with them, `assess::inverted_left`) after this
    /// many steps, the attack answered then and did not run the rest (null: it ran them all).
    pub answered_after: Option<usize>,
    /// Where the ensemble ran by its stopping rule: the members pooled, of the most, and what
    /// each round changed (null: the ensemble ran whole, as configured).
    #[serde(default)]
    pub ensemble: Option<crate::attack::inversion::ensemble::EnsembleRounds>,
    /// FedAvg in a known order or reshuffled, and FedSGD: the rows the client's simulated update
    /// chose among the members' and the span's (`assess::update_choice`; null where it did not
    /// run).
    #[serde(default)]
    pub chosen: Option<crate::assess::update_choice::UpdateChoice>,
    /// An Adam or AdamW client: the categories its update shows its rows hold, beside what the
    /// attack recovers (`attack::priors::categories_held`; null elsewhere).
    #[serde(default)]
    pub categories_held: Option<crate::attack::priors::categories_held::CategoriesHeld>,
    /// Continuous columns the table determines from a category, which the attack read from each
    /// pooled row's category (`table::determined`) where no member's row was solved in the first
    /// layer's span.
    #[serde(default)]
    pub determined: Vec<crate::table::determined::ReadFromCategory>,
    /// A simulated FedSGD client: the rows of its batch whose gradient shows in its update, and
    /// the cells right on those and the others (`assess::seen_rows`; null elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub shown: Option<shown::RowsShown>,
    /// A FedAvg client whose rows are at hand and whose recipe replays: the cells of its batch
    /// its update shows, and the cells right on those and the others (`assess::cells_shown`;
    /// null elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub cells_shown: Option<shown::CellsShown>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Report {
    /// `REPORT_FORMAT`.
    pub format: String,
    pub attack: AttackKind,
    pub backend: BackendInfo,
    pub seconds: f64,
    pub config: AttackConfig,
    pub accuracy: Accuracy,
    /// Total accuracy of rows drawn from the marginals, on the same batch.
    pub random_baseline: f64,
    pub random_accuracy: Accuracy,
    pub gain_over_random: f64,
    /// Total accuracy of the table's guess: rows of the table outside the batch chosen, without
    /// the update, as a set like a batch of the slots' labels (`assess::table_guess`): what a
    /// server holding the table's other rows (as the fallback's shadow client and imputation
    /// assume) guesses with no update, and where it holds them the rows the fallback puts in,
    /// so that an attack whose every cell falls back scores this exactly. On a simulated client
    /// of a table; null elsewhere.
    #[serde(default)]
    pub table_baseline: Option<f64>,
    /// Share of the batch's labels the server had right (1 with known labels; a regression's:
    /// within tolerance, `regression`).
    pub label_accuracy: f64,
    /// A regression's reconstructed labels against the truth (null for a classifier).
    #[serde(default)]
    pub regression: Option<RegressionLabels>,
    pub features: Vec<FeatureHeader>,
    pub rows: Vec<RowReport>,
    /// Rows by how they were obtained (proved, ensemble, prior) with the share of their cells
    /// that are right; empty where the attack does not say.
    pub provenance: Vec<ProvenanceGroup>,
    /// Parts the attack asks for that the client's model rules out, and why.
    #[serde(default)]
    pub not_applied: Vec<crate::attack::registry::NotApplied>,
    pub entropy_buckets: Vec<EntropyBucket>,
    /// Accuracy of the lowest-entropy quarter of cells against all, per feature kind.
    pub confident_quarter: Vec<ConfidentQuarter>,
    /// Per feature, the mean entropy over the batch (null without an ensemble): with
    /// `accuracy.per_feature`, which columns leak most.
    pub per_feature_entropy: Vec<Option<f64>>,
    pub confidence_levels: ConfidenceLevels,
    /// What the defence guarantees one client's update, per release (null without clipping or
    /// noise).
    pub privacy: Option<Privacy>,
    /// After `config.training_epochs` of training: the network's accuracy on the table.
    pub model_accuracy: Option<f64>,
    pub loss_curve: Vec<(usize, f64)>,
    pub table_rows: usize,
    pub dropped_rows: usize,
    pub warnings: Vec<String>,
    /// Steps each member of the ensemble took before it stopped improving (empty where none ran).
    pub member_steps: Vec<usize>,
    /// Where the inversions' time went on the host (null where the run was split over workers,
    /// or ran no inversion in this process).
    #[serde(default)]
    pub timing: Option<StepTiming>,
    /// What this attack alone reports.
    pub details: AttackDetails,
}

impl Report {
    /// The details of an attack on rows (TabLeak, the baselines).
    pub fn row_details(&self) -> Option<&RowDetails> {
        match &self.details {
            AttackDetails::Rows(r) => Some(r),
            _ => None,
        }
    }

    /// The attribute attack's part.
    pub fn attribute(&self) -> Option<&AttributeReport> {
        match &self.details {
            AttackDetails::Attribute(a) => Some(a),
            _ => None,
        }
    }

    /// CAFE's part.
    pub fn cafe(&self) -> Option<&CafeReport> {
        match &self.details {
            AttackDetails::Cafe(c) => Some(c),
            _ => None,
        }
    }

    /// The span prior as the report states it, where the attack used it.
    pub fn subspace(&self) -> Option<&SubspaceSummary> {
        self.row_details()?.subspace.as_ref()
    }
}

/// Entropy bands of the report, per kind (None: unbounded). The first two inner edges are the
/// confidence levels.
const CAT_EDGES: [Option<f64>; 5] = [Some(0.0), Some(0.1), Some(0.3), Some(0.6), None];
const CONT_EDGES: [Option<f64>; 5] = [None, Some(-1.0), Some(0.0), Some(1.0), None];

#[allow(clippy::too_many_arguments)]
pub fn build_report(
    dataset: &Dataset,
    config: &AttackConfig,
    backend: &BackendInfo,
    truth: &[Vec<Value>],
    reconstructed: &[Vec<Value>],
    entropy: Option<&[Vec<Option<f64>>]>,
    scored: &Scored,
    random: Accuracy,
    label_accuracy: f64,
    loss_curve: Vec<(usize, f64)>,
    seconds: f64,
) -> Report {
    let fmt = |row: &[Value]| {
        row.iter()
            .enumerate()
            .map(|(f, &v)| dataset.format(f, v))
            .collect::<Vec<_>>()
    };
    let features = FeatureHeader::of(dataset);
    let rows: Vec<RowReport> = truth
        .iter()
        .zip(&scored.assignment)
        .zip(&scored.correct)
        .map(|((t, &j), correct)| RowReport {
            truth: fmt(t),
            reconstructed: fmt(&reconstructed[j]),
            correct: correct.clone(),
            entropy: match entropy {
                Some(e) => e[j].iter().map(|v| v.map(|x| x.max(ENTROPY_FLOOR))).collect(),
                None => vec![None; features.len()],
            },
            confidence: Vec::new(),
            provenance: None,
            why_not_proved: None,
            label: None,
            truth_label: None,
            label_correct: None,
        })
        .map(|mut row: RowReport| {
            row.confidence = features
                .iter()
                .zip(&row.entropy)
                .map(|(f, &e)| Confidence::of(f.kind, e))
                .collect();
            row
        })
        .collect();
    let (entropy_buckets, confident_quarter, per_feature_entropy) = if entropy.is_some() {
        (
            entropy_buckets(&rows, &features),
            confident_quarters(&rows, &features),
            mean_entropies(&rows, features.len()),
        )
    } else {
        (Vec::new(), Vec::new(), vec![None; features.len()])
    };
    Report {
        format: REPORT_FORMAT.into(),
        attack: config.kind(),
        backend: backend.clone(),
        seconds,
        config: config.clone(),
        gain_over_random: scored.accuracy.total - random.total,
        accuracy: scored.accuracy.clone(),
        random_baseline: random.total,
        random_accuracy: random,
        table_baseline: None,
        label_accuracy,
        regression: None,
        features,
        rows,
        provenance: Vec::new(),
        not_applied: config.not_applied(),
        entropy_buckets,
        confident_quarter,
        per_feature_entropy,
        confidence_levels: CONFIDENCE_LEVELS,
        privacy: config
            .defence
            .filter(|d| d.clip.is_some() || d.noise > 0.0)
            .map(|d| Privacy::of(d.clip.is_some(), d.noise, config.clients, d.delta)),
        model_accuracy: None,
        loss_curve,
        table_rows: dataset.n(),
        dropped_rows: dataset.dropped,
        warnings: dataset.warnings.clone(),
        member_steps: Vec::new(),
        timing: None,
        details: AttackDetails::Rows(RowDetails::default()),
    }
}

impl Report {
    /// Each row's provenance from that of the reconstructed row matched to it (`of_reconstructed`
    /// and `why_not`, why a consistent row is not proved, indexed as the reconstruction), and the
    /// accuracy of each group.
    pub fn set_provenance(
        &mut self,
        of_reconstructed: &[Provenance],
        why_not: &[Option<String>],
        assignment: &[usize],
    ) {
        for (row, &j) in self.rows.iter_mut().zip(assignment) {
            row.provenance = Some(of_reconstructed[j]);
            row.why_not_proved = why_not.get(j).cloned().flatten();
        }
        self.provenance = PROVENANCES
            .into_iter()
            .filter_map(|p| {
                let rows: Vec<&RowReport> = self.rows.iter().filter(|r| r.provenance == Some(p)).collect();
                let cells: usize = rows.iter().map(|r| r.correct.len()).sum();
                let right: usize = rows.iter().map(|r| r.correct.iter().filter(|&&c| c).count()).sum();
                (!rows.is_empty()).then(|| ProvenanceGroup {
                    provenance: p,
                    rows: rows.len(),
                    accuracy: right as f64 / cells.max(1) as f64,
                    reasons: reason_counts(rows.iter().filter_map(|r| r.why_not_proved.as_deref())),
                })
            })
            .collect();
    }

    /// Each reconstructed row's label (class indices `of_reconstructed`, named by `classes`) on the
    /// true row it was matched to (`assignment`). Where the server restored its labels, the share
    /// it has right is now per row against `truth` (the true rows' labels), not per count.
    pub fn set_row_labels(
        &mut self,
        classes: &[String],
        of_reconstructed: &[usize],
        assignment: &[usize],
        truth: &[usize],
    ) {
        let mut right = 0;
        for ((row, &j), &t) in self.rows.iter_mut().zip(assignment).zip(truth) {
            row.label = Some(classes[of_reconstructed[j]].clone());
            right += (of_reconstructed[j] == t) as usize;
        }
        if self.config.labels == LabelMode::Restored {
            self.label_accuracy = right as f64 / truth.len().max(1) as f64;
        }
    }
}

impl Report {
    /// A regression's labels of the reconstructed rows (`values`, in the label's units) beside
    /// the true rows' (`truth`), row by row through the scoring's `assignment`; `random`: labels
    /// drawn from the table, for the baseline; `read_off_update`: read exactly, not pooled.
    pub fn set_row_values(
        &mut self,
        dataset: &Dataset,
        (values, read_off_update): (&[f64], bool),
        assignment: &[usize],
        truth: &[f64],
        random: &[f64],
    ) {
        let Some(target) = &dataset.target else { return };
        let tolerance = target.tolerance();
        let (mut right, mut error) = (0, 0.0);
        for ((row, &j), &t) in self.rows.iter_mut().zip(assignment).zip(truth) {
            let v = values[j];
            row.label = Some(target.format(v));
            row.truth_label = Some(target.format(t));
            row.label_correct = Some((v - t).abs() <= tolerance);
            right += ((v - t).abs() <= tolerance) as usize;
            error += (v - t).abs();
        }
        let n = truth.len().max(1) as f64;
        let random_right = random
            .iter()
            .zip(truth)
            .filter(|(r, t)| (*r - *t).abs() <= tolerance)
            .count();
        let random_error: f64 = random.iter().zip(truth).map(|(r, t)| (r - t).abs()).sum();
        self.label_accuracy = right as f64 / n;
        self.regression = Some(RegressionLabels {
            label: dataset.label.clone(),
            tolerance,
            within_tolerance: right as f64 / n,
            mean_absolute_error: error / n,
            random_within_tolerance: random_right as f64 / n,
            random_mean_absolute_error: random_error / n,
            read_off_update,
            prior_labels: 0,
            shadow_update_within_tolerance: None,
            shadow_prior_within_tolerance: None,
        });
    }
}

/// Accuracy per band of entropy, per feature kind the table has.
fn entropy_buckets(rows: &[RowReport], features: &[FeatureHeader]) -> Vec<EntropyBucket> {
    let mut buckets = Vec::new();
    for (kind, edges) in [
        (ColumnKind::Categorical, CAT_EDGES),
        (ColumnKind::Continuous, CONT_EDGES),
    ] {
        if !features.iter().any(|f| f.kind == kind) {
            continue;
        }
        for w in edges.windows(2) {
            let mut bucket = EntropyBucket {
                kind,
                from: w[0],
                to: w[1],
                cells: 0,
                accuracy: None,
            };
            let cells: Vec<bool> = rows
                .iter()
                .flat_map(|r| r.entropy.iter().zip(&r.correct).zip(features))
                .filter(|((e, _), f)| f.kind == kind && e.is_some_and(|e| bucket.holds(e)))
                .map(|((_, &c), _)| c)
                .collect();
            bucket.cells = cells.len();
            bucket.accuracy =
                (!cells.is_empty()).then(|| cells.iter().filter(|&&c| c).count() as f64 / cells.len() as f64);
            buckets.push(bucket);
        }
    }
    buckets
}

/// Per feature, the mean entropy over the rows that have one.
fn mean_entropies(rows: &[RowReport], features: usize) -> Vec<Option<f64>> {
    (0..features)
        .map(|f| {
            let values: Vec<f64> = rows.iter().filter_map(|r| r.entropy[f]).collect();
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        })
        .collect()
}

/// Per feature kind, the accuracy of the quarter of cells with the lowest entropy against all.
fn confident_quarters(rows: &[RowReport], features: &[FeatureHeader]) -> Vec<ConfidentQuarter> {
    let mut quarters = Vec::new();
    for kind in [ColumnKind::Categorical, ColumnKind::Continuous] {
        let mut cells: Vec<(f64, bool)> = rows
            .iter()
            .flat_map(|r| r.entropy.iter().zip(&r.correct).zip(features))
            .filter(|(_, f)| f.kind == kind)
            .filter_map(|((e, &c), _)| e.map(|e| (e, c)))
            .collect();
        if cells.is_empty() {
            continue;
        }
        cells.sort_by(|a, b| a.0.total_cmp(&b.0));
        let share = |cs: &[(f64, bool)]| cs.iter().filter(|c| c.1).count() as f64 / cs.len() as f64;
        let quarter = cells.len().div_ceil(4);
        quarters.push(ConfidentQuarter {
            kind,
            cells: cells.len(),
            accuracy: share(&cells),
            quarter_cells: quarter,
            quarter_accuracy: share(&cells[..quarter]),
            quarter_entropy_max: cells[quarter - 1].0,
        });
    }
    quarters
}

/// Confidence mark of a cell: ● high, ◐ medium, ○ low, blank without an ensemble.
pub fn confidence_mark(confidence: Confidence) -> &'static str {
    match confidence {
        Confidence::High => "●",
        Confidence::Medium => "◐",
        Confidence::Low => "○",
        Confidence::None => " ",
    }
}

/// ε for people: about 3 significant digits, ∞ spelled out.
pub fn fmt_epsilon(e: f64) -> String {
    if e.is_infinite() {
        "∞".into()
    } else if e >= 1000.0 {
        format!("{e:.2e}")
    } else if e >= 100.0 {
        format!("{e:.0}")
    } else if e >= 10.0 {
        format!("{e:.1}")
    } else if e >= 0.01 || e == 0.0 {
        format!("{e:.2}")
    } else {
        format!("{e:.1e}")
    }
}

pub(crate) fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "—".into(), |v| format!("{:.1}%", 100.0 * v))
}

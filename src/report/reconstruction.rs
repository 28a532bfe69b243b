//! What an attack on a received update recovered: the rows and how sure the attacker is of each
//! cell. There is no ground truth, so no accuracy: the confidence (the ensemble's entropy, read on
//! the same levels as a simulated report's) is what a user weighs.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{
    CONFIDENCE_LEVELS, Confidence, ConfidenceLevels, ENTROPY_FLOOR, FeatureHeader, PROVENANCES, Provenance,
    ReasonCount, RowDetails, confidence_mark, reason_counts,
};
use crate::config::{AttackConfig, AttackKind, Protocol};
use crate::runtime::BackendInfo;
use crate::table::{ColumnKind, Dataset, Value};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ReconstructedRow {
    pub cells: Vec<String>,
    pub entropy: Vec<Option<f64>>,
    pub confidence: Vec<Confidence>,
    /// The row's label, where the attack read it off the update (the rows explain its last layer
    /// exactly: `attack::priors::row_labels`); null elsewhere.
    pub label: Option<String>,
    /// How the row was obtained: proved a row of the client's batch, consistent with the update
    /// but not proved, or pooled from the ensemble.
    #[serde(default)]
    pub provenance: Option<Provenance>,
    /// Why a row that fits the update is not proved (`consistent` rows only).
    #[serde(default)]
    pub why_not_proved: Option<String>,
}

/// Rows of one provenance, and why those of a consistent group are not proved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ProvenanceCount {
    pub provenance: Provenance,
    pub rows: usize,
    pub reasons: Vec<ReasonCount>,
}

/// Cells per confidence level, per feature kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ConfidenceCount {
    pub kind: ColumnKind,
    pub high: usize,
    pub medium: usize,
    pub low: usize,
}

/// The format of a received update's report: the name and a version that changes when a field does.
pub const RECONSTRUCTION_FORMAT: &str = "leakscope-reconstruction/4";

/// What counts as reproducing the update (defined where the choice it gates is).
pub use crate::assess::update_choice::UPDATE_FIT_THRESHOLD;

/// How well the best reconstruction explains the update it came from: without the client's rows,
/// the one check of the encoding, the model and the recipe stated that the server also has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct UpdateFit {
    /// 1 − cos between the update the reconstructed rows (with the labels used) would send from
    /// the same network under the stated recipe, and the update received: 0 is a perfect fit.
    pub distance: f64,
    pub threshold: f64,
    /// distance ≤ threshold.
    pub fits: bool,
    /// What that means, in a sentence (the text report's and the page's).
    pub says: String,
}

impl UpdateFit {
    pub fn of(distance: f64) -> UpdateFit {
        // 1 − cos is ≥ 0; float32 rounding can leave it a hair below.
        let distance = distance.max(0.0);
        let fits = distance <= UPDATE_FIT_THRESHOLD;
        UpdateFit {
            distance,
            threshold: UPDATE_FIT_THRESHOLD,
            fits,
            says: Self::sentence(distance, fits),
        }
    }

    fn sentence(distance: f64, fits: bool) -> String {
        match fits {
            true => format!("the reconstruction reproduces the update (1 − cos = {distance:.1e})"),
            false => format!(
                "WARNING: the best reconstruction does not reproduce the update (1 − cos = {:.2e} > {:.0e}): either \
                 the attack did not recover this batch (a large one), or the encoding, the model or the recipe \
                 stated is not the client's; where the client's rows are at hand, the recipe check tests them",
                distance, UPDATE_FIT_THRESHOLD
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ReconstructionReport {
    /// `RECONSTRUCTION_FORMAT`.
    pub format: String,
    pub attack: AttackKind,
    pub backend: BackendInfo,
    pub seconds: f64,
    pub config: AttackConfig,
    pub features: Vec<FeatureHeader>,
    pub rows: Vec<ReconstructedRow>,
    /// The rows by provenance (proved, consistent, ensemble), strongest first.
    #[serde(default)]
    pub provenance: Vec<ProvenanceCount>,
    /// The labels the attack used (given with the update, or restored from it), as class names;
    /// none for a regression, whose labels the attack reconstructs (`rows[].label`).
    pub labels: Vec<String>,
    /// Parts the attack asks for that the client's model rules out, and why.
    #[serde(default)]
    pub not_applied: Vec<crate::attack::registry::NotApplied>,
    /// A regression's labels (`rows[].label`): read off the update exactly (every row proved),
    /// or estimated with the reconstructed rows; null for a classifier.
    #[serde(default)]
    pub regression_labels_exact: Option<bool>,
    pub confidence_counts: Vec<ConfidenceCount>,
    pub per_feature_entropy: Vec<Option<f64>>,
    pub confidence_levels: ConfidenceLevels,
    pub loss_curve: Vec<(usize, f64)>,
    /// Steps each member of the ensemble took before it stopped improving.
    pub member_steps: Vec<usize>,
    /// What the attack composed: the epoch prior, the first layer's span.
    pub details: RowDetails,
    /// How well the reconstruction explains the update (null where not computed).
    #[serde(default)]
    pub update_fit: Option<UpdateFit>,
}

impl ReconstructionReport {
    #[allow(clippy::too_many_arguments)]
    pub fn build(
        dataset: &Dataset,
        config: &AttackConfig,
        backend: &BackendInfo,
        rows: &[Vec<Value>],
        entropy: Option<&[Vec<Option<f64>>]>,
        labels: &[usize],
        loss_curve: Vec<(usize, f64)>,
        details: RowDetails,
        seconds: f64,
    ) -> ReconstructionReport {
        let features = FeatureHeader::of(dataset);
        let rows: Vec<ReconstructedRow> = rows
            .iter()
            .enumerate()
            .map(|(i, row)| {
                let entropy: Vec<Option<f64>> = match entropy {
                    Some(e) => e[i].iter().map(|v| v.map(|x| x.max(ENTROPY_FLOOR))).collect(),
                    None => vec![None; features.len()],
                };
                ReconstructedRow {
                    cells: row.iter().enumerate().map(|(f, &v)| dataset.format(f, v)).collect(),
                    confidence: features
                        .iter()
                        .zip(&entropy)
                        .map(|(h, &e)| Confidence::of(h.kind, e))
                        .collect(),
                    entropy,
                    label: None,
                    provenance: None,
                    why_not_proved: None,
                }
            })
            .collect();
        let confidence_counts = [ColumnKind::Categorical, ColumnKind::Continuous]
            .into_iter()
            .filter(|k| features.iter().any(|f| f.kind == *k))
            .map(|kind| {
                let of = |level: Confidence| {
                    rows.iter()
                        .flat_map(|r| r.confidence.iter().zip(&features))
                        .filter(|(c, f)| f.kind == kind && **c == level)
                        .count()
                };
                ConfidenceCount {
                    kind,
                    high: of(Confidence::High),
                    medium: of(Confidence::Medium),
                    low: of(Confidence::Low),
                }
            })
            .collect();
        let per_feature_entropy = (0..features.len())
            .map(|f| {
                let v: Vec<f64> = rows.iter().filter_map(|r| r.entropy[f]).collect();
                (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            })
            .collect();
        ReconstructionReport {
            format: RECONSTRUCTION_FORMAT.into(),
            attack: config.kind(),
            backend: backend.clone(),
            seconds,
            config: config.clone(),
            features,
            rows,
            provenance: Vec::new(),
            labels: match dataset.target {
                Some(_) => Vec::new(),
                None => labels.iter().map(|&l| dataset.classes[l].clone()).collect(),
            },
            not_applied: config.not_applied(),
            regression_labels_exact: None,
            confidence_counts,
            per_feature_entropy,
            confidence_levels: CONFIDENCE_LEVELS,
            loss_curve,
            member_steps: Vec::new(),
            details,
            update_fit: None,
        }
    }

    /// Each row's provenance (`of_rows`) and why a consistent one is not proved, and the counts.
    pub fn set_provenance(&mut self, of_rows: &[Provenance], why_not: &[Option<String>]) {
        for ((row, &p), why) in self.rows.iter_mut().zip(of_rows).zip(why_not) {
            row.provenance = Some(p);
            row.why_not_proved = why.clone();
        }
        self.provenance = PROVENANCES
            .into_iter()
            .filter_map(|p| {
                let rows: Vec<&ReconstructedRow> = self.rows.iter().filter(|r| r.provenance == Some(p)).collect();
                (!rows.is_empty()).then(|| ProvenanceCount {
                    provenance: p,
                    rows: rows.len(),
                    reasons: reason_counts(rows.iter().filter_map(|r| r.why_not_proved.as_deref())),
                })
            })
            .collect();
    }

    /// For a terminal: what was attacked, the confidence counts, and up to `max_rows` rows.
    pub fn render_text(&self, max_rows: usize) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let c = &self.config;
        let what = match &c.protocol {
            Protocol::Fedsgd => format!("a gradient on {} rows", c.batch_size),
            Protocol::Fedavg(t) => format!("a FedAvg update on {} rows ({})", c.batch_size, t.describe()),
        };
        let _ = writeln!(
            s,
            "{} on a received update: {what}; no ground truth, so no accuracy",
            self.attack
        );
        let _ = writeln!(s, "backend {}, {:.2} s", self.backend.label, self.seconds);
        if let Some(l) = self.details.epoch_prior {
            let _ = writeln!(s, "epoch prior λ = {l}");
        }
        let whence = match self.config.labels {
            crate::config::LabelMode::Known => "the client's, from the file",
            crate::config::LabelMode::Restored => "restored from the update",
        };
        match self.config.head.task() {
            crate::client::head::Task::Regression => {
                let _ = writeln!(
                    s,
                    "labels: a regression's, reconstructed with each row (the label column)"
                );
            }
            crate::client::head::Task::Classification => {
                let _ = writeln!(s, "labels used ({whence}): {}", self.labels.join(", "));
            }
        }
        for line in crate::attack::registry::not_applied_lines(&self.not_applied) {
            let _ = writeln!(s, "{line}");
        }
        if let Some(fit) = &self.update_fit {
            let _ = writeln!(s, "{}", fit.says);
        }
        let read: Vec<&str> = self.rows.iter().filter_map(|r| r.label.as_deref()).collect();
        if read.len() == self.rows.len() && !read.is_empty() {
            let how = match self.regression_labels_exact {
                Some(false) => "estimated from the update with the reconstructed rows, not proved",
                _ => "read off the update, which the rows explain exactly",
            };
            let _ = writeln!(s, "each row's label, {how}: {}", read.join(", "));
        }
        if !self.provenance.is_empty() {
            let groups: Vec<String> = self
                .provenance
                .iter()
                .map(|g| format!("{} {}", g.rows, g.provenance.words()))
                .collect();
            let _ = writeln!(s, "rows: {}", groups.join(", "));
            if let Some(undone) = self.details.second_layer.as_ref().and_then(|l| l.undone_sentence()) {
                let _ = writeln!(s, "{undone}");
            }
            if let Some(c) = &self.details.chosen {
                let _ = writeln!(s, "{}", c.sentence());
            }
            if let Some(c) = &self.details.categories_held {
                let _ = writeln!(s, "{}", c.sentence());
            }
            if let Some(c) = &self.details.cells_shown {
                let _ = writeln!(s, "{}", c.sentence());
            }
            for d in &self.details.determined {
                let _ = writeln!(s, "{}", d.sentence());
            }
            for reason in self.provenance.iter().flat_map(|g| &g.reasons) {
                let _ = writeln!(
                    s,
                    "  not proved ({}): {}",
                    super::text::counted(reason.rows, "row"),
                    reason.why
                );
            }
        }
        for k in &self.confidence_counts {
            let _ = writeln!(
                s,
                "{:?} cells: {} of high confidence, {} medium, {} low",
                k.kind, k.high, k.medium, k.low
            );
        }
        let shown = self.rows.len().min(max_rows);
        if shown > 0 {
            let _ = writeln!(
                s,
                "\nfirst {shown} of {} reconstructed rows (● ◐ ○ high / medium / low confidence):",
                self.rows.len()
            );
            let names: Vec<&str> = self.features.iter().map(|f| f.name.as_str()).collect();
            let _ = writeln!(s, "  {}", names.join(" | "));
            for row in &self.rows[..shown] {
                let cells: Vec<String> = row
                    .cells
                    .iter()
                    .zip(&row.confidence)
                    .map(|(v, &c)| format!("{v}{}", confidence_mark(c)))
                    .collect();
                let _ = writeln!(s, "  {}", cells.join(" | "));
            }
        }
        s
    }
}

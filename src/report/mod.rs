//! What one attack leaked, as a plain serialisable object and as text for a terminal.
use crate::attack::subspace::SubspaceSummary;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::attack::attribute::AttributeReport;
use crate::attack::cafe::CafeReport;

use crate::assess::scoring::{Accuracy, Scored};
use crate::client::privacy::Privacy;
use crate::config::{AttackConfig, AttackKind, LabelMode, Protocol};
use crate::runtime::BackendInfo;
use crate::table::{ColumnKind, Dataset, Value};

pub mod reconstruction;

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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Report {
    pub attack: AttackKind,
    pub backend: BackendInfo,
    pub seconds: f64,
    pub config: AttackConfig,
    pub accuracy: Accuracy,
    /// Total accuracy of rows drawn from the marginals, on the same batch.
    pub random_baseline: f64,
    pub random_accuracy: Accuracy,
    pub gain_over_random: f64,
    /// Share of the batch's labels the server had right (1 with known labels).
    pub label_accuracy: f64,
    pub features: Vec<FeatureHeader>,
    pub rows: Vec<RowReport>,
    pub entropy_buckets: Vec<EntropyBucket>,
    /// Accuracy of the lowest-entropy quarter of cells against all, per feature kind.
    pub confident_quarter: Vec<ConfidentQuarter>,
    /// Per feature, the mean entropy over the batch (null without an ensemble): with
    /// `accuracy.per_feature`, which columns leak most.
    pub per_feature_entropy: Vec<Option<f64>>,
    pub confidence_levels: ConfidenceLevels,
    /// TabLeak on FedAvg: the epoch prior's weight used (the one `auto` chose)...
    pub epoch_prior: Option<f64>,
    /// ...and, when it chose, how well each candidate's pooled rows fit the observed update
    /// (1 − cos of their simulated update: lower is better; the truth plays no part).
    pub epoch_prior_fits: Vec<PriorFit>,
    /// What the defence guarantees one client's update, per release (null without clipping or
    /// noise).
    pub privacy: Option<Privacy>,
    /// After `config.training_epochs` of training: the network's accuracy on the table.
    pub model_accuracy: Option<f64>,
    pub loss_curve: Vec<(usize, f64)>,
    pub table_rows: usize,
    pub dropped_rows: usize,
    pub warnings: Vec<String>,
    /// The first layer's span as a prior on the rows: its rank, weight and the rows it solved
    /// (null when the attack did not use it).
    pub subspace: Option<SubspaceSummary>,
    /// Steps each member of the ensemble took before it stopped improving.
    pub member_steps: Vec<usize>,
    /// The attribute attack: the sensitive column's accuracy against the baselines (null for the
    /// other attacks).
    pub attribute: Option<AttributeReport>,
    /// CAFE: its vertical setting and how well each step recovered (null for the other attacks).
    pub cafe: Option<CafeReport>,
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
    let mut entropy_buckets = Vec::new();
    if entropy.is_some() {
        for (kind, edges) in [
            (ColumnKind::Categorical, CAT_EDGES),
            (ColumnKind::Continuous, CONT_EDGES),
        ] {
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
                    .flat_map(|r| r.entropy.iter().zip(&r.correct).zip(&features))
                    .filter(|((e, _), f)| f.kind == kind && e.is_some_and(|e| bucket.holds(e)))
                    .map(|((_, &c), _)| c)
                    .collect();
                if features.iter().any(|f| f.kind == kind) {
                    bucket.cells = cells.len();
                    bucket.accuracy =
                        (!cells.is_empty()).then(|| cells.iter().filter(|&&c| c).count() as f64 / cells.len() as f64);
                    entropy_buckets.push(bucket);
                }
            }
        }
    }
    let mut confident_quarter = Vec::new();
    let mut per_feature_entropy = vec![None; features.len()];
    if entropy.is_some() {
        for (f, slot) in per_feature_entropy.iter_mut().enumerate() {
            let values: Vec<f64> = rows.iter().filter_map(|r| r.entropy[f]).collect();
            *slot = (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
        }
        for kind in [ColumnKind::Categorical, ColumnKind::Continuous] {
            let mut cells: Vec<(f64, bool)> = rows
                .iter()
                .flat_map(|r| r.entropy.iter().zip(&r.correct).zip(&features))
                .filter(|(_, f)| f.kind == kind)
                .filter_map(|((e, &c), _)| e.map(|e| (e, c)))
                .collect();
            if cells.is_empty() {
                continue;
            }
            cells.sort_by(|a, b| a.0.total_cmp(&b.0));
            let share = |cs: &[(f64, bool)]| cs.iter().filter(|c| c.1).count() as f64 / cs.len() as f64;
            let quarter = cells.len().div_ceil(4);
            confident_quarter.push(ConfidentQuarter {
                kind,
                cells: cells.len(),
                accuracy: share(&cells),
                quarter_cells: quarter,
                quarter_accuracy: share(&cells[..quarter]),
                quarter_entropy_max: cells[quarter - 1].0,
            });
        }
    }
    Report {
        attack: config.attack,
        backend: backend.clone(),
        seconds,
        config: config.clone(),
        gain_over_random: scored.accuracy.total - random.total,
        accuracy: scored.accuracy.clone(),
        random_baseline: random.total,
        random_accuracy: random,
        label_accuracy,
        features,
        rows,
        entropy_buckets,
        confident_quarter,
        per_feature_entropy,
        confidence_levels: CONFIDENCE_LEVELS,
        epoch_prior: None,
        epoch_prior_fits: Vec::new(),
        privacy: config
            .defence
            .filter(|d| d.clip.is_some() || d.noise > 0.0)
            .map(|d| Privacy::of(d.clip.is_some(), d.noise, config.clients, d.delta)),
        model_accuracy: None,
        loss_curve,
        table_rows: dataset.n(),
        dropped_rows: dataset.dropped,
        warnings: dataset.warnings.clone(),
        subspace: None,
        member_steps: Vec::new(),
        attribute: None,
        cafe: None,
    }
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
    } else {
        format!("{e:.2}")
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "—".into(), |v| format!("{:.1}%", 100.0 * v))
}

/// A readable report: summary, per-feature accuracy, entropy buckets, and up to `max_rows` rows.
pub fn render_text(r: &Report, max_rows: usize) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let c = &r.config;
    let name = match r.attack {
        AttackKind::Tableak => format!("TabLeak (ensemble {})", c.ensemble),
        AttackKind::Cosine => "Cosine baseline".into(),
        AttackKind::Dlg => "DLG baseline".into(),
        AttackKind::Random => "Random baseline".into(),
        AttackKind::Attribute => "Attribute reconstruction".into(),
        AttackKind::Cafe => "CAFE".into(),
    };
    let labels = match c.labels {
        LabelMode::Known => "known labels".to_string(),
        LabelMode::Restored => format!("restored labels, {:.0}% right", 100.0 * r.label_accuracy),
    };
    let steps = if r.attack == AttackKind::Random {
        String::new()
    } else {
        format!(", {} steps at lr {}", c.iterations, c.optimiser().lr)
    };
    let batch = match &c.protocol {
        Protocol::Fedsgd if c.clients > 1 => format!(
            "the average of {} clients' batches of {} rows ({} rows in all)",
            c.clients,
            c.batch_size,
            c.rows()
        ),
        Protocol::Fedsgd => format!("a batch of {} rows", c.batch_size),
        Protocol::Fedavg(t) => format!(
            "a FedAvg client's {} rows ({} local epoch{} of batches of {}, client lr {})",
            c.batch_size,
            t.epochs,
            if t.epochs == 1 { "" } else { "s" },
            t.local_batch,
            t.lr
        ),
    };
    let _ = writeln!(s, "{name} on {batch}{steps}, {labels}, seed {}", c.seed);
    if let Some(l) = r.epoch_prior {
        let how = if r.epoch_prior_fits.len() > 1 {
            format!(
                ", chosen among {} by how well each reconstruction fits the update",
                r.epoch_prior_fits.len()
            )
        } else {
            String::new()
        };
        let _ = writeln!(s, "epoch prior λ = {l}{how}");
    }
    let _ = writeln!(s, "backend {}, {:.2} s", r.backend.label, r.seconds);
    if c.training_epochs > 0 {
        let _ = writeln!(
            s,
            "the network was trained {} epoch{} on the table first ({} right on it)",
            c.training_epochs,
            if c.training_epochs == 1 { "" } else { "s" },
            pct(r.model_accuracy)
        );
    }
    if let Some(d) = &c.defence {
        let mut parts = Vec::new();
        if let Some(k) = d.fake_gradients {
            parts.push(format!("fake gradients (best of {k} draws)"));
        }
        if let Some(clip) = d.clip {
            parts.push(format!("clipping to norm {clip}"));
        }
        if d.noise > 0.0 {
            parts.push(format!(
                "Gaussian noise σ = {}{}",
                d.noise,
                if d.clip.is_some() { "·C" } else { "" }
            ));
        }
        let _ = writeln!(s, "defence: {}", parts.join(", "));
    }
    if let Some(p) = &r.privacy {
        let _ = match p.epsilon {
            Some(e) => writeln!(
                s,
                "privacy of one release: (ε = {}, δ = {:e}){}; releases over training compose",
                fmt_epsilon(e),
                p.delta,
                if p.clients > 1 {
                    format!(", inside the average of {} clients", p.clients)
                } else {
                    String::new()
                }
            ),
            None => writeln!(
                s,
                "privacy: no (ε, δ) guarantee: the update is not clipped, so its sensitivity is unbounded"
            ),
        };
    }
    let a = &r.accuracy;
    let _ = writeln!(
        s,
        "\naccuracy {} (categorical {}, continuous {}), rows recovered exactly {}",
        pct(Some(a.total)),
        pct(a.categorical),
        pct(a.continuous),
        pct(Some(a.exact_rows))
    );
    let _ = writeln!(
        s,
        "random baseline {} → gain {:+.1} points",
        pct(Some(r.random_baseline)),
        100.0 * r.gain_over_random
    );
    let _ = writeln!(s, "\nper feature:");
    for (f, acc) in r.features.iter().zip(&a.per_feature) {
        let _ = writeln!(s, "  {:<24} {:>6}", f.name, pct(Some(*acc)));
    }
    if !r.entropy_buckets.is_empty() {
        let _ = writeln!(
            s,
            "\nconfidence (ensemble entropy; lower = more confident) against accuracy:"
        );
        for bkt in &r.entropy_buckets {
            let kind = match bkt.kind {
                ColumnKind::Categorical => "categorical",
                ColumnKind::Continuous => "continuous ",
            };
            let edge = |e: Option<f64>, unbounded: &str| e.map_or(unbounded.to_string(), |v| format!("{v:.2}"));
            let _ = writeln!(
                s,
                "  {kind} [{:>5}, {:>5}): {:>5} cells, {} right",
                edge(bkt.from, "-inf"),
                edge(bkt.to, "inf"),
                bkt.cells,
                pct(bkt.accuracy)
            );
        }
    }
    for q in &r.confident_quarter {
        let kind = match q.kind {
            ColumnKind::Categorical => "categorical",
            ColumnKind::Continuous => "continuous",
        };
        let _ = writeln!(
            s,
            "the attacker's surest quarter of {kind} cells ({} of {}, entropy ≤ {:.2}): {} right, against {} of all",
            q.quarter_cells,
            q.cells,
            q.quarter_entropy_max,
            pct(Some(q.quarter_accuracy)),
            pct(Some(q.accuracy))
        );
    }
    let shown = r.rows.len().min(max_rows);
    if shown > 0 {
        let _ = writeln!(
            s,
            "\nfirst {shown} of {} rows: T = true, R = reconstructed; ✓/✗ right or wrong; ● ◐ ○ high / medium / low confidence",
            r.rows.len()
        );
        let widths: Vec<usize> = r
            .features
            .iter()
            .enumerate()
            .map(|(f, h)| {
                r.rows[..shown]
                    .iter()
                    .flat_map(|row| [row.truth[f].chars().count(), row.reconstructed[f].chars().count() + 2])
                    .chain([h.name.chars().count()])
                    .max()
                    .unwrap_or(4)
                    .min(22)
            })
            .collect();
        let cell = |text: &str, w: usize| {
            let t: String = text.chars().take(w).collect();
            format!("{t:<w$} ")
        };
        let mut header = String::from("      ");
        for (h, &w) in r.features.iter().zip(&widths) {
            header += &cell(&h.name, w);
        }
        let _ = writeln!(s, "{}", header.trim_end());
        for (i, row) in r.rows[..shown].iter().enumerate() {
            let mut t = format!("{:>3} T ", i + 1);
            let mut rec = String::from("    R ");
            for (f, &w) in widths.iter().enumerate() {
                t += &cell(&row.truth[f], w);
                let mark = if row.correct[f] { "✓" } else { "✗" };
                let conf = confidence_mark(row.confidence[f]);
                let text: String = row.reconstructed[f].chars().take(w.saturating_sub(2)).collect();
                rec += &cell(&format!("{text}{mark}{conf}"), w);
            }
            let _ = writeln!(s, "{}\n{}", t.trim_end(), rec.trim_end());
        }
    }
    for w in &r.warnings {
        let _ = writeln!(s, "note: {w}");
    }
    s
}

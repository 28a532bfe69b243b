//! What one attack leaked, as a plain serialisable object and as text for a terminal.
use serde::{Deserialize, Serialize};

use crate::assess::scoring::{Accuracy, Scored};
use crate::experiment::{AttackConfig, AttackKind, LabelMode};
use crate::table::{ColumnKind, Dataset, Value};

/// Continuous entropies below this are reported as this (members agreeing exactly give −∞).
pub const ENTROPY_FLOOR: f64 = -20.0;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeatureHeader {
    pub name: String,
    pub kind: ColumnKind,
}

/// One true row beside the reconstructed row matched to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowReport {
    pub truth: Vec<String>,
    pub reconstructed: Vec<String>,
    pub correct: Vec<bool>,
    /// Per cell; null for attacks without an ensemble.
    pub entropy: Vec<Option<f64>>,
}

/// Accuracy of the cells whose entropy falls in [from, to).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntropyBucket {
    pub kind: ColumnKind,
    pub from: f64,
    pub to: f64,
    pub cells: usize,
    pub accuracy: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub attack: AttackKind,
    pub backend: String,
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
    pub loss_curve: Vec<(usize, f64)>,
    pub table_rows: usize,
    pub dropped_rows: usize,
    pub warnings: Vec<String>,
}

const CAT_EDGES: [f64; 5] = [0.0, 0.1, 0.3, 0.6, 1.000001];
const CONT_EDGES: [f64; 5] = [f64::NEG_INFINITY, -1.0, 0.0, 1.0, f64::INFINITY];

#[allow(clippy::too_many_arguments)]
pub fn build_report(
    dataset: &Dataset,
    config: &AttackConfig,
    backend: &str,
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
    let features: Vec<FeatureHeader> = dataset
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
        .collect();
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
        })
        .collect();
    let mut entropy_buckets = Vec::new();
    if entropy.is_some() {
        for (kind, edges) in [
            (ColumnKind::Categorical, CAT_EDGES),
            (ColumnKind::Continuous, CONT_EDGES),
        ] {
            for w in edges.windows(2) {
                let cells: Vec<bool> = rows
                    .iter()
                    .flat_map(|r| r.entropy.iter().zip(&r.correct).zip(&features))
                    .filter(|((e, _), f)| f.kind == kind && e.is_some_and(|e| e >= w[0] && e < w[1]))
                    .map(|((_, &c), _)| c)
                    .collect();
                if features.iter().any(|f| f.kind == kind) {
                    entropy_buckets.push(EntropyBucket {
                        kind,
                        from: w[0],
                        to: w[1],
                        cells: cells.len(),
                        accuracy: (!cells.is_empty())
                            .then(|| cells.iter().filter(|&&c| c).count() as f64 / cells.len() as f64),
                    });
                }
            }
        }
    }
    Report {
        attack: config.attack,
        backend: backend.to_string(),
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
        loss_curve,
        table_rows: dataset.n(),
        dropped_rows: dataset.dropped,
        warnings: dataset.warnings.clone(),
    }
}

/// Confidence mark of a cell: ● high, ◐ medium, ○ low, blank without an ensemble.
pub fn confidence_mark(kind: ColumnKind, entropy: Option<f64>) -> &'static str {
    let Some(e) = entropy else { return " " };
    let (high, medium) = match kind {
        ColumnKind::Categorical => (0.1, 0.3),
        ColumnKind::Continuous => (-1.0, 0.0),
    };
    if e < high {
        "●"
    } else if e < medium {
        "◐"
    } else {
        "○"
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
    let _ = writeln!(
        s,
        "{name} on a batch of {} rows{steps}, {labels}, seed {}",
        c.batch_size, c.seed
    );
    let _ = writeln!(s, "backend {}, {:.2} s", r.backend, r.seconds);
    if let Some(d) = &c.defence {
        let _ = writeln!(s, "defence: clip {:?}, noise σ = {}", d.clip, d.noise);
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
            let _ = writeln!(
                s,
                "  {kind} [{:>5.2}, {:>5.2}): {:>5} cells, {} right",
                bkt.from,
                bkt.to,
                bkt.cells,
                pct(bkt.accuracy)
            );
        }
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
                let conf = confidence_mark(r.features[f].kind, row.entropy[f]);
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

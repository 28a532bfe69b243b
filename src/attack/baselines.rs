//! The baselines, as published: Cosine (Geiping et al.) and DLG (Zhu et al.) invert one run of the
//! encoded rows, without relaxation and without leakscope's priors; the random baseline draws
//! rows feature by feature from the table's marginals, so each cell is an independent draw (unlike
//! the reference, which gives every row the same continuous value).
use rand::{Rng, SeedableRng, rngs::StdRng};

use crate::attack::inversion::objective::Objective;
use crate::attack::registry::{Attack, Inverts};
use crate::attack::spec::{AttackKind, CosineBaseline, DlgBaseline, RandomBaseline};
use crate::table::{Dataset, Value};

impl Attack for CosineBaseline {
    fn kind(&self) -> AttackKind {
        AttackKind::Cosine
    }

    fn title(&self) -> String {
        "Cosine baseline".into()
    }

    fn inversion(&self) -> Option<Inverts> {
        Some(Inverts {
            relaxed: false,
            objective: Objective::Cosine,
        })
    }
}

impl Attack for DlgBaseline {
    fn kind(&self) -> AttackKind {
        AttackKind::Dlg
    }

    fn title(&self) -> String {
        "DLG baseline".into()
    }

    fn inversion(&self) -> Option<Inverts> {
        Some(Inverts {
            relaxed: false,
            objective: Objective::SquaredError,
        })
    }
}

impl Attack for RandomBaseline {
    fn kind(&self) -> AttackKind {
        AttackKind::Random
    }

    fn title(&self) -> String {
        "Random baseline".into()
    }

    fn inversion(&self) -> Option<Inverts> {
        None
    }

    fn refuses_received(&self) -> Option<&'static str> {
        Some("the random baseline draws from the table's rows, which a received update does not come with")
    }
}

/// A regression's labels drawn from the table's, in its units: what the server knows of them
/// without the update.
pub fn random_values(dataset: &Dataset, rows: usize, seed: u64) -> Vec<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..rows)
        .map(|_| dataset.values[rng.random_range(0..dataset.values.len())])
        .collect()
}

/// A regression's likeliest label: the table's value with the most labels within a label's
/// tolerance of it (Adult's hours-per-week: 40, within ±3.8 of half the rows). Guessed for every
/// row, it can score far above labels drawn from the table (25-40 %), so a fallback takes it.
pub fn likeliest_value(dataset: &Dataset) -> Option<f64> {
    let tolerance = dataset.target.as_ref()?.tolerance();
    let mut sorted = dataset.values.clone();
    sorted.sort_by(f64::total_cmp);
    let (mut low, mut high) = (0, 0);
    let mut best: Option<(usize, f64)> = None;
    for &v in &sorted {
        while sorted[low] < v - tolerance {
            low += 1;
        }
        while high < sorted.len() && sorted[high] <= v + tolerance {
            high += 1;
        }
        if best.is_none_or(|(count, _)| high - low > count) {
            best = Some((high - low, v));
        }
    }
    best.map(|(_, v)| v)
}

/// The indices of `dataset`'s rows not at `excluded` (the client's batch), in order: what the
/// table's guess (`assess::table_guess`) is chosen from.
pub fn rows_outside(dataset: &Dataset, excluded: &[usize]) -> Vec<usize> {
    let excluded: std::collections::HashSet<usize> = excluded.iter().copied().collect();
    (0..dataset.n()).filter(|i| !excluded.contains(i)).collect()
}

pub fn random_rows(dataset: &Dataset, rows: usize, seed: u64) -> Vec<Vec<Value>> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..rows)
        .map(|_| {
            (0..dataset.features.len())
                .map(|f| dataset.rows[rng.random_range(0..dataset.n())][f])
                .collect()
        })
        .collect()
}

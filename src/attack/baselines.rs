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

/// The indices of `dataset`'s rows not at `excluded` (the client's batch), in order: what
/// `table_rows` draws from.
pub fn rows_outside(dataset: &Dataset, excluded: &[usize]) -> Vec<usize> {
    let excluded: std::collections::HashSet<usize> = excluded.iter().copied().collect();
    (0..dataset.n()).filter(|i| !excluded.contains(i)).collect()
}

/// `rows` rows of the table at indices `outside` (`rows_outside` the client's batch), none twice:
/// what a server holding the table's other rows guesses without the update. Its rows keep each
/// row's cells together, which the marginals' draw (`random_rows`) does not: on full Adult, B = 32,
/// such rows score about 66 % against the draw's 61 % (docs/results/rounds.md). None where there
/// are fewer than `rows` of them.
pub fn table_rows(dataset: &Dataset, outside: &[usize], rows: usize, seed: u64) -> Option<Vec<Vec<Value>>> {
    if outside.len() < rows {
        return None;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let picked = rand::seq::index::sample(&mut rng, outside.len(), rows);
    Some(picked.iter().map(|i| dataset.rows[outside[i]].clone()).collect())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The table's rows drawn for a guess: whole rows of the table, none of the batch, none twice;
    /// none where the table has too few rows outside the batch.
    #[test]
    fn table_rows_are_rows_outside_the_batch_none_twice() {
        let data = crate::table::adult_sample();
        let batch: Vec<usize> = (0..data.n()).filter(|i| i % 2 == 0).collect();
        let outside = rows_outside(&data, &batch);
        let rows = table_rows(&data, &outside, 64, 9).expect("enough rows outside");
        for row in &rows {
            assert!((0..data.n()).any(|j| j % 2 == 1 && data.rows[j] == *row), "{row:?}");
        }
        assert_eq!(rows, table_rows(&data, &outside, 64, 9).unwrap());
        assert_ne!(rows, table_rows(&data, &outside, 64, 10).unwrap());
        let n = data.n() - batch.len();
        assert!(table_rows(&data, &outside, n, 1).is_some());
        assert!(table_rows(&data, &outside, n + 1, 1).is_none());
        // None twice: the draw is of indices without replacement.
        let every = table_rows(&data, &outside, n, 1).unwrap();
        let mut distinct: Vec<&Vec<Value>> = every.iter().collect();
        let odd: Vec<&Vec<Value>> = (0..data.n()).filter(|i| i % 2 == 1).map(|i| &data.rows[i]).collect();
        distinct.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
        let mut want = odd;
        want.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
        assert_eq!(distinct, want);
    }
}

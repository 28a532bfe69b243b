//! The random baseline: rows drawn feature by feature from the table's marginals, so each cell
//! is an independent draw (unlike the reference, which gives every row the same continuous value).
use rand::{Rng, SeedableRng, rngs::StdRng};

use crate::table::{Dataset, Value};

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

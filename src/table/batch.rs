//! A client's batch as drawn from the table by a seed, and rows in the table's encoding.
use rand::{SeedableRng, rngs::StdRng, seq::index::sample};

use super::{Dataset, Value};
use crate::seed::seed_for;

/// The batch a client holds for a given seed: B distinct rows of the table.
pub fn draw_batch(dataset: &Dataset, batch_size: usize, seed: u64) -> Vec<usize> {
    let mut rng = StdRng::seed_from_u64(seed_for(seed, 1));
    let mut rows = sample(&mut rng, dataset.n(), batch_size).into_vec();
    rows.sort_unstable();
    rows
}

/// Rows in the table's encoding, one after another.
pub fn encode_rows(dataset: &Dataset, rows: &[Vec<Value>]) -> Vec<f32> {
    rows.iter().flat_map(|r| dataset.encode(r)).map(|v| v as f32).collect()
}

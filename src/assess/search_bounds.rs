//! How far the update's choice of rows (`assess::update_choice`) and a reshuffling client's
//! orders (`assess::epoch_orders`) search at most: the bounds their loops stop at, and the client
//! updates they replay at most, which the attack's counted work includes (`plan::cost`); and
//! the rows and bytes FedSGD's pursuit among a crowded span's rows holds at most.

/// Rows each row tries per sweep at most: whole rows first, then one-cell changes by their votes.
pub const MOST_TRIED: usize = 32;
/// Sweeps over the rows at most (a sweep that changes nothing ends the search); on Adult's
/// momentum client at E = 5 (seed 1, docs/results/recipes.md) 12 sweeps fitted 0.0078 against
/// 4 sweeps' 0.0082 and scored no more cells.
pub const SWEEPS: usize = 4;
/// Pairs of rows in different local batches tried per sweep at most (n²/2 grows fast).
pub const MOST_PAIRS: usize = 2048;
/// Rounds of the orders' search at most (a round that changes nothing ends it); each tries every
/// pair of positions in different local batches of one epoch whose rows share a label (at most
/// E·n²/2·(1 − b/n) client updates: 1,920 at E = 5, n = 32, b = 8). On Adult's momentum client
/// at E = 5, seed 1 (docs/results/recipes.md), 8 rounds fitted 0.041, about 25 (to a round that
/// changed nothing) 0.040, and with the rows trading places in the orders as the choice changed
/// them, the cells scored 94.2 against 94.6 %.
pub const ROUNDS: usize = 8;

/// Rows of a crowded first-layer span per row of the batch the span's search still returns, for
/// the update's choice alone (`assess::enumerated`): Adult [32, 32], B = 32, untrained, held
/// 461-14,702 rows.
pub const CROWD_PER_ROW: usize = 1024;

/// Whether FedSGD's pursuit among a crowded span's rows (`assess::span_pursuit`) runs on a
/// network of these widths ([d, hidden..., outputs]) at a batch of `b`: only where the first
/// layer is no wider than the batch. Wider, the span's own proofs and the certificates decide the
/// rows, and the picks fitted nothing (Adult [100, 100], B = 32, trained 5 and 20 epochs, seeds
/// 0-2: the picks left 0.40-0.99 of the update, 1 − cos 0.37-0.99, none kept).
pub fn pursues(sizes: &[usize], b: usize) -> bool {
    sizes.len() > 2 && sizes[1] <= b
}

/// Bytes the pursuit holds at most: past them it does not run (Adult [32, 32] at B = 32 holds at
/// most 106 MB: 32,768 rows of 406 numbers).
pub const MOST_PURSUIT_BYTES: u64 = 128 << 20;

/// Bytes the pursuit holds for `rows` candidates with `classes` labels on a network of these
/// widths: per row its encoding, every layer's input and each label's δ's, in f64.
pub fn pursuit_bytes(rows: usize, sizes: &[usize], classes: usize) -> u64 {
    // Saturating: absurd settings estimate as u64::MAX rather than wrap.
    let sum = |s: &[usize]| s.iter().fold(0u64, |a, &n| a.saturating_add(n as u64));
    let layers = sizes.len() - 1;
    let per_row = (sizes[0] as u64)
        .saturating_add(sum(&sizes[..layers]))
        .saturating_add((classes as u64).saturating_mul(sum(&sizes[1..])));
    (rows as u64).saturating_mul(per_row).saturating_mul(8)
}

/// Bytes the pursuit holds at most at a batch of `b`: for a crowded span's rows
/// (`CROWD_PER_ROW` per row of the batch), within `MOST_PURSUIT_BYTES`, and the encodings of as
/// many rows of the span of every direction, held beside them for the pursuit's second run
/// (`Setup::span_of_every_direction`); nothing where it does not run.
pub fn pursuit_working_bytes(sizes: &[usize], b: usize, classes: usize) -> u64 {
    let rows = CROWD_PER_ROW.saturating_mul(b);
    match pursues(sizes, b) {
        true => (pursuit_bytes(rows, sizes, classes).min(MOST_PURSUIT_BYTES))
            .saturating_add((rows as u64).saturating_mul(sizes[0] as u64).saturating_mul(8)),
        false => 0,
    }
}

/// Client updates the pursuit's picks replay at most (`UpdateChoice::pursue_rows`): the picks
/// among two spans' rows (the determined span's and every direction's), each at two points of
/// their lines.
pub const PURSUIT_REPLAYS: usize = 4;

/// Pairs of `n` rows that lie in different local batches of `local_batch` rows.
pub fn cross_batch_pairs(n: usize, local_batch: usize) -> usize {
    let b = local_batch.max(1);
    let within: usize = (0..n.div_ceil(b))
        .map(|s| b.min(n - s * b))
        .map(|r| r * r.saturating_sub(1) / 2)
        .sum();
    n * n.saturating_sub(1) / 2 - within
}

/// Client updates the choice of rows replays at most in one pooling of `n` rows in local batches
/// of `local_batch`: the first fit, then every sweep's tries of every row, and where the order is
/// known (`known_order`) its pairs trading places (none where there are more than `MOST_PAIRS`).
pub fn choice_replays(n: usize, local_batch: usize, known_order: bool) -> usize {
    let pairs = match known_order {
        true => Some(cross_batch_pairs(n, local_batch))
            .filter(|&p| p <= MOST_PAIRS)
            .unwrap_or(0),
        false => 0,
    };
    1 + SWEEPS * (n * MOST_TRIED + pairs)
}

/// Client updates a reshuffling client's orders' search replays at most in one pooling: every
/// member's proposal, then `ROUNDS` rounds of every pair in different local batches of each of
/// `epochs` epochs, and the round's best changes together.
pub fn order_replays(n: usize, epochs: usize, local_batch: usize, members: usize) -> usize {
    members + ROUNDS * (epochs * cross_batch_pairs(n, local_batch) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_in_different_batches_are_counted_as_the_searches_list_them() {
        let listed = |n: usize, b: usize| {
            (0..n)
                .flat_map(|a| (a + 1..n).map(move |c| (a, c)))
                .filter(|&(a, c)| a / b != c / b)
                .count()
        };
        for (n, b) in [(32, 8), (30, 8), (7, 3), (5, 5), (4, 1)] {
            assert_eq!(cross_batch_pairs(n, b), listed(n, b), "{n} rows, batches of {b}");
        }
        assert_eq!(cross_batch_pairs(32, 8), 384);
        assert_eq!(order_replays(32, 5, 8, 15), 15 + 8 * (5 * 384 + 1));
        assert_eq!(choice_replays(32, 8, true), 1 + 4 * (32 * 32 + 384));
        assert_eq!(choice_replays(32, 8, false), 1 + 4 * 32 * 32);
        // More pairs than a sweep tries: none trade places.
        assert_eq!(choice_replays(100, 8, true), 1 + 4 * 100 * 32);
    }
}

//! The table's guess as a set of the table's rows (`typical_set`), and how it weighs against the
//! marginals' draw on batches the server simulates (`weigh_against_draw`).
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::assess::assignment::Assignment;
use crate::assess::matching::Rule;
use crate::assess::scoring::score;
use crate::table::{Dataset, Value};

/// Batches of the slots' labels the set is fitted to, and swaps tried per slot: on full Adult at
/// B = 32 (20 and 10 batches), 16 batches and 8 swaps a slot scored 71.1 %, 8 and 4 70.4 % at a
/// quarter of the work.
const SIMULATED: usize = 8;
const SWAPS_PER_ROW: usize = 4;
/// Work the search does at most, so that the guess costs a bounded share of the attack: B³ per
/// simulated batch to match the starting set (none past B = 292: the set is the starting draw)...
const MOST_WORK: u64 = 200_000_000;
/// ...then B² per simulated batch per swap (one augmenting path, `Assignment`) at most this much:
/// every swap up to B = 80, at B = 128 a quarter (128 of 512). Full Adult, B = 128, seeds 0-2:
/// the guess scored 73.6 % with the eleven swaps that re-solving each assignment (B³ a swap)
/// had allowed, 75.0 % with 128, 75.8 % with all 512 at 0.1 s more a guess natively.
const MOST_SWAP_WORK: u64 = 1 << 24;

/// The slots of a batch the server simulates from its rows: each slot's class and each class's
/// pool, the rows of `outside` of that label (a regression's, or where the server does not pair
/// labels with rows: one pool of every row).
struct Slots {
    pools: Vec<Vec<usize>>,
    class: Vec<usize>,
}

impl Slots {
    /// None where some label has fewer rows in `outside` than slots.
    fn of(dataset: &Dataset, outside: &[usize], labels: Option<&[usize]>, rows: usize) -> Option<Slots> {
        let classes = dataset.classes.len().max(1);
        let mut pools: Vec<Vec<usize>> = vec![Vec::new(); classes];
        for &i in outside {
            let c = match labels {
                Some(_) => dataset.labels[i],
                None => 0,
            };
            pools.get_mut(c)?.push(i);
        }
        let class: Vec<usize> = match labels {
            Some(l) if l.len() == rows => l.to_vec(),
            Some(_) => return None,
            None => vec![0; rows],
        };
        for (c, pool) in pools.iter().enumerate() {
            if class.iter().filter(|&&s| s == c).count() > pool.len() {
                return None;
            }
        }
        Some(Slots { pools, class })
    }

    /// A batch: each class's slots take distinct rows of its pool.
    fn draw(&self, rng: &mut StdRng) -> Vec<usize> {
        let mut taken: Vec<Vec<usize>> = vec![Vec::new(); self.pools.len()];
        (self.class.iter())
            .map(|&c| {
                loop {
                    let i = self.pools[c][rng.random_range(0..self.pools[c].len())];
                    if !taken[c].contains(&i) {
                        taken[c].push(i);
                        break i;
                    }
                }
            })
            .collect()
    }
}

/// The table's guess for a batch whose slots have `labels` (a regression's, or where the server
/// does not pair labels with rows: None, every slot drawn from every row), from the rows of
/// `dataset` at `outside`, as indices into the table (`rows_at`). None where some label has fewer
/// rows there than slots.
pub fn typical_set(
    rules: &[Rule],
    dataset: &Dataset,
    outside: &[usize],
    labels: Option<&[usize]>,
    rows: usize,
    seed: u64,
) -> Option<Vec<usize>> {
    if rows == 0 {
        return Some(Vec::new());
    }
    let slots = Slots::of(dataset, outside, labels, rows)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let simulated: Vec<Vec<usize>> = (0..SIMULATED).map(|_| slots.draw(&mut rng)).collect();
    let mut set = slots.draw(&mut rng);
    // In u64: on wasm32 a usize holds B³·8 only below B = 813.
    let (b, simulated_count) = (rows as u64, SIMULATED as u64);
    let (start, swap) = (
        simulated_count.saturating_mul(b.saturating_pow(3)),
        simulated_count * b * b,
    );
    let swaps = match start <= MOST_WORK {
        true => (SWAPS_PER_ROW as u64 * b).min(MOST_SWAP_WORK / swap.max(1)),
        false => 0,
    };
    if swaps == 0 {
        return Some(set);
    }
    let agree = |a: usize, b: usize| -> i64 {
        let (a, b) = (&dataset.rows[a], &dataset.rows[b]);
        rules
            .iter()
            .zip(a.iter().zip(b))
            .filter(|(r, (x, y))| r.agrees(**x, **y))
            .count() as i64
    };
    // Each simulated batch's best matching to the set, kept optimal as one slot's row changes
    // (`Assignment`): the same values as solving each again, a swap in O(B²) instead of O(B³).
    let mut matchings: Vec<Assignment> = simulated
        .iter()
        .map(|batch| Assignment::new(rows, |i, j| agree(batch[i], set[j])))
        .collect();
    let total = |m: &[Assignment]| -> i64 { m.iter().map(Assignment::value).sum() };
    let mut best = total(&matchings);
    for _ in 0..swaps {
        let slot = rng.random_range(0..rows);
        let pool = &slots.pools[slots.class[slot]];
        let candidate = pool[rng.random_range(0..pool.len())];
        if set.contains(&candidate) {
            continue;
        }
        let undo: Vec<_> = (matchings.iter_mut().zip(&simulated))
            .map(|(m, batch)| m.set_column(slot, |i| agree(batch[i], candidate)))
            .collect();
        let tried = total(&matchings);
        if tried > best {
            (best, set[slot]) = (tried, candidate);
        } else {
            matchings.iter_mut().zip(undo).for_each(|(m, u)| m.undo(u));
        }
    }
    Some(set)
}

/// The table's rows at `set`.
pub fn rows_at(dataset: &Dataset, set: &[usize]) -> Vec<Vec<Value>> {
    set.iter().map(|&i| dataset.rows[i].clone()).collect()
}

/// Batches of the slots' labels the table's guess is weighed on against the marginals' draw,
/// drawn afresh (not those the set was fitted to, on which it would look better than it is).
const WEIGHED: usize = 64;

/// The table's guess weighed against the marginals' draw (the report's guessing) on batches the
/// server simulates from its own rows: their mean gain in right cells, and on how many the guess
/// scored below the draw. A report is about one batch, so the guess is taken only where it beats
/// (or ties) the draw on nearly every batch, 19 in 20 (`MOST_BELOW`), not on the mean alone: on
/// tables whose columns hold little of one another (four synthetic ones, 40 client batches each)
/// the guess scored 0.2-1.7 points above the draw on the mean and below it on 9-18 batches of
/// 40 (by up to 5.7 points), and every attack whose cells all fell back to it then scored below
/// guessing. Elsewhere rows that fall back whole take the draw.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct GuessWeighed {
    pub batches: usize,
    pub gain: f64,
    pub below: usize,
    /// Whether rows that fall back whole take the guess: it scored below the draw on at most
    /// `MOST_BELOW` of the batches.
    pub taken: bool,
}

/// The share of the server's batches on which the table's guess may score below the draw and be
/// taken: one in twenty.
pub const MOST_BELOW: f64 = 0.05;

/// The table's rows at `set` (the guess) and `draw` scored on `WEIGHED` batches of the slots'
/// labels drawn from the rows at `outside` other than the guess's own: a batch holding one of
/// them would match it exactly, which no batch of the client's can (on a table of 600 rows the
/// guess then scored 4 points over the draw on the mean of 16 batches, against 0.4 on the
/// client's 40). Fewer batches where B³ per score would pass `MOST_WORK`; None under 20 (past
/// B = 170, where the guess is taken unweighed, as before), or where the slots cannot be filled.
pub fn weigh_against_draw(
    rules: &[Rule],
    dataset: &Dataset,
    outside: &[usize],
    labels: Option<&[usize]>,
    set: &[usize],
    draw: &[Vec<Value>],
    seed: u64,
) -> Option<GuessWeighed> {
    let rows = set.len();
    let guess = rows_at(dataset, set);
    let others: Vec<usize> = outside.iter().copied().filter(|i| !set.contains(i)).collect();
    let slots = Slots::of(dataset, &others, labels, rows)?;
    let per_batch = 2u64.saturating_mul((rows as u64).saturating_pow(3));
    let batches = WEIGHED.min((MOST_WORK / per_batch.max(1)) as usize);
    if batches < 20 || draw.len() != rows {
        return None;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let gains: Vec<f64> = (0..batches)
        .map(|_| {
            let batch = rows_at(dataset, &slots.draw(&mut rng));
            score(rules, &batch, &guess).accuracy.total - score(rules, &batch, draw).accuracy.total
        })
        .collect();
    let below = gains.iter().filter(|&&g| g < 0.0).count();
    Some(GuessWeighed {
        batches,
        gain: gains.iter().sum::<f64>() / batches as f64,
        below,
        taken: below as f64 <= MOST_BELOW * batches as f64,
    })
}

/// The table's guess made for a setup, and how it weighed against the marginals' draw (None:
/// not weighed, past the work bound).
#[derive(Debug, Clone)]
pub(crate) struct TableGuess {
    pub(crate) rows: Vec<Vec<Value>>,
    pub(crate) weighed: Option<GuessWeighed>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attack::baselines::{random_rows, rows_outside};

    /// `rows` rows of the table at `outside` drawn whole, none twice: the guess before this one.
    fn table_rows(data: &Dataset, outside: &[usize], rows: usize, seed: u64) -> Vec<Vec<Value>> {
        let picked = rand::seq::index::sample(&mut StdRng::seed_from_u64(seed), outside.len(), rows);
        picked.iter().map(|i| data.rows[outside[i]].clone()).collect()
    }

    /// On the Adult sample's batches the table's guess, the rows of the table outside the batch
    /// of the slots' labels, beats both the marginals' draw and the table's rows drawn whole, on
    /// the mean of 12 batches; and it is deterministic in its seed.
    #[test]
    fn the_tables_guess_beats_its_draws_without_the_update() {
        let data = crate::table::adult_sample();
        let rules = Rule::of(&data.features);
        let (mut typical, mut drawn, mut marginal) = (0.0, 0.0, 0.0);
        let mut rng = StdRng::seed_from_u64(3);
        for b in 0..12u64 {
            let batch: Vec<usize> = rand::seq::index::sample(&mut rng, data.n(), 16).into_vec();
            let truth: Vec<Vec<Value>> = batch.iter().map(|&i| data.rows[i].clone()).collect();
            let labels: Vec<usize> = batch.iter().map(|&i| data.labels[i]).collect();
            let outside = rows_outside(&data, &batch);
            let guess = rows_at(
                &data,
                &typical_set(&rules, &data, &outside, Some(&labels), 16, b).unwrap(),
            );
            assert_eq!(
                guess,
                rows_at(
                    &data,
                    &typical_set(&rules, &data, &outside, Some(&labels), 16, b).unwrap()
                )
            );
            for row in &guess {
                assert!(
                    outside.iter().any(|&i| data.rows[i] == *row),
                    "a row of the batch guessed"
                );
            }
            typical += score(&rules, &truth, &guess).accuracy.total;
            drawn += score(&rules, &truth, &table_rows(&data, &outside, 16, b))
                .accuracy
                .total;
            marginal += score(&rules, &truth, &random_rows(&data, 16, b)).accuracy.total;
        }
        eprintln!("typical {typical:.3}, table rows {drawn:.3}, marginals {marginal:.3} (sums of 12)");
        assert!(
            typical > drawn + 0.12 && drawn > marginal,
            "{typical} {drawn} {marginal}"
        );
        // Beyond the work bound (B = 293 and up) the guess is its starting draw, whole rows of
        // the table, on every word size (the bound is counted in u64).
        let all: Vec<usize> = (0..data.n()).collect();
        let wide = rows_at(&data, &typical_set(&rules, &data, &all, None, 300, 1).unwrap());
        assert_eq!(wide.len(), 300);
        assert!(wide.iter().all(|row| data.rows.contains(row)));
        // Too few rows of a label outside the batch: no guess.
        assert!(typical_set(&rules, &data, &all[..3], Some(&[0; 8]), 8, 0).is_none());
    }

    /// The guess is weighed against the marginals' draw on batches of rows other than its own,
    /// and taken only where it beats the draw on nearly every batch: on the Adult sample, whose
    /// columns hold one another, it is; on a table of independent columns and a coin-flip label
    /// it is not, though it scores about the draw there on the mean.
    #[test]
    fn the_guess_is_taken_only_where_it_beats_the_draw_on_nearly_every_batch() {
        let taken = |data: &Dataset, b: usize| -> (usize, f64) {
            let rules = Rule::of(&data.features);
            let mut rng = StdRng::seed_from_u64(5);
            let (mut taken, mut gain) = (0, 0.0);
            for k in 0..6u64 {
                let batch: Vec<usize> = rand::seq::index::sample(&mut rng, data.n(), b).into_vec();
                let labels: Vec<usize> = batch.iter().map(|&i| data.labels[i]).collect();
                let outside = rows_outside(data, &batch);
                let set = typical_set(&rules, data, &outside, Some(&labels), b, k).unwrap();
                let draw = random_rows(data, b, k);
                let w = weigh_against_draw(&rules, data, &outside, Some(&labels), &set, &draw, k).unwrap();
                assert_eq!(w.batches, WEIGHED);
                taken += w.taken as usize;
                gain += w.gain / 6.0;
            }
            (taken, gain)
        };
        let (adult, adult_gain) = taken(&crate::table::adult_sample(), 16);
        let flat = crate::table::continuous_table(6, 600, 1);
        let (independent, independent_gain) = taken(&flat, 16);
        eprintln!(
            "taken: Adult {adult} of 6 (gain {adult_gain:.3}), independent {independent} of 6 ({independent_gain:.3})"
        );
        assert!(adult >= 5 && adult_gain > 0.03, "{adult} {adult_gain}");
        assert!(
            independent == 0 && independent_gain.abs() < 0.03,
            "{independent} {independent_gain}"
        );
        // The batches leave the guess's own rows out: where only they would fill a label's slots,
        // nothing is weighed.
        let rules = Rule::of(&flat.features);
        let outside: Vec<usize> = (0..24).collect();
        let set: Vec<usize> = (0..16).collect();
        let draw = random_rows(&flat, 16, 0);
        assert!(weigh_against_draw(&rules, &flat, &outside, None, &set, &draw, 0).is_none());
        assert!(weigh_against_draw(&rules, &flat, &(0..40).collect::<Vec<_>>(), None, &set, &draw, 0).is_some());
    }
}

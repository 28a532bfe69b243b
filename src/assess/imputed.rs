//! The cells that fell back, in rows that kept others, imputed from the table's rows most like them.
//!
//! Where the fallback (`assess::fallback`) keeps some of a row's cells and sends the rest to the
//! marginals' guess, the guess is a draw from each column's marginal, blind to the rest of the
//! row. A server holding a sample of the population (the table's rows outside the client's batch,
//! as its shadow client does) knows better: a row kept as a 25-year-old own-child is unlikely to
//! earn a capital gain or work 60 hours. Each such cell becomes the value likeliest among the
//! k sample rows that agree most with the row's kept cells (k-nearest-neighbour
//! imputation, k = √n): the commonest category, or the continuous value whose scoring window
//! (`Rule::tolerance` either side) holds the most of them. A row whose every cell fell back keeps
//! the guess, so an attack whose every cell falls back still scores the guess's baseline exactly.
//! The server imputes only where its shadow client showed it gains (`Calibration::imputed`,
//! chosen by `table_prior::TableReads`); elsewhere the cells are the draw's (`mix`).
//!
//! Part of what imputation gains is the table's, not the update's: a likeliest value beats a
//! draw from the marginals even beside kept cells that say nothing. On full Adult, B = 32, with
//! every kept cell itself a draw (half the cells kept, or the categorical ones), imputing the rest
//! scored 66–68 % against the draw's 61–62 % (docs/results/rounds.md). So where it imputes, a
//! simulated client's report also states `without_update`: the same imputation around kept cells
//! drawn from the marginals, which is what the server's reads of its table give with no update.
use std::collections::HashSet;

use super::matching::Rule;
use super::reconstruct::Reconstruction;
use super::scoring::score;
use crate::attack::baselines::random_rows;
use crate::seed::seed_for;
use crate::table::{Dataset, Value};

/// Draws the control (`without_update`) averages over: one draw's figure varies by about two
/// points on Adult's 32 rows.
pub const CONTROL_DRAWS: u64 = 8;

/// What fallen cells are taken from: the marginals' draw, and where the server holds the table,
/// its guess (`assess::table_guess`) for the rows whose every cell falls back. A row that keeps
/// cells takes the draw's beside them: the table's guess is a set of whole rows made to match a
/// batch as a set, and one of its rows cut into beside kept cells is no such thing.
#[derive(Debug, Clone, PartialEq)]
pub struct Guess {
    pub draw: Vec<Vec<Value>>,
    pub table: Option<Vec<Vec<Value>>>,
}

impl Guess {
    /// The marginals' draw alone.
    pub fn drawn(draw: Vec<Vec<Value>>) -> Guess {
        Guess { draw, table: None }
    }

    /// The rows of a fallback of every cell: the table's guess where held, else the draw.
    pub fn whole(&self) -> &[Vec<Value>] {
        self.table.as_deref().unwrap_or(&self.draw)
    }
}

/// `mask` with the rows the update holds (`held`) left whole: such rows never fall back, on the
/// shadow batch as on the client's.
pub fn keep_held(mut mask: Vec<Vec<bool>>, held: &[bool]) -> Vec<Vec<bool>> {
    for (m, _) in mask.iter_mut().zip(held).filter(|(_, h)| **h) {
        m.fill(false);
    }
    mask
}

/// `mask` as it applies to `recon`'s rows: those the update holds (`held`) kept whole
/// (`keep_held`), and those it cannot see that no guess was read for
/// (`Reconstruction::unguessed`) falling back whole, on the shadow batch as on the client's.
pub fn decided(mask: Vec<Vec<bool>>, held: &[bool], recon: &Reconstruction) -> Vec<Vec<bool>> {
    let mut mask = keep_held(mask, held);
    for (m, _) in mask.iter_mut().zip(recon.unguessed()).filter(|(_, w)| *w) {
        m.fill(true);
    }
    mask
}

/// `rows` with the masked cells taken from `prior` (row i's from its row i: the table's guess's
/// where the whole row falls back and the server holds the table, else the draw's).
pub fn mix(rows: &[Vec<Value>], prior: &Guess, mask: &[Vec<bool>]) -> Vec<Vec<Value>> {
    rows.iter()
        .enumerate()
        .zip(mask)
        .map(|((i, row), m)| match &prior.table {
            Some(table) if m.iter().all(|&fall| fall) => table[i].clone(),
            _ => (row.iter().zip(&prior.draw[i]).zip(m))
                .map(|((&v, &g), &fall)| if fall { g } else { v })
                .collect(),
        })
        .collect()
}

/// The server's sample of the population: the table's rows, less the client's batch and (for
/// the shadow client) the shadow's own rows.
pub struct Sample<'a> {
    rows: Vec<&'a [Value]>,
}

impl<'a> Sample<'a> {
    /// `dataset`'s rows but those at `excluded` (the client's batch) and any equal to one of
    /// `also` (a shadow client's own rows, which its imputation must not find).
    pub fn of(dataset: &'a Dataset, excluded: &[usize], also: &[Vec<Value>]) -> Sample<'a> {
        let excluded: HashSet<usize> = excluded.iter().copied().collect();
        let rows = (0..dataset.n())
            .filter(|i| !excluded.contains(i))
            .map(|i| &dataset.rows[i][..])
            .filter(|r| !also.iter().any(|a| a[..] == **r))
            .collect();
        Sample { rows }
    }

    /// How many rows each imputation reads: √n, at least one.
    fn k(&self) -> usize {
        ((self.rows.len() as f64).sqrt().ceil() as usize).clamp(1, self.rows.len().max(1))
    }

    /// The `k` rows agreeing with `row` on the most of the `kept` features (ties: the table's
    /// order).
    fn nearest(&self, rules: &[Rule], row: &[Value], kept: &[usize]) -> Vec<&'a [Value]> {
        let mut scored: Vec<(usize, usize)> = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let disagree = kept.iter().filter(|&&f| !rules[f].agrees(r[f], row[f])).count();
                (disagree, i)
            })
            .collect();
        let k = self.k().min(scored.len());
        if k == 0 {
            return Vec::new();
        }
        scored.select_nth_unstable(k - 1);
        scored.truncate(k);
        scored.sort_unstable();
        scored.iter().map(|&(_, i)| self.rows[i]).collect()
    }
}

/// The likeliest value of feature `f` among `rows`: the commonest category (ties: the lowest),
/// or the value whose window of ± the rule's tolerance holds the most rows (ties: the lowest).
fn likeliest(rule: &Rule, rows: &[&[Value]], f: usize) -> Option<Value> {
    if rows.is_empty() {
        return None;
    }
    if rule.categorical {
        let mut counts: Vec<(u32, usize)> = Vec::new();
        for r in rows {
            let Value::Cat(c) = r[f] else { continue };
            match counts.iter_mut().find(|(k, _)| *k == c) {
                Some((_, n)) => *n += 1,
                None => counts.push((c, 1)),
            }
        }
        return counts
            .iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|&(c, _)| Value::Cat(c));
    }
    let mut values: Vec<f64> = rows.iter().map(|r| r[f].num()).collect();
    values.sort_by(f64::total_cmp);
    // Two pointers: for each value v, the rows within [v - t, v + t].
    let t = rule.tolerance + 1e-9;
    let (mut lo, mut hi, mut best) = (0, 0, (0, values[0]));
    for &v in &values {
        while values[lo] < v - t {
            lo += 1;
        }
        while hi < values.len() && values[hi] <= v + t {
            hi += 1;
        }
        if hi - lo > best.0 {
            best = (hi - lo, v);
        }
    }
    Some(Value::Num(best.1))
}

/// `rows` with each cell `mask` sends to the guess, in a row that keeps some cells, imputed from
/// `sample` (module doc). A column that falls back with another (`Rule::follows`, a column the
/// table determines from a category) is read among the neighbours holding the category imputed.
pub fn impute(rules: &[Rule], rows: &[Vec<Value>], mask: &[Vec<bool>], sample: &Sample) -> Vec<Vec<Value>> {
    rows.iter()
        .zip(mask)
        .map(|(row, fell)| {
            let kept: Vec<usize> = (0..row.len()).filter(|&f| !fell[f]).collect();
            if kept.is_empty() || kept.len() == row.len() {
                return row.clone();
            }
            filled(rules, row, fell, &sample.nearest(rules, row, &kept))
        })
        .collect()
}

/// `row` with each cell `fell` marks the likeliest value among `near` (`likeliest`); a column
/// that follows a category (`Rule::follows`) is read among the rows holding the category filled.
pub(super) fn filled(rules: &[Rule], row: &[Value], fell: &[bool], near: &[&[Value]]) -> Vec<Value> {
    let mut out = row.to_vec();
    // Categories first, so that a column following one reads it as filled.
    let order = (0..row.len()).filter(|&f| rules[f].follows.is_none());
    for f in order.chain((0..row.len()).filter(|&f| rules[f].follows.is_some())) {
        if !fell[f] {
            continue;
        }
        let same: Vec<&[Value]>;
        let among = match rules[f].follows {
            Some(g) => {
                same = near.iter().copied().filter(|r| r[g] == out[g]).collect();
                if same.is_empty() { near } else { &same }
            }
            None => near,
        };
        if let Some(v) = likeliest(&rules[f], among, f) {
            out[f] = v;
        }
    }
    out
}

/// The accuracy against `truth` of the imputation with the update's information taken out: each
/// cell `mask` keeps is replaced by a fresh draw from `dataset`'s marginals, the fallen cells are
/// the guess's (`prior`), and the rows are imputed from `sample` as the attack's are; the mean
/// over `CONTROL_DRAWS` draws (seeded from `seed`, streams of their own).
pub fn without_update(
    dataset: &Dataset,
    rules: &[Rule],
    truth: &[Vec<Value>],
    mask: &[Vec<bool>],
    prior: &Guess,
    sample: &Sample,
    seed: u64,
) -> f64 {
    let one = |d: u64| {
        let drawn = random_rows(dataset, truth.len(), seed_for(seed, 40 + d));
        let rows = impute(rules, &mix(&drawn, prior, mask), mask, sample);
        score(rules, truth, &rows).accuracy.total
    };
    (0..CONTROL_DRAWS).map(one).sum::<f64>() / CONTROL_DRAWS as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Vec<Rule> {
        vec![
            Rule {
                categorical: true,
                tolerance: 0.0,
                follows: None,
            },
            Rule {
                categorical: false,
                tolerance: 1.0,
                follows: None,
            },
        ]
    }

    /// A row whose every cell falls back is the table's guess's row where the server holds the
    /// table, else the draw's; a row that keeps cells takes the draw's cells beside them.
    #[test]
    fn whole_rows_fall_back_to_the_tables_guess_and_cells_beside_kept_ones_to_the_draw() {
        let row = |c: u32, v: f64| vec![Value::Cat(c), Value::Num(v)];
        let rows = vec![row(1, 1.0), row(2, 2.0), row(3, 3.0)];
        let draw = vec![row(10, 10.0), row(20, 20.0), row(30, 30.0)];
        let table = vec![row(100, 100.0), row(200, 200.0), row(300, 300.0)];
        let mask = vec![vec![true, true], vec![false, true], vec![false, false]];
        let held = Guess {
            draw: draw.clone(),
            table: Some(table.clone()),
        };
        assert_eq!(held.whole(), &table[..]);
        let want = vec![row(100, 100.0), row(2, 20.0), row(3, 3.0)];
        assert_eq!(mix(&rows, &held, &mask), want);
        let drawn = Guess::drawn(draw.clone());
        assert_eq!(drawn.whole(), &draw[..]);
        assert_eq!(
            mix(&rows, &drawn, &mask),
            vec![row(10, 10.0), row(2, 20.0), row(3, 3.0)]
        );
    }

    /// A cell that fell back, in a row that kept another, takes the likeliest value among the
    /// sample's rows that agree with the kept cell; a row whose every cell fell back, or none,
    /// is left as it is.
    #[test]
    fn a_fallen_cell_takes_the_likeliest_value_among_rows_like_its_kept_cells() {
        let mut rows: Vec<Vec<Value>> = Vec::new();
        // Category 0: values near 10; category 1: values near 50 (and two stray 10s).
        for i in 0..40 {
            rows.push(vec![Value::Cat(0), Value::Num(10.0 + (i % 3) as f64 * 0.5)]);
            rows.push(vec![Value::Cat(1), Value::Num(50.0 + (i % 2) as f64)]);
        }
        rows.push(vec![Value::Cat(1), Value::Num(10.0)]);
        rows.push(vec![Value::Cat(1), Value::Num(10.0)]);
        let sample = Sample {
            rows: rows.iter().map(|r| &r[..]).collect(),
        };
        let batch = vec![
            vec![Value::Cat(1), Value::Num(0.0)],
            vec![Value::Cat(0), Value::Num(0.0)],
            vec![Value::Cat(0), Value::Num(0.0)],
            vec![Value::Cat(1), Value::Num(0.0)],
        ];
        let mask = vec![
            vec![false, true],
            vec![false, true],
            vec![true, true],
            vec![false, false],
        ];
        let out = impute(&rules(), &batch, &mask, &sample);
        assert!(
            matches!(out[0][1], Value::Num(v) if (49.0..=51.0).contains(&v)),
            "{:?}",
            out[0]
        );
        assert!(
            matches!(out[1][1], Value::Num(v) if (9.0..=11.0).contains(&v)),
            "{:?}",
            out[1]
        );
        assert_eq!(out[2], batch[2]);
        assert_eq!(out[3], batch[3]);
        // The continuous cell kept and the category fallen: the commonest category near 50.
        let out = impute(
            &rules(),
            &[vec![Value::Cat(0), Value::Num(50.5)]],
            &[vec![true, false]],
            &sample,
        );
        assert_eq!(out[0][0], Value::Cat(1));
    }

    /// With nothing from the update, imputation still beats the marginals' draw: kept cells that
    /// are themselves draws, the rest imputed, score above the draw alone on the Adult sample (the
    /// likeliest value is a better bet than a draw). `without_update` measures exactly that, so a
    /// report can say how much of a gain over guessing is the table's.
    #[test]
    fn imputing_around_cells_that_say_nothing_still_beats_the_draw() {
        let data = crate::table::adult_sample();
        let rules = Rule::of(&data.features);
        let batch: Vec<usize> = (0..32).map(|i| 7 * i).collect();
        let truth: Vec<Vec<Value>> = batch.iter().map(|&i| data.rows[i].clone()).collect();
        let sample = Sample::of(&data, &batch, &[]);
        let guess = Guess::drawn(random_rows(&data, truth.len(), 3));
        let draw = score(&rules, &truth, &guess.draw).accuracy.total;
        // The categorical cells kept, the continuous ones fallen.
        let mask: Vec<Vec<bool>> = (0..truth.len())
            .map(|_| rules.iter().map(|r| !r.categorical).collect())
            .collect();
        let control = without_update(&data, &rules, &truth, &mask, &guess, &sample, 0);
        assert!(control > draw + 0.01, "{control} against the draw's {draw}");
        assert_eq!(
            control,
            without_update(&data, &rules, &truth, &mask, &guess, &sample, 0)
        );
        // Nothing kept: every row is the guess, imputed nowhere, and the control is the draw.
        let all = vec![vec![true; rules.len()]; truth.len()];
        assert_eq!(without_update(&data, &rules, &truth, &all, &guess, &sample, 0), draw);
    }

    /// The shadow's own rows are not in its sample (it cannot find them), nor the client's batch.
    #[test]
    fn the_sample_leaves_out_the_batch_and_the_shadows_rows() {
        let data = crate::table::adult_sample();
        let own = vec![data.rows[3].clone()];
        let sample = Sample::of(&data, &[0, 1], &own);
        let kept = (2..data.n()).filter(|&i| data.rows[i] != own[0]).count();
        assert_eq!(sample.rows.len(), kept);
        assert!(!sample.rows.iter().any(|r| **r == own[0][..]));
        assert!(std::ptr::eq(sample.rows[0].as_ptr(), data.rows[2].as_ptr()));
        assert_eq!(sample.k(), (kept as f64).sqrt().ceil() as usize);
    }
}

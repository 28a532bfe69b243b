//! The ensemble's continuous cells read with the table's own distribution as their prior.
//!
//! A pooled continuous cell is the members' median m, and their spread s (in the column's
//! standard deviations, read back from the cell's entropy, SPEC §5) says how far the members
//! disagree. The server also holds a sample of the population, the table's rows outside the
//! client's batch (as its shadow client does, `assess::shadow_rows`): where the members disagree,
//! the value the table makes likeliest near m is a better bet than m itself. The cell becomes the
//! value v whose scoring window (`Rule::tolerance` either side) holds the most of the sample's
//! rows u weighted by a Gaussian N(u; m, (k·s)²); where the window around m holds as much, the
//! cell stays m. The width k is the server's choice, made on its shadow client among `SPREADS`
//! (or none) by the shadow's cells right after its fallback thresholds are chosen, and only the
//! cells those thresholds keep are read so (`assess::fallback`): the cells that fall back are the
//! same with the prior or without. On Adult's [32, 32] network, B = 32, seeds 0-9, untrained
//! 75.6 → 77.0 % of cells; on three held-out tables 35 of 105 narrow attacks gained and none lost
//! (docs/results/rounds.md).
use std::collections::HashSet;

use crate::assess::entropy::continuous_spread;
use crate::assess::imputed::{Sample, impute, mix};
use crate::assess::matching::Rule;
use crate::table::{Dataset, Value};

/// The widths the shadow client tries, in members' spreads.
pub const SPREADS: [f64; 2] = [0.5, 1.0];

/// The shadow client's batch as its fallback left it: its true rows, the ensemble's rows with
/// their entropies, the rows its update does not hold (`open`), the marginals' guess and the
/// cells its thresholds send to it (`mask`).
pub struct ShadowCells<'a> {
    pub truth: &'a [Vec<Value>],
    pub rows: &'a [Vec<Value>],
    pub entropy: &'a [Vec<Option<f64>>],
    pub open: &'a [bool],
    pub prior: &'a super::imputed::Guess,
    pub mask: &'a [Vec<bool>],
}

/// How the server reads its sample of the table into a reconstruction, chosen on its shadow
/// client: the width of the prior on the continuous cells kept (`ColumnValues::read`; None: not
/// read) and whether the cells that fall back are imputed from rows like theirs
/// (`assess::imputed`); with the shadow's cells right so (0 where the server holds no table).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TableReads {
    pub spread: Option<f64>,
    pub imputed: bool,
    pub shadow_score: f64,
}

impl TableReads {
    /// Each read where it serves the shadow better than without (`score`: the shadow's cells
    /// right after its thresholds alone). The cells that fall back are the same whatever the
    /// prior does to the others, and a row whose every cell falls back is never imputed: a choice
    /// that only moves cells the shadow's thresholds keep, or cells of rows that keep some,
    /// cannot take the attack below guessing where every cell falls back. `batch`: the client's
    /// rows in the table, which the server's sample leaves out, as it leaves out the shadow's.
    pub fn chosen_on(
        dataset: &Dataset,
        rules: &[Rule],
        batch: &[usize],
        shadow: &ShadowCells,
        score: f64,
    ) -> TableReads {
        let right = |rows: &[Vec<Value>]| crate::assess::scoring::score(rules, shadow.truth, rows).accuracy.total;
        let values = ColumnValues::of(dataset, batch).without(shadow.truth);
        let mut best = (score, None, shadow.rows.to_vec());
        for k in SPREADS {
            let mut rows = shadow.rows.to_vec();
            values.read(dataset, rules, &mut rows, shadow.entropy, shadow.open, k);
            let r = right(&mix(&rows, shadow.prior, shadow.mask));
            if r > best.0 + 1e-12 {
                best = (r, Some(k), rows);
            }
        }
        let sample = Sample::of(dataset, batch, shadow.truth);
        let mixed = mix(&best.2, shadow.prior, shadow.mask);
        let imputed = right(&impute(rules, &mixed, shadow.mask, &sample));
        TableReads {
            spread: best.1,
            imputed: imputed > best.0 + 1e-12,
            shadow_score: best.0.max(imputed),
        }
    }
}

/// `values`' distinct values, sorted, and how many times each occurs.
fn counted(mut values: Vec<f64>) -> (Vec<f64>, Vec<f64>) {
    values.sort_by(f64::total_cmp);
    let (mut distinct, mut counts) = (Vec::new(), Vec::new());
    for x in values {
        match distinct.last() {
            Some(&last) if last == x => *counts.last_mut().expect("a count per value") += 1.0,
            _ => {
                distinct.push(x);
                counts.push(1.0);
            }
        }
    }
    (distinct, counts)
}

/// Each continuous column's distinct values among the server's sample of rows, sorted, with how
/// many rows hold each (None for a categorical column).
#[derive(Debug, Clone)]
pub struct ColumnValues {
    columns: Vec<Option<(Vec<f64>, Vec<f64>)>>,
}

impl ColumnValues {
    /// The values of `dataset`'s rows but those at `excluded` (the client's batch).
    pub fn of(dataset: &Dataset, excluded: &[usize]) -> ColumnValues {
        let excluded: HashSet<usize> = excluded.iter().copied().collect();
        let columns = dataset
            .features
            .iter()
            .enumerate()
            .map(|(f, feature)| {
                (!feature.is_categorical()).then(|| {
                    let v: Vec<f64> = (0..dataset.n())
                        .filter(|i| !excluded.contains(i))
                        .map(|i| dataset.rows[i][f].num())
                        .collect();
                    counted(v)
                })
            })
            .collect();
        ColumnValues { columns }
    }

    /// The same less one occurrence of each of `rows`' values (the shadow's own rows, which its
    /// prior must not hold).
    pub fn without(mut self, rows: &[Vec<Value>]) -> ColumnValues {
        for row in rows {
            for (column, value) in self.columns.iter_mut().zip(row) {
                if let (Some((values, counts)), Value::Num(x)) = (column.as_mut(), value) {
                    let i = values.partition_point(|u| u < x);
                    if values.get(i) == Some(x) {
                        counts[i] -= 1.0;
                        if counts[i] <= 0.0 {
                            values.remove(i);
                            counts.remove(i);
                        }
                    }
                }
            }
        }
        self
    }

    /// The value near `m` whose window of half-width `t` holds the most of the column's rows
    /// weighted by N(u; m, σ²); `m` itself where no value outweighs its own window.
    pub fn likeliest(&self, f: usize, m: f64, sigma: f64, t: f64) -> f64 {
        let Some((values, counts)) = self.columns.get(f).and_then(Option::as_ref) else {
            return m;
        };
        if !(sigma > 0.0 && sigma.is_finite() && m.is_finite() && t >= 0.0) {
            return m;
        }
        // Beyond 6σ a row weighs under 1.6e-8 of one at m: nothing a nearer heap would not outweigh.
        let reach = 6.0 * sigma + 2.0 * t;
        let (lo, hi) = (
            values.partition_point(|&u| u < m - reach),
            values.partition_point(|&u| u <= m + reach),
        );
        let (near, counts) = (&values[lo..hi], &counts[lo..hi]);
        if near.is_empty() {
            return m;
        }
        // Prefix sums of the weights over the sorted values, so a window's mass is a difference;
        // the windows of the values in order slide, so two pointers find each one's ends.
        let mut prefix = Vec::with_capacity(near.len() + 1);
        prefix.push(0.0);
        for (&u, &c) in near.iter().zip(counts) {
            let z = (u - m) / sigma;
            prefix.push(prefix.last().copied().unwrap_or(0.0) + c * (-0.5 * z * z).exp());
        }
        let slack = 1e-9 * (1.0 + m.abs());
        let window = |v: f64| {
            let a = near.partition_point(|&u| u < v - t - slack);
            let b = near.partition_point(|&u| u <= v + t + slack);
            prefix[b] - prefix[a]
        };
        let mut best = (window(m), m);
        let (mut a, mut b) = (0, 0);
        for &v in near {
            while near[a] < v - t - slack {
                a += 1;
            }
            while b < near.len() && near[b] <= v + t + slack {
                b += 1;
            }
            let w = prefix[b] - prefix[a];
            if w > best.0 * (1.0 + 1e-12) {
                best = (w, v);
            }
        }
        best.1
    }

    /// `rows`' continuous cells read with the prior at width `k` (in members' spreads, from
    /// `entropy`), in the rows where `open` holds (the ensemble's rows, not those the update
    /// holds); a cell without an entropy stays.
    pub fn read(
        &self,
        dataset: &Dataset,
        rules: &[Rule],
        rows: &mut [Vec<Value>],
        entropy: &[Vec<Option<f64>>],
        open: &[bool],
        k: f64,
    ) {
        for ((row, e), _) in rows.iter_mut().zip(entropy).zip(open).filter(|(_, o)| **o) {
            for (f, feature) in dataset.features.iter().enumerate() {
                let (Value::Num(m), Some(h)) = (row[f], e[f]) else {
                    continue;
                };
                if feature.is_categorical() || rules[f].follows.is_some() {
                    continue;
                }
                let sigma = k * continuous_spread(h) * dataset.std[feature.offset];
                row[f] = Value::Num(self.likeliest(f, m, sigma, rules[f].tolerance));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(values: &[f64]) -> ColumnValues {
        ColumnValues {
            columns: vec![Some(counted(values.to_vec()))],
        }
    }

    /// A wide spread near a heap of the table's values moves the cell onto the heap; a narrow
    /// one, or one far from any value, leaves it.
    #[test]
    fn a_cell_moves_to_the_tables_likeliest_value_only_as_far_as_the_members_spread_allows() {
        // Forty rows at 40 hours, a few spread from 20 to 60.
        let mut hours = vec![40.0; 40];
        hours.extend([20.0, 25.0, 30.0, 35.0, 45.0, 50.0, 55.0, 60.0]);
        let c = column(&hours);
        assert_eq!(c.likeliest(0, 34.0, 5.0, 2.0), 40.0);
        assert_eq!(c.likeliest(0, 34.0, 0.5, 2.0), 34.0);
        assert_eq!(c.likeliest(0, 500.0, 5.0, 2.0), 500.0);
        // Within its own window of the heap, a cell already scores as the heap would.
        assert_eq!(c.likeliest(0, 39.0, 5.0, 2.0), 39.0);
        // No spread, or none read: as it is.
        assert_eq!(c.likeliest(0, 34.0, 0.0, 2.0), 34.0);
        assert_eq!(c.likeliest(0, 34.0, f64::NAN, 2.0), 34.0);
    }

    #[test]
    fn a_cells_entropy_gives_back_the_members_spread() {
        let h = crate::assess::entropy::continuous(&[0.1, 0.5, 0.9]).unwrap();
        assert!((continuous_spread(h) - 0.4).abs() < 1e-12, "{}", continuous_spread(h));
    }

    /// Only the open rows' continuous cells move, each to a value the sample holds or not at all.
    #[test]
    fn only_the_open_rows_continuous_cells_move_and_only_onto_the_samples_values() {
        let data = crate::table::adult_sample();
        let rules = Rule::of(&data.features);
        let values = ColumnValues::of(&data, &[0, 1]);
        let mut rows = vec![data.rows[0].clone(), data.rows[1].clone()];
        // Every continuous cell a little off its row's value, with a wide spread.
        for row in &mut rows {
            for (f, feature) in data.features.iter().enumerate() {
                if !feature.is_categorical() {
                    row[f] = Value::Num(row[f].num() + 0.37 * data.std[feature.offset]);
                }
            }
        }
        let before = rows.clone();
        let entropy =
            vec![vec![Some(crate::assess::entropy::continuous(&[-1.0, 0.0, 1.0]).unwrap()); data.features.len()]; 2];
        values.read(&data, &rules, &mut rows, &entropy, &[true, false], 1.0);
        assert_eq!(rows[1], before[1]);
        let mut moved = 0;
        for (f, feature) in data.features.iter().enumerate() {
            match feature.is_categorical() {
                true => assert_eq!(rows[0][f], before[0][f]),
                false if rows[0][f] != before[0][f] => {
                    moved += 1;
                    let (column, _) = values.columns[f].as_ref().unwrap();
                    assert!(column.contains(&rows[0][f].num()), "{}: {:?}", feature.name, rows[0][f]);
                }
                false => {}
            }
        }
        assert!(moved > 0);
    }

    /// The shadow's own rows leave the sample its prior is read on.
    #[test]
    fn the_shadows_rows_leave_the_sample() {
        let c = column(&[1.0, 2.0, 2.0, 3.0]).without(&[vec![Value::Num(2.0)], vec![Value::Num(7.0)]]);
        assert_eq!(c.columns[0], Some((vec![1.0, 2.0, 3.0], vec![1.0, 1.0, 1.0])));
        let c = c.without(&[vec![Value::Num(2.0)]]);
        assert_eq!(c.columns[0], Some((vec![1.0, 3.0], vec![1.0, 1.0])));
    }
}

//! A square assignment of most total weight, kept optimal while one column at a time changes
//! (the table's guess swaps one row of its set per try, `assess::table_guess`). Solved whole by
//! the Hungarian method's shortest augmenting paths with row and column potentials; a changed
//! column frees its row, its potential is lowered until every reduced cost is non-negative again,
//! and one augmenting path from that row restores the optimum: O(n²) a change instead of the
//! O(n³) of solving again (`pathfinding`'s `kuhn_munkres`, which keeps no potentials, is the
//! definition the tests hold it to). At B = 128 the guess solved 96 assignments from scratch.

/// The assignment of rows to columns that maximises the weights' sum, with its potentials.
#[derive(Debug, Clone)]
pub struct Assignment {
    n: usize,
    /// Costs (the weights negated, minimised), row-major [n, n].
    cost: Vec<i64>,
    /// Potentials: rows' (1-based, 0 unused) and columns' (0 the path's start).
    u: Vec<i64>,
    v: Vec<i64>,
    /// The row (1-based; 0 none) each column (1-based) holds.
    row_of: Vec<usize>,
}

impl Assignment {
    /// The optimal assignment of `n` rows and columns weighted `weight(row, column)`.
    pub fn new(n: usize, weight: impl Fn(usize, usize) -> i64) -> Assignment {
        let mut a = Assignment {
            n,
            cost: (0..n * n).map(|k| -weight(k / n, k % n)).collect(),
            u: vec![0; n + 1],
            v: vec![0; n + 1],
            row_of: vec![0; n + 1],
        };
        for row in 1..=n {
            a.augment_from(row);
        }
        a
    }

    /// The assignment's total weight.
    pub fn value(&self) -> i64 {
        (1..=self.n)
            .map(|j| -self.cost[(self.row_of[j] - 1) * self.n + j - 1])
            .sum()
    }

    /// Column `column`'s weights replaced by `weight(row)`, the assignment optimal again; what
    /// `undo` needs to put it back (O(n), where a copy of the whole would be O(n²)).
    pub fn set_column(&mut self, column: usize, weight: impl Fn(usize) -> i64) -> Undo {
        let n = self.n;
        let undo = Undo {
            column,
            cost: (0..n).map(|row| self.cost[row * n + column]).collect(),
            u: self.u.clone(),
            v: self.v.clone(),
            row_of: self.row_of.clone(),
        };
        for row in 0..n {
            self.cost[row * n + column] = -weight(row);
        }
        let j = column + 1;
        let freed = std::mem::replace(&mut self.row_of[j], 0);
        // The column's potential as high as keeps every other row's reduced cost non-negative
        // (the freed row's is set by the path that starts from it).
        self.v[j] = (1..=n)
            .filter(|&i| i != freed)
            .map(|i| self.cost[(i - 1) * n + column] - self.u[i])
            .min()
            .unwrap_or(0);
        self.augment_from(freed);
        undo
    }

    /// The assignment as it was before the `set_column` that gave `undo`.
    pub fn undo(&mut self, undo: Undo) {
        let n = self.n;
        for (row, &c) in undo.cost.iter().enumerate() {
            self.cost[row * n + undo.column] = c;
        }
        (self.u, self.v, self.row_of) = (undo.u, undo.v, undo.row_of);
    }

    /// One shortest augmenting path from the unassigned `row` to a free column, the potentials
    /// kept feasible and tight on the assigned pairs.
    fn augment_from(&mut self, row: usize) {
        let n = self.n;
        let (mut minv, mut way, mut used) = (vec![i64::MAX; n + 1], vec![0usize; n + 1], vec![false; n + 1]);
        self.row_of[0] = row;
        let mut j0 = 0;
        loop {
            used[j0] = true;
            let i0 = self.row_of[j0];
            let (mut delta, mut j1) = (i64::MAX, 0);
            for j in 1..=n {
                if used[j] {
                    continue;
                }
                let reduced = self.cost[(i0 - 1) * n + j - 1] - self.u[i0] - self.v[j];
                if reduced < minv[j] {
                    (minv[j], way[j]) = (reduced, j0);
                }
                if minv[j] < delta {
                    (delta, j1) = (minv[j], j);
                }
            }
            for j in 0..=n {
                match used[j] {
                    true => {
                        self.u[self.row_of[j]] += delta;
                        self.v[j] -= delta;
                    }
                    false => minv[j] -= delta,
                }
            }
            j0 = j1;
            if self.row_of[j0] == 0 {
                break;
            }
        }
        while j0 != 0 {
            let j1 = way[j0];
            self.row_of[j0] = self.row_of[j1];
            j0 = j1;
        }
    }
}

/// A column's change, to be undone (`Assignment::undo`).
#[derive(Debug)]
pub struct Undo {
    column: usize,
    cost: Vec<i64>,
    u: Vec<i64>,
    v: Vec<i64>,
    row_of: Vec<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathfinding::{kuhn_munkres::kuhn_munkres, matrix::Matrix};
    use proptest::prelude::*;

    fn best(w: &[Vec<i64>]) -> i64 {
        let n = w.len();
        kuhn_munkres(&Matrix::from_fn(n, n, |(i, j)| w[i][j])).0
    }

    proptest! {
        /// Solved whole and after every column changed (some changes undone), its value is the
        /// optimum `kuhn_munkres` finds on the same weights (ties and negative weights included).
        #[test]
        fn each_change_keeps_the_optimum_of_a_solve_from_scratch(
            n in 1usize..24,
            seed in any::<u64>(),
            changes in proptest::collection::vec((any::<usize>(), any::<u64>()), 0..30),
            spread in prop_oneof![Just(3i64), Just(15), Just(1000)],
        ) {
            let draw = |s: u64, k: usize| {
                let h = s.wrapping_mul(6364136223846793005).wrapping_add((k as u64).wrapping_mul(1442695040888963407));
                (h >> 33) as i64 % spread - spread / 3
            };
            let mut w: Vec<Vec<i64>> = (0..n).map(|i| (0..n).map(|j| draw(seed, i * n + j)).collect()).collect();
            let mut a = Assignment::new(n, |i, j| w[i][j]);
            prop_assert_eq!(a.value(), best(&w));
            for (column, s) in changes {
                let column = column % n;
                let was = a.value();
                let old: Vec<i64> = w.iter().map(|row| row[column]).collect();
                for (i, row) in w.iter_mut().enumerate() {
                    row[column] = draw(s, i);
                }
                let undo = a.set_column(column, |i| w[i][column]);
                prop_assert_eq!(a.value(), best(&w));
                // Undone, it is the assignment it was, and a later change builds on it.
                if s % 2 == 0 {
                    a.undo(undo);
                    for (i, row) in w.iter_mut().enumerate() {
                        row[column] = old[i];
                    }
                    prop_assert_eq!(a.value(), was);
                }
            }
        }
    }
}

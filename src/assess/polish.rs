//! The rows no proof reached polished against the whole update, in float64. A FedSGD update is
//! the sum of its rows' gradients, B·G = Σᵢ g(xᵢ, yᵢ). On a trained network the rows the
//! network is sure of send gradients a thousand times smaller than its unsure rows', so the
//! ensemble's 1 − cos barely feels them and the second layer's certificate calls them consistent
//! with directions too near the rounding to place (Adult [32, 32], B = 16, trained 20 epochs: the
//! rows fitted the update to 1 − cos 2·10⁻⁸ with three of them wrong in 4–11 cells, where the
//! batch's own rows fit it to 4·10⁻¹⁴). Near such a fit the residual r = B·G − Σᵢ g(x̂ᵢ) is what
//! the wrong rows leave, and each row can be moved against it alone:
//!
//! - every such row's continuous cells together, by Levenberg–Marquardt on ‖r‖²;
//! - each row in turn replaced by the table's row (outside the batch, of its label) whose
//!   gradient, after a few Gauss–Newton steps on its continuous cells, leaves least of what the
//!   row is to explain (r + g(x̂ᵢ)), or by the row the first layer reads off that (one row's
//!   first-layer gradient is x δᵀ beside its bias gradient δ), where either leaves less;
//! - each row's categories, one feature at a time, the same way;
//! - rows that share every category with another row given the patterns of the first layer's
//!   span that no row has, where the span holds the batch (`twins`).
//!
//! Columns a category determines (`table::determined`) follow it. The rows proved, and those
//! the first layer's span places (exact along all but its free directions), stay. The moves are
//! kept only where the rows then explain the update to `SETTLED` and at least `GAIN` times better
//! than before: a fit merely improved from afar led away from the rows
//! (Adult B = 16, E = 20, seed 9, before the early answer: 1 − cos 0.56 → 3·10⁻⁵ and 95.5 →
//! 85.7 % of cells).
//!
//! Farther than `NEAR`, where some rows are held, the rows are first only replaced whole, in
//! rounds, the replacement that leaves least first and each only where it still leaves less once
//! those before it are in, and decoded, before any cell is moved. A wrong row the network is sure
//! of leaves almost nothing of its own in the residual; what is left there is the batch's loud
//! row it stands in for, which a fit of the continuous cells spreads over every free row, a right
//! row replaced first takes as its own, and the stand-in's replacement reads back (Adult B = 16,
//! E = 20, seed 1: six rows proved, one consistent row wrong in 9 of 14 cells whose removal
//! leaves the misfit as it is; 1 − cos 3·10⁻² → 1.3·10⁻¹¹ and 93.3 → 99.6 % of cells, where the
//! joint fit from there ended at 3·10⁻⁷ with five rows wrong). Where no row is held the residual
//! is every row's, and no row replaced against it came near (Adult [32, 32], B = 32, trained
//! 0–20 epochs: 1 − cos 10⁻¹ → 10⁻²).
//!
//! A consistent row moved beyond its cells' tolerance stays consistent, saying so
//! (`Unproved::Polished`); a row of the ensemble's becomes consistent only where the fit pins it
//! (`assess::seen_rows`), and is otherwise left to the fallback. The work is bounded: only the
//! moving rows' gradients are held, the table's rows are screened by a sketch made once, and the
//! joint Jacobian gives way to row-by-row fits past `JACOBIAN_BYTES`. Measured in
//! docs/results/rounds.md.
use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::assess::reconstruct::Reconstruction;
use crate::assess::update_choice::move_entropy;
use crate::attack::baselines::rows_outside;
use crate::attack::inversion::setup::Setup;
use crate::attack::priors::activation_span::Unproved;
use crate::client::exact;
use crate::report::Provenance;
use crate::seed::seed_for;
use crate::table::{Value, encode_rows};

/// The largest 1 − cos of the whole update at which the rows are polished as they are: near
/// enough that what they leave is the wrong rows' (Adult B = 16 trained: 2·10⁻⁴ polished to
/// 6·10⁻¹⁰, the cells 98.2 → 98.7 %; from 3·10⁻² the joint fit led away). Farther, rows are
/// replaced whole first, as the module says.
const NEAR: f64 = 1e-3;
/// The largest 1 − cos of the whole update at which polished rows are kept, and how many times
/// better than the rows before they must explain it. The batch's own rows fit it to 1–5·10⁻¹⁴;
/// polished rows kept ended at 2·10⁻¹¹–3·10⁻⁹ (Adult and HI, [100, 100] and [32, 32], trained),
/// where rows polished to 9·10⁻⁸ (18 times better) were wrong in more cells than before (HI
/// [100, 100], trained 5 epochs, seeds 1 and 3: 90.6 → 89.1 %, 92.2 → 90.4 %).
const SETTLED: f64 = 1e-8;
const GAIN: f64 = 10.0;
/// Rounds of moves at most; they end where a round left more than four fifths of what it started from.
const ROUNDS: usize = 6;
const ROUND_GAIN: f64 = 1.25;
/// Levenberg–Marquardt iterations per joint fit of the continuous cells.
const JOINT_ITERATIONS: usize = 12;
/// Gauss–Newton steps on a candidate row's continuous cells.
const ROW_ITERATIONS: usize = 4;
/// Table rows screened per slot (evenly spaced among its label's), and how many of the best are
/// moved by Gauss–Newton before they are judged.
const POOL: usize = 1500;
const SHORTLIST: usize = 24;
/// Changes of one category per row moved by Gauss–Newton before they are judged.
const CATEGORY_SHORTLIST: usize = 8;
/// Step of the central differences, in standard deviations.
const STEP: f64 = 1e-4;
/// Buckets of the sketch the table's rows are screened by.
const SKETCH: usize = 512;
/// The most bytes the moving rows' gradients may take (else nothing is polished), and the joint
/// fit's Jacobian (float32; else each row's continuous cells are fitted in turn).
const MOST_BYTES: usize = 16 << 20;
const JACOBIAN_BYTES: usize = 16 << 20;

/// A row's replacement (encoded), its gradient and what it leaves of what the row is to explain.
type Replacement = (Vec<f64>, Vec<f64>, f64);

/// A count sketch of the update's coordinates: each one added, with a random sign, to one of
/// `SKETCH` buckets, so that squared distances between sketches estimate those between the
/// vectors (to a few per cent at this size) for a screening of the table's rows whose gradients
/// are computed once per polish, not once per slot and round.
struct Sketch {
    bucket: Vec<usize>,
    sign: Vec<f64>,
}

impl Sketch {
    fn new(len: usize, seed: u64) -> Sketch {
        let mut rng = StdRng::seed_from_u64(seed);
        Sketch {
            bucket: (0..len).map(|_| rng.random_range(0..SKETCH)).collect(),
            sign: (0..len)
                .map(|_| if rng.random::<bool>() { 1.0 } else { -1.0 })
                .collect(),
        }
    }

    fn of(&self, v: &[f64]) -> Vec<f32> {
        let mut out = vec![0.0; SKETCH];
        for ((&b, &s), &v) in self.bucket.iter().zip(&self.sign).zip(v) {
            out[b] += s * v;
        }
        out.into_iter().map(|v| v as f32).collect()
    }
}

/// The table's rows a slot of each label may take (`POOL` at most, evenly spaced among the rows
/// outside the batch), encoded, with their gradients' sketches.
struct Pool {
    sketch: Sketch,
    rows: Vec<Vec<(Vec<f64>, Vec<f32>)>>,
    /// The first layer's span's rows whose patterns twins may take (`twins`).
    span: Vec<Vec<f64>>,
}

/// The rows (encoded), the gradients of those that move (empty for the others: a wide network's
/// gradients, all held at once, outweigh the attack's working set) and what they leave of the
/// update.
#[derive(Clone)]
struct Sum {
    x: Vec<Vec<f64>>,
    g: Vec<Vec<f64>>,
    r: Vec<f64>,
}

impl Sum {
    /// Row `i` set to `x` with gradient `g`.
    fn replace(&mut self, i: usize, x: Vec<f64>, g: Vec<f64>) {
        self.r
            .iter_mut()
            .zip(&g)
            .zip(&self.g[i])
            .for_each(|((r, new), old)| *r += old - new);
        self.x[i] = x;
        self.g[i] = g;
    }

    /// What row `i` is to explain: the residual with its own gradient put back.
    fn own(&self, i: usize) -> Vec<f64> {
        self.r.iter().zip(&self.g[i]).map(|(r, g)| r + g).collect()
    }
}

/// The squared Euclidean norm (`unseen_rows` reads it too).
pub(super) fn norm2(v: &[f64]) -> f64 {
    v.iter().map(|v| v * v).sum()
}

/// The squared distance between two sketches.
fn apart(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(&a, &b)| (a as f64 - b as f64).powi(2)).sum()
}

fn misfit(own: &[f64], g: &[f64]) -> f64 {
    own.iter().zip(g).map(|(o, g)| (o - g) * (o - g)).sum()
}

/// Whether row `i` of `recon` may be polished: no proof reached it, nor does the first layer's
/// span place it.
pub(super) fn polishable(recon: &Reconstruction, i: usize) -> bool {
    recon.provenance[i] != Provenance::Proved
        && !matches!(
            recon.unproved[i],
            Some(Unproved::SpanRowLeft { .. } | Unproved::SpanFitted { .. } | Unproved::SpanHoldsMore { .. })
        )
}

impl Setup<'_> {
    /// `recon` with its rows no proof reached polished, as the module says; as it was where the
    /// update is not the sum of the rows' gradients, the rows are far from explaining it with
    /// none held, or the polished rows do not explain it to its rounding.
    pub(super) fn polish_left(&self, mut recon: Reconstruction) -> Reconstruction {
        let free: Vec<usize> = (0..recon.rows.len()).filter(|&i| polishable(&recon, i)).collect();
        if !self.may_invert_left() || free.is_empty() {
            return recon;
        }
        if free.len() * self.scenario.params.len() * 8 > MOST_BYTES {
            return recon;
        }
        let label_of = self.labels_paired(&recon);
        let before = self.fits_without(&recon.rows, &[], &label_of).0;
        let far = !(before <= NEAR);
        if far && free.len() == recon.rows.len() {
            return recon;
        }
        let pool = self.table_pool();
        // Replaced whole first from afar, the rows decoded (snapped to the table's values) between.
        let start = match far {
            true => self.polished(&recon.rows, &free, &label_of, &pool, true),
            false => recon.rows.clone(),
        };
        let rows = self.polished(&start, &free, &label_of, &pool, false);
        let fit = self.fits_without(&rows, &[], &label_of).0;
        if !(fit <= SETTLED && fit * GAIN <= before) {
            return recon;
        }
        // Rows moved within their cells' tolerance (the fit nudging a right row) keep their reason.
        let moved: Vec<usize> = free
            .iter()
            .copied()
            .filter(|&i| !self.dataset.same_row(&rows[i], &recon.rows[i]))
            .collect();
        if let Some(entropy) = recon.entropy.as_mut() {
            // The members' confidence stays with every cell of a row not moved.
            let changed: Vec<Vec<Value>> = (0..rows.len())
                .map(|i| match moved.contains(&i) {
                    true => rows[i].clone(),
                    false => recon.rows[i].clone(),
                })
                .collect();
            let origin: Vec<usize> = (0..rows.len()).collect();
            move_entropy(self.dataset, entropy, &origin, &recon.rows, &changed);
        }
        self.recheck_moved_near(&mut recon, &rows, Unproved::Polished { fit });
        recon.rows = rows;
        // A consistent row stays so, moved to fit better: held to the update's seeing it, moved
        // rows right in every cell fell to the table's guess (Adult B = 16, E = 20, seed 9: 98.7
        // → 97.3 % of cells); the ensemble's rows are held where the update sees them.
        let (was_consistent, open): (Vec<usize>, Vec<usize>) = moved
            .iter()
            .partition(|&&i| recon.provenance[i] == Provenance::Consistent);
        for &i in &was_consistent {
            recon.unproved[i] = Some(Unproved::Polished { fit });
        }
        // So are the ensemble's rows the polish left where they were: left to the fallback, a right
        // one fell to the table's guess (Adult B = 16, E = 20, seed 9: 95.1 → 98.7 % held).
        let kept =
            (free.iter().copied()).filter(|&i| !moved.contains(&i) && recon.provenance[i] == Provenance::Ensemble);
        let open: Vec<usize> = open.into_iter().chain(kept).collect();
        self.hold_seen(&mut recon, &open, &label_of, |fit| Unproved::Polished { fit });
        for &i in open.iter().filter(|i| !moved.contains(i)) {
            if let Some(Unproved::Polished { fit }) = recon.unproved[i] {
                recon.unproved[i] = Some(Unproved::PolishKept { fit });
            }
        }
        recon.row_labels = self.labels_of_rows(&recon.rows);
        recon
    }

    /// `rows` with the rows of `free` moved as the module says (`replace_only`: only replaced
    /// whole), each decoded; `pool` the table's rows (`table_pool`).
    fn polished(
        &self,
        rows: &[Vec<Value>],
        free: &[usize],
        label_of: &[usize],
        pool: &Pool,
        replace_only: bool,
    ) -> Vec<Vec<Value>> {
        let x: Vec<Vec<f64>> = rows
            .iter()
            .enumerate()
            .map(|(i, row)| {
                let x: Vec<f64> = encode_rows(self.dataset, std::slice::from_ref(row))
                    .iter()
                    .map(|&v| v as f64)
                    .collect();
                match free.contains(&i) {
                    true => self.with_determined(x),
                    false => x,
                }
            })
            .collect();
        let mut r = self.update_times(rows.len() as f64);
        let mut g = vec![Vec::new(); rows.len()];
        for (i, (x, &y)) in x.iter().zip(label_of).enumerate() {
            let gi = self.gradient_at(x, y);
            r.iter_mut().zip(&gi).for_each(|(r, g)| *r -= g);
            if free.contains(&i) {
                g[i] = gi;
            }
        }
        let mut sum = Sum { x, g, r };
        for _ in 0..ROUNDS {
            let start = norm2(&sum.r);
            let changed = match replace_only {
                true => self.replace_best_first(&mut sum, free, label_of, pool),
                false => self.polish_round(&mut sum, free, label_of, pool),
            };
            if changed == 0 || norm2(&sum.r) * ROUND_GAIN > start {
                break;
            }
        }
        let mut out = rows.to_vec();
        for &i in free {
            let encoded: Vec<f32> = sum.x[i].iter().map(|&v| v as f32).collect();
            out[i] = self.dataset.decode(&encoded);
        }
        out
    }

    /// One round of moves on the rows of `free`: twins given the span's open patterns (`twins`),
    /// their continuous cells fitted, each row replaced where that leaves less, the cells fitted
    /// again, then each row's categories. How many rows were replaced or changed category.
    fn polish_round(&self, sum: &mut Sum, free: &[usize], label_of: &[usize], pool: &Pool) -> usize {
        let untwinned = self.untwin(sum, free, label_of, pool);
        self.fit_continuous(sum, free, label_of);
        let replaced = self.replace_rows(sum, free, label_of, pool);
        self.fit_continuous(sum, free, label_of);
        untwinned + replaced + self.recategorise(sum, free, label_of)
    }

    fn gradient_at(&self, x: &[f64], label: usize) -> Vec<f64> {
        exact::row_gradient(
            &self.scenario.params,
            self.config.model(),
            x,
            label,
            self.dataset.classes.len(),
        )
    }

    /// The encoded continuous columns the fit moves: those no category determines.
    fn moved_columns(&self) -> Vec<usize> {
        let fixed: Vec<usize> = self
            .determined
            .iter()
            .map(|d| self.dataset.features[d.column].offset)
            .collect();
        self.layout
            .continuous()
            .into_iter()
            .filter(|j| !fixed.contains(j))
            .collect()
    }

    /// The category of categorical feature `f` in encoded row `x` (its largest entry in raw units).
    fn category_of(&self, x: &[f64], f: usize) -> usize {
        let feature = &self.dataset.features[f];
        let raw = |k: usize| {
            x[feature.offset + k] * self.dataset.std[feature.offset + k] + self.dataset.mean[feature.offset + k]
        };
        (0..feature.width())
            .max_by(|&a, &b| raw(a).total_cmp(&raw(b)))
            .unwrap_or(0)
    }

    /// `x` with categorical feature `f` set to category `c`, and the columns it determines.
    fn with_category(&self, x: &[f64], f: usize, c: usize) -> Vec<f64> {
        let feature = &self.dataset.features[f];
        let mut x = x.to_vec();
        for k in 0..feature.width() {
            let col = feature.offset + k;
            x[col] = (f64::from(u8::from(k == c)) - self.dataset.mean[col]) / self.dataset.std[col];
        }
        self.with_determined(x)
    }

    /// `x` with every column a category determines set from that category.
    fn with_determined(&self, mut x: Vec<f64>) -> Vec<f64> {
        for d in &self.determined {
            if let Some(v) = d.values[self.category_of(&x, d.by)] {
                let col = self.dataset.features[d.column].offset;
                x[col] = (v - self.dataset.mean[col]) / self.dataset.std[col];
            }
        }
        x
    }

    /// Levenberg–Marquardt on the continuous cells of the rows of `free`, jointly, within the
    /// columns' ranges; row by row (`row_newton`) where the joint Jacobian would exceed
    /// `JACOBIAN_BYTES`.
    fn fit_continuous(&self, sum: &mut Sum, free: &[usize], label_of: &[usize]) {
        let columns = self.moved_columns();
        let (n, m) = (free.len() * columns.len(), sum.r.len());
        if n == 0 {
            return;
        }
        if m * n * 4 > JACOBIAN_BYTES {
            for &i in free {
                let (x, g, _) = self.row_newton(&sum.own(i), sum.x[i].clone(), label_of[i], &columns);
                sum.replace(i, x, g);
            }
            return;
        }
        let mut lambda = 1e-3;
        for _ in 0..JOINT_ITERATIONS {
            // The Jacobian's columns in float32, their products in float64.
            let mut jacobian: Vec<Vec<f32>> = Vec::with_capacity(n);
            for &i in free {
                for &j in &columns {
                    let (mut up, mut down) = (sum.x[i].clone(), sum.x[i].clone());
                    up[j] += STEP;
                    down[j] -= STEP;
                    let (gu, gd) = (self.gradient_at(&up, label_of[i]), self.gradient_at(&down, label_of[i]));
                    jacobian.push(
                        gu.iter()
                            .zip(&gd)
                            .map(|(u, d)| ((u - d) / (2.0 * STEP)) as f32)
                            .collect(),
                    );
                }
            }
            let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(&a, &b)| a as f64 * b as f64).sum::<f64>();
            let jtj = DMatrix::from_fn(n, n, |a, b| dot(&jacobian[a], &jacobian[b]));
            let jtr = DVector::from_fn(n, |a, _| {
                jacobian[a].iter().zip(&sum.r).map(|(&j, &r)| j as f64 * r).sum()
            });
            drop(jacobian);
            let now = norm2(&sum.r);
            let mut improved = false;
            for _ in 0..8 {
                let mut a = jtj.clone();
                (0..n).for_each(|d| a[(d, d)] += lambda * jtj[(d, d)].max(f64::MIN_POSITIVE));
                let Some(delta) = a.cholesky().map(|c| c.solve(&jtr)) else {
                    lambda *= 4.0;
                    continue;
                };
                let moved = self.moved_by(sum, free, label_of, &columns, delta.as_slice());
                let mut r = sum.r.clone();
                for (&i, (_, g)) in free.iter().zip(&moved) {
                    r.iter_mut()
                        .zip(g)
                        .zip(&sum.g[i])
                        .for_each(|((r, new), old)| *r += old - new);
                }
                if norm2(&r) < now {
                    for (&i, (x, g)) in free.iter().zip(moved) {
                        sum.replace(i, x, g);
                    }
                    lambda = (lambda / 3.0).max(1e-12);
                    improved = true;
                    break;
                }
                lambda *= 4.0;
            }
            if !improved || norm2(&sum.r) > 0.999 * now {
                break;
            }
        }
    }

    /// The rows of `free` with their continuous cells moved by `delta` (row by row, column by
    /// column) within the columns' ranges, and their gradients.
    fn moved_by(
        &self,
        sum: &Sum,
        free: &[usize],
        label_of: &[usize],
        columns: &[usize],
        delta: &[f64],
    ) -> Vec<(Vec<f64>, Vec<f64>)> {
        let (lo, hi) = (&self.layout.lo, &self.layout.hi);
        free.iter()
            .enumerate()
            .map(|(a, &i)| {
                let mut x = sum.x[i].clone();
                for (b, &j) in columns.iter().enumerate() {
                    x[j] = (x[j] + delta[a * columns.len() + b]).clamp(lo[j], hi[j]);
                }
                let g = self.gradient_at(&x, label_of[i]);
                (x, g)
            })
            .collect()
    }

    /// Each row of `free` replaced, where that leaves less, by its best replacement
    /// (`replacement`). How many were replaced.
    fn replace_rows(&self, sum: &mut Sum, free: &[usize], label_of: &[usize], pool: &Pool) -> usize {
        let columns = self.moved_columns();
        let mut replaced = 0;
        for &i in free {
            if let Some((x, g, _)) = self.replacement(sum, i, label_of[i], pool, &columns) {
                sum.replace(i, x, g);
                replaced += 1;
            }
        }
        replaced
    }

    /// Each row of `free` replaced by its best replacement (`replacement`), the one that leaves
    /// least first, each only where it still leaves less once those before it are in. How many
    /// were replaced. From afar, rows replaced in turn go wrong: a right row met first takes the
    /// stand-in's residual as its own (the sample batch, its loud row stood in for by a quiet
    /// one: 1 − cos 0.11 → 3·10⁻⁴ in turn, polished no nearer; best first, every row right).
    fn replace_best_first(&self, sum: &mut Sum, free: &[usize], label_of: &[usize], pool: &Pool) -> usize {
        let columns = self.moved_columns();
        let mut found: Vec<(usize, Replacement)> = free
            .iter()
            .filter_map(|&i| self.replacement(sum, i, label_of[i], pool, &columns).map(|r| (i, r)))
            .collect();
        found.sort_by(|a, b| a.1.2.total_cmp(&b.1.2));
        let mut replaced = 0;
        for (i, (x, g, _)) in found {
            let own = sum.own(i);
            if misfit(&own, &g) < misfit(&own, &sum.g[i]) {
                sum.replace(i, x, g);
                replaced += 1;
            }
        }
        replaced
    }

    /// Row `i`'s best replacement of label `y`, where it leaves less than the row: the best of
    /// the table's rows outside the batch of its label (screened by their sketches) and the row
    /// the first layer reads off what it is to explain, each after `ROW_ITERATIONS` Gauss–Newton
    /// steps; with its gradient and what it leaves.
    fn replacement(&self, sum: &Sum, i: usize, y: usize, pool: &Pool, columns: &[usize]) -> Option<Replacement> {
        let own = sum.own(i);
        let target = pool.sketch.of(&own);
        let mut screened: Vec<(f64, &Vec<f64>)> = pool.rows[y]
            .iter()
            .map(|(x, sketch)| (apart(&target, sketch), x))
            .collect();
        screened.sort_by(|a, b| a.0.total_cmp(&b.0));
        screened.truncate(SHORTLIST);
        let candidates = self
            .one_row_read(&own)
            .into_iter()
            .chain(screened.into_iter().map(|(_, x)| x.clone()));
        self.best_of(&own, misfit(&own, &sum.g[i]), candidates, y, columns)
    }

    /// The table's rows (indices) outside the batch: those a server holding the table may try
    /// (`unseen_rows` and `span_placed` read them too).
    pub(super) fn rows_outside_batch(&self) -> Vec<usize> {
        let batch = self.scenario.truth.as_ref().map_or(&[][..], |t| &t.indices[..]);
        rows_outside(self.dataset, batch)
    }

    /// The table's rows outside the batch, `POOL` of each label at most, with their gradients'
    /// sketches.
    fn table_pool(&self) -> Pool {
        let sketch = Sketch::new(self.scenario.params.len(), seed_for(self.config.seed, 17));
        let outside = self.rows_outside_batch();
        let rows = (0..self.dataset.classes.len())
            .map(|y| {
                let of_label: Vec<usize> = outside
                    .iter()
                    .copied()
                    .filter(|&k| self.dataset.labels[k] == y)
                    .collect();
                of_label
                    .iter()
                    .step_by((of_label.len() / POOL).max(1))
                    .map(|&k| {
                        let x = self.with_determined(self.dataset.encode(&self.dataset.rows[k]));
                        let sketched = sketch.of(&self.gradient_at(&x, y));
                        (x, sketched)
                    })
                    .collect()
            })
            .collect();
        Pool {
            sketch,
            rows,
            span: self.span_patterns(),
        }
    }

    /// Each row of `free`, where that leaves less: the one change of a category that leaves least
    /// (of the `CATEGORY_SHORTLIST` that leave least as they are, each with its continuous cells
    /// then moved by Gauss–Newton). How many rows changed.
    fn recategorise(&self, sum: &mut Sum, free: &[usize], label_of: &[usize]) -> usize {
        let columns = self.moved_columns();
        let mut changed = 0;
        for &i in free {
            let (y, own) = (label_of[i], sum.own(i));
            let mut screened: Vec<(f64, Vec<f64>)> = Vec::new();
            for (f, feature) in self
                .dataset
                .features
                .iter()
                .enumerate()
                .filter(|(_, f)| f.is_categorical())
            {
                let current = self.category_of(&sum.x[i], f);
                for c in (0..feature.width()).filter(|&c| c != current) {
                    let x = self.with_category(&sum.x[i], f, c);
                    screened.push((misfit(&own, &self.gradient_at(&x, y)), x));
                }
            }
            screened.sort_by(|a, b| a.0.total_cmp(&b.0));
            screened.truncate(CATEGORY_SHORTLIST);
            let candidates = screened.into_iter().map(|(_, x)| x);
            if let Some((x, g, _)) = self.best_of(&own, misfit(&own, &sum.g[i]), candidates, y, &columns) {
                sum.replace(i, x, g);
                changed += 1;
            }
        }
        changed
    }

    /// The best of `candidates` for a row that is to explain `own` (each after `ROW_ITERATIONS`
    /// Gauss–Newton steps), with its gradient, where it leaves less than `now`.
    fn best_of(
        &self,
        own: &[f64],
        now: f64,
        candidates: impl Iterator<Item = Vec<f64>>,
        label: usize,
        columns: &[usize],
    ) -> Option<Replacement> {
        let mut best = (now, None);
        for x in candidates {
            let (x, g, left) = self.row_newton(own, x, label, columns);
            if left < best.0 {
                best = (left, Some((x, g)));
            }
        }
        best.1.map(|(x, g)| (x, g, best.0))
    }

    /// The valid row nearest what the first layer of `g` reads as one row's input: one row's
    /// first-layer gradient is x δᵀ (laid out input by input) beside its bias gradient δ, so
    /// x = W δ / ‖δ‖². With the columns its categories determine.
    fn one_row_read(&self, g: &[f64]) -> Option<Vec<f64>> {
        let params = &self.scenario.params;
        let (d, h) = (params.sizes[0], params.sizes[1]);
        let bias_at: usize = params.weights.iter().map(Vec::len).sum();
        let delta = &g[bias_at..bias_at + h];
        let dd = norm2(delta);
        if !(dd > 0.0) {
            return None;
        }
        let x: Vec<f32> = (0..d)
            .map(|i| (g[i * h..(i + 1) * h].iter().zip(delta).map(|(w, b)| w * b).sum::<f64>() / dd) as f32)
            .collect();
        let row = self.dataset.decode(&x);
        Some(self.with_determined(self.dataset.encode(&row)))
    }

    /// `ROW_ITERATIONS` Gauss–Newton steps (while they leave less) on one row's continuous
    /// cells `columns` towards `own`, within the columns' ranges: the row, its gradient and what
    /// it leaves of `own`.
    fn row_newton(&self, own: &[f64], mut x: Vec<f64>, label: usize, columns: &[usize]) -> (Vec<f64>, Vec<f64>, f64) {
        let (lo, hi) = (&self.layout.lo, &self.layout.hi);
        let (n, m) = (columns.len(), own.len());
        let mut g = self.gradient_at(&x, label);
        let mut now = misfit(own, &g);
        for _ in 0..ROW_ITERATIONS {
            let residual: Vec<f64> = own.iter().zip(&g).map(|(o, g)| o - g).collect();
            let mut jacobian = DMatrix::<f64>::zeros(m, n);
            for (b, &j) in columns.iter().enumerate() {
                let mut up = x.clone();
                up[j] += STEP;
                let gu = self.gradient_at(&up, label);
                for k in 0..m {
                    jacobian[(k, b)] = (gu[k] - g[k]) / STEP;
                }
            }
            let jtj = jacobian.tr_mul(&jacobian);
            let jtr = jacobian.tr_mul(&DVector::from_column_slice(&residual));
            let mut a = jtj.clone();
            (0..n).for_each(|d| a[(d, d)] += 1e-6 * jtj[(d, d)].max(f64::MIN_POSITIVE));
            let Some(delta) = a.cholesky().map(|c| c.solve(&jtr)) else {
                break;
            };
            let mut trial = x.clone();
            for (b, &j) in columns.iter().enumerate() {
                trial[j] = (trial[j] + delta[b]).clamp(lo[j], hi[j]);
            }
            let gt = self.gradient_at(&trial, label);
            let left = misfit(own, &gt);
            if !(left < now) {
                break;
            }
            (x, g, now) = (trial, gt, left);
        }
        (x, g, now)
    }
}

mod twins;

#[cfg(test)]
mod tests;

//! The whole batch, exactly, from the first layer's ReLU pattern. In FedSGD the first layer's
//! weight gradient is G = (1/B) Σᵢ xᵢ δᵢᵀ ([d, h]) with δᵢ = ∂L/∂zᵢ the gradient at row i's first
//! pre-activations, and δᵢⱼ = 0 at every unit j the row leaves inactive (zᵢⱼ < 0): about half of
//! them. Where G has rank B, every δᵢ lies in G's row space, δᵢ = R uᵢ (R [h, B] orthonormal), and
//! the rows are X = (G R U⁻ᵀ)ᵀ up to a scale per row, which the bias gradient's hyperplane
//! (xᵢᵀv = 1, `subspace::hyperplane`) fixes. So the batch follows from the B vectors uᵢ.
//!
//! A candidate row (a member's reconstruction, nearly right) names its inactive units; if they
//! are row i's, the rows of R at its B + 4 most inactive units have a one-dimensional null space,
//! and it is uᵢ: 36 generic equations in 32 unknowns have no solution, so a null space is a
//! certificate. Where two rows share those units the null space is two-dimensional, and more
//! units are taken. δ = R u must also be nonzero where the candidate clearly activates a unit,
//! and a u in the span of two found ones is refused: two rows with the same second-layer pattern
//! have δ's proportional where both are active, so a combination of their u's can pass the
//! null-space test (measured on Adult). With K of the B vectors found, the rows not yet found lie
//! in the span of G R w for w ⊥ {uₖ}, of dimension B − K: candidates projected there find the rest.
//!
//! A set of B vectors gives B rows; a row is kept only when it is a row the table can hold (one
//! hot per categorical block, continuous values in range and at their column's precision) and its
//! own ReLU pattern is its δ's zero pattern. A wrong u in the set spoils only the rows it mixes
//! (U' = U T with T mixing two columns), and those fail the test: their continuous values are
//! combinations of two rows'. Their u's are dropped and searched for again.
//!
//! Where candidates are far off (a table of 40 continuous columns: 0.5–1 std a cell) their B + 4
//! most inactive units are rarely all their row's: random subsets of those units, and where the
//! rows are few (what proved rows leave of the update) of all units, find the rest (`subsets`).
use nalgebra::{DMatrix, DVector};

use pathfinding::{kuhn_munkres::kuhn_munkres_min, matrix::Matrix};

use crate::attack::inversion::relax::Layout;
use crate::attack::priors::spectrum::{Precision, Rank, Spectrum};
use crate::table::{Dataset, FeatureKind};
use memo::Memo;

/// Extra equations over the B unknowns a certificate asks for at first, and per widening.
const EXTRA_EQUATIONS: usize = 4;
/// The null space's singular value against the largest: float error is ~1e-8, a wrong pattern
/// ~1e-2; no less than `NULL_MARGIN` times how far the update's rounding can turn δ's space
/// (`Spectrum::angle`).
const NULL_RATIO: f64 = 1e-5;
const NULL_MARGIN: f64 = 4.0;
/// `Spectrum::angle` over the turn measured on the first layer's batches.
const REALIZED: f64 = 24.0;
/// The next singular value must stand clear, so that the null space is one-dimensional.
const SECOND_RATIO: f64 = 1e-3;
/// A unit whose leverage on a null space's other B − 1 directions is within this of 1 is
/// needed for it (`ActivitySolver::null_at`).
const NEEDED: f64 = 1e-6;
/// A certificate refuses δ's entries below this share of its largest where the candidate is active.
const CERTIFY_ZERO: f64 = 1e-4;
/// In a recovered row's test, δ's entries below this share are zero: an inactive unit's float error
/// reaches 1.2e-6 of the largest on Adult, an active unit's smallest true entry 5e-5.
const ROW_ZERO: f64 = 1e-5;
/// Pre-activations within this of zero may go either way.
const BOUNDARY: f64 = 1e-4;
/// A u within this distance of the span of two found ones is their combination.
const COMBINATION: f64 = 1e-3;
/// Candidates' projection rounds onto the span of the rows not yet found.
const ROUNDS: usize = 5;
/// Recoveries, each dropping the u's of the rows that failed and searching again.
const RECOVERIES: usize = 3;
/// How far (relative) a recovered categorical entry may sit from its hot or cold value.
const VALID: f64 = 1e-3;

/// How strictly a certificate reads the candidate's active units: δ must be nonzero where the
/// candidate's pre-activation exceeds `margin`, with at most `misses` exceptions. Tried in order.
const LEVELS: [(f64, usize); 4] = [(0.02, 0), (0.1, 0), (0.05, 1), (0.2, 0)];

/// The first layer's update and weights as the solver needs them.
pub struct ActivitySolver<'a> {
    layout: &'a Layout,
    /// Per encoded column, the step of its values (10^-decimals) for continuous columns.
    step: Vec<Option<f64>>,
    d: usize,
    h: usize,
    b: usize,
    /// W1 [d, h] as `Params` lays it out (x W + b), and b1 [h].
    w1: DMatrix<f64>,
    b1: DVector<f64>,
    /// G R [d, B], and R [h, B].
    gr: DMatrix<f64>,
    r: DMatrix<f64>,
    /// The hyperplane v with vᵀxᵢ = 1.
    v: DVector<f64>,
    /// What a null space and a zero of δ are read to: the update's precision (`NULL_RATIO`,
    /// `ROW_ZERO`, `CERTIFY_ZERO`, each no finer than the span's angle allows).
    null: f64,
    row_zero: f64,
    certify_zero: f64,
    /// What `null_at` read, by its units (`memo`).
    nulls: Memo<Null>,
}

/// What the solver recovered: the rows it proved ([d], encoded), of the batch's `rows`.
#[derive(Debug, Clone, PartialEq)]
pub struct Solved {
    pub rows: Vec<Vec<f64>>,
    pub batch: usize,
}

/// What R's rows at some units say of their null space (`ActivitySolver::null_at`).
#[derive(Clone)]
enum Null {
    /// None within the update's precision: the units are no one row's inactive ones.
    Empty,
    /// Two or more directions: rows share the units.
    Shared,
    /// One, u; and, where asked, whether some unit is needed for it (`NEEDED`).
    One(DVector<f64>, bool),
}

impl<'a> ActivitySolver<'a> {
    /// None where G's rank is not the row count B (then δ's rows are dependent and U is singular)
    /// or B + 4 exceeds the first layer's width. `step`: per encoded column, the spacing of a
    /// continuous column's values in raw units (None for categorical columns).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        update: &[f32],
        w1: &[f32],
        b1: &[f32],
        hyperplane: &[f64],
        (d, h, rows): (usize, usize, usize),
        layout: &'a Layout,
        step: Vec<Option<f64>>,
    ) -> Option<ActivitySolver<'a>> {
        if rows + EXTRA_EQUATIONS > h || rows == 0 || rows > d {
            return None;
        }
        let g = DMatrix::<f64>::from_row_iterator(d, h, update.iter().map(|&v| v as f64));
        // G's rank must be the batch's, every direction clear of the update's rounding.
        let spectrum = Spectrum::of(g.clone(), Precision::of(update.iter().copied()), rows, true);
        if spectrum.rank() != Rank::Certain(rows) {
            return None;
        }
        // The realized turn of δ's space stays far inside the bound (`Spectrum::drift`'s
        // measurements: within 1/24 of it on the first layer).
        let angle = spectrum.angle(rows) / REALIZED;
        let null = NULL_RATIO.max(NULL_MARGIN * angle);
        let r = spectrum.right_basis(rows).expect("asked for V");
        Some(ActivitySolver {
            layout,
            step,
            d,
            h,
            b: rows,
            w1: DMatrix::from_row_iterator(d, h, w1.iter().map(|&v| v as f64)),
            b1: DVector::from_iterator(h, b1.iter().map(|&v| v as f64)),
            gr: &g * &r,
            r,
            v: DVector::from_column_slice(hyperplane),
            null,
            row_zero: ROW_ZERO.max(NULL_MARGIN * angle),
            certify_zero: CERTIFY_ZERO.max(NULL_MARGIN * angle),
            nulls: Memo::new(),
        })
    }

    /// First-layer pre-activations of an encoded row.
    fn preactivations(&self, x: &DVector<f64>) -> DVector<f64> {
        self.w1.tr_mul(x) + &self.b1
    }

    /// uᵢ for the row whose inactive units `x` names, if the certificate holds.
    fn certify(&self, x: &DVector<f64>, (margin, misses): (f64, usize)) -> Option<DVector<f64>> {
        let z = self.preactivations(x);
        let mut units: Vec<usize> = (0..self.h).collect();
        units.sort_by(|&a, &b| z[a].total_cmp(&z[b]));
        let mut k = self.b + EXTRA_EQUATIONS;
        let u = loop {
            if k > self.h || z[units[k - 1]] >= 0.0 {
                return None;
            }
            match self.null_at(&units[..k], false) {
                Null::Empty => return None,
                Null::One(u, _) => break u,
                // Two rows share these units: take more.
                Null::Shared => k += EXTRA_EQUATIONS,
            }
        };
        let delta = &self.r * &u;
        let big = delta.amax();
        let wrong = (0..self.h)
            .filter(|&j| z[j] > margin && delta[j].abs() < self.certify_zero * big)
            .count();
        (wrong <= misses).then_some(u)
    }

    /// The null space of R's rows at `units` (B or more of them), read against the update's
    /// precision; with `leverage`, also whether one unit is needed for a one-dimensional null
    /// space: its leverage on R's other B − 1 directions there is 1, and without it the null
    /// space would be wider (`subsets`: two rows' u's mixed, which cancel at one unit).
    fn null_at(&self, units: &[usize], leverage: bool) -> Null {
        self.nulls.get_or(units, leverage, || self.read_null(units, leverage))
    }

    /// `null_at`'s SVD.
    fn read_null(&self, units: &[usize], leverage: bool) -> Null {
        let rs = DMatrix::from_fn(units.len(), self.b, |i, c| self.r[(units[i], c)]);
        let svd = rs.svd(leverage, true);
        let values = &svd.singular_values;
        let mut order: Vec<usize> = (0..values.len()).collect();
        order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
        let (top, last) = (values[order[0]], self.b - 1);
        if top <= 0.0 || values[order[last]] > self.null * top {
            return Null::Empty;
        }
        if last > 0 && values[order[last - 1]] < SECOND_RATIO.max(10.0 * self.null) * top {
            return Null::Shared;
        }
        let needed = svd.u.as_ref().is_some_and(|u| {
            (0..units.len()).any(|i| order[..last].iter().map(|&k| u[(i, k)].powi(2)).sum::<f64>() > 1.0 - NEEDED)
        });
        let v_t = svd.v_t.as_ref().expect("asked for Vᵀ");
        Null::One(v_t.row(order[last]).transpose(), needed)
    }

    /// Adds `u` unless it is (up to sign) one already found or a combination of two found.
    fn add(found: &mut Vec<DVector<f64>>, u: DVector<f64>) {
        if found.iter().any(|f| f.dot(&u).abs() >= 0.9999) {
            return;
        }
        for a in 0..found.len() {
            for c in a + 1..found.len() {
                let pair = DMatrix::from_columns(&[found[a].clone(), found[c].clone()]);
                let Some(coef) = pair.clone().svd(true, true).solve(&u, 1e-12).ok() else {
                    continue;
                };
                if (&pair * coef - &u).norm() < COMBINATION {
                    return;
                }
            }
        }
        found.push(u);
    }

    /// The rows the candidates ([n, d] row-major, encoded) prove, possibly none.
    pub fn solve(&self, candidates: &[f32]) -> Solved {
        // Members that agree give the same row: each is tried once.
        let mut seen = rustc_hash::FxHashSet::default();
        let rows: Vec<DVector<f64>> = candidates
            .chunks_exact(self.d)
            .filter(|c| seen.insert(c.iter().map(|v| v.to_bits()).collect::<Vec<u32>>()))
            .map(|c| DVector::from_iterator(self.d, c.iter().map(|&v| v as f64)))
            .collect();
        let mut found = Vec::new();
        for &level in &LEVELS {
            if found.len() >= self.b {
                break;
            }
            // Each row certifies on its own: all at once, added in order.
            for u in crate::parallel::map(&rows, |x| self.certify(x, level))
                .into_iter()
                .flatten()
            {
                Self::add(&mut found, u);
            }
            self.project_rounds(&rows, &mut found, level);
        }
        if found.len() < self.b {
            self.sample_subsets(&rows, &mut found);
        }
        let mut best = Vec::new();
        for _ in 0..RECOVERIES {
            if found.len() != self.b {
                break;
            }
            let Some(recovered) = self.recover(&found) else { break };
            let valid: Vec<bool> = recovered.iter().zip(&found).map(|(x, u)| self.valid(x, u)).collect();
            let proved: Vec<Vec<f64>> = recovered
                .iter()
                .zip(&valid)
                .filter(|(_, ok)| **ok)
                .map(|(x, _)| x.iter().copied().collect())
                .collect();
            if proved.len() > best.len() {
                best = proved;
            }
            if best.len() == self.b {
                break;
            }
            // Keep the u's whose rows proved themselves; search for the rest again.
            found = found
                .into_iter()
                .zip(&valid)
                .filter(|(_, ok)| **ok)
                .map(|(u, _)| u)
                .collect();
            self.project_rounds(&rows, &mut found, LEVELS[LEVELS.len() - 1]);
        }
        Solved {
            rows: best,
            batch: self.b,
        }
    }

    /// Candidates projected onto the span of the rows whose u is not yet found, certified there.
    fn project_rounds(&self, rows: &[DVector<f64>], found: &mut Vec<DVector<f64>>, level: (f64, usize)) {
        for _ in 0..ROUNDS {
            if found.len() >= self.b || found.is_empty() {
                return;
            }
            let before = found.len();
            let rest = self.rest_basis(found);
            let certified = crate::parallel::map(rows, |x| {
                let p = &rest * rest.tr_mul(x);
                let scale = self.v.dot(&p);
                match scale.abs() < 1e-12 {
                    true => None,
                    false => self.certify(&(p / scale), level),
                }
            });
            for u in certified.into_iter().flatten() {
                Self::add(found, u);
            }
            if found.len() == before {
                return;
            }
        }
    }

    /// Orthonormal basis [d, B − K] of the span holding the rows whose u is not yet found:
    /// G R w for w orthogonal to every found u.
    fn rest_basis(&self, found: &[DVector<f64>]) -> DMatrix<f64> {
        let q = DMatrix::from_columns(found).svd(true, false).u.expect("asked for U");
        let perp = DMatrix::<f64>::identity(self.b, self.b) - &q * q.transpose();
        // Gram–Schmidt on the complement's projector picks B − K orthonormal directions.
        let mut basis: Vec<DVector<f64>> = Vec::new();
        for k in 0..self.b {
            if basis.len() == self.b - found.len() {
                break;
            }
            let mut c: DVector<f64> = perp.column(k).into_owned();
            for e in &basis {
                c -= e * e.dot(&c);
            }
            let n = c.norm();
            if n > 1e-6 {
                basis.push(c / n);
            }
        }
        let span = &self.gr * DMatrix::from_columns(&basis);
        span.svd(true, false).u.expect("asked for U")
    }

    /// X = (G R U⁻ᵀ)ᵀ, each row scaled onto the hyperplane.
    fn recover(&self, set: &[DVector<f64>]) -> Option<Vec<DVector<f64>>> {
        let inv_t = DMatrix::from_columns(set).try_inverse()?.transpose();
        let y = &self.gr * inv_t;
        y.column_iter()
            .map(|col| {
                let scale = self.v.dot(&col);
                (scale.abs() > 1e-12).then(|| col / scale)
            })
            .collect()
    }

    /// A row the table can hold (one hot per categorical block, continuous values in range and at
    /// their precision) whose inactive units are exactly δ's zeros.
    fn valid(&self, x: &DVector<f64>, u: &DVector<f64>) -> bool {
        let l = self.layout;
        let near = |a: f64, b: f64| (a - b).abs() < VALID * (1.0 + b.abs());
        for &(o, w, categorical) in &l.blocks {
            if categorical {
                let mut hot = 0;
                for j in o..o + w {
                    let (m, s) = (l.mean[j], l.std[j]);
                    if near(x[j], (1.0 - m) / s) {
                        hot += 1;
                    } else if !near(x[j], -m / s) {
                        return false;
                    }
                }
                if hot != 1 {
                    return false;
                }
            } else {
                let slack = 0.05 * (l.hi[o] - l.lo[o]);
                if !(x[o] >= l.lo[o] - slack && x[o] <= l.hi[o] + slack) {
                    return false;
                }
                if let Some(step) = self.step[o] {
                    // Off-grid values: a combination of two rows' values. Columns whose spread
                    // dwarfs their step (fnlwgt) cannot be read this finely and pass.
                    let units = (x[o] * l.std[o] + l.mean[o]) / step;
                    let tolerance = (1e-4 * l.std[o] / step).max(0.05);
                    if (units - units.round()).abs() > tolerance {
                        return false;
                    }
                }
            }
        }
        let z = self.preactivations(x);
        let delta = &self.r * u;
        let big = delta.amax();
        (0..self.h).all(|j| z[j].abs() < BOUNDARY || (z[j] < 0.0) == (delta[j].abs() < self.row_zero * big))
    }
}

/// Each member's row nearest a proved row becomes it (and certified), so the pooled row is the
/// proved one and the ensemble agrees on it: members [N, b, d] in x and probs, `in_span` per
/// member row. Each member keeps its own row order.
pub fn adopt(proved: &[Vec<f64>], layout: &Layout, b: usize, x: &mut [f32], probs: &mut [f32], in_span: &mut [bool]) {
    let d = layout.mean.len();
    let members = x.chunks_exact_mut(b * d).zip(probs.chunks_exact_mut(b * d));
    for (m, (mx, mp)) in members.enumerate() {
        // Each proved row takes the member's row nearest it.
        let costs = Matrix::from_fn(proved.len(), b, |(k, i)| {
            let row = &mx[i * d..(i + 1) * d];
            let sq: f64 = row.iter().zip(&proved[k]).map(|(&a, &c)| (a as f64 - c).powi(2)).sum();
            (sq.min(1e12) * 1e6) as i64
        });
        let assignment = kuhn_munkres_min(&costs).1;
        for (k, &i) in assignment.iter().enumerate() {
            let (row, p) = (&mut mx[i * d..(i + 1) * d], &mut mp[i * d..(i + 1) * d]);
            for &(o, w, categorical) in &layout.blocks {
                for j in o..o + w {
                    row[j] = proved[k][j] as f32;
                    if categorical {
                        p[j] = (proved[k][j] * layout.std[j] + layout.mean[j]).round() as f32;
                    }
                }
            }
            in_span[m * b + i] = true;
        }
    }
}

/// Each continuous column's precision (the step between its values), where the table states it.
pub fn precision_steps(dataset: &Dataset) -> Vec<Option<f64>> {
    let mut step = vec![None; dataset.d()];
    for f in &dataset.features {
        if let FeatureKind::Continuous { decimals, .. } = f.kind {
            step[f.offset] = Some(10f64.powi(-(decimals as i32)));
        }
    }
    step
}

mod memo;
mod subsets;
#[cfg(test)]
mod tests;

//! The first layer's span as a constraint on a refinement's continuous values. Where the first
//! layer's gradient has the batch's rank for certain, every row of the batch lies in its column
//! space S (`attack::priors::subspace`); a candidate's continuous values are then moved only
//! within S (with its categories as they are), and the second layer's fit chooses among the
//! values S leaves free. The certificate judges the row it ends at as before, so this changes
//! where a refinement goes, never what is proved: a row outside S is no row of the batch, and
//! one inside it costs the fit nothing.
//!
//! Why: on a table of continuous columns (40 Gaussian columns, B = 24 and 32, [100, 100]) the
//! ensemble's rows were 0.5-1 std off per cell and none refined into the second layer's span in
//! three free rounds; restricted to S and run until it settles, a start 0.5 std off from a row
//! reached it in 66 % of tries at B = 32, 1 % before (`scripts/first_layer_basin.py`).
use nalgebra::{DMatrix, DVector};

use crate::attack::priors::spectrum::Spectrum;
use crate::attack::priors::subspace::UNDETERMINED;

/// How far (relative) an encoded row may lie from S and count as in it: twice S's angle from the
/// span the update's rounding leaves (`Spectrum::angle`), and float32's rounding of the row.
const IN_SPAN: f64 = 2.0;
/// A batch row's distance from the span read, in `Spectrum::drift`s of the candidate's (the
/// second layer's proof allows `ACCEPT` = 2 for its rows).
const DRIFT: f64 = 2.0;
const ENCODED: f64 = 16.0 * f32::EPSILON as f64;

/// The first layer's span, read for the continuous values a refinement fits.
pub(super) struct FirstLayerSpan {
    /// S's orthonormal basis [d, r] (encoded units, with the fixed directions of the categorical
    /// blocks) and its rows at the continuous columns [k, r].
    basis: DMatrix<f64>,
    basis_t: DMatrix<f64>,
    /// S's angle from the span the update gives (`Spectrum::angle`), and the spectrum it was
    /// read on with its rank (`Spectrum::drift` of a row).
    angle: f64,
    spectrum: Spectrum,
    rank: usize,
    continuous_rows: DMatrix<f64>,
    /// The encoded column of each continuous value, and its std (value = std · encoded + mean).
    offsets: Vec<usize>,
    std: DVector<f64>,
    /// M⁺ over the combinations of continuous values S determines, M = I − V_c V_cᵀ (the part of
    /// a move of the continuous values, in encoded units, that leaves S); and, in value units,
    /// a basis of the combinations S leaves free [k, f].
    determined_inverse: DMatrix<f64>,
    free: DMatrix<f64>,
    /// For the proof (`proof_directions`): the free combinations, orthonormal in encoded units
    /// [k, f], and the least eigenvalue of M on the determined ones; None where M's spectrum has
    /// no clean gap between the two (`PROOF_FREE`, `PROOF_DETERMINED`).
    proof: Option<(DMatrix<f64>, f64)>,
}

/// For a proof, M's eigenvalues must split cleanly: the free ones below this (their directions
/// leave S by at most its square root of a move), the determined ones above `PROOF_DETERMINED`.
/// On a table of continuous columns alone M is a projector: 0 and 1 exactly.
const PROOF_FREE: f64 = 1e-12;
const PROOF_DETERMINED: f64 = 1e-3;
/// The part of a candidate's difference from a batch row along the determined combinations (in
/// claims) up to which the proof reads only the free ones; beyond it the proof reads all.
const PROOF_DETERMINED_PART: f64 = 0.025;

impl FirstLayerSpan {
    /// `basis`: S's orthonormal basis [d, r] in an encoding of width `d`
    /// (`Subspace::rows_basis`), with the spectrum it was read on and its rank; `continuous`: each
    /// continuous value's encoded column and std. None where S leaves every continuous
    /// combination free (it would change nothing) or there are none.
    pub(super) fn new(
        d: usize,
        basis: DMatrix<f64>,
        (spectrum, rank): (Spectrum, usize),
        continuous: &[(usize, f64)],
    ) -> Option<Self> {
        let angle = spectrum.angle(rank);
        let k = continuous.len();
        if k == 0 || basis.nrows() != d {
            return None;
        }
        let offsets: Vec<usize> = continuous.iter().map(|&(offset, _)| offset).collect();
        let continuous_rows = DMatrix::from_fn(k, basis.ncols(), |i, j| basis[(offsets[i], j)]);
        let m = DMatrix::<f64>::identity(k, k) - &continuous_rows * continuous_rows.transpose();
        let eig = m.symmetric_eigen();
        let std = DVector::from_iterator(k, continuous.iter().map(|&(_, std)| std));
        let mut determined_inverse = DMatrix::<f64>::zeros(k, k);
        let mut free = Vec::new();
        let proof = {
            let (mut unit_free, mut least) = (Vec::new(), f64::INFINITY);
            let mut clean = true;
            for (i, &l) in eig.eigenvalues.iter().enumerate() {
                match l {
                    l if l <= PROOF_FREE => unit_free.push(eig.eigenvectors.column(i).into_owned()),
                    l if l >= PROOF_DETERMINED => least = least.min(l),
                    _ => clean = false,
                }
            }
            let basis = match unit_free.is_empty() {
                true => DMatrix::zeros(k, 0),
                false => DMatrix::from_columns(&unit_free),
            };
            clean.then_some((basis, least))
        };
        for (i, &l) in eig.eigenvalues.iter().enumerate() {
            let v = eig.eigenvectors.column(i);
            match l > UNDETERMINED * UNDETERMINED {
                true => determined_inverse += (&v * v.transpose()) / l,
                false => free.push(v.component_mul(&std)),
            }
        }
        if free.len() == k {
            return None;
        }
        let free = match free.is_empty() {
            true => DMatrix::zeros(k, 0),
            false => DMatrix::from_columns(&free),
        };
        Some(FirstLayerSpan {
            basis_t: basis.transpose(),
            basis,
            angle,
            spectrum,
            rank,
            continuous_rows,
            offsets,
            std,
            determined_inverse,
            free,
            proof,
        })
    }

    /// A step of the continuous values (value units) from the encoded row `x`: the least move
    /// that brings the determined combinations into S, then the free ones by the second layer's
    /// normal equations (`normal`, `rhs`: `ActivationSpan::step_equations`), reduced to the free
    /// combinations and solved by `solve`. None where those are singular.
    pub(super) fn step(
        &self,
        x: &[f64],
        (normal, rhs): (&DMatrix<f64>, &DVector<f64>),
        solve: impl FnOnce(DMatrix<f64>, &DVector<f64>) -> Option<DVector<f64>>,
    ) -> Option<DVector<f64>> {
        let x = DVector::from_column_slice(x);
        let inside = &self.basis_t * &x;
        let x_c = DVector::from_iterator(self.offsets.len(), self.offsets.iter().map(|&o| x[o]));
        let outside = x_c - &self.continuous_rows * inside;
        let toward = -(&self.determined_inverse * outside);
        let step = toward.component_mul(&self.std);
        if self.free.ncols() == 0 {
            return Some(step);
        }
        let reduced = self.free.transpose() * normal * &self.free;
        let reduced_rhs = self.free.transpose() * (rhs - normal * &step);
        let y = solve(reduced, &reduced_rhs)?;
        Some(step + &self.free * y)
    }

    /// The continuous combinations a proof of the candidate `x` (encoded) reads, where it lies in
    /// S (to S's angle and its float32 rounding): the free ones (orthonormal, encoded units
    /// [k, f]), and a bound on the rest of its difference from any batch row of its categories
    /// (encoded units). The difference's part off the span read is at most the candidate's
    /// (measured) and a batch row's (S's drift under the update's rounding, `Spectrum::drift`,
    /// read on the candidate as the second layer's proof reads it, `DRIFT` times, for a row
    /// within a unit of it), and at least √λ of its determined part less what its free part (at
    /// most a unit: a proof claims far less) can leave. None where `x` is not in S or M's
    /// spectrum has no clean gap.
    pub(super) fn proof_directions(&self, x: &[f64]) -> Option<(&DMatrix<f64>, f64)> {
        let (free, least) = self.proof.as_ref()?;
        let x = DVector::from_column_slice(x);
        let outside = (&x - &self.basis * (&self.basis_t * &x)).norm();
        if outside > (IN_SPAN * self.angle + ENCODED) * x.norm() {
            return None;
        }
        let row = (DRIFT * self.spectrum.drift(self.rank, &x) + ENCODED) * (x.norm() + 1.0);
        Some((free, (outside + row + PROOF_FREE.sqrt()) / least.sqrt()))
    }

    /// Whether the determined part `bound` (`proof_directions`, encoded units) is small enough,
    /// at a claim of `claim` std, for the proof to read the free combinations alone.
    pub(super) fn negligible(bound: f64, claim: f64) -> bool {
        bound <= PROOF_DETERMINED_PART * claim
    }
}

//! When a row in the second layer's span is a row of the batch: the certificate's theorem and the
//! conditions it checks (docs/method.md, "What proved means").
//!
//! FedSGD: G₂ = (1/B) Σᵢ aᵢ δᵢᵀ, so its column space S lies in span{aᵢ}, whatever the batch, and
//! is all of it where G₂ has rank B. Below rank B (rows whose δ's are dependent: on a binary head,
//! any two rows that share their second-layer ReLU pattern) G₂ holds such rows only as one
//! combination, a row of them is not in S, and where they share their categories and first-layer
//! cell one point between them is: nothing with continuous values is proved there
//! (`Unproved::RankBelowBatch`). At rank B, take a row x̂ with categories c and first-layer ReLU pattern P (its cell). Inside the cell the
//! activation is affine in the continuous values t: a(x_c + Ct) = D_P(W₁ᵀ(x_c + Ct) + b₁). So if a
//! row x of the batch shares c and P with x̂, a(x̂) − a(x) = D_P W₁ᵀ C (t̂ − t), and both lie in S:
//! t̂ − t is in the null space of M = Π_S⊥ D_P W₁ᵀ C. Where M is injective, x̂ = x. Measured with
//! the certificate's tolerance: where every direction of one scoring tolerance (`tolerance`) in the
//! continuous values moves the activation out of S by more than `UNIQUE` times the certificate's
//! threshold, every point of the cell within the threshold of S, a batch row among them, lies
//! within a tolerance of x̂. That is what "proved" claims.
//!
//! Where M is not injective, the update cannot tell the cell's points apart: two rows of the batch
//! that share their categories and ReLU cell (twins, k-tuples) put their difference in M's null
//! space, and every point on their line (between them and beyond) lies in S. Such a row fits the
//! update and is not proved (`Unproved::NotUnique`).
//!
//! The checks are counted on the units the row activates: a unit the row leaves off checks
//! nothing, and a unit dead on every row of the batch puts no direction in S, so a first layer
//! whose live units the batch fills gives S every activation and no check (`Unproved::FewChecks`).
//! Beyond the continuous values a refinement fits, `SPARE_CHECKS` more are asked for: the
//! certificate then rests on an overdetermined system, which a point in a cell no row of the batch
//! occupies satisfies only by coincidence (the condition the theorem cannot check; see the docs).
use nalgebra::DMatrix;

use super::{ActivationSpan, SPARE_CHECKS, Unproved};
use crate::table::Value;

/// A unit counts as a check where Π_S⊥ keeps this much of it (1: orthogonal to S, 0: in S).
const CHECK_FLOOR: f64 = 1e-3;
/// M's smallest singular value, one tolerance per column, against the certificate's threshold on
/// the activation: above this, two points of a cell within the threshold of S are within a
/// tolerance of each other (2 by the triangle inequality, doubled for the rounding).
const UNIQUE: f64 = 4.0;

impl ActivationSpan<'_> {
    /// Whether `row`, whose activation lies in the span, is proved a row of the batch: its live
    /// units leave the checks, and no other point of its cell fits (the module's theorem).
    pub fn proof(&self, row: &[Value]) -> Result<(), Unproved> {
        // Below full rank the span is not every row's activation, and the theorem's first step
        // fails; a table without continuous values has no point between two rows, only copies.
        if self.independent < self.rows && !self.continuous.is_empty() {
            return Err(Unproved::RankBelowBatch {
                rank: self.independent,
                rows: self.rows,
            });
        }
        let z = self.pre_activation(row);
        let slope = z.map(|v| self.activation.host_slope(v));
        let a = z.map(|v| self.activation.host(v));
        let live: Vec<usize> = (0..slope.len()).filter(|&j| slope[j] != 0.0).collect();
        let needed = self.continuous.len() + SPARE_CHECKS;
        // Π_S⊥ on the row's live units: its rank is the checks they give.
        let in_span = &self.basis * &self.basis_t;
        let on_live = DMatrix::from_fn(a.len(), live.len(), |i, k| {
            let j = live[k];
            ((i == j) as u8 as f64 - in_span[(i, j)]) * slope[j]
        });
        let checks = match live.is_empty() {
            true => 0,
            false => {
                let top = slope.amax().max(f64::MIN_POSITIVE);
                on_live
                    .singular_values()
                    .iter()
                    .filter(|&&s| s > CHECK_FLOOR * top)
                    .count()
            }
        };
        if checks < needed {
            return Err(Unproved::FewChecks { checks, needed });
        }
        if self.continuous.is_empty() {
            return Ok(());
        }
        // M, one tolerance per column: how far the activation leaves S as each value moves.
        let w = &self.continuous_w;
        let m = DMatrix::from_fn(w.nrows(), w.ncols(), |j, k| {
            w[(j, k)] * slope[j] * self.dataset.features[self.continuous[k].feature].tolerance()
        });
        let m = &m - &self.basis * (&self.basis_t * &m);
        let smallest = m.singular_values().min();
        let needs = UNIQUE * self.threshold * a.norm();
        match smallest >= needs {
            true => Ok(()),
            false => Err(Unproved::NotUnique {
                margin: smallest / needs,
            }),
        }
    }
}

//! When a row in the second layer's span is a row of the batch: the certificate's theorem and the
//! conditions it checks (docs/method.md, "What proved means").
//!
//! FedSGD: G₂ = (1/B) Σᵢ aᵢ δᵢᵀ, so its column space S lies in span{aᵢ}, whatever the batch, and
//! is all of it where G₂ has rank B (`Regime::Full`). Take a row x̂ with categories c and
//! first-layer ReLU pattern P (its cell). Inside the cell the activation is affine in the
//! continuous values t: a(x_c + Ct) = D_P(W₁ᵀ(x_c + Ct) + b₁). So if a row x of the batch shares c
//! and P with x̂, a(x̂) − a(x) = M₀(t̂ − t) with M₀ = D_P W₁ᵀ C, and both lie in S: t̂ − t is in the
//! null space of Π_S⊥ M₀. Where that is injective, x̂ = x.
//!
//! The update is read in float32: the span Ŝ leakscope computes lies within an angle ρ_max =
//! η/σ_r of S (`Spectrum::angle`), a vector v of S within ρ(v) of Ŝ (`Spectrum::drift`), and the
//! client's activation of a row within γ of ours (its float32 rounding). With T the claim's
//! precision per column (`CLAIM` std), m̂ = σ_min(Π_Ŝ⊥ M₀ T), n̂ = ‖M₀ T‖
//! and δ̂ the candidate's measured distance to Ŝ, a batch row x of x̂'s cell and categories with
//! s = ‖T⁻¹(t̂ − t)‖ obeys s·(m̂ − (ρ_max + γ)·n̂) ≤ (δ̂ + ρ(a) + γ)·‖a(x̂)‖. The proof asks the
//! left factor to be at least `SAFETY` times the right side: then s ≤ 1/`SAFETY`, every
//! continuous value of x̂ within `PROVED_WITHIN` (0.05 std) of the batch row's. That is what
//! "proved" claims. (At the scoring tolerance with s ≤ 1, a point between a near-dependent pair
//! 0.08 std from either row was proved; at half of it, a row one unit off on an integer column.)
//!
//! Where Π_Ŝ⊥ M₀ is not injective, the update cannot tell the cell's points apart: two rows of
//! the batch that share their categories and ReLU cell (twins, k-tuples) put their difference in
//! its null space, and every point on their line lies in S. Such a row fits the update and is not
//! proved (`Unproved::NotUnique`).
//!
//! Such a line also reaches past its cell's edge: the next cell's piece leaves S only as far as a
//! point is past the edge, so a point just beyond a twin pair, in a cell no batch row shares, lies
//! near Ŝ and passes the test above. So the point of the row's own piece that Ŝ holds is placed,
//! and every cell whose edge lies within the update's precision of it must hold no such line: its
//! piece meets S in one point at most, or the theorem bounds a batch row there within the claim
//! or nearer than the edge (`Unproved::AtCellEdge` otherwise).
//!
//! The checks are counted on the units the row activates: a unit the row leaves off checks
//! nothing, and a unit dead on every row of the batch puts no direction in S, so a first layer
//! whose live units the batch fills gives S every activation and no check (`Unproved::FewChecks`).
//! Beyond the continuous values a refinement fits, `SPARE_CHECKS` more are asked for: the
//! certificate then rests on an overdetermined system, which a point in a cell no row of the batch
//! occupies satisfies only by coincidence (the condition the theorem cannot check; see the docs).
use nalgebra::{DMatrix, DVector};

use super::{ActivationSpan, SPARE_CHECKS, Unproved};
use crate::table::Value;
use crate::table::dataset::{PROVED_WITHIN, TOLERANCE_FACTOR};

/// A unit counts as a check where Π_S⊥ keeps this much of it (1: orthogonal to S, 0: in S), and
/// beyond `ANGLE_MARGIN` times how far Ŝ can be from S: Π_S⊥ is within that angle of Π_Ŝ⊥, so a
/// check read here is one in truth. (Ten times the angle, as the rank's separation, left a
/// trained [32, 32] network's rows of Adult at B = 16 no checks: 8.7 rows proved fell to 2.)
const CHECK_FLOOR: f64 = 1e-3;
const ANGLE_MARGIN: f64 = 2.0;
/// The precision the inequality is taken at, with a margin of `SAFETY`: the bound puts a proved
/// row's continuous values within `PROVED_WITHIN` std of the batch row's, what "proved" claims.
/// (Realized, the proved rows are the batch's to the values' own precision: the drift the bound
/// allows for is rarely reached.)
const SAFETY: f64 = 2.0;
const CLAIM: f64 = SAFETY * PROVED_WITHIN;
/// Where the bound reaches only half the scoring tolerance (the claim proofs made before
/// 2026-11-29), the row is near a batch row, not proved: it keeps its slot and is reported
/// consistent (`Unproved::Imprecise`), so a trained network's rows the bound cannot place to
/// 0.05 std still count for the attack (Adult [100, 100] E = 20: 3.5 points of a batch's cells).
const NEAR: f64 = TOLERANCE_FACTOR;
/// The most unit edges within reach of a row's point that the cells beyond are checked for
/// (2^k − 1 cells); a row with more is not proved.
const MOST_EDGES: usize = 12;

impl ActivationSpan<'_> {
    /// Whether `row`, whose activation lies `distance` (relative) from the span, is a row of the
    /// batch by the module's theorem: its live units leave the checks, and no other point of its
    /// cell a claim's precision away fits. In a span below the batch's rank (`Regime::Labelled`)
    /// this is necessary, not sufficient (`Certified::IfLabelled`). Where the theorem holds only
    /// at half the scoring tolerance, `Unproved::Imprecise`.
    pub fn proof(&self, row: &[Value], distance: f64) -> Result<(), Unproved> {
        match self.proof_at(row, distance, CLAIM) {
            Err(Unproved::NotUnique { .. } | Unproved::AtCellEdge) if self.proof_at(row, distance, NEAR).is_ok() => {
                Err(Unproved::Imprecise)
            }
            proved => proved,
        }
    }

    /// The theorem with continuous values claimed to `claim` std over `SAFETY`.
    fn proof_at(&self, row: &[Value], distance: f64, claim: f64) -> Result<(), Unproved> {
        let z = self.pre_activation(row);
        let slope = z.map(|v| self.activation.host_slope(v));
        let a = z.map(|v| self.activation.host(v));
        let live: Vec<usize> = (0..slope.len()).filter(|&j| slope[j] != 0.0).collect();
        // Within the first layer's span the refinement fits, and the theorem reads, only the
        // combinations that span leaves free: a batch row and the candidate differ by such a
        // combination, and by a part the span bounds (`proof_directions`).
        let within = self.proof_directions(row, claim);
        let needed = within.map_or(self.continuous.len(), |(free, _)| free.ncols()) + SPARE_CHECKS;
        let angle = self.spectrum.angle(self.rank());
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
                let floor = CHECK_FLOOR + ANGLE_MARGIN * angle;
                on_live.singular_values().iter().filter(|&&s| s > floor * top).count()
            }
        };
        if checks < needed {
            return Err(Unproved::FewChecks { checks, needed });
        }
        // No continuous values to place, or none the first layer's span leaves free: a batch row
        // of the row's categories in that span has its values (to the part it bounds).
        if self.continuous.is_empty() || within.is_some_and(|(free, _)| free.ncols() == 0) {
            return Ok(());
        }
        let (drift, forward) = self.slack(row);
        let mut slack = (distance + drift + forward) * a.norm();
        let mut per_claim = self.per_claim(claim);
        // The determined part moves the activation by at most its size (in claims) times the
        // largest move of the row's cell: slack for the free part; the claim is kept for the
        // sum (`negligible`).
        let mut spread = SAFETY * (drift + forward) * a.norm();
        if let Some((free, bound)) = within {
            let part = bound / claim;
            let live = DMatrix::from_fn(per_claim.nrows(), per_claim.ncols(), |j, k| {
                per_claim[(j, k)] * slope[j]
            });
            let moves = live.singular_values().max();
            slack = (slack + moves * part) / (1.0 - SAFETY * part);
            spread += SAFETY * moves * part;
            per_claim = &per_claim * free;
        }
        let own = self.uniqueness(&per_claim, &slope, angle + forward);
        if own.smallest < SAFETY * slack + own.noise {
            return Err(Unproved::NotUnique {
                margin: own.smallest / (SAFETY * slack + own.noise),
            });
        }
        match self.activation.is_piecewise_linear() {
            true => self.edge_cells((&z, &slope, &a), &per_claim, &own, (spread, slack, angle + forward)),
            false => Ok(()),
        }
    }

    /// How each unit's pre-activation moves as each continuous value moves by `claim` std.
    fn per_claim(&self, claim: f64) -> DMatrix<f64> {
        let w = &self.continuous_w;
        DMatrix::from_fn(w.nrows(), w.ncols(), |j, k| w[(j, k)] * claim * self.continuous[k].std)
    }

    /// The theorem's uniqueness in the cell of ReLU pattern `slope`: M₀ T (how the activation
    /// moves as each value moves by a claim's precision, from `per_claim`), its part off the span,
    /// that part's smallest singular value, and what Ŝ's distance from S (`off`, relative) can
    /// hide of it.
    fn uniqueness(&self, per_claim: &DMatrix<f64>, slope: &DVector<f64>, off: f64) -> Uniqueness {
        let moves = DMatrix::from_fn(per_claim.nrows(), per_claim.ncols(), |j, k| {
            per_claim[(j, k)] * slope[j]
        });
        let out = &moves - &self.basis * (&self.basis_t * &moves);
        let smallest = out.singular_values().min();
        Uniqueness {
            noise: off * moves.singular_values().max(),
            out,
            smallest,
        }
    }

    /// The theorem for the cells next to the row's. It speaks of batch rows in the row's own
    /// cell; a point whose cell holds none still lies near the span where it sits just past the
    /// edge of a cell whose piece S cuts: two rows of the batch that share categories and cell put
    /// their whole line in S, and the next cell's piece leaves S only as far as the point is past
    /// the edge (a near-dependent pair's point beyond both was proved so). So the point of the
    /// row's own piece that S holds is placed (to `reach`, in claims, from the update's precision),
    /// and every cell whose edge lies within that reach of it must hold no line of fitting points,
    /// or pass the theorem with the row's activation read on that cell's piece (off it by the
    /// flipped units' values).
    fn edge_cells(
        &self,
        (z, slope, a): (&DVector<f64>, &DVector<f64>, &DVector<f64>),
        per_claim: &DMatrix<f64>,
        own: &Uniqueness,
        (spread, slack, off): (f64, f64, f64),
    ) -> Result<(), Unproved> {
        let reach = spread / (own.smallest - own.noise);
        let Ok(step) = own.out.clone().svd(true, true).solve(&self.residual(a), 0.0) else {
            return Err(Unproved::AtCellEdge);
        };
        let at = z - per_claim * &step;
        let near: Vec<usize> = (0..z.len())
            .filter(|&j| (at[j] > 0.0) != (z[j] > 0.0) || at[j].abs() <= reach * per_claim.row(j).norm())
            .collect();
        if near.len() > MOST_EDGES {
            return Err(Unproved::AtCellEdge);
        }
        for flips in 1..1usize << near.len() {
            let mut slope = slope.clone();
            // The row's activation read on the next cell's piece moves by the flipped units'
            // values; a batch row in that cell lies at least past each flipped edge.
            let mut moved = DVector::zeros(z.len());
            let mut past: f64 = 0.0;
            for (bit, &j) in near.iter().enumerate() {
                if flips >> bit & 1 == 1 {
                    let other = self.activation.host_slope(-z[j]);
                    moved[j] = (slope[j] - other) * z[j];
                    slope[j] = other;
                    past = past.max(z[j].abs() / per_claim.row(j).norm().max(f64::MIN_POSITIVE));
                }
            }
            let moved = self.residual(&moved).norm() + off * moved.norm();
            let next = self.uniqueness(per_claim, &slope, off);
            // The cell's piece meets S in one point at most (no line of fitting points: its
            // part off Ŝ is injective beyond what Ŝ's distance from S can hide, with the
            // theorem's margin), or a batch row there is within the claim, or nearer than the
            // cell's edge (no such row).
            let bound = (slack + moved) / (next.smallest - next.noise).max(0.0);
            let isolated = next.smallest >= SAFETY * next.noise && next.smallest > 0.0;
            if !(isolated || bound <= 1.0 / SAFETY || bound < past) {
                return Err(Unproved::AtCellEdge);
            }
        }
        Ok(())
    }
}

/// The theorem's uniqueness in one cell (`ActivationSpan::uniqueness`).
struct Uniqueness {
    out: DMatrix<f64>,
    smallest: f64,
    noise: f64,
}

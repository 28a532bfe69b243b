//! One numerical basis for every rank and span the proofs read off an update (issue 43): the
//! second layer's certificate, peeling, the first layer's span and its ReLU-pattern search all
//! take their ranks, their spans and how far those spans can be off from here, with a tolerance
//! derived from the update's own precision rather than fixed cuts.
//!
//! A layer's gradient read off a float32 update is Ĝ = G + E: G = (1/B) Σᵢ hᵢ δᵢᵀ has rank at most
//! B, and E is the client's rounding (its sum over the rows, then the value stored). What moves
//! Ĝ's column space is the part of E outside G's, P⊥E; measured against the rows' own float32
//! terms summed exactly, ‖P⊥E‖₂ stayed within 0.81 (first layer) and 2.75 (second layer) times
//! u·‖Ĝ‖_F over 508 networks (32–200 wide, ReLU, leaky ReLU, softmax and sigmoid heads, trained
//! 0–50 epochs, weights scaled 10⁴; `tests/spectrum.rs` holds the bound to that truth). The noise
//! bound η is `ROUNDING` times that, u the update's unit roundoff (`Precision`), or more where the
//! spectrum's tail shows more noise than rounding (a defence's): singular values past the most
//! the rank can be are noise alone.
//!
//! With η: a singular value above η is a direction of G (G's rank is at least their count); the
//! leading r directions are *determined* where σ_r ≥ `SEPARATION`·η, within an angle η/σ_r of G's
//! (Wedin's theorem: G's σ_{r+1} is 0); a vector v of G's span lies within `drift` of Ĝ's leading
//! span to first order, 2η‖Σ⁻¹Uᵀv‖/‖v‖, which is small for a row whose gradient is strong and
//! large for one whose residual the training made tiny. Between η and `SEPARATION`·η a direction
//! is there but not determined: the rank is uncertain, and the proofs say so.
use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// η over u·‖Ĝ‖_F: the worst measured is 2.75 (second layer, trained 50 epochs, B = 8).
const ROUNDING: f64 = 8.0;
/// η over the noise the spectrum's tail shows (its largest value, as a Marchenko–Pastur edge of
/// the tail's dimensions, widened to the whole matrix).
const TAIL: f64 = 1.5;
/// The tail's noise over the rounding's above which the update carries noise of its own: float
/// rounding leaves the tail's at 0.05-0.2 of the rounding model's (measured with the bound).
const NOISY: f64 = 4.0;
/// A leading direction is determined where its singular value is this many times η: its angle to
/// G's is then at most 1/SEPARATION, and first-order bounds hold to about that share.
pub const SEPARATION: f64 = 10.0;

/// The arithmetic an update was computed and stored in, read off its values: float32, unless
/// every value leaves the low bits of float32's mantissa zero (bfloat16 keeps 7 bits, float16 10).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct Precision {
    /// The unit roundoff u (float32: 2⁻²⁴).
    pub unit: f64,
    /// Mantissa bits the values carry.
    pub bits: u32,
}

impl Precision {
    pub const F32: Precision = Precision {
        unit: 5.960464477539063e-8,
        bits: 23,
    };

    /// The precision `values` carry: the most mantissa bits any nonzero finite value uses (a
    /// float32 update uses all 23 in nearly every value; a bfloat16 one at most 7).
    pub fn of(values: impl Iterator<Item = f32>) -> Precision {
        let used = values
            .filter(|v| v.is_normal())
            .map(|v| 23 - (v.to_bits() & 0x7f_ffff).trailing_zeros().min(23))
            .max()
            .unwrap_or(23);
        // Fewer bits than 7 in every value says little about the arithmetic (small integers);
        // take bfloat16's as the coarsest.
        let bits = used.max(7);
        Precision {
            unit: 2f64.powi(-(bits as i32) - 1),
            bits,
        }
    }
}

/// How the client made the update a matrix is read off, which decides what its rounding is
/// relative to: a gradient's to the gradient itself; local training's θ₀ − θ_E to the weights,
/// rounded at every step and in the difference (a small difference of two large numbers).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Source {
    Gradient,
    /// The layer's weights' norm ‖θ₀‖_F and the local steps taken.
    Training {
        weights: f64,
        steps: usize,
    },
}

impl Source {
    /// The norm the rounding scales with beside the matrix's own.
    fn reference(&self) -> f64 {
        match *self {
            Source::Gradient => 0.0,
            Source::Training { weights, steps } => weights * (2.0 + (steps as f64).sqrt()),
        }
    }
}

/// The rank a spectrum decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rank {
    /// Every direction above η is determined, and there are this many.
    Certain(usize),
    /// `determined` directions stand clear of η, `above_noise` (more) are above it but too near
    /// it to place.
    Uncertain { determined: usize, above_noise: usize },
}

/// A matrix read off an update: its singular values in decreasing order, its left (and, where
/// asked, right) singular vectors in that order, and the noise bound η on what moves its span.
#[derive(Debug, Clone, PartialEq)]
pub struct Spectrum {
    pub values: Vec<f64>,
    /// Left singular vectors as columns, [m, k].
    pub left: DMatrix<f64>,
    /// Right singular vectors as columns, [n, k], where asked for.
    pub right: Option<DMatrix<f64>>,
    /// η: a bound on ‖P⊥E‖₂, in the matrix's own units.
    pub noise: f64,
    /// The matrix's shape, [m, n].
    pub shape: (usize, usize),
    /// η's two parts: the rounding model's, and what the tail past the rank shows (0 where the
    /// rank can fill the matrix).
    pub rounding: f64,
    pub tail: f64,
    /// The update's unit roundoff (`Precision::unit`).
    pub unit: f64,
}

impl Spectrum {
    /// The spectrum of `m` (read off an update of `precision`), whose error-free rank is at most
    /// `most` (the rows a FedSGD gradient sums; past it, the tail is noise alone).
    pub fn of(m: DMatrix<f64>, precision: Precision, most: usize, right: bool) -> Spectrum {
        Spectrum::of_update(m, precision, most, right, Source::Gradient)
    }

    /// The same for a matrix made as `source` says.
    pub fn of_update(m: DMatrix<f64>, precision: Precision, most: usize, right: bool, source: Source) -> Spectrum {
        let (rows, cols) = m.shape();
        let frobenius = m.norm();
        let svd = m.svd(true, right);
        let mut order: Vec<usize> = (0..svd.singular_values.len()).collect();
        order.sort_by(|&a, &b| svd.singular_values[b].total_cmp(&svd.singular_values[a]));
        let values: Vec<f64> = order.iter().map(|&k| svd.singular_values[k]).collect();
        let u = svd.u.expect("asked for U");
        let left = DMatrix::from_fn(rows, order.len(), |i, k| u[(i, order[k])]);
        let right = svd
            .v_t
            .map(|v_t| DMatrix::from_fn(cols, order.len(), |j, k| v_t[(order[k], j)]));
        let rounding = ROUNDING * precision.unit * frobenius.max(source.reference());
        // The tail past `most`: noise of σ per entry puts its largest value near
        // σ(√(m − r) + √(n − r)); the whole matrix's noise is near σ(√m + √n).
        let tail = match values.get(most) {
            Some(&top) if most < rows.min(cols) => {
                let (a, b) = ((rows - most) as f64, (cols - most) as f64);
                let sigma = top / (a.sqrt() + b.sqrt());
                TAIL * sigma * ((rows as f64).sqrt() + (cols as f64).sqrt())
            }
            _ => 0.0,
        };
        Spectrum {
            values,
            left,
            right,
            noise: rounding.max(tail),
            shape: (rows, cols),
            rounding,
            tail,
            unit: precision.unit,
        }
    }

    /// The same spectrum where noise of `measured` (a bound on ‖E‖₂ read elsewhere on the update,
    /// such as the first layer's directions that carry no signal) may be on it too.
    pub fn with_measured(mut self, measured: f64) -> Spectrum {
        self.tail = self.tail.max(measured);
        self.noise = self.noise.max(measured);
        self
    }

    /// The same spectrum where the rounding is at least `floor`: a matrix computed from an
    /// update whose own rounding is larger than this matrix's (what is left of an update once
    /// rows are peeled off it carries the whole update's rounding).
    pub fn with_rounding(mut self, floor: f64) -> Spectrum {
        self.rounding = self.rounding.max(floor);
        self.noise = self.rounding.max(self.tail);
        self
    }

    /// Whether the tail shows noise well beyond the rounding (a defence's): then no direction is
    /// read to the precision a proof needs.
    pub fn noisy(&self) -> bool {
        self.tail > NOISY * self.rounding
    }

    /// Singular values above η: G's rank is at least this many.
    pub fn above_noise(&self) -> usize {
        self.values.iter().take_while(|&&v| v > self.noise).count()
    }

    /// Singular values above the noise the tail shows (η where the rank can fill the matrix),
    /// `most` at most: the tail past the rank is rounding alone, and η bounds the rounding from
    /// above for the proofs (its model's worst case measured 2.75 of its 8). A trained network's
    /// quiet rows lie between the two (HI [100, 100] trained 20 epochs, seed 2: 28 of the
    /// second layer's 32 directions above η, all 32 above the tail's noise). No proof reads it.
    pub fn above_tail(&self, most: usize) -> usize {
        let floor = self.tail_noise();
        self.values.iter().take(most).take_while(|&&v| v > floor).count()
    }

    /// The noise the tail shows; η where there is no tail (the rank can fill the matrix).
    fn tail_noise(&self) -> f64 {
        if self.tail > 0.0 { self.tail } else { self.noise }
    }

    /// The same spectrum with η the noise its tail shows (unchanged where there is no tail), so
    /// that `drift` and `drift_map` read how far a row can lie from the directions
    /// `above_tail` counts: a nearness for rows no proof reads, never a bound for one.
    pub fn at_tail(&self) -> Spectrum {
        Spectrum {
            noise: self.tail_noise(),
            ..self.clone()
        }
    }

    /// Leading directions that stand `SEPARATION` times clear of η.
    pub fn determined(&self) -> usize {
        self.values
            .iter()
            .take_while(|&&v| v >= SEPARATION * self.noise && v > 0.0)
            .count()
    }

    pub fn rank(&self) -> Rank {
        match (self.determined(), self.above_noise()) {
            (d, a) if d == a => Rank::Certain(d),
            (determined, above_noise) => Rank::Uncertain {
                determined,
                above_noise,
            },
        }
    }

    /// The leading `r` left singular vectors, [m, r].
    pub fn basis(&self, r: usize) -> DMatrix<f64> {
        self.left.columns(0, r.min(self.left.ncols())).into_owned()
    }

    /// The leading `r` right singular vectors, [n, r] (None where not asked for).
    pub fn right_basis(&self, r: usize) -> Option<DMatrix<f64>> {
        self.right.as_ref().map(|v| v.columns(0, r.min(v.ncols())).into_owned())
    }

    /// How far the leading `r` directions can be from G's (sin of the largest angle, Wedin):
    /// η/σ_r; 1 where σ_r is not above η.
    pub fn angle(&self, r: usize) -> f64 {
        match r.checked_sub(1).and_then(|k| self.values.get(k)) {
            Some(&s) if s > self.noise => (self.noise / s).min(1.0),
            None if r == 0 => 0.0,
            _ => 1.0,
        }
    }

    /// How far a vector `v` of G's span can lie from the leading `r` directions, relative to its
    /// norm: to first order (P⊥ E G⁺ v) at most η‖Σ⁻¹Uᵀv‖/‖v‖, small for a row whose gradient is
    /// strong and large for one whose residual training made tiny; never more than `angle`.
    /// Measured on the batch's own rows (their inputs to the layer) where the rank is the batch's,
    /// the realized drift stayed within 3.1 (second layer) and 0.33 (first) times u‖Ĝ‖_F‖Σ⁻¹Uᵀv‖/‖v‖
    /// over the same networks, against `ROUNDING` = 8 here.
    pub fn drift(&self, r: usize, v: &DVector<f64>) -> f64 {
        self.drift_scaled(r, v, 1.0)
    }

    /// `drift` where the leading `r` directions are cut above G's own: its (r+1)-th singular
    /// value, where above η (an uncertain rank), moves them as noise would, so a row whose
    /// activation has a part along the directions left out lies that much further off. Never
    /// more than `angle`, as `drift`. No bound for a proof: it only says a row fits.
    pub fn drift_cut(&self, r: usize, v: &DVector<f64>) -> f64 {
        let moved = self.values.get(r).map_or(self.noise, |&s| s.max(self.noise));
        let scale = if self.noise > 0.0 { moved / self.noise } else { 1.0 };
        self.drift_scaled(r, v, scale)
    }

    /// `drift` with η scaled by `scale`.
    fn drift_scaled(&self, r: usize, v: &DVector<f64>, scale: f64) -> f64 {
        let norm = v.norm();
        if norm == 0.0 {
            return 0.0;
        }
        // ‖η Σ⁻¹ Uᵀ v‖ over the leading r directions, as `drift_map` gives it, without making it.
        let along = self.left.columns(0, r.min(self.left.ncols())).tr_mul(v);
        let mapped = along
            .iter()
            .zip(&self.values)
            .map(|(u, &s)| (u * self.noise / s.max(f64::MIN_POSITIVE)).powi(2))
            .sum::<f64>()
            .sqrt();
        (mapped * scale / norm).min(self.angle(r))
    }

    /// η Σ⁻¹ Uᵀ over the leading `r` directions, [r, m]: `drift` before its division by the
    /// vector's norm and its cap at `angle`, a bound linear in the vector.
    pub fn drift_map(&self, r: usize) -> DMatrix<f64> {
        let r = r.min(self.left.ncols());
        DMatrix::from_fn(r, self.left.nrows(), |k, i| {
            self.left[(i, k)] * self.noise / self.values[k].max(f64::MIN_POSITIVE)
        })
    }

    /// η per entry, as noise spread evenly over the matrix would give it.
    pub fn noise_per_entry(&self) -> f64 {
        let (m, n) = self.shape;
        self.noise / ((m as f64).sqrt() + (n as f64).sqrt())
    }
}

/// The rank of a matrix of exact values: singular values above `relative` times the largest.
/// For matrices leakscope builds itself in float64 (its own rows' activations, a system it
/// solves), whose error is float64's, not the update's.
pub fn exact_rank(m: &DMatrix<f64>, relative: f64) -> usize {
    let values = m.singular_values();
    let top = values.max();
    if !(top > 0.0) {
        return 0;
    }
    values.iter().filter(|&&v| v > relative * top).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng, rngs::StdRng};

    #[test]
    fn the_precision_is_read_off_the_values() {
        // Values a computation leaves: every mantissa bit used.
        let f32s: Vec<f32> = (1..100).map(|k| (k as f32 * 0.7).sin() / 3.0).collect();
        assert_eq!(Precision::of(f32s.iter().copied()), Precision::F32);
        // bfloat16: the high 16 bits of a float32.
        let bf16: Vec<f32> = f32s.iter().map(|v| f32::from_bits(v.to_bits() & 0xffff_0000)).collect();
        let p = Precision::of(bf16.iter().copied());
        assert_eq!(p.bits, 7);
        assert_eq!(p.unit, 2f64.powi(-8));
        // float16's 10 bits.
        let f16: Vec<f32> = f32s
            .iter()
            .map(|v| f32::from_bits(v.to_bits() & !((1 << 13) - 1)))
            .collect();
        assert_eq!(Precision::of(f16.iter().copied()).bits, 10);
        // Nothing to read: float32.
        assert_eq!(Precision::of([0.0f32, f32::NAN].into_iter()).bits, 23);
    }

    /// A rank-`r` matrix [m, n] with singular values 1, …, `weakest` (geometric), in float32.
    fn low_rank(m: usize, n: usize, r: usize, weakest: f64, seed: u64) -> (DMatrix<f64>, DMatrix<f64>) {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut random = |rows, cols| DMatrix::<f64>::from_fn(rows, cols, |_, _| rng.random_range(-1.0..1.0));
        let u = random(m, r).qr().q();
        let v = random(n, r).qr().q();
        let s = DMatrix::from_diagonal(&DVector::from_fn(r, |k, _| weakest.powf(k as f64 / (r - 1) as f64)));
        let exact = &u * s * v.transpose();
        let stored = exact.map(|x| x as f32 as f64);
        (exact, stored)
    }

    #[test]
    fn a_rank_is_certain_where_the_values_stand_clear_of_the_rounding_and_uncertain_near_it() {
        // Weakest direction 1e-3 of the largest: far above float32's rounding.
        let (_, g) = low_rank(60, 50, 20, 1e-3, 2);
        let s = Spectrum::of(g, Precision::F32, 20, false);
        assert_eq!(s.rank(), Rank::Certain(20));
        assert!(s.angle(20) < 1e-2, "{}", s.angle(20));
        // Weakest 2e-6: above the rounding, not clear of it.
        let (_, g) = low_rank(60, 50, 20, 2e-6, 3);
        let s = Spectrum::of(g, Precision::F32, 20, false);
        assert!(
            matches!(s.rank(), Rank::Uncertain { determined, above_noise } if determined < 20 && above_noise <= 20),
            "{:?} (η {:.1e})",
            s.rank(),
            s.noise
        );
    }

    /// A weakest value between the rounding's bound η and the noise the tail shows: above the
    /// tail, not above η; and with no tail (the rank fills the matrix), η decides.
    #[test]
    fn the_values_above_the_tail_count_what_lies_between_it_and_the_rounding_bound() {
        let (_, g) = low_rank(60, 50, 20, 3e-7, 3);
        let s = Spectrum::of(g.clone(), Precision::F32, 20, false);
        assert!(
            s.tail > 0.0 && s.tail < s.noise,
            "tail {:.1e}, η {:.1e}",
            s.tail,
            s.noise
        );
        assert!(s.above_noise() < 20, "{}", s.above_noise());
        assert_eq!(s.above_tail(20), 20);
        let full = Spectrum::of(g, Precision::F32, 50, false);
        assert_eq!((full.tail, full.above_tail(50)), (0.0, full.above_noise()));
    }

    #[test]
    fn noise_past_the_rank_raises_the_bound() {
        let (_, g) = low_rank(60, 50, 10, 1e-2, 4);
        let mut rng = StdRng::seed_from_u64(5);
        let noisy = g.map(|x| x + 1e-4 * rng.random_range(-1.0..1.0));
        let (clean, noisy) = (
            Spectrum::of(g, Precision::F32, 10, false),
            Spectrum::of(noisy.clone(), Precision::F32, 10, false),
        );
        assert!(noisy.noise > 100.0 * clean.noise, "{} {}", noisy.noise, clean.noise);
        // The bound holds: the noise's own largest value is below it.
        let mut rng = StdRng::seed_from_u64(5);
        let e = DMatrix::<f64>::from_fn(60, 50, |_, _| 1e-4 * rng.random_range(-1.0..1.0));
        assert!(e.singular_values().max() <= noisy.noise, "{:.2e}", noisy.noise);
    }

    #[test]
    fn a_vector_of_the_span_drifts_by_its_weak_part() {
        let (exact, g) = low_rank(40, 30, 8, 1e-5, 6);
        let s = Spectrum::of(g, Precision::F32, 8, false);
        let truth = exact.clone().svd(true, false).u.unwrap();
        // A vector along the strongest direction barely moves; one along the weakest moves most.
        let mut worst: f64 = 0.0;
        for k in 0..8 {
            let v = DVector::from(truth.column(k));
            let basis = s.basis(8);
            let off = (&v - &basis * basis.tr_mul(&v)).norm();
            let bound = s.drift(8, &v);
            assert!(off <= bound, "direction {k}: {off:.2e} > {bound:.2e}");
            worst = worst.max(off);
        }
        assert!(worst > 0.0);
    }
}

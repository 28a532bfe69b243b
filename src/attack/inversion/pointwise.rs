//! The attack's element-wise formulas, written once for both of the forms that run them: a burn
//! tensor (the definition, `attack::inversion`, on any backend) and a host scalar (the fused CPU
//! kernel's loops, `attack::accel::cpu`). Each formula is the same sequence of f32 operations in
//! both, so the kernel cannot drift from the definition in any of them; what differs between the
//! two is only how values are laid out and reduced (matmuls against block indicators there, loops
//! over blocks here), which the step-equality tests hold together.
use std::ops::{Add, Div, Mul, Sub};

use burn::tensor::{Tensor, activation};

use crate::config::Optimiser;

/// What the formulas need of a number: arithmetic with its own kind (tensors broadcast) and a few
/// functions, all with torch's meaning (`sign(0) = 0`).
pub trait Pointwise: Clone + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self> {
    fn times(self, k: f32) -> Self;
    fn plus(self, k: f32) -> Self;
    fn sqrt(self) -> Self;
    fn exp(self) -> Self;
    fn sign(self) -> Self;
    fn sigmoid(self) -> Self;
    fn at_most(self, k: f32) -> Self;
    fn recip(self) -> Self;
}

impl Pointwise for f32 {
    #[inline(always)]
    fn times(self, k: f32) -> f32 {
        self * k
    }
    #[inline(always)]
    fn plus(self, k: f32) -> f32 {
        self + k
    }
    #[inline(always)]
    fn sqrt(self) -> f32 {
        f32::sqrt(self)
    }
    #[inline(always)]
    fn exp(self) -> f32 {
        f32::exp(self)
    }
    #[inline(always)]
    fn sign(self) -> f32 {
        // Branch-free, so the loops it sits in vectorise.
        ((self > 0.0) as i32 - (self < 0.0) as i32) as f32
    }
    #[inline(always)]
    fn sigmoid(self) -> f32 {
        1.0 / (1.0 + f32::exp(-self))
    }
    #[inline(always)]
    fn at_most(self, k: f32) -> f32 {
        // A select rather than f32::min (a libm call per element in wasm32): the same value for
        // every input, NaN included (both give k).
        if self < k { self } else { k }
    }
    #[inline(always)]
    fn recip(self) -> f32 {
        1.0 / self
    }
}

/// The CPU kernel reduces each member's dot products in f64 and evaluates its per-member scalars
/// (`cosine_terms`) there too.
impl Pointwise for f64 {
    fn times(self, k: f32) -> f64 {
        self * k as f64
    }
    fn plus(self, k: f32) -> f64 {
        self + k as f64
    }
    fn sqrt(self) -> f64 {
        f64::sqrt(self)
    }
    fn exp(self) -> f64 {
        f64::exp(self)
    }
    fn sign(self) -> f64 {
        ((self > 0.0) as i32 - (self < 0.0) as i32) as f64
    }
    fn sigmoid(self) -> f64 {
        1.0 / (1.0 + f64::exp(-self))
    }
    fn at_most(self, k: f32) -> f64 {
        self.min(k as f64)
    }
    fn recip(self) -> f64 {
        1.0 / self
    }
}

impl<const D: usize> Pointwise for Tensor<D> {
    fn times(self, k: f32) -> Self {
        self.mul_scalar(k)
    }
    fn plus(self, k: f32) -> Self {
        self.add_scalar(k)
    }
    fn sqrt(self) -> Self {
        Tensor::sqrt(self)
    }
    fn exp(self) -> Self {
        Tensor::exp(self)
    }
    fn sign(self) -> Self {
        Tensor::sign(self)
    }
    fn sigmoid(self) -> Self {
        activation::sigmoid(self)
    }
    fn at_most(self, k: f32) -> Self {
        self.clamp_max(k)
    }
    fn recip(self) -> Self {
        Tensor::recip(self)
    }
}

// ---- relaxation (SPEC §4) -------------------------------------------------------------------------

/// Continuous column: x = (hi − lo)·σ(z) + lo in standardised units. Returns (x, σ(z)).
#[inline(always)]
pub fn sigmoid_relax<T: Pointwise>(z: T, range: T, lo: T) -> (T, T) {
    let s = z.sigmoid();
    (range * s.clone() + lo, s)
}

/// Reverse of `sigmoid_relax`: dL/dz = dL/dx · (hi − lo) · σ(1 − σ).
#[inline(always)]
pub fn sigmoid_relax_reverse<T: Pointwise>(x_bar: T, range: T, s: T) -> T {
    x_bar * range * s.clone() * s.times(-1.0).plus(1.0)
}

/// Categorical column: the logit u = z·std + mean of its block's softmax.
#[inline(always)]
pub fn softmax_logit<T: Pointwise>(z: T, std: T, mean: T) -> T {
    z * std + mean
}

/// Softmax is shift-invariant per block: subtracting the block's mean logit (and capping what is
/// left at 80, where f32's exp is still finite) changes neither the value nor its derivative.
pub const SOFTMAX_CAP: f32 = 80.0;

#[inline(always)]
pub fn softmax_numerator<T: Pointwise>(u: T, block_mean: T) -> T {
    (u - block_mean).at_most(SOFTMAX_CAP).exp()
}

/// A categorical column's relaxed value from its block probability: (p − mean)/std, as p·(1/std).
#[inline(always)]
pub fn softmax_value<T: Pointwise>(p: T, mean: T, inv_std: T) -> T {
    (p - mean) * inv_std
}

/// First half of the block softmax's reverse: t = p · dL/dx / std.
#[inline(always)]
pub fn softmax_reverse_t<T: Pointwise>(p: T, x_bar: T, inv_std: T) -> T {
    p * x_bar * inv_std
}

/// Second half: dL/dz = (t − p · Σ_block t) · std.
#[inline(always)]
pub fn softmax_reverse<T: Pointwise>(t: T, p: T, block_sum_t: T, std: T) -> T {
    (t - p * block_sum_t) * std
}

// ---- objectives -----------------------------------------------------------------------------------

/// Added to ‖g‖² so that an all-zero simulated gradient has a finite cosine.
pub const NORM_FLOOR: f32 = 1e-30;

/// One member's cosine objective from ⟨g, t⟩, ‖g‖² and ‖t‖: (1 − cos, α, β) with
/// d(1 − cos)/dg = α·t + β·g, α = −1/(‖g‖‖t‖), β = cos/‖g‖².
#[inline(always)]
pub fn cosine_terms<T: Pointwise>(dot: T, norm_sq: T, target_norm: f32) -> (T, T, T) {
    let nn = norm_sq.plus(NORM_FLOOR);
    let norm = nn.clone().sqrt();
    let denom = norm.times(target_norm);
    let cos = dot / denom.clone();
    let alpha = denom.recip().times(-1.0);
    let beta = cos.clone() / nn;
    (cos.times(-1.0).plus(1.0), alpha, beta)
}

/// DLG's squared error ‖g − t‖²: its derivative is α·t + β·g with α = −2, β = 2.
pub const SQUARED_ERROR_ALPHA: f32 = -2.0;
pub const SQUARED_ERROR_BETA: f32 = 2.0;

/// G = α·t + β·g, what the reverse of the client's backward pass starts from.
#[inline(always)]
pub fn objective_gradient<T: Pointwise>(target: T, alpha: T, g: T, beta: T) -> T {
    target * alpha + g * beta
}

/// One member's subspace prior (`attack::priors::subspace`) from a = ‖X‖² and c = ⟨X, XP⟩ = ‖XU‖² over its
/// rows X, P = UUᵀ the projector on the span: (w·(1 − c/a), k_x, k_y) with d/dX = k_x·X + k_y·XP,
/// k_x = 2w·c/a², k_y = −2w/a.
#[inline(always)]
pub fn subspace_terms<T: Pointwise>(a: T, c: T, weight: f32) -> (T, T, T) {
    let a = a.plus(NORM_FLOOR);
    let ratio = c / a.clone();
    let ky = a.recip().times(-2.0 * weight);
    let kx = ratio.clone() * ky.clone().times(-1.0);
    (ratio.times(-weight).plus(weight), kx, ky)
}

/// The prior's gradient at one value: k_x·x + k_y·y, y = (XP) at the same place.
#[inline(always)]
pub fn subspace_gradient<T: Pointwise>(x: T, kx: T, y: T, ky: T) -> T {
    x * kx + y * ky
}

// ---- sign-Adam ------------------------------------------------------------------------------------

/// Adam's constants at one step, in f32 as both forms use them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamStep {
    pub sign: bool,
    pub beta1: f32,
    pub beta2: f32,
    /// lr / (1 − β1^t)
    pub step_size: f32,
    /// 1 / (1 − β2^t)
    pub inv_bias2: f32,
    pub eps: f32,
}

impl AdamStep {
    /// The constants of step `step` (1-based).
    pub fn at(opt: &Optimiser, step: usize) -> AdamStep {
        let t = step.min(i32::MAX as usize) as i32;
        AdamStep {
            sign: opt.sign,
            beta1: opt.beta1 as f32,
            beta2: opt.beta2 as f32,
            step_size: (opt.lr / (1.0 - opt.beta1.powi(t))) as f32,
            inv_bias2: (1.0 / (1.0 - opt.beta2.powi(t))) as f32,
            eps: opt.eps as f32,
        }
    }
}

/// One Adam update of (z, m, v) by the gradient g (its sign, with the sign trick).
#[inline(always)]
pub fn adam<T: Pointwise>(z: T, m: T, v: T, g: T, a: &AdamStep) -> (T, T, T) {
    let g = if a.sign { g.sign() } else { g };
    let m = m.times(a.beta1) + g.clone().times(1.0 - a.beta1);
    let v = v.times(a.beta2) + (g.clone() * g).times(1.0 - a.beta2);
    let z = z - m.clone().times(a.step_size) / (v.clone().times(a.inv_bias2).sqrt().plus(a.eps));
    (z, m, v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};

    fn tensor(v: &[f32]) -> Tensor<2> {
        Tensor::from_data(TensorData::new(v.to_vec(), [1, v.len()]), &Device::flex())
    }

    fn host(t: Tensor<2>) -> Vec<f32> {
        t.into_data().try_to_vec::<f32>().unwrap()
    }

    /// The same formula on the two forms gives the same f32 bits, element by element.
    #[test]
    fn scalar_and_tensor_forms_agree_bit_for_bit() {
        let z = [-3.0f32, -0.5, 0.0, 0.25, 2.0, 90.0];
        let g = [1e-3f32, -2.0, 0.0, 5.0, -1e-9, 0.5];
        let m = [0.1f32, -0.2, 0.0, 0.3, 0.0, -0.7];
        let v = [0.5f32, 0.01, 0.0, 1.0, 0.2, 0.9];
        let a = AdamStep::at(&Optimiser::default(), 7);
        let (tz, tm, tv) = adam(tensor(&z), tensor(&m), tensor(&v), tensor(&g), &a);
        let (tz, tm, tv) = (host(tz), host(tm), host(tv));
        for i in 0..z.len() {
            let (hz, hm, hv) = adam(z[i], m[i], v[i], g[i], &a);
            assert_eq!(
                (hz.to_bits(), hm.to_bits(), hv.to_bits()),
                (tz[i].to_bits(), tm[i].to_bits(), tv[i].to_bits())
            );
        }
        let (tx, ts) = sigmoid_relax(tensor(&z), tensor(&v), tensor(&m));
        let (tx, ts) = (host(tx), host(ts));
        for i in 0..z.len() {
            let (hx, hs) = sigmoid_relax(z[i], v[i], m[i]);
            assert!(
                (hx - tx[i]).abs() <= 1e-6 * hx.abs().max(1.0) && (hs - ts[i]).abs() <= 1e-6,
                "{i}"
            );
        }
        let e = host(softmax_numerator(tensor(&z), tensor(&m)));
        for i in 0..z.len() {
            let h = softmax_numerator(z[i], m[i]);
            assert!((h - e[i]).abs() <= 1e-6 * h.abs(), "{i}: {h} vs {}", e[i]);
        }
    }

    #[test]
    fn sign_is_torch_sign_and_the_softmax_cap_keeps_exp_finite() {
        assert_eq!(
            [2.0f32.sign(), (-0.1f32).sign(), 0.0f32.sign(), (-0.0f32).sign()],
            [1.0, -1.0, 0.0, 0.0]
        );
        assert_eq!(host(tensor(&[2.0, -0.1, 0.0]).sign()), vec![1.0, -1.0, 0.0]);
        assert!(softmax_numerator(1e6f32, 0.0).is_finite());
    }

    #[test]
    fn cosine_terms_are_the_derivative_of_one_minus_cos() {
        // g = (3, 4), t = (1, 0): cos = 0.6.
        let (loss, alpha, beta) = cosine_terms(3.0f32, 25.0, 1.0);
        assert!((loss - 0.4).abs() < 1e-6);
        // d(1 − cos)/dg = −t/(|g||t|) + cos·g/|g|² = (−0.2 + 0.072, 0.096).
        let grad = [
            objective_gradient(1.0, alpha, 3.0, beta),
            objective_gradient(0.0, alpha, 4.0, beta),
        ];
        assert!(
            (grad[0] + 0.128).abs() < 1e-6 && (grad[1] - 0.096).abs() < 1e-6,
            "{grad:?}"
        );
    }
}

//! Defences applied by the client before it sends its update (SPEC §3): clip the whole update to
//! L2 norm C, then add Gaussian noise σ·C·N(0, I).
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct Defence {
    /// Clipping norm C; without it no clipping happens and noise is σ·N(0, I).
    pub clip: Option<f64>,
    /// Noise multiplier σ (the reference's "DP" knob: 0.001, 0.01, 0.1).
    pub noise: f64,
}

/// Standard normal sample by Box–Muller.
pub fn normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// L2 norm of a whole update (all parameter tensors as one vector), accumulated in f64.
pub fn l2_norm(update: &[Vec<f32>]) -> f64 {
    update
        .iter()
        .flatten()
        .map(|&v| (v as f64) * (v as f64))
        .sum::<f64>()
        .sqrt()
}

/// Apply the defence in place to the flattened update (all parameter tensors, in any order).
pub fn apply(update: &mut [Vec<f32>], defence: &Defence, seed: u64) {
    let norm = l2_norm(update);
    let mut scale = 1.0;
    if let Some(c) = defence.clip
        && norm > c
    {
        scale = c / norm;
    }
    let sigma = defence.noise * defence.clip.unwrap_or(1.0);
    let mut rng = StdRng::seed_from_u64(seed);
    for v in update.iter_mut().flatten() {
        let noise = if sigma > 0.0 { sigma * normal(&mut rng) } else { 0.0 };
        *v = (*v as f64 * scale + noise) as f32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips_to_norm_and_adds_scaled_noise() {
        let mut u = vec![vec![3.0f32, 4.0]];
        apply(
            &mut u,
            &Defence {
                clip: Some(1.0),
                noise: 0.0,
            },
            0,
        );
        assert!((u[0][0] - 0.6).abs() < 1e-6 && (u[0][1] - 0.8).abs() < 1e-6);
        let mut big = vec![vec![0.0f32; 20000]];
        apply(
            &mut big,
            &Defence {
                clip: Some(2.0),
                noise: 0.1,
            },
            1,
        );
        let var: f64 = big[0].iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / 20000.0;
        assert!((var.sqrt() - 0.2).abs() < 0.01, "noise std {}", var.sqrt());
    }
}

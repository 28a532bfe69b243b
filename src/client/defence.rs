//! Defences applied by the client before it sends its update (SPEC §3, §8): CAFE's fake gradients,
//! then clipping the whole update to L2 norm C and adding Gaussian noise σ·C·N(0, I) (whose (ε, δ)
//! per release `privacy` computes). Averaging over clients (what secure aggregation reveals) is
//! the scenario's (`client::simulate`): it changes which rows the server faces.
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::update::Update;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct Defence {
    /// Clipping norm C; without it no clipping happens and noise is σ·N(0, I).
    pub clip: Option<f64>,
    /// Noise multiplier σ (the reference's "DP" knob: 0.001, 0.01, 0.1).
    pub noise: f64,
    /// CAFE's countermeasure: send a random Gaussian vector rearranged into the true update's
    /// element order, the closest (in sorted values) of this many draws. None: off.
    #[serde(default)]
    pub fake_gradients: Option<usize>,
    /// The δ at which the report states the (ε, δ) of one release.
    #[serde(default = "default_delta")]
    pub delta: f64,
}

fn default_delta() -> f64 {
    super::privacy::DEFAULT_DELTA
}

/// Most fake-gradient draws a client makes (each is a sort of the whole update).
pub const MAX_FAKE_DRAWS: usize = 1000;

impl Defence {
    /// Off: no clipping, no noise, no fake gradients.
    pub fn is_off(&self) -> bool {
        self.clip.is_none() && self.noise == 0.0 && self.fake_gradients.is_none()
    }

    pub fn validate(&self) -> Result<(), String> {
        if !(self.noise >= 0.0 && self.noise.is_finite()) {
            return Err(format!(
                "defence: the noise multiplier {} must be a number ≥ 0",
                self.noise
            ));
        }
        if let Some(c) = self.clip
            && !(c > 0.0 && c.is_finite())
        {
            return Err(format!("defence: the clipping norm {c} must be a positive number"));
        }
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(format!("defence: δ = {} must lie strictly between 0 and 1", self.delta));
        }
        if let Some(k) = self.fake_gradients
            && !(1..=MAX_FAKE_DRAWS).contains(&k)
        {
            return Err(format!(
                "defence: fake gradients take 1 to {MAX_FAKE_DRAWS} draws, not {k}"
            ));
        }
        Ok(())
    }
}

/// Standard normal sample by Box–Muller.
pub fn normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Apply the defence in place to a client's update.
pub fn apply(update: &mut Update, defence: &Defence, seed: u64) {
    if let Some(draws) = defence.fake_gradients {
        fake_gradients(update.values_mut(), draws.max(1), seed ^ 0xFA4E);
    }
    let norm = update.norm();
    let mut scale = 1.0;
    if let Some(c) = defence.clip
        && norm > c
    {
        scale = c / norm;
    }
    let sigma = defence.noise * defence.clip.unwrap_or(1.0);
    let mut rng = StdRng::seed_from_u64(seed);
    for v in update.values_mut() {
        let noise = if sigma > 0.0 { sigma * normal(&mut rng) } else { 0.0 };
        *v = (*v as f64 * scale + noise) as f32;
    }
}

/// CAFE's fake gradients (Jin et al., NeurIPS 2021, §5): draw `draws` vectors of i.i.d. normal
/// values with the update's own standard deviation, keep the one whose sorted values are closest
/// (L2) to the update's sorted values, and send its values rearranged so that their order matches
/// the update's (the largest fake value where the largest true one was, and so on). What the
/// server sees keeps the update's ranking of its elements, not their values.
pub fn fake_gradients<'a>(update: impl IntoIterator<Item = &'a mut f32>, draws: usize, seed: u64) {
    let mut update: Vec<&'a mut f32> = update.into_iter().collect();
    let values: Vec<f32> = update.iter().map(|v| **v).collect();
    let n = values.len();
    if n == 0 {
        return;
    }
    let mean = values.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
    let std = (values.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let sorted_true: Vec<f64> = order.iter().map(|&i| values[i] as f64).collect();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut best: Option<(f64, Vec<f64>)> = None;
    for _ in 0..draws {
        let mut fake: Vec<f64> = (0..n).map(|_| std * normal(&mut rng)).collect();
        fake.sort_by(|a, b| a.total_cmp(b));
        let dist: f64 = fake.iter().zip(&sorted_true).map(|(f, t)| (f - t).powi(2)).sum();
        if best.as_ref().is_none_or(|(d, _)| dist < *d) {
            best = Some((dist, fake));
        }
    }
    let (_, fake) = best.expect("at least one draw");
    let mut out = vec![0f32; n];
    for (rank, &i) in order.iter().enumerate() {
        out[i] = fake[rank] as f32;
    }
    for (v, o) in update.iter_mut().zip(out) {
        **v = o;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_gradients_keep_the_order_and_draw_the_values() {
        let mut rng = StdRng::seed_from_u64(7);
        let truth: Vec<f32> = (0..500).map(|_| normal(&mut rng) as f32 * 0.3 + 0.1).collect();
        let mut u = Update::from_layers(vec![truth[..300].to_vec()], vec![truth[300..].to_vec()]);
        fake_gradients(u.values_mut(), 10, 1);
        let sent: Vec<f32> = u.values().collect();
        assert_ne!(sent, truth);
        let rank = |v: &[f32]| {
            let mut idx: Vec<usize> = (0..v.len()).collect();
            idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
            idx
        };
        assert_eq!(rank(&sent), rank(&truth), "the element order is the update's");
        let norm = |v: &[f32]| v.iter().map(|&v| (v as f64).powi(2)).sum::<f64>().sqrt();
        let (n1, n2) = (norm(&truth), norm(&sent));
        assert!((n2 / n1 - 1.0).abs() < 0.3, "a comparable norm: {n1} vs {n2}");
    }

    #[test]
    fn clips_to_norm_and_adds_scaled_noise() {
        let mut u = Update::from_layers(vec![vec![3.0f32, 4.0]], vec![vec![]]);
        apply(
            &mut u,
            &Defence {
                clip: Some(1.0),
                noise: 0.0,
                fake_gradients: None,
                delta: 1e-5,
            },
            0,
        );
        assert!((u.weight(0)[0] - 0.6).abs() < 1e-6 && (u.weight(0)[1] - 0.8).abs() < 1e-6);
        let mut big = Update::from_layers(vec![vec![0.0f32; 20000]], vec![vec![]]);
        apply(
            &mut big,
            &Defence {
                clip: Some(2.0),
                noise: 0.1,
                fake_gradients: None,
                delta: 1e-5,
            },
            1,
        );
        let var: f64 = big.weight(0).iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / 20000.0;
        assert!((var.sqrt() - 0.2).abs() < 0.01, "noise std {}", var.sqrt());
    }
}

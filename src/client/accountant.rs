//! Privacy over many rounds: the Rényi-DP accountant of the subsampled Gaussian mechanism
//! (Mironov, Talwar & Zhang 2019, "Rényi Differential Privacy of the Sampled Gaussian Mechanism",
//! §3.3), converted to (ε, δ) by Balle et al. 2020 (AISTATS, Thm. 21), over the orders Opacus
//! and TensorFlow Privacy search. A round releases each sampled client's update with noise
//! multiplier σ; a client is sampled with probability q; T rounds compose by adding RDP.
//!
//! Subsampling amplifies privacy only against someone who does not know who was sampled. The
//! server picks the clients, so against the server (leakscope's attacker) a client's data is
//! protected only by the rounds it took part in, composed without amplification: `OverRounds`
//! states both.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::canary::{self, CanaryAudit, CanaryQuery};
use super::privacy::{gaussian_epsilon, log_ndtr};
use crate::error::{Error, Result};

/// The RDP orders searched (Opacus's `RDPAccountant.DEFAULT_ALPHAS`): 1.1 to 10.9 by 0.1, then
/// 12 to 63.
pub fn default_orders() -> Vec<f64> {
    (1..100)
        .map(|x| 1.0 + x as f64 / 10.0)
        .chain((12..64).map(f64::from))
        .collect()
}

/// ln(eˣ + eʸ).
fn log_add(x: f64, y: f64) -> f64 {
    let (lo, hi) = if x < y { (x, y) } else { (y, x) };
    if lo == f64::NEG_INFINITY {
        return hi;
    }
    (lo - hi).exp().ln_1p() + hi
}

/// ln(eˣ − eʸ), for x ≥ y.
fn log_sub(x: f64, y: f64) -> f64 {
    if y == f64::NEG_INFINITY {
        return x;
    }
    if x <= y {
        return f64::NEG_INFINITY;
    }
    let d = (x - y).exp_m1();
    if d.is_infinite() { x } else { d.ln() + y }
}

/// ln erfc(x), accurate far into the right tail.
fn log_erfc(x: f64) -> f64 {
    std::f64::consts::LN_2 + log_ndtr(-x * std::f64::consts::SQRT_2)
}

/// ln A_α for an integer α: a finite binomial sum (§3.3, eq. 3 with integer α).
fn log_a_integer(q: f64, sigma: f64, alpha: u32) -> f64 {
    let a = f64::from(alpha);
    let log_binom = |i: f64| libm::lgamma(a + 1.0) - libm::lgamma(i + 1.0) - libm::lgamma(a - i + 1.0);
    (0..=alpha).map(f64::from).fold(f64::NEG_INFINITY, |acc, i| {
        let term = log_binom(i) + i * q.ln() + (a - i) * (-q).ln_1p() + (i * i - i) / (2.0 * sigma * sigma);
        log_add(acc, term)
    })
}

/// ln A_α for a fractional α: the two halves of the integral split at z₀, each an alternating
/// series summed until its terms fall below e⁻³⁰ (§3.3).
fn log_a_fractional(q: f64, sigma: f64, alpha: f64) -> f64 {
    let (mut a0, mut a1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let z0 = sigma * sigma * (1.0 / q - 1.0).ln() + 0.5;
    // The binomial coefficient C(α, i), carried as ln|C| and its sign.
    let (mut log_coef, mut positive) = (0.0f64, true);
    let mut i = 0.0f64;
    loop {
        let j = alpha - i;
        let log_t0 = log_coef + i * q.ln() + j * (-q).ln_1p();
        let log_t1 = log_coef + j * q.ln() + i * (-q).ln_1p();
        let log_e0 = 0.5f64.ln() + log_erfc((i - z0) / (std::f64::consts::SQRT_2 * sigma));
        let log_e1 = 0.5f64.ln() + log_erfc((z0 - j) / (std::f64::consts::SQRT_2 * sigma));
        let log_s0 = log_t0 + (i * i - i) / (2.0 * sigma * sigma) + log_e0;
        let log_s1 = log_t1 + (j * j - j) / (2.0 * sigma * sigma) + log_e1;
        if positive {
            a0 = log_add(a0, log_s0);
            a1 = log_add(a1, log_s1);
        } else {
            a0 = log_sub(a0, log_s0);
            a1 = log_sub(a1, log_s1);
        }
        if log_s0.max(log_s1) < -30.0 {
            break;
        }
        // C(α, i + 1) = C(α, i) · (α − i) / (i + 1).
        let factor = (alpha - i) / (i + 1.0);
        if factor == 0.0 {
            break;
        }
        positive ^= factor < 0.0;
        log_coef += factor.abs().ln();
        i += 1.0;
    }
    log_add(a0, a1)
}

/// RDP at order α of one round: the Gaussian mechanism with noise multiplier σ, each client
/// sampled with probability q.
pub fn rdp(q: f64, sigma: f64, alpha: f64) -> f64 {
    if q == 0.0 {
        0.0
    } else if sigma == 0.0 || alpha.is_infinite() {
        f64::INFINITY
    } else if q == 1.0 {
        alpha / (2.0 * sigma * sigma)
    } else if alpha.fract() == 0.0 && alpha <= f64::from(u32::MAX) {
        log_a_integer(q, sigma, alpha as u32) / (alpha - 1.0)
    } else {
        log_a_fractional(q, sigma, alpha) / (alpha - 1.0)
    }
}

/// The smallest ε over the orders for RDP values `rdp` (one per order), with the order that
/// gives it (Balle et al. 2020, Thm. 21). Infinite where every order is.
pub fn epsilon_from_rdp(orders: &[f64], rdp: &[f64], delta: f64) -> (f64, f64) {
    orders
        .iter()
        .zip(rdp)
        .map(|(&a, &r)| (r - (delta.ln() + a.ln()) / (a - 1.0) + ((a - 1.0) / a).ln(), a))
        .filter(|(e, _)| !e.is_nan())
        .min_by(|x, y| x.0.total_cmp(&y.0))
        .unwrap_or((f64::INFINITY, f64::NAN))
}

/// ε and its order after `rounds` rounds at sampling rate q and noise multiplier σ.
pub fn epsilon(q: f64, sigma: f64, rounds: u64, delta: f64) -> (f64, f64) {
    let orders = default_orders();
    let total: Vec<f64> = orders.iter().map(|&a| rdp(q, sigma, a) * rounds as f64).collect();
    epsilon_from_rdp(&orders, &total, delta)
}

/// What a client's data is protected by over a run of rounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct OverRounds {
    pub noise_multiplier: f64,
    pub sample_rate: f64,
    #[ts(type = "number")]
    pub rounds: u64,
    pub delta: f64,
    /// ε after every round, by RDP accounting with amplification by sampling (what Opacus and
    /// TensorFlow Privacy report).
    pub epsilon: f64,
    /// The RDP order that gives it.
    pub order: f64,
    /// ε of one round by the same accountant.
    pub per_round: f64,
    /// ε of one release alone, exactly (the analytic Gaussian mechanism, no sampling).
    pub per_release: f64,
    /// The rounds the server expects to see the client in (⌈q·T⌉).
    #[ts(type = "number")]
    pub releases_seen: u64,
    /// ε against the server, which knows whom it sampled: the releases it sees, composed by
    /// RDP without amplification.
    pub epsilon_against_server: f64,
}

/// Most rounds accounted: beyond this, ε is long past meaning anything and the sum loses digits.
pub const MAX_ROUNDS: u64 = 1_000_000_000;

/// What to account, as the npm package's `Leakscope.privacy` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrivacyQuery {
    pub noise_multiplier: f64,
    /// Default 1: every client in every round.
    #[serde(default = "every_round")]
    #[ts(optional)]
    pub sample_rate: Option<f64>,
    #[ts(type = "number")]
    pub rounds: u64,
    /// Default `privacy::DEFAULT_DELTA`.
    #[serde(default)]
    #[ts(optional)]
    pub delta: Option<f64>,
    /// Canaries to run through the same mechanism, for an ε measured beside the accountant's
    /// (`client::canary`; null: none).
    #[serde(default)]
    #[ts(optional)]
    pub canaries: Option<CanaryQuery>,
}

/// What `privacy` answers: the accountant's figures and, where canaries were asked for, the ε
/// they measure on the Gaussian mechanism alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct PrivacyAnswer {
    #[serde(flatten)]
    pub accounted: OverRounds,
    pub canaries: Option<CanaryAudit>,
}

impl PrivacyAnswer {
    /// The figures in words, a line each.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = self.accounted.lines();
        lines.extend(self.canaries.iter().flat_map(CanaryAudit::lines));
        lines
    }
}

fn every_round() -> Option<f64> {
    Some(1.0)
}

impl PrivacyQuery {
    pub fn account(&self) -> Result<PrivacyAnswer> {
        let (sample_rate, delta) = (
            self.sample_rate.unwrap_or(1.0),
            self.delta.unwrap_or(super::privacy::DEFAULT_DELTA),
        );
        let accounted = OverRounds::of(self.noise_multiplier, sample_rate, self.rounds, delta)?;
        let canaries = self
            .canaries
            .map(|q| canary::gaussian_mechanism(&q, self.noise_multiplier, sample_rate, self.rounds, delta))
            .transpose()?;
        Ok(PrivacyAnswer { accounted, canaries })
    }
}

/// A schedule of `rounds` rounds, each client sampled at `sample_rate`, that can be accounted.
pub fn check_schedule(sample_rate: f64, rounds: u64) -> Result<()> {
    if !(sample_rate > 0.0 && sample_rate <= 1.0) {
        return Err(Error::Config(format!(
            "the sampling rate must be in (0, 1], not {sample_rate}"
        )));
    }
    if rounds == 0 || rounds > MAX_ROUNDS {
        return Err(Error::Config(format!(
            "the rounds must be between 1 and {MAX_ROUNDS}, not {rounds}"
        )));
    }
    Ok(())
}

impl OverRounds {
    pub fn of(noise_multiplier: f64, sample_rate: f64, rounds: u64, delta: f64) -> Result<OverRounds> {
        let bad = |what: String| Err(Error::Config(what));
        if !(noise_multiplier.is_finite() && noise_multiplier >= 0.0) {
            return bad(format!(
                "the noise multiplier must be a number ≥ 0, not {noise_multiplier}"
            ));
        }
        check_schedule(sample_rate, rounds)?;
        if !(delta > 0.0 && delta < 1.0) {
            return bad(format!("δ must be in (0, 1), not {delta}"));
        }
        let (epsilon, order) = self::epsilon(sample_rate, noise_multiplier, rounds, delta);
        let releases_seen = ((sample_rate * rounds as f64).ceil() as u64).clamp(1, rounds);
        Ok(OverRounds {
            noise_multiplier,
            sample_rate,
            rounds,
            delta,
            epsilon,
            order,
            per_round: self::epsilon(sample_rate, noise_multiplier, 1, delta).0,
            per_release: gaussian_epsilon(noise_multiplier, delta),
            releases_seen,
            epsilon_against_server: self::epsilon(1.0, noise_multiplier, releases_seen, delta).0,
        })
    }
}

impl OverRounds {
    /// The figures in words, a line each (the CLI's `privacy` prints them).
    pub fn lines(&self) -> Vec<String> {
        let e = crate::report::fmt_epsilon;
        let delta = self.delta;
        vec![
            format!(
                "ε = {} after {} rounds (sampling rate {}, noise multiplier {}, δ = {delta:e}; RDP accounting, \
                 best order {})",
                e(self.epsilon),
                self.rounds,
                self.sample_rate,
                self.noise_multiplier,
                self.order
            ),
            format!(
                "per round: ε = {} with sampling; one release alone: ε = {} (analytic Gaussian mechanism)",
                e(self.per_round),
                e(self.per_release)
            ),
            format!(
                "against the server, which knows whom it sampled: ε = {} over the {} round{} it sees the client in",
                e(self.epsilon_against_server),
                self.releases_seen,
                if self.releases_seen == 1 { "" } else { "s" }
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_sampling_rdp_is_the_gaussian_mechanisms() {
        // At q = 1, RDP is α/(2σ²), and the fractional series reaches it as q → 1.
        assert_eq!(rdp(1.0, 2.0, 8.0), 1.0);
        assert!((rdp(1.0 - 1e-9, 2.0, 8.5) - 8.5 / 8.0).abs() < 1e-6);
        assert!((rdp(1.0 - 1e-9, 2.0, 8.0) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn integer_and_fractional_orders_agree_where_they_meet() {
        // The two sums compute one function of α: near an integer order they agree.
        for (q, sigma) in [(0.01, 1.0), (0.1, 0.8), (0.5, 2.0)] {
            for a in [2.0, 5.0, 20.0] {
                let int = rdp(q, sigma, a);
                let near = rdp(q, sigma, a + 1e-7);
                assert!(
                    (int - near).abs() <= 1e-5 * int.abs().max(1e-12),
                    "q {q} σ {sigma} α {a}: {int} vs {near}"
                );
            }
        }
    }

    #[test]
    fn more_rounds_more_noise_and_fewer_samples_move_epsilon_the_right_way() {
        let e = |q, s, t| epsilon(q, s, t, 1e-5).0;
        assert!(e(0.01, 1.0, 1000) > e(0.01, 1.0, 100));
        assert!(e(0.01, 2.0, 100) < e(0.01, 1.0, 100));
        assert!(e(0.001, 1.0, 100) < e(0.01, 1.0, 100));
        assert_eq!(e(0.01, 0.0, 10), f64::INFINITY);
    }

    #[test]
    fn the_server_sees_the_rounds_it_sampled_without_amplification() {
        let o = OverRounds::of(1.0, 0.01, 1000, 1e-5).unwrap();
        assert_eq!(o.releases_seen, 10);
        // Ten Gaussian releases at σ = 1 are far weaker than the amplified figure.
        assert!(o.epsilon_against_server > 5.0 * o.epsilon, "{o:?}");
        assert!((o.per_release - 4.377178095681137).abs() < 1e-6);
        assert!(OverRounds::of(1.0, 0.0, 10, 1e-5).is_err());
        assert!(OverRounds::of(1.0, 0.5, 0, 1e-5).is_err());
        assert!(OverRounds::of(f64::NAN, 0.5, 10, 1e-5).is_err());
        assert!(OverRounds::of(1.0, 0.5, 10, 1.0).is_err());
    }
}

//! What the clipping + Gaussian noise defence guarantees for one release: the (ε, δ) of the Gaussian
//! mechanism, computed exactly by the analytic Gaussian mechanism (Balle & Wang, ICML 2018, Thm. 8).
//! An update clipped to L2 norm C with noise of standard deviation σ·C has sensitivity C, so its ε
//! depends on the noise multiplier σ and δ alone. This is per release (one update of one client),
//! not a guarantee over a training run, whose releases compose. Under secure aggregation the server
//! sees only the average of K clients' updates: their noises add up, and one client's update is
//! protected as by a single release with multiplier σ√K.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// The δ a guarantee is stated at unless a caller says otherwise.
pub const DEFAULT_DELTA: f64 = 1e-5;

/// The (ε, δ) of one release.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct Privacy {
    /// ε of one release; null when the update is not clipped (unbounded sensitivity: no
    /// guarantee at all).
    pub epsilon: Option<f64>,
    pub delta: f64,
    /// The noise multiplier σ each client adds (noise std / clipping norm).
    pub noise_multiplier: f64,
    /// Clients averaged before the server sees the update; ε is at multiplier σ√clients.
    pub clients: usize,
}

impl Privacy {
    /// The guarantee of one client's update clipped (`clipped`) with noise multiplier `sigma`,
    /// released alone or inside the average of `clients`.
    pub fn of(clipped: bool, sigma: f64, clients: usize, delta: f64) -> Privacy {
        let clients = clients.max(1);
        Privacy {
            epsilon: clipped.then(|| gaussian_epsilon(sigma * (clients as f64).sqrt(), delta)),
            delta,
            noise_multiplier: sigma,
            clients,
        }
    }
}

/// ln Φ(x), the log of the standard normal CDF, accurate far into both tails.
pub(crate) fn log_ndtr(x: f64) -> f64 {
    if x > 5.0 {
        (-0.5 * libm::erfc(x / std::f64::consts::SQRT_2)).ln_1p()
    } else if x > -20.0 {
        (0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)).ln()
    } else {
        // Asymptotic: Φ(x) ≈ φ(x)/|x| · (1 − 1/x² + 3/x⁴ − 15/x⁶ + 105/x⁸).
        let x2 = x * x;
        let series = 1.0 - 1.0 / x2 + 3.0 / (x2 * x2) - 15.0 / (x2 * x2 * x2) + 105.0 / (x2 * x2 * x2 * x2);
        -0.5 * x2 - (-x).ln() - 0.5 * (2.0 * std::f64::consts::PI).ln() + series.ln()
    }
}

/// ln δ(ε) of the Gaussian mechanism with noise multiplier σ (Balle & Wang, eq. 6):
/// δ(ε) = Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ).
fn log_delta(sigma: f64, eps: f64) -> f64 {
    let t = eps * sigma + 1.0 / (2.0 * sigma);
    let x = log_ndtr(1.0 / sigma - t);
    let y = eps + log_ndtr(-t);
    if y <= x {
        x + (-(y - x).exp()).ln_1p()
    } else {
        f64::NEG_INFINITY
    }
}

/// The smallest ε for which the Gaussian mechanism with noise multiplier σ is (ε, δ)-DP.
pub fn gaussian_epsilon(sigma: f64, delta: f64) -> f64 {
    // NaN σ counts as no noise.
    if sigma.is_nan() || sigma <= 0.0 || delta <= 0.0 {
        return f64::INFINITY;
    }
    if sigma.is_infinite() || delta >= 1.0 {
        return 0.0;
    }
    let target = delta.ln();
    if log_delta(sigma, 0.0) <= target {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    while log_delta(sigma, hi) > target {
        lo = hi;
        hi *= 10.0;
        if hi > 1e300 {
            return f64::INFINITY;
        }
    }
    // δ(ε) falls as ε grows: bisect to a relative precision of 1e-12.
    while hi - lo > 1e-12 * hi.max(1e-12) {
        let mid = 0.5 * (lo + hi);
        if log_delta(sigma, mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against Google's dp-accounting 0.6.0 (`dp_accounting.get_epsilon_gaussian(sigma, delta)`,
    /// the same analytic Gaussian mechanism), from the noise scales the reference uses to plain DP.
    #[test]
    fn epsilon_matches_dp_accounting() {
        let published = [
            (0.001, 1e-5, 504263.8929206541),
            (0.01, 1e-5, 5425.50984614743),
            (0.1, 1e-5, 91.81728962466373),
            (0.5, 1e-5, 9.997256146434315),
            (1.0, 1e-5, 4.377178095681137),
            (2.0, 1e-5, 1.9930914044151198),
            (5.0, 1e-5, 0.7255217508577959),
            (10.0, 1e-5, 0.34066936468432835),
            (100.0, 1e-5, 0.027219419814571183),
            (1.0, 1e-3, 3.1386705485829296),
            (0.1, 1e-3, 80.03252609415051),
            (0.01, 1e-7, 5518.958916702379),
        ];
        for (sigma, delta, want) in published {
            let got = gaussian_epsilon(sigma, delta);
            assert!(
                (got - want).abs() <= 1e-6 * want,
                "σ = {sigma}, δ = {delta}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn no_clipping_no_guarantee_and_no_noise_no_privacy() {
        assert_eq!(Privacy::of(false, 1.0, 1, DEFAULT_DELTA).epsilon, None);
        // Four clients' noises add up: one client is protected as by σ = 2.
        let four = Privacy::of(true, 1.0, 4, DEFAULT_DELTA).epsilon.unwrap();
        assert!((four - 1.9930914044151198).abs() < 1e-6);
        assert_eq!(gaussian_epsilon(0.0, DEFAULT_DELTA), f64::INFINITY);
        // At ε = 0 the Gaussian mechanism's δ is its total variation, 2Φ(1/(2σ)) − 1.
        let sigma: f64 = 50.0;
        let tv = 1.0 - libm::erfc(1.0 / (2.0 * sigma) / std::f64::consts::SQRT_2);
        assert_eq!(gaussian_epsilon(sigma, tv * 1.0001), 0.0);
        assert!(gaussian_epsilon(sigma, tv * 0.9999) > 0.0);
    }
}

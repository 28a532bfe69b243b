//! CAFE (Jin et al., "CAFE: Catastrophic Data Leakage in Vertical Federated Learning", NeurIPS
//! 2021) on tables. The server knows which K of the n rows each round used; from the rounds'
//! first-layer gradients (`client::vertical`) it recovers
//! - step I, every row's Vᵢ = ∂ℓᵢ/∂z₁ᵢ from the bias gradients: g_t = (1/K) Σ_{i∈S_t} Vᵢ over the
//!   rounds is a linear least-squares problem in V (the paper's strongly convex step I);
//! - step II, every row's first-layer input xᵢ from the weight gradients given V:
//!   G_t = (1/K) Σ_{i∈S_t} xᵢ Vᵢᵀ, again linear least squares in X;
//! - step III, the table's rows from X: the relaxation's projection (argmax per categorical block,
//!   continuous values clamped to their range and precision), which is where TabLeak's relaxation
//!   ends; with H recovered exactly, matching gradients again adds nothing.
//!
//! The paper runs steps I and II as gradient-descent loops (nested or single); on a table's small
//! first layer both are solved in closed form here, by their normal equations (n × n, shared by
//! every column), which reaches their minimum exactly: at least as strong an attacker. Rows never
//! sampled are left at the ridge solution's 0 (the column means).
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub mod run;
pub mod settings;

use settings::{CafeSettings, MAX_ROUNDS, MAX_ROWS};

use crate::attack::registry::{Attack, Inverts};
use crate::attack::spec::AttackKind;
use crate::client::defence::MAX_FAKE_DRAWS;
use crate::client::vertical::Round;
use crate::config::{AttackConfig, Protocol};
use crate::error::{Error, Result};
use crate::table::Dataset;

impl Attack for CafeSettings {
    fn title(&self) -> String {
        "CAFE".into()
    }

    fn kind(&self) -> AttackKind {
        AttackKind::Cafe
    }

    /// Steps I and II are solved by their normal equations: nothing is optimised.
    fn inversion(&self) -> Option<Inverts> {
        None
    }

    fn validate(&self, config: &AttackConfig, dataset: &Dataset, has_rows: bool) -> Result<()> {
        let fail = |m: String| Err(Error::Config(m));
        if !config.activation.is_relu() {
            return fail(format!(
                "CAFE's parties run a ReLU network (client::vertical); activation {} is not simulated there",
                config.activation.name()
            ));
        }
        if config.head != crate::client::head::Head::Softmax {
            return fail(format!(
                "CAFE's parties run a softmax head (client::vertical); the {} head is not simulated there",
                config.head.name()
            ));
        }
        if self.rows == 0 || (has_rows && self.rows > dataset.n()) || self.rows > MAX_ROWS {
            return fail(format!(
                "CAFE's rows {} must be between 1 and the table's {} (at most {MAX_ROWS})",
                self.rows,
                dataset.n()
            ));
        }
        if config.batch_size > self.rows {
            return fail(format!(
                "CAFE's batch of {} indices must be at most its {} rows",
                config.batch_size, self.rows
            ));
        }
        if self.parties == 0 || self.parties > dataset.features.len() {
            return fail(format!(
                "CAFE's {} parties must be between 1 and the table's {} columns",
                self.parties,
                dataset.features.len()
            ));
        }
        if self.rounds == 0 || self.rounds > MAX_ROUNDS {
            return fail(format!(
                "CAFE's rounds {} must be between 1 and {MAX_ROUNDS}",
                self.rounds
            ));
        }
        if let Some(k) = self.fake_gradients
            && !(1..=MAX_FAKE_DRAWS).contains(&k)
        {
            return fail(format!("fake gradients take 1 to {MAX_FAKE_DRAWS} draws, not {k}"));
        }
        if !matches!(config.protocol, Protocol::Fedsgd)
            || config.defence.is_some_and(|d| d.clip.is_some() || d.noise > 0.0)
            || config.clients > 1
        {
            return fail(
                "CAFE simulates its own vertical rounds: FedAvg, clipping, noise and averaged clients do not apply \
                 (its countermeasure is --fake-gradients)"
                    .into(),
            );
        }
        Ok(())
    }

    fn refuses_received(&self) -> Option<&'static str> {
        Some("CAFE simulates its own vertical rounds; a received update is one horizontal client's")
    }
}

/// CAFE as the report states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CafeReport {
    pub parties: usize,
    /// The parties' rows (all recovered), the rounds observed and the indices per round.
    pub rows: usize,
    pub rounds: usize,
    pub batch: usize,
    /// Rows at least one round sampled.
    pub covered: usize,
    /// Relative error of step I's V and of step II's X against the simulation's own (‖·‖_F).
    pub step1_error: f64,
    pub step2_error: f64,
    /// With fake gradients: the draws, and the training loss over the rows after `rounds` SGD
    /// steps (lr `TRAINING_LR`) with the true gradients and with the fake ones.
    pub fake_gradients: Option<usize>,
    pub training_loss: Option<f64>,
    pub training_loss_fake: Option<f64>,
}

/// SGD step of the training whose loss measures the countermeasure's cost.
pub const TRAINING_LR: f64 = 0.1;

/// Tikhonov weight relative to the normal matrix's mean diagonal: keeps rows the rounds leave
/// undetermined at 0 (their column means) instead of blowing up.
const RIDGE: f64 = 1e-9;

/// Step I: V ([n, h]) from the rounds' bias gradients.
pub fn recover_deltas(rounds: &[Round], n: usize, h: usize) -> Vec<f64> {
    let mut normal = DMatrix::<f64>::zeros(n, n);
    let mut rhs = DMatrix::<f64>::zeros(n, h);
    for r in rounds {
        let k = r.indices.len() as f64;
        for &i in &r.indices {
            for &l in &r.indices {
                normal[(i, l)] += 1.0 / (k * k);
            }
            for j in 0..h {
                rhs[(i, j)] += r.bias[j] / k;
            }
        }
    }
    solve(normal, rhs)
}

/// Step II: X ([n, d]) from the rounds' weight gradients, given V ([n, h]).
pub fn recover_inputs(rounds: &[Round], deltas: &[f64], n: usize, d: usize, h: usize) -> Vec<f64> {
    let v = |i: usize| &deltas[i * h..(i + 1) * h];
    let mut normal = DMatrix::<f64>::zeros(n, n);
    let mut rhs = DMatrix::<f64>::zeros(n, d);
    for r in rounds {
        let k = r.indices.len() as f64;
        for &i in &r.indices {
            for &l in &r.indices {
                let dot: f64 = v(i).iter().zip(v(l)).map(|(a, b)| a * b).sum();
                normal[(i, l)] += dot / (k * k);
            }
            // (G_t Vᵢ)/K: row j of G_t against Vᵢ.
            for j in 0..d {
                let g = &r.weight[j * h..(j + 1) * h];
                rhs[(i, j)] += g.iter().zip(v(i)).map(|(a, b)| a * b).sum::<f64>() / k;
            }
        }
    }
    solve(normal, rhs)
}

/// (N + λI)⁻¹ B, row-major [n, cols].
fn solve(mut normal: DMatrix<f64>, rhs: DMatrix<f64>) -> Vec<f64> {
    let n = normal.nrows();
    let scale = (0..n).map(|i| normal[(i, i)]).sum::<f64>() / n.max(1) as f64;
    for i in 0..n {
        normal[(i, i)] += RIDGE * scale.max(1e-300);
    }
    let solution = match normal.clone().cholesky() {
        Some(c) => c.solve(&rhs),
        None => normal
            .lu()
            .solve(&rhs)
            .unwrap_or_else(|| DMatrix::zeros(rhs.nrows(), rhs.ncols())),
    };
    let mut out = Vec::with_capacity(solution.len());
    for i in 0..solution.nrows() {
        out.extend(solution.row(i).iter());
    }
    out
}

/// Rows that at least one round sampled.
pub fn covered(rounds: &[Round], n: usize) -> Vec<bool> {
    let mut seen = vec![false; n];
    rounds.iter().flat_map(|r| &r.indices).for_each(|&i| seen[i] = true);
    seen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::vertical::simulate;

    const N: usize = 30;
    const D: usize = 6;
    const H: usize = 8;
    const K: usize = 5;

    /// Fixed pseudo-random rows [N, D] and deltas [N, H].
    fn rows_and_deltas() -> (Vec<f64>, Vec<f64>) {
        let x = (0..N * D).map(|v| ((v * 7919 % 101) as f64 - 50.0) / 25.0).collect();
        let deltas = (0..N * H).map(|v| ((v * 104729 % 97) as f64 - 48.0) / 40.0).collect();
        (x, deltas)
    }

    fn worst(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max)
    }

    /// With enough rounds both steps are exact: random rows and deltas, recovered to 1e-8.
    #[test]
    fn enough_rounds_recover_every_row_exactly() {
        let (x, deltas) = rows_and_deltas();
        let rounds = simulate(&x, &deltas, N, D, H, K, 80, 3);
        let v = recover_deltas(&rounds, N, H);
        let off = worst(&v, &deltas);
        assert!(off < 1e-6, "step I off by {off}");
        let off = worst(&recover_inputs(&rounds, &v, N, D, H), &x);
        assert!(off < 1e-5, "step II off by {off}");
    }

    /// Too few rounds leave step I underdetermined: the rows are then not recovered.
    #[test]
    fn too_few_rounds_do_not_pretend() {
        let (x, deltas) = rows_and_deltas();
        let rounds = simulate(&x, &deltas, N, D, H, K, 4, 3);
        let v = recover_deltas(&rounds, N, H);
        assert!(worst(&v, &deltas) > 0.1, "4 rounds of 5 cannot give 30 rows' deltas");
        assert!(covered(&rounds, N).iter().filter(|&&c| c).count() <= 20);
    }
}

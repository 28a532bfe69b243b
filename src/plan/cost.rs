//! What an attack's optimisation costs in arithmetic, counted from the problem's sizes alone: the
//! same figure on any machine and under any load. A budget stated in it (the Flower Mod's
//! `budget_gflop`) gives the same verdict on a quiet and on a busy machine, which a budget in
//! seconds cannot.
use serde::{Deserialize, Serialize};

/// Floating-point operations per row and weight of one gradient (FedSGD) in a member's step: the
/// client's forward pass (2, a multiply and an add), its backward pass to the weights and the
/// inputs (4), and the attack's pass back through both to the dummy rows (12, twice those two).
pub const ONE_GRADIENT: f64 = 18.0;
/// ...and of one local step of FedAvg's training, whose reverse pass also carries the parameters'
/// adjoint back through the step (a Hessian-vector product). Counted, not timed: the engine's CPU
/// kernel spends 2.0–2.6× as long per row and weight on an unrolled local step as on one gradient
/// (`leakscope bench --protocol fedavg` beside `--protocol fedsgd`; docs/results/flower.md).
pub const LOCAL_STEP: f64 = 42.0;
/// ...and of replaying the client's update on rows the attack holds (the forward pass and the
/// backward pass to the weights of every local step, no pass back to the rows): what each
/// candidate of the update's choice of rows and of a reshuffling client's orders costs.
pub const REPLAY: f64 = 6.0;

/// The sizes an attack's optimisation costs by.
#[derive(Debug, Clone, PartialEq)]
pub struct Work {
    /// Layer widths [d, hidden..., outputs].
    pub sizes: Vec<usize>,
    /// Members inverted, at most (the stopping rule may run fewer): 0 where nothing is inverted.
    pub members: usize,
    /// Optimisation steps per member, at most (a member whose loss stops improving stops early).
    pub iterations: usize,
    /// Rows one member step passes through the client: the batch (FedSGD), or every local step's
    /// batch (FedAvg: the rows times the epochs).
    pub rows_per_step: usize,
    /// Operations per row and weight: `ONE_GRADIENT` or `LOCAL_STEP`.
    pub per_row_weight: f64,
    /// Times the ensemble is optimised at most: 2 where it may run again from the rows the update
    /// chose (`assess::refine`).
    pub runs: usize,
    /// Client updates replayed at most to choose rows and orders (`assess::search_bounds`), over
    /// every run; each passes `rows_per_step` rows at `REPLAY` operations per row and weight.
    pub replays: usize,
}

/// An attack's work as a report states it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WorkEstimate {
    /// Billions of floating-point operations the optimisation runs at most.
    pub gflop: f64,
    pub members: usize,
    pub iterations: usize,
    /// Times the ensemble is optimised at most (`Work::runs`).
    #[serde(default = "one")]
    pub runs: usize,
    /// Client updates replayed at most to choose rows and orders (`Work::replays`).
    #[serde(default)]
    pub replays: usize,
}

fn one() -> usize {
    1
}

impl Work {
    /// Weights of the client's network (the biases are a rounding error beside them).
    fn weights(&self) -> f64 {
        self.sizes.windows(2).map(|w| w[0] as f64 * w[1] as f64).sum()
    }

    /// Floating-point operations of one member's step.
    pub fn flops_per_member_step(&self) -> f64 {
        self.per_row_weight * self.weights() * self.rows_per_step as f64
    }

    /// The whole optimisation at most, every run of it, and the replays of the client's update
    /// that choose rows and orders, in billions of floating-point operations. The proofs, the
    /// matching and the pooling are not counted: they are bounded by the rows, not by the steps.
    pub fn gflop(&self) -> f64 {
        let optimisation = self.flops_per_member_step() * (self.members * self.iterations * self.runs) as f64;
        let replays = REPLAY * self.weights() * (self.rows_per_step * self.replays) as f64;
        (optimisation + replays) / 1e9
    }

    pub fn estimate(&self) -> WorkEstimate {
        WorkEstimate {
            gflop: self.gflop(),
            members: self.members,
            iterations: self.iterations,
            runs: self.runs,
            replays: self.replays,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_grows_with_every_size_it_is_counted_from() {
        let base = Work {
            sizes: vec![100, 32, 32, 2],
            members: 15,
            iterations: 1500,
            rows_per_step: 32,
            per_row_weight: ONE_GRADIENT,
            runs: 1,
            replays: 0,
        };
        // 18 × (3200 + 1024 + 64) weights × 32 rows × 15 × 1500.
        assert!((base.gflop() - 18.0 * 4288.0 * 32.0 * 15.0 * 1500.0 / 1e9).abs() < 1e-9);
        let double = |w: Work| (w.gflop() / base.gflop() - 2.0).abs() < 1e-12;
        assert!(double(Work {
            members: 30,
            ..base.clone()
        }));
        assert!(double(Work {
            iterations: 3000,
            ..base.clone()
        }));
        assert!(double(Work {
            rows_per_step: 64,
            ..base.clone()
        }));
        assert!(double(Work {
            runs: 2,
            ..base.clone()
        }));
        // A replay costs a third of a member's step (6 of 18 operations per row and weight).
        let replayed = Work {
            replays: 3,
            ..base.clone()
        };
        assert!((replayed.gflop() - base.gflop() - base.flops_per_member_step() / 1e9).abs() < 1e-9);
        let nothing = Work {
            members: 0,
            ..base.clone()
        };
        assert_eq!(nothing.gflop(), 0.0);
    }
}

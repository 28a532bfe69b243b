//! FedAvg's client (SPEC §3): plain SGD over its n rows in a fixed order, E local epochs of local
//! batches of b rows (the last batch of an epoch is the rest when b does not divide n), no
//! reshuffle; it sends θ0 − θE. Written on tensors, batched over members, so the attacker can
//! simulate it on dummy rows and differentiate it (`attack::inversion::second_order::reverse_local_training`).
use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::gradient::{ParamGrads, Tape, param_grads, split_targets};
use super::network::Net;

/// A FedAvg client's local training.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct LocalTraining {
    pub epochs: usize,
    /// Rows per local step.
    pub local_batch: usize,
    /// Plain SGD's step.
    pub lr: f64,
}

impl Default for LocalTraining {
    /// The reference's client: 1 epoch over its rows in one batch of up to 32, lr 0.01.
    fn default() -> Self {
        LocalTraining {
            epochs: 1,
            local_batch: 32,
            lr: 0.01,
        }
    }
}

/// One local SGD step: which epoch, and which of the client's n rows (a contiguous range).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalStep {
    pub epoch: usize,
    pub first: usize,
    pub rows: usize,
}

impl LocalTraining {
    pub fn steps_per_epoch(&self, n: usize) -> usize {
        n.div_ceil(self.local_batch.max(1))
    }

    /// The local steps in order, over a client of `n` rows.
    pub fn schedule(&self, n: usize) -> Vec<LocalStep> {
        let b = self.local_batch.max(1);
        (0..self.epochs)
            .flat_map(|epoch| {
                (0..n.div_ceil(b)).map(move |s| LocalStep {
                    epoch,
                    first: s * b,
                    rows: b.min(n - s * b),
                })
            })
            .collect()
    }
}

/// One local step as taken: the parameters it started from and the tape of their gradient.
pub struct Taken {
    pub step: LocalStep,
    pub net: Net,
    pub tape: Tape,
}

/// Local training from `net` on rows `epochs[e]` ([N, n, d] for epoch e; one entry shared by every
/// epoch when the client's rows are the same each epoch) with labels `onehot` ([1 or N, n, C]);
/// `onehot` None: each row carries its target as its last column (`gradient::split_targets`).
/// Returns θ0 − θE per member, and every step taken (for the reverse) when `keep` is set.
pub fn local_training(
    net: &Net,
    epochs: &[Tensor<3>],
    onehot: Option<&Tensor<3>>,
    training: &LocalTraining,
    keep: bool,
) -> (ParamGrads, Vec<Taken>) {
    let [n_members, n, d] = epochs[0].dims();
    let mut theta = net.clone();
    let mut taken = Vec::new();
    for step in training.schedule(n) {
        let rows = step.first..step.first + step.rows;
        let x = epochs[step.epoch.min(epochs.len() - 1)]
            .clone()
            .slice([0..n_members, rows.clone(), 0..d]);
        let (x, y) = match onehot {
            Some(onehot) => {
                let [labels, _, classes] = onehot.dims();
                (x, onehot.clone().slice([0..labels, rows, 0..classes]))
            }
            None => split_targets(x),
        };
        let (g, tape) = param_grads(&theta, &x, &y);
        let next = theta.sgd_step(&g, training.lr);
        if keep {
            taken.push(Taken { step, net: theta, tape });
        }
        theta = next;
    }
    let diff = |a: &Tensor<3>, b: &Tensor<3>| a.clone() - b.clone();
    let update = ParamGrads {
        weights: net
            .weights
            .iter()
            .zip(&theta.weights)
            .map(|(a, b)| diff(a, b))
            .collect(),
        biases: net.biases.iter().zip(&theta.biases).map(|(a, b)| diff(a, b)).collect(),
    };
    (update, taken)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_walks_the_rows_in_order_every_epoch() {
        let t = LocalTraining {
            epochs: 2,
            local_batch: 3,
            lr: 0.01,
        };
        let s = t.schedule(7);
        assert_eq!(t.steps_per_epoch(7), 3);
        assert_eq!(s.len(), 6);
        assert_eq!(
            s[..3],
            [
                LocalStep {
                    epoch: 0,
                    first: 0,
                    rows: 3
                },
                LocalStep {
                    epoch: 0,
                    first: 3,
                    rows: 3
                },
                LocalStep {
                    epoch: 0,
                    first: 6,
                    rows: 1
                }
            ]
        );
        assert_eq!(
            s[3],
            LocalStep {
                epoch: 1,
                first: 0,
                rows: 3
            }
        );
    }
}

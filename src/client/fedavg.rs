//! FedAvg's client (SPEC §3): E local epochs over its n rows in local batches of b rows (the last
//! batch of an epoch is the rest when b does not divide n), stepped by its optimiser
//! (`client::optimizer`: plain SGD by default); it sends θ0 − θE. Its rows come in the same order
//! every epoch, or reshuffled every epoch (`LocalOrder::Shuffled`, as `DataLoader(shuffle=True)`).
//! Written on tensors, batched over members, so the attacker can simulate it on dummy rows and
//! differentiate it (`attack::inversion::second_order::reverse_local_training`).
use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::gradient::{ParamGrads, Tape, param_grads, split_targets};
use super::network::Net;
use super::optimizer::{self, ClientOptimizer, Kept};

/// A FedAvg client's local training.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct LocalTraining {
    pub epochs: usize,
    /// Rows per local step.
    pub local_batch: usize,
    /// The optimiser's step size.
    pub lr: f64,
    /// The optimiser (plain SGD unless stated).
    #[serde(default)]
    pub optimizer: ClientOptimizer,
    /// The order the client's rows come in, epoch after epoch.
    #[serde(default)]
    pub order: LocalOrder,
}

/// The order of a client's rows in its local epochs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum LocalOrder {
    /// The same order every epoch, the one the rows are listed in.
    #[default]
    Given,
    /// Reshuffled every epoch (`DataLoader(shuffle=True)`): the server does not know how, so the
    /// attack gives every epoch rows of its own (matched afterwards), never the order.
    Shuffled,
}

impl LocalOrder {
    pub fn name(self) -> &'static str {
        match self {
            LocalOrder::Given => "given",
            LocalOrder::Shuffled => "shuffled",
        }
    }
}

impl Default for LocalTraining {
    /// The reference's client: 1 epoch over its rows in one batch of up to 32, lr 0.01.
    fn default() -> Self {
        LocalTraining {
            epochs: 1,
            local_batch: 32,
            lr: 0.01,
            optimizer: ClientOptimizer::default(),
            order: LocalOrder::Given,
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
    /// Plain SGD, `epochs` epochs of batches of `local_batch` rows in their given order.
    pub fn sgd(epochs: usize, local_batch: usize, lr: f64) -> LocalTraining {
        LocalTraining {
            epochs,
            local_batch,
            lr,
            ..LocalTraining::default()
        }
    }

    /// The recipe in words: "5 epochs of batches of 8, SGD (lr 0.01, momentum 0.9), rows reshuffled".
    pub fn describe(&self) -> String {
        let epochs = match self.epochs {
            1 => "1 epoch".to_string(),
            e => format!("{e} epochs"),
        };
        let order = match self.order {
            LocalOrder::Given => "rows in order",
            LocalOrder::Shuffled => "rows reshuffled every epoch",
        };
        format!(
            "{epochs} of batches of {}, {}, {order}",
            self.local_batch,
            self.optimizer.describe(self.lr)
        )
    }

    /// Whether a server can replay a client of `n` rows from rows laid out by position: its rows
    /// come in the given order, or in one batch an epoch (whose order changes nothing).
    pub fn order_known(&self, n: usize) -> bool {
        self.order == LocalOrder::Given || self.steps_per_epoch(n) == 1
    }

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
    /// What the optimiser's reverse needs.
    pub kept: Kept,
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
    local_training_in_order(net, epochs, onehot, training, None, keep)
}

/// A client that reshuffles its `n` rows every epoch: the order of each of `epochs` epochs.
pub fn shuffled_orders(n: usize, epochs: usize, seed: u64) -> Vec<Vec<usize>> {
    use rand::{SeedableRng, rngs::StdRng, seq::SliceRandom};
    let mut rng = StdRng::seed_from_u64(seed);
    (0..epochs)
        .map(|_| {
            let mut order: Vec<usize> = (0..n).collect();
            order.shuffle(&mut rng);
            order
        })
        .collect()
}

/// Rows `order[k]` of `x` ([N, n, w]) along dim 1, in that order.
pub fn gather_rows(x: &Tensor<3>, order: &[usize]) -> Tensor<3> {
    let [n, _, w] = x.dims();
    Tensor::cat(
        order.iter().map(|&i| x.clone().slice([0..n, i..i + 1, 0..w])).collect(),
        1,
    )
}

/// `local_training` where epoch e visits the rows in `orders[e]` (a permutation of 0..n; rows
/// and labels move together): a shuffled client whose orders are known, as the simulated client
/// and the golden vectors know them.
pub fn local_training_in_order(
    net: &Net,
    epochs: &[Tensor<3>],
    onehot: Option<&Tensor<3>>,
    training: &LocalTraining,
    orders: Option<&[Vec<usize>]>,
    keep: bool,
) -> (ParamGrads, Vec<Taken>) {
    let n = epochs[0].dims()[1];
    let mut theta = net.clone();
    let mut state = optimizer::State::default();
    let mut taken = Vec::new();
    // Each epoch's rows and labels in the order it visits them.
    let mut visited: Option<(usize, Tensor<3>, Option<Tensor<3>>)> = None;
    for step in training.schedule(n) {
        if visited.as_ref().map(|v| v.0) != Some(step.epoch) {
            let x = epochs[step.epoch.min(epochs.len() - 1)].clone();
            let y = onehot.cloned();
            visited = Some(match orders.map(|o| &o[step.epoch]) {
                Some(order) => (step.epoch, gather_rows(&x, order), y.map(|y| gather_rows(&y, order))),
                None => (step.epoch, x, y),
            });
        }
        let (_, x, y) = visited.as_ref().expect("set above");
        let rows = step.first..step.first + step.rows;
        let [members, _, d] = x.dims();
        let x = x.clone().slice([0..members, rows.clone(), 0..d]);
        let (x, y) = match y {
            Some(y) => {
                let [labels, _, classes] = y.dims();
                (x, y.clone().slice([0..labels, rows, 0..classes]))
            }
            None => split_targets(x),
        };
        let (g, tape) = param_grads(&theta, &x, &y);
        let (next, kept) = optimizer::step(&training.optimizer, training.lr, &mut state, &theta, &g, keep);
        if keep {
            taken.push(Taken {
                step,
                net: theta,
                tape,
                kept,
            });
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
        let t = LocalTraining::sgd(2, 3, 0.01);
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

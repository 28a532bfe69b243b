//! The attacker's second derivative: the reverse of the client's explicit backward pass.
//!
//! burn's autodiff is first-order, and inversion needs d/dx of a parameter gradient. Rather than
//! differentiate a tape of the explicit backward, its reverse is derived by hand below (a handful
//! of matmuls per layer), which keeps an attack step free of autodiff bookkeeping on every backend.
//! Golden vectors pin it down (tests/golden.rs).
use burn::tensor::Tensor;

use crate::client::fedavg::{LocalTraining, Taken, gather_rows};
use crate::client::gradient::{ParamGrads, Tape};
use crate::client::network::Net;
use crate::client::optimizer::{Adjoint, reverse_step};

/// What `reverse` returns: dL/dx [N, B, d], dL/dθ per member where asked, and dL/dy
/// [N, B, outputs] for the targets (what a regression's reconstructed label moves by).
pub struct Reversed {
    pub x: Tensor<3>,
    pub params: Option<ParamGrads>,
    pub targets: Tensor<3>,
}

/// Reverse of `param_grads`: given G = dL/d(parameter gradient) per member, returns dL/dx as
/// [N, B, d], dL/dy, and, with `with_params`, dL/dθ per member (what FedAvg's unrolled local training
/// needs to carry the adjoint from one local step to the one before). ReLU's mask m = σ′(a) is
/// piecewise constant and carries no derivative; a smooth activation's does: m̄ = δ̄_{l-1} ⊙ (δ_l W_lᵀ)
/// reaches a_{l-1} as m̄ ⊙ σ″(a_{l-1}).
///
/// In the explicit backward, θ enters three ways: the forward products a_l = h_{l-1} W_l + b_l, the
/// backward product δ_{l-1} = (δ_l W_lᵀ) ⊙ m, and (through both) the rows of the gradient itself.
// The layers are walked by index: each step reads layer l of several parallel lists.
#[allow(clippy::needless_range_loop)]
pub fn reverse(net: &Net, tape: &Tape, g: &ParamGrads, with_params: bool) -> Reversed {
    let layers = net.layers();
    let mut w_bar: Vec<Option<Tensor<3>>> = vec![None; layers];
    let mut b_bar: Vec<Option<Tensor<3>>> = vec![None; layers];
    // dL/dh_{l-1} collected per layer input; dL/dδ_l built from layer 0 upwards, because δ_{l-1}
    // was computed from δ_l.
    let mut h_bar: Vec<Tensor<3>> = Vec::with_capacity(layers);
    let mut delta_bar: Option<Tensor<3>> = None;
    // dL/da_{l-1} through σ′(a_{l-1}) in the backward product, for smooth activations.
    let mut through_mask: Vec<Option<Tensor<3>>> = vec![None; layers];
    for l in 0..layers {
        let gw = &g.weights[l];
        h_bar.push(tape.deltas[l].clone().matmul(gw.clone().swap_dims(1, 2)));
        let mut db = tape.inputs[l].clone().matmul(gw.clone()) + g.biases[l].clone();
        if let Some(prev) = delta_bar.take() {
            if let Some(c) = &tape.curvature[l - 1] {
                through_mask[l - 1] = Some(prev.clone() * c.clone());
            }
            let e_bar = prev * tape.masks[l - 1].clone();
            if with_params {
                // From δ_{l-1} = (δ_l W_lᵀ) ⊙ m: dL/dW_l += (dL/dδ_{l-1} ⊙ m)ᵀ δ_l.
                w_bar[l] = Some(e_bar.clone().swap_dims(1, 2).matmul(tape.deltas[l].clone()));
            }
            db = db + e_bar.matmul(net.weights[l].clone());
        }
        delta_bar = Some(db);
    }
    // δ_{L-1} = s·(p(a) − y) / B  →  dL/da through the head's Jacobian; dL/dy = −dL/dp.
    let p_bar = delta_bar.unwrap().mul_scalar(net.head.scale() / tape.b as f64);
    let targets = p_bar.clone().neg();
    let mut a_bar = net.head.reverse(tape.probs.clone(), p_bar);
    let mut x_bar = None;
    for l in (0..layers).rev() {
        if with_params {
            // From a_l = h_{l-1} W_l + b_l.
            let forward = tape.inputs[l].clone().swap_dims(1, 2).matmul(a_bar.clone());
            w_bar[l] = Some(match w_bar[l].take() {
                Some(w) => w + forward,
                None => forward,
            });
            b_bar[l] = Some(a_bar.clone().sum_dim(1));
        }
        let total = h_bar.pop().unwrap() + a_bar.clone().matmul(net.weights[l].clone().swap_dims(1, 2));
        if l == 0 {
            x_bar = Some(total);
            break;
        }
        a_bar = total * tape.masks[l - 1].clone();
        if let Some(extra) = through_mask[l - 1].take() {
            a_bar = a_bar + extra;
        }
    }
    let params = with_params.then(|| ParamGrads {
        weights: w_bar.into_iter().map(Option::unwrap).collect(),
        biases: b_bar.into_iter().map(Option::unwrap).collect(),
    });
    Reversed {
        x: x_bar.expect("a network has layers"),
        params,
        targets,
    }
}

/// Reverse of `client::fedavg::local_training` (back-propagation through the client's unrolled
/// training): given dL/d(θ0 − θE) per member, dL/dx for each entry of the rows it was given
/// ([N, n, d] each; an entry shared by several epochs gets the sum of theirs). `orders`: the
/// orders the epochs visited the rows in (`local_training_in_order`), None for the given order.
///
/// θ_{t+1} = θ_t − lr·s_t(g_t(θ_t, x_t), state): the optimiser's reverse (`optimizer::reverse_step`)
/// turns dL/dθ_{t+1} into the adjoint of g_t (−lr·dL/dθ_{t+1} for plain SGD), which reaches x_t
/// through `reverse` and θ_t through `reverse`'s parameter part, on top of θ's direct paths.
/// With `targets_in_rows` each row carries its target as its last column (`local_training` with no
/// labels), and its dL/dx carries dL/dy there.
pub fn reverse_local_training(
    taken: &[Taken],
    update_bar: &ParamGrads,
    training: &LocalTraining,
    orders: Option<&[Vec<usize>]>,
    entries: usize,
    targets_in_rows: bool,
) -> Vec<Tensor<3>> {
    // θ0 − θE: dL/dθE = −dL/d(update).
    let mut adjoint = Adjoint::new(update_bar.scale(-1.0));
    let mut parts: Vec<Vec<(usize, usize, Tensor<3>)>> = vec![Vec::new(); entries];
    for (t, step) in taken.iter().enumerate().rev() {
        let g_bar = reverse_step(&training.optimizer, training.lr, t + 1, &step.kept, &mut adjoint);
        let reversed = reverse(&step.net, &step.tape, &g_bar, t > 0);
        let x_bar = match targets_in_rows {
            true => Tensor::cat(vec![reversed.x, reversed.targets], 2),
            false => reversed.x,
        };
        parts[step.step.epoch.min(entries - 1)].push((step.step.epoch, step.step.first, x_bar));
        if let Some(p) = reversed.params {
            adjoint.theta = adjoint.theta.add(&p);
        }
    }
    // Per epoch, the steps cover the rows once in the order visited: concatenate, put back in
    // the rows' own order; epochs sharing the entry add up.
    let in_place = |epoch: usize, rows: Vec<Tensor<3>>| {
        let whole = Tensor::cat(rows, 1);
        match orders.map(|o| &o[epoch]) {
            Some(order) => {
                let mut inverse = vec![0; order.len()];
                for (k, &i) in order.iter().enumerate() {
                    inverse[i] = k;
                }
                gather_rows(&whole, &inverse)
            }
            None => whole,
        }
    };
    parts
        .into_iter()
        .map(|mut entry| {
            entry.sort_by_key(|&(epoch, first, _)| (epoch, first));
            let mut total: Option<Tensor<3>> = None;
            let mut epoch_rows: Vec<Tensor<3>> = Vec::new();
            let mut current = entry.first().map(|e| e.0);
            for (epoch, _, x_bar) in entry {
                if Some(epoch) != current {
                    let whole = in_place(current.expect("set"), std::mem::take(&mut epoch_rows));
                    total = Some(total.map_or(whole.clone(), |t| t + whole));
                    current = Some(epoch);
                }
                epoch_rows.push(x_bar);
            }
            let whole = in_place(current.expect("an entry has steps"), epoch_rows);
            total.map_or(whole.clone(), |t| t + whole)
        })
        .collect()
}

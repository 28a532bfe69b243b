//! The attacker's second derivative: the reverse of the client's explicit backward pass.
//!
//! burn's autodiff is first-order, and inversion needs d/dx of a parameter gradient. Rather than
//! differentiate a tape of the explicit backward, its reverse is derived by hand below (a handful
//! of matmuls per layer), which keeps an attack step free of autodiff bookkeeping on every backend.
//! Golden vectors pin it down (tests/golden.rs).
use burn::tensor::Tensor;

use crate::client::gradient::{ParamGrads, Tape, fold, unfold};
use crate::client::network::Net;

/// Reverse of `param_grads`: given G = dL/d(parameter gradient) per member, returns dL/dx as
/// [N, B, d]. The ReLU masks are piecewise constant and carry no derivative.
pub fn input_vjp(net: &Net, tape: &Tape, g: &ParamGrads) -> Tensor<3> {
    let layers = net.layers();
    let n = tape.n;
    // dL/dh_{l-1} collected per layer input; dL/dδ_l built from layer 0 upwards, because δ_{l-1}
    // was computed from δ_l.
    let mut h_bar: Vec<Tensor<3>> = Vec::with_capacity(layers);
    let mut delta_bar: Option<Tensor<3>> = None;
    for l in 0..layers {
        let gw = &g.weights[l];
        h_bar.push(tape.deltas[l].clone().matmul(gw.clone().swap_dims(1, 2)));
        let mut db = tape.inputs[l].clone().matmul(gw.clone()) + g.biases[l].clone();
        if let Some(prev) = delta_bar.take() {
            let e_bar = prev * tape.masks[l - 1].clone();
            db = db + unfold(fold(&e_bar).matmul(net.weights[l].clone()), n);
        }
        delta_bar = Some(db);
    }
    // δ_{L-1} = (softmax(a) − y) / B  →  dL/da = s ⊙ (s̄ − Σ s̄ ⊙ s).
    let s_bar = delta_bar.unwrap().div_scalar(tape.b as f64);
    let s = tape.probs.clone();
    let inner = (s_bar.clone() * s.clone()).sum_dim(2);
    let mut a_bar = s * (s_bar - inner);
    for l in (0..layers).rev() {
        let total = h_bar.pop().unwrap() + unfold(fold(&a_bar).matmul(net.weights[l].clone().transpose()), n);
        if l == 0 {
            return total;
        }
        a_bar = total * tape.masks[l - 1].clone();
    }
    unreachable!("a network has layers")
}

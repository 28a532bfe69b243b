//! The client's parameter gradient written out as tensor ops, batched over a leading ensemble
//! dimension N, and its reverse (vector–Jacobian product back to the input rows).
//!
//! burn's autodiff is first-order, and inversion needs d/dx of a parameter gradient. Rather than
//! differentiate a tape of the explicit backward, the reverse of that backward is derived by hand
//! below (it is a handful of matmuls per layer), which keeps one attack step free of autodiff
//! bookkeeping on every backend. Golden vectors pin it down (tests/golden.rs).
//!
//! Shapes: N members, B rows, layer l maps in_l → out_l. Matmuls with the shared weights fold the
//! members into one [N·B, in] × [in, out] product; per-member products are batched [N, ·, ·].
use burn::tensor::{Tensor, activation};

use super::network::Net;

/// Per-member parameter gradients: W_l as [N, in, out], b_l as [N, 1, out].
#[derive(Debug, Clone)]
pub struct ParamGrads {
    pub weights: Vec<Tensor<3>>,
    pub biases: Vec<Tensor<3>>,
}

impl ParamGrads {
    /// Per-member sum over all parameters of f(self_k, other_k), as [N, 1].
    fn reduce(&self, other: &ParamGrads, f: impl Fn(Tensor<3>, Tensor<3>) -> Tensor<3>) -> Tensor<2> {
        let mut total: Option<Tensor<2>> = None;
        for (a, b) in self.tensors().zip(other.tensors()) {
            let [n, r, c] = a.dims();
            let s = f(a.clone(), b.clone()).reshape([n, r * c]).sum_dim(1);
            total = Some(match total {
                Some(t) => t + s,
                None => s,
            });
        }
        total.expect("a network has layers")
    }

    pub fn tensors(&self) -> impl Iterator<Item = &Tensor<3>> {
        self.weights.iter().chain(&self.biases)
    }

    /// Per-member ⟨self, other⟩ as [N, 1]; `other` may have N = 1 (broadcast).
    pub fn dot(&self, other: &ParamGrads) -> Tensor<2> {
        self.reduce(other, |a, b| a * b)
    }

    /// Per-member squared L2 norm as [N, 1].
    pub fn norm_sq(&self) -> Tensor<2> {
        self.reduce(self, |a, _| a.clone() * a)
    }

    /// Per-member Σ (self − other)² as [N, 1].
    pub fn dist_sq(&self, other: &ParamGrads) -> Tensor<2> {
        self.reduce(other, |a, b| {
            let e = a - b;
            e.clone() * e
        })
    }

    /// α ⊙ self + β ⊙ other, with α, β of shape [N, 1, 1].
    pub fn combine(&self, alpha: &Tensor<3>, other: &ParamGrads, beta: &Tensor<3>) -> ParamGrads {
        let mix = |a: &Tensor<3>, b: &Tensor<3>| a.clone() * alpha.clone() + b.clone() * beta.clone();
        ParamGrads {
            weights: self
                .weights
                .iter()
                .zip(&other.weights)
                .map(|(a, b)| mix(a, b))
                .collect(),
            biases: self.biases.iter().zip(&other.biases).map(|(a, b)| mix(a, b)).collect(),
        }
    }
}

/// What the reverse pass needs from the forward and backward passes.
pub struct Tape {
    n: usize,
    b: usize,
    /// Layer inputs h_{l-1} as [N, B, in_l] (h_{-1} = x).
    inputs: Vec<Tensor<3>>,
    /// ReLU masks of hidden layers as 0/1 floats [N, B, out_l].
    masks: Vec<Tensor<3>>,
    /// Backward signals δ_l = dL/da_l, [N, B, out_l].
    deltas: Vec<Tensor<3>>,
    /// Softmax of the logits, [N, B, C].
    probs: Tensor<3>,
}

fn fold(t: &Tensor<3>) -> Tensor<2> {
    let [n, b, k] = t.dims();
    t.clone().reshape([n * b, k])
}

fn unfold(t: Tensor<2>, n: usize) -> Tensor<3> {
    let [nb, k] = t.dims();
    t.reshape([n, nb / n, k])
}

/// Gradient of the mean cross-entropy over each member's B rows w.r.t. every parameter.
/// `x` is [N, B, d]; `onehot` is the labels as [N·B, C] (or [B, C] when N = 1).
pub fn param_grads(net: &Net, x: &Tensor<3>, onehot: &Tensor<2>) -> (ParamGrads, Tape) {
    let [n, b, _] = x.dims();
    let layers = net.layers();
    let mut inputs = Vec::with_capacity(layers);
    let mut masks = Vec::with_capacity(layers - 1);
    let mut h = x.clone();
    let mut logits = None;
    for l in 0..layers {
        let a = fold(&h).matmul(net.weights[l].clone()) + net.biases[l].clone();
        inputs.push(h.clone());
        if l + 1 < layers {
            let mask = a.clone().greater_elem(0.0).float();
            h = unfold(a * mask.clone(), n);
            masks.push(unfold(mask, n));
        } else {
            logits = Some(a);
        }
    }
    let probs = activation::softmax(logits.unwrap(), 1);
    let mut delta = (probs.clone() - onehot.clone()).div_scalar(b as f64);
    let mut deltas = vec![None; layers];
    let mut weights = vec![None; layers];
    let mut biases = vec![None; layers];
    for l in (0..layers).rev() {
        let d3 = unfold(delta.clone(), n);
        weights[l] = Some(inputs[l].clone().swap_dims(1, 2).matmul(d3.clone()));
        biases[l] = Some(d3.clone().sum_dim(1));
        deltas[l] = Some(d3);
        if l > 0 {
            delta = delta.matmul(net.weights[l].clone().transpose()) * fold(&masks[l - 1]);
        }
    }
    let grads = ParamGrads {
        weights: weights.into_iter().map(Option::unwrap).collect(),
        biases: biases.into_iter().map(Option::unwrap).collect(),
    };
    let tape = Tape {
        n,
        b,
        inputs,
        masks,
        deltas: deltas.into_iter().map(Option::unwrap).collect(),
        probs: unfold(probs, n),
    };
    (grads, tape)
}

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

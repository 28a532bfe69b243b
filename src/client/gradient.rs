//! The client's parameter gradient written out as tensor ops (forward pass and explicit backward
//! pass), batched over a leading ensemble dimension N. It keeps a `Tape` of what it computed, from
//! which the attacker differentiates it once more (`attack::inversion::second_order`).
//!
//! Shapes: N members, B rows, layer l maps in_l → out_l; weights are [1, in, out] when the members
//! share them (broadcast in the batched products) and [N, in, out] when each has its own.
use burn::tensor::Tensor;

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

    /// k · self.
    pub fn scale(&self, k: f64) -> ParamGrads {
        ParamGrads {
            weights: self.weights.iter().map(|t| t.clone().mul_scalar(k)).collect(),
            biases: self.biases.iter().map(|t| t.clone().mul_scalar(k)).collect(),
        }
    }

    /// self + other, tensor by tensor.
    pub fn add(&self, other: &ParamGrads) -> ParamGrads {
        self.zip_with(other, |a, b| a + b)
    }

    /// f(self_k, other_k) tensor by tensor.
    pub fn zip_with(&self, other: &ParamGrads, mix: impl Fn(Tensor<3>, Tensor<3>) -> Tensor<3>) -> ParamGrads {
        let mix = |a: &Tensor<3>, b: &Tensor<3>| mix(a.clone(), b.clone());
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

/// What differentiating the gradient again needs from the forward and backward passes.
pub struct Tape {
    pub n: usize,
    pub b: usize,
    /// Layer inputs h_{l-1} as [N, B, in_l] (h_{-1} = x).
    pub inputs: Vec<Tensor<3>>,
    /// σ′ of hidden layers' pre-activations [N, B, out_l] (ReLU: its 0/1 mask).
    pub masks: Vec<Tensor<3>>,
    /// (δ_l W_lᵀ) ⊙ σ″(a_{l-1}), where the activation has a σ″ (None for ReLU and leaky ReLU):
    /// how the backward product moves with a_{l-1}, which the second-order gradient needs.
    pub curvature: Vec<Option<Tensor<3>>>,
    /// Backward signals δ_l = dL/da_l, [N, B, out_l].
    pub deltas: Vec<Tensor<3>>,
    /// The head's probabilities, [N, B, outputs].
    pub probs: Tensor<3>,
}

/// Gradient of the mean loss (the head's) over each member's B rows w.r.t. every parameter.
/// `x` is [N, B, d]; `onehot` is the head's targets as [N, B, outputs] (or [1, B, outputs], the
/// same for every member; `Head::targets`). The network's weights broadcast over members ([1, ·, ·]) or are per member.
pub fn param_grads(net: &Net, x: &Tensor<3>, onehot: &Tensor<3>) -> (ParamGrads, Tape) {
    let [n, b, _] = x.dims();
    let layers = net.layers();
    let mut inputs = Vec::with_capacity(layers);
    let mut masks = Vec::with_capacity(layers - 1);
    let mut curvature = Vec::with_capacity(layers - 1);
    let mut h = x.clone();
    let mut logits = None;
    for l in 0..layers {
        let a = h.clone().matmul(net.weights[l].clone()) + net.biases[l].clone();
        inputs.push(h.clone());
        if l + 1 < layers {
            let (out, d1, d2) = net.activation.apply(a);
            h = out;
            masks.push(d1);
            curvature.push(d2);
        } else {
            logits = Some(a);
        }
    }
    // Softmax cross-entropy and sigmoid BCE give dL/d(logits) = (p − y)/B, the squared error 2(z − y)/B.
    let probs = net.head.probabilities(logits.unwrap());
    let mut delta = (probs.clone() - onehot.clone()).mul_scalar(net.head.scale() / b as f64);
    let mut deltas = vec![None; layers];
    let mut weights = vec![None; layers];
    let mut biases = vec![None; layers];
    for l in (0..layers).rev() {
        weights[l] = Some(inputs[l].clone().swap_dims(1, 2).matmul(delta.clone()));
        biases[l] = Some(delta.clone().sum_dim(1));
        deltas[l] = Some(delta.clone());
        if l > 0 {
            let back = delta.matmul(net.weights[l].clone().swap_dims(1, 2));
            if let Some(d2) = curvature[l - 1].take() {
                curvature[l - 1] = Some(back.clone() * d2);
            }
            delta = back * masks[l - 1].clone();
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
        curvature,
        deltas: deltas.into_iter().map(Option::unwrap).collect(),
        probs,
    };
    (grads, tape)
}

/// Rows that carry their target as a last column (a regression's dummy rows, whose label the
/// server reconstructs with them), [N, B, d + 1]: the network's inputs [N, B, d] and the targets
/// [N, B, 1].
pub fn split_targets(rows: Tensor<3>) -> (Tensor<3>, Tensor<3>) {
    let [n, b, w] = rows.dims();
    (
        rows.clone().slice([0..n, 0..b, 0..w - 1]),
        rows.slice([0..n, 0..b, w - 1..w]),
    )
}

impl Net {
    /// One step of plain SGD: θ − lr·g (members broadcast: a shared net and per-member gradients
    /// give a net per member).
    pub fn sgd_step(&self, g: &ParamGrads, lr: f64) -> Net {
        let step = |p: &Tensor<3>, q: &Tensor<3>| p.clone() - q.clone().mul_scalar(lr);
        Net {
            weights: self.weights.iter().zip(&g.weights).map(|(p, q)| step(p, q)).collect(),
            biases: self.biases.iter().zip(&g.biases).map(|(p, q)| step(p, q)).collect(),
            activation: self.activation,
            head: self.head,
        }
    }
}

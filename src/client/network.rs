//! The client's model: a fully connected network (ReLU by default, `activation`), PyTorch-style
//! uniform init, seeded.
use burn::tensor::{Device, Tensor, TensorData};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde::{Deserialize, Serialize};

use super::activation::Activation;
use super::head::{Head, Model};
use super::update::Update;

/// Host copy of the parameters, layer by layer: W is [in, out] row-major, layer(x) = x W + b.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Params {
    pub sizes: Vec<usize>,
    pub weights: Vec<Vec<f32>>,
    pub biases: Vec<Vec<f32>>,
}

impl Params {
    /// sizes = [d, hidden..., classes]; W, b ~ U(±1/√fan_in) as torch.nn.Linear does.
    pub fn init(sizes: &[usize], seed: u64) -> Params {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut weights = Vec::new();
        let mut biases = Vec::new();
        for pair in sizes.windows(2) {
            let (fan_in, fan_out) = (pair[0], pair[1]);
            let bound = 1.0 / (fan_in as f32).sqrt();
            weights.push((0..fan_in * fan_out).map(|_| rng.random_range(-bound..bound)).collect());
            biases.push((0..fan_out).map(|_| rng.random_range(-bound..bound)).collect());
        }
        Params {
            sizes: sizes.to_vec(),
            weights,
            biases,
        }
    }

    pub fn layers(&self) -> usize {
        self.weights.len()
    }

    /// Number of scalars in the flattened parameter vector.
    pub fn len(&self) -> usize {
        self.weights.iter().chain(&self.biases).map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The parameters a client's update θ₀ − θ_E leaves: θ_E = θ₀ − update.
    pub fn minus(&self, update: &Update) -> Params {
        let mut out = self.clone();
        for l in 0..self.layers() {
            out.weights[l]
                .iter_mut()
                .zip(update.weight(l))
                .for_each(|(w, u)| *w -= u);
            out.biases[l].iter_mut().zip(update.bias(l)).for_each(|(b, u)| *b -= u);
        }
        out
    }
}

/// The parameters on a device, with a leading member dimension M: W_l as [M, in, out] and b_l as
/// [M, 1, out]. M = 1 when every member of an ensemble shares them (FedSGD: they broadcast), M = N
/// when each member has its own (FedAvg's local training moves each member's copy).
#[derive(Debug, Clone)]
pub struct Net {
    pub weights: Vec<Tensor<3>>,
    pub biases: Vec<Tensor<3>>,
    /// Between the layers.
    pub activation: Activation,
    /// The output layer's probabilities and loss.
    pub head: Head,
}

impl Net {
    pub fn new(params: &Params, device: &Device) -> Net {
        let mut weights = Vec::new();
        let mut biases = Vec::new();
        for (l, pair) in params.sizes.windows(2).enumerate() {
            weights.push(Tensor::from_data(
                TensorData::new(params.weights[l].clone(), [1, pair[0], pair[1]]),
                device,
            ));
            biases.push(Tensor::from_data(
                TensorData::new(params.biases[l].clone(), [1, 1, pair[1]]),
                device,
            ));
        }
        Net {
            weights,
            biases,
            activation: Activation::Relu,
            head: Head::Softmax,
        }
    }

    /// The same weights in another model (activation between the layers, head).
    pub fn with_model(mut self, model: Model) -> Net {
        self.activation = model.activation;
        self.head = model.head;
        self
    }

    pub fn layers(&self) -> usize {
        self.weights.len()
    }
}

impl Params {
    /// Host forward pass of `rows` rows (row-major [rows, d]) in f64: returns the last layer's
    /// input [rows, h] (the last hidden layer's activations, or the rows themselves where there is
    /// no hidden layer: logistic regression) and the class probabilities [rows, classes] (a sigmoid
    /// head's one output as two classes). Used off the hot path (label restoration).
    pub fn forward_host(&self, x: &[f64], rows: usize, model: Model) -> (Vec<f64>, Vec<f64>) {
        let mut pre = self.pre_activations_host(x, rows, model);
        let logits = pre.pop().expect("at least one layer");
        let last_hidden = match pre.pop() {
            Some(z) => z.into_iter().map(|v| model.activation.host(v)).collect(),
            None => x.to_vec(),
        };
        let outputs = self.sizes[self.layers()];
        let probs = logits
            .chunks_exact(outputs)
            .flat_map(|row| model.head.host_probabilities(row))
            .collect();
        (last_hidden, probs)
    }

    /// Each layer's pre-activations [rows, fan_out] of `rows` rows (row-major [rows, d]) on the
    /// host in f64, the hidden layers' activation between them.
    pub fn pre_activations_host(&self, x: &[f64], rows: usize, model: Model) -> Vec<Vec<f64>> {
        let mut h = x.to_vec();
        let mut out = Vec::with_capacity(self.layers());
        for l in 0..self.layers() {
            let (fan_in, fan_out) = (self.sizes[l], self.sizes[l + 1]);
            let mut a = vec![0f64; rows * fan_out];
            for r in 0..rows {
                for o in 0..fan_out {
                    a[r * fan_out + o] = self.biases[l][o] as f64;
                }
                for i in 0..fan_in {
                    let v = h[r * fan_in + i];
                    let w = &self.weights[l][i * fan_out..(i + 1) * fan_out];
                    for o in 0..fan_out {
                        a[r * fan_out + o] += v * w[o] as f64;
                    }
                }
            }
            h = a.iter().map(|&v| model.activation.host(v)).collect();
            out.push(a);
        }
        out
    }
}

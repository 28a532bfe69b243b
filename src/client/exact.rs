//! The client's FedSGD gradient in float64 on the host: what the float32 update would be without
//! rounding. The proofs read ranks and spans off a float32 update with a tolerance for its
//! rounding (`attack::priors::spectrum`); this is the truth that tolerance is held to in tests, and
//! that a simulated client's report checks it against (`Spectrum::checked_against`).
use super::head::{Head, Model};
use super::network::Params;

/// A gradient in float64: each layer's W ([in, out] row-major, as `Params`) and b.
#[derive(Debug, Clone, PartialEq)]
pub struct ExactGradient {
    pub weights: Vec<Vec<f64>>,
    pub biases: Vec<Vec<f64>>,
}

impl ExactGradient {
    /// Every layer's weights, then the biases, in one vector: as an update lays them out.
    pub fn flat(&self) -> Vec<f64> {
        self.weights.iter().chain(&self.biases).flatten().copied().collect()
    }
}

/// The mean gradient of the head's loss over `rows` rows `x` ([rows, d] row-major, encoded) with
/// the head's `targets` ([rows, outputs], `Head::targets`), as `client::gradient::param_grads`
/// computes it in float32: dL/d(logits) = s·(p − y)/B, back through the explicit backward pass.
pub fn fedsgd_exact(params: &Params, model: Model, x: &[f64], targets: &[f64], rows: usize) -> ExactGradient {
    let layers = params.layers();
    let mut weights: Vec<Vec<f64>> = params.weights.iter().map(|w| vec![0.0; w.len()]).collect();
    let mut biases: Vec<Vec<f64>> = params.biases.iter().map(|b| vec![0.0; b.len()]).collect();
    let outputs = params.sizes[layers];
    let d = params.sizes[0];
    for r in 0..rows {
        let (inputs, pre) = row_trace(params, model, &x[r * d..(r + 1) * d]);
        let y = &targets[r * outputs..(r + 1) * outputs];
        let out = output_delta(model, &pre[layers - 1], y, model.head.scale() / rows as f64);
        for (l, delta) in deltas(params, model, &pre, out).iter().enumerate() {
            let fan_out = params.sizes[l + 1];
            for (i, &h) in inputs[l].iter().enumerate() {
                let w = &mut weights[l][i * fan_out..(i + 1) * fan_out];
                w.iter_mut().zip(delta).for_each(|(g, d)| *g += h * d);
            }
            biases[l].iter_mut().zip(delta).for_each(|(g, d)| *g += d);
        }
    }
    ExactGradient { weights, biases }
}

/// The head's targets of one classifier row of label `label` of `classes`, in float64.
pub fn label_targets(model: Model, label: usize, classes: usize) -> Vec<f64> {
    model
        .head
        .targets(&[label], classes)
        .iter()
        .map(|&v| v as f64)
        .collect()
}

/// One classifier row's gradient (`x` encoded) with label `label` of `classes`, laid out as the
/// update lays it out (`ExactGradient::flat`).
pub fn row_gradient(params: &Params, model: Model, x: &[f64], label: usize, classes: usize) -> Vec<f64> {
    fedsgd_exact(params, model, x, &label_targets(model, label, classes), 1).flat()
}

/// One row's pass through the network: each layer's input (the row, then every hidden layer's
/// activations) and each layer's pre-activations.
pub fn row_trace(params: &Params, model: Model, row: &[f64]) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let pre = params.pre_activations_host(row, 1, model);
    let mut inputs = vec![row.to_vec()];
    for z in &pre[..params.layers() - 1] {
        inputs.push(z.iter().map(|&v| model.activation.host(v)).collect());
    }
    (inputs, pre)
}

/// δ at the logits of a row with the head's `targets` y: `scale`·(p − y), a linear head's
/// `scale`·(ŷ − y).
pub fn output_delta(model: Model, logits: &[f64], y: &[f64], scale: f64) -> Vec<f64> {
    match model.head {
        Head::Softmax => {
            let p = model.head.host_probabilities(logits);
            p.iter().zip(y).map(|(p, y)| scale * (p - y)).collect()
        }
        Head::Sigmoid => vec![scale * (1.0 / (1.0 + (-logits[0]).exp()) - y[0])],
        Head::Linear => vec![scale * (logits[0] - y[0])],
    }
}

/// δ at every layer's output (the first layer's first) of a classifier's row traced as `pre`
/// (`row_trace`) with label `label` of `classes`, the loss as the client's (the head's targets
/// and scale).
pub fn label_deltas(params: &Params, model: Model, pre: &[Vec<f64>], label: usize, classes: usize) -> Vec<Vec<f64>> {
    let y = label_targets(model, label, classes);
    let out = output_delta(model, &pre[params.layers() - 1], &y, model.head.scale());
    deltas(params, model, pre, out)
}

/// δ at every layer's output (the first layer's first) from δ at the logits `out`, back through
/// the row's pre-activations `pre` (`row_trace`).
pub fn deltas(params: &Params, model: Model, pre: &[Vec<f64>], out: Vec<f64>) -> Vec<Vec<f64>> {
    let mut per_layer = vec![out];
    for l in (1..params.layers()).rev() {
        let below = back(params, model, &pre[l - 1], l, &per_layer[0]);
        per_layer.insert(0, below);
    }
    per_layer
}

/// δ at layer `l − 1`'s pre-activations `pre` from δ at layer `l`'s, in float64.
pub fn back(params: &Params, model: Model, pre: &[f64], l: usize, delta: &[f64]) -> Vec<f64> {
    let (fan_in, fan_out) = (params.sizes[l], params.sizes[l + 1]);
    (0..fan_in)
        .map(|i| {
            let w = &params.weights[l][i * fan_out..(i + 1) * fan_out];
            let back: f64 = w.iter().zip(delta).map(|(&w, d)| w as f64 * d).sum();
            back * model.activation.host_slope(pre[i])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, Tensor, TensorData};

    use super::*;
    use crate::client::activation::Activation;
    use crate::client::gradient::param_grads;
    use crate::client::network::Net;
    use crate::runtime::read_f32;

    /// The float32 client and this agree to float32's rounding, on every head and activation.
    #[test]
    fn the_exact_gradient_is_the_clients_without_its_rounding() {
        for model in [
            Model::default(),
            Model {
                activation: Activation::LeakyRelu { slope: 0.1 },
                head: Head::Sigmoid,
            },
            Model {
                activation: Activation::Tanh,
                head: Head::Linear,
            },
        ] {
            let outputs = model.head.outputs(3).max(1);
            let sizes = [7, 12, 9, outputs];
            let params = Params::init(&sizes, 4);
            let rows = 5;
            let x: Vec<f64> = (0..rows * 7).map(|k| ((k * 37 % 23) as f64 - 11.0) / 7.0).collect();
            let targets: Vec<f64> = match model.head {
                Head::Softmax => model
                    .head
                    .targets(&[0, 2, 1, 1, 0], 3)
                    .iter()
                    .map(|&v| v as f64)
                    .collect(),
                Head::Sigmoid => vec![0.0, 1.0, 1.0, 0.0, 1.0],
                Head::Linear => vec![0.3, -1.2, 0.5, 2.0, -0.1],
            };
            let exact = fedsgd_exact(&params, model, &x, &targets, rows);
            let device = &Device::flex();
            let net = Net::new(&params, device).with_model(model);
            let xt = Tensor::<3>::from_data(
                TensorData::new(x.iter().map(|&v| v as f32).collect::<Vec<_>>(), [1, rows, 7]),
                device,
            );
            let yt = Tensor::<3>::from_data(
                TensorData::new(
                    targets.iter().map(|&v| v as f32).collect::<Vec<_>>(),
                    [1, rows, outputs],
                ),
                device,
            );
            let (g, _) = param_grads(&net, &xt, &yt);
            for l in 0..3 {
                let got = pollster::block_on(read_f32(g.weights[l].clone())).unwrap();
                let top = exact.weights[l].iter().fold(0.0f64, |m, v| m.max(v.abs()));
                for (a, b) in got.iter().zip(&exact.weights[l]) {
                    assert!((*a as f64 - b).abs() <= 1e-5 * top, "{model:?} layer {l}: {a} vs {b}");
                }
            }
        }
    }
}

//! Ordinary training before the attacked round (SPEC §3: "untrained unless the user asks for
//! training epochs first"). The paper attacks at initialisation, where the gradient leaks most;
//! a deployment attacks a network the federation has trained. This trains the client's network
//! on the whole table with mini-batch SGD, shuffled by the seed, on the same explicit backward
//! pass the client uses (`gradient::param_grads`), on the CPU.
use burn::tensor::{Device, Tensor, TensorData};
use rand::{SeedableRng, rngs::StdRng, seq::SliceRandom};

use super::gradient::param_grads;
use super::head::{Head, Model};
use super::network::{Net, Params};
use crate::error::Result;
use crate::runtime::read_f32;
use crate::table::dataset::TOLERANCE_FACTOR;

/// Rows per training step and SGD's step: a plain, common recipe for a small tabular MLP.
pub const TRAINING_BATCH: usize = 64;
pub const TRAINING_LR: f64 = 0.05;

/// `epochs` epochs of SGD from `params` over `x` (encoded rows, [n, d] row-major) with the
/// loss's targets `targets` ([n, outputs]: `Dataset::targets`), every epoch in a fresh order drawn
/// from `seed`. Returns the trained parameters and the network's accuracy on the table after
/// training (what a user would call the model's quality; `accuracy`).
pub async fn train(
    params: &Params,
    x: &[f32],
    targets: &[f32],
    epochs: usize,
    seed: u64,
    model: Model,
) -> Result<(Params, f64)> {
    let device = &Device::flex();
    let d = params.sizes[0];
    let outputs = *params.sizes.last().unwrap();
    let n = targets.len() / outputs;
    let mut net = Net::new(params, device).with_model(model);
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = StdRng::seed_from_u64(seed);
    for _ in 0..epochs {
        order.shuffle(&mut rng);
        for chunk in order.chunks(TRAINING_BATCH) {
            let rows = chunk.len();
            let xb: Vec<f32> = chunk
                .iter()
                .flat_map(|&i| x[i * d..(i + 1) * d].iter().copied())
                .collect();
            let yb: Vec<f32> = chunk
                .iter()
                .flat_map(|&i| targets[i * outputs..(i + 1) * outputs].iter().copied())
                .collect();
            let xt = Tensor::<3>::from_data(TensorData::new(xb, [1, rows, d]), device);
            let yt = Tensor::<3>::from_data(TensorData::new(yb, [1, rows, outputs]), device);
            let (g, _) = param_grads(&net, &xt, &yt);
            net = net.sgd_step(&g, TRAINING_LR);
        }
    }
    let mut trained = params.clone();
    for l in 0..net.layers() {
        trained.weights[l] = read_f32(net.weights[l].clone()).await?;
        trained.biases[l] = read_f32(net.biases[l].clone()).await?;
    }
    let accuracy = accuracy(&trained, x, targets, model);
    Ok((trained, accuracy))
}

/// Share of rows whose most likely class is their label (the target's largest entry, or 0/1); for
/// a regression, whose prediction is within a cell's tolerance of the label (`TOLERANCE_FACTOR`
/// of its std, which is 1 in the standardised units the targets are in).
pub fn accuracy(params: &Params, x: &[f32], targets: &[f32], model: Model) -> f64 {
    let outputs = *params.sizes.last().unwrap();
    let n = targets.len() / outputs;
    if n == 0 {
        return 0.0;
    }
    let d = params.sizes[0];
    let classes = model.head.classes(outputs);
    let label = |i: usize| -> usize {
        let t = &targets[i * outputs..(i + 1) * outputs];
        match outputs {
            1 => (t[0] >= 0.5) as usize,
            _ => (0..outputs).max_by(|&a, &b| t[a].total_cmp(&t[b])).unwrap(),
        }
    };
    let mut right = 0;
    for chunk in (0..n).collect::<Vec<_>>().chunks(4096) {
        let xs: Vec<f64> = chunk
            .iter()
            .flat_map(|&i| x[i * d..(i + 1) * d].iter().map(|&v| v as f64))
            .collect();
        let (_, probs) = params.forward_host(&xs, chunk.len(), model);
        if model.head == Head::Linear {
            let near = |(r, &i): (usize, &usize)| (probs[r] - targets[i] as f64).abs() <= TOLERANCE_FACTOR;
            right += chunk.iter().enumerate().filter(|&p| near(p)).count();
            continue;
        }
        for (r, &i) in chunk.iter().enumerate() {
            let row = &probs[r * classes..(r + 1) * classes];
            let best = (0..classes).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
            right += (best == label(i)) as usize;
        }
    }
    right as f64 / n as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two well separated classes: a few epochs take the untrained network from chance to near
    /// perfect, and the same seed gives the same network.
    #[test]
    fn training_learns_a_separable_table_and_is_seeded() {
        let mut rng = StdRng::seed_from_u64(3);
        let (n, d) = (400, 4);
        let mut x = Vec::new();
        let mut labels = Vec::new();
        for i in 0..n {
            let c = i % 2;
            labels.push(c);
            for k in 0..d {
                let noise: f64 = crate::client::defence::normal(&mut rng);
                let centre = if c == 0 { -1.0 } else { 1.0 };
                x.push((if k == 0 { centre } else { 0.0 } + 0.5 * noise) as f32);
            }
        }
        let params = Params::init(&[d, 16, 2], 1);
        let onehot = Head::Softmax.targets(&labels, 2);
        let before = accuracy(&params, &x, &onehot, Model::default());
        let relu = Model::default();
        let (trained, after) = pollster::block_on(train(&params, &x, &onehot, 20, 9, relu)).unwrap();
        assert!(after > 0.93 && after > before + 0.2, "{before} → {after}");
        let (again, _) = pollster::block_on(train(&params, &x, &onehot, 20, 9, relu)).unwrap();
        assert_eq!(trained, again);
        let (other, _) = pollster::block_on(train(&params, &x, &onehot, 20, 10, relu)).unwrap();
        assert_ne!(trained, other);
        // One logit under binary cross-entropy learns the same rule.
        let sigmoid = Model {
            head: crate::client::head::Head::Sigmoid,
            ..relu
        };
        let one_logit = Params::init(&[d, 16, 1], 1);
        let zero_one = Head::Sigmoid.targets(&labels, 2);
        let before = accuracy(&one_logit, &x, &zero_one, sigmoid);
        let (_, after) = pollster::block_on(train(&one_logit, &x, &zero_one, 20, 9, sigmoid)).unwrap();
        assert!(after > 0.93 && after > before + 0.2, "sigmoid head: {before} → {after}");
        // A regression on the first input (standardised-ish): the squared error learns it.
        let values: Vec<f32> = (0..n).map(|i| x[i * d] / 1.1).collect();
        let linear = Model {
            head: Head::Linear,
            ..relu
        };
        let before = accuracy(&one_logit, &x, &values, linear);
        let (_, after) = pollster::block_on(train(&one_logit, &x, &values, 20, 9, linear)).unwrap();
        assert!(after > 0.9 && after > before + 0.2, "regression: {before} → {after}");
    }
}

//! Vertical federated learning as CAFE (Jin et al., NeurIPS 2021) attacks it: M parties hold
//! column groups of the same n rows, the server holds the labels and the layers above the first;
//! each round it picks K row indices and receives the gradients of the mean loss over them,
//! aggregated over the parties. With one first layer over all encoded columns (each party's block
//! of its rows W1[party's columns]), what the server receives of the first layer in round t is
//! G_t = (1/K) Σ_{i∈S_t} xᵢ Vᵢᵀ and g_t = (1/K) Σ_{i∈S_t} Vᵢ, Vᵢ = ∂ℓᵢ/∂z₁ᵢ the row's gradient at
//! the first layer's pre-activations. The model is held fixed over the rounds (the server's
//! evaluation rounds), so Vᵢ is the same in every round that samples row i.
use rand::{SeedableRng, rngs::StdRng, seq::index::sample};

use super::network::Params;

/// What the server receives of the first layer in one round: the indices it chose, the weight
/// gradient G_t ([d, h] row-major) and the bias gradient g_t ([h]).
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub indices: Vec<usize>,
    pub weight: Vec<f64>,
    pub bias: Vec<f64>,
}

/// One row through the ReLU network and back, by the explicit backward pass: its cross-entropy,
/// each layer's input (`acts[l]`, the row itself for l = 0) and the gradient at each layer's
/// output pre-activation (`deltas[l]`; `deltas[0]` is Vᵢ).
struct RowPass {
    loss: f64,
    acts: Vec<Vec<f64>>,
    deltas: Vec<Vec<f64>>,
}

fn row_pass(params: &Params, row: &[f64], label: usize) -> RowPass {
    let layers = params.layers();
    let mut acts: Vec<Vec<f64>> = vec![row.to_vec()];
    let mut pre: Vec<Vec<f64>> = Vec::with_capacity(layers);
    for l in 0..layers {
        let fan_out = params.sizes[l + 1];
        let mut z: Vec<f64> = params.biases[l].iter().map(|&b| b as f64).collect();
        for (k, &v) in acts[l].iter().enumerate() {
            let w = &params.weights[l][k * fan_out..(k + 1) * fan_out];
            z.iter_mut().zip(w).for_each(|(z, &w)| *z += v * w as f64);
        }
        if l + 1 < layers {
            acts.push(z.iter().map(|v| v.max(0.0)).collect());
        }
        pre.push(z);
    }
    // Softmax cross-entropy: δ at the logits is p − y.
    let logits = &pre[layers - 1];
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = logits.iter().map(|v| (v - max).exp()).collect();
    let s: f64 = e.iter().sum();
    let loss = s.ln() + max - logits[label];
    let mut deltas = vec![Vec::new(); layers];
    deltas[layers - 1] = e
        .iter()
        .enumerate()
        .map(|(k, v)| v / s - (k == label) as u8 as f64)
        .collect();
    // Back down to the first layer's pre-activations.
    for l in (1..layers).rev() {
        let fan_out = params.sizes[l + 1];
        deltas[l - 1] = (0..params.sizes[l])
            .map(|k| {
                if pre[l - 1][k] <= 0.0 {
                    return 0.0;
                }
                let w = &params.weights[l][k * fan_out..(k + 1) * fan_out];
                w.iter().zip(&deltas[l]).map(|(&w, d)| w as f64 * d).sum()
            })
            .collect();
    }
    RowPass { loss, acts, deltas }
}

/// Per row ([n, d] encoded, labels), Vᵢ = ∂ℓᵢ/∂z₁ᵢ of its cross-entropy ([n, h]).
pub fn first_layer_deltas(params: &Params, x: &[f64], labels: &[usize]) -> Vec<f64> {
    let d = params.sizes[0];
    labels
        .iter()
        .enumerate()
        .flat_map(|(i, &label)| row_pass(params, &x[i * d..(i + 1) * d], label).deltas.swap_remove(0))
        .collect()
}

/// `rounds` rounds of `k` indices each out of `n` rows (seeded), and what the server receives.
pub fn simulate(
    x: &[f64],
    deltas: &[f64],
    n: usize,
    d: usize,
    h: usize,
    k: usize,
    rounds: usize,
    seed: u64,
) -> Vec<Round> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..rounds)
        .map(|_| {
            let mut indices = sample(&mut rng, n, k).into_vec();
            indices.sort_unstable();
            let mut weight = vec![0f64; d * h];
            let mut bias = vec![0f64; h];
            for &i in &indices {
                let v = &deltas[i * h..(i + 1) * h];
                bias.iter_mut().zip(v).for_each(|(b, v)| *b += v / k as f64);
                for j in 0..d {
                    let xj = x[i * d + j] / k as f64;
                    if xj != 0.0 {
                        weight[j * h..(j + 1) * h]
                            .iter_mut()
                            .zip(v)
                            .for_each(|(w, v)| *w += xj * v);
                    }
                }
            }
            Round { indices, weight, bias }
        })
        .collect()
}

/// CAFE's countermeasure (`defence::fake_gradients`): each party sends, for its own columns' rows of
/// the first layer's weight gradient (and party 0 for the bias gradient too), the closest of
/// `draws` random vectors rearranged into the true gradient's element order. `columns`: each
/// party's encoded columns as (offset, width), in order.
pub fn fake_rounds(rounds: &mut [Round], columns: &[(usize, usize)], h: usize, draws: usize, seed: u64) {
    for (t, r) in rounds.iter_mut().enumerate() {
        for (p, &(offset, width)) in columns.iter().enumerate() {
            let mut parts = vec![
                r.weight[offset * h..(offset + width) * h]
                    .iter()
                    .map(|&v| v as f32)
                    .collect::<Vec<_>>(),
            ];
            if p == 0 {
                parts.push(r.bias.iter().map(|&v| v as f32).collect());
            }
            super::defence::fake_gradients(parts.iter_mut().flatten(), draws, seed ^ ((t as u64) << 8) ^ p as u64);
            for (w, &v) in r.weight[offset * h..(offset + width) * h].iter_mut().zip(&parts[0]) {
                *w = v as f64;
            }
            if p == 0 {
                r.bias.iter_mut().zip(&parts[1]).for_each(|(b, &v)| *b = v as f64);
            }
        }
    }
}

/// Mean cross-entropy of rows `indices` and its gradient: per layer, the weight gradient
/// ([fan_in, fan_out] row-major) and the bias gradient, as `Params` lays them out.
pub fn batch_gradient(
    params: &Params,
    x: &[f64],
    labels: &[usize],
    indices: &[usize],
) -> (f64, Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let layers = params.layers();
    let d = params.sizes[0];
    let mut gw: Vec<Vec<f64>> = (0..layers)
        .map(|l| vec![0.0; params.sizes[l] * params.sizes[l + 1]])
        .collect();
    let mut gb: Vec<Vec<f64>> = (0..layers).map(|l| vec![0.0; params.sizes[l + 1]]).collect();
    let k = indices.len().max(1) as f64;
    let mut loss = 0.0;
    for &i in indices {
        let pass = row_pass(params, &x[i * d..(i + 1) * d], labels[i]);
        loss += pass.loss / k;
        for l in 0..layers {
            let fan_out = params.sizes[l + 1];
            let delta = &pass.deltas[l];
            for (kk, &a) in pass.acts[l].iter().enumerate() {
                gw[l][kk * fan_out..(kk + 1) * fan_out]
                    .iter_mut()
                    .zip(delta)
                    .for_each(|(g, dl)| *g += a * dl / k);
            }
            gb[l].iter_mut().zip(delta).for_each(|(g, dl)| *g += dl / k);
        }
    }
    (loss, gw, gb)
}

/// The cost of CAFE's countermeasure to training: `rounds` SGD steps (step `lr`) on `k` rows a
/// round, the first layer's gradient as the parties send it (fake where `fake` says: each party's
/// columns and the draws), then the mean cross-entropy over all n rows.
#[allow(clippy::too_many_arguments)]
pub fn train_rounds(
    params: &Params,
    x: &[f64],
    labels: &[usize],
    k: usize,
    rounds: usize,
    lr: f64,
    fake: Option<(&[(usize, usize)], usize)>,
    seed: u64,
) -> f64 {
    let n = labels.len();
    let h = params.sizes[1];
    let mut p = params.clone();
    let mut rng = StdRng::seed_from_u64(seed);
    for t in 0..rounds {
        let indices = sample(&mut rng, n, k).into_vec();
        let (_, mut gw, mut gb) = batch_gradient(&p, x, labels, &indices);
        if let Some((columns, draws)) = fake {
            let mut r = [Round {
                indices: Vec::new(),
                weight: std::mem::take(&mut gw[0]),
                bias: std::mem::take(&mut gb[0]),
            }];
            fake_rounds(&mut r, columns, h, draws, seed ^ ((t as u64) << 20));
            let [r] = r;
            (gw[0], gb[0]) = (r.weight, r.bias);
        }
        for l in 0..p.layers() {
            p.weights[l]
                .iter_mut()
                .zip(&gw[l])
                .for_each(|(w, g)| *w -= (lr * g) as f32);
            p.biases[l]
                .iter_mut()
                .zip(&gb[l])
                .for_each(|(b, g)| *b -= (lr * g) as f32);
        }
    }
    let all: Vec<usize> = (0..n).collect();
    batch_gradient(&p, x, labels, &all).0
}

/// The parties' column groups: features split into `parties` contiguous groups as evenly as
/// possible, as (first feature, feature count).
pub fn party_columns(features: usize, parties: usize) -> Vec<(usize, usize)> {
    let parties = parties.clamp(1, features.max(1));
    (0..parties)
        .map(|p| {
            let first = p * features / parties;
            (first, (p + 1) * features / parties - first)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parties_split_the_columns_evenly() {
        assert_eq!(party_columns(14, 4), vec![(0, 3), (3, 4), (7, 3), (10, 4)]);
        assert_eq!(party_columns(3, 8), vec![(0, 1), (1, 1), (2, 1)]);
    }

    /// The first layer's deltas give the parameter gradient the tensor client computes: with one
    /// round of every row, G = (1/n) Σ xᵢVᵢᵀ equals the FedSGD gradient of W1.
    #[test]
    fn deltas_agree_with_the_host_forward_pass_finite_differences() {
        let params = Params::init(&[5, 7, 6, 3], 1);
        let x: Vec<f64> = (0..10).map(|v| ((v * 37 % 11) as f64 - 5.0) / 4.0).collect();
        let labels = vec![2, 0];
        let deltas = first_layer_deltas(&params, &x, &labels);
        // d ℓ / d b1_j by central differences on the bias, per row.
        let loss = |p: &Params, row: usize| {
            let (_, probs) = p.forward_host(&x[row * 5..(row + 1) * 5], 1, Default::default());
            -probs[labels[row]].ln()
        };
        for row in 0..2 {
            for j in 0..7 {
                let mut plus = params.clone();
                plus.biases[0][j] += 1e-3;
                let mut minus = params.clone();
                minus.biases[0][j] -= 1e-3;
                let fd = (loss(&plus, row) - loss(&minus, row)) / 2e-3;
                assert!(
                    (fd - deltas[row * 7 + j]).abs() < 1e-4,
                    "row {row} unit {j}: {fd} vs {}",
                    deltas[row * 7 + j]
                );
            }
        }
    }
}

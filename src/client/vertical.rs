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

/// Per row ([n, d] encoded, labels), Vᵢ = ∂ℓᵢ/∂z₁ᵢ of its cross-entropy ([n, h]): the explicit
/// backward pass of the ReLU network, row by row.
pub fn first_layer_deltas(params: &Params, x: &[f64], labels: &[usize]) -> Vec<f64> {
    let n = labels.len();
    let layers = params.layers();
    let mut out = Vec::with_capacity(n * params.sizes[1]);
    for (i, &label) in labels.iter().enumerate() {
        // Forward, keeping every layer's pre-activation.
        let mut a: Vec<f64> = x[i * params.sizes[0]..(i + 1) * params.sizes[0]].to_vec();
        let mut pre: Vec<Vec<f64>> = Vec::with_capacity(layers);
        for l in 0..layers {
            let (fan_in, fan_out) = (params.sizes[l], params.sizes[l + 1]);
            let mut z: Vec<f64> = params.biases[l].iter().map(|&b| b as f64).collect();
            for (k, &v) in a.iter().enumerate().take(fan_in) {
                let w = &params.weights[l][k * fan_out..(k + 1) * fan_out];
                z.iter_mut().zip(w).for_each(|(z, &w)| *z += v * w as f64);
            }
            a = if l + 1 < layers {
                z.iter().map(|v| v.max(0.0)).collect()
            } else {
                z.clone()
            };
            pre.push(z);
        }
        // Softmax cross-entropy: δ at the logits is p − y.
        let logits = &pre[layers - 1];
        let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = logits.iter().map(|v| (v - max).exp()).collect();
        let s: f64 = e.iter().sum();
        let mut delta: Vec<f64> = e
            .iter()
            .enumerate()
            .map(|(k, v)| v / s - (k == label) as u8 as f64)
            .collect();
        // Back down to the first layer's pre-activations.
        for l in (1..layers).rev() {
            let (fan_in, fan_out) = (params.sizes[l], params.sizes[l + 1]);
            let mut below = vec![0f64; fan_in];
            for (k, b) in below.iter_mut().enumerate() {
                let w = &params.weights[l][k * fan_out..(k + 1) * fan_out];
                *b = w.iter().zip(&delta).map(|(&w, d)| w as f64 * d).sum::<f64>();
                if pre[l - 1][k] <= 0.0 {
                    *b = 0.0;
                }
            }
            delta = below;
        }
        out.extend(delta);
    }
    out
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
            let (_, probs) = p.forward_host(&x[row * 5..(row + 1) * 5], 1);
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

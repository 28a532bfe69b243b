//! Label restoration from the observed gradient (Geng et al. 2021, SPEC §4).
use rand::{SeedableRng, rngs::StdRng};

use crate::client::defence::normal;
use crate::client::network::Params;

/// Number of N(0, 1) dummy rows used to estimate the network's mean behaviour.
pub const DUMMY_ROWS: usize = 1000;

/// Estimated count of each class in the batch, summing to `batch`.
/// `last_weight_grad` is the observed gradient of the last layer's W, [h, outputs] row-major, and
/// `last_bias_grad` its bias's, [outputs]; a sigmoid head's one output is read as two classes
/// (`Head::class_gradient`). Geng et al. sum the weight gradient over the last layer's
/// inputs, which ReLU keeps non-negative; where they may be negative or are the rows themselves
/// (another activation, logistic regression) their mean is near zero, and the bias's gradient,
/// (1/B) Σᵢ (pᵢ − yᵢ), is the same estimate with every input 1.
pub fn restore_counts(
    params: &Params,
    last_weight_grad: &[f32],
    last_bias_grad: &[f32],
    batch: usize,
    seed: u64,
    model: crate::client::head::Model,
) -> Vec<usize> {
    let d = params.sizes[0];
    let outputs = *params.sizes.last().unwrap();
    let classes = model.head.classes(outputs);
    let hidden = params.sizes[params.sizes.len() - 2];
    let mut rng = StdRng::seed_from_u64(seed);
    let dummies: Vec<f64> = (0..DUMMY_ROWS * d).map(|_| normal(&mut rng)).collect();
    let (h, probs) = params.forward_host(&dummies, DUMMY_ROWS, model);
    let p: Vec<f64> = (0..classes)
        .map(|c| (0..DUMMY_ROWS).map(|r| probs[r * classes + c]).sum::<f64>() / DUMMY_ROWS as f64)
        .collect();
    let relu_inputs = model.activation.is_relu() && params.layers() > 1;
    let o = if relu_inputs {
        h.iter().sum::<f64>() / DUMMY_ROWS as f64
    } else {
        1.0
    };
    let b = batch as f64;
    let estimate: Vec<f64> = (0..classes)
        .map(|c| {
            let dw: f64 = if relu_inputs {
                (0..hidden)
                    .map(|j| {
                        model
                            .head
                            .class_gradient(&last_weight_grad[j * outputs..(j + 1) * outputs], c)
                    })
                    .sum()
            } else {
                model.head.class_gradient(last_bias_grad, c)
            };
            let est = if o.abs() > 1e-12 {
                b * p[c] - b * dw / o
            } else {
                b * p[c]
            };
            est.max(0.0)
        })
        .collect();
    round_to_total(&estimate, batch)
}

/// Round non-negative estimates so they sum to `total`: floors first, then one at a time to the
/// class whose estimate exceeds its count most (or from the one undershooting most).
pub fn round_to_total(estimate: &[f64], total: usize) -> Vec<usize> {
    let mut counts: Vec<usize> = estimate.iter().map(|e| e.floor() as usize).collect();
    let mut sum: usize = counts.iter().sum();
    while sum < total {
        let c = (0..counts.len())
            .max_by(|&a, &b| (estimate[a] - counts[a] as f64).total_cmp(&(estimate[b] - counts[b] as f64)))
            .unwrap();
        counts[c] += 1;
        sum += 1;
    }
    while sum > total {
        let c = (0..counts.len())
            .filter(|&c| counts[c] > 0)
            .min_by(|&a, &b| (estimate[a] - counts[a] as f64).total_cmp(&(estimate[b] - counts[b] as f64)))
            .unwrap();
        counts[c] -= 1;
        sum -= 1;
    }
    counts
}

/// Labels listed class by class from counts.
pub fn labels_from_counts(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .enumerate()
        .flat_map(|(c, &k)| std::iter::repeat_n(c, k))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_keeps_the_total() {
        assert_eq!(round_to_total(&[2.6, 1.7, 0.7], 5), vec![2, 2, 1]);
        assert_eq!(round_to_total(&[4.0, 4.0], 6), vec![3, 3]);
        assert_eq!(round_to_total(&[0.0, 0.0], 3).iter().sum::<usize>(), 3);
        assert_eq!(labels_from_counts(&[2, 0, 1]), vec![0, 0, 2]);
    }
}

//! Which rows did the client train on? The attribute attack's membership inference (Lyu & Chen):
//! the server holds candidate rows, the client's among them, and knows how many the client used
//! (FedAvg weights clients by it). After the client's local training the model fits the rows it
//! trained on better, so their last-layer gradients are smaller: per candidate, the variance of
//! its last-layer gradient at θ_E = θ_0 − update (averaged over the sensitive column's values,
//! which the server does not know), then a two-component Gaussian mixture on its logarithm; the
//! candidates most likely in the lower component are taken as the client's.
//!
//! leakscope also has a far stronger test where it applies: the first layer's update lies in the
//! span of the client's rows (`attack::priors::subspace`), so where that span holds every client row and
//! leaves directions out (fewer rows than a row has free directions, no noise), a candidate is a
//! client row exactly when it lies in the span for some value of the unknown column.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use rand::{SeedableRng, rngs::StdRng, seq::index::sample};

use crate::attack::inversion::relax::Layout;
use crate::attack::priors::subspace::Subspace;
use crate::client::network::Params;
use crate::client::update::Update;
use crate::table::{Dataset, Value};

/// Membership as the report states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct MembershipReport {
    /// "span" (distance to the first layer's span) or "gradient variance" (the paper's mixture).
    pub method: String,
    /// Candidate rows the server held (the client's and as many others).
    pub candidates: usize,
    /// Share of the rows taken as the client's that were: precision and recall alike, as the
    /// server takes exactly as many as the client used.
    pub accuracy: f64,
    /// The mixture's two means and weights on the score's logarithm (the lower is the members').
    pub means: [f64; 2],
    pub weights: [f64; 2],
}

/// Unknown membership: the client's `batch` among as many other rows of the table, and the ones
/// the server takes for the client's by their last-layer gradients after the update
/// (the first layer's span where it applies, else the mixture), the sensitive column averaged over
/// its values. `seed` draws the other rows.
#[allow(clippy::too_many_arguments)]
pub fn infer(
    dataset: &Dataset,
    params: &Params,
    observed: &Update,
    batch: &[usize],
    column: &str,
    seed: u64,
    model: crate::client::head::Model,
    source: crate::attack::priors::spectrum::Source,
) -> (Vec<usize>, MembershipReport) {
    let n = batch.len();
    let outside: Vec<usize> = (0..dataset.n()).filter(|i| batch.binary_search(i).is_err()).collect();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut candidates: Vec<usize> = batch.to_vec();
    candidates.extend(sample(&mut rng, outside.len(), n).into_iter().map(|k| outside[k]));
    candidates.sort_unstable();
    let fi = dataset
        .features
        .iter()
        .position(|f| f.name == column)
        .expect("validated");
    let labels: Vec<usize> = candidates.iter().map(|&i| dataset.labels[i]).collect();
    let values = dataset.features[fi].width();
    // Each candidate encoded with every value of the unknown column.
    let encoded: Vec<Vec<f64>> = (0..values)
        .map(|v| {
            candidates
                .iter()
                .flat_map(|&i| {
                    let mut r = dataset.rows[i].clone();
                    r[fi] = Value::Cat(v as u32);
                    dataset.encode(&r)
                })
                .collect()
        })
        .collect();
    let sizes = &params.sizes;
    let layout = Layout::of(dataset);
    let span = Subspace::from_update(
        observed.weight(0),
        observed.bias(0),
        (sizes[0], sizes[1]),
        Some(&layout),
        n,
        1.0,
        source,
    );
    // The span ranks candidates wherever it is read without noise and leaves directions out, even
    // when its rank falls short of the rows (it then holds most of each client row, not all).
    let (method, score): (&str, Vec<f64>) = if span.exact && span.summary.rank < span.summary.feasible {
        // Share of the row outside the span, at the unknown column's best value.
        let d = dataset.d();
        let score = (0..candidates.len())
            .map(|c| {
                (0..values)
                    .map(|v| span.outside_share(&encoded[v][c * d..(c + 1) * d]))
                    .fold(f64::INFINITY, f64::min)
            })
            .collect();
        ("span", score)
    } else {
        let trained = params.minus(observed);
        let mut variance = vec![0f64; candidates.len()];
        for x in &encoded {
            for (acc, g) in variance.iter_mut().zip(gradient_variances(&trained, x, &labels, model)) {
                *acc += g / values as f64;
            }
        }
        ("gradient variance", variance)
    };
    let logs: Vec<f64> = score.iter().map(|v| v.max(1e-300).ln()).collect();
    let (posterior, means, weights) = two_gaussians(&logs);
    let chosen: Vec<usize> = most_likely(&logs, &posterior, n)
        .into_iter()
        .map(|c| candidates[c])
        .collect();
    let right = chosen.iter().filter(|i| batch.binary_search(i).is_ok()).count();
    let report = MembershipReport {
        method: method.into(),
        candidates: candidates.len(),
        accuracy: right as f64 / n.max(1) as f64,
        means,
        weights,
    };
    (chosen, report)
}

/// Per row ([n, d] encoded, labels), the variance of the entries of its last-layer gradient
/// (∂ℓ/∂W_L = h (p − y)ᵀ and ∂ℓ/∂b_L = p − y).
pub fn gradient_variances(params: &Params, x: &[f64], labels: &[usize], model: crate::client::head::Model) -> Vec<f64> {
    let n = labels.len();
    let (hidden, probs) = params.forward_host(x, n, model);
    let h = hidden.len() / n.max(1);
    let c = probs.len() / n.max(1);
    (0..n)
        .map(|i| {
            let e: Vec<f64> = (0..c)
                .map(|k| probs[i * c + k] - if labels[i] == k { 1.0 } else { 0.0 })
                .collect();
            let mut entries: Vec<f64> = Vec::with_capacity((h + 1) * c);
            for j in 0..h {
                entries.extend(e.iter().map(|ek| hidden[i * h + j] * ek));
            }
            entries.extend(&e);
            let mean = entries.iter().sum::<f64>() / entries.len() as f64;
            entries.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / entries.len() as f64
        })
        .collect()
}

/// A two-component Gaussian mixture on `values` by EM (100 iterations from a split at the
/// median): the posterior of the lower-mean component per value, and the fit.
pub fn two_gaussians(values: &[f64]) -> (Vec<f64>, [f64; 2], [f64; 2]) {
    let n = values.len();
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let half = n / 2;
    let stats = |part: &[f64]| {
        let m = part.iter().sum::<f64>() / part.len().max(1) as f64;
        let v = part.iter().map(|x| (x - m).powi(2)).sum::<f64>() / part.len().max(1) as f64;
        (m, v.max(1e-6))
    };
    let (mut mu, mut var) = {
        let (a, b) = (stats(&sorted[..half.max(1)]), stats(&sorted[half.min(n - 1)..]));
        ([a.0, b.0], [a.1, b.1])
    };
    let mut w = [0.5, 0.5];
    let mut post = vec![0.5; n];
    let pdf = |x: f64, m: f64, v: f64| (-(x - m).powi(2) / (2.0 * v)).exp() / (2.0 * std::f64::consts::PI * v).sqrt();
    for _ in 0..100 {
        for (p, &x) in post.iter_mut().zip(values) {
            let a = w[0] * pdf(x, mu[0], var[0]);
            let b = w[1] * pdf(x, mu[1], var[1]);
            *p = if a + b > 0.0 {
                a / (a + b)
            } else {
                (x <= (mu[0] + mu[1]) / 2.0) as u8 as f64
            };
        }
        let r0: f64 = post.iter().sum();
        let r1 = n as f64 - r0;
        if r0 < 1e-9 || r1 < 1e-9 {
            break;
        }
        mu[0] = post.iter().zip(values).map(|(p, x)| p * x).sum::<f64>() / r0;
        mu[1] = post.iter().zip(values).map(|(p, x)| (1.0 - p) * x).sum::<f64>() / r1;
        var[0] = (post
            .iter()
            .zip(values)
            .map(|(p, x)| p * (x - mu[0]).powi(2))
            .sum::<f64>()
            / r0)
            .max(1e-6);
        var[1] = (post
            .iter()
            .zip(values)
            .map(|(p, x)| (1.0 - p) * (x - mu[1]).powi(2))
            .sum::<f64>()
            / r1)
            .max(1e-6);
        w = [r0 / n as f64, r1 / n as f64];
    }
    if mu[0] > mu[1] {
        post.iter_mut().for_each(|p| *p = 1.0 - *p);
        mu.swap(0, 1);
        w.swap(0, 1);
    }
    (post, mu, w)
}

/// The `take` candidates most likely members (by the lower component's posterior, ties by the
/// smaller value), in candidate order.
pub fn most_likely(values: &[f64], posterior: &[f64], take: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| {
        posterior[b]
            .total_cmp(&posterior[a])
            .then(values[a].total_cmp(&values[b]))
    });
    let mut chosen: Vec<usize> = order.into_iter().take(take).collect();
    chosen.sort_unstable();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mixture_separates_two_clusters_and_the_lower_is_first() {
        let mut v: Vec<f64> = (0..20).map(|i| 5.0 + 0.1 * (i % 5) as f64).collect();
        v.extend((0..20).map(|i| 1.0 + 0.1 * (i % 5) as f64));
        let (post, mu, w) = two_gaussians(&v);
        assert!((mu[0] - 1.2).abs() < 0.05 && (mu[1] - 5.2).abs() < 0.05, "{mu:?}");
        assert!((w[0] - 0.5).abs() < 1e-6);
        assert!(post[..20].iter().all(|&p| p < 0.01) && post[20..].iter().all(|&p| p > 0.99));
        assert_eq!(most_likely(&v, &post, 20), (20..40).collect::<Vec<_>>());
    }
}

//! TabLeak on FedAvg reconstructs the client's rows once per local epoch (SPEC §7): each epoch's
//! rows are matched to epoch 0's and averaged (categorical blocks through their softmax), giving the
//! member's one reconstruction of the client's rows.
use super::matching::{Rule, match_rows};
use crate::attack::inversion::relax::Layout;
use crate::table::Value;

/// One member's rows as [E·n, d] (`x`, `probs`), averaged over its E copies into [n, d].
/// `decode` turns a standardised row into cells, for the matching. `probs` is empty where the
/// rows were optimised directly, not relaxed (the baselines): then x alone is averaged.
pub fn average_epochs(
    layout: &Layout,
    rules: &[Rule],
    x: &[f32],
    probs: &[f32],
    copies: usize,
    decode: impl Fn(&[f32]) -> Vec<Value>,
) -> (Vec<f32>, Vec<f32>) {
    let d = layout.d();
    let n = x.len() / (copies * d);
    if copies == 1 {
        return (x.to_vec(), probs.to_vec());
    }
    let rows_of = |e: usize| -> Vec<Vec<Value>> {
        (0..n)
            .map(|i| decode(&x[(e * n + i) * d..(e * n + i + 1) * d]))
            .collect()
    };
    let reference = rows_of(0);
    let mut sum_x = vec![0f64; n * d];
    let mut sum_p = vec![0f64; n * d];
    for e in 0..copies {
        // perm[i]: the row of epoch e matched to row i of epoch 0.
        let perm = if e == 0 {
            (0..n).collect()
        } else {
            match_rows(rules, &reference, &rows_of(e))
        };
        for (i, &j) in perm.iter().enumerate() {
            let from = (e * n + j) * d;
            for c in 0..d {
                sum_x[i * d + c] += x[from + c] as f64;
                sum_p[i * d + c] += probs.get(from + c).copied().unwrap_or(0.0) as f64;
            }
        }
    }
    let k = copies as f64;
    let mut avg_x: Vec<f32> = sum_x.iter().map(|v| (v / k) as f32).collect();
    if probs.is_empty() {
        return (avg_x, Vec::new());
    }
    let avg_p: Vec<f32> = sum_p.iter().map(|v| (v / k) as f32).collect();
    // A categorical column's value follows from its averaged probability: (p − mean)/std.
    for &(offset, width, categorical) in &layout.blocks {
        if categorical {
            for i in 0..n {
                for c in offset..offset + width {
                    avg_x[i * d + c] = ((avg_p[i * d + c] as f64 - layout.mean[c]) / layout.std[c]) as f32;
                }
            }
        }
    }
    (avg_x, avg_p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_are_matched_to_the_first_before_they_are_averaged() {
        // One continuous column, two rows; epoch 1 holds them in the other order.
        let layout = Layout {
            blocks: vec![(0, 1, false)],
            mean: vec![0.0],
            std: vec![1.0],
            lo: vec![-10.0],
            hi: vec![10.0],
        };
        let rules = [Rule {
            categorical: false,
            tolerance: 0.5,
            follows: None,
        }];
        let x = [1.0, 5.0, 5.2, 1.2];
        let probs = [0.0; 4];
        let (avg, _) = average_epochs(&layout, &rules, &x, &probs, 2, |r| vec![Value::Num(r[0] as f64)]);
        assert!((avg[0] - 1.1).abs() < 1e-6 && (avg[1] - 5.1).abs() < 1e-6, "{avg:?}");
    }
}

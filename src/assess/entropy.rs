//! Per-cell confidence from the spread of the ensemble (SPEC §5). Lower = more trustworthy.
//! Categorical and continuous entropies live on different scales and are never mixed.

/// Normalised entropy H(p̄)/log K of the members' mean probability vector (the reference
/// notebook's "soft" variant). 0 when K = 1.
pub fn categorical_soft(member_probs: &[&[f64]]) -> f64 {
    let k = member_probs.first().map_or(0, |p| p.len());
    let mut mean = vec![0.0; k];
    for p in member_probs {
        for (m, v) in mean.iter_mut().zip(p.iter()) {
            *m += v / member_probs.len() as f64;
        }
    }
    normalised_entropy(&mean)
}

/// Normalised entropy of the relative frequency of the members' argmax (the paper's text).
pub fn categorical_hard(member_choices: &[usize], k: usize) -> f64 {
    let mut freq = vec![0.0; k];
    for &c in member_choices {
        freq[c] += 1.0 / member_choices.len() as f64;
    }
    normalised_entropy(&freq)
}

fn normalised_entropy(p: &[f64]) -> f64 {
    if p.len() < 2 {
        return 0.0;
    }
    let h: f64 = p.iter().filter(|&&v| v > 0.0).map(|&v| -v * v.ln()).sum();
    h / (p.len() as f64).ln()
}

/// The variance below which members' standardised values agree to f32 resolution.
const AGREEMENT_VARIANCE: f64 = 1e-12;

/// A proved row's cells get the entropy of an ensemble that agrees on them: 0 for a
/// categorical cell, the floored spread for a continuous one (`continuous`).
pub fn agreed(dataset: &crate::table::Dataset, cells: &mut [Option<f64>]) {
    for (f, e) in cells.iter_mut().enumerate() {
        let agreed = match dataset.features[f].is_categorical() {
            true => 0.0,
            false => continuous(&[0.0, 0.0]).unwrap_or(0.0),
        };
        *e = e.map(|_| agreed);
    }
}

/// A row that fits the update without a proof: its continuous values carry no confidence (a
/// point between two rows that share its cell fits as well), its categories keep theirs.
pub fn uncertain_continuous(dataset: &crate::table::Dataset, cells: &mut [Option<f64>]) {
    for (f, e) in cells.iter_mut().enumerate() {
        if !dataset.features[f].is_categorical() {
            *e = None;
        }
    }
}

/// The members' spread s (standardised) a continuous cell's entropy `continuous` stands for.
pub fn continuous_spread(entropy: f64) -> f64 {
    ((2.0 * (entropy - 0.5)).exp() / std::f64::consts::TAU).sqrt()
}

/// Gaussian entropy 0.5 + 0.5·log(2π s²) of the members' standardised values, with the unbiased
/// sample variance s², floored at f32 resolution (a spread of 1e-6): members that agree exactly
/// (rows proved by `attack::priors::activity`) get about −12.3, not −∞, which JSON cannot carry. None for
/// a single member.
pub fn continuous(values: &[f64]) -> Option<f64> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let var = var.max(AGREEMENT_VARIANCE);
    Some(0.5 + 0.5 * (std::f64::consts::TAU * var).ln())
}

//! Median pooling of matched ensemble members (SPEC §4) with per-cell entropies (SPEC §5).
use super::entropy;
use crate::attack::inversion::relax::Layout;

/// Pooled reconstruction: standardised rows [B][d] and an entropy per cell [B][features].
pub struct Pooled {
    pub rows: Vec<Vec<f32>>,
    pub entropy: Vec<Vec<Option<f64>>>,
}

/// Element-wise median; the lower middle value for an even count, as torch.median does.
pub fn lower_median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[(values.len() - 1) / 2]
}

/// `x` and `probs` are the members' relaxed rows and block probabilities, [N, B, d] row-major;
/// `perm[n][i]` is member n's row matched to anchor row i. `certified` ([N·B], or empty) marks
/// member rows proven to be rows of the batch (decoded in the first layer's span): where any
/// member's row matched to anchor row i is, the median is over those alone. The entropy stays the
/// whole ensemble's.
pub fn pool(
    layout: &Layout,
    x: &[f32],
    probs: &[f32],
    certified: &[bool],
    n: usize,
    b: usize,
    perm: &[Vec<usize>],
) -> Pooled {
    let d = layout.d();
    let at = |m: usize, i: usize, c: usize| (m * b + perm[m][i]) * d + c;
    let mut rows = vec![vec![0f32; d]; b];
    let mut entropy = vec![Vec::with_capacity(layout.blocks.len()); b];
    let mut column = vec![0f64; n];
    for i in 0..b {
        let sure: Vec<usize> = (0..n)
            .filter(|&m| certified.get(m * b + perm[m][i]) == Some(&true))
            .collect();
        let pooled_over: Vec<usize> = if sure.is_empty() { (0..n).collect() } else { sure };
        let mut chosen = vec![0f64; pooled_over.len()];
        for &(offset, width, categorical) in &layout.blocks {
            if categorical {
                let member_probs: Vec<Vec<f64>> = (0..n)
                    .map(|m| (offset..offset + width).map(|c| probs[at(m, i, c)] as f64).collect())
                    .collect();
                for (k, c) in (offset..offset + width).enumerate() {
                    for (&m, slot) in pooled_over.iter().zip(chosen.iter_mut()) {
                        *slot = member_probs[m][k];
                    }
                    let p = lower_median(&mut chosen);
                    rows[i][c] = ((p - layout.mean[c]) / layout.std[c]) as f32;
                }
                let refs: Vec<&[f64]> = member_probs.iter().map(Vec::as_slice).collect();
                entropy[i].push((n > 1).then(|| entropy::categorical_soft(&refs)));
            } else {
                for (m, slot) in column.iter_mut().enumerate() {
                    *slot = x[at(m, i, offset)] as f64;
                }
                entropy[i].push(entropy::continuous(&column));
                for (&m, slot) in pooled_over.iter().zip(chosen.iter_mut()) {
                    *slot = x[at(m, i, offset)] as f64;
                }
                rows[i][offset] = lower_median(&mut chosen) as f32;
            }
        }
    }
    Pooled { rows, entropy }
}

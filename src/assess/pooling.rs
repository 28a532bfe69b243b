//! Median pooling of matched ensemble members (SPEC §4) with per-cell entropies (SPEC §5).
use super::entropy;
use crate::attack::inversion::relax::Layout;

/// Pooled reconstruction: standardised rows [B][d] and an entropy per cell [B][features].
pub struct Pooled {
    pub rows: Vec<Vec<f32>>,
    pub entropy: Vec<Vec<Option<f64>>>,
}

/// A continuous column read from a categorical block (`table::determined`), in encoded terms.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadFrom {
    /// The categorical feature's block (offset, width) and the continuous column's offset...
    pub block: (usize, usize),
    pub column: usize,
    /// ...its feature's index (the entropy's cell)...
    pub feature: usize,
    /// ...and its encoded value per category (None: no row of the table holds it).
    pub values: Vec<Option<f64>>,
}

impl ReadFrom {
    pub fn of(dataset: &crate::table::Dataset, determined: &crate::table::determined::Determined) -> ReadFrom {
        let (by, column) = (&dataset.features[determined.by], &dataset.features[determined.column]);
        let c = column.offset;
        ReadFrom {
            block: (by.offset, by.width()),
            column: c,
            feature: determined.column,
            values: determined
                .values
                .iter()
                .map(|v| v.map(|v| (v - dataset.mean[c]) / dataset.std[c]))
                .collect(),
        }
    }

    /// The category of the block's largest raw value (`raw` of an encoded column), as
    /// `Dataset::decode` chooses it.
    fn category(&self, raw: impl Fn(usize) -> f64) -> usize {
        let (offset, width) = self.block;
        (0..width)
            .max_by(|&a, &b| raw(offset + a).total_cmp(&raw(offset + b)))
            .unwrap_or(0)
    }
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
/// whole ensemble's. A column the table determines from a category (`read_from`) takes the pooled
/// category's value where no member is certified, and the spread of the members' own categories'
/// values as its entropy.
#[allow(clippy::too_many_arguments)]
pub fn pool(
    layout: &Layout,
    read_from: &[ReadFrom],
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
        let any_sure = !sure.is_empty();
        let pooled_over: Vec<usize> = if any_sure { sure } else { (0..n).collect() };
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
        if !any_sure && !probs.is_empty() {
            for r in read_from {
                let pooled = r.category(|c| rows[i][c] as f64 * layout.std[c] + layout.mean[c]);
                let Some(v) = r.values[pooled] else { continue };
                rows[i][r.column] = v as f32;
                // Each member's own category's value: their spread is the cell's entropy.
                let members: Vec<f64> = (0..n)
                    .filter_map(|m| r.values[r.category(|c| probs[at(m, i, c)] as f64)])
                    .collect();
                entropy[i][r.feature] = entropy::continuous(&members);
            }
        }
    }
    Pooled { rows, entropy }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One categorical block of three (mean 0.2, std 0.5) and one continuous column.
    fn layout() -> Layout {
        Layout {
            blocks: vec![(0, 3, true), (3, 1, false)],
            mean: vec![0.2, 0.2, 0.2, 0.0],
            std: vec![0.5, 0.5, 0.5, 1.0],
            lo: vec![0.0, 0.0, 0.0, -3.0],
            hi: vec![0.0, 0.0, 0.0, 3.0],
        }
    }

    /// Three members of one row: categories 1, 1 and 2, continuous values far from the table's.
    fn members() -> (Vec<f32>, Vec<f32>) {
        let probs = vec![
            0.1, 0.8, 0.1, 0.0, //
            0.0, 0.6, 0.4, 0.0, //
            0.1, 0.2, 0.7, 0.0,
        ];
        let x = vec![0.0, 0.0, 0.0, 2.5, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.4];
        (x, probs)
    }

    #[test]
    fn a_determined_column_takes_its_pooled_categorys_value_and_the_members_spread() {
        let layout = layout();
        let (x, probs) = members();
        let perm = vec![vec![0]; 3];
        let read = ReadFrom {
            block: (0, 3),
            column: 3,
            feature: 1,
            values: vec![Some(-1.0), Some(0.5), Some(1.5)],
        };
        let alone = pool(&layout, &[], &x, &probs, &[], 3, 1, &perm);
        assert_eq!(
            alone.rows[0][3], 0.4,
            "the members' median without the table's dependency"
        );
        let read_from = pool(&layout, std::slice::from_ref(&read), &x, &probs, &[], 3, 1, &perm);
        assert_eq!(read_from.rows[0][3], 0.5, "category 1 pooled, its value taken");
        assert_eq!(read_from.entropy[0][1], entropy::continuous(&[0.5, 0.5, 1.5]));
        assert_eq!(
            read_from.entropy[0][0], alone.entropy[0][0],
            "the category's own entropy is kept"
        );
        // A member certified in the span keeps the row's values as it solved them.
        let certified = pool(&layout, &[read], &x, &probs, &[false, false, true], 3, 1, &perm);
        assert_eq!(certified.rows[0][3], 0.4);
    }
}

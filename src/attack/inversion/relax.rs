//! The softmax / sigmoid relaxation of a dummy batch (SPEC §4) and its reverse.
//!
//! Categorical blocks: p = softmax(z·std + mean) over the block, x = (p − mean)/std.
//! Continuous columns: x = (hi − lo)·σ(z) + lo with standardised bounds.
//! All blocks are handled at once: a 0/1 block-indicator matrix M [d, K] turns per-block sums
//! into two small matmuls, so the cost does not grow with the number of features.
use burn::tensor::{Device, Tensor, TensorData};

use crate::attack::inversion::pointwise::{
    sigmoid_relax, sigmoid_relax_reverse, softmax_logit, softmax_numerator, softmax_reverse, softmax_reverse_t,
    softmax_value,
};

use crate::table::Dataset;

/// Column-wise constants of the relaxation, on the device, each [1, d]. Every constant is 0 on
/// the columns of the other kind, so each column's formula contributes exactly 0 where it does not
/// apply and the two halves add up to the value of the one that does.
#[derive(Debug, Clone)]
pub struct Relaxation {
    /// std, mean and 1/std on categorical columns.
    cat_std: Tensor<2>,
    cat_mean: Tensor<2>,
    cat_inv_std: Tensor<2>,
    /// hi − lo and lo (standardised) on continuous columns.
    cont_range: Tensor<2>,
    cont_lo: Tensor<2>,
    is_cat: Tensor<2>,
    is_cont: Tensor<2>,
    /// Block indicator M [d, K], its transpose, and M / block size (for block means).
    blocks: Option<(Tensor<2>, Tensor<2>, Tensor<2>)>,
}

/// Relaxed rows and what the reverse needs.
pub struct Relaxed {
    pub x: Tensor<2>,
    /// Softmax probabilities on categorical columns (0 elsewhere), [N·B, d].
    pub probs: Tensor<2>,
    sig: Tensor<2>,
}

/// Column layout of an encoding, independent of where it came from (a dataset or a fixture).
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// (offset, width, categorical?) per feature, covering 0..d in order.
    pub blocks: Vec<(usize, usize, bool)>,
    pub mean: Vec<f64>,
    pub std: Vec<f64>,
    pub lo: Vec<f64>,
    pub hi: Vec<f64>,
}

impl Layout {
    /// The encoded columns of the continuous features, in order.
    pub fn continuous(&self) -> Vec<usize> {
        self.blocks.iter().filter(|b| !b.2).map(|b| b.0).collect()
    }

    pub fn of(dataset: &Dataset) -> Layout {
        let (lo, hi) = dataset.bounds();
        Layout {
            blocks: dataset
                .features
                .iter()
                .map(|f| (f.offset, f.width(), f.is_categorical()))
                .collect(),
            mean: dataset.mean.clone(),
            std: dataset.std.clone(),
            lo,
            hi,
        }
    }

    pub fn d(&self) -> usize {
        self.mean.len()
    }
}

fn row(values: Vec<f32>, device: &Device) -> Tensor<2> {
    let d = values.len();
    Tensor::from_data(TensorData::new(values, [1, d]), device)
}

impl Relaxation {
    pub fn new(layout: &Layout, device: &Device) -> Relaxation {
        let d = layout.d();
        let c = HostRelax::new(layout);
        let is_cat: Vec<f32> = (0..d).map(|j| c.is_cat(j) as u8 as f32).collect();
        let is_cont: Vec<f32> = is_cat.iter().map(|v| 1.0 - v).collect();
        let cat_blocks = &c.cat_blocks;
        let k = cat_blocks.len();
        let mut m = vec![0f32; d * k.max(1)];
        let mut m_avg = m.clone();
        for (j, &(offset, width)) in cat_blocks.iter().enumerate() {
            for col in offset..offset + width {
                m[col * k + j] = 1.0;
                m_avg[col * k + j] = 1.0 / width as f32;
            }
        }
        let blocks = (k > 0).then(|| {
            let m = Tensor::<2>::from_data(TensorData::new(m, [d, k]), device);
            let m_avg = Tensor::<2>::from_data(TensorData::new(m_avg, [d, k]), device);
            (m.clone(), m.transpose(), m_avg)
        });
        Relaxation {
            cat_std: row(c.std.clone(), device),
            cat_mean: row(c.mean.clone(), device),
            cat_inv_std: row(c.inv_std.clone(), device),
            cont_range: row(c.range.clone(), device),
            cont_lo: row(c.lo.clone(), device),
            is_cat: row(is_cat, device),
            is_cont: row(is_cont, device),
            blocks,
        }
    }

    /// Per-column block sums broadcast back to the block's columns: (t M) Mᵀ.
    fn block_sum(&self, t: Tensor<2>) -> Tensor<2> {
        let (m, mt, _) = self.blocks.as_ref().unwrap();
        t.matmul(m.clone()).matmul(mt.clone())
    }

    /// z [N·B, d] → relaxed rows.
    pub fn forward(&self, z: &Tensor<2>) -> Relaxed {
        let (mut x, sig) = sigmoid_relax(z.clone(), self.cont_range.clone(), self.cont_lo.clone());
        let mut probs = z.zeros_like();
        if let Some((_, mt, m_avg)) = &self.blocks {
            let u = softmax_logit(z.clone(), self.cat_std.clone(), self.cat_mean.clone());
            let centre = u.clone().matmul(m_avg.clone()).matmul(mt.clone());
            let e = softmax_numerator(u, centre) * self.is_cat.clone();
            let sums = self.block_sum(e.clone()) + self.is_cont.clone();
            probs = e / sums;
            x = x + softmax_value(probs.clone(), self.cat_mean.clone(), self.cat_inv_std.clone());
        }
        Relaxed { x, probs, sig }
    }

    /// dL/dx → dL/dz.
    pub fn backward(&self, relaxed: &Relaxed, x_bar: Tensor<2>) -> Tensor<2> {
        let mut z_bar = sigmoid_relax_reverse(x_bar.clone(), self.cont_range.clone(), relaxed.sig.clone());
        if self.blocks.is_some() {
            let p = relaxed.probs.clone();
            let t = softmax_reverse_t(p.clone(), x_bar, self.cat_inv_std.clone());
            let sum = self.block_sum(t.clone());
            z_bar = z_bar + softmax_reverse(t, p, sum, self.cat_std.clone());
        }
        z_bar
    }
}

/// The relaxation's constants per encoded column on the host: what the definition uploads and the
/// CPU kernel reads. 0 on the columns of the other kind (see `Relaxation`).
#[derive(Debug, Clone, PartialEq)]
pub struct HostRelax {
    /// (offset, width) of each categorical block, and the continuous columns.
    pub cat_blocks: Vec<(usize, usize)>,
    pub cont_cols: Vec<usize>,
    pub std: Vec<f32>,
    pub mean: Vec<f32>,
    pub inv_std: Vec<f32>,
    pub range: Vec<f32>,
    pub lo: Vec<f32>,
}

impl HostRelax {
    pub fn new(layout: &Layout) -> HostRelax {
        let d = layout.d();
        let mut r = HostRelax {
            cat_blocks: Vec::new(),
            cont_cols: Vec::new(),
            std: vec![0.0; d],
            mean: vec![0.0; d],
            inv_std: vec![0.0; d],
            range: vec![0.0; d],
            lo: vec![0.0; d],
        };
        for &(offset, width, cat) in &layout.blocks {
            if cat {
                r.cat_blocks.push((offset, width));
                for c in offset..offset + width {
                    let std = layout.std[c] as f32;
                    r.std[c] = std;
                    r.mean[c] = layout.mean[c] as f32;
                    r.inv_std[c] = 1.0 / std;
                }
            } else {
                for c in offset..offset + width {
                    r.cont_cols.push(c);
                    r.range[c] = (layout.hi[c] - layout.lo[c]) as f32;
                    r.lo[c] = layout.lo[c] as f32;
                }
            }
        }
        r
    }

    pub fn is_cat(&self, column: usize) -> bool {
        self.cat_blocks.iter().any(|&(o, w)| (o..o + w).contains(&column))
    }

    pub fn d(&self) -> usize {
        self.std.len()
    }
}

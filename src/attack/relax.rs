//! The softmax / sigmoid relaxation of a dummy batch (SPEC §4) and its reverse.
//!
//! Categorical blocks: p = softmax(z·std + mean) over the block, x = (p − mean)/std.
//! Continuous columns: x = (hi − lo)·σ(z) + lo with standardised bounds.
//! All blocks are handled at once: a 0/1 block-indicator matrix M [d, K] turns per-block sums
//! into two small matmuls, so the cost does not grow with the number of features.
use burn::tensor::{Device, Tensor, TensorData, activation};

use crate::table::Dataset;

/// Column-wise constants of the relaxation, on the device. Each is [1, d] unless said.
#[derive(Debug, Clone)]
pub struct Relaxation {
    /// std on categorical columns, 0 elsewhere: u = z·cat_scale + cat_mean.
    cat_scale: Tensor<2>,
    cat_mean: Tensor<2>,
    /// 1/std on categorical columns, 0 elsewhere.
    cat_inv_std: Tensor<2>,
    /// mean/std on categorical columns: x = p·cat_inv_std − cat_offset.
    cat_offset: Tensor<2>,
    is_cont: Tensor<2>,
    is_cat: Tensor<2>,
    cont_range: Tensor<2>,
    cont_lo: Tensor<2>,
    /// Block indicator [d, K], its transpose, and M / block size (for block means).
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
        let mut v = vec![vec![0f32; d]; 7];
        let cat_blocks: Vec<_> = layout.blocks.iter().filter(|b| b.2).collect();
        let k = cat_blocks.len();
        let mut m = vec![0f32; d * k.max(1)];
        let mut m_avg = m.clone();
        for &(offset, width, cat) in &layout.blocks {
            for c in offset..offset + width {
                let (mean, std) = (layout.mean[c] as f32, layout.std[c] as f32);
                if cat {
                    v[0][c] = std;
                    v[1][c] = mean;
                    v[2][c] = 1.0 / std;
                    v[3][c] = mean / std;
                } else {
                    v[4][c] = 1.0;
                    v[5][c] = (layout.hi[c] - layout.lo[c]) as f32;
                    v[6][c] = layout.lo[c] as f32;
                }
            }
        }
        for (j, &&(offset, width, _)) in cat_blocks.iter().enumerate() {
            for c in offset..offset + width {
                m[c * k + j] = 1.0;
                m_avg[c * k + j] = 1.0 / width as f32;
            }
        }
        let blocks = (k > 0).then(|| {
            let m = Tensor::<2>::from_data(TensorData::new(m, [d, k]), device);
            let m_avg = Tensor::<2>::from_data(TensorData::new(m_avg, [d, k]), device);
            (m.clone(), m.transpose(), m_avg)
        });
        let mut it = v.into_iter().map(|r| row(r, device));
        let mut next = || it.next().unwrap();
        let cat_scale = next();
        let cat_mean = next();
        let cat_inv_std = next();
        let cat_offset = next();
        let is_cont = next();
        Relaxation {
            is_cat: is_cont.clone().neg() + 1.0,
            cat_scale,
            cat_mean,
            cat_inv_std,
            cat_offset,
            is_cont,
            cont_range: next(),
            cont_lo: next(),
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
        let sig = activation::sigmoid(z.clone());
        let mut x = sig.clone() * self.cont_range.clone() + self.cont_lo.clone();
        let mut probs = z.zeros_like();
        if let Some((_, mt, m_avg)) = &self.blocks {
            let u = z.clone() * self.cat_scale.clone() + self.cat_mean.clone();
            // Softmax is shift-invariant per block; subtracting the block mean (and capping what is
            // left) keeps exp in range without changing the value or its derivative.
            let centre = u.clone().matmul(m_avg.clone()).matmul(mt.clone());
            let e = (u - centre).clamp_max(80.0).exp() * self.is_cat.clone();
            let sums = self.block_sum(e.clone()) + self.is_cont.clone();
            probs = e / sums;
            x = x + probs.clone() * self.cat_inv_std.clone() - self.cat_offset.clone();
        }
        Relaxed { x, probs, sig }
    }

    /// dL/dx → dL/dz.
    pub fn backward(&self, relaxed: &Relaxed, x_bar: Tensor<2>) -> Tensor<2> {
        let s = relaxed.sig.clone();
        let mut z_bar = x_bar.clone() * self.cont_range.clone() * s.clone() * (s.neg() + 1.0);
        if self.blocks.is_some() {
            let p = relaxed.probs.clone();
            let t = p.clone() * x_bar * self.cat_inv_std.clone();
            let u_bar = t.clone() - p * self.block_sum(t);
            z_bar = z_bar + u_bar * self.cat_scale.clone();
        }
        z_bar
    }
}

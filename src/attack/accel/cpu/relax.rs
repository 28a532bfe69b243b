//! The relaxation's forward and reverse on a group's rows, with the definition's formulas
//! (`attack::inversion::relax`, `attack::inversion::pointwise`): loops over each block instead of matmuls with a block
//! indicator.
use crate::attack::inversion::pointwise::{
    sigmoid_relax, sigmoid_relax_reverse, softmax_logit, softmax_numerator, softmax_reverse, softmax_reverse_t,
    softmax_value,
};
use crate::attack::inversion::relax::HostRelax;

/// The relaxation's forward and reverse on a group's rows, with the definition's formulas.
pub trait Relax {
    fn forward_rows(&self, z: &[f32], x: &mut [f32], probs: &mut [f32], sig: &mut [f32]);
    fn reverse_rows(&self, x_bar: &[f32], probs: &[f32], sig: &[f32], z_bar: &mut [f32]);
}

impl Relax for HostRelax {
    #[inline(always)]
    fn forward_rows(&self, z: &[f32], x: &mut [f32], probs: &mut [f32], sig: &mut [f32]) {
        let d = self.d();
        for (row, zr) in z.chunks_exact(d).enumerate() {
            let r = row * d..(row + 1) * d;
            let (x, p, s) = (&mut x[r.clone()], &mut probs[r.clone()], &mut sig[r]);
            for &c in &self.cont_cols {
                (x[c], s[c]) = sigmoid_relax(zr[c], self.range[c], self.lo[c]);
            }
            for &(off, w) in &self.cat_blocks {
                let cols = off..off + w;
                let mut mean = 0.0;
                for c in cols.clone() {
                    p[c] = softmax_logit(zr[c], self.std[c], self.mean[c]);
                    mean += p[c];
                }
                mean /= w as f32;
                let mut sum = 0.0;
                for c in cols.clone() {
                    p[c] = softmax_numerator(p[c], mean);
                    sum += p[c];
                }
                for c in cols {
                    p[c] /= sum;
                    x[c] = softmax_value(p[c], self.mean[c], self.inv_std[c]);
                }
            }
        }
    }

    #[inline(always)]
    fn reverse_rows(&self, x_bar: &[f32], probs: &[f32], sig: &[f32], z_bar: &mut [f32]) {
        let d = self.d();
        for row in 0..x_bar.len() / d {
            let r = row * d..(row + 1) * d;
            let (xb, p, s, zb) = (&x_bar[r.clone()], &probs[r.clone()], &sig[r.clone()], &mut z_bar[r]);
            for &c in &self.cont_cols {
                zb[c] = sigmoid_relax_reverse(xb[c], self.range[c], s[c]);
            }
            for &(off, w) in &self.cat_blocks {
                let mut total = 0.0;
                for c in off..off + w {
                    zb[c] = softmax_reverse_t(p[c], xb[c], self.inv_std[c]);
                    total += zb[c];
                }
                for c in off..off + w {
                    zb[c] = softmax_reverse(zb[c], p[c], total, self.std[c]);
                }
            }
        }
    }
}

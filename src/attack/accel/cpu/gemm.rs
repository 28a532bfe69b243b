//! The kernel's arithmetic helpers: gemm with strides for transposes, and vectorisable loops.
use gemm::{Parallelism, gemm};

use crate::attack::inversion::pointwise::objective_gradient;

/// dst[m×n] (+)= lhs[m×k] · rhs[k×n]; dst row-major, operands given by (row stride, column stride).
#[allow(clippy::too_many_arguments)]
pub fn mm(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [f32],
    accumulate: bool,
    lhs: &[f32],
    lhs_strides: (isize, isize),
    rhs: &[f32],
    rhs_strides: (isize, isize),
) {
    let last = |(rs, cs): (isize, isize), rows: usize, cols: usize| {
        (rows.max(1) - 1) as isize * rs + (cols.max(1) - 1) as isize * cs
    };
    assert!(dst.len() >= m * n);
    assert!(m == 0 || k == 0 || (last(lhs_strides, m, k) as usize) < lhs.len());
    assert!(n == 0 || k == 0 || (last(rhs_strides, k, n) as usize) < rhs.len());
    if k == 0 {
        if !accumulate {
            dst[..m * n].iter_mut().for_each(|v| *v = 0.0);
        }
        return;
    }
    // SAFETY: the asserts above keep every index gemm touches inside the three slices, and dst
    // does not alias lhs or rhs (distinct borrows).
    unsafe {
        gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            accumulate,
            lhs.as_ptr(),
            lhs_strides.1,
            lhs_strides.0,
            rhs.as_ptr(),
            rhs_strides.1,
            rhs_strides.0,
            1.0,
            1.0,
            false,
            false,
            false,
            Parallelism::None,
        );
    }
}

/// Row-major [rows, cols] strides, and those of its transpose.
pub fn rm(cols: usize) -> (isize, isize) {
    (cols as isize, 1)
}
pub fn tr(cols: usize) -> (isize, isize) {
    (1, cols as isize)
}

/// G = α·t + β·g, in place over one member's gradient tensor.
#[inline(always)]
pub fn mix(g: &mut [f32], t: &[f32], alpha: f32, beta: f32) {
    g.iter_mut()
        .zip(t)
        .for_each(|(a, &c)| *a = objective_gradient(c, alpha, *a, beta));
}

/// Zero the entries of `v` where the ReLU output `h` is not positive (branch-free, so it vectorises).
#[inline(always)]
pub fn relu_mask(v: &mut [f32], h: &[f32]) {
    v.iter_mut()
        .zip(h)
        .for_each(|(v, h)| *v = if *h > 0.0 { *v } else { 0.0 });
}

/// Column sums of a row-major [rows, cols] block into `out` [cols] (overwritten).
#[inline(always)]
pub fn column_sums(out: &mut [f32], block: &[f32]) {
    out.iter_mut().for_each(|v| *v = 0.0);
    for row in block.chunks_exact(out.len()) {
        out.iter_mut().zip(row).for_each(|(acc, v)| *acc += v);
    }
}

/// Dot product with 16 independent f32 partial sums (vectorises; each lane sums a few thousand
/// terms at most, so f32 is ample), combined in f64.
#[inline(always)]
pub fn dot_f32(a: &[f32], b: &[f32]) -> f64 {
    let mut lanes = [0f32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| (*x as f64) * (*y as f64))
        .sum();
    for (x, y) in ca.zip(cb) {
        // Fixed-size arrays let the compiler see 16 independent lanes and vectorise them.
        let (x, y): (&[f32; 16], &[f32; 16]) = (x.try_into().unwrap(), y.try_into().unwrap());
        for k in 0..16 {
            lanes[k] += x[k] * y[k];
        }
    }
    lanes.iter().map(|&v| v as f64).sum::<f64>() + tail
}

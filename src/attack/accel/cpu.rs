//! The inversion step fused for the CPU: an accelerator of the definition (`attack::inversion`),
//! computing the same math (relaxation, forward pass, explicit backward, objective, the hand-derived
//! reverse, sign-Adam) member group by member group on buffers allocated once, with `gemm` calls
//! whose transposes are strides. Every element-wise formula is the definition's own
//! (`attack::pointwise`); tests/step_equality.rs holds whole runs of the two together.
//!
//! Why it exists: on burn's CPU backend one step is ~100 tensor ops, each allocating its output
//! and sweeping memory; measured at N=30, B=32 that spent three quarters of the time outside the
//! matmuls (33 ms/step). Here a step allocates nothing, member groups run in parallel (rayon
//! natively, one group in wasm), and the matmuls dominate.
use gemm::{Parallelism, gemm};

use crate::attack::driver::{Cadence, Inversion, InversionConfig, Progress, Stepper, drive, member_starts};
use crate::attack::objective::Objective;
use crate::attack::pointwise::{
    AdamStep, SQUARED_ERROR_ALPHA, SQUARED_ERROR_BETA, adam, cosine_terms, objective_gradient, sigmoid_relax,
    sigmoid_relax_reverse, softmax_logit, softmax_numerator, softmax_reverse, softmax_reverse_t, softmax_value,
};
use crate::attack::relax::{HostRelax, Layout};
use crate::error::Result;

/// Everything constant during one inversion, on the host.
pub struct HostProblem {
    sizes: Vec<usize>,
    w: Vec<Vec<f32>>,
    b: Vec<Vec<f32>>,
    /// Observed update, per layer: weights [in, out] then biases [out].
    tw: Vec<Vec<f32>>,
    tb: Vec<Vec<f32>>,
    tnorm: f32,
    /// Labels one-hot [B, C].
    onehot: Vec<f32>,
    batch: usize,
    relax: Option<HostRelax>,
    objective: Objective,
}

impl HostProblem {
    /// `observed` holds the update tensor by tensor: every layer's W, then every layer's b.
    pub fn new(
        params: &crate::client::Params,
        observed: &[Vec<f32>],
        onehot: Vec<f32>,
        layout: Option<&Layout>,
        objective: Objective,
    ) -> HostProblem {
        let layers = params.layers();
        let tnorm = crate::client::defence::l2_norm(observed) as f32;
        let classes = *params.sizes.last().unwrap();
        HostProblem {
            sizes: params.sizes.clone(),
            w: params.weights.clone(),
            b: params.biases.clone(),
            tw: observed[..layers].to_vec(),
            tb: observed[layers..].to_vec(),
            tnorm: tnorm.max(1e-30),
            batch: onehot.len() / classes,
            onehot,
            relax: layout.map(HostRelax::new),
            objective,
        }
    }

    fn layers(&self) -> usize {
        self.w.len()
    }

    /// Width of an encoded row.
    pub fn d(&self) -> usize {
        self.sizes[0]
    }

    /// Layer widths [d, hidden..., classes].
    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Layer l's weights [in, out] and biases [out].
    pub fn layer(&self, l: usize) -> (&[f32], &[f32]) {
        (&self.w[l], &self.b[l])
    }

    /// The observed update's part for layer l, laid out as the layer: W then b.
    pub fn observed(&self, l: usize) -> (&[f32], &[f32]) {
        (&self.tw[l], &self.tb[l])
    }

    pub fn target_norm(&self) -> f32 {
        self.tnorm
    }

    pub fn onehot(&self) -> &[f32] {
        &self.onehot
    }

    pub fn objective(&self) -> Objective {
        self.objective
    }

    /// The features as (offset, width, categorical) in column order; without a relaxation every
    /// column is its own continuous-like segment.
    pub fn segments(&self) -> Vec<(usize, usize, bool)> {
        match &self.relax {
            Some(r) => {
                let mut s: Vec<(usize, usize, bool)> = r.cat_blocks.iter().map(|&(o, w)| (o, w, true)).collect();
                s.extend(r.cont_cols.iter().map(|&c| (c, 1, false)));
                s.sort_unstable();
                s
            }
            None => (0..self.d()).map(|c| (c, 1, false)).collect(),
        }
    }

    /// The relaxation's constants as rows [std | mean | 1/std | hi − lo | lo], each d long.
    pub fn relax_constants(&self) -> Option<Vec<f32>> {
        self.relax.as_ref().map(|r| {
            [&r.std, &r.mean, &r.inv_std, &r.range, &r.lo]
                .into_iter()
                .flat_map(|v| v.iter().copied())
                .collect()
        })
    }
}

/// dst[m×n] (+)= lhs[m×k] · rhs[k×n]; dst row-major, operands given by (row stride, column stride).
#[allow(clippy::too_many_arguments)]
fn mm(
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
fn rm(cols: usize) -> (isize, isize) {
    (cols as isize, 1)
}
fn tr(cols: usize) -> (isize, isize) {
    (1, cols as isize)
}

/// Buffers of a group of `g` members (their rows stacked: [g·B, ·]), allocated once per inversion.
struct Workspace {
    g: usize,
    x: Vec<f32>,
    probs: Vec<f32>,
    sig: Vec<f32>,
    /// Output of each layer: ReLU'd activations, and the softmax for the last.
    h: Vec<Vec<f32>>,
    delta: Vec<Vec<f32>>,
    /// Per-member parameter gradients, [g, in, out] and [g, out].
    gw: Vec<Vec<f32>>,
    gb: Vec<Vec<f32>>,
    /// dL/d(input of layer l), [g·B, in_l].
    h_bar: Vec<Vec<f32>>,
    /// dL/dδ_l, later reused for dL/da_l.
    d_bar: Vec<Vec<f32>>,
    z_bar: Vec<f32>,
    loss: Vec<f32>,
}

impl Workspace {
    fn new(p: &HostProblem, g: usize) -> Workspace {
        let (rows, d) = (g * p.batch, p.d());
        let per_layer = |f: &dyn Fn(usize, usize) -> usize| -> Vec<Vec<f32>> {
            p.sizes.windows(2).map(|s| vec![0.0; f(s[0], s[1])]).collect()
        };
        Workspace {
            g,
            x: vec![0.0; rows * d],
            probs: vec![0.0; rows * d],
            sig: vec![0.0; rows * d],
            h: per_layer(&|_, o| rows * o),
            delta: per_layer(&|_, o| rows * o),
            gw: per_layer(&|i, o| g * i * o),
            gb: per_layer(&|_, o| g * o),
            h_bar: per_layer(&|i, _| rows * i),
            d_bar: per_layer(&|_, o| rows * o),
            z_bar: vec![0.0; rows * d],
            loss: vec![0.0; g],
        }
    }
}

/// The relaxation's forward and reverse on a group's rows, with the definition's formulas.
trait Relax {
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

impl HostProblem {
    /// Per-member losses (into ws.loss) of the group's rows already in ws.x, and, with `grad`,
    /// dL/dx in ws.h_bar[0]. Products with the shared weights run over all g·B rows at once.
    #[inline(always)]
    fn loss(&self, ws: &mut Workspace, grad: bool) {
        let (b, layers, g) = (self.batch, self.layers(), ws.g);
        let rows = g * b;
        let sizes = &self.sizes;
        // Forward.
        for l in 0..layers {
            let (i, o) = (sizes[l], sizes[l + 1]);
            let (before, rest) = ws.h.split_at_mut(l);
            let input: &[f32] = if l == 0 { &ws.x } else { &before[l - 1] };
            let out = &mut rest[0];
            for row in out.chunks_exact_mut(o) {
                row.copy_from_slice(&self.b[l]);
            }
            mm(rows, o, i, out, true, input, rm(i), &self.w[l], rm(o));
            if l + 1 < layers {
                out.iter_mut().for_each(|v| *v = v.max(0.0));
            } else {
                for row in out.chunks_exact_mut(o) {
                    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let mut sum = 0.0;
                    row.iter_mut().for_each(|v| {
                        *v = (*v - max).exp();
                        sum += *v;
                    });
                    row.iter_mut().for_each(|v| *v /= sum);
                }
            }
        }
        // Backward: δ_{L-1} = (softmax − y)/B, gW_l = h_{l-1}ᵀ δ_l, δ_{l-1} = δ_l W_lᵀ ⊙ [h_{l-1} > 0].
        let inv_b = 1.0 / b as f32;
        let c = sizes[layers];
        for (dl, s) in ws.delta[layers - 1]
            .chunks_exact_mut(b * c)
            .zip(ws.h[layers - 1].chunks_exact(b * c))
        {
            for ((dv, sv), y) in dl.iter_mut().zip(s).zip(&self.onehot) {
                *dv = (sv - y) * inv_b;
            }
        }
        for l in (0..layers).rev() {
            let (i, o) = (sizes[l], sizes[l + 1]);
            let input: &[f32] = if l == 0 { &ws.x } else { &ws.h[l - 1] };
            for k in 0..g {
                let (inp, del) = (
                    &input[k * b * i..(k + 1) * b * i],
                    &ws.delta[l][k * b * o..(k + 1) * b * o],
                );
                mm(
                    i,
                    o,
                    b,
                    &mut ws.gw[l][k * i * o..(k + 1) * i * o],
                    false,
                    inp,
                    tr(i),
                    del,
                    rm(o),
                );
                let gb = &mut ws.gb[l][k * o..(k + 1) * o];
                gb.iter_mut().for_each(|v| *v = 0.0);
                for row in del.chunks_exact(o) {
                    gb.iter_mut().zip(row).for_each(|(acc, v)| *acc += v);
                }
            }
            if l > 0 {
                let (lower, upper) = ws.delta.split_at_mut(l);
                let prev = &mut lower[l - 1];
                mm(rows, i, o, prev, false, &upper[0], rm(o), &self.w[l], tr(o));
                relu_mask(prev, &ws.h[l - 1]);
            }
        }
        // Objective per member, and G = dL/d(parameter gradient) written over gw/gb.
        for k in 0..g {
            let (mut dot, mut nn, mut sq) = (0f64, 0f64, 0f64);
            for l in 0..layers {
                let (i, o) = (sizes[l], sizes[l + 1]);
                let gw = &ws.gw[l][k * i * o..(k + 1) * i * o];
                let gb = &ws.gb[l][k * o..(k + 1) * o];
                for (gv, tv) in [(gw, &self.tw[l]), (gb, &self.tb[l])] {
                    match self.objective {
                        Objective::Cosine => {
                            dot += dot_f32(gv, tv);
                            nn += dot_f32(gv, gv);
                        }
                        Objective::SquaredError => {
                            sq += gv
                                .iter()
                                .zip(tv.iter())
                                .map(|(a, t)| ((a - t) as f64).powi(2))
                                .sum::<f64>();
                        }
                    }
                }
            }
            let (loss, alpha, beta) = match self.objective {
                Objective::Cosine => {
                    let (loss, alpha, beta) = cosine_terms(dot, nn, self.tnorm);
                    (loss as f32, alpha as f32, beta as f32)
                }
                Objective::SquaredError => (sq as f32, SQUARED_ERROR_ALPHA, SQUARED_ERROR_BETA),
            };
            ws.loss[k] = loss;
            if grad {
                for l in 0..layers {
                    let (i, o) = (sizes[l], sizes[l + 1]);
                    mix(&mut ws.gw[l][k * i * o..(k + 1) * i * o], &self.tw[l], alpha, beta);
                    mix(&mut ws.gb[l][k * o..(k + 1) * o], &self.tb[l], alpha, beta);
                }
            }
        }
        if grad {
            self.reverse(ws);
        }
    }

    /// Reverse of the explicit backward and forward passes: G (in gw/gb) → dL/dx in h_bar[0].
    #[inline(always)]
    fn reverse(&self, ws: &mut Workspace) {
        let (b, layers, g) = (self.batch, self.layers(), ws.g);
        let rows = g * b;
        let sizes = &self.sizes;
        for l in 0..layers {
            let (i, o) = (sizes[l], sizes[l + 1]);
            let input: &[f32] = if l == 0 { &ws.x } else { &ws.h[l - 1] };
            let (lower, upper) = ws.d_bar.split_at_mut(l);
            let db = &mut upper[0];
            for k in 0..g {
                // From gW_l = h_{l-1}ᵀ δ_l: dL/dh_{l-1} = δ_l Gᵀ and dL/dδ_l = h_{l-1} G (+ G_b per row).
                let (gw, gb) = (&ws.gw[l][k * i * o..(k + 1) * i * o], &ws.gb[l][k * o..(k + 1) * o]);
                let del = &ws.delta[l][k * b * o..(k + 1) * b * o];
                mm(
                    b,
                    i,
                    o,
                    &mut ws.h_bar[l][k * b * i..(k + 1) * b * i],
                    false,
                    del,
                    rm(o),
                    gw,
                    tr(o),
                );
                let dbk = &mut db[k * b * o..(k + 1) * b * o];
                for row in dbk.chunks_exact_mut(o) {
                    row.copy_from_slice(gb);
                }
                mm(b, o, i, dbk, true, &input[k * b * i..(k + 1) * b * i], rm(i), gw, rm(o));
            }
            if l > 0 {
                // δ_{l-1} = (δ_l W_lᵀ) ⊙ mask: dL/dδ_l += (dL/dδ_{l-1} ⊙ mask) W_l.
                let prev = &mut lower[l - 1];
                relu_mask(prev, &ws.h[l - 1]);
                mm(rows, o, i, db, true, prev, rm(i), &self.w[l], rm(o));
            }
        }
        // δ = (s − y)/B → dL/da = s ⊙ (s̄ − Σ s̄ s), with s̄ = dL/dδ / B.
        let c = sizes[layers];
        let inv_b = 1.0 / b as f32;
        for (db, s) in ws.d_bar[layers - 1]
            .chunks_exact_mut(c)
            .zip(ws.h[layers - 1].chunks_exact(c))
        {
            let inner: f32 = db.iter().zip(s).map(|(g, p)| g * inv_b * p).sum();
            db.iter_mut().zip(s).for_each(|(g, p)| *g = p * (*g * inv_b - inner));
        }
        for l in (0..layers).rev() {
            let (i, o) = (sizes[l], sizes[l + 1]);
            let (lower, upper) = ws.d_bar.split_at_mut(l);
            mm(rows, i, o, &mut ws.h_bar[l], true, &upper[0], rm(o), &self.w[l], tr(o));
            if l > 0 {
                let a_prev = &mut lower[l - 1];
                a_prev.copy_from_slice(&ws.h_bar[l]);
                relu_mask(a_prev, &ws.h[l - 1]);
            }
        }
    }

    /// Losses (into ws.loss) and dL/dz (into ws.z_bar) of a group at z ([g·B, d]).
    #[inline(always)]
    fn loss_and_grad(&self, z: &[f32], ws: &mut Workspace) {
        match &self.relax {
            Some(r) => r.forward_rows(z, &mut ws.x, &mut ws.probs, &mut ws.sig),
            None => ws.x.copy_from_slice(z),
        }
        self.loss(ws, true);
        match &self.relax {
            Some(r) => r.reverse_rows(&ws.h_bar[0], &ws.probs, &ws.sig, &mut ws.z_bar),
            None => ws.z_bar.copy_from_slice(&ws.h_bar[0]),
        }
    }
}

/// Per-member loss of rows already in encoded space ([N, B, d] row-major), one member at a time
/// on one small workspace (the anchor's scoring must not hold a whole ensemble's buffers).
pub fn member_losses(p: &HostProblem, x: &[f32]) -> Vec<f32> {
    let len = p.batch * p.d();
    let mut ws = Workspace::new(p, 1);
    x.chunks_exact(len)
        .map(|member| {
            ws.x.copy_from_slice(member);
            p.loss(&mut ws, false);
            ws.loss[0]
        })
        .collect()
}

/// Losses and d(Σ loss)/dz for all members at z ([N, B, d]), as one group; for tests.
pub fn loss_and_grad(p: &HostProblem, z: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let mut ws = Workspace::new(p, z.len() / (p.batch * p.d()));
    p.loss_and_grad(z, &mut ws);
    (ws.loss, ws.z_bar)
}

/// A group of members optimised by one task: their rows, Adam moments and buffers.
struct Group<'a> {
    z: &'a mut [f32],
    m: &'a mut [f32],
    v: &'a mut [f32],
    ws: &'a mut Workspace,
}

/// Loss, gradient and Adam update of one group.
#[inline(always)]
fn group_step_body(p: &HostProblem, gr: Group<'_>, a: &AdamStep) {
    p.loss_and_grad(gr.z, gr.ws);
    for (((z, m), v), &g) in
        gr.z.iter_mut()
            .zip(gr.m.iter_mut())
            .zip(gr.v.iter_mut())
            .zip(&gr.ws.z_bar)
    {
        (*z, *m, *v) = adam(*z, *m, *v, g, a);
    }
}

/// The same, compiled for AVX2 + FMA: the elementwise loops run 8 lanes wide instead of SSE2's 4.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn group_step_avx2(p: &HostProblem, gr: Group<'_>, a: &AdamStep) {
    group_step_body(p, gr, a)
}

fn group_step(p: &HostProblem, gr: Group<'_>, a: &AdamStep) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function was compiled for (checked just above).
        return unsafe { group_step_avx2(p, gr, a) };
    }
    group_step_body(p, gr, a)
}

#[cfg(feature = "rayon")]
fn for_each_group(groups: Vec<Group<'_>>, f: impl Fn(Group<'_>) + Sync + Send) {
    use rayon::prelude::*;
    groups.into_par_iter().for_each(f);
}

#[cfg(not(feature = "rayon"))]
fn for_each_group(groups: Vec<Group<'_>>, f: impl Fn(Group<'_>)) {
    groups.into_iter().for_each(f);
}

/// Members per group: one group per thread, so each thread folds its members' shared-weight
/// products into a few large matmuls (one group in a single-threaded build).
fn group_size(members: usize) -> usize {
    #[cfg(feature = "rayon")]
    let threads = rayon::current_num_threads().max(1);
    #[cfg(not(feature = "rayon"))]
    let threads = 1;
    members.div_ceil(threads).max(1)
}

/// The kernel's state: every member's z and Adam moments, and one workspace per group.
struct CpuStepper<'a> {
    p: &'a HostProblem,
    members: usize,
    per_group: usize,
    z: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
    workspaces: Vec<Workspace>,
    requested: std::collections::VecDeque<(usize, Vec<f32>)>,
}

impl Stepper for CpuStepper<'_> {
    fn step(&mut self, adam: &AdamStep) -> Result<()> {
        let chunk = self.per_group * self.p.batch * self.p.d();
        let groups: Vec<Group<'_>> = self
            .z
            .chunks_mut(chunk)
            .zip(self.m.chunks_mut(chunk))
            .zip(self.v.chunks_mut(chunk))
            .zip(self.workspaces.iter_mut())
            .map(|(((z, m), v), ws)| Group { z, m, v, ws })
            .collect();
        let p = self.p;
        for_each_group(groups, |gr| group_step(p, gr, adam));
        Ok(())
    }

    fn request_losses(&mut self, step: usize) -> Result<()> {
        let losses: Vec<f32> = self.workspaces.iter().flat_map(|ws| ws.loss.iter().copied()).collect();
        debug_assert_eq!(losses.len(), self.members);
        self.requested.push_back((step, losses));
        Ok(())
    }

    async fn take_losses(&mut self) -> Result<Option<(usize, Vec<f32>)>> {
        Ok(self.requested.pop_front())
    }

    /// The final relaxation of every member: only the rows and probabilities are kept.
    async fn finish(self) -> Result<(Vec<f32>, Vec<f32>)> {
        let Some(r) = &self.p.relax else {
            return Ok((self.z, Vec::new()));
        };
        drop(self.workspaces);
        let len = self.z.len();
        let (mut x, mut probs, mut sig) = (vec![0f32; len], vec![0f32; len], vec![0f32; len]);
        drop((self.m, self.v));
        r.forward_rows(&self.z, &mut x, &mut probs, &mut sig);
        Ok((x, probs))
    }
}

/// The whole optimisation on the CPU; same contract as `inversion::invert`.
pub async fn invert(
    p: &HostProblem,
    config: &InversionConfig,
    cadence: Cadence,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Inversion> {
    let n = config.members;
    let len = p.batch * p.d();
    let per_group = group_size(n);
    let z = member_starts(config);
    let workspaces = z
        .chunks(per_group * len)
        .map(|chunk| Workspace::new(p, chunk.len() / len))
        .collect();
    let stepper = CpuStepper {
        p,
        members: n,
        per_group,
        m: vec![0f32; n * len],
        v: vec![0f32; n * len],
        z,
        workspaces,
        requested: Default::default(),
    };
    drive(stepper, config, cadence, progress).await
}

/// G = α·t + β·g, in place over one member's gradient tensor.
#[inline(always)]
fn mix(g: &mut [f32], t: &[f32], alpha: f32, beta: f32) {
    g.iter_mut()
        .zip(t)
        .for_each(|(a, &c)| *a = objective_gradient(c, alpha, *a, beta));
}

/// Zero the entries of `v` where the ReLU output `h` is not positive (branch-free, so it vectorises).
#[inline(always)]
fn relu_mask(v: &mut [f32], h: &[f32]) {
    v.iter_mut()
        .zip(h)
        .for_each(|(v, h)| *v = if *h > 0.0 { *v } else { 0.0 });
}

/// Dot product with 16 independent f32 partial sums (vectorises; each lane sums a few thousand
/// terms at most, so f32 is ample), combined in f64.
#[inline(always)]
fn dot_f32(a: &[f32], b: &[f32]) -> f64 {
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

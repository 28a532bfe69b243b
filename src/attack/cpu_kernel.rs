//! The inversion step fused for the CPU: the same math as `client::gradient` + `attack::relax`
//! (forward, explicit backward, hand-derived reverse, relaxation, sign-Adam), but member by member
//! on preallocated buffers with `gemm` calls whose transposes are strides.
//!
//! Why it exists: on burn's CPU backend one step is ~100 tensor ops, each allocating its output
//! and sweeping memory; measured at N=30, B=32 that spent three quarters of the time outside the
//! matmuls (33 ms/step). Here a step allocates nothing, members run in parallel (rayon natively,
//! sequentially in wasm), and the matmuls dominate. The burn path remains for GPUs/WebGPU, and
//! tests hold the two to the same golden vectors and to each other.
use gemm::{Parallelism, gemm};

use super::inversion::{Inversion, InversionConfig, Objective, Progress, record_step};
use super::relax::Layout;
use crate::error::{Error, Result};

/// Relaxation constants per encoded column.
struct HostRelax {
    cat_blocks: Vec<(usize, usize)>,
    cont_cols: Vec<usize>,
    scale: Vec<f32>,
    mean: Vec<f32>,
    range: Vec<f32>,
    lo: Vec<f32>,
}

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
        let tnorm = observed
            .iter()
            .flatten()
            .map(|&v| (v as f64).powi(2))
            .sum::<f64>()
            .sqrt() as f32;
        let classes = *params.sizes.last().unwrap();
        let relax = layout.map(|l| {
            let d = l.d();
            let mut r = HostRelax {
                cat_blocks: Vec::new(),
                cont_cols: Vec::new(),
                scale: vec![0.0; d],
                mean: vec![0.0; d],
                range: vec![0.0; d],
                lo: vec![0.0; d],
            };
            for &(offset, width, cat) in &l.blocks {
                if cat {
                    r.cat_blocks.push((offset, width));
                    for c in offset..offset + width {
                        r.scale[c] = l.std[c] as f32;
                        r.mean[c] = l.mean[c] as f32;
                    }
                } else {
                    r.cont_cols.push(offset);
                    r.range[offset] = (l.hi[offset] - l.lo[offset]) as f32;
                    r.lo[offset] = l.lo[offset] as f32;
                }
            }
            r
        });
        HostProblem {
            sizes: params.sizes.clone(),
            w: params.weights.clone(),
            b: params.biases.clone(),
            tw: observed[..layers].to_vec(),
            tb: observed[layers..].to_vec(),
            tnorm: tnorm.max(1e-30),
            batch: onehot.len() / classes,
            onehot,
            relax,
            objective,
        }
    }

    fn layers(&self) -> usize {
        self.w.len()
    }

    fn d(&self) -> usize {
        self.sizes[0]
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

/// One member's buffers, allocated once per inversion.
struct Workspace {
    x: Vec<f32>,
    probs: Vec<f32>,
    sig: Vec<f32>,
    /// Output of each layer: ReLU'd activations, and the softmax for the last.
    h: Vec<Vec<f32>>,
    delta: Vec<Vec<f32>>,
    gw: Vec<Vec<f32>>,
    gb: Vec<Vec<f32>>,
    /// dL/d(input of layer l), [B, in_l].
    h_bar: Vec<Vec<f32>>,
    /// dL/dδ_l, later reused for dL/da_l.
    d_bar: Vec<Vec<f32>>,
    z_bar: Vec<f32>,
}

impl Workspace {
    fn new(p: &HostProblem) -> Workspace {
        let (b, d) = (p.batch, p.d());
        let per_layer = |f: &dyn Fn(usize, usize) -> usize| -> Vec<Vec<f32>> {
            p.sizes.windows(2).map(|s| vec![0.0; f(s[0], s[1])]).collect()
        };
        Workspace {
            x: vec![0.0; b * d],
            probs: vec![0.0; b * d],
            sig: vec![0.0; b * d],
            h: per_layer(&|_, o| b * o),
            delta: per_layer(&|_, o| b * o),
            gw: per_layer(&|i, o| i * o),
            gb: per_layer(&|_, o| o),
            h_bar: per_layer(&|i, _| b * i),
            d_bar: per_layer(&|_, o| b * o),
            z_bar: vec![0.0; b * d],
        }
    }
}

impl HostRelax {
    fn forward(&self, z: &[f32], d: usize, ws: &mut Workspace) {
        for (row, zr) in z.chunks_exact(d).enumerate() {
            let x = &mut ws.x[row * d..(row + 1) * d];
            let p = &mut ws.probs[row * d..(row + 1) * d];
            let s = &mut ws.sig[row * d..(row + 1) * d];
            for &c in &self.cont_cols {
                let sg = 1.0 / (1.0 + (-zr[c]).exp());
                s[c] = sg;
                x[c] = self.range[c] * sg + self.lo[c];
            }
            for &(off, w) in &self.cat_blocks {
                let mut max = f32::NEG_INFINITY;
                for c in off..off + w {
                    p[c] = zr[c] * self.scale[c] + self.mean[c];
                    max = max.max(p[c]);
                }
                let mut sum = 0.0;
                for c in off..off + w {
                    p[c] = (p[c] - max).exp();
                    sum += p[c];
                }
                for c in off..off + w {
                    p[c] /= sum;
                    x[c] = (p[c] - self.mean[c]) / self.scale[c];
                }
            }
        }
    }

    /// ws.h_bar[0] (dL/dx) → ws.z_bar.
    fn backward(&self, d: usize, ws: &mut Workspace) {
        let x_bar = &ws.h_bar[0];
        for row in 0..x_bar.len() / d {
            let r = row * d..(row + 1) * d;
            let (xb, p, s, zb) = (
                &x_bar[r.clone()],
                &ws.probs[r.clone()],
                &ws.sig[r.clone()],
                &mut ws.z_bar[r],
            );
            for &c in &self.cont_cols {
                zb[c] = xb[c] * self.range[c] * s[c] * (1.0 - s[c]);
            }
            for &(off, w) in &self.cat_blocks {
                let mut total = 0.0;
                for c in off..off + w {
                    zb[c] = p[c] * xb[c] / self.scale[c];
                    total += zb[c];
                }
                for c in off..off + w {
                    zb[c] = (zb[c] - p[c] * total) * self.scale[c];
                }
            }
        }
    }
}

impl HostProblem {
    /// Loss of one member at rows `x` (already in ws.x), and, with `grad`, dL/dx in ws.h_bar[0].
    fn loss(&self, ws: &mut Workspace, grad: bool) -> f32 {
        let (b, layers) = (self.batch, self.layers());
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
            mm(b, o, i, out, true, input, rm(i), &self.w[l], rm(o));
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
        for ((dl, s), y) in ws.delta[layers - 1].iter_mut().zip(&ws.h[layers - 1]).zip(&self.onehot) {
            *dl = (s - y) * inv_b;
        }
        for l in (0..layers).rev() {
            let (i, o) = (sizes[l], sizes[l + 1]);
            let input: &[f32] = if l == 0 { &ws.x } else { &ws.h[l - 1] };
            mm(i, o, b, &mut ws.gw[l], false, input, tr(i), &ws.delta[l], rm(o));
            ws.gb[l].iter_mut().for_each(|v| *v = 0.0);
            for row in ws.delta[l].chunks_exact(o) {
                ws.gb[l].iter_mut().zip(row).for_each(|(g, v)| *g += v);
            }
            if l > 0 {
                let (lower, upper) = ws.delta.split_at_mut(l);
                let prev = &mut lower[l - 1];
                mm(b, i, o, prev, false, &upper[0], rm(o), &self.w[l], tr(o));
                relu_mask(prev, &ws.h[l - 1]);
            }
        }
        // Objective and G = dL/d(parameter gradient), written over gw/gb.
        let pairs = || ws.gw.iter().zip(&self.tw).chain(ws.gb.iter().zip(&self.tb));
        let loss = match self.objective {
            Objective::Cosine => {
                let (mut dot, mut nn) = (0f64, 0f64);
                for (g, t) in pairs() {
                    dot += dot_f32(g, t);
                    nn += dot_f32(g, g);
                }
                let nn = nn + 1e-30;
                let norm = nn.sqrt();
                let tn = self.tnorm as f64;
                let cos = dot / (norm * tn);
                if grad {
                    let (alpha, beta) = ((-1.0 / (norm * tn)) as f32, (cos / nn) as f32);
                    self.mix(ws, alpha, beta);
                }
                (1.0 - cos) as f32
            }
            Objective::SquaredError => {
                let mut sq = 0f64;
                for (g, t) in pairs() {
                    sq += g.iter().zip(t).map(|(a, c)| ((a - c) as f64).powi(2)).sum::<f64>();
                }
                if grad {
                    self.mix(ws, -2.0, 2.0);
                }
                sq as f32
            }
        };
        if grad {
            self.reverse(ws);
        }
        loss
    }

    /// G = α·t + β·g, in place over the gradient buffers.
    fn mix(&self, ws: &mut Workspace, alpha: f32, beta: f32) {
        for (g, t) in ws.gw.iter_mut().zip(&self.tw).chain(ws.gb.iter_mut().zip(&self.tb)) {
            g.iter_mut().zip(t).for_each(|(a, c)| *a = alpha * c + beta * *a);
        }
    }

    /// Reverse of the explicit backward and forward passes: G (in gw/gb) → dL/dx in h_bar[0].
    fn reverse(&self, ws: &mut Workspace) {
        let (b, layers) = (self.batch, self.layers());
        let sizes = &self.sizes;
        for l in 0..layers {
            let (i, o) = (sizes[l], sizes[l + 1]);
            let input: &[f32] = if l == 0 { &ws.x } else { &ws.h[l - 1] };
            // From gW_l = h_{l-1}ᵀ δ_l: dL/dh_{l-1} = δ_l Gᵀ and dL/dδ_l = h_{l-1} G (+ G_b per row).
            mm(b, i, o, &mut ws.h_bar[l], false, &ws.delta[l], rm(o), &ws.gw[l], tr(o));
            let (lower, upper) = ws.d_bar.split_at_mut(l);
            let db = &mut upper[0];
            for row in db.chunks_exact_mut(o) {
                row.copy_from_slice(&ws.gb[l]);
            }
            mm(b, o, i, db, true, input, rm(i), &ws.gw[l], rm(o));
            if l > 0 {
                // δ_{l-1} = (δ_l W_lᵀ) ⊙ mask: dL/dδ_l += (dL/dδ_{l-1} ⊙ mask) W_l.
                let prev = &mut lower[l - 1];
                relu_mask(prev, &ws.h[l - 1]);
                mm(b, o, i, db, true, prev, rm(i), &self.w[l], rm(o));
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
            mm(b, i, o, &mut ws.h_bar[l], true, &upper[0], rm(o), &self.w[l], tr(o));
            if l > 0 {
                let a_prev = &mut lower[l - 1];
                a_prev.copy_from_slice(&ws.h_bar[l]);
                relu_mask(a_prev, &ws.h[l - 1]);
            }
        }
    }

    /// Loss and dL/dz of one member at z ([B, d]); the gradient lands in ws.z_bar.
    fn loss_and_grad(&self, z: &[f32], ws: &mut Workspace) -> f32 {
        match &self.relax {
            Some(r) => r.forward(z, self.d(), ws),
            None => ws.x.copy_from_slice(z),
        }
        let loss = self.loss(ws, true);
        match &self.relax {
            Some(r) => r.backward(self.d(), ws),
            None => ws.z_bar.copy_from_slice(&ws.h_bar[0]),
        }
        loss
    }
}

/// Per-member loss of rows already in encoded space ([N, B, d] row-major).
pub fn member_losses(p: &HostProblem, x: &[f32]) -> Vec<f32> {
    let mut ws = Workspace::new(p);
    x.chunks_exact(p.batch * p.d())
        .map(|rows| {
            ws.x.copy_from_slice(rows);
            p.loss(&mut ws, false)
        })
        .collect()
}

/// Losses and d(Σ loss)/dz for all members at z ([N, B, d]); for tests against the burn path.
pub fn loss_and_grad(p: &HostProblem, z: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let mut ws = Workspace::new(p);
    let mut grad = Vec::with_capacity(z.len());
    let losses = z
        .chunks_exact(p.batch * p.d())
        .map(|zm| {
            let l = p.loss_and_grad(zm, &mut ws);
            grad.extend_from_slice(&ws.z_bar);
            l
        })
        .collect();
    (losses, grad)
}

/// One member's optimisation state.
struct Member<'a> {
    z: &'a mut [f32],
    m: &'a mut [f32],
    v: &'a mut [f32],
    ws: &'a mut Workspace,
    loss: &'a mut f32,
}

#[cfg(feature = "rayon")]
fn for_each_member(members: Vec<Member<'_>>, f: impl Fn(Member<'_>) + Sync + Send) {
    use rayon::prelude::*;
    members.into_par_iter().for_each(f);
}

#[cfg(not(feature = "rayon"))]
fn for_each_member(members: Vec<Member<'_>>, f: impl Fn(Member<'_>)) {
    members.into_iter().for_each(f);
}

/// The whole optimisation on the CPU; same contract as `inversion::invert`.
pub fn invert(
    p: &HostProblem,
    config: &InversionConfig,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Inversion> {
    let (n, d) = (config.members, p.d());
    let len = p.batch * d;
    let opt = config.optimiser;
    let start = web_time::Instant::now();
    let mut z = super::inversion::initial_rows(n * len, config.seed);
    let mut m = vec![0f32; n * len];
    let mut v = vec![0f32; n * len];
    let mut workspaces: Vec<Workspace> = (0..n).map(|_| Workspace::new(p)).collect();
    let mut losses = vec![0f32; n];
    let mut loss_curve = Vec::new();
    let (b1, b2) = (opt.beta1 as f32, opt.beta2 as f32);
    for step in 1..=config.iterations {
        let bc1 = 1.0 - opt.beta1.powi(step as i32);
        let bc2 = 1.0 - opt.beta2.powi(step as i32);
        let (step_size, inv_bc2) = ((opt.lr / bc1) as f32, (1.0 / bc2) as f32);
        let eps = opt.eps as f32;
        let members: Vec<Member<'_>> = z
            .chunks_exact_mut(len)
            .zip(m.chunks_exact_mut(len))
            .zip(v.chunks_exact_mut(len))
            .zip(workspaces.iter_mut())
            .zip(losses.iter_mut())
            .map(|((((z, m), v), ws), loss)| Member { z, m, v, ws, loss })
            .collect();
        for_each_member(members, |mb| {
            *mb.loss = p.loss_and_grad(mb.z, mb.ws);
            for (((z, m), v), g) in
                mb.z.iter_mut()
                    .zip(mb.m.iter_mut())
                    .zip(mb.v.iter_mut())
                    .zip(&mb.ws.z_bar)
            {
                let g = if opt.sign { sign(*g) } else { *g };
                *m = b1 * *m + (1.0 - b1) * g;
                *v = b2 * *v + (1.0 - b2) * g * g;
                *z -= step_size * *m / ((*v * inv_bc2).sqrt() + eps);
            }
        });
        if config.reports_at(step) {
            record_step(step, config.iterations, &losses, start, &mut loss_curve, progress)?;
        }
    }
    // Final relaxation of every member.
    let mut x = Vec::with_capacity(n * len);
    let mut probs = Vec::with_capacity(n * len);
    let ws = &mut workspaces[0];
    for zm in z.chunks_exact(len) {
        match &p.relax {
            Some(r) => {
                r.forward(zm, d, ws);
                x.extend_from_slice(&ws.x);
                probs.extend_from_slice(&ws.probs);
            }
            None => x.extend_from_slice(zm),
        }
    }
    if x.iter().any(|v| !v.is_finite()) {
        return Err(Error::NonFinite("reconstructed rows hold NaN or infinity".into()));
    }
    Ok(Inversion { x, probs, loss_curve })
}

/// Zero the entries of `v` where the ReLU output `h` is not positive (branch-free, so it vectorises).
fn relu_mask(v: &mut [f32], h: &[f32]) {
    v.iter_mut()
        .zip(h)
        .for_each(|(v, h)| *v = if *h > 0.0 { *v } else { 0.0 });
}

/// Dot product with 16 independent f32 partial sums (vectorises; each lane sums a few thousand
/// terms at most, so f32 is ample), combined in f64.
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
        for k in 0..16 {
            lanes[k] += x[k] * y[k];
        }
    }
    lanes.iter().map(|&v| v as f64).sum::<f64>() + tail
}

/// torch.sign: 0 at 0.
fn sign(g: f32) -> f32 {
    if g > 0.0 {
        1.0
    } else if g < 0.0 {
        -1.0
    } else {
        0.0
    }
}

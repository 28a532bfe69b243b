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
        let tnorm = crate::client::defence::l2_norm(observed) as f32;
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

impl HostRelax {
    #[inline(always)]
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
    #[inline(always)]
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
                    let nn = nn + 1e-30;
                    let norm = nn.sqrt();
                    let tn = self.tnorm as f64;
                    let cos = dot / (norm * tn);
                    // d(1 − cos)/dg = −t/(|g||t|) + cos·g/|g|².
                    ((1.0 - cos) as f32, (-1.0 / (norm * tn)) as f32, (cos / nn) as f32)
                }
                // d‖g − t‖²/dg = 2g − 2t.
                Objective::SquaredError => (sq as f32, -2.0, 2.0),
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
            Some(r) => r.forward(z, self.d(), ws),
            None => ws.x.copy_from_slice(z),
        }
        self.loss(ws, true);
        match &self.relax {
            Some(r) => r.backward(self.d(), ws),
            None => ws.z_bar.copy_from_slice(&ws.h_bar[0]),
        }
    }
}

/// Per-member loss of rows already in encoded space ([N, B, d] row-major).
pub fn member_losses(p: &HostProblem, x: &[f32]) -> Vec<f32> {
    let mut ws = Workspace::new(p, x.len() / (p.batch * p.d()));
    ws.x.copy_from_slice(x);
    p.loss(&mut ws, false);
    ws.loss
}

/// Losses and d(Σ loss)/dz for all members at z ([N, B, d]), as one group; for tests.
pub fn loss_and_grad(p: &HostProblem, z: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let mut ws = Workspace::new(p, z.len() / (p.batch * p.d()));
    p.loss_and_grad(z, &mut ws);
    (ws.loss, ws.z_bar)
}

/// The per-step constants of sign-Adam.
struct AdamStep {
    sign: bool,
    b1: f32,
    b2: f32,
    step_size: f32,
    inv_bc2: f32,
    eps: f32,
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
    for (((z, m), v), g) in
        gr.z.iter_mut()
            .zip(gr.m.iter_mut())
            .zip(gr.v.iter_mut())
            .zip(&gr.ws.z_bar)
    {
        let g = if a.sign { sign(*g) } else { *g };
        *m = a.b1 * *m + (1.0 - a.b1) * g;
        *v = a.b2 * *v + (1.0 - a.b2) * g * g;
        *z -= a.step_size * *m / ((*v * a.inv_bc2).sqrt() + a.eps);
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

/// The whole optimisation on the CPU; same contract as `inversion::invert`. It yields to the host
/// at every progress report, so a browser or Node can deliver a cancellation meanwhile.
pub async fn invert(
    p: &HostProblem,
    config: &InversionConfig,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Inversion> {
    let (n, d) = (config.members, p.d());
    let len = p.batch * d;
    let opt = config.optimiser;
    let start = web_time::Instant::now();
    let per_group = group_size(n);
    let mut z = super::inversion::member_starts(config);
    let mut m = vec![0f32; n * len];
    let mut v = vec![0f32; n * len];
    let mut workspaces: Vec<Workspace> = z
        .chunks(per_group * len)
        .map(|chunk| Workspace::new(p, chunk.len() / len))
        .collect();
    let mut losses = Vec::with_capacity(n);
    let mut loss_curve = Vec::new();
    let (b1, b2) = (opt.beta1 as f32, opt.beta2 as f32);
    for step in 1..=config.iterations {
        let bc1 = 1.0 - opt.beta1.powi(step as i32);
        let bc2 = 1.0 - opt.beta2.powi(step as i32);
        let adam = AdamStep {
            sign: opt.sign,
            b1,
            b2,
            step_size: (opt.lr / bc1) as f32,
            inv_bc2: (1.0 / bc2) as f32,
            eps: opt.eps as f32,
        };
        let groups: Vec<Group<'_>> = z
            .chunks_mut(per_group * len)
            .zip(m.chunks_mut(per_group * len))
            .zip(v.chunks_mut(per_group * len))
            .zip(workspaces.iter_mut())
            .map(|(((z, m), v), ws)| Group { z, m, v, ws })
            .collect();
        for_each_group(groups, |gr| group_step(p, gr, &adam));
        if config.reports_at(step) {
            losses.clear();
            losses.extend(workspaces.iter().flat_map(|ws| ws.loss.iter().copied()));
            record_step(step, config.iterations, &losses, start, &mut loss_curve, progress)?;
            crate::runtime::yield_to_host().await;
        }
    }
    // Final relaxation of every member.
    let (x, probs) = match &p.relax {
        Some(r) => {
            let mut ws = Workspace::new(p, n);
            r.forward(&z, d, &mut ws);
            (ws.x, ws.probs)
        }
        None => (z, Vec::new()),
    };
    if x.iter().any(|v| !v.is_finite()) {
        return Err(Error::NonFinite("reconstructed rows hold NaN or infinity".into()));
    }
    Ok(Inversion { x, probs, loss_curve })
}

/// Zero the entries of `v` where the ReLU output `h` is not positive (branch-free, so it vectorises).
/// G = α·t + β·g, in place over one member's gradient tensor.
#[inline(always)]
fn mix(g: &mut [f32], t: &[f32], alpha: f32, beta: f32) {
    g.iter_mut().zip(t).for_each(|(a, c)| *a = alpha * c + beta * *a);
}

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

/// torch.sign: 0 at 0.
#[inline(always)]
fn sign(g: f32) -> f32 {
    if g > 0.0 {
        1.0
    } else if g < 0.0 {
        -1.0
    } else {
        0.0
    }
}

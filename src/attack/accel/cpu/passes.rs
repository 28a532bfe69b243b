//! One pass of the client's network over a group of g members × r rows, on buffers allocated once:
//! the forward pass and explicit backward (the parameter gradient), the objective against the
//! observed update, and the reverse of both (the definition's `client::gradient::param_grads` and
//! `attack::inversion::second_order::reverse`). Products with weights the whole group shares run over all its
//! rows at once; per-member weights (FedAvg's local training) take one product per member.
use super::gemm::{column_sums, dot_f32, mix, mm, relu_mask, rm, tr};
use crate::attack::inversion::objective::Objective;
use crate::attack::inversion::pointwise::{SQUARED_ERROR_ALPHA, SQUARED_ERROR_BETA, cosine_terms};
use crate::client::head::Head;
use crate::client::update::Update;

/// The parameters a pass uses, per layer W [in, out] and b [out]: shared by the group, or one copy
/// per member ([g, in, out] and [g, out]).
#[derive(Clone, Copy)]
pub enum Weights<'a> {
    Shared { w: &'a [Vec<f32>], b: &'a [Vec<f32>] },
    PerMember { w: &'a [Vec<f32>], b: &'a [Vec<f32>] },
}

impl Weights<'_> {
    fn w(&self, l: usize, k: usize, i: usize, o: usize) -> &[f32] {
        match self {
            Weights::Shared { w, .. } => &w[l],
            Weights::PerMember { w, .. } => &w[l][k * i * o..(k + 1) * i * o],
        }
    }

    fn b(&self, l: usize, k: usize, o: usize) -> &[f32] {
        match self {
            Weights::Shared { b, .. } => &b[l],
            Weights::PerMember { b, .. } => &b[l][k * o..(k + 1) * o],
        }
    }

    /// dst (+)= src · W_l (src [g·r, i], dst [g·r, o]).
    #[allow(clippy::too_many_arguments)]
    fn times_w(&self, l: usize, g: usize, r: usize, i: usize, o: usize, src: &[f32], dst: &mut [f32], acc: bool) {
        match self {
            Weights::Shared { w, .. } => mm(g * r, o, i, dst, acc, src, rm(i), &w[l], rm(o)),
            Weights::PerMember { .. } => {
                for k in 0..g {
                    let (s, d) = (&src[k * r * i..(k + 1) * r * i], &mut dst[k * r * o..(k + 1) * r * o]);
                    mm(r, o, i, d, acc, s, rm(i), self.w(l, k, i, o), rm(o));
                }
            }
        }
    }

    /// dst (+)= src · W_lᵀ (src [g·r, o], dst [g·r, i]).
    #[allow(clippy::too_many_arguments)]
    fn times_wt(&self, l: usize, g: usize, r: usize, i: usize, o: usize, src: &[f32], dst: &mut [f32], acc: bool) {
        match self {
            Weights::Shared { w, .. } => mm(g * r, i, o, dst, acc, src, rm(o), &w[l], tr(o)),
            Weights::PerMember { .. } => {
                for k in 0..g {
                    let (s, d) = (&src[k * r * o..(k + 1) * r * o], &mut dst[k * r * i..(k + 1) * r * i]);
                    mm(r, i, o, d, acc, s, rm(o), self.w(l, k, i, o), tr(o));
                }
            }
        }
    }
}

/// The buffers of one pass over g members × r rows each.
pub struct Workspace {
    pub g: usize,
    pub r: usize,
    /// The rows the network sees, [g·r, d].
    pub x: Vec<f32>,
    /// Output of each layer: ReLU'd activations, and the head's probabilities for the last.
    pub h: Vec<Vec<f32>>,
    pub delta: Vec<Vec<f32>>,
    /// Per-member parameter gradients, [g, in, out] and [g, out]; the objective overwrites them
    /// with G = dL/d(gradient), which the reverse reads.
    pub gw: Vec<Vec<f32>>,
    pub gb: Vec<Vec<f32>>,
    /// dL/d(input of layer l), [g·r, in_l]: h_bar[0] is dL/dx.
    pub h_bar: Vec<Vec<f32>>,
    /// dL/dδ_l, later reused for dL/da_l.
    pub d_bar: Vec<Vec<f32>>,
}

impl Workspace {
    pub fn new(sizes: &[usize], g: usize, r: usize) -> Workspace {
        let rows = g * r;
        let per_layer = |f: &dyn Fn(usize, usize) -> usize| -> Vec<Vec<f32>> {
            sizes.windows(2).map(|s| vec![0.0; f(s[0], s[1])]).collect()
        };
        Workspace {
            g,
            r,
            x: vec![0.0; rows * sizes[0]],
            h: per_layer(&|_, o| rows * o),
            delta: per_layer(&|_, o| rows * o),
            gw: per_layer(&|i, o| g * i * o),
            gb: per_layer(&|_, o| g * o),
            h_bar: per_layer(&|i, _| rows * i),
            d_bar: per_layer(&|_, o| rows * o),
        }
    }
}

/// The forward pass and the explicit backward on ws.x with labels `onehot` ([r, C], the same for
/// every member): activations, δ per layer, and each member's parameter gradient in ws.gw/gb.
#[inline(always)]
pub fn forward_backward(sizes: &[usize], weights: Weights<'_>, onehot: &[f32], head: Head, ws: &mut Workspace) {
    let (g, r, layers) = (ws.g, ws.r, sizes.len() - 1);
    for l in 0..layers {
        let (i, o) = (sizes[l], sizes[l + 1]);
        let (before, rest) = ws.h.split_at_mut(l);
        let input: &[f32] = if l == 0 { &ws.x } else { &before[l - 1] };
        let out = &mut rest[0];
        for k in 0..g {
            for row in out[k * r * o..(k + 1) * r * o].chunks_exact_mut(o) {
                row.copy_from_slice(weights.b(l, k, o));
            }
        }
        weights.times_w(l, g, r, i, o, input, out, true);
        if l + 1 < layers {
            // A select rather than f32::max, which wasm32 lowers to a call to libm's fmaxf per
            // element (10-20 % of a page's CPU step); the same value for every input, NaN included.
            out.iter_mut().for_each(|v| *v = if *v > 0.0 { *v } else { 0.0 });
        } else if head == Head::Sigmoid {
            out.iter_mut().for_each(|v| *v = 1.0 / (1.0 + (-*v).exp()));
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
    // δ_{L-1} = (p − y)/r (softmax cross-entropy and sigmoid BCE alike), gW_l = h_{l-1}ᵀ δ_l, δ_{l-1} = δ_l W_lᵀ ⊙ [h_{l-1} > 0].
    let inv_r = 1.0 / r as f32;
    let c = sizes[layers];
    for (dl, s) in ws.delta[layers - 1]
        .chunks_exact_mut(r * c)
        .zip(ws.h[layers - 1].chunks_exact(r * c))
    {
        for ((dv, sv), y) in dl.iter_mut().zip(s).zip(onehot) {
            *dv = (sv - y) * inv_r;
        }
    }
    for l in (0..layers).rev() {
        let (i, o) = (sizes[l], sizes[l + 1]);
        let input: &[f32] = if l == 0 { &ws.x } else { &ws.h[l - 1] };
        for k in 0..g {
            let (inp, del) = (
                &input[k * r * i..(k + 1) * r * i],
                &ws.delta[l][k * r * o..(k + 1) * r * o],
            );
            mm(
                i,
                o,
                r,
                &mut ws.gw[l][k * i * o..(k + 1) * i * o],
                false,
                inp,
                tr(i),
                del,
                rm(o),
            );
            column_sums(&mut ws.gb[l][k * o..(k + 1) * o], del);
        }
        if l > 0 {
            let (lower, upper) = ws.delta.split_at_mut(l);
            let prev = &mut lower[l - 1];
            weights.times_wt(l, g, r, i, o, &upper[0], prev, false);
            relu_mask(prev, &ws.h[l - 1]);
        }
    }
}

/// The objective of each of g members' updates (`uw[l]` [g, in, out], `ub[l]` [g, out]) against
/// the observed one: losses into `loss`, and with `grad` the update overwritten by
/// G = dloss/d(update) = α·t + β·update (the definition's `Objective::evaluate`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn objective(
    sizes: &[usize],
    objective: Objective,
    target: &Update,
    target_norm: f32,
    uw: &mut [Vec<f32>],
    ub: &mut [Vec<f32>],
    loss: &mut [f32],
    grad: bool,
) {
    let layers = sizes.len() - 1;
    for (k, slot) in loss.iter_mut().enumerate() {
        let (mut dot, mut nn, mut sq) = (0f64, 0f64, 0f64);
        for l in 0..layers {
            let (i, o) = (sizes[l], sizes[l + 1]);
            let gw = &uw[l][k * i * o..(k + 1) * i * o];
            let gb = &ub[l][k * o..(k + 1) * o];
            for (gv, tv) in [(gw, target.weight(l)), (gb, target.bias(l))] {
                match objective {
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
        let (value, alpha, beta) = match objective {
            Objective::Cosine => {
                let (value, alpha, beta) = cosine_terms(dot, nn, target_norm);
                (value as f32, alpha as f32, beta as f32)
            }
            Objective::SquaredError => (sq as f32, SQUARED_ERROR_ALPHA, SQUARED_ERROR_BETA),
        };
        *slot = value;
        if grad {
            for l in 0..layers {
                let (i, o) = (sizes[l], sizes[l + 1]);
                mix(&mut uw[l][k * i * o..(k + 1) * i * o], target.weight(l), alpha, beta);
                mix(&mut ub[l][k * o..(k + 1) * o], target.bias(l), alpha, beta);
            }
        }
    }
}

/// dL/dθ per member, per layer: W [g, in, out] and b [g, out].
pub type ThetaBar<'a> = (&'a mut [Vec<f32>], &'a mut [Vec<f32>]);

/// Reverse of the explicit backward and forward passes: G (in ws.gw/gb) → dL/dx in ws.h_bar[0],
/// and with `theta_bar` dL/dθ per member ([g, in, out] and [g, out] per layer, overwritten).
#[inline(always)]
pub fn reverse(
    sizes: &[usize],
    weights: Weights<'_>,
    head: Head,
    ws: &mut Workspace,
    mut theta_bar: Option<ThetaBar<'_>>,
) {
    let (g, r, layers) = (ws.g, ws.r, sizes.len() - 1);
    if let Some((wb, _)) = theta_bar.as_mut() {
        for v in wb.iter_mut() {
            v.iter_mut().for_each(|x| *x = 0.0);
        }
    }
    for l in 0..layers {
        let (i, o) = (sizes[l], sizes[l + 1]);
        let input: &[f32] = if l == 0 { &ws.x } else { &ws.h[l - 1] };
        let (lower, upper) = ws.d_bar.split_at_mut(l);
        let db = &mut upper[0];
        for k in 0..g {
            // From gW_l = h_{l-1}ᵀ δ_l: dL/dh_{l-1} = δ_l Gᵀ and dL/dδ_l = h_{l-1} G (+ G_b per row).
            let (gw, gb) = (&ws.gw[l][k * i * o..(k + 1) * i * o], &ws.gb[l][k * o..(k + 1) * o]);
            let del = &ws.delta[l][k * r * o..(k + 1) * r * o];
            mm(
                r,
                i,
                o,
                &mut ws.h_bar[l][k * r * i..(k + 1) * r * i],
                false,
                del,
                rm(o),
                gw,
                tr(o),
            );
            let dbk = &mut db[k * r * o..(k + 1) * r * o];
            for row in dbk.chunks_exact_mut(o) {
                row.copy_from_slice(gb);
            }
            mm(r, o, i, dbk, true, &input[k * r * i..(k + 1) * r * i], rm(i), gw, rm(o));
        }
        if l > 0 {
            // δ_{l-1} = (δ_l W_lᵀ) ⊙ mask: dL/dδ_l += (dL/dδ_{l-1} ⊙ mask) W_l, and
            // dL/dW_l += (dL/dδ_{l-1} ⊙ mask)ᵀ δ_l.
            let prev = &mut lower[l - 1];
            relu_mask(prev, &ws.h[l - 1]);
            weights.times_w(l, g, r, i, o, prev, db, true);
            if let Some((wb, _)) = theta_bar.as_mut() {
                for k in 0..g {
                    let e = &prev[k * r * i..(k + 1) * r * i];
                    let del = &ws.delta[l][k * r * o..(k + 1) * r * o];
                    mm(
                        i,
                        o,
                        r,
                        &mut wb[l][k * i * o..(k + 1) * i * o],
                        true,
                        e,
                        tr(i),
                        del,
                        rm(o),
                    );
                }
            }
        }
    }
    // δ = (s − y)/r → dL/da = s ⊙ (s̄ − Σ s̄ s) under softmax, s (1 − s) s̄ under a sigmoid
    // head, with s̄ = dL/dδ / r.
    let c = sizes[layers];
    let inv_r = 1.0 / r as f32;
    for (db, s) in ws.d_bar[layers - 1]
        .chunks_exact_mut(c)
        .zip(ws.h[layers - 1].chunks_exact(c))
    {
        match head {
            Head::Softmax => {
                let inner: f32 = db.iter().zip(s).map(|(g, p)| g * inv_r * p).sum();
                db.iter_mut().zip(s).for_each(|(g, p)| *g = p * (*g * inv_r - inner));
            }
            Head::Sigmoid => db.iter_mut().zip(s).for_each(|(g, p)| *g = p * (1.0 - p) * *g * inv_r),
            Head::Linear => unreachable!("the CPU kernel declines a regression (Needs::regression)"),
        }
    }
    for l in (0..layers).rev() {
        let (i, o) = (sizes[l], sizes[l + 1]);
        let (lower, upper) = ws.d_bar.split_at_mut(l);
        if let Some((wb, bb)) = theta_bar.as_mut() {
            // From a_l = h_{l-1} W_l + b_l: dL/dW_l += h_{l-1}ᵀ dL/da_l, dL/db_l = Σ_rows dL/da_l.
            let input: &[f32] = if l == 0 { &ws.x } else { &ws.h[l - 1] };
            for k in 0..g {
                let a = &upper[0][k * r * o..(k + 1) * r * o];
                mm(
                    i,
                    o,
                    r,
                    &mut wb[l][k * i * o..(k + 1) * i * o],
                    true,
                    &input[k * r * i..(k + 1) * r * i],
                    tr(i),
                    a,
                    rm(o),
                );
                column_sums(&mut bb[l][k * o..(k + 1) * o], a);
            }
        }
        weights.times_wt(l, g, r, i, o, &upper[0], &mut ws.h_bar[l], true);
        if l > 0 {
            let a_prev = &mut lower[l - 1];
            a_prev.copy_from_slice(&ws.h_bar[l]);
            relu_mask(a_prev, &ws.h[l - 1]);
        }
    }
}

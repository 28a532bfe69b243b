//! The inversion step as CubeCL kernels (WGSL for WebGPU and wgpu, CUDA for burn's CUDA backend):
//! the definition's math (`attack::inversion`), one kernel per stage and layer, every member and
//! row at once; the reverse pass's kernels are in `reverse`. `accel::cube` launches them;
//! tests/step_equality.rs holds them to the definition.
//!
//! Layouts (row-major, `rows` = N·B): the network `net` holds every layer at its offset `off`,
//! W [in, out] then b [out]; the observed update `target` and each member's gradient in `g`
//! ([N, params]) have the same layout; the relaxation's constants `rc` = [std | mean | 1/std |
//! hi − lo | lo], each d long; `segments` = (offset, width, categorical) per feature, as u32.
//!
//! WebGPU gives a kernel at most 8 storage buffers (CubeCL adds one for its scalars), and only
//! barriers in uniform control flow: the one kernel with barriers (`objective`) keeps them out of
//! every loop whose bound is not uniform.
// CubeCL's macro expands `div_ceil` on its own types only: the kernels round up by hand.
#![allow(clippy::manual_div_ceil)]

use burn::cubecl;
use cubecl::prelude::*;

/// Rows of `rc`.
pub const RC_STD: usize = 0;
pub const RC_MEAN: usize = 1;
pub const RC_INV_STD: usize = 2;
pub const RC_RANGE: usize = 3;
pub const RC_LO: usize = 4;
pub const RC_ROWS: usize = 5;

/// See `pointwise::SOFTMAX_CAP` and `pointwise::NORM_FLOOR`.
const SOFTMAX_CAP: f32 = 80.0;
const NORM_FLOOR: f32 = 1e-30;

/// The relaxation, one unit per (row, feature): sigmoid for a continuous column, the block softmax
/// (centred on the block's mean logit, capped) for a categorical one. `aux` gets σ(z) on continuous
/// columns and the probabilities on categorical ones.
#[cube(launch_unchecked)]
pub fn relax_forward(
    z: &[f32],
    rc: &[f32],
    segments: &[u32],
    x: &mut [f32],
    aux: &mut [f32],
    rows: usize,
    d: usize,
    features: usize,
) {
    let t = ABSOLUTE_POS;
    if t < rows * features {
        let row = t / features;
        let f = t % features;
        let start = segments[3 * f] as usize;
        let width = segments[3 * f + 1] as usize;
        let base = row * d;
        if segments[3 * f + 2] == 0 {
            let c = base + start;
            let s = 1.0 / (1.0 + (-z[c]).exp());
            aux[c] = s;
            x[c] = rc[RC_RANGE * d + start] * s + rc[RC_LO * d + start];
        } else {
            let mut mean = 0.0;
            for j in start..start + width {
                mean += z[base + j] * rc[RC_STD * d + j] + rc[RC_MEAN * d + j];
            }
            mean /= f32::cast_from(width as u32);
            let mut sum = 0.0;
            for j in start..start + width {
                let u = z[base + j] * rc[RC_STD * d + j] + rc[RC_MEAN * d + j];
                let e = (u - mean).min(SOFTMAX_CAP).exp();
                aux[base + j] = e;
                sum += e;
            }
            for j in start..start + width {
                let p = aux[base + j] / sum;
                aux[base + j] = p;
                x[base + j] = (p - rc[RC_MEAN * d + j]) * rc[RC_INV_STD * d + j];
            }
        }
    }
}

/// Rows a unit of the row-blocked kernels computes at once: the weights it loads serve four rows.
pub const RB: usize = 4;

/// The rows of a block starting at `r0`, clamped to the last row (so every load stays in bounds;
/// what is computed for a clamped row is never stored).
#[cube]
pub(super) fn clamp_row(r: usize, last: usize) -> usize {
    select(r < last, r, last)
}

/// Stores a unit's four results at their places; only the first `live` exist (a last, partial
/// block's clamped rows are not stored).
#[allow(clippy::too_many_arguments)]
#[cube]
pub(super) fn store4(
    out: &mut [f32],
    at0: usize,
    at1: usize,
    at2: usize,
    at3: usize,
    live: usize,
    v0: f32,
    v1: f32,
    v2: f32,
    v3: f32,
) {
    out[at0] = v0;
    if live > 1 {
        out[at1] = v1;
    }
    if live > 2 {
        out[at2] = v2;
    }
    if live > 3 {
        out[at3] = v3;
    }
}

/// A hidden layer: out = ReLU(input · W + b), one unit per output value of four rows.
#[cube(launch_unchecked)]
pub fn dense_relu(input: &[f32], net: &[f32], out: &mut [f32], rows: usize, n_in: usize, n_out: usize, off: usize) {
    let t = ABSOLUTE_POS;
    if t < ((rows + RB - 1) / RB) * n_out {
        let o = t % n_out;
        let r0 = (t / n_out) * RB;
        let last = rows - 1;
        let r1 = clamp_row(r0 + 1, last);
        let r2 = clamp_row(r0 + 2, last);
        let r3 = clamp_row(r0 + 3, last);
        let bias = net[off + n_in * n_out + o];
        let mut a0 = bias;
        let mut a1 = bias;
        let mut a2 = bias;
        let mut a3 = bias;
        for i in 0..n_in {
            let w = net[off + i * n_out + o];
            a0 += input[r0 * n_in + i] * w;
            a1 += input[r1 * n_in + i] * w;
            a2 += input[r2 * n_in + i] * w;
            a3 += input[r3 * n_in + i] * w;
        }
        store4(
            out,
            r0 * n_out + o,
            r1 * n_out + o,
            r2 * n_out + o,
            r3 * n_out + o,
            rows - r0,
            a0.max(0.0),
            a1.max(0.0),
            a2.max(0.0),
            a3.max(0.0),
        );
    }
}

/// The output layer, its softmax and δ = (softmax − y)/B, one unit per row.
#[cube(launch_unchecked)]
pub fn output_delta(
    input: &[f32],
    net: &[f32],
    onehot: &[f32],
    probs: &mut [f32],
    delta: &mut [f32],
    rows: usize,
    n_in: usize,
    classes: usize,
    batch: usize,
    inv_batch: f32,
    off: usize,
) {
    let r = ABSOLUTE_POS;
    if r < rows {
        let bias = off + n_in * classes;
        let mut top = net[bias] - 3.0e38;
        for c in 0..classes {
            let mut acc = net[bias + c];
            for i in 0..n_in {
                acc += input[r * n_in + i] * net[off + i * classes + c];
            }
            probs[r * classes + c] = acc;
            if acc > top {
                top = acc;
            }
        }
        let mut sum = 0.0;
        for c in 0..classes {
            let e = (probs[r * classes + c] - top).exp();
            probs[r * classes + c] = e;
            sum += e;
        }
        let y = (r % batch) * classes;
        for c in 0..classes {
            let p = probs[r * classes + c] / sum;
            probs[r * classes + c] = p;
            delta[r * classes + c] = (p - onehot[y + c]) * inv_batch;
        }
    }
}

/// δ of the layer below: (δ · Wᵀ) ⊙ [h > 0], one unit per input of this layer for four rows.
#[cube(launch_unchecked)]
pub fn delta_back(
    delta: &[f32],
    net: &[f32],
    h: &[f32],
    out: &mut [f32],
    rows: usize,
    n_in: usize,
    n_out: usize,
    off: usize,
) {
    let t = ABSOLUTE_POS;
    if t < ((rows + RB - 1) / RB) * n_in {
        let i = t % n_in;
        let r0 = (t / n_in) * RB;
        let last = rows - 1;
        let r1 = clamp_row(r0 + 1, last);
        let r2 = clamp_row(r0 + 2, last);
        let r3 = clamp_row(r0 + 3, last);
        let mut a0 = 0.0;
        let mut a1 = 0.0;
        let mut a2 = 0.0;
        let mut a3 = 0.0;
        for o in 0..n_out {
            let w = net[off + i * n_out + o];
            a0 += delta[r0 * n_out + o] * w;
            a1 += delta[r1 * n_out + o] * w;
            a2 += delta[r2 * n_out + o] * w;
            a3 += delta[r3 * n_out + o] * w;
        }
        let at0 = r0 * n_in + i;
        let at1 = r1 * n_in + i;
        let at2 = r2 * n_in + i;
        let at3 = r3 * n_in + i;
        let m0 = select(h[at0] > 0.0, a0, 0.0);
        let m1 = select(h[at1] > 0.0, a1, 0.0);
        let m2 = select(h[at2] > 0.0, a2, 0.0);
        let m3 = select(h[at3] > 0.0, a3, 0.0);
        store4(out, at0, at1, at2, at3, rows - r0, m0, m1, m2, m3);
    }
}

/// One layer's parameter gradient per member, gW = inputᵀ δ and gb = Σ_rows δ, written to `g` at
/// the layer's offset. One unit per (member, input, four outputs) of gW, then one per (member,
/// output) of gb.
#[cube(launch_unchecked)]
pub fn param_grad(
    input: &[f32],
    delta: &[f32],
    g: &mut [f32],
    members: usize,
    batch: usize,
    n_in: usize,
    n_out: usize,
    off: usize,
    params: usize,
) {
    let blocks = (n_out + RB - 1) / RB;
    let weight_units = n_in * blocks;
    let per_member = weight_units + n_out;
    let t = ABSOLUTE_POS;
    if t < members * per_member {
        let k = t / per_member;
        let e = t % per_member;
        let first = k * batch;
        let base = k * params + off;
        if e < weight_units {
            let i = e / blocks;
            let o0 = (e % blocks) * RB;
            let last = n_out - 1;
            let o1 = clamp_row(o0 + 1, last);
            let o2 = clamp_row(o0 + 2, last);
            let o3 = clamp_row(o0 + 3, last);
            let mut a0 = 0.0;
            let mut a1 = 0.0;
            let mut a2 = 0.0;
            let mut a3 = 0.0;
            for b in 0..batch {
                let x = input[(first + b) * n_in + i];
                let row = (first + b) * n_out;
                a0 += x * delta[row + o0];
                a1 += x * delta[row + o1];
                a2 += x * delta[row + o2];
                a3 += x * delta[row + o3];
            }
            let row = base + i * n_out;
            store4(g, row + o0, row + o1, row + o2, row + o3, n_out - o0, a0, a1, a2, a3);
        } else {
            let o = e - weight_units;
            let mut acc = 0.0;
            for b in 0..batch {
                acc += delta[(first + b) * n_out + o];
            }
            g[base + n_in * n_out + o] = acc;
        }
    }
}

/// Each member's objective, one cube per member: ⟨g, t⟩, ‖g‖² and ‖g − t‖² over all its
/// parameters, the loss, then g replaced in place by G = dloss/dg = α·t + β·g
/// (`pointwise::cosine_terms`; DLG's squared error when `cosine` is 0).
#[cube(launch_unchecked)]
pub fn objective(
    g: &mut [f32],
    target: &[f32],
    losses: &mut [f32],
    params: usize,
    target_norm: f32,
    cosine: u32,
    #[comptime] block: usize,
) {
    let k = CUBE_POS;
    let unit = UNIT_POS as usize;
    let base = k * params;
    let mut dot = Shared::<[f32]>::new_slice(block);
    let mut nn = Shared::<[f32]>::new_slice(block);
    let mut sq = Shared::<[f32]>::new_slice(block);
    let mut coef = Shared::<[f32]>::new_slice(2usize);
    let mut d = 0.0;
    let mut n = 0.0;
    let mut q = 0.0;
    let mut e = unit;
    while e < params {
        let gv = g[base + e];
        let tv = target[e];
        d += gv * tv;
        n += gv * gv;
        q += (gv - tv) * (gv - tv);
        e += block;
    }
    dot[unit] = d;
    nn[unit] = n;
    sq[unit] = q;
    sync_cube();
    // A tree over the cube, halving the active units each round: bounded by CUBE_DIM, a constant,
    // so the barriers stay in uniform control flow.
    let mut active = CUBE_DIM;
    while active > 1 {
        active /= 2;
        if UNIT_POS < active {
            let from = unit + active as usize;
            let d2 = dot[from];
            let n2 = nn[from];
            let q2 = sq[from];
            dot[unit] += d2;
            nn[unit] += n2;
            sq[unit] += q2;
        }
        sync_cube();
    }
    if unit == 0 {
        if cosine == 1 {
            let floored = nn[0] + NORM_FLOOR;
            let denom = floored.sqrt() * target_norm;
            let cos = dot[0] / denom;
            losses[k] = 1.0 - cos;
            coef[0] = -(1.0 / denom);
            coef[1] = cos / floored;
        } else {
            losses[k] = sq[0];
            coef[0] = f32::new(-2.0);
            coef[1] = f32::new(2.0);
        }
    }
    sync_cube();
    let alpha = coef[0];
    let beta = coef[1];
    let mut e = unit;
    while e < params {
        g[base + e] = target[e] * alpha + g[base + e] * beta;
        e += block;
    }
}

/// The relaxation's reverse and sign-Adam (`pointwise::adam`), one unit per (row, feature).
/// `moments` = [m | v]; `adam` = [β1, β2, lr/(1 − β1^t), 1/(1 − β2^t), ε, sign?].
#[cube(launch_unchecked)]
pub fn relax_back_adam(
    x_bar: &[f32],
    aux: &[f32],
    rc: &[f32],
    segments: &[u32],
    z: &mut [f32],
    moments: &mut [f32],
    rows: usize,
    d: usize,
    features: usize,
    beta1: f32,
    beta2: f32,
    step_size: f32,
    inv_bias2: f32,
    eps: f32,
    sign: u32,
    relaxed: u32,
) {
    let t = ABSOLUTE_POS;
    if t < rows * features {
        let row = t / features;
        let f = t % features;
        let start = segments[3 * f] as usize;
        let width = segments[3 * f + 1] as usize;
        let cat = segments[3 * f + 2];
        let base = row * d;
        let total_len = rows * d;
        let mut block_sum = 0.0;
        if relaxed == 1 && cat == 1 {
            for j in start..start + width {
                block_sum += aux[base + j] * x_bar[base + j] * rc[RC_INV_STD * d + j];
            }
        }
        for j in start..start + width {
            let c = base + j;
            let mut grad = x_bar[c];
            if relaxed == 1 {
                if cat == 1 {
                    let p = aux[c];
                    let tj = p * x_bar[c] * rc[RC_INV_STD * d + j];
                    grad = (tj - p * block_sum) * rc[RC_STD * d + j];
                } else {
                    let s = aux[c];
                    grad = x_bar[c] * rc[RC_RANGE * d + j] * s * (1.0 - s);
                }
            }
            if sign == 1 {
                grad = select(grad > 0.0, 1.0f32, select(grad < 0.0, -1.0f32, 0.0f32));
            }
            let m = beta1 * moments[c] + (1.0 - beta1) * grad;
            let v = beta2 * moments[total_len + c] + (1.0 - beta2) * grad * grad;
            moments[c] = m;
            moments[total_len + c] = v;
            z[c] -= m * step_size / ((v * inv_bias2).sqrt() + eps);
        }
    }
}

/// The rows projected on the span for the subspace prior, y = x·P ([rows, d]·[d, d]), one unit
/// per value.
#[cube(launch_unchecked)]
pub fn subspace_project(x: &[f32], projector: &[f32], y: &mut [f32], rows: usize, d: usize) {
    let t = ABSOLUTE_POS;
    if t < rows * d {
        let base = (t / d) * d;
        let j = t % d;
        let mut acc = f32::new(0.0);
        for i in 0..d {
            acc += x[base + i] * projector[i * d + j];
        }
        y[t] = acc;
    }
}

/// The subspace prior (`pointwise::subspace_terms`), one cube per member of `len` values: the
/// member's loss gains w·(1 − c/a), a = ‖x‖², c = ⟨x, y⟩, and its dL/dx gains k_x·x + k_y·y.
#[cube(launch_unchecked)]
pub fn subspace_prior(
    x: &[f32],
    y: &[f32],
    x_bar: &mut [f32],
    losses: &mut [f32],
    len: usize,
    weight: f32,
    #[comptime] block: usize,
) {
    let k = CUBE_POS;
    let unit = UNIT_POS as usize;
    let base = k * len;
    let mut aa = Shared::<[f32]>::new_slice(block);
    let mut cc = Shared::<[f32]>::new_slice(block);
    let mut coef = Shared::<[f32]>::new_slice(2usize);
    let mut a = f32::new(0.0);
    let mut c = f32::new(0.0);
    let mut e = unit;
    while e < len {
        let xv = x[base + e];
        a += xv * xv;
        c += xv * y[base + e];
        e += block;
    }
    aa[unit] = a;
    cc[unit] = c;
    sync_cube();
    // The same uniform tree as `objective`.
    let mut active = CUBE_DIM;
    while active > 1 {
        active /= 2;
        if UNIT_POS < active {
            let from = unit + active as usize;
            let a2 = aa[from];
            let c2 = cc[from];
            aa[unit] += a2;
            cc[unit] += c2;
        }
        sync_cube();
    }
    if unit == 0 {
        let floored = aa[0] + NORM_FLOOR;
        let ratio = cc[0] / floored;
        let ky = (f32::new(1.0) / floored) * (f32::new(-2.0) * weight);
        let kx = ratio * (ky * f32::new(-1.0));
        losses[k] += ratio * (f32::new(0.0) - weight) + weight;
        coef[0] = kx;
        coef[1] = ky;
    }
    sync_cube();
    let kx = coef[0];
    let ky = coef[1];
    let mut e = unit;
    while e < len {
        x_bar[base + e] += x[base + e] * kx + y[base + e] * ky;
        e += block;
    }
}

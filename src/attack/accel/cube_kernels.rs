//! The inversion step as CubeCL kernels (WGSL for WebGPU and wgpu, CUDA for burn's CUDA backend):
//! the definition's math (`attack::inversion`), one kernel per stage and layer, every member and
//! row at once. `accel::cube` launches them; tests/step_equality.rs holds them to the definition.
//!
//! Layouts (row-major, `rows` = N·B): a layer's constants `lc` = [W (in·out) | b (out) | the
//! observed update's W (in·out) | its b (out)], so the observed part has the layout of one member's
//! gradient `g` = [gW | gb]; the relaxation's constants `rc` = [std | mean | 1/std | hi − lo | lo],
//! each d long; `segments` = (offset, width, categorical) per feature, as u32.
//!
//! WebGPU gives a kernel at most 8 storage buffers (CubeCL adds one for its scalars), and only
//! barriers in uniform control flow: the one kernel with barriers (`param_grad`) bounds its loops
//! by comptime values alone.
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
#[cube(launch)]
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

/// A hidden layer: out = ReLU(input · W + b), one unit per output value.
#[cube(launch)]
pub fn dense_relu(input: &[f32], lc: &[f32], out: &mut [f32], rows: usize, n_in: usize, n_out: usize) {
    let t = ABSOLUTE_POS;
    if t < rows * n_out {
        let r = t / n_out;
        let o = t % n_out;
        let mut acc = lc[n_in * n_out + o];
        for i in 0..n_in {
            acc += input[r * n_in + i] * lc[i * n_out + o];
        }
        out[t] = acc.max(0.0);
    }
}

/// The output layer, its softmax and δ = (softmax − y)/B, one unit per row.
#[cube(launch)]
pub fn output_delta(
    input: &[f32],
    lc: &[f32],
    onehot: &[f32],
    probs: &mut [f32],
    delta: &mut [f32],
    rows: usize,
    n_in: usize,
    classes: usize,
    batch: usize,
    inv_batch: f32,
) {
    let r = ABSOLUTE_POS;
    if r < rows {
        let mut top = lc[n_in * classes] - 3.0e38;
        for c in 0..classes {
            let mut acc = lc[n_in * classes + c];
            for i in 0..n_in {
                acc += input[r * n_in + i] * lc[i * classes + c];
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

/// δ of the layer below: (δ · Wᵀ) ⊙ [h > 0], one unit per (row, input of this layer).
#[cube(launch)]
pub fn delta_back(delta: &[f32], lc: &[f32], h: &[f32], out: &mut [f32], rows: usize, n_in: usize, n_out: usize) {
    let t = ABSOLUTE_POS;
    if t < rows * n_in {
        let r = t / n_in;
        let i = t % n_in;
        let mut acc = 0.0;
        if h[t] > 0.0 {
            for o in 0..n_out {
                acc += delta[r * n_out + o] * lc[i * n_out + o];
            }
        }
        out[t] = acc;
    }
}

/// One layer's parameter gradient per member, gW = inputᵀ δ and gb = Σ_rows δ, one unit per
/// (member, parameter); each cube also sums its parameters' ⟨g, t⟩, ‖g‖² and ‖g − t‖² into one
/// slot of `partials` ([N, slots, 3]), which `finalize` adds up. Cube count: (chunks, N).
#[cube(launch)]
pub fn param_grad(
    input: &[f32],
    delta: &[f32],
    lc: &[f32],
    g: &mut [f32],
    partials: &mut [f32],
    batch: usize,
    n_in: usize,
    n_out: usize,
    slot_offset: usize,
    slots: usize,
    #[comptime] block: usize,
) {
    let k = CUBE_POS_Y as usize;
    let chunk = CUBE_POS_X as usize;
    let unit = UNIT_POS as usize;
    let e = chunk * block + unit;
    let weights = n_in * n_out;
    let size = weights + n_out;
    let mut gv = 0.0;
    let mut tv = 0.0;
    if e < size {
        let first = k * batch;
        if e < weights {
            let i = e / n_out;
            let o = e % n_out;
            for b in 0..batch {
                gv += input[(first + b) * n_in + i] * delta[(first + b) * n_out + o];
            }
        } else {
            let o = e - weights;
            for b in 0..batch {
                gv += delta[(first + b) * n_out + o];
            }
        }
        tv = lc[size + e];
        g[k * size + e] = gv;
    }
    let mut dot = Shared::<[f32]>::new_slice(block);
    let mut nn = Shared::<[f32]>::new_slice(block);
    let mut sq = Shared::<[f32]>::new_slice(block);
    dot[unit] = gv * tv;
    nn[unit] = gv * gv;
    sq[unit] = (gv - tv) * (gv - tv);
    sync_cube();
    // A tree over the cube, halving the active units each round (bounded by CUBE_DIM, a constant:
    // uniform control flow, as WGSL requires around barriers).
    let mut active = CUBE_DIM;
    while active > 1 {
        active /= 2;
        if UNIT_POS < active {
            let from = unit + active as usize;
            let d = dot[from];
            let n = nn[from];
            let q = sq[from];
            dot[unit] += d;
            nn[unit] += n;
            sq[unit] += q;
        }
        sync_cube();
    }
    if unit == 0 {
        let at = (k * slots + slot_offset + chunk) * 3;
        partials[at] = dot[0];
        partials[at + 1] = nn[0];
        partials[at + 2] = sq[0];
    }
}

/// Each member's objective from its partial sums: the loss, and α, β of dloss/dg = α·t + β·g
/// (`pointwise::cosine_terms`; DLG's squared error when `cosine` is 0), one unit per member.
#[cube(launch)]
pub fn finalize(
    partials: &[f32],
    coef: &mut [f32],
    losses: &mut [f32],
    members: usize,
    slots: usize,
    target_norm: f32,
    cosine: u32,
) {
    let k = ABSOLUTE_POS;
    if k < members {
        let mut dot = 0.0;
        let mut nn = 0.0;
        let mut sq = 0.0;
        for s in 0..slots {
            let at = (k * slots + s) * 3;
            dot += partials[at];
            nn += partials[at + 1];
            sq += partials[at + 2];
        }
        if cosine == 1 {
            let floored = nn + NORM_FLOOR;
            let denom = floored.sqrt() * target_norm;
            let cos = dot / denom;
            losses[k] = 1.0 - cos;
            coef[2 * k] = -(1.0 / denom);
            coef[2 * k + 1] = cos / floored;
        } else {
            losses[k] = sq;
            coef[2 * k] = f32::new(-2.0);
            coef[2 * k + 1] = f32::new(2.0);
        }
    }
}

/// The reverse of one layer's gradient, with G = α·t + β·g per member computed on the fly; one
/// unit per (row, input or output of the layer), written to `bars` = [rows, in + out]:
/// dL/dinput = δ Gᵀ in the first `in` columns and dL/dδ = input G + Gb (+ the layer below's
/// dL/dδ, masked, through W when `below` is set) in the last `out`.
#[cube(launch)]
pub fn reverse_layer(
    delta: &[f32],
    g: &[f32],
    lc: &[f32],
    coef: &[f32],
    input: &[f32],
    bars_below: &[f32],
    bars: &mut [f32],
    rows: usize,
    batch: usize,
    n_in: usize,
    n_out: usize,
    n_below: usize,
    #[comptime] below: bool,
) {
    let width = n_in + n_out;
    let t = ABSOLUTE_POS;
    if t < rows * width {
        let r = t / width;
        let j = t % width;
        let k = r / batch;
        let alpha = coef[2 * k];
        let beta = coef[2 * k + 1];
        let weights = n_in * n_out;
        let size = weights + n_out;
        let gk = k * size;
        let mut acc = 0.0;
        if j < n_in {
            for o in 0..n_out {
                let big_g = alpha * lc[size + j * n_out + o] + beta * g[gk + j * n_out + o];
                acc += delta[r * n_out + o] * big_g;
            }
        } else {
            let o = j - n_in;
            acc = alpha * lc[size + weights + o] + beta * g[gk + weights + o];
            for i in 0..n_in {
                let big_g = alpha * lc[size + i * n_out + o] + beta * g[gk + i * n_out + o];
                acc += input[r * n_in + i] * big_g;
            }
            if below {
                // The layer below's dL/dδ sits after its n_below input columns.
                let stride = n_below + n_in;
                for i in 0..n_in {
                    if input[r * n_in + i] > 0.0 {
                        acc += bars_below[r * stride + n_below + i] * lc[i * n_out + o];
                    }
                }
            }
        }
        bars[t] = acc;
    }
}

/// Back through the forward pass, top layer: dL/da from the softmax's reverse of dL/dδ/B, then
/// total = dL/dinput + dL/da · Wᵀ, masked by the ReLU below; one unit per (row, input).
// `masked` is comptime: the bottom layer's kernel has no mask to test at all.
#[allow(clippy::collapsible_if)]
#[cube(launch)]
pub fn back_top(
    bars: &[f32],
    probs: &[f32],
    lc: &[f32],
    h: &[f32],
    out: &mut [f32],
    rows: usize,
    n_in: usize,
    classes: usize,
    inv_batch: f32,
    #[comptime] masked: bool,
) {
    let t = ABSOLUTE_POS;
    if t < rows * n_in {
        let r = t / n_in;
        let i = t % n_in;
        let width = n_in + classes;
        let mut inner = 0.0;
        for c in 0..classes {
            inner += bars[r * width + n_in + c] * inv_batch * probs[r * classes + c];
        }
        let mut acc = bars[r * width + i];
        for c in 0..classes {
            let s = probs[r * classes + c];
            let a_bar = s * (bars[r * width + n_in + c] * inv_batch - inner);
            acc += a_bar * lc[i * classes + c];
        }
        if masked {
            if h[t] <= 0.0 {
                acc = 0.0;
            }
        }
        out[t] = acc;
    }
}

/// Back through a hidden layer: total = dL/dinput + dL/da · Wᵀ, masked by the ReLU below.
#[allow(clippy::collapsible_if)]
#[cube(launch)]
pub fn back_hidden(
    bars: &[f32],
    a_bar: &[f32],
    lc: &[f32],
    h: &[f32],
    out: &mut [f32],
    rows: usize,
    n_in: usize,
    n_out: usize,
    #[comptime] masked: bool,
) {
    let t = ABSOLUTE_POS;
    if t < rows * n_in {
        let r = t / n_in;
        let i = t % n_in;
        let mut acc = bars[r * (n_in + n_out) + i];
        for o in 0..n_out {
            acc += a_bar[r * n_out + o] * lc[i * n_out + o];
        }
        if masked {
            if h[t] <= 0.0 {
                acc = 0.0;
            }
        }
        out[t] = acc;
    }
}

/// The relaxation's reverse and sign-Adam (`pointwise::adam`), one unit per (row, feature).
/// `moments` = [m | v]; `adam` = [β1, β2, lr/(1 − β1^t), 1/(1 − β2^t), ε, sign?].
#[cube(launch)]
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

//! The reverse half of the inversion step as CubeCL kernels: the reverse of each layer's
//! gradient from G = dloss/dg, then back through the client's forward pass to dL/dx. The layouts,
//! the row blocks and WebGPU's limits are `kernels`' (see its module docs); `accel::cube`
//! launches these after its `objective` kernel.
// CubeCL's macro expands `div_ceil` on its own types only: the kernels round up by hand.
#![allow(clippy::manual_div_ceil)]

use burn::cubecl;
use cubecl::prelude::*;

use super::kernels::{RB, clamp_row, store4};

/// The reverse of one layer's gradient, from G (in `g`), written to `bars` = [rows, in + out]:
/// dL/dinput = δ Gᵀ in the first `in` columns and dL/dδ = input G + Gb (+ the layer below's
/// dL/dδ, masked, through W when `below` is set) in the last `out`. One unit per column for four
/// rows of one member, which share its G.
#[cube(launch_unchecked)]
pub fn reverse_layer(
    delta: &[f32],
    g: &[f32],
    net: &[f32],
    input: &[f32],
    bars_below: &[f32],
    bars: &mut [f32],
    members: usize,
    batch: usize,
    n_in: usize,
    n_out: usize,
    n_below: usize,
    off: usize,
    params: usize,
    #[comptime] below: bool,
) {
    let width = n_in + n_out;
    let blocks = (batch + RB - 1) / RB;
    let t = ABSOLUTE_POS;
    if t < members * blocks * width {
        let j = t % width;
        let kb = t / width;
        let k = kb / blocks;
        let first = k * batch;
        let q0 = (kb % blocks) * RB;
        let last = batch - 1;
        let r0 = first + q0;
        let r1 = first + clamp_row(q0 + 1, last);
        let r2 = first + clamp_row(q0 + 2, last);
        let r3 = first + clamp_row(q0 + 3, last);
        let gk = k * params + off;
        let weights = n_in * n_out;
        let mut a0 = 0.0;
        let mut a1 = 0.0;
        let mut a2 = 0.0;
        let mut a3 = 0.0;
        if j < n_in {
            for o in 0..n_out {
                let big_g = g[gk + j * n_out + o];
                a0 += delta[r0 * n_out + o] * big_g;
                a1 += delta[r1 * n_out + o] * big_g;
                a2 += delta[r2 * n_out + o] * big_g;
                a3 += delta[r3 * n_out + o] * big_g;
            }
        } else {
            let o = j - n_in;
            let gb = g[gk + weights + o];
            a0 = gb;
            a1 = gb;
            a2 = gb;
            a3 = gb;
            for i in 0..n_in {
                let big_g = g[gk + i * n_out + o];
                a0 += input[r0 * n_in + i] * big_g;
                a1 += input[r1 * n_in + i] * big_g;
                a2 += input[r2 * n_in + i] * big_g;
                a3 += input[r3 * n_in + i] * big_g;
            }
            if below {
                // The layer below's dL/dδ sits after its n_below input columns; ReLU's mask is
                // where this layer's input is positive.
                let stride = n_below + n_in;
                for i in 0..n_in {
                    let w = net[off + i * n_out + o];
                    let x0 = input[r0 * n_in + i];
                    let x1 = input[r1 * n_in + i];
                    let x2 = input[r2 * n_in + i];
                    let x3 = input[r3 * n_in + i];
                    a0 += select(x0 > 0.0, bars_below[r0 * stride + n_below + i], 0.0) * w;
                    a1 += select(x1 > 0.0, bars_below[r1 * stride + n_below + i], 0.0) * w;
                    a2 += select(x2 > 0.0, bars_below[r2 * stride + n_below + i], 0.0) * w;
                    a3 += select(x3 > 0.0, bars_below[r3 * stride + n_below + i], 0.0) * w;
                }
            }
        }
        store4(
            bars,
            r0 * width + j,
            r1 * width + j,
            r2 * width + j,
            r3 * width + j,
            batch - q0,
            a0,
            a1,
            a2,
            a3,
        );
    }
}

/// Back through the forward pass, top layer: dL/da from the softmax's reverse of dL/dδ/B, then
/// total = dL/dinput + dL/da · Wᵀ, masked by the ReLU below; one unit per (row, input).
// `masked` is comptime: the bottom layer's kernel has no mask to test at all.
#[allow(clippy::collapsible_if)]
#[cube(launch_unchecked)]
pub fn back_top(
    bars: &[f32],
    probs: &[f32],
    net: &[f32],
    h: &[f32],
    out: &mut [f32],
    rows: usize,
    n_in: usize,
    classes: usize,
    inv_batch: f32,
    off: usize,
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
            acc += a_bar * net[off + i * classes + c];
        }
        if masked {
            if h[t] <= 0.0 {
                acc = 0.0;
            }
        }
        out[t] = acc;
    }
}

/// Back through a hidden layer: total = dL/dinput + dL/da · Wᵀ, masked by the ReLU below; one
/// unit per input for four rows.
#[cube(launch_unchecked)]
pub fn back_hidden(
    bars: &[f32],
    a_bar: &[f32],
    net: &[f32],
    h: &[f32],
    out: &mut [f32],
    rows: usize,
    n_in: usize,
    n_out: usize,
    off: usize,
    #[comptime] masked: bool,
) {
    let t = ABSOLUTE_POS;
    if t < ((rows + RB - 1) / RB) * n_in {
        let i = t % n_in;
        let r0 = (t / n_in) * RB;
        let last = rows - 1;
        let r1 = clamp_row(r0 + 1, last);
        let r2 = clamp_row(r0 + 2, last);
        let r3 = clamp_row(r0 + 3, last);
        let width = n_in + n_out;
        let mut a0 = bars[r0 * width + i];
        let mut a1 = bars[r1 * width + i];
        let mut a2 = bars[r2 * width + i];
        let mut a3 = bars[r3 * width + i];
        for o in 0..n_out {
            let w = net[off + i * n_out + o];
            a0 += a_bar[r0 * n_out + o] * w;
            a1 += a_bar[r1 * n_out + o] * w;
            a2 += a_bar[r2 * n_out + o] * w;
            a3 += a_bar[r3 * n_out + o] * w;
        }
        if masked {
            a0 = select(h[r0 * n_in + i] > 0.0, a0, 0.0);
            a1 = select(h[r1 * n_in + i] > 0.0, a1, 0.0);
            a2 = select(h[r2 * n_in + i] > 0.0, a2, 0.0);
            a3 = select(h[r3 * n_in + i] > 0.0, a3, 0.0);
        }
        store4(
            out,
            r0 * n_in + i,
            r1 * n_in + i,
            r2 * n_in + i,
            r3 * n_in + i,
            rows - r0,
            a0,
            a1,
            a2,
            a3,
        );
    }
}

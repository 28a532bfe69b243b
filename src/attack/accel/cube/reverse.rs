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
/// dL/dδ, masked, through W when `below` is set) in the last `out`. One unit per four columns of
/// one part for four rows of one member, which share its G (each value loaded once for four
/// products).
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
    let in_blocks = (n_in + RB - 1) / RB;
    let columns = in_blocks + (n_out + RB - 1) / RB;
    let t = ABSOLUTE_POS;
    if t < members * blocks * columns {
        let jb = t % columns;
        let kb = t / columns;
        let k = kb / blocks;
        let first = k * batch;
        let q0 = (kb % blocks) * RB;
        let last = batch - 1;
        let r0 = first + q0;
        let r1 = first + clamp_row(q0 + 1, last);
        let r2 = first + clamp_row(q0 + 2, last);
        let r3 = first + clamp_row(q0 + 3, last);
        let live_rows = batch - q0;
        let gk = k * params + off;
        let weights = n_in * n_out;
        if jb < in_blocks {
            let j0 = jb * RB;
            let last_j = n_in - 1;
            let j1 = clamp_row(j0 + 1, last_j);
            let j2 = clamp_row(j0 + 2, last_j);
            let j3 = clamp_row(j0 + 3, last_j);
            let mut a00 = 0.0;
            let mut a01 = 0.0;
            let mut a02 = 0.0;
            let mut a03 = 0.0;
            let mut a10 = 0.0;
            let mut a11 = 0.0;
            let mut a12 = 0.0;
            let mut a13 = 0.0;
            let mut a20 = 0.0;
            let mut a21 = 0.0;
            let mut a22 = 0.0;
            let mut a23 = 0.0;
            let mut a30 = 0.0;
            let mut a31 = 0.0;
            let mut a32 = 0.0;
            let mut a33 = 0.0;
            for o in 0..n_out {
                let g0 = g[gk + j0 * n_out + o];
                let g1 = g[gk + j1 * n_out + o];
                let g2 = g[gk + j2 * n_out + o];
                let g3 = g[gk + j3 * n_out + o];
                let d0 = delta[r0 * n_out + o];
                let d1 = delta[r1 * n_out + o];
                let d2 = delta[r2 * n_out + o];
                let d3 = delta[r3 * n_out + o];
                a00 += d0 * g0;
                a01 += d0 * g1;
                a02 += d0 * g2;
                a03 += d0 * g3;
                a10 += d1 * g0;
                a11 += d1 * g1;
                a12 += d1 * g2;
                a13 += d1 * g3;
                a20 += d2 * g0;
                a21 += d2 * g1;
                a22 += d2 * g2;
                a23 += d2 * g3;
                a30 += d3 * g0;
                a31 += d3 * g1;
                a32 += d3 * g2;
                a33 += d3 * g3;
            }
            let live = n_in - j0;
            {
                let row = r0 * width;
                store4(bars, row + j0, row + j1, row + j2, row + j3, live, a00, a01, a02, a03);
            }
            if live_rows > 1 {
                let row = r1 * width;
                store4(bars, row + j0, row + j1, row + j2, row + j3, live, a10, a11, a12, a13);
            }
            if live_rows > 2 {
                let row = r2 * width;
                store4(bars, row + j0, row + j1, row + j2, row + j3, live, a20, a21, a22, a23);
            }
            if live_rows > 3 {
                let row = r3 * width;
                store4(bars, row + j0, row + j1, row + j2, row + j3, live, a30, a31, a32, a33);
            }
        } else {
            let o0 = (jb - in_blocks) * RB;
            let last_o = n_out - 1;
            let o1 = clamp_row(o0 + 1, last_o);
            let o2 = clamp_row(o0 + 2, last_o);
            let o3 = clamp_row(o0 + 3, last_o);
            let gb0 = g[gk + weights + o0];
            let gb1 = g[gk + weights + o1];
            let gb2 = g[gk + weights + o2];
            let gb3 = g[gk + weights + o3];
            let mut a00 = gb0;
            let mut a01 = gb1;
            let mut a02 = gb2;
            let mut a03 = gb3;
            let mut a10 = gb0;
            let mut a11 = gb1;
            let mut a12 = gb2;
            let mut a13 = gb3;
            let mut a20 = gb0;
            let mut a21 = gb1;
            let mut a22 = gb2;
            let mut a23 = gb3;
            let mut a30 = gb0;
            let mut a31 = gb1;
            let mut a32 = gb2;
            let mut a33 = gb3;
            for i in 0..n_in {
                let g0 = g[gk + i * n_out + o0];
                let g1 = g[gk + i * n_out + o1];
                let g2 = g[gk + i * n_out + o2];
                let g3 = g[gk + i * n_out + o3];
                let x0 = input[r0 * n_in + i];
                let x1 = input[r1 * n_in + i];
                let x2 = input[r2 * n_in + i];
                let x3 = input[r3 * n_in + i];
                a00 += x0 * g0;
                a01 += x0 * g1;
                a02 += x0 * g2;
                a03 += x0 * g3;
                a10 += x1 * g0;
                a11 += x1 * g1;
                a12 += x1 * g2;
                a13 += x1 * g3;
                a20 += x2 * g0;
                a21 += x2 * g1;
                a22 += x2 * g2;
                a23 += x2 * g3;
                a30 += x3 * g0;
                a31 += x3 * g1;
                a32 += x3 * g2;
                a33 += x3 * g3;
            }
            if below {
                // The layer below's dL/dδ sits after its n_below input columns; ReLU's mask is
                // where this layer's input is positive.
                let stride = n_below + n_in;
                for i in 0..n_in {
                    let w0 = net[off + i * n_out + o0];
                    let w1 = net[off + i * n_out + o1];
                    let w2 = net[off + i * n_out + o2];
                    let w3 = net[off + i * n_out + o3];
                    let m0 = select(input[r0 * n_in + i] > 0.0, bars_below[r0 * stride + n_below + i], 0.0);
                    let m1 = select(input[r1 * n_in + i] > 0.0, bars_below[r1 * stride + n_below + i], 0.0);
                    let m2 = select(input[r2 * n_in + i] > 0.0, bars_below[r2 * stride + n_below + i], 0.0);
                    let m3 = select(input[r3 * n_in + i] > 0.0, bars_below[r3 * stride + n_below + i], 0.0);
                    a00 += m0 * w0;
                    a01 += m0 * w1;
                    a02 += m0 * w2;
                    a03 += m0 * w3;
                    a10 += m1 * w0;
                    a11 += m1 * w1;
                    a12 += m1 * w2;
                    a13 += m1 * w3;
                    a20 += m2 * w0;
                    a21 += m2 * w1;
                    a22 += m2 * w2;
                    a23 += m2 * w3;
                    a30 += m3 * w0;
                    a31 += m3 * w1;
                    a32 += m3 * w2;
                    a33 += m3 * w3;
                }
            }
            let live = n_out - o0;
            {
                let row = r0 * width + n_in;
                store4(bars, row + o0, row + o1, row + o2, row + o3, live, a00, a01, a02, a03);
            }
            if live_rows > 1 {
                let row = r1 * width + n_in;
                store4(bars, row + o0, row + o1, row + o2, row + o3, live, a10, a11, a12, a13);
            }
            if live_rows > 2 {
                let row = r2 * width + n_in;
                store4(bars, row + o0, row + o1, row + o2, row + o3, live, a20, a21, a22, a23);
            }
            if live_rows > 3 {
                let row = r3 * width + n_in;
                store4(bars, row + o0, row + o1, row + o2, row + o3, live, a30, a31, a32, a33);
            }
        }
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

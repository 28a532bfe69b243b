//! One step's stages, each a few kernel launches on the stepper's buffers: forward, δ, the
//! objective, the reverse of each layer's gradient, back to dL/dx, the subspace prior, sign-Adam,
//! and the relaxation.
use cubecl::prelude::*;

use super::kernels as k;
use super::reverse as rev;
use super::{BLOCK, CubeStepper, buf, cubes, row_blocks};
use crate::attack::inversion::pointwise::AdamStep;
use burn::cubecl;

impl CubeStepper<'_> {
    /// The network, every layer W then b, as a kernel argument.
    pub(super) fn net_arg(&self) -> BufferArg {
        buf(&self.net, self.dims.params)
    }

    /// Forward: hidden layers, then the output layer's softmax and δ (L launches). Safety: as
    /// `step_kernels`.
    pub(super) unsafe fn forward_kernels(&self) {
        let c = &self.client;
        let dm = &self.dims;
        let (rows, layers, s, offsets) = (dm.rows, dm.layers(), &dm.sizes, &dm.offsets);
        // SAFETY: as in `step_kernels`.
        unsafe {
            for l in 0..layers - 1 {
                let (count, dim) = cubes(c, row_blocks(rows) * s[l + 1]);
                k::dense_relu::launch_unchecked(
                    c,
                    count,
                    dim,
                    buf(self.input(l), rows * s[l]),
                    self.net_arg(),
                    buf(&self.h[l], rows * s[l + 1]),
                    rows,
                    s[l],
                    s[l + 1],
                    offsets[l],
                );
            }
            let top = layers - 1;
            let classes = s[layers];
            let inv_batch = 1.0 / dm.batch as f32;
            let (count, dim) = cubes(c, rows);
            k::output_delta::launch_unchecked(
                c,
                count,
                dim,
                buf(self.input(top), rows * s[top]),
                self.net_arg(),
                buf(&self.onehot, dm.batch * classes),
                buf(&self.h[top], rows * classes),
                buf(&self.delta[top], rows * classes),
                rows,
                s[top],
                classes,
                dm.batch,
                inv_batch,
                offsets[top],
            );
        }
    }

    /// Backward: δ of each layer below the top (L − 1 launches). Safety: as `step_kernels`.
    pub(super) unsafe fn delta_kernels(&self) {
        let c = &self.client;
        let dm = &self.dims;
        let (rows, layers, s, offsets) = (dm.rows, dm.layers(), &dm.sizes, &dm.offsets);
        // SAFETY: as in `step_kernels`.
        unsafe {
            for l in (1..layers).rev() {
                let (count, dim) = cubes(c, row_blocks(rows) * s[l]);
                k::delta_back::launch_unchecked(
                    c,
                    count,
                    dim,
                    buf(&self.delta[l], rows * s[l + 1]),
                    self.net_arg(),
                    buf(&self.h[l - 1], rows * s[l]),
                    buf(&self.delta[l - 1], rows * s[l]),
                    rows,
                    s[l],
                    s[l + 1],
                    offsets[l],
                );
            }
        }
    }

    /// Every member's parameter gradient, then its objective and G in its place (L + 1 launches).
    /// Safety: as `step_kernels`.
    pub(super) unsafe fn objective_kernels(&self) {
        let c = &self.client;
        let dm = &self.dims;
        let (rows, layers, s, offsets, params) = (dm.rows, dm.layers(), &dm.sizes, &dm.offsets, dm.params);
        let g_len = dm.members * params;
        // SAFETY: as in `step_kernels`.
        unsafe {
            for l in 0..layers {
                let units = s[l] * row_blocks(s[l + 1]) + s[l + 1];
                let (count, dim) = cubes(c, dm.members * units);
                k::param_grad::launch_unchecked(
                    c,
                    count,
                    dim,
                    buf(self.input(l), rows * s[l]),
                    buf(&self.delta[l], rows * s[l + 1]),
                    buf(&self.g, g_len),
                    dm.members,
                    dm.batch,
                    s[l],
                    s[l + 1],
                    offsets[l],
                    params,
                );
            }
            k::objective::launch_unchecked(
                c,
                CubeCount::Static(dm.members as u32, 1, 1),
                CubeDim::new_1d(BLOCK as u32),
                buf(&self.g, g_len),
                buf(&self.target, params),
                buf(&self.losses, dm.members),
                params,
                self.target_norm,
                self.cosine as u32,
                BLOCK,
            );
        }
    }

    /// Reverse of each layer's gradient, bottom up (each adds the layer below's dL/dδ; L launches).
    /// Safety: as `step_kernels`.
    pub(super) unsafe fn reverse_kernels(&self) {
        let c = &self.client;
        let dm = &self.dims;
        let (rows, layers, s, offsets, params) = (dm.rows, dm.layers(), &dm.sizes, &dm.offsets, dm.params);
        let g_len = dm.members * params;
        // SAFETY: as in `step_kernels`.
        unsafe {
            for l in 0..layers {
                let width = s[l] + s[l + 1];
                let below = if l > 0 { &self.bars[l - 1] } else { &self.target };
                let below_len = if l > 0 { rows * (s[l - 1] + s[l]) } else { params };
                let (count, dim) = cubes(c, dm.members * row_blocks(dm.batch) * width);
                rev::reverse_layer::launch_unchecked(
                    c,
                    count,
                    dim,
                    buf(&self.delta[l], rows * s[l + 1]),
                    buf(&self.g, g_len),
                    self.net_arg(),
                    buf(self.input(l), rows * s[l]),
                    buf(below, below_len),
                    buf(&self.bars[l], rows * width),
                    dm.members,
                    dm.batch,
                    s[l],
                    s[l + 1],
                    if l > 0 { s[l - 1] } else { 0 },
                    offsets[l],
                    params,
                    l > 0,
                );
            }
        }
    }

    /// Back through the forward pass, top down, to dL/dx in back[0] (L launches). Safety: as
    /// `step_kernels`.
    pub(super) unsafe fn back_kernels(&self) {
        let c = &self.client;
        let dm = &self.dims;
        let (rows, layers, s, offsets) = (dm.rows, dm.layers(), &dm.sizes, &dm.offsets);
        let top = layers - 1;
        let classes = s[layers];
        let inv_batch = 1.0 / dm.batch as f32;
        // SAFETY: as in `step_kernels`.
        unsafe {
            for l in (0..layers).rev() {
                let mask = if l > 0 { &self.h[l - 1] } else { &self.x };
                if l == top {
                    let (count, dim) = cubes(c, rows * s[l]);
                    rev::back_top::launch_unchecked(
                        c,
                        count,
                        dim,
                        buf(&self.bars[l], rows * (s[l] + classes)),
                        buf(&self.h[top], rows * classes),
                        self.net_arg(),
                        buf(mask, rows * s[l]),
                        buf(&self.back[l], rows * s[l]),
                        rows,
                        s[l],
                        classes,
                        inv_batch,
                        offsets[l],
                        l > 0,
                    );
                } else {
                    let (count, dim) = cubes(c, row_blocks(rows) * s[l]);
                    rev::back_hidden::launch_unchecked(
                        c,
                        count,
                        dim,
                        buf(&self.bars[l], rows * (s[l] + s[l + 1])),
                        buf(&self.back[l + 1], rows * s[l + 1]),
                        self.net_arg(),
                        buf(mask, rows * s[l]),
                        buf(&self.back[l], rows * s[l]),
                        rows,
                        s[l],
                        s[l + 1],
                        offsets[l],
                        l > 0,
                    );
                }
            }
        }
    }

    /// The subspace prior on the rows layer 0 saw, added to their dL/dx and the losses (2 launches
    /// with the prior, none without). Safety: as `step_kernels`.
    pub(super) unsafe fn subspace_kernels(&self) {
        let Some((projector, weight, y)) = &self.subspace else {
            return;
        };
        let c = &self.client;
        let dm = &self.dims;
        let (rows, d) = (dm.rows, dm.d);
        // SAFETY: as in `step_kernels`.
        unsafe {
            let (count, dim) = cubes(c, rows * d);
            k::subspace_project::launch_unchecked(
                c,
                count,
                dim,
                buf(self.input0(), rows * d),
                buf(projector, d * d),
                buf(y, rows * d),
                rows,
                d,
            );
            k::subspace_prior::launch_unchecked(
                c,
                CubeCount::Static(dm.members as u32, 1, 1),
                CubeDim::new_1d(BLOCK as u32),
                buf(self.input0(), rows * d),
                buf(y, rows * d),
                buf(&self.back[0], rows * d),
                buf(&self.losses, dm.members),
                dm.batch * d,
                *weight,
                BLOCK,
            );
        }
    }

    /// dL/dx back through the relaxation to dL/dz, and sign-Adam's update of z (1 launch). Safety:
    /// as `step_kernels`.
    pub(super) unsafe fn adam_kernel(&self, a: &AdamStep) {
        let c = &self.client;
        let dm = &self.dims;
        let (rows, d, feats) = (dm.rows, dm.d, dm.features);
        // SAFETY: as in `step_kernels`.
        unsafe {
            let (count, dim) = cubes(c, rows * feats);
            k::relax_back_adam::launch_unchecked(
                c,
                count,
                dim,
                buf(&self.back[0], rows * d),
                buf(&self.aux, rows * d),
                buf(&self.rc, k::RC_ROWS * d),
                // SAFETY: created with 3 u32 per feature.
                BufferArg::from_raw_parts(self.segments.clone(), 3 * feats),
                buf(&self.z, rows * d),
                buf(&self.moments, 2 * rows * d),
                rows,
                d,
                feats,
                a.beta1,
                a.beta2,
                a.step_size,
                a.inv_bias2,
                a.eps,
                a.sign as u32,
                self.relaxed as u32,
            );
        }
    }

    /// z → x (and σ / the probabilities into aux).
    pub(super) fn relax_forward(&self) {
        let dm = &self.dims;
        let (rows, d, feats) = (dm.rows, dm.d, dm.features);
        let (count, dim) = cubes(&self.client, rows * feats);
        // SAFETY: as in `step_kernels`: the buffers were sized in `new` for this kernel; the
        // segments buffer holds 3 u32 per feature.
        unsafe {
            k::relax_forward::launch_unchecked(
                &self.client,
                count,
                dim,
                buf(&self.z, rows * d),
                buf(&self.rc, k::RC_ROWS * d),
                BufferArg::from_raw_parts(self.segments.clone(), 3 * feats),
                buf(&self.x, rows * d),
                buf(&self.aux, rows * d),
                rows,
                d,
                feats,
            )
        };
    }
}

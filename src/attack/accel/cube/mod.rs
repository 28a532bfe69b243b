//! The inversion on a GPU: the step as CubeCL kernels (`kernels`, `reverse`; `launches` launches
//! them), launched
//! on the device burn's wgpu (or CUDA) backend opened, on buffers uploaded once. A step is 5·L + 2
//! launches for L layers (17 for the default 100-100 network), 2 more with the subspace prior, and
//! nothing is read back but the losses the driver asks for, with the copy started at once and
//! awaited a report later.
use std::collections::VecDeque;

use burn::backend::DispatchDevice;
use burn::cubecl;
use cubecl::prelude::*;
use cubecl::server::Handle;

pub mod kernels;
mod launches;
pub mod reverse;

use super::cpu::HostProblem;
use crate::attack::inversion::driver::{
    Cadence, Inversion, InversionConfig, Progress, Stepper, drive, member_starts, split_members,
};
use crate::attack::inversion::objective::Objective;
use crate::attack::inversion::pointwise::AdamStep;
use crate::error::{Error, Result};
use crate::runtime::Runtime;
use kernels as k;

/// Loss buffers a stepper cycles through. The driver keeps at most one read in flight while it
/// steps on, and a read is enqueued before the next step is (natively at once; in a browser its
/// task runs at the report's yield to the event loop), so two would do; four leave room.
const LOSS_SLOTS: usize = 4;

/// Units per cube of the element-wise kernels and of `param_grad`'s reduction.
const BLOCK: usize = 256;

type ReadResult = std::result::Result<Vec<cubecl::bytes::Bytes>, cubecl::server::ServerError>;

/// A read of one buffer, started now and finished later. In a browser it runs as a task of its own
/// on the page's event loop, so the copy is enqueued at once (behind the kernels already launched)
/// while the driver goes on launching steps; natively a read's round trip is short, and it is
/// taken at once.
enum LossRead {
    #[cfg(not(target_arch = "wasm32"))]
    Done(ReadResult),
    #[cfg(target_arch = "wasm32")]
    Pending(async_channel::Receiver<ReadResult>),
}

// One variant per target: the match below is exhaustive either way.
#[allow(clippy::infallible_destructuring_match)]
impl LossRead {
    fn start(client: &Client, handle: Handle) -> LossRead {
        #[cfg(target_arch = "wasm32")]
        {
            let (tx, rx) = async_channel::bounded(1);
            let client = client.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let _ = tx.send(client.read_async(vec![handle]).await).await;
            });
            LossRead::Pending(rx)
        }
        #[cfg(not(target_arch = "wasm32"))]
        LossRead::Done(client.read(vec![handle]))
    }

    async fn finish(self) -> Result<Vec<cubecl::bytes::Bytes>> {
        let result = match self {
            #[cfg(not(target_arch = "wasm32"))]
            LossRead::Done(r) => r,
            #[cfg(target_arch = "wasm32")]
            LossRead::Pending(rx) => rx
                .recv()
                .await
                .map_err(|_| Error::Device("the GPU readback task ended without a result".into()))?,
        };
        result.map_err(|e| Error::Device(format!("reading the losses back from the GPU failed: {e:?}")))
    }
}

/// The cubecl client of the device a runtime opened.
pub fn client(runtime: &Runtime) -> Result<Client> {
    match runtime.device.as_dispatch() {
        DispatchDevice::Cube(device) => Ok(device.client()),
        #[allow(unreachable_patterns)]
        _ => Err(Error::Device(format!(
            "{} has no GPU device for the CubeCL kernels",
            runtime.info.label
        ))),
    }
}

fn upload(client: &Client, values: &[f32]) -> Handle {
    // An empty buffer cannot be bound: every binding holds at least one value.
    if values.is_empty() {
        return client.create_from_slice(f32::as_bytes(&[0.0]));
    }
    client.create_from_slice(f32::as_bytes(values))
}

fn zeros(client: &Client, len: usize) -> Handle {
    upload(client, &vec![0.0; len.max(1)])
}

fn buf(h: &Handle, len: usize) -> BufferArg {
    // SAFETY: every handle passed here was created by this module with at least `len.max(1)` f32s.
    unsafe { BufferArg::from_raw_parts(h.clone(), len.max(1)) }
}

fn cubes(client: &Client, units: usize) -> (CubeCount, CubeDim) {
    let dim = CubeDim::new_1d(BLOCK as u32);
    (cubecl::calculate_cube_count_elemwise(client, units.max(1), dim), dim)
}

/// Blocks of `RB` rows (the row-blocked kernels' units).
fn row_blocks(rows: usize) -> usize {
    rows.div_ceil(k::RB)
}

/// Shapes of one inversion.
struct Dims {
    /// [d, hidden..., classes]
    sizes: Vec<usize>,
    rows: usize,
    batch: usize,
    members: usize,
    d: usize,
    features: usize,
    /// Where each layer's W then b start in the network's (and a gradient's) layout, and the total.
    offsets: Vec<usize>,
    params: usize,
}

impl Dims {
    fn layers(&self) -> usize {
        self.sizes.len() - 1
    }
    fn layer_params(&self, l: usize) -> usize {
        self.sizes[l] * self.sizes[l + 1] + self.sizes[l + 1]
    }
}

struct CubeStepper<'a> {
    p: &'a HostProblem,
    client: Client,
    dims: Dims,
    relaxed: bool,
    cosine: bool,
    target_norm: f32,
    // constants: the network and the observed update, every layer W then b
    net: Handle,
    target: Handle,
    rc: Handle,
    segments: Handle,
    segments_host: Vec<u32>,
    onehot: Handle,
    // state
    z: Handle,
    moments: Handle,
    // per step
    x: Handle,
    aux: Handle,
    /// Hidden layers' outputs, then the softmax.
    h: Vec<Handle>,
    delta: Vec<Handle>,
    /// Every member's gradient [N, params], then G = dloss/dg in its place.
    g: Handle,
    bars: Vec<Handle>,
    /// dL/da of hidden layers (masked), then dL/dx.
    back: Vec<Handle>,
    /// The loss slot the current step writes.
    losses: Handle,
    /// Buffers the steps write their losses to in turn (`LOSS_SLOTS`), made once.
    loss_slots: Vec<Handle>,
    steps_taken: usize,
    /// The subspace prior: its projector [d, d] and weight, and the rows projected, [rows, d].
    subspace: Option<(Handle, f32, Handle)>,
    requested: VecDeque<(usize, LossRead)>,
}

impl<'a> CubeStepper<'a> {
    /// The stepper of `n` members at z ([n, B, d]) with Adam's moments [m | v] (zero when None).
    fn new(client: Client, p: &'a HostProblem, n: usize, z: &[f32], moments: Option<&[f32]>) -> CubeStepper<'a> {
        let sizes = p.sizes().to_vec();
        let layers = sizes.len() - 1;
        let (b, d) = (p.batch(), p.d());
        let rows = n * b;
        let segments_host: Vec<u32> = p
            .segments()
            .iter()
            .flat_map(|&(o, w, cat)| [o as u32, w as u32, cat as u32])
            .collect();
        let features = segments_host.len() / 3;
        let mut dims = Dims {
            sizes: sizes.clone(),
            rows,
            batch: b,
            members: n,
            d,
            features,
            offsets: Vec::new(),
            params: 0,
        };
        for l in 0..layers {
            dims.offsets.push(dims.params);
            dims.params += dims.layer_params(l);
        }
        let flat = |parts: Vec<(&[f32], &[f32])>| -> Vec<f32> {
            parts
                .into_iter()
                .flat_map(|(w, bias)| w.iter().chain(bias).copied())
                .collect()
        };
        let net = upload(&client, &flat((0..layers).map(|l| p.layer(l)).collect()));
        let target = upload(&client, &flat((0..layers).map(|l| p.observed(l)).collect()));
        let rc = p
            .relax_constants()
            .map_or_else(|| zeros(&client, k::RC_ROWS * d), |rc| upload(&client, &rc));
        let segments = client.create_from_slice(u32::as_bytes(&segments_host));
        let segments_host = segments_host.clone();
        let onehot = upload(&client, p.onehot());
        let z = upload(&client, z);
        let moments = moments.map_or_else(|| zeros(&client, 2 * rows * d), |m| upload(&client, m));
        let per_layer = |f: &dyn Fn(usize) -> usize| (0..layers).map(|l| zeros(&client, f(l))).collect::<Vec<_>>();
        let loss_slots: Vec<Handle> = (0..LOSS_SLOTS).map(|_| zeros(&client, n)).collect();
        CubeStepper {
            p,
            relaxed: p.relax_constants().is_some(),
            cosine: p.objective() == Objective::Cosine,
            target_norm: p.target_norm(),
            net,
            target,
            rc,
            segments,
            segments_host,
            onehot,
            z,
            moments,
            x: zeros(&client, rows * d),
            aux: zeros(&client, rows * d),
            h: per_layer(&|l| rows * sizes[l + 1]),
            delta: per_layer(&|l| rows * sizes[l + 1]),
            g: zeros(&client, n * dims.params),
            bars: per_layer(&|l| rows * (sizes[l] + sizes[l + 1])),
            back: per_layer(&|l| rows * sizes[l]),
            losses: loss_slots[0].clone(),
            loss_slots,
            steps_taken: 0,
            subspace: p
                .subspace()
                .map(|(projector, weight)| (upload(&client, projector), weight, zeros(&client, rows * d))),
            requested: VecDeque::new(),
            dims,
            client,
        }
    }

    /// The rows layer 0 sees: the relaxed x, or z itself for the baselines.
    fn input0(&self) -> &Handle {
        if self.relaxed { &self.x } else { &self.z }
    }

    /// Layer l's input: x for the first, the hidden output below otherwise.
    fn input(&self, l: usize) -> &Handle {
        if l == 0 { self.input0() } else { &self.h[l - 1] }
    }

    /// One step's kernels.
    ///
    /// # Safety
    /// The kernels are launched unchecked (no bounds checks, which cost a third of a step on
    /// lavapipe): every buffer is allocated in `new` with the length its kernels index up to, and
    /// the row-blocked kernels clamp the rows of a last, partial block before loading them.
    /// tests/step_equality.rs runs these kernels against the definition on every commit.
    unsafe fn step_kernels(&mut self, a: &AdamStep) {
        // SAFETY: see the function's contract above; each stage below launches under it.
        unsafe {
            if self.relaxed {
                self.relax_forward();
            }
            self.forward_kernels();
            self.delta_kernels();
            self.objective_kernels();
            self.reverse_kernels();
            self.back_kernels();
            self.subspace_kernels();
            self.adam_kernel(a);
        }
    }

    async fn read(&self, handle: &Handle) -> Result<Vec<f32>> {
        let bytes = self
            .client
            .read_async(vec![handle.clone()])
            .await
            .map_err(|e| Error::Device(format!("reading back from the GPU failed: {e:?}")))?;
        Ok(f32::from_bytes(&bytes[0]).to_vec())
    }
}

impl Stepper for CubeStepper<'_> {
    fn step(&mut self, adam: &AdamStep) -> Result<()> {
        // The steps write their losses to the slots in turn, so a read requested for one step is
        // not overwritten by the next few (see `LOSS_SLOTS`).
        self.losses = self.loss_slots[self.steps_taken % LOSS_SLOTS].clone();
        self.steps_taken += 1;
        // SAFETY: the buffers are this stepper's own, sized in `new` for these kernels.
        unsafe { self.step_kernels(adam) };
        Ok(())
    }

    fn request_losses(&mut self, step: usize) -> Result<()> {
        let read = LossRead::start(&self.client, self.losses.clone());
        self.requested.push_back((step, read));
        Ok(())
    }

    async fn take_losses(&mut self) -> Result<Option<(usize, Vec<f32>)>> {
        let Some((step, read)) = self.requested.pop_front() else {
            return Ok(None);
        };
        let bytes = read.finish().await?;
        Ok(Some((step, f32::from_bytes(&bytes[0]).to_vec())))
    }

    async fn retire(&mut self, keep: &[bool]) -> Result<(Vec<f32>, Vec<f32>)> {
        // Rare (a few times an inversion): read the state back and start over with fewer members.
        let len = self.dims.batch * self.dims.d;
        let total = self.dims.rows * self.dims.d;
        let z = self.read(&self.z).await?;
        let moments = self.read(&self.moments).await?;
        let (kz, gone) = split_members(&z, len, keep);
        let (mut km, _) = split_members(&moments[..total], len, keep);
        let (kv, _) = split_members(&moments[total..], len, keep);
        let n = kz.len() / len;
        km.extend(kv);
        if n > 0 {
            *self = CubeStepper::new(self.client.clone(), self.p, n, &kz, Some(&km));
        }
        Ok(self.p.relax_rows(gone))
    }

    async fn finish(mut self) -> Result<(Vec<f32>, Vec<f32>)> {
        let d = self.dims.d;
        if !self.relaxed {
            let z = self.read(&self.z).await?;
            return Ok((z, Vec::new()));
        }
        self.relax_forward();
        let x = self.read(&self.x).await?;
        let aux = self.read(&self.aux).await?;
        self.requested.clear();
        // aux holds σ(z) on continuous columns; the probabilities are only the categorical ones.
        let cat = self.dims_categorical_mask();
        let probs = aux
            .iter()
            .enumerate()
            .map(|(i, &v)| if cat[i % d] { v } else { 0.0 })
            .collect();
        Ok((x, probs))
    }
}

impl CubeStepper<'_> {
    fn dims_categorical_mask(&self) -> Vec<bool> {
        let mut mask = vec![false; self.dims.d];
        let segs = self.segments_host.as_slice();
        for s in segs.chunks_exact(3) {
            if s[2] == 1 {
                for c in s[0]..s[0] + s[1] {
                    mask[c as usize] = true;
                }
            }
        }
        mask
    }
}

/// The whole optimisation on the runtime's GPU; same contract as `inversion::invert`.
pub async fn invert(
    runtime: &Runtime,
    p: &HostProblem,
    config: &InversionConfig,
    cadence: Cadence,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Inversion> {
    let stepper = CubeStepper::new(client(runtime)?, p, config.members, &member_starts(config), None);
    drive(stepper, config, cadence, progress).await
}

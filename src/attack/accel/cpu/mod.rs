//! The inversion step fused for the CPU: an accelerator of the definition (`attack::inversion`),
//! computing the same math (relaxation, the client's forward pass and explicit backward, for FedAvg
//! its whole local training, the objective, the hand-derived reverse, sign-Adam) member group by
//! member group on buffers allocated once, with `gemm` calls whose transposes are strides. Every
//! element-wise formula is the definition's own (`attack::inversion::pointwise`); tests/step_equality.rs holds
//! whole runs of the two together.
//!
//! Why it exists: on burn's CPU backend one step is ~100 tensor ops, each allocating its output
//! and sweeping memory; measured at N=30, B=32 that spent three quarters of the time outside the
//! matmuls (33 ms/step). Here a step allocates nothing, member groups run in parallel (rayon
//! natively, one group in wasm), and the matmuls dominate.
mod fedavg;
mod gemm;
mod optimizer;
mod passes;
mod relax;

use fedavg::{Client, Unrolled};
use passes::{Weights, Workspace, forward_backward, objective, reverse};
use relax::Relax;

use crate::attack::inversion::Simulation;
use crate::attack::inversion::driver::{
    Cadence, Inversion, InversionConfig, Progress, Stepper, drive, member_starts, split_members,
};
use crate::attack::inversion::objective::Objective;
use crate::attack::inversion::pointwise::{AdamStep, adam, subspace_gradient, subspace_terms};
use crate::attack::inversion::problem::ProblemSpec;
use crate::attack::inversion::relax::HostRelax;
use crate::attack::priors::known::KnownCells;
use crate::client::head::Head;
use crate::client::update::Update;
use crate::error::Result;
use gemm::{mm, rm};

/// Everything constant during one inversion, on the host.
pub struct HostProblem {
    sizes: Vec<usize>,
    w: Vec<Vec<f32>>,
    b: Vec<Vec<f32>>,
    /// The observed update.
    target: Update,
    tnorm: f32,
    /// The client's labels in order as the head's targets [n, outputs].
    onehot: Vec<f32>,
    /// The client's output layer (softmax or one sigmoid logit).
    head: Head,
    /// The client's rows n (FedSGD: the batch).
    batch: usize,
    relax: Option<HostRelax>,
    objective: Objective,
    simulation: Simulation,
    /// The epoch prior's weight per member of the ensemble (FedAvg with copies per epoch).
    priors: Vec<f32>,
    /// The subspace prior: the projector on the rows' span [d, d] and its weight.
    subspace: Option<(Vec<f32>, f32)>,
    /// Cells the server knows (`attack::priors::known`).
    known: Option<KnownCells>,
}

impl HostProblem {
    /// The problem as the accelerators hold it (taking the description's arrays, not copying
    /// them). They invert one round: `Runtime::engine_for`
    /// gives problems with further rounds to the definition.
    pub fn new(spec: ProblemSpec) -> HostProblem {
        assert!(
            spec.later_rounds.is_empty(),
            "the accelerators invert one round; the definition runs further rounds"
        );
        let (tnorm, batch) = ((spec.target_norm() as f32).max(1e-30), spec.rows());
        let params = spec.params;
        HostProblem {
            sizes: params.sizes,
            w: params.weights,
            b: params.biases,
            target: spec.target,
            tnorm,
            batch,
            onehot: spec.onehot,
            head: spec.model.head,
            relax: spec.layout.as_ref().map(HostRelax::new),
            objective: spec.objective,
            simulation: spec.simulation,
            priors: spec.priors.iter().map(|&p| p as f32).collect(),
            subspace: spec.subspace.map(|(p, w)| (p, w as f32)),
            known: spec.known,
        }
    }

    /// The subspace prior's projector and weight, where it is on.
    pub fn subspace(&self) -> Option<(&[f32], f32)> {
        self.subspace.as_ref().map(|(p, w)| (&p[..], *w))
    }

    /// Width of an encoded row.
    pub fn d(&self) -> usize {
        self.sizes[0]
    }

    /// Layer widths [d, hidden..., classes].
    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    /// The client's rows (FedSGD: the batch).
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Dummy rows per member.
    fn member_rows(&self) -> usize {
        self.simulation.rows(self.batch)
    }

    /// Layer l's weights [in, out] and biases [out].
    pub fn layer(&self, l: usize) -> (&[f32], &[f32]) {
        (&self.w[l], &self.b[l])
    }

    /// The observed update's part for layer l, laid out as the layer: W then b.
    pub fn observed(&self, l: usize) -> (&[f32], &[f32]) {
        (self.target.weight(l), self.target.bias(l))
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

    fn client(&self) -> Option<Client<'_>> {
        match self.simulation {
            Simulation::Gradient => None,
            Simulation::LocalTraining { training, copies } => Some(Client {
                sizes: &self.sizes,
                w: &self.w,
                b: &self.b,
                target: &self.target,
                target_norm: self.tnorm,
                objective: self.objective,
                onehot: &self.onehot,
                head: self.head,
                training,
                copies,
            }),
        }
    }
}

/// A group's buffers: the relaxed rows and their companions, and the passes of the client.
struct GroupBuffers {
    g: usize,
    x: Vec<f32>,
    probs: Vec<f32>,
    sig: Vec<f32>,
    x_bar: Vec<f32>,
    z_bar: Vec<f32>,
    /// The rows projected on the span (XP), for the subspace prior.
    y: Vec<f32>,
    loss: Vec<f32>,
    pass: Passes,
}

enum Passes {
    /// FedSGD: one pass over the group's rows.
    Gradient(Workspace),
    /// FedAvg: one pass per local step.
    LocalTraining(Unrolled),
}

impl GroupBuffers {
    fn new(p: &HostProblem, g: usize) -> GroupBuffers {
        let len = g * p.member_rows() * p.d();
        let pass = match &p.simulation {
            Simulation::Gradient => Passes::Gradient(Workspace::new(&p.sizes, g, p.batch)),
            Simulation::LocalTraining { training, .. } => {
                Passes::LocalTraining(Unrolled::new(&p.sizes, g, p.batch, training))
            }
        };
        GroupBuffers {
            g,
            x: vec![0.0; len],
            probs: vec![0.0; len],
            sig: vec![0.0; len],
            x_bar: vec![0.0; len],
            z_bar: vec![0.0; len],
            y: vec![0.0; if p.subspace.is_some() { len } else { 0 }],
            loss: vec![0.0; g],
            pass,
        }
    }
}

impl HostProblem {
    /// Losses (into buf.loss) of a group's rows already in buf.x, and, with `grad`, dL/dx in
    /// buf.x_bar. `priors`: the epoch prior's weight of each of the group's members.
    #[inline(always)]
    fn loss(&self, buf: &mut GroupBuffers, priors: &[f32], grad: bool) {
        match &mut buf.pass {
            Passes::Gradient(ws) => {
                ws.x.copy_from_slice(&buf.x);
                forward_backward(&self.sizes, self.shared(), &self.onehot, self.head, ws);
                objective(
                    &self.sizes,
                    self.objective,
                    &self.target,
                    self.tnorm,
                    &mut ws.gw,
                    &mut ws.gb,
                    &mut buf.loss,
                    grad,
                );
                if grad {
                    reverse(&self.sizes, self.shared(), self.head, ws, None);
                    buf.x_bar.copy_from_slice(&ws.h_bar[0]);
                }
            }
            Passes::LocalTraining(un) => {
                let client = self.client().expect("a local training");
                client.loss(un, &buf.x, &mut buf.loss, grad.then_some(&mut buf.x_bar[..]));
                if client.copies > 1 && priors.iter().any(|&l| l > 0.0) {
                    self.epoch_prior(buf, client.copies, priors, grad);
                }
            }
        }
        if self.subspace.is_some() {
            self.subspace_prior(buf, grad);
        }
    }

    /// The subspace prior (the definition's `inversion::subspace_prior`), added to the losses and,
    /// with `grad`, to dL/dx.
    fn subspace_prior(&self, buf: &mut GroupBuffers, grad: bool) {
        let (projector, weight) = self.subspace.as_ref().expect("a subspace prior");
        let (d, len) = (self.d(), self.member_rows() * self.d());
        let rows = buf.g * self.member_rows();
        mm(rows, d, d, &mut buf.y, false, &buf.x, rm(d), projector, rm(d));
        for k in 0..buf.g {
            let span = k * len..(k + 1) * len;
            let (x, y) = (&buf.x[span.clone()], &buf.y[span.clone()]);
            let a: f64 = x.iter().map(|&v| v as f64 * v as f64).sum();
            let c: f64 = x.iter().zip(y).map(|(&v, &w)| v as f64 * w as f64).sum();
            let (value, kx, ky) = subspace_terms(a, c, *weight);
            buf.loss[k] += value as f32;
            if grad {
                let (kx, ky) = (kx as f32, ky as f32);
                for ((xb, &v), &w) in buf.x_bar[span].iter_mut().zip(x).zip(y) {
                    *xb += subspace_gradient(v, kx, w, ky);
                }
            }
        }
    }

    fn shared(&self) -> Weights<'_> {
        Weights::Shared { w: &self.w, b: &self.b }
    }

    /// The epoch-matching prior (the definition's `inversion::epoch_prior`), added to the losses
    /// and, with `grad`, to dL/dx.
    fn epoch_prior(&self, buf: &mut GroupBuffers, copies: usize, priors: &[f32], grad: bool) {
        let (n, d) = (self.batch, self.d());
        let e = copies as f64;
        let c = 1.0 / (e * e * d as f64);
        for (k, &lambda) in priors.iter().enumerate().take(buf.g) {
            let member = &buf.x[k * copies * n * d..(k + 1) * copies * n * d];
            let means: Vec<Vec<f64>> = (0..copies)
                .map(|copy| {
                    let mut m = vec![0f64; d];
                    for row in member[copy * n * d..(copy + 1) * n * d].chunks_exact(d) {
                        m.iter_mut().zip(row).for_each(|(a, &v)| *a += v as f64);
                    }
                    m.iter_mut().for_each(|v| *v /= n as f64);
                    m
                })
                .collect();
            let total: Vec<f64> = (0..d).map(|j| means.iter().map(|m| m[j]).sum()).collect();
            let squares: f64 = means.iter().flatten().map(|v| v * v).sum();
            let value = (2.0 * e * squares - 2.0 * total.iter().map(|v| v * v).sum::<f64>()) * c;
            buf.loss[k] += (lambda as f64 * value) as f32;
            if grad {
                for (copy, m) in means.iter().enumerate() {
                    let grad_row: Vec<f32> = (0..d)
                        .map(|j| (lambda as f64 * 4.0 * c * (e * m[j] - total[j]) / n as f64) as f32)
                        .collect();
                    let rows = &mut buf.x_bar[(k * copies + copy) * n * d..(k * copies + copy + 1) * n * d];
                    for row in rows.chunks_exact_mut(d) {
                        row.iter_mut().zip(&grad_row).for_each(|(a, &v)| *a += v);
                    }
                }
            }
        }
    }

    /// Losses (into buf.loss) and dL/dz (into buf.z_bar) of a group at z ([g·rows, d]).
    #[inline(always)]
    fn loss_and_grad(&self, z: &[f32], priors: &[f32], buf: &mut GroupBuffers) {
        match &self.relax {
            Some(r) => r.forward_rows(z, &mut buf.x, &mut buf.probs, &mut buf.sig),
            None => buf.x.copy_from_slice(z),
        }
        if let Some(k) = &self.known {
            k.apply(&mut buf.x);
        }
        self.loss(buf, priors, true);
        if let Some(k) = &self.known {
            k.mask(&mut buf.x_bar);
        }
        match &self.relax {
            Some(r) => r.reverse_rows(&buf.x_bar, &buf.probs, &buf.sig, &mut buf.z_bar),
            None => buf.z_bar.copy_from_slice(&buf.x_bar),
        }
    }
}

/// Per-member loss of rows already in encoded space ([N, rows, d] row-major), one member at a time
/// on one small group (the anchor's scoring must not hold a whole ensemble's buffers). No prior.
pub fn member_losses(p: &HostProblem, x: &[f32]) -> Vec<f32> {
    let len = p.member_rows() * p.d();
    let mut buf = GroupBuffers::new(p, 1);
    x.chunks_exact(len)
        .map(|member| {
            buf.x.copy_from_slice(member);
            p.loss(&mut buf, &[], false);
            buf.loss[0]
        })
        .collect()
}

/// Losses and d(Σ loss)/dz for all members at z ([N, rows, d]), as one group; for tests.
pub fn loss_and_grad(p: &HostProblem, z: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let mut buf = GroupBuffers::new(p, z.len() / (p.member_rows() * p.d()));
    let priors = p.priors.clone();
    p.loss_and_grad(z, &priors, &mut buf);
    (buf.loss, buf.z_bar)
}

/// A group of members optimised by one task: their rows, Adam moments, priors and buffers.
struct Group<'a> {
    z: &'a mut [f32],
    m: &'a mut [f32],
    v: &'a mut [f32],
    priors: &'a [f32],
    buf: &'a mut GroupBuffers,
}

/// Loss, gradient and Adam update of one group, for each of `adams` in turn.
#[inline(always)]
fn group_steps_body(p: &HostProblem, mut gr: Group<'_>, adams: &[AdamStep]) {
    for a in adams {
        group_step_body(p, &mut gr, a);
    }
}

#[inline(always)]
fn group_step_body(p: &HostProblem, gr: &mut Group<'_>, a: &AdamStep) {
    p.loss_and_grad(gr.z, gr.priors, gr.buf);
    for (((z, m), v), &g) in
        gr.z.iter_mut()
            .zip(gr.m.iter_mut())
            .zip(gr.v.iter_mut())
            .zip(&gr.buf.z_bar)
    {
        (*z, *m, *v) = adam(*z, *m, *v, g, a);
    }
}

/// The same, compiled for AVX2 + FMA: the elementwise loops run 8 lanes wide instead of SSE2's 4.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn group_steps_avx2(p: &HostProblem, gr: Group<'_>, adams: &[AdamStep]) {
    group_steps_body(p, gr, adams)
}

fn group_steps(p: &HostProblem, gr: Group<'_>, adams: &[AdamStep]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function was compiled for (checked just above).
        return unsafe { group_steps_avx2(p, gr, adams) };
    }
    group_steps_body(p, gr, adams)
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

/// The kernel's state: every member's z and Adam moments, and one set of buffers per group.
struct CpuStepper<'a> {
    p: &'a HostProblem,
    members: usize,
    per_group: usize,
    z: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
    /// The epoch prior's weight of each member of this call.
    priors: Vec<f32>,
    groups: Vec<GroupBuffers>,
    requested: std::collections::VecDeque<(usize, Vec<f32>)>,
}

impl Stepper for CpuStepper<'_> {
    fn step(&mut self, adam: &AdamStep) -> Result<()> {
        self.steps(std::slice::from_ref(adam))
    }

    /// Each group (one per thread) runs every step on its own before the threads join: members
    /// never read one another, and a join per step would wait, on a busy machine, for whichever
    /// thread the scheduler left out, step after step.
    fn steps(&mut self, adams: &[AdamStep]) -> Result<()> {
        let chunk = self.per_group * self.p.member_rows() * self.p.d();
        let groups: Vec<Group<'_>> = self
            .z
            .chunks_mut(chunk)
            .zip(self.m.chunks_mut(chunk))
            .zip(self.v.chunks_mut(chunk))
            .zip(self.priors.chunks(self.per_group))
            .zip(self.groups.iter_mut())
            .map(|((((z, m), v), priors), buf)| Group { z, m, v, priors, buf })
            .collect();
        let p = self.p;
        for_each_group(groups, |gr| group_steps(p, gr, adams));
        Ok(())
    }

    fn request_losses(&mut self, step: usize) -> Result<()> {
        let losses: Vec<f32> = self.groups.iter().flat_map(|g| g.loss.iter().copied()).collect();
        debug_assert_eq!(losses.len(), self.members);
        self.requested.push_back((step, losses));
        Ok(())
    }

    async fn take_losses(&mut self) -> Result<Option<(usize, Vec<f32>)>> {
        Ok(self.requested.pop_front())
    }

    async fn retire(&mut self, keep: &[bool]) -> Result<(Vec<f32>, Vec<f32>)> {
        let len = self.p.member_rows() * self.p.d();
        let (z, gone) = split_members(&self.z, len, keep);
        (self.m, _) = split_members(&self.m, len, keep);
        (self.v, _) = split_members(&self.v, len, keep);
        self.z = z;
        self.priors = split_members(&self.priors, 1, keep).0;
        self.members = self.z.len() / len;
        self.per_group = group_size(self.members);
        self.groups = self
            .z
            .chunks(self.per_group * len)
            .map(|chunk| GroupBuffers::new(self.p, chunk.len() / len))
            .collect();
        Ok(self.p.relax_rows(gone))
    }

    /// The final relaxation of every member: only the rows and probabilities are kept.
    async fn finish(self) -> Result<(Vec<f32>, Vec<f32>)> {
        drop(self.groups);
        drop((self.m, self.v));
        Ok(self.p.relax_rows(self.z))
    }
}

impl HostProblem {
    /// Members' relaxed rows and block probabilities at z (z itself, and no probabilities, for
    /// the unrelaxed baselines).
    pub fn relax_rows(&self, z: Vec<f32>) -> (Vec<f32>, Vec<f32>) {
        let (mut x, probs) = match &self.relax {
            None => (z, Vec::new()),
            Some(r) => {
                let len = z.len();
                let (mut x, mut probs, mut sig) = (vec![0f32; len], vec![0f32; len], vec![0f32; len]);
                r.forward_rows(&z, &mut x, &mut probs, &mut sig);
                (x, probs)
            }
        };
        if let Some(k) = &self.known {
            k.apply(&mut x);
        }
        (x, probs)
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
    let len = p.member_rows() * p.d();
    let per_group = group_size(n);
    let z = member_starts(config);
    let groups = z
        .chunks(per_group * len)
        .map(|chunk| GroupBuffers::new(p, chunk.len() / len))
        .collect();
    let priors = (config.first_member..config.first_member + n)
        .map(|m| p.priors.get(m).copied().unwrap_or(0.0))
        .collect();
    let stepper = CpuStepper {
        p,
        members: n,
        per_group,
        m: vec![0f32; n * len],
        v: vec![0f32; n * len],
        z,
        priors,
        groups,
        requested: Default::default(),
    };
    drive(stepper, config, cadence, progress).await
}

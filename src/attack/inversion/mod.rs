//! Gradient inversion, defined once on burn tensors so that it runs on every backend: N dummy
//! batches optimised together as one [N·B, d] tensor so that the client update they produce
//! points the same way as the observed one (SPEC §4). One step is: relax z, simulate the client's
//! gradient (`client::gradient`), score it (`objective`), differentiate that back to the rows
//! (`second_order`, then the relaxation's reverse), and move z by sign-Adam (`pointwise::adam`).
//!
//! This is the definition the accelerators (`accel::cpu`, `accel::cube`) are held to, step by
//! step, by tests/step_equality.rs.
//!
//! Its parts: `relax` (the dummy batch's relaxation), `objective` and `pointwise` (the loss and the
//! element-wise formulas), `second_order` (the reverse of the client's backward pass), `problem`
//! (one problem described on the host), `setup` (a scenario's update as that problem), `driver`
//! (the loop every engine runs), `ensemble` (members inverted in shares).
pub mod driver;
pub mod ensemble;
pub mod objective;
pub mod pointwise;
pub mod problem;
pub mod relax;
pub mod second_order;
pub mod setup;

use burn::tensor::{Device, Tensor, TensorData};

use crate::attack::inversion::driver::{
    Cadence, Inversion, InversionConfig, Progress, Stepper, drive, member_starts, split_members,
};
use crate::attack::inversion::objective::Objective;
use crate::attack::inversion::pointwise::{AdamStep, adam, subspace_gradient, subspace_terms};
use crate::attack::inversion::relax::{Relaxation, Relaxed};
use crate::attack::inversion::second_order::{reverse, reverse_local_training};
use crate::client::fedavg::{LocalTraining, local_training};
use crate::client::gradient::{ParamGrads, param_grads, split_targets};
use crate::client::head::Head;
use crate::client::network::Net;
use crate::error::Result;
use crate::runtime::read_f32;

/// Everything fixed during one inversion.
pub struct Problem<'a> {
    pub net: &'a Net,
    /// Observed update, as a one-member ParamGrads.
    pub target: &'a ParamGrads,
    pub target_norm: f64,
    /// Labels of the client's rows in their order, one-hot [n, C] (shared by all members). A
    /// regression's labels are unknowns the server reconstructs as each dummy row's last column
    /// (`targets_in_rows`); its `onehot` is zeros [n, 1], which only count the rows.
    pub onehot: Vec<f32>,
    pub classes: usize,
    /// None = optimise the encoded rows directly (Cosine / DLG baselines).
    pub relaxation: Option<&'a Relaxation>,
    pub objective: Objective,
    /// How the client made the observed update from its rows.
    pub simulation: Simulation,
    /// The epoch prior's weight per member of this call (empty: none).
    pub priors: Vec<f64>,
    /// The first layer's span as a prior on every dummy row (`attack::priors::subspace`).
    pub subspace: Option<SubspacePrior>,
    /// Cells the server knows (`attack::priors::known`), as [1, rows, d] tensors (free, fixed).
    pub known: Option<(Tensor<3>, Tensor<3>)>,
    /// Further rounds the server observed of the same rows (the attribute attack): each round's
    /// network and update, and that update's norm; their losses add to the first round's.
    pub rounds: Vec<(&'a Net, &'a ParamGrads, f64)>,
}

/// The subspace prior on a device: the projector P = UUᵀ on the rows' span [d, d] and its weight.
#[derive(Debug, Clone)]
pub struct SubspacePrior {
    pub projector: Tensor<2>,
    pub weight: f32,
}

/// What the server simulates on a member's dummy rows to compare with the observed update.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Simulation {
    /// FedSGD: the gradient on the rows.
    Gradient,
    /// FedAvg: θ0 − θE after local training. A member's rows are `copies` × the client's n rows:
    /// one copy per epoch (TabLeak, with the epoch-matching prior over the copies' row means) or
    /// one shared by every epoch (`copies` = 1).
    LocalTraining { training: LocalTraining, copies: usize },
}

impl Simulation {
    /// The share c of θ0 that a FedAvg client's SGD weight decay leaves in θ0 − θE over a client
    /// of `n` rows (`ClientOptimizer::decay_share`; 0 elsewhere). The update is c·θ0 plus the
    /// rows' part: the objective compares the rows' parts, c·θ0 taken out of both, so that a
    /// data-free share does not dilute it.
    pub fn decay_share(&self, n: usize) -> f64 {
        match self {
            Simulation::Gradient => 0.0,
            Simulation::LocalTraining { training, .. } => training
                .optimizer
                .decay_share(training.lr, training.epochs * training.steps_per_epoch(n)),
        }
    }

    /// Dummy rows per member for a client of `n` rows.
    pub fn rows(&self, n: usize) -> usize {
        match self {
            Simulation::Gradient => n,
            Simulation::LocalTraining { copies, .. } => copies * n,
        }
    }
}

impl Problem<'_> {
    /// The client's rows n.
    pub fn client_rows(&self) -> usize {
        self.onehot.len() / self.classes
    }

    /// Dummy rows per member: FedAvg's copies of the client's rows (one per epoch where the
    /// client reshuffles them) count each.
    pub fn member_rows(&self) -> usize {
        self.simulation.rows(self.client_rows())
    }

    /// Whether each dummy row carries its target as a last column: a regression's label, which the
    /// server does not know.
    pub fn targets_in_rows(&self) -> bool {
        self.net.head == Head::Linear
    }
}

/// The step of one inversion on a device.
struct Definition<'a> {
    problem: &'a Problem<'a>,
    /// Members.
    n: usize,
    /// Dummy rows per member.
    b: usize,
    /// The network's inputs per row.
    d: usize,
    /// A dummy row's width: its inputs, and its target where it is an unknown.
    w: usize,
    /// The labels of the client's rows, [1, n, C] (shared by the members).
    onehot: Tensor<3>,
    /// The epoch prior's weight of each member still running.
    priors: Vec<f64>,
}

impl<'a> Definition<'a> {
    /// `w`: a dummy row's width.
    fn new(problem: &'a Problem<'a>, n: usize, w: usize, device: &Device) -> Self {
        let rows = problem.client_rows();
        let onehot = Tensor::from_data(
            TensorData::new(problem.onehot.clone(), [1, rows, problem.classes]),
            device,
        );
        Definition {
            problem,
            n,
            b: problem.simulation.rows(rows),
            d: w - problem.targets_in_rows() as usize,
            w,
            onehot,
            priors: problem.priors.clone(),
        }
    }

    /// The relaxed rows at z (z itself without a relaxation), with the known cells pinned; a
    /// regression's target column as it is.
    fn relax(&self, z: &Tensor<2>) -> (Tensor<2>, Option<Relaxed>) {
        let (inputs, targets) = self.split(z.clone());
        let relaxed = self.problem.relaxation.map(|r| r.forward(&inputs));
        let x = relaxed.as_ref().map_or(inputs, |r| r.x.clone());
        (self.join(self.pin(x, 1), targets), relaxed)
    }

    /// Dummy rows [·, w] as the network's inputs [·, d] and, where they carry it, the target [·, 1].
    fn split(&self, rows: Tensor<2>) -> (Tensor<2>, Option<Tensor<2>>) {
        if self.w == self.d {
            return (rows, None);
        }
        let r = rows.dims()[0];
        (
            rows.clone().slice([0..r, 0..self.d]),
            Some(rows.slice([0..r, self.d..self.w])),
        )
    }

    fn join(&self, inputs: Tensor<2>, targets: Option<Tensor<2>>) -> Tensor<2> {
        match targets {
            Some(t) => Tensor::cat(vec![inputs, t], 1),
            None => inputs,
        }
    }

    /// x ⊙ free + fixed (`attack::priors::known`), or with `part` 0 the gradient's x_bar ⊙ free.
    fn pin(&self, x: Tensor<2>, part: usize) -> Tensor<2> {
        let Some((free, fixed)) = &self.problem.known else {
            return x;
        };
        let (n, b, d) = (x.dims()[0] / self.b, self.b, self.d);
        let x = x.reshape([n, b, d]) * free.clone();
        let x = if part == 1 { x + fixed.clone() } else { x };
        x.reshape([n * b, d])
    }

    /// Per-member loss [N, 1] at z and the gradient of their sum w.r.t. z [N·B, w].
    fn loss_and_grad(&self, z: &Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        let (x, relaxed) = self.relax(z);
        let (loss, x_bar) = self.loss(x, true);
        let (x_bar, y_bar) = self.split(x_bar.expect("asked for the gradient"));
        let x_bar = self.pin(x_bar, 0);
        let z_bar = match (&relaxed, self.problem.relaxation) {
            (Some(r), Some(rel)) => rel.backward(r, x_bar),
            _ => x_bar,
        };
        (loss, self.join(z_bar, y_bar))
    }

    /// Per-member loss [N, 1] and, when asked, its gradient w.r.t. the rows x [N·B, w]: the
    /// client's update against the observed one, and the subspace prior on the rows' inputs.
    fn loss(&self, x: Tensor<2>, with_grad: bool) -> (Tensor<2>, Option<Tensor<2>>) {
        let (loss, x_bar) = self.update_loss(x.clone(), with_grad);
        match &self.problem.subspace {
            Some(prior) if prior.weight > 0.0 => {
                let (n, b, d) = (self.n, self.b, self.d);
                let (inputs, targets) = self.split(x);
                let (value, grad) = subspace_prior(&inputs.reshape([n, b, d]), &prior.projector, prior.weight);
                let grad = self.join(grad.reshape([n * b, d]), targets.map(|t| t.zeros_like()));
                (loss + value, x_bar.map(|xb| xb + grad))
            }
            _ => (loss, x_bar),
        }
    }

    /// The update's part of `loss`: the first round's, plus every further round's.
    fn update_loss(&self, x: Tensor<2>, with_grad: bool) -> (Tensor<2>, Option<Tensor<2>>) {
        let p = self.problem;
        let (mut loss, mut x_bar) = self.round_loss(p.net, p.target, p.target_norm, x.clone(), with_grad);
        for &(net, target, norm) in &p.rounds {
            let (l, xb) = self.round_loss(net, target, norm, x.clone(), with_grad);
            loss = loss + l;
            x_bar = x_bar.zip(xb).map(|(a, b)| a + b);
        }
        (loss, x_bar)
    }

    /// One round's update against the observed one, on network `net`.
    fn round_loss(
        &self,
        net: &Net,
        target: &ParamGrads,
        target_norm: f64,
        x: Tensor<2>,
        with_grad: bool,
    ) -> (Tensor<2>, Option<Tensor<2>>) {
        let (n, b, w) = (self.n, self.b, self.w);
        let p = self.problem;
        let in_rows = p.targets_in_rows();
        match p.simulation {
            Simulation::Gradient => {
                let (inputs, targets) = match in_rows {
                    true => split_targets(x.reshape([n, b, w])),
                    false => (x.reshape([n, b, w]), self.onehot.clone()),
                };
                let (g, tape) = param_grads(net, &inputs, &targets);
                let (loss, g_bar) = p.objective.evaluate(&g, target, target_norm, with_grad);
                let x_bar = g_bar.map(|gb| {
                    let r = reverse(net, &tape, &gb, false);
                    let x_bar = match in_rows {
                        true => Tensor::cat(vec![r.x, r.targets], 2),
                        false => r.x,
                    };
                    x_bar.reshape([n * b, w])
                });
                (loss, x_bar)
            }
            Simulation::LocalTraining { training, copies } => {
                let rows = b / copies;
                let x = x.reshape([n, copies, rows, w]);
                let epochs: Vec<Tensor<3>> = (0..copies)
                    .map(|e| x.clone().slice([0..n, e..e + 1, 0..rows, 0..w]).reshape([n, rows, w]))
                    .collect();
                let onehot = (!in_rows).then_some(&self.onehot);
                let (update, taken) = local_training(net, &epochs, onehot, &training, with_grad);
                // The rows' part of the update (the target's was taken out in `ProblemSpec`).
                let share = p.simulation.decay_share(rows);
                let update = match share == 0.0 {
                    true => update,
                    false => {
                        let theta0 = ParamGrads {
                            weights: net.weights.clone(),
                            biases: net.biases.clone(),
                        };
                        update.zip_with(&theta0, |u, w| u - w.mul_scalar(share))
                    }
                };
                let (mut loss, u_bar) = p.objective.evaluate(&update, target, target_norm, with_grad);
                let mut x_bar = u_bar.map(|ub| reverse_local_training(&taken, &ub, &training, None, copies, in_rows));
                if copies > 1 && self.priors.iter().any(|&l| l > 0.0) {
                    let lambdas = Tensor::<3>::from_data(
                        TensorData::new(self.priors.iter().map(|&l| l as f32).collect::<Vec<_>>(), [n, 1, 1]),
                        &x.device(),
                    );
                    let (value, grads) = epoch_prior(&epochs, &lambdas);
                    loss = loss + value;
                    if let Some(xb) = x_bar.as_mut() {
                        for (e, g) in xb.iter_mut().zip(grads) {
                            *e = e.clone() + g;
                        }
                    }
                }
                (loss, x_bar.map(|xb| Tensor::cat(xb, 1).reshape([n * b, w])))
            }
        }
    }
}

/// TabLeak-FedAvg's epoch-matching prior (SPEC §7): λ · (1/E²)(1/d) Σ_i Σ_j ‖m_i − m_j‖² over the
/// mean rows m_e of each epoch's copy ([N, n, d] each), λ per member ([N, 1, 1]). Per member
/// [N, 1], and its gradient w.r.t. each copy: 4λc (E·m_e − Σ_j m_j)/n on every row, c = 1/(E² d).
pub fn epoch_prior(epochs: &[Tensor<3>], lambdas: &Tensor<3>) -> (Tensor<2>, Vec<Tensor<3>>) {
    let [n, rows, d] = epochs[0].dims();
    let e = epochs.len() as f64;
    let c = 1.0 / (e * e * d as f64);
    let means: Vec<Tensor<3>> = epochs.iter().map(|x| x.clone().mean_dim(1)).collect();
    let total = means.iter().skip(1).fold(means[0].clone(), |acc, m| acc + m.clone());
    // Σ_i Σ_j ‖m_i − m_j‖² = 2E Σ_i ‖m_i‖² − 2 ‖Σ_i m_i‖².
    let squares = means
        .iter()
        .map(|m| (m.clone() * m.clone()).sum_dim(2))
        .reduce(|a, b| a + b)
        .unwrap();
    let value = ((squares.mul_scalar(2.0 * e) - (total.clone() * total.clone()).sum_dim(2).mul_scalar(2.0))
        .mul_scalar(c)
        * lambdas.clone())
    .reshape([n, 1]);
    let grads = means
        .iter()
        .map(|m| {
            ((m.clone().mul_scalar(e) - total.clone()).mul_scalar(4.0 * c / rows as f64) * lambdas.clone())
                .repeat_dim(1, rows)
        })
        .collect();
    (value, grads)
}

/// The subspace prior (`attack::priors::subspace`) of each member's rows X ([N, B, d]) with the projector P
/// on the span: w·(1 − ⟨X, XP⟩/‖X‖²) per member [N, 1], and its gradient w.r.t. X.
pub fn subspace_prior(x: &Tensor<3>, projector: &Tensor<2>, weight: f32) -> (Tensor<2>, Tensor<3>) {
    let [n, b, d] = x.dims();
    let y = x
        .clone()
        .reshape([n * b, d])
        .matmul(projector.clone())
        .reshape([n, b, d]);
    let a = (x.clone() * x.clone()).reshape([n, b * d]).sum_dim(1);
    let c = (x.clone() * y.clone()).reshape([n, b * d]).sum_dim(1);
    let (value, kx, ky) = subspace_terms(a, c, weight);
    let grad = subspace_gradient(x.clone(), kx.reshape([n, 1, 1]), y, ky.reshape([n, 1, 1]));
    (value, grad)
}

/// The definition's state: z and Adam's moments as tensors on the device.
struct TensorStepper<'a> {
    def: Definition<'a>,
    z: Tensor<2>,
    m: Tensor<2>,
    v: Tensor<2>,
    loss: Option<Tensor<2>>,
    requested: std::collections::VecDeque<(usize, Tensor<2>)>,
}

impl Stepper for TensorStepper<'_> {
    fn step(&mut self, a: &AdamStep) -> Result<()> {
        let (loss, grad) = self.def.loss_and_grad(&self.z);
        let (z, m, v) = adam(self.z.clone(), self.m.clone(), self.v.clone(), grad, a);
        (self.z, self.m, self.v) = (z, m, v);
        self.loss = Some(loss);
        Ok(())
    }

    fn request_losses(&mut self, step: usize) -> Result<()> {
        // A tensor is immutable: keeping the loss of this step is enough to read it later.
        let loss = self.loss.clone().expect("a step was taken");
        self.requested.push_back((step, loss));
        Ok(())
    }

    async fn take_losses(&mut self) -> Result<Option<(usize, Vec<f32>)>> {
        match self.requested.pop_front() {
            Some((step, loss)) => Ok(Some((step, read_f32(loss).await?))),
            None => Ok(None),
        }
    }

    async fn retire(&mut self, keep: &[bool]) -> Result<(Vec<f32>, Vec<f32>)> {
        // Rare (a few times an inversion): through the host, which every backend can do.
        let (b, d) = (self.def.b, self.def.w);
        let len = b * d;
        let device = self.z.device();
        let upload = |v: Vec<f32>| {
            let rows = v.len() / d;
            Tensor::<2>::from_data(TensorData::new(v, [rows, d]), &device)
        };
        let (z, gone) = split_members(&read_f32(self.z.clone()).await?, len, keep);
        let (m, _) = split_members(&read_f32(self.m.clone()).await?, len, keep);
        let (v, _) = split_members(&read_f32(self.v.clone()).await?, len, keep);
        self.def.n = z.len() / len;
        self.def.priors = split_members(&self.def.priors, 1, keep).0;
        (self.z, self.m, self.v) = (upload(z), upload(m), upload(v));
        let gone = upload(gone);
        let (x, relaxed) = self.def.relax(&gone);
        Ok(match relaxed {
            Some(r) => (read_f32(x).await?, read_f32(r.probs).await?),
            None => (read_f32(x).await?, Vec::new()),
        })
    }

    async fn finish(self) -> Result<(Vec<f32>, Vec<f32>)> {
        let (x, relaxed) = self.def.relax(&self.z);
        Ok(match relaxed {
            Some(r) => (read_f32(x).await?, read_f32(r.probs).await?),
            None => (read_f32(x).await?, Vec::new()),
        })
    }
}

/// Value and d/dz of the summed per-member loss at z ([N, B, d] row-major, B a member's dummy
/// rows). Used by the golden tests and by anyone checking the engine against another
/// implementation.
pub async fn loss_and_grad(
    problem: &Problem<'_>,
    z: Vec<f32>,
    n: usize,
    device: &Device,
) -> Result<(Vec<f32>, Vec<f32>)> {
    let b = problem.member_rows();
    let d = z.len() / (n * b);
    let def = Definition::new(problem, n, d, device);
    let z = Tensor::<2>::from_data(TensorData::new(z, [n * b, d]), device);
    let (loss, z_bar) = def.loss_and_grad(&z);
    Ok((read_f32(loss).await?, read_f32(z_bar).await?))
}

/// Per-member loss of given rows x ([N, B, d] row-major, already in encoded space; B a member's
/// dummy rows, `Problem::member_rows`).
pub async fn member_losses(problem: &Problem<'_>, x: Vec<f32>, n: usize, device: &Device) -> Result<Vec<f32>> {
    let b = problem.member_rows();
    let d = x.len() / (n * b);
    let def = Definition::new(problem, n, d, device);
    let x = Tensor::<2>::from_data(TensorData::new(x, [n * b, d]), device);
    read_f32(def.loss(x, false).0).await
}

/// Run the optimisation with the definition itself. `progress` returns false to cancel.
pub async fn invert(
    problem: &Problem<'_>,
    config: &InversionConfig,
    cadence: Cadence,
    device: &Device,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Inversion> {
    let (n, b, d) = (config.members, config.batch, config.d);
    let z = Tensor::<2>::from_data(TensorData::new(member_starts(config), [n * b, d]), device);
    let stepper = TensorStepper {
        def: Definition::new(problem, n, d, device),
        m: z.zeros_like(),
        v: z.zeros_like(),
        z,
        loss: None,
        requested: Default::default(),
    };
    drive(stepper, config, cadence, progress).await
}

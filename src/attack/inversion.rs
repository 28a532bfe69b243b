//! Gradient inversion: N dummy batches optimised together as one [N·B, d] tensor so that the
//! client gradient they produce points the same way as the observed one (SPEC §4).
use burn::tensor::{Device, Tensor, TensorData};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde::{Deserialize, Serialize};

use super::relax::{Relaxation, Relaxed};
use crate::client::gradient::{ParamGrads, input_vjp, param_grads};
use crate::client::network::Net;
use crate::error::{Error, Result};
use crate::runtime::read_f32;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Objective {
    /// 1 − cos(g(x), g_true) over all parameters as one vector.
    Cosine,
    /// ‖g(x) − g_true‖² (DLG).
    SquaredError,
}

/// Adam fed the sign of the gradient, as the reference runs it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Optimiser {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub sign: bool,
}

impl Default for Optimiser {
    fn default() -> Self {
        Optimiser {
            lr: 0.06,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            sign: true,
        }
    }
}

/// Progress of a long computation, as reported to the caller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub phase: String,
    pub step: usize,
    pub of: usize,
    /// Mean loss over the ensemble at this step, when one was read back.
    pub loss: Option<f64>,
    pub elapsed: f64,
}

/// Everything fixed during one inversion.
pub struct Problem<'a> {
    pub net: &'a Net,
    /// Observed update, as a one-member ParamGrads.
    pub target: &'a ParamGrads,
    pub target_norm: f64,
    /// Labels of the dummy rows, one-hot [B, C] (shared by all members).
    pub onehot: Vec<f32>,
    pub classes: usize,
    /// None = optimise the encoded rows directly (Cosine / DLG baselines).
    pub relaxation: Option<&'a Relaxation>,
    pub objective: Objective,
}

pub struct InversionConfig {
    /// How many members this call inverts, starting at member `first_member` of the ensemble: several
    /// workers can split one ensemble and still start every member from the same draw.
    pub members: usize,
    pub first_member: usize,
    pub batch: usize,
    pub d: usize,
    pub iterations: usize,
    pub optimiser: Optimiser,
    pub seed: u64,
    /// Read the loss back every this many steps (readback stalls a GPU pipeline).
    pub report_every: usize,
}

impl InversionConfig {
    /// Whether the loss is read back and reported at this step: the first, every `report_every`-th, the last.
    pub fn reports_at(&self, step: usize) -> bool {
        step == 1 || step == self.iterations || step % self.report_every.max(1) == 0
    }
}

/// Check the members' losses, extend the loss curve and tell the caller; Err if it cancels.
pub fn record_step(
    step: usize,
    of: usize,
    losses: &[f32],
    start: web_time::Instant,
    loss_curve: &mut Vec<(usize, f64)>,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<()> {
    let mean = losses.iter().map(|&l| l as f64).sum::<f64>() / losses.len() as f64;
    if !mean.is_finite() {
        return Err(Error::NonFinite(format!("loss became {mean} at step {step}")));
    }
    loss_curve.push((step, mean));
    let report = Progress {
        phase: "invert".into(),
        step,
        of,
        loss: Some(mean),
        elapsed: start.elapsed().as_secs_f64(),
    };
    if progress(&report) {
        Ok(())
    } else {
        Err(Error::Cancelled)
    }
}

/// Result: the members' final relaxed rows (and block probabilities), [N, B, d] row-major.
pub struct Inversion {
    pub x: Vec<f32>,
    pub probs: Vec<f32>,
    pub loss_curve: Vec<(usize, f64)>,
}

/// Device-side state of one inversion.
struct Engine<'a> {
    problem: &'a Problem<'a>,
    n: usize,
    b: usize,
    d: usize,
    onehot: Tensor<2>,
}

impl<'a> Engine<'a> {
    fn new(problem: &'a Problem<'a>, n: usize, b: usize, d: usize, device: &Device) -> Self {
        let rows: Vec<f32> = problem
            .onehot
            .iter()
            .copied()
            .cycle()
            .take(n * problem.onehot.len())
            .collect();
        let onehot = Tensor::from_data(TensorData::new(rows, [n * b, problem.classes]), device);
        Engine {
            problem,
            n,
            b,
            d,
            onehot,
        }
    }

    fn relax(&self, z: &Tensor<2>) -> Option<Relaxed> {
        self.problem.relaxation.map(|r| r.forward(z))
    }

    /// Per-member loss [N, 1] at z and the gradient of their sum w.r.t. z [N·B, d].
    fn loss_and_grad(&self, z: &Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        let relaxed = self.relax(z);
        let x = relaxed.as_ref().map_or(z.clone(), |r| r.x.clone());
        let (loss, x_bar) = self.loss(x, true);
        let x_bar = x_bar.expect("asked for the gradient");
        let z_bar = match (&relaxed, self.problem.relaxation) {
            (Some(r), Some(rel)) => rel.backward(r, x_bar),
            _ => x_bar,
        };
        (loss, z_bar)
    }

    /// Per-member loss [N, 1] and, when asked, its gradient w.r.t. the rows x [N·B, d].
    fn loss(&self, x: Tensor<2>, with_grad: bool) -> (Tensor<2>, Option<Tensor<2>>) {
        let (n, b, d) = (self.n, self.b, self.d);
        let (g, tape) = param_grads(self.problem.net, &x.reshape([n, b, d]), &self.onehot);
        let t = self.problem.target;
        let (loss, g_bar) = match self.problem.objective {
            Objective::Cosine => {
                let nn = g.norm_sq().add_scalar(1e-30);
                let norm = nn.clone().sqrt();
                let tn = self.problem.target_norm.max(1e-30);
                let cos = g.dot(t) / norm.clone().mul_scalar(tn);
                let loss = cos.clone().neg().add_scalar(1.0);
                // d(1 − cos)/dg = −t/(|g||t|) + cos·g/|g|².
                let alpha = norm.recip().div_scalar(-tn).reshape([n, 1, 1]);
                let beta = (cos / nn).reshape([n, 1, 1]);
                (loss, with_grad.then(|| t.combine(&alpha, &g, &beta)))
            }
            Objective::SquaredError => {
                let loss = g.dist_sq(t);
                let two = Tensor::<3>::ones([1, 1, 1], &loss.device()).mul_scalar(2.0);
                (loss, with_grad.then(|| g.combine(&two, t, &two.clone().neg())))
            }
        };
        let x_bar = g_bar.map(|gb| {
            let xb = input_vjp(self.problem.net, &tape, &gb);
            xb.reshape([n * b, d])
        });
        (loss, x_bar)
    }
}

/// Uniform U(−1, 1) start, seeded.
pub fn initial_rows(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// The starts of the members this call inverts: a slice of the whole ensemble's one seeded draw.
pub fn member_starts(config: &InversionConfig) -> Vec<f32> {
    let len = config.batch * config.d;
    let mut z = initial_rows((config.first_member + config.members) * len, config.seed);
    z.drain(..config.first_member * len);
    z
}

/// Value and d/dz of the summed per-member loss at z ([N, B, d] row-major). Used by the golden
/// tests and by anyone checking the engine against another implementation.
pub async fn loss_and_grad(
    problem: &Problem<'_>,
    z: Vec<f32>,
    n: usize,
    device: &Device,
) -> Result<(Vec<f32>, Vec<f32>)> {
    let b = problem.onehot.len() / problem.classes;
    let d = z.len() / (n * b);
    let engine = Engine::new(problem, n, b, d, device);
    let z = Tensor::<2>::from_data(TensorData::new(z, [n * b, d]), device);
    let (loss, z_bar) = engine.loss_and_grad(&z);
    Ok((read_f32(loss).await?, read_f32(z_bar).await?))
}

/// Per-member loss of given rows x ([N, B, d] row-major, already in encoded space).
pub async fn member_losses(problem: &Problem<'_>, x: Vec<f32>, n: usize, device: &Device) -> Result<Vec<f32>> {
    let b = problem.onehot.len() / problem.classes;
    let d = x.len() / (n * b);
    let engine = Engine::new(problem, n, b, d, device);
    let x = Tensor::<2>::from_data(TensorData::new(x, [n * b, d]), device);
    read_f32(engine.loss(x, false).0).await
}

/// Run the optimisation. `progress` returns false to cancel.
pub async fn invert(
    problem: &Problem<'_>,
    config: &InversionConfig,
    device: &Device,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Inversion> {
    let (n, b, d) = (config.members, config.batch, config.d);
    let engine = Engine::new(problem, n, b, d, device);
    let opt = config.optimiser;
    let start = web_time::Instant::now();
    let mut z = Tensor::<2>::from_data(TensorData::new(member_starts(config), [n * b, d]), device);
    let mut m = z.zeros_like();
    let mut v = z.zeros_like();
    let mut loss_curve = Vec::new();
    for step in 1..=config.iterations {
        let (loss, grad) = engine.loss_and_grad(&z);
        let grad = if opt.sign { grad.sign() } else { grad };
        m = m.mul_scalar(opt.beta1) + grad.clone().mul_scalar(1.0 - opt.beta1);
        v = v.mul_scalar(opt.beta2) + (grad.clone() * grad).mul_scalar(1.0 - opt.beta2);
        let bc1 = 1.0 - opt.beta1.powi(step as i32);
        let bc2 = 1.0 - opt.beta2.powi(step as i32);
        let denom = v.clone().div_scalar(bc2).sqrt().add_scalar(opt.eps);
        z = z - m.clone().mul_scalar(opt.lr / bc1) / denom;

        if config.reports_at(step) {
            let losses = read_f32(loss).await?;
            record_step(step, config.iterations, &losses, start, &mut loss_curve, progress)?;
        }
    }
    let relaxed = engine.relax(&z);
    let (x, probs) = match relaxed {
        Some(r) => (read_f32(r.x).await?, read_f32(r.probs).await?),
        None => (read_f32(z).await?, Vec::new()),
    };
    if x.iter().any(|v| !v.is_finite()) {
        return Err(Error::NonFinite("reconstructed rows hold NaN or infinity".into()));
    }
    Ok(Inversion { x, probs, loss_curve })
}

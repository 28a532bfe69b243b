//! The client's optimiser as `torch.optim` defines it: SGD with momentum, dampening, Nesterov and
//! weight decay; Adam (L2 weight decay folded into the gradient) and AdamW (decoupled decay). A
//! Flower client creates it afresh in each round's `fit`, so its state starts empty and the steps
//! are counted over the whole local training (Adam's bias correction).
//!
//! `step` is the client's update rule on tensors (batched over members); `reverse_step` is its
//! adjoint, which the attacker's second-order gradient walks back through
//! (`attack::inversion::second_order::reverse_local_training`). Golden vectors from PyTorch pin
//! both (tests/golden.rs, `fedavg_optimizers.json`).
use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::gradient::ParamGrads;
use super::network::Net;

/// Which `torch.optim` class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum OptimizerKind {
    #[default]
    Sgd,
    Adam,
    Adamw,
}

impl OptimizerKind {
    pub fn name(self) -> &'static str {
        match self {
            OptimizerKind::Sgd => "sgd",
            OptimizerKind::Adam => "adam",
            OptimizerKind::Adamw => "adamw",
        }
    }
}

/// The client's optimiser and its settings (`torch.optim`'s names and defaults); the step size is
/// `LocalTraining::lr`. Fields the kind does not use are ignored (momentum for Adam, betas for SGD).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct ClientOptimizer {
    pub kind: OptimizerKind,
    /// SGD's momentum μ (0: none).
    pub momentum: f64,
    pub dampening: f64,
    pub nesterov: bool,
    /// SGD and Adam: wd·θ added to the gradient; AdamW: θ shrunk by lr·wd before the step.
    pub weight_decay: f64,
    /// Adam's β1, β2.
    pub betas: [f64; 2],
    /// Adam's ε.
    pub eps: f64,
}

impl Default for ClientOptimizer {
    fn default() -> Self {
        ClientOptimizer {
            kind: OptimizerKind::Sgd,
            momentum: 0.0,
            dampening: 0.0,
            nesterov: false,
            weight_decay: 0.0,
            betas: [0.9, 0.999],
            eps: 1e-8,
        }
    }
}

impl ClientOptimizer {
    pub fn is_adam(&self) -> bool {
        self.kind != OptimizerKind::Sgd
    }

    /// Plain SGD: θ − lr·g, what the accelerators unroll.
    pub fn is_plain_sgd(&self) -> bool {
        self.kind == OptimizerKind::Sgd && self.momentum == 0.0 && self.weight_decay == 0.0
    }

    /// Why the update is not a combination of the client's rows' terms even once the weight decay's
    /// share of θ0 is taken out (`decay_share`): Adam divides every coordinate of its step by that
    /// coordinate's own running scale. SGD's steps, momentum or not, are linear: the span, the
    /// proofs and the certificate read its update as they read plain SGD's.
    pub fn span_broken_by(&self) -> Option<&'static str> {
        match self.kind {
            OptimizerKind::Adam | OptimizerKind::Adamw => Some(
                "the client's Adam divides each coordinate of its step by that coordinate's own running scale, so \
                 its update is no longer a combination of the rows",
            ),
            OptimizerKind::Sgd => None,
        }
    }

    /// SGD's θ0 − θE is c·θ0 plus a combination of the local steps' gradients: with a weight decay
    /// every step also shrinks θ by a data-free share, so θ0's coefficient follows the optimiser
    /// run on a zero gradient from θ = 1 (c = 1 − that θ after `steps` steps; 0 without decay).
    /// The first layer's update less c·W0 lies in the rows' span again. Not meaningful for Adam.
    pub fn decay_share(&self, lr: f64, steps: usize) -> f64 {
        if self.kind != OptimizerKind::Sgd || self.weight_decay == 0.0 {
            return 0.0;
        }
        let (mut theta, mut buf) = (1.0f64, 0.0f64);
        for t in 1..=steps {
            let d = self.weight_decay * theta;
            let s = if self.momentum == 0.0 {
                d
            } else {
                buf = if t == 1 {
                    d
                } else {
                    self.momentum * buf + (1.0 - self.dampening) * d
                };
                if self.nesterov { d + self.momentum * buf } else { buf }
            };
            theta -= lr * s;
        }
        1.0 - theta
    }

    pub fn validate(&self) -> Result<(), String> {
        let finite_in = |v: f64, lo: f64, hi: f64| v.is_finite() && v >= lo && v < hi;
        if !finite_in(self.momentum, 0.0, 1.0) {
            return Err(format!("momentum {} must be in [0, 1)", self.momentum));
        }
        if !finite_in(self.dampening, 0.0, 1.0) {
            return Err(format!("dampening {} must be in [0, 1)", self.dampening));
        }
        if self.nesterov && (self.momentum == 0.0 || self.dampening != 0.0) {
            return Err("Nesterov momentum needs a momentum > 0 and no dampening (as torch.optim.SGD)".into());
        }
        if !(self.weight_decay >= 0.0 && self.weight_decay.is_finite()) {
            return Err(format!("weight decay {} must be a number ≥ 0", self.weight_decay));
        }
        if self.kind == OptimizerKind::Sgd {
            return Ok(());
        }
        if self.momentum != 0.0 || self.nesterov || self.dampening != 0.0 {
            return Err(format!(
                "momentum, dampening and Nesterov are SGD's; {} has betas",
                self.kind.name()
            ));
        }
        for b in self.betas {
            if !finite_in(b, 0.0, 1.0) {
                return Err(format!("Adam's betas {:?} must each be in [0, 1)", self.betas));
            }
        }
        if !(self.eps > 0.0 && self.eps.is_finite()) {
            return Err(format!("Adam's eps {} must be a positive number", self.eps));
        }
        Ok(())
    }

    /// As a person would write it: "SGD (momentum 0.9, weight decay 0.0005)".
    pub fn describe(&self, lr: f64) -> String {
        let mut parts = vec![format!("lr {lr}")];
        match self.kind {
            OptimizerKind::Sgd => {
                if self.momentum != 0.0 {
                    parts.push(format!("momentum {}", self.momentum));
                }
                if self.dampening != 0.0 {
                    parts.push(format!("dampening {}", self.dampening));
                }
                if self.nesterov {
                    parts.push("Nesterov".into());
                }
            }
            _ => parts.push(format!(
                "betas {}, {}, eps {:e}",
                self.betas[0], self.betas[1], self.eps
            )),
        }
        if self.weight_decay != 0.0 {
            parts.push(format!("weight decay {}", self.weight_decay));
        }
        let name = match self.kind {
            OptimizerKind::Sgd => "SGD",
            OptimizerKind::Adam => "Adam",
            OptimizerKind::Adamw => "AdamW",
        };
        format!("{name} ({})", parts.join(", "))
    }
}

/// The parameters of `net` as one ParamGrads (a view for arithmetic).
fn theta(net: &Net) -> ParamGrads {
    ParamGrads {
        weights: net.weights.clone(),
        biases: net.biases.clone(),
    }
}

fn with_theta(net: &Net, p: ParamGrads) -> Net {
    Net {
        weights: p.weights,
        biases: p.biases,
        activation: net.activation,
        head: net.head,
    }
}

fn map(p: &ParamGrads, f: impl Fn(Tensor<3>) -> Tensor<3>) -> ParamGrads {
    ParamGrads {
        weights: p.weights.iter().map(|t| f(t.clone())).collect(),
        biases: p.biases.iter().map(|t| f(t.clone())).collect(),
    }
}

/// The optimiser's state between steps, per member.
#[derive(Default)]
pub struct State {
    /// Steps taken.
    step: usize,
    /// SGD's momentum buffer, or Adam's first moment m.
    first: Option<ParamGrads>,
    /// Adam's second moment v.
    second: Option<ParamGrads>,
}

/// What the reverse of one step needs: the direction d (gradient plus L2 decay) and Adam's moments
/// after the step and before it (None before the first).
pub struct Kept {
    d: Option<ParamGrads>,
    m: Option<ParamGrads>,
    v: Option<ParamGrads>,
    m_before: Option<ParamGrads>,
    v_before: Option<ParamGrads>,
}

/// Adam's bias corrections at step t (1-based).
fn corrections(opt: &ClientOptimizer, t: usize) -> (f64, f64) {
    let [b1, b2] = opt.betas;
    (1.0 - b1.powi(t as i32), 1.0 - b2.powi(t as i32))
}

/// One step from `net` with gradient `g`: the next parameters, and what the reverse needs (`keep`).
pub fn step(opt: &ClientOptimizer, lr: f64, state: &mut State, net: &Net, g: &ParamGrads, keep: bool) -> (Net, Kept) {
    state.step += 1;
    let t = state.step;
    let wd = opt.weight_decay;
    let mut kept = Kept {
        d: None,
        m: None,
        v: None,
        m_before: None,
        v_before: None,
    };
    if opt.is_plain_sgd() {
        return (net.sgd_step(g, lr), kept);
    }
    let th = theta(net);
    // L2 decay joins the gradient for SGD and Adam; AdamW shrinks θ instead.
    let d = match opt.kind {
        OptimizerKind::Adamw => g.clone(),
        _ if wd != 0.0 => g.add(&th.scale(wd)),
        _ => g.clone(),
    };
    let next = match opt.kind {
        OptimizerKind::Sgd => {
            let direction = if opt.momentum == 0.0 {
                d.clone()
            } else {
                let buf = match state.first.take() {
                    None => d.clone(),
                    Some(buf) => buf.scale(opt.momentum).add(&d.scale(1.0 - opt.dampening)),
                };
                let direction = match opt.nesterov {
                    true => d.add(&buf.scale(opt.momentum)),
                    false => buf.clone(),
                };
                state.first = Some(buf);
                direction
            };
            th.add(&direction.scale(-lr))
        }
        OptimizerKind::Adam | OptimizerKind::Adamw => {
            let [b1, b2] = opt.betas;
            let (m_before, v_before) = (state.first.take(), state.second.take());
            let m = match &m_before {
                None => d.scale(1.0 - b1),
                Some(m) => m.scale(b1).add(&d.scale(1.0 - b1)),
            };
            let d2 = d.zip_with(&d, |a, b| a * b).scale(1.0 - b2);
            let v = match &v_before {
                None => d2,
                Some(v) => v.scale(b2).add(&d2),
            };
            if keep {
                kept.m_before = m_before;
                kept.v_before = v_before;
            }
            let (bc1, bc2) = corrections(opt, t);
            let denom = map(&v, |x| x.sqrt().div_scalar(bc2.sqrt()).add_scalar(opt.eps));
            let u = m.zip_with(&denom, |a, b| a / b);
            let base = match opt.kind {
                OptimizerKind::Adamw if wd != 0.0 => th.scale(1.0 - lr * wd),
                _ => th,
            };
            if keep {
                kept.m = Some(m.clone());
                kept.v = Some(v.clone());
            }
            state.first = Some(m);
            state.second = Some(v);
            base.add(&u.scale(-lr / bc1))
        }
    };
    if keep {
        kept.d = Some(d);
    }
    (with_theta(net, next), kept)
}

/// The adjoints carried back through the local steps: dL/dθ_t, and dL/d of the optimiser's state.
pub struct Adjoint {
    pub theta: ParamGrads,
    first: Option<ParamGrads>,
    second: Option<ParamGrads>,
}

impl Adjoint {
    pub fn new(theta: ParamGrads) -> Adjoint {
        Adjoint {
            theta,
            first: None,
            second: None,
        }
    }
}

fn add_to(acc: &mut Option<ParamGrads>, x: ParamGrads) {
    *acc = Some(match acc.take() {
        Some(a) => a.add(&x),
        None => x,
    });
}

/// Reverse of step `t` (1-based): `adj.theta` holds dL/dθ_{t+1} and the state's adjoints dL/d of
/// the state after step t. Returns dL/dg_t, the adjoint of the step's gradient (which the caller
/// sends through the client's backward pass), and leaves in `adj` everything of dL/dθ_t but the
/// gradient's own dependence on θ_t, and the adjoints of the state before step t.
pub fn reverse_step(opt: &ClientOptimizer, lr: f64, t: usize, kept: &Kept, adj: &mut Adjoint) -> ParamGrads {
    let wd = opt.weight_decay;
    // θ_{t+1} = base − lr·s: dL/ds = −lr·dL/dθ_{t+1}.
    let s_bar = adj.theta.scale(-lr);
    if opt.is_plain_sgd() {
        return s_bar;
    }
    let d_bar = match opt.kind {
        OptimizerKind::Sgd if opt.momentum == 0.0 => s_bar,
        OptimizerKind::Sgd => {
            let mu = opt.momentum;
            // s = d + μ·buf (Nesterov) or buf; buf_t = μ·buf_{t−1} + (1 − dampening)·d (d at t = 1).
            let mut d_bar = None;
            match opt.nesterov {
                true => {
                    add_to(&mut adj.first, s_bar.scale(mu));
                    d_bar = Some(s_bar);
                }
                false => add_to(&mut adj.first, s_bar),
            }
            let buf_bar = adj.first.take().expect("set above");
            let into_d = buf_bar.scale(if t == 1 { 1.0 } else { 1.0 - opt.dampening });
            add_to(&mut d_bar, into_d);
            if t > 1 {
                adj.first = Some(buf_bar.scale(mu));
            }
            d_bar.expect("set above")
        }
        OptimizerKind::Adam | OptimizerKind::Adamw => {
            let [b1, b2] = opt.betas;
            let (bc1, bc2) = corrections(opt, t);
            let (m, v, d) = (
                kept.m.as_ref().expect("kept"),
                kept.v.as_ref().expect("kept"),
                kept.d.as_ref().expect("kept"),
            );
            // u = m / (bc1·D), D = √v̂ + ε, v̂ = v/bc2; the step is lr·u.
            let root = map(v, |x| x.div_scalar(bc2).sqrt());
            let denom = map(&root, |r| r.add_scalar(opt.eps));
            let u_bar = s_bar.scale(1.0 / bc1);
            // This step's own du/dd = (1−β1)/D − (1−β2)·d·m/(D²·√v̂·bc2) is a difference of two
            // terms near 1/|d| whose true value is near ε/d²: in float32 it would be rounding
            // alone. With m = β1·m' + (1−β1)·d and v = β2·v' + (1−β2)·d² the d² terms cancel
            // exactly, leaving N/(D²·√v̂·bc2), N = (1−β1)·β2·v' − (1−β2)·β1·m'·d + (1−β1)·ε·bc2·√v̂.
            let mut n = root.scale((1.0 - b1) * opt.eps * bc2);
            if let (Some(m0), Some(v0)) = (&kept.m_before, &kept.v_before) {
                n = n
                    .add(&v0.scale((1.0 - b1) * b2))
                    .add(&m0.zip_with(d, |a, b| a * b).scale(-(1.0 - b2) * b1));
            }
            let per_root = |p: &ParamGrads| p.zip_with(&root, |a, r| a / r.clamp_min(1e-30));
            let over_denom2 = |p: &ParamGrads| p.zip_with(&denom, |a, dd| a / (dd.clone() * dd));
            let own = per_root(&over_denom2(&u_bar.zip_with(&n, |a, b| a * b))).scale(1.0 / bc2);
            // Through the moments to the later steps, which reached them as m̄ and v̄.
            let mut d_bar = own;
            if let Some(m_bar) = adj.first.take() {
                d_bar = d_bar.add(&m_bar.scale(1.0 - b1));
                if t > 1 {
                    adj.first = Some(m_bar);
                }
            }
            if let Some(v_bar) = adj.second.take() {
                d_bar = d_bar.add(&v_bar.zip_with(d, |a, b| a * b).scale(2.0 * (1.0 - b2)));
                if t > 1 {
                    adj.second = Some(v_bar);
                }
            }
            if t > 1 {
                // m̄, v̄ before this step: this step's own terms added, carried back by β.
                // du/dm = 1/(bc1·D); du/dv = −m/(2·D²·√v̂·bc2)/bc1 (where v = 0, m = 0 too).
                add_to(&mut adj.first, u_bar.zip_with(&denom, |a, b| a / b));
                let dv = per_root(&over_denom2(m)).scale(-1.0 / (2.0 * bc2));
                add_to(&mut adj.second, u_bar.zip_with(&dv, |a, b| a * b));
                adj.first = adj.first.take().map(|a| a.scale(b1));
                adj.second = adj.second.take().map(|a| a.scale(b2));
            }
            if opt.kind == OptimizerKind::Adamw && wd != 0.0 {
                adj.theta = adj.theta.scale(1.0 - lr * wd);
            }
            d_bar
        }
    };
    if wd != 0.0 && opt.kind != OptimizerKind::Adamw {
        adj.theta = adj.theta.add(&d_bar.scale(wd));
    }
    d_bar
}

//! The client's optimiser in the CPU kernel, coordinate by coordinate: the same update rules and
//! adjoints as the definition's `client::optimizer::step` and `reverse_step` (torch.optim's SGD
//! with momentum, dampening, Nesterov and weight decay; Adam; AdamW), on one parameter at a time.
//! tests/step_equality.rs holds the kernel's FedAvg runs under each optimiser to the definition's.
use crate::client::optimizer::{ClientOptimizer, OptimizerKind};

/// One local step's values Adam's reverse needs, per coordinate: the direction d, and m and v
/// before the step.
pub type Kept = [f32; 3];

/// The optimiser's constants.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    kind: OptimizerKind,
    lr: f32,
    wd: f32,
    mu: f32,
    dampening: f32,
    nesterov: bool,
    b1: f32,
    b2: f32,
    eps: f32,
    plain: bool,
}

impl Rule {
    pub fn new(o: &ClientOptimizer, lr: f64) -> Rule {
        Rule {
            kind: o.kind,
            lr: lr as f32,
            wd: o.weight_decay as f32,
            mu: o.momentum as f32,
            dampening: o.dampening as f32,
            nesterov: o.nesterov,
            b1: o.betas[0] as f32,
            b2: o.betas[1] as f32,
            eps: o.eps as f32,
            plain: o.is_plain_sgd(),
        }
    }

    pub fn lr(&self) -> f32 {
        self.lr
    }

    pub fn is_plain(&self) -> bool {
        self.plain
    }

    /// Whether the reverse reads values kept from the forward (Adam's).
    pub fn keeps(&self) -> bool {
        self.kind != OptimizerKind::Sgd
    }

    fn adam(&self) -> bool {
        self.kind != OptimizerKind::Sgd
    }

    /// Adam's bias corrections 1 − β^t at step t (1-based), in f64 as the definition's.
    fn corrections(&self, t: usize) -> (f32, f32) {
        let c = |b: f32| (1.0 - (b as f64).powi(t as i32)) as f32;
        (c(self.b1), c(self.b2))
    }

    /// θ_{t+1} from θ_t and its gradient g at step t (1-based); `first` and `second` are the
    /// coordinate's state (the momentum buffer, or Adam's m and v), zero before the first step.
    #[inline(always)]
    pub fn step(&self, t: usize, theta: f32, g: f32, first: &mut f32, second: &mut f32) -> (f32, Kept) {
        if self.plain {
            return (theta - self.lr * g, [0.0; 3]);
        }
        match self.adam() {
            false => {
                let d = g + self.wd * theta;
                let s = if self.mu == 0.0 {
                    d
                } else {
                    *first = if t == 1 {
                        d
                    } else {
                        self.mu * *first + (1.0 - self.dampening) * d
                    };
                    if self.nesterov { d + self.mu * *first } else { *first }
                };
                (theta - self.lr * s, [0.0; 3])
            }
            true => {
                let decoupled = self.kind == OptimizerKind::Adamw;
                let d = if decoupled { g } else { g + self.wd * theta };
                let kept = [d, *first, *second];
                *first = self.b1 * *first + (1.0 - self.b1) * d;
                *second = self.b2 * *second + (1.0 - self.b2) * d * d;
                let (bc1, bc2) = self.corrections(t);
                let denom = (*second / bc2).sqrt() + self.eps;
                let base = if decoupled {
                    theta * (1.0 - self.lr * self.wd)
                } else {
                    theta
                };
                (base - (self.lr / bc1) * (*first / denom), kept)
            }
        }
    }

    /// Reverse of `step` at t: `theta_bar` holds dL/dθ_{t+1} and leaves with θ's direct part of
    /// dL/dθ_t; `first_bar`, `second_bar` hold the state's adjoints after step t and leave with
    /// those before it. Returns dL/dg_t.
    #[inline(always)]
    pub fn reverse(&self, t: usize, kept: Kept, theta_bar: &mut f32, first_bar: &mut f32, second_bar: &mut f32) -> f32 {
        let s_bar = -self.lr * *theta_bar;
        if self.plain {
            return s_bar;
        }
        let d_bar = match self.adam() {
            false if self.mu == 0.0 => s_bar,
            false => {
                let mut d_bar = 0.0;
                if self.nesterov {
                    *first_bar += self.mu * s_bar;
                    d_bar = s_bar;
                } else {
                    *first_bar += s_bar;
                }
                d_bar += if t == 1 { 1.0 } else { 1.0 - self.dampening } * *first_bar;
                *first_bar = if t > 1 { self.mu * *first_bar } else { 0.0 };
                d_bar
            }
            true => {
                // As the definition's `reverse_step`: this step's own du/dd in the form whose d²
                // terms cancel exactly, the later steps' through m̄ and v̄.
                let [d, m0, v0] = kept;
                let (b1, b2) = (self.b1, self.b2);
                let (m, v) = (b1 * m0 + (1.0 - b1) * d, b2 * v0 + (1.0 - b2) * d * d);
                let (bc1, bc2) = self.corrections(t);
                let root = (v / bc2).sqrt();
                let denom = root + self.eps;
                let u_bar = s_bar / bc1;
                let n = (1.0 - b1) * b2 * v0 - (1.0 - b2) * b1 * m0 * d + (1.0 - b1) * self.eps * bc2 * root;
                let own = u_bar * n / (denom * denom) / root.max(1e-30) / bc2;
                let d_bar = own + (1.0 - b1) * *first_bar + 2.0 * (1.0 - b2) * d * *second_bar;
                if t > 1 {
                    let dv = m / (denom * denom) / root.max(1e-30) * (-1.0 / (2.0 * bc2));
                    *first_bar = b1 * (*first_bar + u_bar / denom);
                    *second_bar = b2 * (*second_bar + u_bar * dv);
                } else {
                    (*first_bar, *second_bar) = (0.0, 0.0);
                }
                if self.kind == OptimizerKind::Adamw {
                    *theta_bar *= 1.0 - self.lr * self.wd;
                }
                d_bar
            }
        };
        if self.kind != OptimizerKind::Adamw {
            *theta_bar += self.wd * d_bar;
        }
        d_bar
    }
}

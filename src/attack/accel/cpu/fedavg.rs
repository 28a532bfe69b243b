//! FedAvg in the CPU kernel: a group's members each run the client's local training on their
//! dummy rows, and the objective is differentiated back through every local step (the definition's
//! `client::fedavg::local_training` and `attack::inversion::second_order::reverse_local_training`).
use super::passes::{Weights, Workspace, forward_backward, objective, reverse};
use crate::attack::inversion::objective::Objective;
use crate::client::fedavg::{LocalStep, LocalTraining};
use crate::client::head::Head;
use crate::client::update::Update;

/// What a group's unrolled local training keeps between the forward and the reverse, allocated once.
pub struct Unrolled {
    steps: Vec<LocalStep>,
    /// One pass per local step (g members × its rows).
    passes: Vec<Workspace>,
    /// θ after each step, per member: `theta_w[t][l]` is [g, in, out] after step t (θ0 is shared).
    theta_w: Vec<Vec<Vec<f32>>>,
    theta_b: Vec<Vec<Vec<f32>>>,
    /// The update θ0 − θE, then G = dloss/d(update).
    update_w: Vec<Vec<f32>>,
    update_b: Vec<Vec<f32>>,
    /// dL/dθ_t, and what one step's reverse adds to it.
    bar_w: Vec<Vec<f32>>,
    bar_b: Vec<Vec<f32>>,
    add_w: Vec<Vec<f32>>,
    add_b: Vec<Vec<f32>>,
}

/// The local training's constants.
pub struct Client<'a> {
    pub sizes: &'a [usize],
    /// θ0, shared by every member: per layer W [in, out] and b [out].
    pub w: &'a [Vec<f32>],
    pub b: &'a [Vec<f32>],
    pub target: &'a Update,
    pub target_norm: f32,
    pub objective: Objective,
    /// The client's labels in order as the head's targets [n, outputs].
    pub onehot: &'a [f32],
    pub head: Head,
    pub training: LocalTraining,
    /// Copies of the client's n rows in a member's dummy rows: one per epoch, or one shared.
    pub copies: usize,
}

impl Unrolled {
    pub fn new(sizes: &[usize], g: usize, n: usize, training: &LocalTraining) -> Unrolled {
        let steps = training.schedule(n);
        let per_layer = |f: &dyn Fn(usize, usize) -> usize| -> Vec<Vec<f32>> {
            sizes.windows(2).map(|s| vec![0.0; f(s[0], s[1])]).collect()
        };
        let weights = || per_layer(&|i, o| g * i * o);
        let biases = || per_layer(&|_, o| g * o);
        Unrolled {
            passes: steps.iter().map(|s| Workspace::new(sizes, g, s.rows)).collect(),
            theta_w: steps.iter().map(|_| weights()).collect(),
            theta_b: steps.iter().map(|_| biases()).collect(),
            update_w: weights(),
            update_b: biases(),
            bar_w: weights(),
            bar_b: biases(),
            add_w: weights(),
            add_b: biases(),
            steps,
        }
    }
}

impl Client<'_> {
    fn layers(&self) -> usize {
        self.sizes.len() - 1
    }

    /// The client's rows n (labels one-hot [n, C]).
    fn client_rows(&self) -> usize {
        self.onehot.len() / self.sizes[self.layers()]
    }

    /// Losses of the g members whose dummy rows are `x` ([g, copies·n, d]) into `loss`, and with
    /// `x_bar` ([g, copies·n, d], overwritten) dL/dx through the whole local training.
    pub fn loss(&self, un: &mut Unrolled, x: &[f32], loss: &mut [f32], x_bar: Option<&mut [f32]>) {
        let g = loss.len();
        for t in 0..un.steps.len() {
            self.local_step(un, x, g, t);
        }
        let grad = x_bar.is_some();
        self.update_objective(un, loss, grad);
        let Some(x_bar) = x_bar else { return };
        self.reverse_training(un, x_bar, g);
    }

    /// Local step t of every member: its rows of `x` through the pass at θ_t, then
    /// θ_{t+1} = θ_t − lr·g_t.
    fn local_step(&self, un: &mut Unrolled, x: &[f32], g: usize, t: usize) {
        let (layers, d) = (self.layers(), self.sizes[0]);
        let n = self.client_rows();
        let classes = self.sizes[layers];
        let member_rows = self.copies * n;
        let lr = self.training.lr as f32;
        let step = un.steps[t];
        let copy = step.epoch.min(self.copies - 1);
        {
            let pass = &mut un.passes[t];
            for k in 0..g {
                let from = (k * member_rows + copy * n + step.first) * d;
                pass.x[k * step.rows * d..(k + 1) * step.rows * d].copy_from_slice(&x[from..from + step.rows * d]);
            }
        }
        let labels = &self.onehot[step.first * classes..(step.first + step.rows) * classes];
        let (done, rest) = un.theta_w.split_at_mut(t);
        let (done_b, rest_b) = un.theta_b.split_at_mut(t);
        let weights = if t == 0 {
            Weights::Shared { w: self.w, b: self.b }
        } else {
            Weights::PerMember {
                w: &done[t - 1],
                b: &done_b[t - 1],
            }
        };
        forward_backward(self.sizes, weights, labels, self.head, &mut un.passes[t]);
        // θ_{t+1} = θ_t − lr·g_t, per member.
        let pass = &un.passes[t];
        for l in 0..layers {
            let (i, o) = (self.sizes[l], self.sizes[l + 1]);
            for k in 0..g {
                let (w_before, b_before): (&[f32], &[f32]) = if t == 0 {
                    (&self.w[l], &self.b[l])
                } else {
                    (
                        &done[t - 1][l][k * i * o..(k + 1) * i * o],
                        &done_b[t - 1][l][k * o..(k + 1) * o],
                    )
                };
                let w_after = &mut rest[0][l][k * i * o..(k + 1) * i * o];
                for ((a, &w0), &gv) in w_after
                    .iter_mut()
                    .zip(w_before)
                    .zip(&pass.gw[l][k * i * o..(k + 1) * i * o])
                {
                    *a = w0 - lr * gv;
                }
                let b_after = &mut rest_b[0][l][k * o..(k + 1) * o];
                for ((a, &b0), &gv) in b_after.iter_mut().zip(b_before).zip(&pass.gb[l][k * o..(k + 1) * o]) {
                    *a = b0 - lr * gv;
                }
            }
        }
    }

    /// The update θ0 − θE, its objective (into `loss`) and, with `grad`, G in its place.
    fn update_objective(&self, un: &mut Unrolled, loss: &mut [f32], grad: bool) {
        let g = loss.len();
        let last = un.steps.len() - 1;
        for l in 0..self.layers() {
            let (i, o) = (self.sizes[l], self.sizes[l + 1]);
            for k in 0..g {
                let span = k * i * o..(k + 1) * i * o;
                for ((u, &w0), &we) in un.update_w[l][span.clone()]
                    .iter_mut()
                    .zip(&self.w[l])
                    .zip(&un.theta_w[last][l][span])
                {
                    *u = w0 - we;
                }
                let span = k * o..(k + 1) * o;
                for ((u, &b0), &be) in un.update_b[l][span.clone()]
                    .iter_mut()
                    .zip(&self.b[l])
                    .zip(&un.theta_b[last][l][span])
                {
                    *u = b0 - be;
                }
            }
        }
        objective(
            self.sizes,
            self.objective,
            self.target,
            self.target_norm,
            &mut un.update_w,
            &mut un.update_b,
            loss,
            grad,
        );
    }

    /// dL/dx into `x_bar` (overwritten), from G = dloss/d(update) back through every local step,
    /// last to first.
    fn reverse_training(&self, un: &mut Unrolled, x_bar: &mut [f32], g: usize) {
        let d = self.sizes[0];
        let n = self.client_rows();
        let member_rows = self.copies * n;
        let lr = self.training.lr as f32;
        x_bar.iter_mut().for_each(|v| *v = 0.0);
        // dL/dθE = −dL/d(update).
        for (bar, u) in un
            .bar_w
            .iter_mut()
            .zip(&un.update_w)
            .chain(un.bar_b.iter_mut().zip(&un.update_b))
        {
            bar.iter_mut().zip(u).for_each(|(b, &v)| *b = -v);
        }
        for t in (0..un.steps.len()).rev() {
            let step = un.steps[t];
            // The adjoint of g_t is −lr·θ̄_{t+1}: the reverse reads it as G.
            {
                let pass = &mut un.passes[t];
                for (gv, bar) in pass
                    .gw
                    .iter_mut()
                    .zip(&un.bar_w)
                    .chain(pass.gb.iter_mut().zip(&un.bar_b))
                {
                    gv.iter_mut().zip(bar).for_each(|(gv, &b)| *gv = -lr * b);
                }
            }
            let weights = self.weights_at_split(&un.theta_w, &un.theta_b, t);
            let theta_bar = (t > 0).then_some((&mut un.add_w[..], &mut un.add_b[..]));
            reverse(self.sizes, weights, self.head, &mut un.passes[t], theta_bar);
            let copy = step.epoch.min(self.copies - 1);
            let pass = &un.passes[t];
            for k in 0..g {
                let to = (k * member_rows + copy * n + step.first) * d;
                let from = &pass.h_bar[0][k * step.rows * d..(k + 1) * step.rows * d];
                x_bar[to..to + step.rows * d]
                    .iter_mut()
                    .zip(from)
                    .for_each(|(a, &v)| *a += v);
            }
            if t > 0 {
                for (bar, add) in un
                    .bar_w
                    .iter_mut()
                    .zip(&un.add_w)
                    .chain(un.bar_b.iter_mut().zip(&un.add_b))
                {
                    bar.iter_mut().zip(add).for_each(|(b, &a)| *b += a);
                }
            }
        }
    }

    fn weights_at_split<'u>(
        &'u self,
        theta_w: &'u [Vec<Vec<f32>>],
        theta_b: &'u [Vec<Vec<f32>>],
        t: usize,
    ) -> Weights<'u> {
        if t == 0 {
            Weights::Shared { w: self.w, b: self.b }
        } else {
            Weights::PerMember {
                w: &theta_w[t - 1],
                b: &theta_b[t - 1],
            }
        }
    }
}

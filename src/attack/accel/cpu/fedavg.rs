//! FedAvg in the CPU kernel: a group's members each run the client's local training on their
//! dummy rows, and the objective is differentiated back through every local step (the definition's
//! `client::fedavg::local_training` and `attack::inversion::second_order::reverse_local_training`).
use super::optimizer::{Kept, Rule};
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
    /// The client's optimiser, and its state per member: the momentum buffer or Adam's m
    /// (`first`), Adam's v (`second`); their adjoints in the reverse. Empty for plain SGD.
    rule: Rule,
    first: Slots,
    second: Slots,
    first_bar: Slots,
    second_bar: Slots,
    /// Adam's values per step for the reverse (`optimizer::Kept`), per step and slot.
    kept: Vec<Vec<Vec<Kept>>>,
    /// 1 − c: what of θ0 the update's rows' part keeps under SGD's weight decay (the definition's
    /// `Simulation::decay_share`; 1 without a decay).
    theta0_kept: f32,
}

/// One buffer per parameter tensor: every layer's W then every layer's b, each g members long.
type Slots = Vec<Vec<f32>>;

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
        let rule = Rule::new(&training.optimizer, training.lr);
        let state = || match rule.is_plain() {
            true => Vec::new(),
            false => weights().into_iter().chain(biases()).collect(),
        };
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
            rule,
            theta0_kept: 1.0 - training.optimizer.decay_share(training.lr, steps.len()) as f32,
            first: state(),
            second: state(),
            first_bar: state(),
            second_bar: state(),
            kept: match rule.keeps() {
                true => steps
                    .iter()
                    .map(|_| {
                        weights()
                            .into_iter()
                            .chain(biases())
                            .map(|v| vec![[0.0; 3]; v.len()])
                            .collect()
                    })
                    .collect(),
                false => Vec::new(),
            },
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
        // A fresh optimiser every local training (a client makes one per round).
        for slot in un.first.iter_mut().chain(un.second.iter_mut()) {
            slot.iter_mut().for_each(|v| *v = 0.0);
        }
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
        // θ_{t+1} from θ_t and g_t by the client's optimiser, per member.
        let pass = &un.passes[t];
        let rule = un.rule;
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
                let b_after = &mut rest_b[0][l][k * o..(k + 1) * o];
                let gw = &pass.gw[l][k * i * o..(k + 1) * i * o];
                let gb = &pass.gb[l][k * o..(k + 1) * o];
                if rule.is_plain() {
                    for ((a, &w0), &gv) in w_after.iter_mut().zip(w_before).zip(gw) {
                        *a = w0 - lr * gv;
                    }
                    for ((a, &b0), &gv) in b_after.iter_mut().zip(b_before).zip(gb) {
                        *a = b0 - lr * gv;
                    }
                    continue;
                }
                for (slot, after, before, grad, span) in [
                    (l, w_after, w_before, gw, k * i * o..(k + 1) * i * o),
                    (layers + l, b_after, b_before, gb, k * o..(k + 1) * o),
                ] {
                    let first = &mut un.first[slot][span.clone()];
                    let second = &mut un.second[slot][span.clone()];
                    let mut kept = un.kept.get_mut(t).map(|k| &mut k[slot][span]);
                    for e in 0..after.len() {
                        let (next, keep) = rule.step(t + 1, before[e], grad[e], &mut first[e], &mut second[e]);
                        after[e] = next;
                        if let Some(kept) = kept.as_mut() {
                            kept[e] = keep;
                        }
                    }
                }
            }
        }
    }

    /// The update θ0 − θE, its objective (into `loss`) and, with `grad`, G in its place.
    fn update_objective(&self, un: &mut Unrolled, loss: &mut [f32], grad: bool) {
        let g = loss.len();
        let last = un.steps.len() - 1;
        // The rows' part under SGD's weight decay: c·θ0 out.
        let keep = un.theta0_kept;
        for l in 0..self.layers() {
            let (i, o) = (self.sizes[l], self.sizes[l + 1]);
            for k in 0..g {
                let span = k * i * o..(k + 1) * i * o;
                for ((u, &w0), &we) in un.update_w[l][span.clone()]
                    .iter_mut()
                    .zip(&self.w[l])
                    .zip(&un.theta_w[last][l][span])
                {
                    *u = keep * w0 - we;
                }
                let span = k * o..(k + 1) * o;
                for ((u, &b0), &be) in un.update_b[l][span.clone()]
                    .iter_mut()
                    .zip(&self.b[l])
                    .zip(&un.theta_b[last][l][span])
                {
                    *u = keep * b0 - be;
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
        x_bar.iter_mut().for_each(|v| *v = 0.0);
        for slot in un.first_bar.iter_mut().chain(un.second_bar.iter_mut()) {
            slot.iter_mut().for_each(|v| *v = 0.0);
        }
        let rule = un.rule;
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
            // The adjoint of g_t from θ̄_{t+1} by the optimiser's reverse (−lr·θ̄_{t+1} for plain
            // SGD), which also leaves θ's direct part in θ̄: the reverse reads it as G.
            {
                let pass = &mut un.passes[t];
                for (slot, (gv, bar)) in pass
                    .gw
                    .iter_mut()
                    .zip(un.bar_w.iter_mut())
                    .chain(pass.gb.iter_mut().zip(un.bar_b.iter_mut()))
                    .enumerate()
                {
                    if rule.is_plain() {
                        gv.iter_mut().zip(bar.iter()).for_each(|(gv, &b)| *gv = -rule.lr() * b);
                        continue;
                    }
                    let (fb, sb) = (&mut un.first_bar[slot], &mut un.second_bar[slot]);
                    let kept = un.kept.get(t).map(|k| &k[slot][..]);
                    for e in 0..gv.len() {
                        let keep = kept.map_or([0.0; 3], |k| k[e]);
                        gv[e] = rule.reverse(t + 1, keep, &mut bar[e], &mut fb[e], &mut sb[e]);
                    }
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

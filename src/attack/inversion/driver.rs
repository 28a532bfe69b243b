//! The optimisation loop of an inversion, written once for every engine that runs its steps (the
//! definition on burn tensors, the fused CPU kernel, the GPU kernels): Adam's constants per step,
//! when the losses are read back, progress, cancellation and the loss curve.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::attack::inversion::pointwise::AdamStep;
use crate::config::Optimiser;
use crate::error::{Error, Result};
/// The readback cadence is the runtime's to choose (`Runtime::cadence`); the loop follows it.
pub use crate::runtime::Cadence;

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
    /// Read the losses back every this many steps (at least; see `Cadence`).
    pub report_every: usize,
    /// When members stop before `iterations` (None: every member runs them all).
    pub early_stop: Option<EarlyStop>,
    /// Every member's start in the relaxation's variables ([members of the ensemble, batch, d]),
    /// where the members start from given rows (`assess::refine`); None: the seeded uniform draw.
    pub starts: Option<std::sync::Arc<[f32]>>,
}

/// A member stops once its best loss so far, looked at every `every` steps, has improved over the
/// last `window` steps by less than `tolerance` of itself or less than `absolute`. The check is on whole steps, the same
/// for every engine, so an accelerator stops its members where the definition does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EarlyStop {
    pub every: usize,
    pub window: usize,
    pub tolerance: f64,
    pub absolute: f64,
}

/// Measured with the subspace prior on full Adult (docs/fidelity.md). A 200-step window with a
/// floor of 0.001 stopped members on plateaus they later left: at B = 32 it cost 4 points on
/// two of ten batches (seed 5: 76.6 % against 81.0 % running all steps). With 400 steps and 3e-4
/// those batches lose nothing (81.0 %, 84.6 % against 84.8 %); members of batches of 8 stop after
/// 1218 steps on average. The floor is absolute as well as relative because a member converging
/// on the batch's rows keeps shrinking its loss geometrically after its rows are settled.
pub const EARLY_STOP: EarlyStop = EarlyStop {
    every: 50,
    window: 400,
    tolerance: 5e-3,
    absolute: 3e-4,
};

impl EarlyStop {
    /// Whether the member whose best loss was `then` a window ago and is `now` has stopped improving.
    pub fn done(&self, then: f64, now: f64) -> bool {
        then - now < (self.tolerance * then.abs()).max(self.absolute)
    }
}

/// Progress of a long computation, as reported to the caller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Progress {
    pub phase: String,
    pub step: usize,
    pub of: usize,
    /// Mean loss over the ensemble at this step, when one was read back.
    pub loss: Option<f64>,
    pub elapsed: f64,
}

/// Where a run's inversions spent their time on the host, summed over every inversion the run
/// started (an early answer's stages, an ensemble's rounds): what the browser bench and the
/// report's `timing` show. On a GPU, issuing a step only records its kernels; the device runs them
/// meanwhile, and the host waits for it at a readback. On the CPU, issuing is computing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct StepTiming {
    /// Inversions run (each builds its engine's state: buffers, uploads).
    pub inversions: usize,
    /// Steps issued, each a step of every member still running.
    pub steps: usize,
    /// Seconds spent issuing steps.
    pub issue_seconds: f64,
    /// Readbacks awaited (losses, stopped members, the final rows)...
    pub readbacks: usize,
    /// ...and the seconds spent waiting for them.
    pub wait_seconds: f64,
    /// Seconds from the run's start until the first losses were read (after the first step: on a
    /// GPU it holds the kernels' compilation where they were not compiled before).
    pub first_loss_seconds: Option<f64>,
}

thread_local! {
    /// The run being timed on this thread (`timing::start` .. `timing::take`).
    static TIMING: std::cell::RefCell<Option<(web_time::Instant, StepTiming)>> = const { std::cell::RefCell::new(None) };
}

/// Step timing of the run on this thread: `start` at its beginning, `take` at its end. Inversions
/// outside a started run are not timed. One run per thread at a time (a worker, a CLI thread).
pub mod timing {
    use super::{StepTiming, TIMING};

    pub fn start() {
        TIMING.with(|t| *t.borrow_mut() = Some((web_time::Instant::now(), StepTiming::default())));
    }

    pub fn take() -> Option<StepTiming> {
        TIMING.with(|t| t.borrow_mut().take()).map(|(_, timing)| timing)
    }

    pub(super) fn note(f: impl FnOnce(&mut StepTiming, f64)) {
        TIMING.with(|t| {
            if let Some((start, timing)) = t.borrow_mut().as_mut() {
                f(timing, start.elapsed().as_secs_f64());
            }
        });
    }

    /// Run `work`, adding its seconds to the field `add` picks.
    pub(super) async fn timed<T>(work: impl std::future::Future<Output = T>, add: fn(&mut StepTiming, f64)) -> T {
        let t = web_time::Instant::now();
        let out = work.await;
        let secs = t.elapsed().as_secs_f64();
        note(|timing, _| add(timing, secs));
        out
    }
}

/// Result: the members' final relaxed rows (and block probabilities), [N, B, d] row-major.
pub struct Inversion {
    pub x: Vec<f32>,
    pub probs: Vec<f32>,
    pub loss_curve: Vec<(usize, f64)>,
    /// Steps each member took (all `iterations` without early stopping).
    pub steps: Vec<usize>,
}

/// One engine's state of an inversion: every member's rows and Adam moments, wherever they live.
#[allow(async_fn_in_trait)] // used with concrete types only, never boxed or sent
pub trait Stepper {
    /// One step of every member: the objective's gradient at z, then Adam's update of z.
    fn step(&mut self, adam: &AdamStep) -> Result<()>;
    /// The steps `adams` in order, nothing read between them (the driver reads only at a report or
    /// a check): a stepper whose members run apart may run each through all of them at once.
    fn steps(&mut self, adams: &[AdamStep]) -> Result<()> {
        adams.iter().try_for_each(|a| self.step(a))
    }
    /// Note the members' losses at the step just taken, to be read by `take_losses`. A GPU starts
    /// the copy here and the driver keeps the device busy while it completes.
    fn request_losses(&mut self, step: usize) -> Result<()>;
    /// The oldest requested losses (step, one per member still running).
    async fn take_losses(&mut self) -> Result<Option<(usize, Vec<f32>)>>;
    /// Stop the running members whose `keep` is false (in the order they run) and go on with the
    /// rest; no request is pending. Returns the stopped members' relaxed rows and block
    /// probabilities as `finish` does.
    async fn retire(&mut self, keep: &[bool]) -> Result<(Vec<f32>, Vec<f32>)>;
    /// The members' final relaxed rows and block probabilities ([N, B, d] each; probs empty
    /// without a relaxation).
    async fn finish(self) -> Result<(Vec<f32>, Vec<f32>)>;
}

/// Reports on a timed cadence are at least this far apart...
pub const MIN_REPORT_SECONDS: f64 = 0.1;
/// ...and at most this many steps, so a long run still shows its curve and sees a cancel.
pub const MAX_REPORT_STEPS: usize = 1000;

struct Schedule {
    cadence: Cadence,
    every: usize,
    next: usize,
    last_report: Option<(usize, f64)>,
}

impl Schedule {
    fn new(cadence: Cadence) -> Schedule {
        let (every, next) = match cadence {
            Cadence::Every(n) | Cadence::Timed(n) => (n.max(1), 1),
            Cadence::Probe(n) => (usize::MAX, n.max(1)),
        };
        Schedule {
            cadence,
            every,
            next,
            last_report: None,
        }
    }

    fn due(&self, step: usize, iterations: usize) -> bool {
        step == self.next || step == iterations
    }

    /// The first step from `from` on that is due.
    fn next_due(&self, from: usize, iterations: usize) -> usize {
        if self.next >= from {
            self.next.min(iterations)
        } else {
            iterations
        }
    }

    /// A report was recorded at `step` at time `t`: plan the next.
    fn reported(&mut self, step: usize, t: f64) {
        if let (Cadence::Timed(_), Some((s0, t0))) = (self.cadence, self.last_report)
            && step > s0
        {
            let per_step = (t - t0) / (step - s0) as f64;
            if per_step * (self.every as f64) < MIN_REPORT_SECONDS {
                let want = if per_step > 0.0 {
                    (MIN_REPORT_SECONDS / per_step).ceil().min(MAX_REPORT_STEPS as f64) as usize
                } else {
                    MAX_REPORT_STEPS
                };
                self.every = want.clamp(self.every, MAX_REPORT_STEPS);
            }
        }
        self.last_report = Some((step, t));
    }

    fn planned(&mut self, step: usize) {
        self.next = match self.cadence {
            // The warm-up's end, two steps later, then the last.
            Cadence::Probe(warmup) if step == warmup.max(1) => step + 2,
            Cadence::Probe(_) => usize::MAX,
            // The first report is step 1; after it the grid is every multiple of `every`.
            _ => (step / self.every).saturating_add(1).saturating_mul(self.every),
        };
    }
}

/// Check the members' losses, extend the loss curve and tell the caller; Err if it cancels.
fn record_step(
    step: usize,
    of: usize,
    losses: &[f32],
    start: web_time::Instant,
    loss_curve: &mut Vec<(usize, f64)>,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<()> {
    let mean = losses.iter().map(|&l| l as f64).sum::<f64>() / losses.len().max(1) as f64;
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

/// Split per-member chunks of `len` values by `keep`: (kept, retired), each in member order. What
/// every stepper's `retire` does to its state.
pub fn split_members<T: Copy>(values: &[T], len: usize, keep: &[bool]) -> (Vec<T>, Vec<T>) {
    let (mut kept, mut gone) = (Vec::new(), Vec::new());
    for (chunk, &k) in values.chunks_exact(len).zip(keep) {
        if k { &mut kept } else { &mut gone }.extend_from_slice(chunk);
    }
    (kept, gone)
}

/// Which members still run, and what the stopped ones left.
struct Members {
    /// The members still running, in the stepper's order (indices into this call's members).
    running: Vec<usize>,
    steps: Vec<usize>,
    /// The latest loss read of every member (a stopped member keeps its last).
    last: Vec<f64>,
    /// Per member, its best loss at each check step.
    best: Vec<Vec<f64>>,
    /// Stopped members' rows and probabilities.
    stopped: Vec<Option<(Vec<f32>, Vec<f32>)>>,
}

impl Members {
    fn new(n: usize) -> Members {
        Members {
            running: (0..n).collect(),
            steps: vec![0; n],
            last: vec![f64::NAN; n],
            best: vec![Vec::new(); n],
            stopped: vec![None; n],
        }
    }

    /// Record the running members' losses; the mean over all members, stopped ones at their last.
    fn record(&mut self, losses: &[f32]) -> Result<Vec<f32>> {
        if losses.len() != self.running.len() {
            return Err(Error::Device(format!(
                "{} losses came back for {} running members",
                losses.len(),
                self.running.len()
            )));
        }
        for (&m, &l) in self.running.iter().zip(losses) {
            self.last[m] = l as f64;
        }
        Ok(self.last.iter().filter(|v| !v.is_nan()).map(|&v| v as f32).collect())
    }

    /// At a check step: which running members go on.
    fn check(&mut self, rule: &EarlyStop) -> Vec<bool> {
        let back = rule.window / rule.every.max(1);
        self.running
            .iter()
            .map(|&m| {
                let best = self.best[m].last().map_or(self.last[m], |&b| b.min(self.last[m]));
                self.best[m].push(best);
                let h = &self.best[m];
                !(back > 0 && h.len() > back && rule.done(h[h.len() - 1 - back], best))
            })
            .collect()
    }
}

/// Run `iterations` steps of `stepper`. `progress` returns false to cancel. The host's event loop
/// gets a turn at every report (see `runtime::yield_to_host`), so a cancel sent meanwhile is seen.
pub async fn drive<S: Stepper>(
    mut stepper: S,
    config: &InversionConfig,
    cadence: Cadence,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Inversion> {
    let start = web_time::Instant::now();
    timing::note(|t, _| t.inversions += 1);
    let mut schedule = Schedule::new(cadence);
    let mut loss_curve = Vec::new();
    let mut members = Members::new(config.members);
    // A timed cadence leaves the latest request in flight while the next steps run.
    let in_flight = usize::from(matches!(cadence, Cadence::Timed(_)));
    let mut pending = 0;
    let mut step = 0;
    while step < config.iterations {
        // Up to the next step where anything is read: a report, a check or the last.
        let from = step + 1;
        let check_at = config.early_stop.map_or(usize::MAX, |rule| {
            let every = rule.every.max(1);
            from.div_ceil(every).saturating_mul(every)
        });
        step = schedule.next_due(from, config.iterations).min(check_at);
        let adams: Vec<AdamStep> = (from..=step).map(|s| AdamStep::at(&config.optimiser, s)).collect();
        let issuing = web_time::Instant::now();
        stepper.steps(&adams)?;
        let issued = issuing.elapsed().as_secs_f64();
        timing::note(|t, _| {
            t.steps += adams.len();
            t.issue_seconds += issued;
        });
        let check = config
            .early_stop
            .filter(|rule| step % rule.every.max(1) == 0 && step < config.iterations);
        let due = schedule.due(step, config.iterations);
        if due || check.is_some() {
            if due {
                schedule.planned(step);
            }
            stepper.request_losses(step)?;
            pending += 1;
            // A check needs this step's losses now; so does the last step.
            let keep = if step == config.iterations || check.is_some() {
                0
            } else {
                in_flight
            };
            while pending > keep {
                let (s, losses) = timing::timed(stepper.take_losses(), read)
                    .await?
                    .ok_or_else(|| Error::Device("a requested loss readback went missing".into()))?;
                pending -= 1;
                timing::note(|t, now| {
                    t.first_loss_seconds.get_or_insert(now);
                });
                let all = members.record(&losses)?;
                record_step(s, config.iterations, &all, start, &mut loss_curve, progress)?;
                schedule.reported(s, start.elapsed().as_secs_f64());
            }
            if let Some(rule) = check {
                let keep = members.check(&rule);
                if keep.iter().any(|&k| !k) {
                    let (x, probs) = timing::timed(stepper.retire(&keep), read).await?;
                    let (running, stopped) = split_members(&members.running, 1, &keep);
                    // A regression's rows carry their label besides the probabilities' blocks.
                    let (len, plen) = (x.len() / stopped.len(), probs.len() / stopped.len());
                    for (i, &m) in stopped.iter().enumerate() {
                        let p = probs[i * plen..(i + 1) * plen].to_vec();
                        members.stopped[m] = Some((x[i * len..(i + 1) * len].to_vec(), p));
                        members.steps[m] = step;
                    }
                    members.running = running;
                }
                if members.running.is_empty() {
                    break;
                }
            }
            crate::runtime::yield_to_host().await;
        }
    }
    let (x_run, probs_run) = if members.running.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        timing::timed(stepper.finish(), read).await?
    };
    let len = config.batch * config.d;
    let plen = probs_run.len() / members.running.len().max(1);
    for (i, &m) in members.running.iter().enumerate() {
        let p = probs_run[i * plen..(i + 1) * plen].to_vec();
        members.stopped[m] = Some((x_run[i * len..(i + 1) * len].to_vec(), p));
        members.steps[m] = config.iterations;
    }
    let mut x = Vec::with_capacity(config.members * len);
    let mut probs = Vec::new();
    for (mx, mp) in members.stopped.into_iter().map(|o| o.expect("every member ends")) {
        x.extend(mx);
        probs.extend(mp);
    }
    if x.iter().any(|v| !v.is_finite()) {
        return Err(Error::NonFinite("reconstructed rows hold NaN or infinity".into()));
    }
    Ok(Inversion {
        x,
        probs,
        loss_curve,
        steps: members.steps,
    })
}

/// A readback awaited for `secs` (`timing::timed`).
fn read(t: &mut StepTiming, secs: f64) {
    t.readbacks += 1;
    t.wait_seconds += secs;
}

/// Uniform U(−1, 1) start, seeded.
pub fn initial_rows(len: usize, seed: u64) -> Vec<f32> {
    use rand::{Rng, SeedableRng, rngs::StdRng};
    let mut rng = StdRng::seed_from_u64(seed);
    (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// The starts of the members this call inverts: a slice of the whole ensemble's one seeded draw.
pub fn member_starts(config: &InversionConfig) -> Vec<f32> {
    let len = config.batch * config.d;
    if let Some(starts) = &config.starts {
        return starts[config.first_member * len..(config.first_member + config.members) * len].to_vec();
    }
    let mut z = initial_rows((config.first_member + config.members) * len, config.seed);
    z.drain(..config.first_member * len);
    z
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stepper that only counts: what the driver asks of every engine.
    struct Counter {
        steps: usize,
        requested: std::collections::VecDeque<usize>,
    }

    impl Stepper for Counter {
        fn step(&mut self, _: &AdamStep) -> Result<()> {
            self.steps += 1;
            Ok(())
        }
        fn request_losses(&mut self, step: usize) -> Result<()> {
            assert_eq!(step, self.steps, "losses are requested for the step just taken");
            self.requested.push_back(step);
            Ok(())
        }
        async fn take_losses(&mut self) -> Result<Option<(usize, Vec<f32>)>> {
            Ok(self.requested.pop_front().map(|s| (s, vec![1.0 / s as f32])))
        }
        async fn retire(&mut self, _: &[bool]) -> Result<(Vec<f32>, Vec<f32>)> {
            unreachable!("no early stopping here")
        }
        async fn finish(self) -> Result<(Vec<f32>, Vec<f32>)> {
            Ok((vec![0.0], Vec::new()))
        }
    }

    fn config(iterations: usize) -> InversionConfig {
        InversionConfig {
            members: 1,
            first_member: 0,
            batch: 1,
            d: 1,
            iterations,
            optimiser: Optimiser::default(),
            seed: 0,
            report_every: 10,
            early_stop: None,
            starts: None,
        }
    }

    fn counter() -> Counter {
        Counter {
            steps: 0,
            requested: Default::default(),
        }
    }

    fn run(cadence: Cadence, iterations: usize) -> Vec<usize> {
        let inv = pollster::block_on(drive(counter(), &config(iterations), cadence, &mut |_| true)).unwrap();
        inv.loss_curve.iter().map(|&(s, _)| s).collect()
    }

    #[test]
    fn every_n_reports_the_first_every_nth_and_the_last_step() {
        assert_eq!(run(Cadence::Every(10), 35), vec![1, 10, 20, 30, 35]);
        assert_eq!(run(Cadence::Every(1), 3), vec![1, 2, 3]);
    }

    #[test]
    fn a_timed_cadence_widens_when_steps_are_fast_and_records_every_request() {
        // The counter's steps take no time: the interval grows to its cap.
        let steps = run(Cadence::Timed(10), 5000);
        assert_eq!(steps.first(), Some(&1));
        assert_eq!(steps.last(), Some(&5000));
        assert!(steps.len() < 5000 / 10, "{} reports", steps.len());
        assert!(steps.windows(2).all(|w| w[1] - w[0] <= MAX_REPORT_STEPS));
    }

    #[test]
    fn a_probe_reports_after_the_warm_up_two_steps_later_and_at_the_last_step() {
        assert_eq!(run(Cadence::Probe(2), 10), vec![2, 4, 10]);
        assert_eq!(run(Cadence::Probe(2), 4), vec![2, 4]);
    }

    /// Member 0's loss keeps falling by 1 every 200 steps; member 1's is flat from the start.
    struct TwoMembers {
        steps: usize,
        running: Vec<usize>,
        requested: std::collections::VecDeque<(usize, Vec<f32>)>,
    }

    impl Stepper for TwoMembers {
        fn step(&mut self, _: &AdamStep) -> Result<()> {
            self.steps += 1;
            Ok(())
        }
        fn request_losses(&mut self, step: usize) -> Result<()> {
            let losses = self
                .running
                .iter()
                .map(|&m| if m == 0 { 10.0 - step as f32 / 200.0 } else { 1.0 })
                .collect();
            self.requested.push_back((step, losses));
            Ok(())
        }
        async fn take_losses(&mut self) -> Result<Option<(usize, Vec<f32>)>> {
            Ok(self.requested.pop_front())
        }
        async fn retire(&mut self, keep: &[bool]) -> Result<(Vec<f32>, Vec<f32>)> {
            assert!(self.requested.is_empty(), "no request crosses a retirement");
            let gone: Vec<f32> = self
                .running
                .iter()
                .zip(keep)
                .filter(|(_, k)| !**k)
                .map(|(&m, _)| m as f32)
                .collect();
            self.running = self
                .running
                .iter()
                .zip(keep)
                .filter(|(_, k)| **k)
                .map(|(&m, _)| m)
                .collect();
            Ok((gone, Vec::new()))
        }
        async fn finish(self) -> Result<(Vec<f32>, Vec<f32>)> {
            Ok((self.running.iter().map(|&m| m as f32).collect(), Vec::new()))
        }
    }

    #[test]
    fn a_member_that_stops_improving_stops_and_the_rest_run_on() {
        let mut c = config(1000);
        c.members = 2;
        c.early_stop = Some(EARLY_STOP);
        let stepper = TwoMembers {
            steps: 0,
            running: vec![0, 1],
            requested: Default::default(),
        };
        let inv = pollster::block_on(drive(stepper, &c, Cadence::Timed(10), &mut |_| true)).unwrap();
        // Member 1 is flat: it stops at the first check with a whole window behind it.
        assert_eq!(inv.steps, vec![1000, EARLY_STOP.window + EARLY_STOP.every]);
        // Each member's rows are where the stepper left them, in member order.
        assert_eq!(inv.x, vec![0.0, 1.0]);
        // The curve's mean keeps the stopped member at its last loss.
        assert!((inv.loss_curve.last().unwrap().1 - (5.0 + 1.0) / 2.0).abs() < 1e-6);
    }

    #[test]
    fn cancelling_stops_at_a_report() {
        let err = pollster::block_on(drive(counter(), &config(100), Cadence::Every(10), &mut |p| p.step < 20));
        assert!(matches!(err, Err(Error::Cancelled)));
    }
}

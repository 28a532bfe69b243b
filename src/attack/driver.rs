//! The optimisation loop of an inversion, written once for every engine that runs its steps (the
//! definition on burn tensors, the fused CPU kernel, the GPU kernels): Adam's constants per step,
//! when the losses are read back, progress, cancellation and the loss curve.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::pointwise::AdamStep;
use crate::config::Optimiser;
use crate::error::{Error, Result};

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

/// Result: the members' final relaxed rows (and block probabilities), [N, B, d] row-major.
pub struct Inversion {
    pub x: Vec<f32>,
    pub probs: Vec<f32>,
    pub loss_curve: Vec<(usize, f64)>,
}

/// One engine's state of an inversion: every member's rows and Adam moments, wherever they live.
#[allow(async_fn_in_trait)] // used with concrete types only, never boxed or sent
pub trait Stepper {
    /// One step of every member: the objective's gradient at z, then Adam's update of z.
    fn step(&mut self, adam: &AdamStep) -> Result<()>;
    /// Note the members' losses at the step just taken, to be read by `take_losses`. A GPU starts
    /// the copy here and the driver keeps the device busy while it completes.
    fn request_losses(&mut self, step: usize) -> Result<()>;
    /// The oldest requested losses (step, one per member).
    async fn take_losses(&mut self) -> Result<Option<(usize, Vec<f32>)>>;
    /// The members' final relaxed rows and block probabilities ([N, B, d] each; probs empty
    /// without a relaxation).
    async fn finish(self) -> Result<(Vec<f32>, Vec<f32>)>;
}

/// When the losses are read back. `Every` reads at the first step, every n-th and the last: the
/// CPU's reads are free, and tests compare loss curves step for step. `Timed` (GPUs) starts at n
/// and widens the interval until reports are at least `MIN_REPORT_SECONDS` apart, so a browser
/// whose `mapAsync` takes 100 ms never leaves the device waiting on it; the read is pipelined one
/// report behind, so a report's cost is its copy, not its latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cadence {
    Every(usize),
    Timed(usize),
    /// After step n, after step n + 2 and at the last: timing a few steps after a warm-up
    /// (`plan`'s probes), with an early look so a slow backend can be cut short.
    Probe(usize),
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

/// Run `iterations` steps of `stepper`. `progress` returns false to cancel. The host's event loop
/// gets a turn at every report (see `runtime::yield_to_host`), so a cancel sent meanwhile is seen.
pub async fn drive<S: Stepper>(
    mut stepper: S,
    config: &InversionConfig,
    cadence: Cadence,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Inversion> {
    let start = web_time::Instant::now();
    let mut schedule = Schedule::new(cadence);
    let mut loss_curve = Vec::new();
    // A timed cadence leaves the latest request in flight while the next steps run.
    let in_flight = usize::from(matches!(cadence, Cadence::Timed(_)));
    let mut pending = 0;
    for step in 1..=config.iterations {
        stepper.step(&AdamStep::at(&config.optimiser, step))?;
        if schedule.due(step, config.iterations) {
            schedule.planned(step);
            stepper.request_losses(step)?;
            pending += 1;
            let keep = if step == config.iterations { 0 } else { in_flight };
            while pending > keep {
                let (s, losses) = stepper
                    .take_losses()
                    .await?
                    .ok_or_else(|| Error::Device("a requested loss readback went missing".into()))?;
                pending -= 1;
                record_step(s, config.iterations, &losses, start, &mut loss_curve, progress)?;
                schedule.reported(s, start.elapsed().as_secs_f64());
            }
            crate::runtime::yield_to_host().await;
        }
    }
    let (x, probs) = stepper.finish().await?;
    if x.iter().any(|v| !v.is_finite()) {
        return Err(Error::NonFinite("reconstructed rows hold NaN or infinity".into()));
    }
    Ok(Inversion { x, probs, loss_curve })
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

    #[test]
    fn cancelling_stops_at_a_report() {
        let err = pollster::block_on(drive(counter(), &config(100), Cadence::Every(10), &mut |p| p.step < 20));
        assert!(matches!(err, Err(Error::Cancelled)));
    }
}

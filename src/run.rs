//! One attack end to end, as every surface calls it: the scenario, the inversion (whole, or a
//! share of the ensemble on one of a page's workers), the assessment. `flow` is the one place that
//! sends each attack (`AttackSpec`) to its scenario and its assessment; what an attack is otherwise
//! is asked of it through `attack::registry`.
use crate::assess::stopping;
use crate::attack::attribute::{self, settings::AttributeSettings};
use crate::attack::cafe;
use crate::attack::inversion::driver::{Cadence, Progress, timing};
use crate::attack::inversion::ensemble::{self, Members};
use crate::attack::inversion::setup::Setup;
use crate::config::{AttackConfig, AttackSpec, MemberRange};
use crate::error::{Error, Result};
use crate::received::ReceivedUpdate;
use crate::report::Report;
use crate::report::reconstruction::ReconstructionReport;
use crate::runtime::{MeasuredRate, Runtime};
use crate::scenario::Scenario;
use crate::table::Dataset;

mod early;
pub use early::EarlyAnswer;
use early::{EARLY_ANSWER_STEPS, answer_early, answer_from, early_answer_stages};

/// How an attack goes from a table to a report.
enum Flow<'c> {
    /// Its own simulation and solution, whole (CAFE).
    Whole(&'c cafe::settings::CafeSettings),
    /// The client's rows reconstructed, matched and scored (TabLeak, the baselines).
    Rows,
    /// One column of the client's known rows (the attribute attack).
    Attribute(&'c AttributeSettings),
}

fn flow(config: &AttackConfig) -> Flow<'_> {
    match &config.attack {
        AttackSpec::Tableak(_) | AttackSpec::Cosine | AttackSpec::Dlg | AttackSpec::Random => Flow::Rows,
        AttackSpec::Attribute(a) => Flow::Attribute(a),
        AttackSpec::Cafe(c) => Flow::Whole(c),
    }
}

/// The checked configuration's scenario, set up for inversion.
pub(crate) async fn prepare<'a>(
    runtime: &'a Runtime,
    dataset: &'a Dataset,
    config: &'a AttackConfig,
) -> Result<Setup<'a>> {
    config.validate(dataset)?;
    let scenario = match flow(config) {
        Flow::Rows => Scenario::of_rows(dataset, config).await?,
        Flow::Attribute(a) => attribute::view::scenario(dataset, config, a).await?,
        Flow::Whole(_) => {
            return Err(Error::Config(
                "CAFE has no ensemble to invert in shares: run it whole (run_attack)".into(),
            ));
        }
    };
    Ok(Setup::new(runtime, dataset, config, scenario))
}

/// The inverted ensemble (None: the attack inverts nothing) scored into the report; a shadow
/// client's calibration first where the attack falls back to the marginals (`assess::fallback`).
async fn assess(
    setup: &Setup<'_>,
    inverted: Option<Members>,
    seconds: f64,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Report> {
    match flow(setup.config) {
        Flow::Rows => {
            let recon = setup.reconstruction(inverted, progress).await?;
            let calibration = setup.fallback(&recon, progress).await?;
            let mut report = setup.report_rows(recon, calibration, seconds)?;
            setup.put_cells_shown(&mut report).await?;
            Ok(report)
        }
        Flow::Attribute(a) => {
            let inverted = inverted.ok_or_else(|| Error::Config("the attribute attack inverts".into()))?;
            setup.assess_attribute(a, inverted, seconds)
        }
        Flow::Whole(_) => Err(Error::Config("CAFE is assessed as it runs".into())),
    }
}

/// Run one attack on one batch. `progress` is called now and then; returning false cancels.
pub async fn run_attack(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Report> {
    timing::start();
    let report = run_timed(runtime, dataset, config, progress).await;
    let timing = timing::take();
    report.map(|r| Report { timing, ..r })
}

async fn run_timed(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Report> {
    let start = web_time::Instant::now();
    if let Flow::Whole(c) = flow(config) {
        config.validate(dataset)?;
        return cafe::run::run(runtime, dataset, config, c, progress);
    }
    let mut setup = prepare(runtime, dataset, config).await?;
    // The stages that may run (the early answer's steps, the full run, the shadow client's run)
    // reported as one count of steps over all of them, so that progress never goes back.
    let early = may_answer_early(&setup);
    let shadow = matches!(flow(config), Flow::Rows) && setup.wants_fallback();
    // FedAvg in a known or chosen order may run the batch's ensemble, and the shadow's, again
    // (`assess::refine`): each such stage after the first adds its steps.
    let again = usize::from(matches!(flow(config), Flow::Rows) && setup.may_run_again());
    let iterations = config.iterations;
    let first = if early { EARLY_ANSWER_STEPS } else { 0 };
    // A reshuffling client's thresholds may be weighed on more shadow batches (`fallback::draws`).
    let batches = match shadow && setup.weighs_shadow_draws() {
        true => crate::assess::fallback::SHADOW_DRAWS as usize,
        false => 1,
    };
    let planned = first + iterations * (1 + again + if shadow { (1 + again) * batches } else { 0 });
    let at = |before: usize, p: &Progress| Progress {
        step: before + p.step,
        of: planned,
        ..p.clone()
    };
    if early && let Some(report) = answer_early(&mut setup, &mut |p| progress(&at(0, p)), start).await? {
        return Ok(report);
    }
    let inverted = match setup.members {
        0 => None,
        _ => Some(invert_ensemble(&mut setup, &mut |p| progress(&at(first, p))).await?),
    };
    let seconds = start.elapsed().as_secs_f64();
    // The stages after the inversion (a rerun, the shadow, its rerun) each start their steps
    // again: each new stage counts on from where the last one planned to end.
    let mut stages = Stages::default();
    let mut staged = |p: &Progress| {
        let stage = stages.of(p);
        progress(&at(first + iterations * (1 + stage), p))
    };
    let report = assess(&setup, inverted, seconds, &mut staged).await?;
    // The shadow client's run is part of the attack's time.
    Ok(Report {
        seconds: start.elapsed().as_secs_f64(),
        ..report
    })
}

/// The stages of a run after its inversion, as its progress reports them: a new one where the
/// phase changes, or where its steps start again within one phase (the rows left inverted
/// again round after round, `assess::misfits`), so that progress never goes back.
#[derive(Default)]
struct Stages {
    stage: usize,
    last: Option<(String, usize)>,
}

impl Stages {
    /// The stage `p` belongs to, counted from 0.
    fn of(&mut self, p: &Progress) -> usize {
        if self
            .last
            .as_ref()
            .is_some_and(|(phase, step)| *phase != p.phase || p.step < *step)
        {
            self.stage += 1;
        }
        self.last = Some((p.phase.clone(), p.step));
        self.stage
    }
}

/// The whole ensemble inverted, or by its stopping rule where the setup runs it so (the setup
/// then holds the members pooled and the rounds).
async fn invert_ensemble(setup: &mut Setup<'_>, progress: &mut dyn FnMut(&Progress) -> bool) -> Result<Members> {
    if !setup.stops_members() {
        let all = MemberRange {
            first: 0,
            count: setup.members,
        };
        return setup.invert(all, progress).await;
    }
    let (inverted, rounds) = setup.invert_in_rounds(progress).await?;
    setup.members = rounds.members;
    setup.rounds = Some(rounds);
    Ok(inverted)
}

/// Whether the attack may answer early: an unperturbed update, members allowed to stop early,
/// steps to save, and a proof that can reach every row (`Setup::may_prove_batch`: a relaxed
/// inversion composing a proof, on FedSGD; at B = 128 on the default network neither layer's
/// can, and trying cost a fifth more time).
fn may_answer_early(setup: &Setup<'_>) -> bool {
    let config = setup.config;
    matches!(flow(config), Flow::Rows)
        && config.early_stop
        && !setup.perturbed()
        && config.iterations >= 2 * EARLY_ANSWER_STEPS
        && setup.may_prove_batch()
}

/// Where a split run may answer early, how (`EarlyAnswer`); None where it may not.
pub async fn early_answer(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    shares: usize,
) -> Result<Option<EarlyAnswer>> {
    if !matches!(flow(config), Flow::Rows) {
        return Ok(None);
    }
    let setup = prepare(runtime, dataset, config).await?;
    Ok(may_answer_early(&setup).then(|| EarlyAnswer {
        steps: EARLY_ANSWER_STEPS,
        planned: EARLY_ANSWER_STEPS + config.iterations,
        stages: crate::plan::split_each(early_answer_stages(config, setup.members), shares),
    }))
}

/// The report of the early answer's stages inverted so far (`EarlyAnswer::stages`; `parts`:
/// every share of them, run with the early answer's steps), where every row is then proved; None
/// where not, and the next stage runs, or after the last the shares run in full.
pub async fn assess_early(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    parts: Vec<Members>,
    seconds: f64,
    workers: usize,
) -> Result<Option<Report>> {
    let mut setup = prepare(runtime, dataset, config).await?;
    setup.backend = setup.backend.clone().with_workers(workers);
    answer_from(&mut setup, parts, seconds, &mut |_| true).await
}

/// A split run's rounds where its ensemble runs by the stopping rule (`assess::stopping`): each
/// round's members in `shares` pieces (the pieces `plan::shares` would give, at most), in order;
/// None where the rule does not apply (the shares then invert the whole ensemble at once).
pub async fn ensemble_rounds(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    shares: usize,
) -> Result<Option<Vec<Vec<MemberRange>>>> {
    if !matches!(flow(config), Flow::Rows) {
        return Ok(None);
    }
    let setup = prepare(runtime, dataset, config).await?;
    Ok(setup
        .stops_members()
        .then(|| crate::plan::split_each(stopping::rounds(setup.members), shares)))
}

/// The report of the rounds a split run inverted so far (`ensemble_rounds`; `parts`: every
/// share of them), where the stopping rule stops there or every member has run; None where the
/// next round is due. `shadow` and `seconds` as `assess_members` takes them; `workers`: the
/// workers that ran them.
pub async fn assess_round(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    parts: Vec<Members>,
    shadow: Option<Vec<Members>>,
    seconds: f64,
    workers: usize,
) -> Result<Option<Report>> {
    let start = web_time::Instant::now();
    let mut setup = prepare(runtime, dataset, config).await?;
    setup.shadow_parts = shadow;
    let Some((joined, rounds)) = setup.settled(parts).await? else {
        return Ok(None);
    };
    setup.backend = setup.backend.clone().with_workers(workers);
    setup.members = rounds.members;
    setup.rounds = Some(rounds);
    let report = assess(&setup, Some(joined), seconds, &mut |_| true).await?;
    Ok(Some(Report {
        seconds: seconds + start.elapsed().as_secs_f64(),
        ..report
    }))
}

/// Attack an update received from elsewhere (see `received`) with the table's encoding as
/// `dataset` (no rows): the reconstruction and its confidence, without accuracy.
pub async fn attack_received(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    received: &ReceivedUpdate,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<ReconstructionReport> {
    let start = web_time::Instant::now();
    let (setup, inverted) = invert_received(runtime, dataset, config, received, progress).await?;
    let report = setup
        .assess_received(inverted, start.elapsed().as_secs_f64(), progress)
        .await?;
    // The proofs and the pooling are part of the attack's time.
    Ok(ReconstructionReport {
        seconds: start.elapsed().as_secs_f64(),
        ..report
    })
}

/// A received update's attack set up and its whole ensemble inverted, as a server runs it: what
/// `attack_received` reports (`received::truth` rewrites the update once, for its recipe check
/// too, and calls `invert_in_dataset_terms`).
pub async fn invert_received<'a>(
    runtime: &'a Runtime,
    dataset: &'a Dataset,
    config: &'a AttackConfig,
    received: &ReceivedUpdate,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<(Setup<'a>, Members)> {
    let received = crate::received::pipeline::in_dataset_terms(dataset, config, received)?;
    invert_in_dataset_terms(runtime, dataset, config, &received, progress).await
}

/// `invert_received` on an update already in `dataset`'s terms (`received::pipeline`).
pub async fn invert_in_dataset_terms<'a>(
    runtime: &'a Runtime,
    dataset: &'a Dataset,
    config: &'a AttackConfig,
    received: &ReceivedUpdate,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<(Setup<'a>, Members)> {
    config.validate_for_update(dataset)?;
    if let Some(why) = config.attacker().refuses_received() {
        return Err(Error::Config(why.into()));
    }
    let scenario = Scenario::received(dataset, config, received)?;
    let mut setup = Setup::new(runtime, dataset, config, scenario);
    let inverted = invert_ensemble(&mut setup, progress).await?;
    Ok((setup, inverted))
}

/// The proofs alone, on rows given in place of the ensemble's: a received update's attack set up
/// as `attack_received` sets it up, its members replaced by `members` (each a reconstruction of
/// the client's batch, as many rows as it holds), then pooled, certified, peeled and reported as
/// the attack's own would be. Nothing is inverted. What it calls proved is held to the same
/// theorem as in any attack: tests hand it points built to break the proofs (points between
/// rows, combinations of rows), and a server can check rows it holds against an update.
pub async fn prove_candidates(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    received: &ReceivedUpdate,
    members: &[Vec<Vec<crate::table::Value>>],
) -> Result<ReconstructionReport> {
    let start = web_time::Instant::now();
    let received = crate::received::pipeline::in_dataset_terms(dataset, config, received)?;
    config.validate_for_update(dataset)?;
    let rows = config.rows();
    if members.is_empty() || members.iter().any(|m| m.len() != rows) {
        return Err(Error::Config(format!(
            "each candidate reconstruction holds the batch's {rows} rows"
        )));
    }
    let scenario = Scenario::received(dataset, config, &received)?;
    let mut setup = Setup::new(runtime, dataset, config, scenario);
    setup.members = members.len();
    let x: Vec<f32> = members
        .iter()
        .flat_map(|m| crate::table::encode_rows(dataset, m))
        .collect();
    // A categorical cell's block probabilities as its one-hot; continuous entries are not read.
    let probs: Vec<f32> = members
        .iter()
        .flatten()
        .flat_map(|row| {
            let mut p = vec![0f32; dataset.d()];
            for (f, feature) in dataset.features.iter().enumerate() {
                if let crate::table::Value::Cat(c) = row[f] {
                    p[feature.offset + c as usize] = 1.0;
                }
            }
            p
        })
        .collect();
    let inverted = Members {
        range: MemberRange {
            first: 0,
            count: members.len(),
        },
        x,
        probs,
        loss_curve: Vec::new(),
        steps: vec![0; members.len()],
    };
    let report = setup.assess_received(inverted, 0.0, &mut |_| true).await?;
    Ok(ReconstructionReport {
        seconds: start.elapsed().as_secs_f64(),
        ..report
    })
}

/// Invert a share of the ensemble only (see `MemberRange`); `assess_members` joins the shares.
pub async fn invert_members(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    range: MemberRange,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Members> {
    let setup = prepare(runtime, dataset, config).await?;
    setup.invert(range, progress).await
}

/// Where a split run inverts the shadow client's members in shares too
/// (`Setup::shadow_in_shares`): the shares for up to `shares` workers; None where the run
/// calibrates on the worker that joins, if at all. `members`: the members the client's ensemble
/// pooled (`settled_members`, where its stopping rule ran), which the shadow runs as many of
/// (`assess::fallback`); None: the whole ensemble, whose first members serve any count.
pub async fn shadow_shares(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    shares: usize,
    members: Option<usize>,
) -> Result<Option<Vec<MemberRange>>> {
    if !matches!(flow(config), Flow::Rows) {
        return Ok(None);
    }
    let setup = prepare(runtime, dataset, config).await?;
    let most = config.members();
    let count = members.unwrap_or(most);
    if count == 0 || count > most {
        return Err(Error::Config(format!(
            "the shadow client runs 1 to {most} members, not {count}"
        )));
    }
    let all = MemberRange { first: 0, count };
    Ok(setup.shadow_in_shares().then(|| crate::plan::split(all, shares)))
}

/// Where a split run's ensemble runs by its stopping rule (`ensemble_rounds`): the members it
/// pools once the rounds inverted so far (`parts`) settle it, or None where the next round is
/// due. `assess_round` then reports on the same parts.
pub async fn settled_members(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    parts: Vec<Members>,
) -> Result<Option<usize>> {
    let setup = prepare(runtime, dataset, config).await?;
    Ok(setup.settled(parts).await?.map(|(_, rounds)| rounds.members))
}

/// Members `range` of the shadow client's ensemble (`shadow_shares`): one worker's share.
pub async fn invert_shadow(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    range: MemberRange,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Members> {
    let setup = prepare(runtime, dataset, config).await?;
    let (shadow, _) = setup.shadow_setup(dataset).await?;
    shadow.invert_as_shadow(range, progress).await
}

/// The report of an ensemble inverted in shares: the same as `run_attack` on one worker would give.
/// `seconds` is the wall time the caller measured across its workers; the time this takes (the
/// proofs, pooling, the shadow client) is added to it.
/// `shadow`: the shadow client's members where the workers inverted them (`shadow_shares`).
pub async fn assess_members(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    parts: Vec<Members>,
    shadow: Option<Vec<Members>>,
    seconds: f64,
) -> Result<Report> {
    let start = web_time::Instant::now();
    let mut setup = prepare(runtime, dataset, config).await?;
    setup.backend = setup.backend.clone().with_workers(parts.len());
    setup.shadow_parts = shadow;
    let joined = ensemble::join(setup.shape(), parts)?;
    // A split run's shadow client runs here, on the worker that joins the shares, unless the
    // workers inverted it (`shadow`).
    let report = assess(&setup, Some(joined), seconds, &mut |_| true).await?;
    Ok(Report {
        seconds: seconds + start.elapsed().as_secs_f64(),
        ..report
    })
}

/// Time `warmup + steps` steps of members `range` of this attack on `runtime`: the rate of the
/// timed steps (the warm-up pays compilation and allocation), for `plan::decide`. A backend whose
/// first two timed steps show the rest would take more than `plan::PROBE_SECONDS` is cut short
/// there and rated on those two.
pub async fn time_steps(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    range: MemberRange,
    warmup: usize,
    steps: usize,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<MeasuredRate> {
    let setup = prepare(runtime, dataset, config).await?;
    setup.check_range(range)?;
    let warmup = warmup.max(1);
    let probe = AttackConfig {
        iterations: warmup + steps.max(2),
        early_stop: false,
        ..config.clone()
    };
    let mut marks: Vec<(usize, f64)> = Vec::new();
    let mut cut_short = false;
    let phase = format!("time {}", runtime.kind().name());
    let mut record = |p: &Progress| {
        marks.push((p.step, p.elapsed));
        if let [.., (s0, t0), (s1, t1)] = marks[..]
            && s0 == warmup
            && s1 < probe.iterations
        {
            let left = (probe.iterations - s1) as f64 * (t1 - t0) / (s1 - s0) as f64;
            if left > crate::plan::PROBE_SECONDS {
                cut_short = true;
                return false;
            }
        }
        progress(&Progress {
            phase: phase.clone(),
            ..p.clone()
        })
    };
    match setup
        .invert_with(range, &probe, Cadence::Probe(warmup), &mut record)
        .await
    {
        Ok(_) => {}
        Err(Error::Cancelled) if cut_short => {}
        Err(e) => return Err(e),
    }
    let (&(s0, t0), &(s1, t1)) = (marks.first().unwrap(), marks.last().unwrap());
    Ok(MeasuredRate {
        kind: runtime.kind(),
        adapter: runtime.info.adapter.clone(),
        steps_per_second: (s1 - s0) as f64 / (t1 - t0).max(1e-9),
        steps: s1 - s0,
        workers: 1,
        error: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A phase that starts its steps again is a stage of its own, as a new phase is.
    #[test]
    fn progress_counts_a_phase_that_starts_again_as_a_new_stage() {
        let at = |phase: &str, step: usize| Progress {
            phase: phase.into(),
            step,
            of: 100,
            loss: None,
            elapsed: 0.0,
        };
        let mut stages = Stages::default();
        let reported = [
            ("refine", 10),
            ("refine", 20),
            ("rows left", 5),
            ("rows left", 9),
            ("rows left", 3),
            ("rows left", 8),
            ("shadow", 1),
        ];
        let seen: Vec<usize> = reported
            .into_iter()
            .map(|(phase, step)| stages.of(&at(phase, step)))
            .collect();
        assert_eq!(seen, [0, 0, 1, 1, 2, 2, 3]);
    }
}

//! The early answer: TabLeak's members pooled after `EARLY_ANSWER_STEPS` steps, and the report
//! from them where the proofs (and the rows left, inverted alone) settle every row, so that the
//! rest of the steps need not run; a split run's stages of it (a page's workers). `run` decides
//! where it may (`may_answer_early`) and serves a split run (`early_answer`, `assess_early`).
use crate::assess::stopping;
use crate::attack::inversion::driver::Progress;
use crate::attack::inversion::ensemble::{self, Members};
use crate::attack::inversion::setup::Setup;
use crate::config::{AttackConfig, MemberRange};
use crate::error::Result;
use crate::report::{AttackDetails, Report};

/// Steps after which TabLeak's ensemble is first pooled where it may prove the batch: at B = 32 on
/// Adult (seeds 0-2) every row was certified by then, where the full run takes 1500.
pub(super) const EARLY_ANSWER_STEPS: usize = 300;

/// TabLeak on an unperturbed gradient, with a proof to give: the ensemble pooled after
/// `EARLY_ANSWER_STEPS` steps, and the report from it where every row of the batch is then proved
/// (a proved row is the client's, so more steps cannot change it), or held by rows that explain
/// the update to its rounding (`Reconstruction::held_by_fit`: nothing after the pooling would
/// change them; on the Adult sample, seed 1, they were the batch), or, once every member has
/// run, where the rows no proof reached, inverted alone as the full run inverts them after its
/// ensemble (`assess::inverted_left`; not its rerun, `assess::refine`), are then held by the
/// update with the others (`proved_report`).
/// The members run in two stages
/// (`stopping::early_stages`): the first 5, proved alone where they can (at B = 32 on Adult, 9
/// seeds of 10), then the rest, proved with them. Otherwise None, and the attack runs in full as
/// it always has (the first steps' cost is the price of trying). Only where `may_answer_early`:
/// `early_stop` off runs every step.
pub(super) async fn answer_early(
    setup: &mut Setup<'_>,
    progress: &mut dyn FnMut(&Progress) -> bool,
    start: web_time::Instant,
) -> Result<Option<Report>> {
    let config = setup.config;
    let quick = AttackConfig {
        iterations: EARLY_ANSWER_STEPS,
        ..config.clone()
    };
    let (most, cadence) = (setup.members, setup.runtime.cadence(config.report_every));
    let mut parts = Vec::new();
    for stage in early_answer_stages(config, most) {
        let share = |p: &Progress| Progress {
            step: (stage.first * EARLY_ANSWER_STEPS + p.step * stage.count) / most,
            ..p.clone()
        };
        parts.push(
            setup
                .invert_with(stage, &quick, cadence, &mut |p| progress(&share(p)))
                .await?,
        );
        // The rows left's inversion (`proved_report`) holds progress at the stage's end.
        let done = stage.first + stage.count;
        let mut held = |p: &Progress| {
            progress(&Progress {
                step: done * EARLY_ANSWER_STEPS / most,
                ..p.clone()
            })
        };
        let report = answer_from(setup, parts.clone(), start.elapsed().as_secs_f64(), &mut held).await?;
        if let Some(report) = report {
            return Ok(Some(report));
        }
    }
    Ok(None)
}

/// The early answer's stages: the first 5 members, then the rest (`stopping::early_stages`),
/// where the ensemble is the engine's; all of a fixed one (`--ensemble N`) at once.
pub(super) fn early_answer_stages(config: &AttackConfig, most: usize) -> Vec<MemberRange> {
    match config.attacker().stops_members() {
        true => stopping::early_stages(most),
        false => vec![MemberRange { first: 0, count: most }],
    }
}

/// The report of the early answer's members inverted so far (`parts`, from the first member on)
/// where they prove every row, stating the members it took where they are not all.
pub(super) async fn answer_from(
    setup: &mut Setup<'_>,
    parts: Vec<Members>,
    seconds: f64,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Option<Report>> {
    let most = setup.members;
    let done = parts.iter().map(|p| p.range.count).sum();
    let joined = ensemble::join_first(setup.shape(), parts, done)?;
    setup.members = done;
    // The rows left are inverted alone only once every member has run: from the first 10, on a
    // table never seen (HI, [100, 100] trained 5 epochs, seed 4), a row the full run proved was
    // held consistent instead.
    let left = done == most;
    let report = proved_report(setup, joined, seconds, left, progress).await;
    setup.members = most;
    let mut report = report?;
    if let Some(AttackDetails::Rows(d)) = report.as_mut().map(|r| &mut r.details)
        && done < most
    {
        d.ensemble = Some(stopping::proved_by(done, most));
    }
    Ok(report)
}

/// The report of members inverted for `EARLY_ANSWER_STEPS` steps where every row is then proved
/// or held by the update; once every member has run (`left`), the rows no proof reached are
/// inverted alone first. At B = 32 on full Adult (untrained seed 8; [100, 100] trained 5 and 20
/// epochs, seeds 0-9) and HI ([100, 100] trained 5 and 20 epochs, seeds 0-4), the full run
/// proved and held as many rows from its members as these members did.
/// `seconds`: the time until the members were inverted; the proof's own time is added to it (at
/// B = 32 on Adult it is most of the attack).
async fn proved_report(
    setup: &Setup<'_>,
    inverted: Members,
    seconds: f64,
    left: bool,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Option<Report>> {
    let proving = web_time::Instant::now();
    let mut recon = setup.reconstruct_once(inverted).await?;
    // Rows settled, or held by rows that explain the update to its rounding: nothing after the
    // pooling changes them (`assess::inverted_left` runs after neither) but the guess of the rows
    // the update cannot see.
    if !(recon.all_settled() || recon.held_by_fit()) {
        if !left {
            return Ok(None);
        }
        // Otherwise the last of what the full run does after its ensemble: the rows left
        // inverted alone against what the held rows leave of the update, the consistent rows it
        // does not support with them. Not its rerun from the rows the update chose
        // (`assess::refine`, where that choice searched): a whole ensemble again, as costly as
        // the steps the early answer saves. The answer stands only where the update then holds
        // every row, and on the batches compared (`proved_report`'s) the full run, its rerun
        // included (the Adult sample's seed 2 kept one), proved and held the same rows.
        recon = setup.invert_left(recon, progress).await?;
        if !recon.provenance.iter().all(|p| p.held_by_update()) {
            return Ok(None);
        }
    } else {
        // As `invert_left` ends, so that the early answer's rows are the full run's. Where that
        // opens copies of proved rows, only the full run inverts them again: no early answer.
        let copies;
        (recon, copies) = setup.end_rows(recon);
        if copies > 0 {
            return Ok(None);
        }
    }
    let seconds = seconds + proving.elapsed().as_secs_f64();
    let mut report = setup.report_rows(recon, None, seconds)?;
    if let AttackDetails::Rows(d) = &mut report.details {
        d.answered_after = Some(EARLY_ANSWER_STEPS);
    }
    Ok(Some(report))
}

/// A split run's early answer (see `answer_early`): the steps its shares first run, the steps of
/// both stages together, and its stages, each split in up to `shares` pieces.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EarlyAnswer {
    pub steps: usize,
    pub planned: usize,
    pub stages: Vec<Vec<MemberRange>>,
}

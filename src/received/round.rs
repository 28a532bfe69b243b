//! A client's own round audited within a budget of work: the Flower Mod's one call. The round's
//! update is attacked whole where the work the engine counts for it (`plan::cost`) fits the
//! budget, and not at all where it does not: the verdict is decided from the problem's sizes
//! before anything runs, so it is the same on a quiet and on a busy machine. Where asked, a round
//! over budget has its first local batch attacked instead, and that figure is kept apart: it is
//! of a view the server never has.
use serde::{Deserialize, Serialize};

use super::ReceivedUpdate;
use super::truth::{ScoredUpdate, attack_received_against};
use crate::attack::Progress;
use crate::client::simulate::{Round, simulate_round};
use crate::config::{AttackConfig, Protocol};
use crate::error::{Error, Result};
use crate::plan::cost::WorkEstimate;
use crate::runtime::Runtime;
use crate::table::Dataset;

/// What the first local batch's figure says of the server's: nothing either way.
pub const FIRST_BATCH_BOUNDS: &str = "neither an upper nor a lower bound of what the server reconstructs: the server \
     never sees this gradient, only the round's update, which sums every local step's gradient at weights that \
     moved and so can give these rows away more or less than this one step does; it is what a server given the \
     first local batch's gradient alone would reconstruct (as from a FedSGD client of these rows)";

/// How much a round's audit may cost, in the engine's counted work.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RoundBudget {
    /// Most billions of floating-point operations an attack may count (None: no budget).
    pub gflop: Option<f64>,
    /// Attack the first local batch where the round passes the budget.
    pub first_batch: bool,
}

/// A round's audit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundAudit {
    /// The round's update attacked whole, scored against the client's rows; None where its work
    /// passed the budget.
    pub scored: Option<ScoredUpdate>,
    /// The work the engine counts for the round's attack.
    pub work: WorkEstimate,
    /// The budget it was held to (None: none).
    pub budget_gflop: Option<f64>,
    /// Why the round was not attacked (None where it was).
    pub skipped: Option<String>,
    /// The first local batch, where the round was not attacked and it was asked for.
    pub first_batch: Option<FirstBatch>,
}

/// The first local batch's gradient at the weights the server sent, attacked in place of a round
/// over budget: a figure of another view than the server's (`bounds`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirstBatch {
    /// The table's first rows, as many as a local step takes.
    pub rows: usize,
    pub work: WorkEstimate,
    /// Its attack scored against those rows; None where it was not attacked (`skipped`).
    pub scored: Option<ScoredUpdate>,
    pub skipped: Option<String>,
    /// What its figure says of the server's.
    pub bounds: String,
}

fn over(work: &WorkEstimate, budget: Option<f64>, what: &str) -> Option<String> {
    let limit = budget?;
    (work.gflop > limit).then(|| {
        let again = match work.runs {
            1 => String::new(),
            runs => format!(", {runs} runs where the ensemble runs again"),
        };
        let replays = match work.replays {
            0 => String::new(),
            r => format!(", {r} client updates replayed to choose rows"),
        };
        format!(
            "{what} counts {:.1} GFLOP ({} members × {} steps at most{again}{replays}), over the budget of {limit} \
             GFLOP",
            work.gflop, work.members, work.iterations
        )
    })
}

/// The work the engine counts for an audited attack: its optimisation, and as much again where
/// the attack falls back to the marginals, for the shadow client it then attacks too
/// (`received::truth`; counted whether or not every row is proved and the shadow is spared).
pub fn audited_work(config: &AttackConfig, dataset: &Dataset) -> WorkEstimate {
    let mut work = config.work(dataset).estimate();
    if config.priors().fallback && config.attacker().inversion().is_some_and(|i| i.relaxed) {
        work.gflop *= 2.0;
    }
    work
}

/// Audit a client's round: `config` is the attack's on the round (`ReceivedUpdate::attack_options`),
/// `truth` the rows the update was computed on, in order.
pub async fn audit_round(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    received: &ReceivedUpdate,
    truth: &Dataset,
    budget: RoundBudget,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<RoundAudit> {
    let work = audited_work(config, dataset);
    let Some(skipped) = over(&work, budget.gflop, "the round's attack") else {
        let scored = attack_received_against(runtime, dataset, config, received, truth, progress).await?;
        return Ok(RoundAudit {
            scored: Some(scored),
            work,
            budget_gflop: budget.gflop,
            skipped: None,
            first_batch: None,
        });
    };
    let first_batch = if budget.first_batch {
        Some(first_batch(runtime, dataset, config, received, truth, budget, progress).await?)
    } else {
        None
    };
    Ok(RoundAudit {
        scored: None,
        work,
        budget_gflop: budget.gflop,
        skipped: Some(skipped),
        first_batch,
    })
}

/// The round's first local batch attacked: the gradient of the table's first `local_batch` rows
/// at the weights the server sent (the client's first step where its rows come in the given
/// order), as a FedSGD server would attack it.
async fn first_batch(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    received: &ReceivedUpdate,
    truth: &Dataset,
    budget: RoundBudget,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<FirstBatch> {
    let b = match &config.protocol {
        Protocol::Fedavg(t) => t.local_batch.clamp(1, truth.n()),
        Protocol::Fedsgd => truth.n(),
    };
    // One gradient of b rows: the FedAvg client's local training has no part in it.
    let one = AttackConfig {
        batch_size: b,
        protocol: Protocol::Fedsgd,
        clients: 1,
        ..config.clone()
    };
    let work = audited_work(&one, dataset);
    let apart = |scored, skipped| FirstBatch {
        rows: b,
        work,
        scored,
        skipped,
        bounds: FIRST_BATCH_BOUNDS.into(),
    };
    if b == truth.n() {
        let why = "the first local batch is the whole round, so it is no smaller an attack".to_string();
        return Ok(apart(None, Some(why)));
    }
    if let Some(why) = over(&work, budget.gflop, "the first local batch's attack") {
        return Ok(apart(None, Some(why)));
    }
    let attacked = async {
        let (update, rows) = first_batch_update(received, truth, &one, b).await?;
        attack_received_against(runtime, dataset, &one, &update, &rows, progress).await
    };
    // What the engine cannot do with this view is said in the record; the round's audit stands.
    match attacked.await {
        Ok(scored) => Ok(apart(Some(scored), None)),
        Err(Error::Config(why)) => Ok(apart(
            None,
            Some(format!("the first local batch was not attacked: {why}")),
        )),
        Err(e) => Err(e),
    }
}

/// The update of the first `b` rows alone at the weights the server sent (one FedSGD step of the
/// client's model), with those rows.
async fn first_batch_update(
    received: &ReceivedUpdate,
    truth: &Dataset,
    config: &AttackConfig,
    b: usize,
) -> Result<(ReceivedUpdate, Dataset)> {
    if !received.embeddings.is_empty() {
        return Err(Error::Config(
            "the first local batch's gradient is not simulated for a network with embedding tables".into(),
        ));
    }
    let idx: Vec<usize> = (0..b).collect();
    // In the client's own inputs, as the network the server sent takes them.
    let x: Vec<f32> = idx
        .iter()
        .flat_map(|&i| truth.encode_for_client(&truth.rows[i]))
        .map(|v| v as f32)
        .collect();
    let model = config.model();
    let targets = truth.targets(&idx, model.head);
    let update = simulate_round(&received.params, &x, &targets, &Round::fedsgd(model)).await?;
    let own = Dataset {
        rows: truth.rows[..b].to_vec(),
        labels: truth.labels[..b].to_vec(),
        values: truth.values.get(..b).map(<[f64]>::to_vec).unwrap_or_default(),
        ..truth.clone()
    };
    let labels = truth
        .target
        .is_none()
        .then(|| own.labels.iter().map(|&l| truth.classes[l].clone()).collect());
    let first = ReceivedUpdate {
        params: received.params.clone(),
        update,
        embeddings: received.embeddings.clone(),
        rows: Some(b),
        labels,
    };
    Ok((first, own))
}

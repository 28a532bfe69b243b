//! Before an update is scored against the client's own rows, the recipe it was attacked under is
//! checked: the stated client (protocol, optimiser, local epochs and batches, order) is replayed on
//! those rows from the network the server sent, and its update compared with the one received. An
//! attack told the wrong recipe measures an attacker that does not exist; its accuracy is then not
//! what the server would reconstruct, and the record says so.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::ReceivedUpdate;
use crate::assess::matching::{Rule, match_rows};
use crate::client::simulate::{Round, simulate_round_in_orders};
use crate::config::{AttackConfig, Protocol, Unreplayable};
use crate::error::Result;
use crate::table::batch::encode_rows;
use crate::table::{Dataset, Value};

/// The largest relative gap ‖replayed − received‖ / ‖received‖ called a match: the replay runs in
/// float32, the client in float32 or float64 with its own order of sums (gaps of 4e-7 to 2.5e-5
/// measured, every optimiser); a recipe that leaves out a weight decay of 5e-4 is off by 4e-3 to
/// 8e-3, a momentum or the optimiser by 0.5 and more (docs/results/recipes.md).
pub const RECIPE_TOLERANCE: f64 = 1e-3;

/// Whether the stated recipe reproduces the received update on the client's rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RecipeCheck {
    /// true: it does; false: it does not (the accuracy is not the server's); null: not possible.
    pub matches: Option<bool>,
    /// ‖replayed − received‖ / ‖received‖ (null where not possible).
    pub relative_gap: Option<f64>,
    pub tolerance: f64,
    /// What was compared, or why it could not be.
    pub reason: String,
}

impl RecipeCheck {
    pub fn failed(&self) -> bool {
        self.matches == Some(false)
    }

    /// One sentence for the text report.
    pub fn sentence(&self) -> String {
        match (self.matches, self.relative_gap) {
            (Some(true), Some(gap)) => format!("recipe check: the stated recipe reproduces the update (gap {gap:.1e})"),
            (Some(false), Some(gap)) => format!(
                "recipe check FAILED: the stated recipe does not reproduce the update (relative gap {gap:.2e} > \
                 {:.0e}); {}. The accuracy below is what an attacker assuming that recipe gets, not what the server \
                 would reconstruct: state the client's optimiser, local epochs, batches and order",
                self.tolerance, self.reason
            ),
            _ => format!("recipe check not possible: {}", self.reason),
        }
    }
}

/// Replay `config`'s client on `truth` (the client's rows in order, with their labels) from the
/// network in `received`, and compare with the update received.
pub async fn check_recipe(config: &AttackConfig, received: &ReceivedUpdate, truth: &Dataset) -> Result<RecipeCheck> {
    let recipe = match &config.protocol {
        Protocol::Fedsgd => "FedSGD: one gradient on all the rows".to_string(),
        Protocol::Fedavg(t) => t.describe(),
    };
    if let Some(why) = config.unreplayable(truth.n()) {
        let checked = match why {
            Unreplayable::Reshuffled => "the optimiser and the settings stated were not checked",
            Unreplayable::Randomised => "the recipe stated was not checked",
        };
        return Ok(RecipeCheck {
            matches: None,
            relative_gap: None,
            tolerance: RECIPE_TOLERANCE,
            reason: format!("{}; {checked}", why.why()),
        });
    }
    let gap = replay_gap(config, received, truth, None).await?;
    let matches = gap <= RECIPE_TOLERANCE;
    let reason = format!(
        "replayed {recipe} on the client's {} rows in the order given",
        truth.n()
    );
    Ok(RecipeCheck {
        matches: Some(matches),
        relative_gap: Some(gap),
        tolerance: RECIPE_TOLERANCE,
        reason,
    })
}

/// `orders` of the reconstructed `rows` as orders of the client's own rows (`truth`), each
/// reconstructed row standing for the client's row matched to it.
pub fn orders_of_truth(truth: &Dataset, rows: &[Vec<Value>], orders: &[Vec<usize>]) -> Vec<Vec<usize>> {
    // matched[i]: the client's row matched to reconstructed row i.
    let matched = match_rows(&Rule::of(&truth.features), rows, &truth.rows);
    orders.iter().map(|o| o.iter().map(|&i| matched[i]).collect()).collect()
}

/// A reshuffling client's recipe checked after the attack: the client's rows replayed in the
/// orders the update chose for the reconstructed `rows` (`UpdateChoice::orders`), each
/// reconstructed row standing for the client's row matched to it. A replay within the tolerance
/// confirms the recipe (and the orders); one outside it says nothing either way (the orders may be
/// wrong), and the check stays "not possible" with its gap. None where there are no orders.
pub async fn check_recipe_in_orders(
    config: &AttackConfig,
    received: &ReceivedUpdate,
    truth: &Dataset,
    rows: &[Vec<Value>],
    orders: &[Vec<usize>],
) -> Result<Option<RecipeCheck>> {
    let Protocol::Fedavg(training) = &config.protocol else {
        return Ok(None);
    };
    if rows.len() != truth.n() || config.unreplayable(truth.n()) != Some(Unreplayable::Reshuffled) {
        return Ok(None);
    }
    let orders = orders_of_truth(truth, rows, orders);
    let gap = replay_gap(config, received, truth, Some(&orders)).await?;
    let recipe = training.describe();
    Ok(Some(match gap <= RECIPE_TOLERANCE {
        true => RecipeCheck {
            matches: Some(true),
            relative_gap: Some(gap),
            tolerance: RECIPE_TOLERANCE,
            reason: format!(
                "replayed {recipe} on the client's {} rows in the orders the update chose (each reconstructed row \
                 standing for the client's row matched to it)",
                truth.n()
            ),
        },
        false => RecipeCheck {
            matches: None,
            relative_gap: None,
            tolerance: RECIPE_TOLERANCE,
            reason: format!(
                "the client reshuffles its rows every epoch; replayed in the orders the update chose, the stated \
                 recipe is {gap:.1e} from the update, which does not tell a wrong recipe from a wrong order: the \
                 optimiser and the settings stated were not checked"
            ),
        },
    }))
}

/// ‖replayed − received‖ / ‖received‖ of `config`'s client replayed on `truth` (in `orders`
/// where given) from the network in `received`.
async fn replay_gap(
    config: &AttackConfig,
    received: &ReceivedUpdate,
    truth: &Dataset,
    orders: Option<&[Vec<usize>]>,
) -> Result<f64> {
    let head = config.model().head;
    let all: Vec<usize> = (0..truth.n()).collect();
    let round = Round {
        protocol: config.protocol,
        clients: 1,
        // Clipping alone is deterministic: replayed as stated.
        defence: config.defence,
        seed: 0,
        model: config.model(),
    };
    let replayed = simulate_round_in_orders(
        &received.params,
        &encode_rows(truth, &truth.rows),
        &truth.targets(&all, head),
        &round,
        orders,
    )
    .await?;
    Ok(replayed.relative_gap(&received.update))
}

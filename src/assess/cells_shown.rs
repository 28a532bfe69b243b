//! Which cells of its batch a FedAvg client's update shows, checked against the client's own
//! rows: what the update determines, beside what the attack recovers (issue 45: an Adam client's
//! update is full rank in its rows to first order, while the attack stays near guessing, and the
//! report must say which of the two ran out).
//!
//! Each cell of the client's batch is moved just past its scoring tolerance (a continuous value by
//! 0.319 of its column's standard deviation, rounded outward to the column's decimals; a category
//! to the next one), the client replayed on the batch so changed (the recipe check's replay:
//! `client::simulate`), and the replay compared with the update received. A cell is **shown**
//! where the moved batch's replay lies farther from the update than the client's own rows' replay
//! by more than that gap again and `FLOOR`: any attacker who reconstructs the cell wrongly by its
//! scoring tolerance can then be told so by the update. A cell whose move changes the update by
//! less is one no attack on this update can pin down at the scoring's resolution (a row the
//! network is sure of, a unit the cell does not reach). The check is to first order and cell by
//! cell: two wrong cells that cancel in the update are not excluded.
use crate::attack::inversion::setup::Setup;
use crate::client::simulate::{Round, simulate_round_in_orders};
use crate::config::{Protocol, Unreplayable};
use crate::error::Result;
use crate::report::shown::CellsShown;
use crate::report::{AttackDetails, Report};
use crate::scenario::client_round_seed;
use crate::seed::seed_for;
use crate::table::batch::encode_rows;
use crate::table::{FeatureKind, Value};
use rand::seq::SliceRandom;
use rand::{SeedableRng, rngs::StdRng};

/// The least relative gap a moved cell must add: the replay runs in float32, whose rounding of an
/// update is about 6e-8 of its norm; ten times that and more.
pub const FLOOR: f64 = 1e-6;

/// Local steps the replays may take together: where moving every cell would take more, a
/// random draw of the cells is moved (about 2 s natively; Adult's Adam client of 32 rows, 4
/// steps a replay, moves all 448 of its cells within 1,800).
const MOST_REPLAYED_STEPS: usize = 40_000;

/// The draw's random stream (`seed::seed_for`).
const STREAM: u64 = 0xCE11;

/// The replay's gap ‖replay − update‖ / ‖update‖ for the client's own rows and for each of its
/// cells moved (`Setup::cells_shown`).
#[derive(Debug, Clone, PartialEq)]
pub struct CellMoves {
    pub own: f64,
    /// Per row and feature; None where the cell was not moved (it cannot move within its
    /// column's range, or the draw left it out).
    pub moved: Vec<Vec<Option<f64>>>,
    /// Whether the cells moved are a random draw of those that can move (`MOST_REPLAYED_STEPS`).
    pub drawn: bool,
    /// Whether a reshuffling client was replayed in its own orders, which the server is not told.
    pub own_orders: bool,
}

impl CellMoves {
    /// Whether a move of `moved` shows against the own rows' gap.
    fn shows(&self, moved: f64) -> bool {
        moved - self.own >= self.own + FLOOR
    }

    /// Per row and feature, whether the update shows the cell (None: not moved).
    pub fn shown(&self) -> Vec<Vec<Option<bool>>> {
        let row = |r: &Vec<Option<f64>>| r.iter().map(|m| m.map(|m| self.shows(m))).collect();
        self.moved.iter().map(row).collect()
    }

    /// The least of the moves that show, as a change of the gap.
    pub fn least_shown(&self) -> Option<f64> {
        let shown = self.moved.iter().flatten().flatten().filter(|&&m| self.shows(m));
        shown.map(|m| m - self.own).min_by(f64::total_cmp)
    }

    /// The report's summary, with the cells right (`correct`, per row of the batch and feature).
    pub fn summary<'a>(&self, correct: impl Iterator<Item = &'a [bool]>) -> CellsShown {
        CellsShown {
            own_gap: self.own,
            floor: FLOOR,
            least_shown: self.least_shown(),
            drawn: self.drawn,
            own_orders: self.own_orders,
            ..CellsShown::of(&self.shown(), correct)
        }
    }
}

/// `v` moved just past `tolerance`: up, rounded up to `decimals`, where that stays within
/// [min, max]; else down; None where neither does (a column narrower than its tolerance).
fn moved_number(v: f64, tolerance: f64, min: f64, max: f64, decimals: u32) -> Option<f64> {
    let scale = 10f64.powi(decimals.min(12) as i32);
    let up = (((v + tolerance) * scale).floor() + 1.0) / scale;
    let down = (((v - tolerance) * scale).ceil() - 1.0) / scale;
    [up, down].into_iter().find(|m| (min..=max).contains(m))
}

/// The orders a reshuffling client visited its rows in, where they are known: drawn from its
/// round's seed as the simulator drew them, or given (of the client's rows: a received update's
/// orders, confirmed by replaying the recipe in them).
#[derive(Debug, Clone, Copy)]
pub enum KnownOrders<'a> {
    Drawn(u64),
    Given(&'a [Vec<usize>]),
}

impl Setup<'_> {
    /// Per row of `truth` (the client's rows, in order, with the loss's `targets`: the head's, or a
    /// regression's standardised values, `Dataset::targets`) and feature, the
    /// replay's gap with the cell moved (None: no move of it stays in its column's range); and
    /// the gap of the client's own rows' replay. A client that reshuffles its rows is replayed in
    /// its own orders where they are known (`KnownOrders`); the check then says what the update
    /// pins given the order. None where the client is not FedAvg (FedSGD's rows are checked whole,
    /// `assess::seen_rows`) or cannot be replayed (noised; reshuffled in orders not known here).
    pub async fn cells_shown(
        &self,
        truth: &[Vec<Value>],
        targets: &[f32],
        orders: Option<KnownOrders<'_>>,
    ) -> Result<Option<CellMoves>> {
        let config = self.config;
        let head = config.model().head;
        let Protocol::Fedavg(training) = config.protocol else {
            return Ok(None);
        };
        // The round's seed draws nothing where the order is given and there is no noise; a
        // reshuffling client is replayed in its own orders.
        let (seed, given, own_orders) = match (config.unreplayable(truth.len()), orders) {
            (None, _) => (0, None, false),
            (Some(Unreplayable::Reshuffled), Some(KnownOrders::Drawn(seed))) => (seed, None, true),
            (Some(Unreplayable::Reshuffled), Some(KnownOrders::Given(o))) if config.clients <= 1 => (0, Some(o), true),
            _ => return Ok(None),
        };
        if truth.is_empty() || targets.len() != truth.len() * head.outputs(self.dataset.classes.len()) {
            return Ok(None);
        }
        // Drawn orders come from `seed` as the simulated client drew them; clipping alone is
        // deterministic, replayed as stated.
        let round = Round {
            protocol: config.protocol,
            clients: config.clients.max(1),
            defence: config.defence,
            seed,
            model: config.model(),
        };
        let (params, observed) = (&self.scenario.params, &self.scenario.observed);
        let gap = async |rows: &[Vec<Value>]| -> Result<f64> {
            let x = encode_rows(self.dataset, rows);
            let replayed = simulate_round_in_orders(params, &x, targets, &round, given).await?;
            Ok(replayed.relative_gap(observed))
        };
        // Every cell that can move, or a draw of them where replaying all would take too long.
        let mut cells: Vec<(usize, usize, Value)> = (0..truth.len())
            .flat_map(|i| (0..self.dataset.features.len()).map(move |f| (i, f)))
            .filter_map(|(i, f)| self.moved_cell(truth[i][f], f).map(|v| (i, f, v)))
            .collect();
        let per_client = truth.len() / round.clients;
        let steps = training.schedule(per_client).len() * round.clients;
        let most = (MOST_REPLAYED_STEPS / steps.max(1)).max(1);
        let drawn = cells.len() > most;
        if drawn {
            let mut rng = StdRng::seed_from_u64(seed_for(config.seed, STREAM));
            cells.shuffle(&mut rng);
            cells.truncate(most);
        }
        let own = gap(truth).await?;
        let mut moved = vec![vec![None; self.dataset.features.len()]; truth.len()];
        let mut rows = truth.to_vec();
        for (i, f, value) in cells {
            rows[i][f] = value;
            moved[i][f] = Some(gap(&rows).await?);
            rows[i][f] = truth[i][f];
        }
        Ok(Some(CellMoves {
            own,
            moved,
            drawn,
            own_orders,
        }))
    }

    /// `value` of feature `f` moved just past its scoring tolerance (`moved_number`), or to the
    /// next category; None where it cannot move.
    fn moved_cell(&self, value: Value, f: usize) -> Option<Value> {
        let feature = &self.dataset.features[f];
        match (&feature.kind, value) {
            (FeatureKind::Categorical { categories }, Value::Cat(c)) if categories.len() > 1 => {
                Some(Value::Cat((c + 1) % categories.len() as u32))
            }
            (FeatureKind::Continuous { min, max, decimals, .. }, Value::Num(v)) => {
                moved_number(v, feature.tolerance(), *min, *max, *decimals).map(Value::Num)
            }
            _ => None,
        }
    }

    /// `report` (a simulated client's, scored against its batch) with the cells its update shows
    /// (`cells_shown`, a reshuffling client replayed in the orders it drew), where they can be
    /// checked.
    pub async fn put_cells_shown(&self, report: &mut Report) -> Result<()> {
        let Some(truth) = &self.scenario.truth else {
            return Ok(());
        };
        if truth.indices.len() != truth.rows.len() {
            return Ok(());
        }
        let targets = self.dataset.targets(&truth.indices, self.config.model().head);
        let Some(moves) = self
            .cells_shown(
                &truth.rows,
                &targets,
                Some(KnownOrders::Drawn(client_round_seed(self.config))),
            )
            .await?
        else {
            return Ok(());
        };
        let summary = moves.summary(report.rows.iter().map(|r| &r.correct[..]));
        if let AttackDetails::Rows(d) = &mut report.details {
            d.cells_shown = Some(summary);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::fedavg::LocalTraining;
    use crate::config::AttackConfig;
    use crate::scenario::Scenario;

    /// A FedAvg client of 8 rows on [16], `epochs` epochs of local batches of 4 at lr 0.05.
    fn client_of_8(epochs: usize, order: crate::client::fedavg::LocalOrder, seed: u64) -> AttackConfig {
        let training = LocalTraining {
            order,
            ..LocalTraining::sgd(epochs, 4, 0.05)
        };
        AttackConfig {
            batch_size: 8,
            hidden: vec![16],
            protocol: Protocol::Fedavg(training),
            seed,
            ..Default::default()
        }
    }

    /// A FedAvg client's update shows every cell of its batch; where the network is sure of a
    /// row (its output saturated, so the row sends no gradient), no cell of that row shows, while
    /// the rows it is unsure of still show theirs.
    #[test]
    fn a_row_the_network_is_sure_of_shows_no_cell() {
        let config = client_of_8(1, Default::default(), 2);
        crate::assess::with_sample_setup(config.clone(), |setup| {
            let data = setup.dataset;
            let truth = setup.scenario.truth.as_ref().unwrap();
            let labels: Vec<usize> = truth.indices.iter().map(|&i| data.labels[i]).collect();
            assert!(labels.contains(&0) && labels.contains(&1), "{labels:?}");
            let targets = config.model().head.targets(&labels, data.classes.len());
            let moves = pollster::block_on(setup.cells_shown(&truth.rows, &targets, None))
                .unwrap()
                .unwrap();
            let shown = moves.shown();
            assert!(moves.own < FLOOR, "{}", moves.own);
            assert!(shown.iter().flatten().all(|&s| s != Some(false)), "{shown:?}");
            assert!(shown.iter().flatten().filter(|s| s.is_some()).count() > 8 * data.features.len() / 2);

            let mut params = setup.scenario.params.clone();
            let last = params.biases.len() - 1;
            params.biases[last][0] = 1e3;
            let round = Round {
                protocol: config.protocol,
                clients: 1,
                defence: None,
                seed: 0,
                model: config.model(),
            };
            let x = encode_rows(data, &truth.rows);
            let observed = pollster::block_on(simulate_round_in_orders(&params, &x, &targets, &round, None)).unwrap();
            let scenario = Scenario::of_update(params, observed, labels.clone());
            let sure = Setup::new(setup.runtime, data, &config, scenario);
            let moves = pollster::block_on(sure.cells_shown(&truth.rows, &targets, None))
                .unwrap()
                .unwrap();
            let shown = moves.shown();
            assert!(moves.own < FLOOR, "{}", moves.own);
            for (i, row) in shown.iter().enumerate() {
                let seen = row.iter().filter(|&&s| s == Some(true)).count();
                let tested = row.iter().filter(|s| s.is_some()).count();
                match labels[i] {
                    0 => assert_eq!(seen, 0, "row {i}, sure of its label 0: {row:?}"),
                    _ => assert!(seen * 10 >= tested * 9, "row {i}, of label 1: {row:?}"),
                }
            }
        });
    }

    /// A reshuffling client's orders, given (as a received update's confirmed ones are), replay
    /// it as its own drawn orders do; other orders leave its own rows far from the update, and
    /// without orders it is not checked.
    #[test]
    fn a_reshuffling_client_is_checked_in_its_orders_given_or_drawn() {
        let config = client_of_8(2, crate::client::fedavg::LocalOrder::Shuffled, 3);
        crate::assess::with_sample_setup(config.clone(), |setup| {
            let data = setup.dataset;
            let truth = setup.scenario.truth.as_ref().unwrap();
            let targets = data.targets(&truth.indices, config.model().head);
            let seed = client_round_seed(&config);
            let check = |orders| pollster::block_on(setup.cells_shown(&truth.rows, &targets, orders)).unwrap();
            let drawn = check(Some(KnownOrders::Drawn(seed))).expect("drawn orders");
            let own = crate::client::fedavg::shuffled_orders(8, 2, seed_for(seed, 16));
            let given = check(Some(KnownOrders::Given(&own))).expect("given orders");
            assert_eq!(given, drawn);
            assert!(given.own < FLOOR && given.own_orders, "{given:?}");
            let mut wrong = own.clone();
            wrong[1].swap(0, 7);
            let wrong = check(Some(KnownOrders::Given(&wrong))).expect("given orders");
            assert!(wrong.own > 1e3 * FLOOR, "{}", wrong.own);
            assert_eq!(check(None), None);
        });
    }

    /// A value moves past its tolerance in its column's decimals, up where it can, else down,
    /// and not at all in a column narrower than the tolerance.
    #[test]
    fn a_number_moves_just_past_its_tolerance() {
        assert_eq!(moved_number(40.0, 3.9, 1.0, 99.0, 0), Some(44.0));
        assert_eq!(moved_number(98.0, 3.9, 1.0, 99.0, 0), Some(94.0));
        assert_eq!(moved_number(0.5, 0.25, 0.0, 1.0, 2), Some(0.76));
        assert_eq!(moved_number(0.5, 0.6, 0.0, 1.0, 1), None);
        for (v, t) in [(17.0, 4.19), (33.3, 0.1), (0.0, 2.5)] {
            let m = moved_number(v, t, 0.0, 100.0, 1).unwrap();
            assert!((m - v).abs() > t, "{v} moved to {m} is not past {t}");
        }
    }
}

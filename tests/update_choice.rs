//! The categories a FedAvg client's simulated update chooses (`assess::update_choice`), on real data
//! with fixed seeds: where the client's order is known the choice runs, keeps only changes that
//! fit the update better, and scores more cells than the pooled rows it
//! started from; where the client reshuffles its rows the update chooses each epoch's order
//! first (`assess::epoch_orders`); on FedSGD it runs only where the pooled rows fit the update;
//! switched off, it does not run.
mod common;

use common::{adult, run_options};
use leakscope::assess::update_choice::{AT_ROUNDING, UpdateChoice};
use leakscope::client::activation::Activation;
use leakscope::client::fedavg::LocalOrder;
use leakscope::client::head::Task;
use leakscope::options::ProtocolKind;
use leakscope::report::Provenance;
use leakscope::runtime::StepEngine;
use leakscope::table::Dataset;
use leakscope::{Report, RunOptions};

/// A momentum client of `rows` rows, `epochs` epochs of batches of `local`, attacked for
/// `iterations` steps by 6 members.
fn momentum_client(rows: usize, local: usize, epochs: usize, iterations: usize, seed: u64) -> RunOptions {
    RunOptions {
        protocol: ProtocolKind::Fedavg,
        batch_size: rows,
        local_batch: local,
        local_epochs: epochs,
        client_lr: 0.01,
        momentum: 0.9,
        iterations,
        ensemble: Some(6),
        seed,
        ..RunOptions::default()
    }
}

/// The report with the choice, and without it.
fn with_and_without(data: &Dataset, options: &RunOptions) -> (Report, Report) {
    let chosen = run_options(data, options);
    let pooled = run_options(
        data,
        &RunOptions {
            update_choice: false,
            ..options.clone()
        },
    );
    assert!(
        pooled.row_details().unwrap().chosen.is_none(),
        "switched off, it does not run"
    );
    (chosen, pooled)
}

/// What the choice did in `chosen` (`what`: why it must have run), printed beside the accuracy
/// with and without it.
fn choice_of(chosen: &Report, pooled: &Report, what: &str) -> UpdateChoice {
    let choice = chosen.row_details().and_then(|d| d.chosen.clone()).expect(what);
    eprintln!(
        "with the choice {:.3}, without {:.3}, random {:.3}; {choice:?}",
        chosen.accuracy.total, pooled.accuracy.total, chosen.random_baseline
    );
    choice
}

/// A report's reconstructed cells.
fn cells(report: &Report) -> Vec<Vec<String>> {
    report.rows.iter().map(|row| row.reconstructed.clone()).collect()
}

/// Where the pooled rows reproduce the update (1 − cos ≤ 0.05: 16 rows, 2 epochs of batches of 4,
/// 1500 steps), the choice searches and keeps only changes that fit it better, by more than
/// float32's rounding, and every cell stays right.
#[test]
fn the_update_keeps_only_rows_that_fit_it_better() {
    let data = adult();
    let (chosen, pooled) = with_and_without(&data, &momentum_client(16, 4, 2, 1500, 1));
    let choice = choice_of(&chosen, &pooled, "FedAvg in the given order chooses");
    assert!(choice.searched && choice.fit_before <= 0.05, "{choice:?}");
    assert!(choice.changed_rows > 0 && choice.simulations > 1, "{choice:?}");
    assert!(choice.fit_after < choice.fit_before * (1.0 - 1e-4), "{choice:?}");
    // The ensemble ran again from the chosen rows (some row is unproved) and gave the rows only
    // where they fit better still.
    let rerun = choice
        .rerun
        .clone()
        .expect("the ensemble runs again from the chosen rows");
    assert!(rerun.fit.is_finite(), "{choice:?}");
    assert_eq!(rerun.kept, rerun.fit < choice.fit_after, "{choice:?}");
    assert!(
        chosen.accuracy.total >= pooled.accuracy.total,
        "{} < {}",
        chosen.accuracy.total,
        pooled.accuracy.total
    );
}

/// Where they do not (32 rows, 3 epochs of batches of 8, 300 steps: 1 − cos 0.09), a better fit
/// misleads the choice's single changes (there the members' whole rows alone put 28 points of
/// cells wrong): it does not search. Within twice its gate the ensemble runs again from the
/// pooled rows, and its rows are kept only where they fit the update better.
#[test]
fn the_update_chooses_nothing_where_the_pooled_rows_do_not_fit_it() {
    let data = adult();
    let (chosen, pooled) = with_and_without(&data, &momentum_client(32, 8, 3, 300, 0));
    let choice = choice_of(&chosen, &pooled, "it says what it did");
    assert!(!choice.searched && choice.fit_before > 0.05, "{choice:?}");
    assert_eq!((choice.changed_rows, choice.simulations), (0, 1), "{choice:?}");
    let rerun = choice.rerun.clone().expect("an SGD client's ensemble runs again");
    assert_eq!(rerun.kept, rerun.fit < choice.fit_after, "{choice:?}");
    assert_eq!(rerun.kept, cells(&chosen) != cells(&pooled), "{choice:?}");
    assert!(chosen.accuracy.total >= pooled.accuracy.total, "{choice:?}");
}

/// A client that reshuffles its rows (32 rows, 3 epochs of batches of 8, momentum, 1500 steps):
/// the update chooses each epoch's order from the members' epoch copies, keeping rows trading
/// places only where they fit better, and within twice the choice's gate the ensemble runs again
/// from the rows in those orders, its rows kept only where they fit better. Under the attack's
/// model of such a client (each epoch's batches keep the given order's mix of labels) a better
/// fit can cost a cell where the pooled rows were nearly right: here the pooled rows scored
/// 99.6 %, the rerun (1 − cos 0.086 → 0.065) 99.1 %, both far above guessing (61.2 %).
#[test]
fn the_update_chooses_a_reshuffling_clients_orders_then_runs_again_in_them() {
    let data = adult();
    let options = RunOptions {
        local_order: LocalOrder::Shuffled,
        ..momentum_client(32, 8, 3, 1500, 2)
    };
    let (chosen, pooled) = with_and_without(&data, &options);
    let choice = choice_of(&chosen, &pooled, "a reshuffling client's orders are chosen");
    let orders = choice.orders.clone().expect("the epochs' orders");
    assert_eq!(orders.order.len(), 3);
    for order in &orders.order {
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..32).collect::<Vec<_>>(), "each epoch visits every row once");
    }
    assert!(
        orders.fit <= orders.fit_proposed && orders.simulations > 6,
        "{orders:?}"
    );
    assert_eq!(
        choice.fit_before, orders.fit,
        "the rows are chosen in the chosen orders"
    );
    assert!(choice.fit_after <= choice.fit_before, "{choice:?}");
    let rerun = choice.rerun.clone().expect("an SGD client's ensemble runs again");
    assert_eq!(rerun.kept, rerun.fit < choice.fit_after, "{choice:?}");
    // The rows reported come with the orders they were chosen in: the rerun's own where its rows
    // were kept (they stand as its first epoch visits them), else the first rows'.
    let rerun_orders = rerun.orders.as_ref().expect("the rerun chose orders for its rows");
    assert_eq!(
        choice.orders_of_rows(),
        Some(if rerun.kept { rerun_orders } else { &orders }),
        "{choice:?}"
    );
    // The audit's counted work (`plan::cost`) bounds what ran: both runs, and every client update
    // the choices and the orders' searches replayed.
    let work = options.attack_config().unwrap().work(&data);
    assert_eq!(work.runs, 2);
    let replayed = choice.simulations + orders.simulations + rerun_orders.simulations;
    assert!(
        replayed <= work.replays,
        "{replayed} replayed, {} counted",
        work.replays
    );
    let off = RunOptions {
        update_choice: false,
        ..options.clone()
    };
    let off = off.attack_config().unwrap().work(&data);
    assert_eq!((off.runs, off.replays), (1, 0));
    assert!(work.gflop() > 2.0 * off.gflop());
    if !choice.searched {
        // The pooled rows are the report's unless the rerun's replaced them.
        assert_eq!(rerun.kept, cells(&chosen) != cells(&pooled), "{choice:?}");
    }
    assert!(
        chosen.accuracy.total >= 0.98 && pooled.accuracy.total >= 0.98,
        "{} and {}",
        chosen.accuracy.total,
        pooled.accuracy.total
    );
}

#[test]
fn the_update_chooses_nothing_on_fedsgd_and_no_order_where_it_is_known() {
    let data = adult();
    let short = |options: RunOptions| RunOptions {
        ensemble: Some(2),
        ..options
    };
    // Reshuffled rows, four batches an epoch: the orders are chosen with the rows.
    let shuffled = run_options(
        &data,
        &short(RunOptions {
            local_order: LocalOrder::Shuffled,
            ..momentum_client(32, 8, 3, 20, 0)
        }),
    );
    let choice = shuffled.row_details().unwrap().chosen.clone().expect("orders chosen");
    assert_eq!(choice.orders.map(|o| o.order.len()), Some(3));
    // The same off the CPU kernel (leaky ReLU runs the definition), whose replays of several
    // epochs' copies once stopped on a shape error.
    let leaky = run_options(
        &data,
        &short(RunOptions {
            local_order: LocalOrder::Shuffled,
            activation: Activation::LeakyRelu { slope: 0.01 },
            ..momentum_client(32, 8, 3, 20, 0)
        }),
    );
    assert_eq!(leaky.backend.engine, StepEngine::Definition);
    let choice = leaky.row_details().unwrap().chosen.clone().expect("orders chosen");
    assert_eq!(choice.orders.map(|o| o.order.len()), Some(3));
    // Reshuffled rows in one batch an epoch: every order gives the same update, none is chosen.
    let one_batch = run_options(
        &data,
        &short(RunOptions {
            local_order: LocalOrder::Shuffled,
            local_batch: 32,
            ..momentum_client(32, 8, 3, 20, 0)
        }),
    );
    let choice = one_batch.row_details().unwrap().chosen.clone().expect("a known order");
    assert!(choice.orders.is_none());
    // A regression's FedSGD update chooses nothing (the server does not know its labels): the
    // counted work is the one optimisation.
    let regression = RunOptions {
        batch_size: 8,
        ..RunOptions::default()
    };
    let hours = common::dataset_as("adult-sample.csv", "hours-per-week", Task::Regression);
    let work = regression.attack_config().unwrap().work(&hours);
    assert_eq!((work.runs, work.replays), (1, 0));
}

/// FedSGD, the narrow network at B = 32 on the Adult sample (seed 1, 6 members, 600 steps): the
/// first layer's span holds 71 rows, one direction free. The row test places 100 points on them
/// (`assess::row_test`), the pursuit among them picks the batch (3.5e-5 of the update left), so
/// the choice starts from it and fits the update to its rounding (`AT_ROUNDING`): nothing runs
/// again, and the cells are far more right than the pooled rows' (99.1 % against 77.5 %; with the
/// rerun and the rows placed after it, 81.9 %). Trained 5 epochs the pooled rows do not fit it
/// (0.11), but the pursuit among the 59 points the row test places does (−3e-8): the choice
/// starts from them, nothing runs again, and the rows the update sees (every one here) are
/// consistent with it, so none falls back to the table's prior (before, the fallback put every
/// cell there: 60.0 % where the rows were 100 % right). The counted work holds both runs and
/// every replay.
#[test]
fn on_fedsgd_the_update_chooses_rows_only_where_the_pooled_rows_fit_it() {
    let data = adult();
    let narrow = |train_epochs: usize| RunOptions {
        hidden: vec![32, 32],
        ensemble: Some(6),
        iterations: 600,
        training_epochs: train_epochs,
        seed: 1,
        ..RunOptions::default()
    };
    let (chosen, pooled) = with_and_without(&data, &narrow(0));
    let choice = choice_of(&chosen, &pooled, "the pooled rows fit the update");
    assert!(choice.searched && choice.changed_rows > 0, "{choice:?}");
    assert!(choice.span_rows > 32, "the span's rows tried: {choice:?}");
    let pursuit = choice
        .pursuit
        .clone()
        .expect("the span's rows picked by the update's sum");
    assert!(
        pursuit.kept && pursuit.residual < 0.1 && pursuit.fit < 0.5 * choice.fit_before,
        "{pursuit:?}"
    );
    assert!(choice.fit_after < 0.5 * choice.fit_before, "{choice:?}");
    assert!(
        pursuit.from_placed && pursuit.placed.is_some_and(|n| n >= 32),
        "{pursuit:?}"
    );
    // The batch's rows explain the update to its rounding: nothing runs again.
    assert!(choice.fit_after <= AT_ROUNDING && choice.rerun.is_none(), "{choice:?}");
    assert!(chosen.accuracy.total > pooled.accuracy.total + 0.15);
    let trained = run_options(&data, &narrow(5));
    let choice = trained
        .row_details()
        .unwrap()
        .chosen
        .clone()
        .expect("a FedSGD classifier");
    // The pooled rows do not fit it (0.11), but the row test's points do: the pursuit among
    // them explains the update to its rounding, and nothing runs again.
    assert!(
        choice.pursuit.as_ref().is_some_and(|p| p.kept && p.from_placed),
        "{choice:?}"
    );
    assert!(choice.fit_before > 0.05 && choice.fit_after <= AT_ROUNDING && choice.rerun.is_none());
    let consistent = trained
        .provenance
        .iter()
        .find(|g| g.provenance == Provenance::Consistent);
    assert!(consistent.is_some_and(|g| g.rows == 32), "{:?}", trained.provenance);
    assert!(trained.accuracy.total > 0.99, "{}", trained.accuracy.total);
    // Checked against the client's rows: its update shows every one of them.
    let shown = trained
        .row_details()
        .unwrap()
        .shown
        .clone()
        .expect("a simulated FedSGD client");
    assert_eq!((shown.rows, shown.shown), (32, 32));
    let work = narrow(0).attack_config().unwrap().work(&data);
    assert_eq!((work.runs, work.replays), (2, 2 * 2 * (1 + 4 * 32 * 32 + 6 + 4)));
}

/// Every row the update chooses is a row the table can hold: a column the table determines from
/// a category (Adult's `education-num` from `education`) holds that category's value. The
/// choice tried cells one at a time, so it left 1 to 3 rows of 32 with an `education-num` no
/// row of their `education` has (the Adult sample, [32, 32], B = 32, seeds 0, 3, 4, 6, 7; on
/// full Adult seeds 1 and 8, 16 and 15 rows).
#[test]
fn the_rows_the_update_chooses_hold_the_columns_the_table_determines() {
    let data = adult();
    let determined = leakscope::table::determined::determined_columns(&data);
    assert!(!determined.is_empty(), "the sample determines education-num");
    let report = run_options(
        &data,
        &RunOptions {
            hidden: vec![32, 32],
            ensemble: Some(6),
            iterations: 600,
            seed: 0,
            ..RunOptions::default()
        },
    );
    let choice = report
        .row_details()
        .and_then(|d| d.chosen.clone())
        .expect("FedSGD chooses");
    assert!(choice.searched && choice.changed_rows > 0, "{choice:?}");
    for row in &report.rows {
        for d in &determined {
            let leakscope::table::FeatureKind::Categorical { categories } = &data.features[d.by].kind else {
                panic!("a category determines it");
            };
            let k = categories
                .iter()
                .position(|c| *c == row.reconstructed[d.by])
                .expect("a category");
            let value: f64 = row.reconstructed[d.column].parse().expect("a number");
            assert_eq!(Some(value), d.values[k], "{:?}", row.reconstructed);
        }
    }
}

/// The Adult sample's batch of 32 on a [32, 32] network trained 20 epochs (seed 6): the first
/// layer's update determines 31 directions and shows 32 above the noise its tail shows. The
/// determined span's rows hold 25 of the batch's rows, the span of every direction's 31: the
/// pursuit's picks among the latter, at the points of their lines the search gave, fit the
/// update best (1 − cos 0.017 against the pooled rows' 0.89), and the choice starts from them.
/// The client's reconstruction then explains its update (0.006) seven times better than the
/// shadow client's explained its own (0.041), so the shadow's thresholds do not speak for it and
/// no cell falls back: 73.0 % of cells against 68.1 % without the choice, the table's guess.
#[test]
fn on_a_trained_narrow_network_the_update_picks_rows_in_every_direction_it_shows() {
    let data = adult();
    let options = RunOptions {
        hidden: vec![32, 32],
        ensemble: Some(6),
        iterations: 600,
        training_epochs: 20,
        seed: 6,
        ..RunOptions::default()
    };
    let (chosen, pooled) = with_and_without(&data, &options);
    let choice = choice_of(&chosen, &pooled, "a FedSGD classifier");
    let pursuit = choice
        .pursuit
        .clone()
        .expect("the span's rows picked by the update's sum");
    assert!(
        pursuit.every_direction && pursuit.on_lines && pursuit.kept,
        "{pursuit:?}"
    );
    assert!(pursuit.fit < 0.05 && choice.fit_after < pursuit.fit, "{choice:?}");
    let fallback = chosen.row_details().unwrap().fallback.clone().expect("a shadow client");
    assert!(fallback.shadow_harder && fallback.prior_cells == 0, "{fallback:?}");
    assert!(chosen.accuracy.total > pooled.accuracy.total + 0.04);
}

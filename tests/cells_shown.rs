//! What a FedAvg client's update shows of its own batch, cell by cell (`assess::cells_shown`),
//! checked against the simulated client's own rows and reported beside what the attack recovers:
//! an Adam client's update pins every cell while a short attack stays near guessing, and a
//! client the check cannot replay says nothing.
mod common;

use common::{brief_fedavg_client, dataset, run_options};
use leakscope::RunOptions;
use leakscope::client::fedavg::LocalOrder;
use leakscope::client::head::Task;
use leakscope::client::optimizer::OptimizerKind;
use leakscope::options::ProtocolKind;

/// A FedAvg client of 32 rows in local batches of 8 under Adam (lr 1e-3), attacked briefly.
fn adam_client(seed: u64) -> RunOptions {
    brief_fedavg_client(OptimizerKind::Adam, 0.0, 1, seed)
}

#[test]
fn an_adam_update_shows_every_cell_of_its_batch() {
    for data in [
        dataset("adult-sample.csv", "salary"),
        dataset("german-credit.csv", "credit_risk"),
    ] {
        for seed in 0..2 {
            let report = run_options(&data, &adam_client(seed));
            let cells = (report.row_details())
                .and_then(|d| d.cells_shown.clone())
                .expect("a replayable FedAvg client with its rows at hand");
            eprintln!("{} seed {seed}: {cells:?}", data.label);
            assert_eq!(cells.cells, 32 * data.features.len());
            assert!(cells.tested * 10 >= cells.cells * 9, "{cells:?}");
            assert!(cells.shown * 100 >= cells.tested * 95, "{cells:?}");
            assert!(
                cells.own_gap < 1e-6 && cells.least_shown.is_some_and(|m| m >= 1e-6),
                "{cells:?}"
            );
            // The cells right split between those shown and the others add up to the report's.
            let right = cells.accuracy_shown.unwrap_or(0.0) * cells.shown as f64
                + cells.accuracy_hidden.unwrap_or(0.0) * (cells.cells - cells.shown) as f64;
            assert!((right / cells.cells as f64 - report.accuracy.total).abs() < 1e-9);
            let text = leakscope::report::text::render_text(&report, 0);
            let said = format!(
                "the update shows {0} of the {0} cells moved (every one of the batch's",
                cells.shown
            );
            assert!(text.contains(&said), "{text}");
            assert!(!cells.drawn);
        }
    }
}

/// A client that reshuffles its rows is replayed in the orders it drew (the simulator's), and the
/// report says the server is not told them.
#[test]
fn a_reshuffling_client_is_checked_in_its_own_orders() {
    let data = dataset("adult-sample.csv", "salary");
    let options = RunOptions {
        local_order: LocalOrder::Shuffled,
        local_epochs: 2,
        optimizer: OptimizerKind::Sgd,
        momentum: 0.9,
        client_lr: 0.05,
        ..adam_client(1)
    };
    let report = run_options(&data, &options);
    let cells = (report.row_details())
        .and_then(|d| d.cells_shown.clone())
        .expect("a simulated client's orders are known to the check");
    eprintln!("{cells:?}");
    assert!(cells.own_orders && cells.own_gap < 1e-6, "{cells:?}");
    assert!(cells.shown * 100 >= cells.tested * 95, "{cells:?}");
    let text = leakscope::report::text::render_text(&report, 0);
    assert!(
        text.contains("replayed in the orders the client drew, which the server is not told"),
        "{text}"
    );
}

#[test]
fn a_client_the_check_cannot_replay_says_nothing() {
    let data = dataset("adult-sample.csv", "salary");
    let cases = [
        (
            "FedSGD (its rows are checked whole)",
            RunOptions {
                protocol: ProtocolKind::Fedsgd,
                optimizer: OptimizerKind::default(),
                ..adam_client(0)
            },
        ),
        (
            "noised",
            RunOptions {
                noise: 0.01,
                clip: Some(1.0),
                ..adam_client(0)
            },
        ),
    ];
    for (what, options) in cases {
        let report = run_options(&data, &options);
        let details = report.row_details().expect("a rows attack");
        assert!(details.cells_shown.is_none(), "{what}: {:?}", details.cells_shown);
    }
}

/// A regression's client (one linear output, the squared error on the standardised label) is
/// replayed on its own values: its update shows its cells as a classifier's does.
#[test]
fn a_regressions_update_shows_its_cells() {
    let data = common::dataset_as("adult-sample.csv", "hours-per-week", Task::Regression);
    let options = RunOptions {
        task: Task::Regression,
        ..adam_client(0)
    };
    let report = run_options(&data, &options);
    let cells = (report.row_details())
        .and_then(|d| d.cells_shown.clone())
        .expect("a replayable regression client with its rows at hand");
    eprintln!("{cells:?}");
    assert_eq!(cells.cells, 32 * data.features.len());
    assert!(cells.tested * 10 >= cells.cells * 9, "{cells:?}");
    assert!(cells.shown * 100 >= cells.tested * 90, "{cells:?}");
    assert!(cells.own_gap < 1e-6, "{cells:?}");
}

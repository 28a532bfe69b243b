//! What an Adam client's update says outright (`attack::priors::categories_held`): which of the
//! table's categories its rows hold, checked against the simulated client's own rows on both
//! bundled tables, and said nowhere the reading does not hold.
mod common;

use common::{dataset, run_options};
use leakscope::RunOptions;
use leakscope::client::activation::Activation;
use leakscope::client::optimizer::OptimizerKind;
use leakscope::options::ProtocolKind;

/// A FedAvg client of 32 rows in local batches of 8 under `optimizer` (lr 1e-3), attacked
/// briefly: the reading needs no optimisation, only the update.
fn client(optimizer: OptimizerKind, weight_decay: f64, epochs: usize, seed: u64) -> RunOptions {
    RunOptions {
        protocol: ProtocolKind::Fedavg,
        batch_size: 32,
        local_batch: 8,
        local_epochs: epochs,
        client_lr: 1e-3,
        optimizer,
        weight_decay,
        iterations: 20,
        ensemble: Some(2),
        prior_fallback: false,
        seed,
        ..RunOptions::default()
    }
}

#[test]
fn an_adam_update_shows_exactly_the_categories_its_rows_hold() {
    let tables = [
        dataset("adult-sample.csv", "salary"),
        dataset("german-credit.csv", "credit_risk"),
    ];
    for data in &tables {
        for (optimizer, decay, epochs) in [(OptimizerKind::Adam, 0.0, 1), (OptimizerKind::Adamw, 0.01, 3)] {
            for seed in 0..3 {
                let report = run_options(data, &client(optimizer, decay, epochs, seed));
                let held = report
                    .row_details()
                    .and_then(|d| d.categories_held.clone())
                    .expect("an Adam client's update is read");
                eprintln!(
                    "{optimizer:?} E={epochs} seed {seed}: {} of {} categories held, misread {:?}",
                    held.held, held.categories, held.misread
                );
                assert_eq!(held.misread, Some(0), "{held:?}");
                // Not vacuous: a batch of 32 leaves some of the table's categories out.
                assert!(0 < held.held && held.held < held.categories, "{held:?}");
                assert_eq!(held.features.iter().map(|f| f.held.len()).sum::<usize>(), held.held);
            }
        }
    }
}

#[test]
fn nothing_is_read_where_the_reading_does_not_hold() {
    let data = dataset("adult-sample.csv", "salary");
    let adam = client(OptimizerKind::Adam, 0.0, 1, 0);
    let cases = [
        (
            "plain SGD",
            RunOptions {
                optimizer: OptimizerKind::Sgd,
                client_lr: 0.01,
                ..adam.clone()
            },
        ),
        (
            "Adam's L2 decay",
            RunOptions {
                weight_decay: 1e-3,
                ..adam.clone()
            },
        ),
        (
            "leaky ReLU",
            RunOptions {
                activation: Activation::LeakyRelu { slope: 0.01 },
                ..adam.clone()
            },
        ),
        (
            "noise",
            RunOptions {
                noise: 1e-3,
                ..adam.clone()
            },
        ),
    ];
    for (what, options) in cases {
        let report = run_options(&data, &options);
        assert!(
            report.row_details().unwrap().categories_held.is_none(),
            "{what}: the reading does not hold"
        );
    }
}

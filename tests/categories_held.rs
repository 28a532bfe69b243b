//! What an Adam client's update says outright (`attack::priors::categories_held`): which of the
//! table's categories its rows hold, checked against the simulated client's own rows on both
//! bundled tables, and said nowhere the reading does not hold.
mod common;

use common::{brief_fedavg_client as client, dataset, run_options};
use leakscope::RunOptions;
use leakscope::client::activation::Activation;
use leakscope::client::optimizer::OptimizerKind;
use leakscope::report::{Provenance, RowReport};
use leakscope::table::{Dataset, FeatureKind, Value};

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

/// The rows read by the units their categories reach (`attack::priors::rows_by_category`), put
/// in where shadow clients show them a sure gain over the marginals (`assess::category_rows`): on
/// both bundled tables' Adam and AdamW clients, every row put in is a row of `read` provenance, and
/// their categorical cells are right far more often than the marginals' likeliest category is;
/// where rows are put in, no row read or guessed holds a category the update shows no row holds.
#[test]
fn rows_read_by_their_categories_hold_the_rows_categories() {
    let tables = [
        dataset("adult-sample.csv", "salary"),
        dataset("german-credit.csv", "credit_risk"),
    ];
    let mut read_on = Vec::new();
    for data in &tables {
        let categorical: Vec<usize> = (data.features.iter().enumerate())
            .filter(|(_, f)| matches!(f.kind, FeatureKind::Categorical { .. }))
            .map(|(i, _)| i)
            .collect();
        // The likeliest category of each feature in the table: the guess a read row must beat.
        let mode: Vec<String> = categorical.iter().map(|&f| likeliest(data, f)).collect();
        let (mut right, mut guessed, mut cells, mut read) = (0, 0, 0, 0);
        for (optimizer, decay, epochs) in [(OptimizerKind::Adam, 0.0, 1), (OptimizerKind::Adamw, 0.01, 3)] {
            for seed in 0..3 {
                // Rows are read into cells that fell back to the marginals: the fallback on.
                let options = RunOptions {
                    prior_fallback: true,
                    ..client(optimizer, decay, epochs, seed)
                };
                let report = run_options(data, &options);
                let held = report.row_details().and_then(|d| d.categories_held.clone()).unwrap();
                let gain = held.read_gain.expect("the fallback ran, and with it the shadows");
                eprintln!(
                    "{optimizer:?} E={epochs} seed {seed}: {} rows read, shadow gain {gain:+.4}",
                    held.rows_read
                );
                let rows: Vec<_> = (report.rows.iter())
                    .filter(|r| r.provenance == Some(Provenance::Read))
                    .collect();
                assert_eq!(rows.len(), held.rows_read);
                assert!(rows.is_empty() || gain > 0.0);
                for (k, &f) in categorical.iter().enumerate().filter(|_| !rows.is_empty()) {
                    let shown = &held.features[k].held;
                    let guessed = |r: &&RowReport| matches!(r.provenance, Some(Provenance::Read | Provenance::Prior));
                    assert!(
                        report
                            .rows
                            .iter()
                            .filter(guessed)
                            .all(|r| shown.contains(&r.reconstructed[f])),
                        "{}",
                        held.features[k].feature
                    );
                }
                read += rows.len();
                for r in rows {
                    for (k, &f) in categorical.iter().enumerate() {
                        cells += 1;
                        right += r.correct[f] as usize;
                        guessed += (r.truth[f] == mode[k]) as usize;
                    }
                }
            }
        }
        read_on.push(read);
        if read > 0 {
            let (right, guessed) = (right as f64 / cells as f64, guessed as f64 / cells as f64);
            eprintln!(
                "{}: {read} rows read, categories right {right:.3}, the likeliest {guessed:.3}",
                data.label
            );
            // Measured: Adult 0.747 against 0.577, German Credit 0.677 against 0.560.
            assert!(right >= 0.65 && right >= guessed + 0.08, "{right} against {guessed}");
        }
    }
    // Adult's sample: rows read and put in on some client (not vacuous).
    assert!(read_on[0] >= 12, "{read_on:?}");
}

/// The table's most frequent value of categorical feature `f`, as the report writes it.
fn likeliest(data: &Dataset, f: usize) -> String {
    let FeatureKind::Categorical { categories } = &data.features[f].kind else {
        unreachable!()
    };
    let mut counts = vec![0usize; categories.len()];
    for row in &data.rows {
        if let Value::Cat(c) = row[f] {
            counts[c as usize] += 1;
        }
    }
    let best = (0..counts.len()).max_by_key(|&k| counts[k]).unwrap();
    categories[best].clone()
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

/// A regression's Adam client: a row whose label the network nearly predicts sends the first
/// layer so small a δ that its categories may not show, so the reading never claims a category
/// no row holds, a category a row holds may go unshown, and the report says both.
#[test]
fn a_regressions_update_shows_no_category_its_rows_do_not_hold() {
    let data = common::dataset_as(
        "adult-sample.csv",
        "hours-per-week",
        leakscope::client::head::Task::Regression,
    );
    for seed in 0..3 {
        let options = RunOptions {
            task: leakscope::client::head::Task::Regression,
            ..client(OptimizerKind::Adam, 0.0, 1, seed)
        };
        let report = run_options(&data, &options);
        let held = (report.row_details())
            .and_then(|d| d.categories_held.clone())
            .expect("an Adam client's update is read");
        eprintln!("seed {seed}: {held:?}");
        assert_eq!(
            held.misread, held.missed,
            "a category shown that no row holds: {held:?}"
        );
        assert!(0 < held.held && held.held < held.categories, "{held:?}");
        let text = leakscope::report::text::render_text(&report, 0);
        assert!(
            text.contains("one it does not show is held by no row, or only by rows whose first-layer gradient"),
            "{text}"
        );
        if held.missed.unwrap() > 0 {
            assert!(
                text.contains("held by a row but not shown, 0 shown but held by none"),
                "{text}"
            );
        }
    }
}

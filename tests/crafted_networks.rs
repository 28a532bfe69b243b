//! Networks the server laid out (issue 43: "weights crafted by the server are inputs too"),
//! attacked end to end as received updates with the client's rows at hand: where such a network
//! lets any rows explain the update, the rows the update holds only as consistent are weighed
//! on the shadow client, rows the update cannot see fall back whole, and the figure stays within
//! reach of guessing (`scripts/crafted_weights.py` measures every layout; these pin the one that
//! fell far below guessing).
mod common;

use leakscope::client::head::{Head, Model};
use leakscope::client::network::Params;
use leakscope::client::simulate::{Round, simulate_round};
use leakscope::received::ReceivedUpdate;
use leakscope::received::truth::{ScoredUpdate, attack_received_against};
use leakscope::report::Provenance;
use leakscope::table::{Dataset, Encoding, StatedModel};
use leakscope::{LabelMode, RunOptions, Runtime};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::{SliceRandom, index};

/// A FedSGD client of `rows` rows of `table` drawn with `seed`, on a [`width`, `width`] ReLU
/// network a third of whose first-layer units are active on every row (their biases 10²): its
/// update attacked as the server would, scored against its rows.
fn always_active(table: &Dataset, width: usize, rows: usize, seed: u64) -> ScoredUpdate {
    let encoding = Encoding::of(table).into_dataset().unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let picked = index::sample(&mut rng, table.n(), rows).into_vec();
    let truth = Dataset {
        rows: picked.iter().map(|&i| table.rows[i].clone()).collect(),
        labels: picked.iter().map(|&i| table.labels[i]).collect(),
        ..table.clone()
    };
    let mut params = Params::init(&[truth.d(), width, width, 2], seed);
    let mut units: Vec<usize> = (0..width).collect();
    units.shuffle(&mut rng);
    units[..width / 3].iter().for_each(|&j| params.biases[0][j] = 1e2);
    let x: Vec<f32> = (truth.rows.iter())
        .flat_map(|r| truth.encode(r))
        .map(|v| v as f32)
        .collect();
    let all: Vec<usize> = (0..rows).collect();
    let round = Round::fedsgd(Model::default());
    let update = pollster::block_on(simulate_round(&params, &x, &truth.targets(&all, Head::Softmax), &round)).unwrap();
    let received = ReceivedUpdate {
        params,
        update,
        embeddings: Vec::new(),
        rows: Some(rows),
        labels: Some(truth.labels.iter().map(|&l| truth.classes[l].clone()).collect()),
    };
    let options = (received.attack_options(
        &encoding,
        RunOptions::default(),
        None,
        Some(LabelMode::Known),
        &StatedModel::default(),
    ))
    .unwrap();
    let config = options.attack_config().unwrap();
    let rt = Runtime::cpu();
    pollster::block_on(attack_received_against(
        &rt,
        &encoding,
        &config,
        &received,
        &truth,
        &mut |_| true,
    ))
    .unwrap()
}

/// A third of the first layer's units always active, Adult sample, B = 32, w = 64, seed 8: the
/// shadow's rows held only as consistent score surely below the marginals' draw in their place
/// (`Calibration::consistent_unheld`), so the client's are not held either, and fall back by
/// the shadow's thresholds as the ensemble's rows do: no row is left consistent, and the figure
/// stays at guessing or above. Without the rule 4 rows stay consistent, 63.6 % of cells right
/// against 66.5 % by guessing (seed 4, which this test ran before the rows the update cannot see
/// fell back whole, is now at guessing without it).
#[test]
fn consistent_rows_the_shadow_shows_wrong_are_not_held() {
    let scored = always_active(&common::adult(), 64, 32, 8);
    let fallback =
        (scored.reconstruction.details.fallback.as_ref()).expect("rows are left unproved: the fallback runs");
    assert!(fallback.consistent_unheld, "{fallback:?}");
    assert_eq!(scored.rows_consistent, 0, "{:?}", scored.reconstruction.provenance);
    assert!(fallback.prior_cells > 0, "{fallback:?}");
    assert!(
        scored.accuracy.total >= scored.random_baseline - 0.01,
        "{} against guessing {}",
        scored.accuracy.total,
        scored.random_baseline
    );
}

/// The same layout, seed 11: the network is sure of 25 of the 32 rows (their gradients below the
/// update's float32 rounding), so the update shows nothing of them, and a received update read
/// with the encoding alone holds no table rows to guess them among. They are not held: every
/// cell of theirs falls back, and the report says why. Held as consistent (before this rule),
/// the rows the polish moved to the table's extremes left 52.5 % of cells right against 61.4 %
/// by guessing.
#[test]
fn rows_the_update_cannot_see_fall_back_whole() {
    let scored = always_active(&common::adult(), 64, 32, 11);
    let report = &scored.reconstruction;
    let fallback = report
        .details
        .fallback
        .as_ref()
        .expect("rows are left unproved: the fallback runs");
    let unseen: Vec<_> = (report.rows.iter())
        .filter(|r| (r.why_not_proved.as_deref()).is_some_and(|w| w.contains("too few rows of its label")))
        .collect();
    assert!(unseen.len() >= 20, "{:?}", report.provenance);
    assert!(
        unseen.iter().all(|r| r.provenance == Some(Provenance::Prior)),
        "{:?}",
        report.provenance
    );
    assert!(fallback.prior_rows >= unseen.len(), "{fallback:?}");
    assert!(
        scored.accuracy.total >= scored.random_baseline,
        "{} against guessing {}",
        scored.accuracy.total,
        scored.random_baseline
    );
}

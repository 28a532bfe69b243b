//! A client with its own preprocessing, as scikit-learn's `ColumnTransformer([OneHotEncoder,
//! StandardScaler])` makes it (categorical columns first, one-hot 0/1 unscaled, continuous ones
//! standardised with the population std; with `drop="first"` or without), sends a FedSGD update:
//! attacked with its own encoding it is recovered as a client of leakscope's own is; attacked
//! with leakscope's encoding of the table (the same width, other content) the recipe check and the
//! reconstruction's fit to the update both say so.
mod common;

use leakscope::client::head::{Head, Model};
use leakscope::client::network::Params;
use leakscope::client::simulate::{Round, simulate_round};
use leakscope::received::ReceivedUpdate;
use leakscope::received::truth::{ScoredUpdate, attack_received_against};
use leakscope::table::dataset::mean_std;
use leakscope::table::{Dataset, EncodedFeature, Encoding, FeatureKind, StatedModel, Value};
use leakscope::{LabelMode, RunOptions, Runtime};

/// The encoding a fitted `ColumnTransformer` states for `table` (what
/// `leakscope.encoding_from_sklearn` writes): categorical columns first, then the continuous
/// ones, each group in the table's order.
fn sklearn_encoding(table: &Dataset, drop_first: bool) -> Encoding {
    let own = Encoding::of(table);
    let (cats, nums): (Vec<usize>, Vec<usize>) =
        (0..table.features.len()).partition(|&f| table.features[f].is_categorical());
    let (mut features, mut mean, mut std) = (Vec::new(), Vec::new(), Vec::new());
    for f in cats.into_iter().chain(nums) {
        let mut feature = own.features[f].feature.clone();
        feature.offset = mean.len();
        match &feature.kind {
            FeatureKind::Categorical { categories } => {
                let width = categories.len() - drop_first as usize;
                mean.extend(std::iter::repeat_n(0.0, width));
                std.extend(std::iter::repeat_n(1.0, width));
                features.push(EncodedFeature {
                    dropped: drop_first.then(|| categories[0].clone()),
                    ..EncodedFeature::plain(feature)
                });
            }
            FeatureKind::Continuous { .. } => {
                // StandardScaler: the population std (ddof 0).
                let n = table.n() as f64;
                let (m, s) = mean_std(table.rows.iter().map(|r| r[f].num()));
                mean.push(m);
                std.push(s * ((n - 1.0) / n).sqrt());
                features.push(EncodedFeature::plain(feature));
            }
        }
    }
    Encoding {
        features,
        mean,
        std,
        ..own
    }
}

/// Rows of `table` in the order of `encoding`'s features.
fn in_order_of(encoding: &Dataset, table: &Dataset, rows: &[usize]) -> Dataset {
    let at: Vec<usize> = encoding
        .features
        .iter()
        .map(|f| table.features.iter().position(|g| g.name == f.name).unwrap())
        .collect();
    Dataset {
        rows: rows
            .iter()
            .map(|&i| at.iter().map(|&j| table.rows[i][j]).collect())
            .collect(),
        labels: rows.iter().map(|&i| table.labels[i]).collect(),
        ..encoding.clone()
    }
}

/// The client's FedSGD update on `rows`, its inputs as its own pipeline makes them.
fn client_update(client: &Dataset, truth: &Dataset) -> ReceivedUpdate {
    let encode = |r: &Vec<Value>| client.encode_for_client(r);
    let x: Vec<f32> = truth.rows.iter().flat_map(encode).map(|v| v as f32).collect();
    let d = x.len() / truth.n();
    let params = Params::init(&[d, 100, 100, 2], 11);
    let all: Vec<usize> = (0..truth.n()).collect();
    let targets = truth.targets(&all, Head::Softmax);
    let update = pollster::block_on(simulate_round(&params, &x, &targets, &Round::fedsgd(Model::default()))).unwrap();
    ReceivedUpdate {
        params,
        update,
        rows: Some(truth.n()),
        labels: Some(truth.labels.iter().map(|&l| truth.classes[l].clone()).collect()),
    }
}

fn attack(encoding: &Dataset, received: &ReceivedUpdate, truth: &Dataset) -> ScoredUpdate {
    let options = received
        .attack_options(
            encoding,
            RunOptions {
                ensemble: Some(8),
                iterations: 600,
                ..Default::default()
            },
            None,
            Some(LabelMode::Known),
            &StatedModel::default(),
        )
        .unwrap();
    let config = options.attack_config().unwrap();
    pollster::block_on(attack_received_against(
        &Runtime::cpu(),
        encoding,
        &config,
        received,
        truth,
        &mut |_| true,
    ))
    .unwrap()
}

const ROWS: [usize; 8] = [3, 141, 592, 653, 589, 793, 238, 462];

#[test]
fn a_scikit_learn_client_attacked_with_its_own_encoding_is_recovered_whole() {
    let table = common::adult();
    for drop_first in [false, true] {
        let enc = sklearn_encoding(&table, drop_first);
        let text = serde_json::to_string(&enc).unwrap();
        let client = serde_json::from_str::<Encoding>(&text).unwrap().into_dataset().unwrap();
        assert_eq!(
            client.pipeline.is_some(),
            drop_first,
            "a full one-hot block is leakscope's own terms"
        );
        let truth = in_order_of(&client, &table, &ROWS);
        let received = client_update(&client, &truth);
        let scored = attack(&client, &received, &truth);
        let fit = scored.reconstruction.update_fit.clone().unwrap();
        eprintln!(
            "drop {drop_first}: {:.3} of cells, {} proved, recipe gap {:?}, fit {:.2e}",
            scored.accuracy.total, scored.rows_proved, scored.recipe_check.relative_gap, fit.distance
        );
        assert_eq!(scored.recipe_check.matches, Some(true), "{:?}", scored.recipe_check);
        assert!(
            scored.accuracy.total >= 0.99,
            "drop {drop_first}: {:.3}",
            scored.accuracy.total
        );
        assert!(fit.fits, "{fit:?}");
    }
}

#[test]
fn the_same_update_read_with_leakscopes_encoding_is_caught() {
    let table = common::adult();
    let enc = sklearn_encoding(&table, false);
    let client = enc.into_dataset().unwrap();
    let received = client_update(&client, &in_order_of(&client, &table, &ROWS));
    // leakscope's own encoding of the same table: the same 104 inputs, other content.
    let own = Encoding::of(&table).into_dataset().unwrap();
    assert_eq!(own.d(), client.d());
    let truth = in_order_of(&own, &table, &ROWS);
    let scored = attack(&own, &received, &truth);
    let fit = scored.reconstruction.update_fit.clone().unwrap();
    eprintln!(
        "wrong encoding: {:.3} of cells, recipe gap {:?}, fit {:.2e}",
        scored.accuracy.total, scored.recipe_check.relative_gap, fit.distance
    );
    assert!(scored.recipe_check.failed(), "{:?}", scored.recipe_check);
    assert!(!fit.fits, "the reconstruction cannot explain the update: {fit:?}");
    let text = scored.reconstruction.render_text(0);
    assert!(
        text.contains("WARNING: the best reconstruction does not reproduce the update"),
        "{text}"
    );
}

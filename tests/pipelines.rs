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
        embeddings: Vec::new(),
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

fn fixture(dir: &str, file: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/data/pytorch-update/{dir}/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn embedding_client(dir: &str) -> (Dataset, ReceivedUpdate) {
    let encoding: Encoding = serde_json::from_slice(&fixture(dir, "encoding.json")).unwrap();
    let received = ReceivedUpdate::from_safetensors(
        &fixture(dir, "weights.safetensors"),
        &fixture(dir, "update.safetensors"),
    )
    .unwrap();
    (encoding.into_dataset().unwrap(), received)
}

/// PyTorch's embedding MLP (`scripts/export_embedding.py`: an nn.Embedding per categorical
/// column, fastai's widths, concatenated with the continuous columns, a [32, 32] ReLU MLP), one
/// gradient on 8 Adult rows: rewritten into leakscope's terms it is leakscope's own simulation of
/// the same rows through the same network, and attacked it gives every row.
#[test]
fn a_pytorch_embedding_mlp_is_read_exactly_and_recovered_whole() {
    use leakscope::received::pipeline::in_dataset_terms;
    let (dataset, received) = embedding_client("embedding");
    assert_eq!(received.embeddings.len(), 8, "a table per categorical column");
    let truth = leakscope::received::truth::truth_rows(
        &dataset,
        &leakscope::table::parse_csv(&fixture("embedding", "rows.csv"), 1 << 20).unwrap(),
    )
    .unwrap();
    let config = leakscope::AttackConfig {
        batch_size: 8,
        hidden: vec![32, 32],
        ..Default::default()
    };
    let ours = in_dataset_terms(&dataset, &config, &received).unwrap().into_owned();
    assert!(ours.embeddings.is_empty() && ours.params.sizes == [dataset.d(), 32, 32, 2]);
    let x: Vec<f32> = truth
        .rows
        .iter()
        .flat_map(|r| dataset.encode(r))
        .map(|v| v as f32)
        .collect();
    let all: Vec<usize> = (0..8).collect();
    let direct = pollster::block_on(simulate_round(
        &ours.params,
        &x,
        &truth.targets(&all, Head::Softmax),
        &Round::fedsgd(Model::default()),
    ))
    .unwrap();
    let (mut gap, mut norm) = (0f64, 0f64);
    for (a, b) in direct.values().zip(ours.update.values()) {
        gap += ((a - b) as f64).powi(2);
        norm += (b as f64).powi(2);
    }
    let gap = (gap / norm).sqrt();
    eprintln!("embedding MLP in leakscope's terms against its simulation: relative gap {gap:.2e}");
    assert!(gap < 1e-5, "{gap}");
    let scored = attack(&dataset, &received, &truth);
    eprintln!(
        "embedding MLP: {:.3} of cells, {} proved, fit {:?}",
        scored.accuracy.total, scored.rows_proved, scored.reconstruction.update_fit
    );
    assert!(
        scored.accuracy.total >= 0.99 && scored.rows_proved == 8,
        "{:.3}",
        scored.accuracy.total
    );
    assert_eq!(scored.recipe_check.matches, Some(true));
}

#[test]
fn embeddings_the_update_does_not_determine_or_the_encoding_does_not_state_are_refused_by_name() {
    let config = leakscope::AttackConfig {
        batch_size: 8,
        hidden: vec![32, 32],
        ..Default::default()
    };
    let refused = |dataset: &Dataset, received: &ReceivedUpdate| {
        leakscope::received::pipeline::in_dataset_terms(dataset, &config, received)
            .unwrap_err()
            .to_string()
    };
    // One input per column: more than two of a column's categories in the batch.
    let (narrow, received) = embedding_client("embedding-narrow");
    let e = refused(&narrow, &received);
    assert!(
        e.contains("of its categories are in the batch but its embedding is 1 wide") && e.contains("not attacked"),
        "{e}"
    );
    // The tables without an encoding that assigns them, and a width that is not the table's.
    let (dataset, received) = embedding_client("embedding");
    let e = refused(&common::adult(), &received);
    assert!(
        e.contains("weights without a bias (embeddings.0 [") && e.contains("\"coding\": \"embedding\""),
        "{e}"
    );
    let named = |tensor: &str| {
        let mut enc: Encoding = serde_json::from_slice(&fixture("embedding", "encoding.json")).unwrap();
        enc.features[1].tensor = Some(tensor.into());
        refused(&enc.into_dataset().unwrap(), &received)
    };
    let e = named("embeddings.9");
    assert!(
        e.contains("\"workclass\" is embedded by \"embeddings.9\", which the network does not have"),
        "{e}"
    );
    // education's table stated for workclass: its categories are not workclass's.
    let e = named("embeddings.1.weight");
    assert!(
        e.contains("feature \"workclass\"") && e.contains("cannot be embeddings.1 ["),
        "{e}"
    );
    assert_eq!(dataset.features.len(), 14);
}

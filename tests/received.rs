//! Real updates: a PyTorch client's update exported by `scripts/export_update.py` (the files it
//! wrote are in tests/data/pytorch-update/) is read, is the update leakscope's own simulation of
//! the same client computes, and attacked gives the same reconstruction as that simulated update.
mod common;

use leakscope::client::activation::Activation;
use leakscope::client::fedavg::LocalTraining;
use leakscope::client::head::{Head, Model};
use leakscope::client::simulate::{Round, simulate_round};
use leakscope::client::update::Update;
use leakscope::config::Protocol;
use leakscope::options::ProtocolKind;
use leakscope::received::ReceivedUpdate;
use leakscope::table::{Dataset, Encoding, StatedModel};
use leakscope::{LabelMode, RunOptions, Runtime, attack_received};

fn fixture(file: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/data/pytorch-update/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn metadata(file: &str) -> std::collections::HashMap<String, String> {
    let bytes = fixture(file);
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    meta.metadata().clone().unwrap()
}

/// The encoding the export used is the one leakscope reads off the bundled table.
fn encoding() -> Dataset {
    let enc: Encoding = serde_json::from_slice(&fixture("encoding.json")).unwrap();
    assert_eq!(
        enc,
        Encoding::of(&common::adult()),
        "the fixture's encoding is stale: re-export it"
    );
    enc.into_dataset().unwrap()
}

/// leakscope's simulation of the client the export ran: the same network, the same rows.
fn simulated(received: &ReceivedUpdate, meta_file: &str, protocol: Protocol) -> Update {
    simulated_with(received, meta_file, protocol, Model::default())
}

fn simulated_with(received: &ReceivedUpdate, meta_file: &str, protocol: Protocol, model: Model) -> Update {
    simulated_on(&common::adult(), received, meta_file, protocol, model)
}

/// The same, on a table read as the export's encoding reads it (a regression's label, say).
fn simulated_on(
    table: &Dataset,
    received: &ReceivedUpdate,
    meta_file: &str,
    protocol: Protocol,
    model: Model,
) -> Update {
    let rows: Vec<usize> = serde_json::from_str(&metadata(meta_file)["table_rows"]).unwrap();
    let x: Vec<f32> = rows
        .iter()
        .flat_map(|&i| table.encode(&table.rows[i]))
        .map(|v| v as f32)
        .collect();
    let round = Round {
        protocol,
        clients: 1,
        defence: None,
        seed: 0,
        model,
    };
    let targets = table.targets(&rows, model.head);
    pollster::block_on(simulate_round(&received.params, &x, &targets, &round)).unwrap()
}

/// Largest difference relative to the largest magnitude, over the whole update.
fn relative_gap(a: &Update, b: &Update) -> f64 {
    assert_eq!(a.len(), b.len(), "updates of one network");
    let scale = a.values().map(|v| v.abs() as f64).fold(0.0, f64::max);
    let gap = a
        .values()
        .zip(b.values())
        .map(|(x, y)| (x - y).abs() as f64)
        .fold(0.0, f64::max);
    gap / scale
}

#[test]
fn a_pytorch_fedsgd_update_is_the_simulated_one_and_reconstructs_the_same() {
    let dataset = encoding();
    let from_st =
        ReceivedUpdate::from_safetensors(&fixture("weights.safetensors"), &fixture("update.safetensors")).unwrap();
    let from_json = ReceivedUpdate::from_json(std::str::from_utf8(&fixture("update.json")).unwrap()).unwrap();
    assert_eq!(from_st, from_json, "safetensors and JSON hold the same update");
    assert_eq!(from_st.params.sizes, [dataset.d(), 32, 32, 2]);
    assert_eq!(from_st.rows, Some(8));

    let ours = simulated(&from_st, "update.safetensors", Protocol::Fedsgd);
    let gap = relative_gap(&from_st.update, &ours);
    eprintln!("FedSGD: PyTorch's gradient against leakscope's: {gap:.2e} of the largest entry");
    assert!(
        gap < 1e-5,
        "PyTorch's gradient and leakscope's differ by {gap:.2e} of the largest entry"
    );

    // The same attack on PyTorch's update and on leakscope's: the same reconstruction.
    let config = RunOptions {
        label: "salary".into(),
        batch_size: 8,
        ensemble: Some(6),
        iterations: 400,
        hidden: vec![32, 32],
        labels: LabelMode::Known,
        ..RunOptions::default()
    }
    .attack_config()
    .unwrap();
    let ours = ReceivedUpdate {
        update: ours,
        ..from_st.clone()
    };
    let rt = Runtime::cpu();
    let attack =
        |r: &ReceivedUpdate| pollster::block_on(attack_received(&rt, &dataset, &config, r, &mut |_| true)).unwrap();
    let (a, b) = (attack(&from_st), attack(&ours));
    // The rows as a set: their order carries nothing (ties between members that agree may order
    // them differently).
    let cells = a.rows.len() * a.features.len();
    let sorted = |r: &leakscope::report::reconstruction::ReconstructionReport| {
        let mut rows: Vec<Vec<String>> = r.rows.iter().map(|row| row.cells.clone()).collect();
        rows.sort();
        rows
    };
    let same = sorted(&a)
        .iter()
        .zip(&sorted(&b))
        .flat_map(|(x, y)| x.iter().zip(y))
        .filter(|(x, y)| x == y)
        .count();
    assert!(same == cells, "{same} of {cells} cells agree");
    assert_eq!(a.labels, b.labels);

    // Restored labels read the same counts off PyTorch's gradient as the file's labels say.
    let restored = leakscope::AttackConfig {
        labels: LabelMode::Restored,
        iterations: 1,
        ..config.clone()
    };
    let r = pollster::block_on(attack_received(&rt, &dataset, &restored, &from_st, &mut |_| true)).unwrap();
    assert_eq!(r.labels, a.labels);
}

#[test]
fn a_pytorch_fedavg_update_is_the_simulated_one() {
    let from_st = ReceivedUpdate::from_safetensors(
        &fixture("fedavg/weights.safetensors"),
        &fixture("fedavg/update.safetensors"),
    )
    .unwrap();
    let meta = metadata("fedavg/update.safetensors");
    let training = LocalTraining {
        epochs: meta["local_epochs"].parse().unwrap(),
        local_batch: meta["local_batch"].parse().unwrap(),
        lr: meta["client_lr"].parse().unwrap(),
        ..Default::default()
    };
    assert_eq!((training.epochs, training.local_batch), (2, 4));
    let ours = simulated(&from_st, "fedavg/update.safetensors", Protocol::Fedavg(training));
    let gap = relative_gap(&from_st.update, &ours);
    eprintln!("FedAvg: PyTorch's θ0 − θE against leakscope's: {gap:.2e} of the largest entry");
    assert!(
        gap < 1e-5,
        "PyTorch's θ0 − θE and leakscope's differ by {gap:.2e} of the largest entry"
    );

    // It attacks as FedAvg, with the labels the file carries in the client's order.
    let config = RunOptions {
        label: "salary".into(),
        batch_size: 8,
        protocol: ProtocolKind::Fedavg,
        local_epochs: 2,
        local_batch: 4,
        ensemble: Some(2),
        iterations: 20,
        hidden: vec![32, 32],
        ..RunOptions::default()
    }
    .attack_config()
    .unwrap();
    let report = pollster::block_on(attack_received(
        &Runtime::cpu(),
        &encoding(),
        &config,
        &from_st,
        &mut |_| true,
    ))
    .unwrap();
    let labels: Vec<String> = serde_json::from_str(&meta["labels"]).unwrap();
    assert_eq!(report.labels, labels);
    assert_eq!(report.rows.len(), 8);
}

/// Other models PyTorch trains, written in every format: a GELU network, logistic regression (no
/// hidden layer) and a ReLU network with one logit under BCEWithLogitsLoss (a sigmoid head). Each
/// format holds the same update, the update is leakscope's simulation of the same client, and
/// attacked it gives the reconstruction the simulated update gives.
#[test]
fn a_gelu_network_logistic_regression_and_a_sigmoid_head_from_pytorch_are_the_simulated_ones() {
    let dataset = encoding();
    for (dir, activation, head, hidden) in [
        ("gelu", Activation::Gelu, Head::Softmax, vec![32, 32]),
        ("logistic", Activation::Relu, Head::Softmax, vec![]),
        ("sigmoid-head", Activation::Relu, Head::Sigmoid, vec![32, 32]),
    ] {
        let model = Model { activation, head };
        let f = |file: &str| fixture(&format!("{dir}/{file}"));
        let st = ReceivedUpdate::from_safetensors(&f("weights.safetensors"), &f("update.safetensors")).unwrap();
        assert_eq!(
            metadata(&format!("{dir}/update.safetensors"))["activation"],
            activation.name()
        );
        assert_eq!(
            ReceivedUpdate::from_npz(&f("weights.npz"), &f("update.npz")).unwrap(),
            st,
            "{dir}"
        );
        let arrays = ReceivedUpdate::from_files(&f("update-arrays.npz"), Some(&f("weights-arrays.npz"))).unwrap();
        assert!(
            arrays.update.values().eq(st.update.values()) && arrays.params == st.params,
            "{dir}"
        );
        assert_eq!(
            metadata(&format!("{dir}/update.safetensors"))
                .get("head")
                .map_or("softmax", |h| h),
            head.name()
        );
        if dir != "gelu" {
            let json = ReceivedUpdate::from_files(&f("update.json"), None).unwrap();
            assert_eq!(json, st, "{dir}");
        }
        let mut sizes = vec![dataset.d()];
        sizes.extend(&hidden);
        sizes.push(head.outputs(2));
        assert_eq!(st.params.sizes, sizes, "{dir}");
        let ours = simulated_with(&st, &format!("{dir}/update.safetensors"), Protocol::Fedsgd, model);
        let gap = relative_gap(&st.update, &ours);
        eprintln!("{dir}: PyTorch's gradient against leakscope's: {gap:.2e} of the largest entry");
        assert!(
            gap < 1e-5,
            "{dir}: PyTorch's gradient and leakscope's differ by {gap:.2e}"
        );
        // With hidden layers, the default attack: its rows proved, the two updates (8e-8 apart)
        // give the same rows (a short ensemble's unproved rows would drift apart on so small a
        // difference). Logistic regression proves nothing: a short ensemble, which stays together.
        let short = hidden.is_empty();
        let options = RunOptions {
            ensemble: short.then_some(4),
            iterations: if short { 200 } else { RunOptions::default().iterations },
            activation,
            hidden: hidden.clone(),
            ..RunOptions::default()
        };
        // The head is read off the last layer's width where the caller does not state it.
        let options = st
            .attack_options(
                &dataset,
                options,
                None,
                None,
                &StatedModel {
                    hidden: Some(hidden.clone()),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(options.head, head, "{dir}");
        let config = options.attack_config().unwrap();
        let rt = Runtime::cpu();
        let attack =
            |r: &ReceivedUpdate| pollster::block_on(attack_received(&rt, &dataset, &config, r, &mut |_| true)).unwrap();
        let ours = ReceivedUpdate {
            update: ours,
            ..st.clone()
        };
        let (a, b) = (attack(&st), attack(&ours));
        // The fused CPU kernel runs ReLU networks under either head; the definition the rest.
        let engine = match activation.is_relu() && !hidden.is_empty() {
            true => "fused kernel",
            false => "burn tensor ops",
        };
        assert!(a.backend.label.contains(engine), "{dir}: {}", a.backend.label);
        // The same rows (a proved row may land in another slot of the batch).
        let rows = |r: &leakscope::report::reconstruction::ReconstructionReport| {
            let mut rows: Vec<Vec<String>> = r.rows.iter().map(|row| row.cells.clone()).collect();
            rows.sort();
            rows
        };
        assert_eq!(rows(&a), rows(&b), "{dir}");
    }
}

/// A regression (one linear output under MSELoss on hours-per-week, standardised as the encoding
/// states): safetensors, npz by name and by position and JSON hold the same update, which is
/// leakscope's simulation of the same client; attacked, every row is proved and each row's label,
/// which the update does not carry, is read off the last layer: the table's own value.
#[test]
fn a_pytorch_regression_update_gives_its_rows_and_their_labels() {
    let dir = "regression";
    let f = |file: &str| fixture(&format!("{dir}/{file}"));
    let enc: Encoding = serde_json::from_slice(&f("encoding.json")).unwrap();
    let table = common::dataset_as(
        "adult-sample.csv",
        "hours-per-week",
        leakscope::client::head::Task::Regression,
    );
    assert_eq!(
        enc,
        Encoding::of(&table),
        "the fixture's encoding is stale: re-export it"
    );
    let dataset = enc.into_dataset().unwrap();
    let st = ReceivedUpdate::from_safetensors(&f("weights.safetensors"), &f("update.safetensors")).unwrap();
    assert_eq!(
        ReceivedUpdate::from_npz(&f("weights.npz"), &f("update.npz")).unwrap(),
        st
    );
    let arrays = ReceivedUpdate::from_files(&f("update-arrays.npz"), Some(&f("weights-arrays.npz"))).unwrap();
    assert!(arrays.update.values().eq(st.update.values()) && arrays.params == st.params);
    assert_eq!(ReceivedUpdate::from_files(&f("update.json"), None).unwrap(), st);
    assert!(st.labels.is_none(), "a regression's update carries no labels");
    let model = Model {
        activation: Activation::Relu,
        head: Head::Linear,
    };
    let ours = simulated_on(
        &table,
        &st,
        &format!("{dir}/update.safetensors"),
        Protocol::Fedsgd,
        model,
    );
    let gap = relative_gap(&st.update, &ours);
    eprintln!("{dir}: PyTorch's gradient against leakscope's: {gap:.2e} of the largest entry");
    assert!(
        gap < 1e-5,
        "{dir}: PyTorch's gradient and leakscope's differ by {gap:.2e}"
    );
    let options = st
        .attack_options(&dataset, RunOptions::default(), None, None, &StatedModel::default())
        .unwrap();
    assert_eq!(
        options.head,
        Head::Linear,
        "the head is read off the encoding and the last layer"
    );
    let config = options.attack_config().unwrap();
    let report = pollster::block_on(attack_received(&Runtime::cpu(), &dataset, &config, &st, &mut |_| true)).unwrap();
    assert_eq!(
        report.regression_labels_exact,
        Some(true),
        "every row proved, every label read exactly"
    );
    assert!(report.labels.is_empty());
    assert!(
        report.not_applied.iter().any(|p| p.part == "label restoration"),
        "{:?}",
        report.not_applied
    );
    let rows: Vec<usize> = serde_json::from_str(&metadata(&format!("{dir}/update.safetensors"))["table_rows"]).unwrap();
    // A proved row is the batch row to the update's float precision: a wide column such as
    // fnlwgt (std 1e5) may be a few units off, within its tolerance.
    let same = |i: usize, cells: &[String]| {
        table
            .features
            .iter()
            .enumerate()
            .all(|(c, f)| match f.is_categorical() {
                true => table.format(c, table.rows[i][c]) == cells[c],
                false => (table.rows[i][c].num() - cells[c].parse::<f64>().unwrap()).abs() <= f.tolerance(),
            })
    };
    for row in &report.rows {
        let i = rows
            .iter()
            .copied()
            .find(|&i| same(i, &row.cells))
            .unwrap_or_else(|| panic!("{:?} is no row of the batch", row.cells));
        let got: f64 = row.label.as_ref().expect("every row has a label").parse().unwrap();
        assert_eq!(got, table.values[i], "row {i}");
    }
}

/// With the labels left to the attack, the client's batch proved row by row gives each row's own
/// label off the last layer (`attack::priors::row_labels`): the label of the table row it is, for the
/// softmax head and the sigmoid head alike; where Geng et al.'s counts alone were known before.
#[test]
fn once_every_row_is_proved_each_rows_label_is_read_off_the_update() {
    let dataset = encoding();
    let table = common::adult();
    for (dir, head) in [("", Head::Softmax), ("sigmoid-head/", Head::Sigmoid)] {
        let f = |file: &str| fixture(&format!("{dir}{file}"));
        let received = ReceivedUpdate::from_safetensors(&f("weights.safetensors"), &f("update.safetensors")).unwrap();
        // The default attack: every row proved (a short one leaves two of the sigmoid head's eight
        // rows unproved, and then no label is claimed).
        let options = received
            .attack_options(
                &dataset,
                RunOptions::default(),
                None,
                Some(LabelMode::Restored),
                &StatedModel::default(),
            )
            .unwrap();
        assert_eq!(options.head, head);
        let config = options.attack_config().unwrap();
        let report = pollster::block_on(attack_received(
            &Runtime::cpu(),
            &dataset,
            &config,
            &received,
            &mut |_| true,
        ))
        .unwrap();
        let rows: Vec<usize> =
            serde_json::from_str(&metadata(&format!("{dir}update.safetensors"))["table_rows"]).unwrap();
        let formatted = |i: usize| -> Vec<String> {
            table.rows[i]
                .iter()
                .enumerate()
                .map(|(c, &v)| table.format(c, v))
                .collect()
        };
        for row in &report.rows {
            let i = rows
                .iter()
                .copied()
                .find(|&i| formatted(i) == row.cells)
                .unwrap_or_else(|| panic!("{dir}: {:?} is no row of the batch", row.cells));
            assert_eq!(
                row.label.as_ref(),
                Some(&table.classes[table.labels[i]]),
                "{dir}: row {i}"
            );
        }
    }
}

/// What PyTorch wrote in every format, and mixed: the same network and the same update, exactly.
#[test]
fn safetensors_npz_by_name_and_by_position_and_json_hold_the_same_update() {
    for dir in ["", "fedavg/"] {
        let f = |file: &str| fixture(&format!("{dir}{file}"));
        let st = ReceivedUpdate::from_safetensors(&f("weights.safetensors"), &f("update.safetensors")).unwrap();
        let npz = ReceivedUpdate::from_npz(&f("weights.npz"), &f("update.npz")).unwrap();
        assert_eq!(npz, st, "{dir}: update.npz by name, with rows and labels");
        assert_eq!(
            ReceivedUpdate::from_files(&f("update.npz"), Some(&f("weights.npz"))).unwrap(),
            st,
            "{dir}: told apart by content"
        );
        // Flower's list of arrays: no names, no rows, no labels; layers named layer0, layer1, ….
        let positional = ReceivedUpdate::from_files(&f("update-arrays.npz"), Some(&f("weights-arrays.npz"))).unwrap();
        assert_eq!(positional.update.names(), ["layer0", "layer1", "layer2"]);
        assert_eq!(positional.params, st.params);
        assert!(positional.update.values().eq(st.update.values()));
        assert_eq!((positional.rows, positional.labels.as_ref()), (None, None));
        // Mixed: positional arrays take the other file's layer names.
        for (update, weights) in [
            ("update-arrays.npz", "weights.safetensors"),
            ("update.safetensors", "weights-arrays.npz"),
        ] {
            let mixed = ReceivedUpdate::from_files(&f(update), Some(&f(weights))).unwrap();
            assert_eq!(mixed.params, st.params, "{dir}{update} with {weights}");
            assert_eq!(mixed.update, st.update, "{dir}{update} with {weights}");
        }
    }
    let json = fixture("update.json");
    let st = ReceivedUpdate::from_safetensors(&fixture("weights.safetensors"), &fixture("update.safetensors")).unwrap();
    assert_eq!(ReceivedUpdate::from_files(&json, None).unwrap(), st);
}

#[test]
fn files_in_the_wrong_combination_are_named() {
    type Case = (Vec<u8>, Option<Vec<u8>>, &'static str);
    let cases: Vec<Case> = vec![
        (
            fixture("update.npz"),
            None,
            "the update is a numpy archive, which holds the update only",
        ),
        (
            fixture("update.safetensors"),
            None,
            "the update is a safetensors file, which holds the update only",
        ),
        (
            fixture("update.json"),
            Some(fixture("weights.npz")),
            "a JSON update carries its weights",
        ),
        (
            fixture("update.npz"),
            Some(fixture("update.json")),
            "weights: a JSON document",
        ),
        (
            fixture("update.npz"),
            Some(b"hello".to_vec()),
            "weights: neither a safetensors file",
        ),
    ];
    for (update, weights, want) in cases {
        let err = ReceivedUpdate::from_files(&update, weights.as_deref())
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{err}\nwanted: {want}");
    }
}

#[test]
fn an_update_that_does_not_fit_the_encoding_or_the_settings_is_refused() {
    let dataset = encoding();
    let received =
        ReceivedUpdate::from_safetensors(&fixture("weights.safetensors"), &fixture("update.safetensors")).unwrap();
    let rt = Runtime::cpu();
    let base = RunOptions {
        label: "salary".into(),
        batch_size: 8,
        hidden: vec![32, 32],
        iterations: 1,
        ..RunOptions::default()
    };
    let no_labels = ReceivedUpdate {
        labels: None,
        ..received.clone()
    };
    let fedavg = RunOptions {
        protocol: ProtocolKind::Fedavg,
        ..base.clone()
    };
    let cases: Vec<(leakscope::AttackConfig, &ReceivedUpdate, &str)> = vec![
        (
            base.attack_config().unwrap(),
            &no_labels,
            "the update carries no labels",
        ),
        (
            RunOptions {
                labels: LabelMode::Restored,
                ..fedavg.clone()
            }
            .attack_config()
            .unwrap(),
            &received,
            "restored labels are for FedSGD",
        ),
        (
            RunOptions {
                attack: leakscope::AttackKind::Random,
                ..base.clone()
            }
            .attack_config()
            .unwrap(),
            &received,
            "the random baseline draws from the table's rows",
        ),
    ];
    for (config, update, want) in cases {
        let err = pollster::block_on(attack_received(&rt, &dataset, &config, update, &mut |_| true)).unwrap_err();
        assert!(err.to_string().contains(want), "{err}\nwanted: {want}");
    }
    // A truncated file is named as such.
    let bytes = fixture("update.safetensors");
    let err = ReceivedUpdate::from_safetensors(&fixture("weights.safetensors"), &bytes[..bytes.len() / 2]).unwrap_err();
    assert!(err.to_string().contains("update: not a safetensors file"), "{err}");
}

/// The recipe check (`received::recipe`): PyTorch clients in float32 that train with SGD(momentum=0.9)
/// and with Adam, 2 local epochs of batches of 4 over 8 rows (scripts/export_update.py, rows.csv
/// beside each). Told its own recipe, each replays within the tolerance; told plain SGD, or the
/// other's, it does not; a shuffled order with several batches per epoch cannot be replayed
/// before the attack, and after it only in the orders the update chose: the rows' own orders
/// confirm the recipe, a wrong order or a wrong recipe leave it unchecked, never failed.
#[test]
fn the_recipe_check_passes_the_clients_own_recipe_and_catches_another() {
    use leakscope::client::fedavg::LocalOrder;
    use leakscope::client::optimizer::{ClientOptimizer, OptimizerKind};
    use leakscope::received::recipe::{RECIPE_TOLERANCE, check_recipe, check_recipe_in_orders};
    use leakscope::received::truth::truth_rows;
    let dataset = encoding();
    let momentum = ClientOptimizer {
        momentum: 0.9,
        ..Default::default()
    };
    let adam = ClientOptimizer {
        kind: OptimizerKind::Adam,
        ..Default::default()
    };
    let plain = ClientOptimizer::default();
    for (dir, own, lr, others) in [
        ("momentum", momentum, 0.01, [(plain, 0.01), (adam, 0.001)]),
        ("adam", adam, 0.001, [(plain, 0.001), (momentum, 0.001)]),
    ] {
        let f = |file: &str| fixture(&format!("{dir}/{file}"));
        let received = ReceivedUpdate::from_safetensors(&f("weights.safetensors"), &f("update.safetensors")).unwrap();
        let raw = leakscope::table::parse_csv(&f("rows.csv"), 1 << 20).unwrap();
        let truth = truth_rows(&dataset, &raw).unwrap();
        let config = |optimizer: ClientOptimizer, lr: f64, order: LocalOrder| leakscope::AttackConfig {
            batch_size: 8,
            hidden: vec![32, 32],
            protocol: Protocol::Fedavg(LocalTraining {
                epochs: 2,
                local_batch: 4,
                lr,
                optimizer,
                order,
            }),
            ..Default::default()
        };
        let check = |optimizer: ClientOptimizer, lr: f64, order: LocalOrder| {
            pollster::block_on(check_recipe(&config(optimizer, lr, order), &received, &truth)).unwrap()
        };
        let told = check(own, lr, LocalOrder::Given);
        eprintln!("{dir}: told its recipe, gap {:?}", told.relative_gap);
        assert_eq!(told.matches, Some(true), "{dir}: {told:?}");
        assert!(told.relative_gap.unwrap() < RECIPE_TOLERANCE / 10.0, "{dir}: {told:?}");
        for (other, lr) in others {
            let wrong = check(other, lr, LocalOrder::Given);
            eprintln!("{dir}: told {}, gap {:?}", other.describe(lr), wrong.relative_gap);
            assert_eq!(wrong.matches, Some(false), "{dir} told {other:?}: {wrong:?}");
            assert!(wrong.sentence().contains("FAILED"), "{}", wrong.sentence());
        }
        let shuffled = check(own, lr, LocalOrder::Shuffled);
        assert_eq!((shuffled.matches, shuffled.relative_gap), (None, None), "{shuffled:?}");
        // Reconstructed rows in reverse: the client's order is position j ← row 7 − j each epoch.
        let rows: Vec<_> = truth.rows.iter().rev().cloned().collect();
        let own_orders = vec![(0..8).rev().collect::<Vec<usize>>(); 2];
        let in_orders = |optimizer, lr, orders: &[Vec<usize>]| {
            let config = config(optimizer, lr, LocalOrder::Shuffled);
            pollster::block_on(check_recipe_in_orders(&config, &received, &truth, &rows, orders))
                .unwrap()
                .expect("a reshuffling client")
        };
        let confirmed = in_orders(own, lr, &own_orders);
        assert_eq!(confirmed.matches, Some(true), "{dir}: {confirmed:?}");
        assert!(
            confirmed.relative_gap.unwrap() < RECIPE_TOLERANCE / 10.0,
            "{confirmed:?}"
        );
        let mut wrong_order = own_orders.clone();
        wrong_order[1].swap(0, 7);
        let unchecked = in_orders(own, lr, &wrong_order);
        assert_eq!(
            (unchecked.matches, unchecked.relative_gap),
            (None, None),
            "{unchecked:?}"
        );
        assert!(unchecked.reason.contains("were not checked"), "{}", unchecked.reason);
        let (other, other_lr) = others[0];
        let unchecked = in_orders(other, other_lr, &own_orders);
        assert_eq!(unchecked.matches, None, "{dir} told {other:?}: {unchecked:?}");
        // A client in the given order is checked before the attack, not here.
        let given = pollster::block_on(check_recipe_in_orders(
            &config(own, lr, LocalOrder::Given),
            &received,
            &truth,
            &rows,
            &own_orders,
        ))
        .unwrap();
        assert!(given.is_none());
    }
}

//! Property tests of the options object a page hands the engine (issue 16): `RunOptions` as
//! src/wasm.rs reads it (serde, camelCase, every field but the label optional), random, mutated as
//! text, or with fields removed, retyped or set to edge values, never panics turned into settings
//! and checked against a table, never allocates more than a small multiple of the object, and
//! either passes validation within the engine's limits or fails with an error that names the
//! setting.
#[path = "common/prop.rs"]
mod support;

use leakscope::plan::limits::MAX_WORKING_SET_BYTES;
use leakscope::table::{Dataset, DatasetOptions, parse_csv};
use leakscope::{Error, RunOptions};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};

use support::{MIB, apply, apply_json, config, edits, json_edits, json_value, peak_of, specific};

#[global_allocator]
static ALLOCATOR: support::Counting = support::Counting;

/// The first rows of the Adult sample: a table to check settings against.
fn table() -> &'static (leakscope::table::RawTable, Dataset) {
    static TABLE: std::sync::OnceLock<(leakscope::table::RawTable, Dataset)> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let adult = std::fs::read(format!("{}/data/adult-sample.csv", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let head: Vec<&[u8]> = adult.split_inclusive(|&b| b == b'\n').take(301).collect();
        let raw = parse_csv(&head.concat(), usize::MAX).unwrap();
        let d = Dataset::from_raw(
            &raw,
            &DatasetOptions {
                label: "salary".into(),
                ..Default::default()
            },
        )
        .unwrap();
        (raw, d)
    })
}

/// Option objects as pages send them: the defaults, FedAvg, the attribute attack, CAFE, a defence.
fn originals() -> Vec<Value> {
    let base = serde_json::to_value(RunOptions {
        label: "salary".into(),
        ..Default::default()
    })
    .unwrap();
    let with = |extra: Value| {
        let mut v = base.clone();
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        v
    };
    vec![
        json!({"label": "salary"}),
        json!({"label": "salary", "batchSize": 8, "iterations": 10, "ensemble": 2}),
        base.clone(),
        with(json!({"protocol": "fedavg", "localEpochs": 5, "localBatch": 8, "clientLr": 0.01, "epochPrior": "auto"})),
        with(json!({"attack": "attribute", "sensitive": "sex", "rounds": 3, "l2": true})),
        with(json!({"attack": "attribute", "sensitive": "race", "membership": "unknown", "batchSize": 16})),
        with(
            json!({"attack": "cafe", "parties": 3, "cafeRows": 100, "rounds": 50, "batchSize": 10, "fakeGradients": 4}),
        ),
        with(json!({"clip": 1.0, "noise": 0.01, "delta": 1e-6, "lr": 0.05, "clients": 4})),
        with(
            json!({"kinds": {"age": "categorical", "education-num": "continuous"}, "ignore": ["fnlwgt"], "include": ["native-country"], "hidden": [64, 32]}),
        ),
        with(json!({"attack": "random", "iterations": 0, "trainingEpochs": 3})),
    ]
}

/// Read an options object as the page's engine does, build the table and the settings, and check
/// what they promise.
fn check_options(v: &Value) -> Result<(), TestCaseError> {
    let text = v.to_string();
    let (r, peak) = peak_of(|| -> Result<(), TestCaseError> {
        let o: RunOptions = match serde_json::from_value(v.clone()) {
            Ok(o) => o,
            Err(e) => {
                prop_assert!(specific(&e.to_string()), "vague error {e}");
                return Ok(());
            }
        };
        check_run_options(&o)
    });
    r?;
    prop_assert!(
        peak <= 64 * text.len() + 4 * MIB,
        "reading and checking allocated {peak} bytes for {} bytes of options",
        text.len()
    );
    Ok(())
}

fn check_run_options(o: &RunOptions) -> Result<(), TestCaseError> {
    let (raw, table) = table();
    // The table's reading: a dataset, or an error naming the column.
    let read = Dataset::from_raw(raw, &o.dataset_options());
    let dataset = match &read {
        Ok(d) => d,
        Err(e) => {
            prop_assert!(specific(&e.to_string()), "vague error {e:?}");
            prop_assert!(
                matches!(
                    e,
                    Error::UnknownColumn { .. } | Error::NotNumeric { .. } | Error::TooWide { .. } | Error::NoFeatures
                ),
                "{e:?}"
            );
            table
        }
    };
    // The options become an attack with its own settings, or are refused by name (another
    // attack's settings, the attribute attack without its column).
    let config = match o.attack_config() {
        Ok(c) => c,
        Err(e) => {
            prop_assert!(specific(&e.to_string()) && matches!(e, Error::Config(_)), "{e:?}");
            return Ok(());
        }
    };
    prop_assert_eq!(config.kind(), o.attack);
    for (check, has_rows) in [
        (config.validate(dataset), true),
        (config.validate_for_update(dataset), false),
    ] {
        match check {
            Ok(()) => {
                // What validation lets through is within the engine's limits.
                prop_assert!(config.batch_size >= 1 && (!has_rows || config.rows() <= dataset.n()));
                let inverts = config.attacker().inversion().is_some();
                prop_assert!(config.clients >= 1 && (config.members() >= 1 || !inverts));
                prop_assert!(config.iterations >= 1 || !inverts);
                prop_assert!(!config.hidden.contains(&0) && config.report_every >= 1);
                let need = config.working_set_bytes(dataset);
                prop_assert!(need <= MAX_WORKING_SET_BYTES, "{need} bytes let through");
                let lr = config.optimiser().lr;
                prop_assert!(lr > 0.0 && lr.is_finite());
            }
            Err(e) => {
                let m = e.to_string();
                prop_assert!(specific(&m) && matches!(e, Error::Config(_)), "{e:?}");
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(5000))]

    /// Any JSON value at all, and any object of the options' field names.
    #[test]
    fn random_values_read_or_fail_specifically(v in json_value(), fields in prop::collection::btree_map(
        prop::sample::select(vec![
            "label", "kinds", "ignore", "include", "attack", "batchSize", "ensemble", "iterations", "protocol",
            "localBatch", "localEpochs", "clientLr", "epochPrior", "seed", "labels", "hidden", "trainingEpochs",
            "clients", "clip", "noise", "fakeGradients", "delta", "lr", "reportEvery", "subspace", "secondLayer", "priorFallback", "earlyStop",
            "sensitive", "l2", "membership", "parties", "cafeRows", "rounds",
        ]),
        json_value(),
        0..8,
    )) {
        check_options(&v)?;
        let mut object: serde_json::Map<String, Value> = fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        object.entry("label").or_insert(json!("salary"));
        check_options(&Value::Object(object))?;
    }

    /// Real option objects with fields removed, retyped, set to edge values (0, −1, 2⁶⁴ − 1, 1e308,
    /// strings for numbers), or added.
    #[test]
    fn options_with_fields_edited_read_or_fail_specifically(which in any::<Index>(), edits in json_edits(4)) {
        let originals = originals();
        check_options(&apply_json(&originals[which.index(originals.len())], &edits))?;
    }

    /// Each numeric setting set to an edge value, the rest as a page sends them.
    #[test]
    fn edge_numbers_in_any_field_are_checked(which in any::<Index>(), field in prop::sample::select(vec![
            "batchSize", "ensemble", "iterations", "localBatch", "localEpochs", "clientLr", "seed", "trainingEpochs",
            "clients", "clip", "noise", "fakeGradients", "delta", "lr", "reportEvery", "parties", "cafeRows", "rounds",
        ]), value in prop_oneof![
            prop::sample::select(vec![
                json!(0), json!(1), json!(2), json!(-1), json!(0.0), json!(-0.0), json!(1e-300), json!(1e308),
                json!(u64::MAX), json!(u64::MAX / 2), json!(1u64 << 32), json!(1u64 << 53), json!(1usize << 20),
                json!(1000), json!(1001), json!(1024), json!(1025), json!(4000), json!(100_000), json!(100_001),
            ]),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_filter("finite", |v| v.is_finite()).prop_map(Value::from),
        ],
        hidden in prop::option::of(prop::collection::vec(prop_oneof![Just(0usize), 1usize..200, Just(1 << 20), Just(usize::MAX)], 0..4)),
    ) {
        let originals = originals();
        let mut v = originals[which.index(originals.len())].clone();
        v[field] = value;
        if let Some(h) = hidden {
            v["hidden"] = json!(h);
        }
        check_options(&v)?;
    }

    /// The options as text, with bytes flipped, cut short, numbers replaced by NaN, ±∞ or huge.
    #[test]
    fn options_text_mutated_reads_or_fails_specifically(which in any::<Index>(), edits in edits(4)) {
        let originals = originals();
        let text = apply(originals[which.index(originals.len())].to_string().as_bytes(), &edits);
        match serde_json::from_slice::<Value>(&text) {
            Ok(v) => check_options(&v)?,
            Err(e) => prop_assert!(specific(&e.to_string())),
        }
    }
}

/// Found by `edge_numbers_in_any_field_are_checked`: sizes from the options object that overflowed
/// the arithmetic of `AttackConfig::validate` (a panic where overflow is checked, a wrapped memory
/// estimate where it is not); the checks saturate now and refuse them.
#[test]
fn a_hidden_layer_too_wide_to_count_is_refused() {
    let o: RunOptions = serde_json::from_value(json!({"label": "salary", "hidden": [u64::MAX]})).unwrap();
    let err = o.attack_config().unwrap().validate(&table().1).unwrap_err().to_string();
    assert!(err.contains("GiB of memory"), "{err}");
}

#[test]
fn local_epochs_too_many_to_count_are_refused() {
    let o: RunOptions = serde_json::from_value(
        json!({"label": "salary", "protocol": "fedavg", "localEpochs": 1u64 << 59, "batchSize": 32}),
    )
    .unwrap();
    assert!(o.attack_config().unwrap().validate(&table().1).is_err());
}

#[test]
fn a_batch_too_large_to_count_is_refused_for_an_update() {
    let o: RunOptions =
        serde_json::from_value(json!({"label": "salary", "batchSize": 1u64 << 62, "clients": 4})).unwrap();
    assert!(o.attack_config().unwrap().validate_for_update(&table().1).is_err());
}

//! What several test files need: the bundled tables, read as a user's CSV would be.
use leakscope::table::{Dataset, DatasetOptions, parse_csv};

/// A table of `data/`, with `label` as the label and every other column inferred.
pub fn dataset(file: &str, label: &str) -> Dataset {
    dataset_as(file, label, Default::default())
}

/// A table of `data/` read for `task` (a regression's numeric label, say).
pub fn dataset_as(file: &str, label: &str, task: leakscope::client::head::Task) -> Dataset {
    let path = format!("{}/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let raw = parse_csv(&std::fs::read(path).unwrap(), usize::MAX).unwrap();
    Dataset::from_raw(
        &raw,
        &DatasetOptions {
            label: label.into(),
            task,
            ..Default::default()
        },
    )
    .unwrap()
}

/// The Adult sample with its `salary` label.
#[allow(dead_code)] // not every test file uses it
pub fn adult() -> Dataset {
    dataset("adult-sample.csv", "salary")
}

/// A FedAvg client of 32 rows in local batches of 8 under `optimizer` (lr 1e-3), attacked
/// briefly (a two-member, 20-step ensemble, no fallback): what reads the update itself needs no
/// optimisation.
#[allow(dead_code)]
pub fn brief_fedavg_client(
    optimizer: leakscope::client::optimizer::OptimizerKind,
    weight_decay: f64,
    epochs: usize,
    seed: u64,
) -> leakscope::RunOptions {
    leakscope::RunOptions {
        protocol: leakscope::options::ProtocolKind::Fedavg,
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
        ..leakscope::RunOptions::default()
    }
}

/// The attack `options` describe, on the CPU, run to its report.
#[allow(dead_code)]
pub fn run_options(data: &Dataset, options: &leakscope::RunOptions) -> leakscope::Report {
    pollster::block_on(leakscope::run_attack(
        &leakscope::Runtime::cpu(),
        data,
        &options.attack_config().unwrap(),
        &mut |_| true,
    ))
    .unwrap()
}

/// TabLeak with `ensemble` members, all of them (no stopping rule), and its other settings at
/// their defaults.
#[allow(dead_code)]
pub fn tableak(ensemble: usize) -> leakscope::AttackSpec {
    leakscope::AttackSpec::Tableak(leakscope::config::TableakSettings {
        ensemble,
        stop_members: false,
        ..Default::default()
    })
}

/// The attribute attack on `column` with `ensemble` members, one round, known membership.
#[allow(dead_code)]
pub fn attribute(column: &str, ensemble: usize) -> leakscope::config::AttributeSettings {
    leakscope::config::AttributeSettings {
        ensemble,
        ..leakscope::config::AttributeSettings::on(column)
    }
}

/// A long run's setting from the environment (a count or a first seed), else `default`.
#[allow(dead_code)] // the generators' tests read it
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

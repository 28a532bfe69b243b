//! Property tests of audit shares (issue 16): the shard-i-of-n.json files `leakscope audit
//! --shard` writes and `leakscope merge` reads back, random, mutated byte by byte or field by
//! field, with cells lost, repeated or out of range, and with grids of any size, never panic when
//! read and merged, never allocate more than a bounded amount for a small file, and either merge
//! into an audit that keeps its promises or fail with an error that names the problem.
#[path = "common/prop.rs"]
mod support;

use leakscope::AttackKind;
use leakscope::audit::{AuditOptions, AuditReport, CellResult, Shard, ShardResults, TableInfo, merge, render_table};
use leakscope::config::Protocol;
use leakscope::table::{Dataset, DatasetOptions, parse_csv};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;

use support::{MIB, apply, apply_json, config, edits, json_edits, peak_of, specific};

#[global_allocator]
static ALLOCATOR: support::Counting = support::Counting;

/// A table's header for the shares: a few rows of a bundled table.
fn table() -> &'static TableInfo {
    static TABLE: std::sync::OnceLock<TableInfo> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let bytes = std::fs::read(format!(
            "{}/tests/data/tables/stray-words.csv",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let raw = parse_csv(&bytes, usize::MAX).unwrap();
        let d = Dataset::from_raw(
            &raw,
            &DatasetOptions {
                label: raw.headers.last().unwrap().clone(),
                ..Default::default()
            },
        )
        .unwrap();
        TableInfo::of(&d, &Default::default())
    })
}

/// A small grid: every study, three attacks, two batches.
fn small_options() -> AuditOptions {
    AuditOptions {
        attacks: vec![AttackKind::Tableak, AttackKind::Cosine, AttackKind::Random],
        batches: 2,
        reference_batch: 4,
        batch_sizes: vec![2, 4],
        noise_scales: vec![0.0, 0.1],
        clip: 1.0,
        clients: vec![1, 2],
        local_epochs: vec![1, 2],
        local_batches: vec![2],
        training_epochs: vec![0, 1],
        client_rows: vec![3, 4],
        client_epochs: vec![1],
        ..AuditOptions::default()
    }
}

/// A result for each cell of `options`' grid, as a run would write it (made up, not attacked).
fn shares(options: &AuditOptions, count: usize, seed: u64) -> Vec<ShardResults> {
    let cells = options.grid().unwrap();
    let features = table().features.len();
    let x = |k: usize, j: usize| ((seed.wrapping_add(31 * k as u64 + j as u64) % 997) as f64) / 997.0;
    (0..count)
        .map(|index| {
            let shard = Shard { index, count };
            let results = cells
                .iter()
                .filter(|c| shard.holds(c.index))
                .map(|c| {
                    let k = c.index;
                    CellResult {
                        index: k,
                        accuracy: x(k, 0),
                        categorical: Some(x(k, 1)),
                        continuous: Some(x(k, 2)),
                        per_feature: (0..features).map(|f| x(k, 3 + f)).collect(),
                        per_feature_entropy: (0..features)
                            .map(|f| (c.attack == AttackKind::Tableak).then(|| x(k, 50 + f)))
                            .collect(),
                        random_accuracy: x(k, 99),
                        table_accuracy: (k % 3 > 0).then(|| x(k, 104)),
                        epsilon: c.config.defence.map(|_| 1.0 + x(k, 100)),
                        model_accuracy: (c.config.training_epochs > 0).then(|| x(k, 101)),
                        epoch_prior: None,
                        cells_shown: matches!(c.config.protocol, Protocol::Fedavg(_)).then(|| x(k, 103)),
                        seconds: x(k, 102),
                        backend: "cpu".into(),
                    }
                })
                .collect();
            ShardResults {
                leakscope: env!("CARGO_PKG_VERSION").into(),
                options: options.clone(),
                table: table().clone(),
                shard,
                cells: cells.len(),
                results,
            }
        })
        .collect()
}

/// The share files of a small audit run as `count` shares.
fn share_files(count: usize, seed: u64) -> Vec<Value> {
    shares(&small_options(), count, seed)
        .iter()
        .map(|s| serde_json::to_value(s).unwrap())
        .collect()
}

/// Read share files as `leakscope merge` does, merge them, and check what the audit promises.
fn check_merge(files: &[Vec<u8>]) -> Result<Option<String>, TestCaseError> {
    let len: usize = files.iter().map(Vec::len).sum();
    let (r, peak) = peak_of(|| -> Result<Option<String>, TestCaseError> {
        let mut read = Vec::new();
        for f in files {
            match serde_json::from_slice::<ShardResults>(f) {
                Ok(s) => read.push(s),
                Err(e) => {
                    prop_assert!(specific(&e.to_string()));
                    return Ok(Some(e.to_string()));
                }
            }
        }
        match merge(read) {
            Ok(audit) => {
                let cells = audit.options.grid().unwrap();
                prop_assert_eq!(audit.cells.len(), cells.len());
                prop_assert!(audit.cells.iter().enumerate().all(|(i, c)| c.index == i));
                prop_assert!(!audit.rows.is_empty() && audit.rows.iter().all(|r| r.batches >= 1));
                prop_assert!(!audit.verdict.sentences.is_empty());
                prop_assert!(!render_table(&audit).is_empty());
                let report = AuditReport::of(audit);
                prop_assert!(report.svgs.iter().all(|s| s.svg.starts_with("<svg")));
                Ok(None)
            }
            Err(e) => {
                let m = e.to_string();
                prop_assert!(specific(&m) && matches!(e, leakscope::Error::Config(_)), "{e:?}");
                Ok(Some(m))
            }
        }
    });
    let m = r?;
    prop_assert!(
        peak <= 64 * len + 16 * MIB,
        "reading and merging allocated {peak} bytes for {len} bytes of shares"
    );
    Ok(m)
}

/// An attack that learnt nothing from the update scores the table's guess (its fallback's cells
/// where the server holds the table), not the marginals' draw: the verdict calls a setting safe
/// near the better of the two, and not near the draw alone.
#[test]
fn a_setting_is_safe_near_the_tables_guess_not_only_the_marginals_draw() {
    let options = small_options();
    let with_table = |table: Option<f64>| {
        let mut files = shares(&options, 1, 3);
        for r in &mut files[0].results {
            (r.accuracy, r.random_accuracy, r.table_accuracy) = (0.70, 0.60, table);
        }
        merge(files).unwrap()
    };
    let audit = with_table(Some(0.70));
    assert!(audit.rows.iter().all(|r| (r.guessing.mean - 0.70).abs() < 1e-12));
    let thresholds = &audit.verdict.thresholds;
    assert!(
        !thresholds.is_empty() && thresholds.iter().all(|t| t.point.is_some()),
        "{thresholds:?}"
    );
    // Without the table's guess the same accuracy is 10 points above guessing: nowhere safe.
    let audit = with_table(None);
    assert!(audit.rows.iter().all(|r| (r.guessing.mean - 0.60).abs() < 1e-12));
    assert!(
        audit.verdict.thresholds.iter().all(|t| t.point.is_none()),
        "{:?}",
        audit.verdict.thresholds
    );
}

fn bytes_of(files: &[Value]) -> Vec<Vec<u8>> {
    files.iter().map(|f| serde_json::to_vec(f).unwrap()).collect()
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn random_bytes_are_refused_specifically(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        check_merge(&[bytes])?;
    }

    /// Shares as written merge into the audit one run gives, in any order.
    #[test]
    fn written_shares_merge(count in 1usize..5, seed in any::<u64>(), rotate in any::<Index>()) {
        let mut files = bytes_of(&share_files(count, seed));
        let whole = check_merge(&bytes_of(&share_files(1, seed)))?;
        prop_assert_eq!(&whole, &None);
        let k = rotate.index(files.len());
        files.rotate_left(k);
        prop_assert_eq!(check_merge(&files)?, None);
    }

    /// A share file with bytes flipped, cut short, lines repeated, numbers replaced.
    #[test]
    fn mutated_shares_merge_or_fail_specifically(count in 1usize..4, which in any::<Index>(), pretty in any::<bool>(), edits in edits(5)) {
        let files = share_files(count, 7);
        let mut bytes: Vec<Vec<u8>> = files
            .iter()
            .map(|f| if pretty { serde_json::to_vec_pretty(f).unwrap() } else { serde_json::to_vec(f).unwrap() })
            .collect();
        let k = which.index(bytes.len());
        bytes[k] = apply(&bytes[k], &edits);
        check_merge(&bytes)?;
    }

    /// A share with fields removed, retyped, set to edge values, or added: results lost, repeated,
    /// of cells past the grid, per-column numbers short, settings changed.
    #[test]
    fn shares_with_fields_edited_merge_or_fail_specifically(count in 1usize..4, which in any::<Index>(), edits in json_edits(4)) {
        let mut files = share_files(count, 11);
        let k = which.index(files.len());
        files[k] = apply_json(&files[k], &edits);
        check_merge(&bytes_of(&files))?;
    }

    /// Grids of any size, as a share's settings may state them: merged or refused within bounded
    /// memory.
    #[test]
    fn grids_of_any_size_merge_or_are_refused_in_bounded_memory(
        lists in prop::collection::vec(prop::collection::vec(1usize..100_000, 0..400), 6),
        attacks in prop::collection::vec(prop::sample::select(vec![AttackKind::Tableak, AttackKind::Cosine, AttackKind::Dlg, AttackKind::Random]), 1..6),
        batches in 1usize..100,
    ) {
        let mut options = small_options();
        options.batch_sizes = lists[0].clone();
        options.noise_scales = lists[1].iter().map(|&v| v as f64 / 1000.0).collect();
        options.clients = lists[2].clone();
        options.local_epochs = lists[3].clone();
        options.local_batches = if lists[3].is_empty() { Vec::new() } else { lists[4].iter().copied().chain([1]).collect() };
        options.training_epochs = lists[5].clone();
        options.attacks = attacks;
        options.batches = batches;
        let mut file = serde_json::to_value(&shares(&small_options(), 1, 3)[0]).unwrap();
        file["options"] = serde_json::to_value(&options).unwrap();
        let bytes = serde_json::to_vec(&file).unwrap();
        let m = check_merge(&[bytes])?;
        // The results are of the small grid: never a whole audit of this one.
        prop_assert!(m.is_some());
    }
}

/// Results lost, repeated and past the grid are named.
#[test]
fn shares_that_do_not_cover_the_grid_are_named() {
    let files = share_files(2, 5);
    let merged = |files: &[Value]| {
        merge(
            files
                .iter()
                .map(|f| serde_json::from_value(f.clone()).unwrap())
                .collect(),
        )
        .unwrap_err()
        .to_string()
    };
    let one = merged(&files[..1]);
    assert!(
        one.contains("have no result") && one.contains("is a shard missing?"),
        "{one}"
    );
    let twice = merged(&[files[0].clone(), files[0].clone(), files[1].clone()]);
    assert!(twice.contains("has two results"), "{twice}");
    let mut past = files.clone();
    past[0]["results"][0]["index"] = Value::from(100_000);
    let past = merged(&past);
    assert!(past.contains("the grid has"), "{past}");
}

/// Found by `mutated_shares_merge_or_fail_specifically` (a long run): a result with fewer numbers
/// per column than the table has columns made `merge` index past them.
#[test]
fn results_with_numbers_for_other_columns_are_refused() {
    let mut files = share_files(1, 5);
    let cells = files[0]["results"].as_array_mut().unwrap();
    cells[0]["perFeature"].as_array_mut().unwrap().pop();
    let err = merge(vec![serde_json::from_value(files[0].clone()).unwrap()])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("the result of cell 0 has accuracies for") && err.contains("the shards are of another table"),
        "{err}"
    );
}

//! The `leakscope` binary as a person uses it: a report on the terminal, a JSON file with the
//! documented keys, and readable errors (non-zero exit, no file left behind) on bad input.
use std::path::PathBuf;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_leakscope"))
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leakscope-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn data(file: &str) -> String {
    format!("{}/data/{file}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn attack_prints_a_report_and_writes_json() {
    let json = tmp("report.json");
    let out = bin()
        .args([
            "attack",
            "--csv",
            &data("german-credit.csv"),
            "--label",
            "credit_risk",
            "--batch-size",
            "4",
        ])
        .args([
            "--ensemble",
            "3",
            "--iterations",
            "50",
            "--seed",
            "2",
            "--quiet",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("TabLeak (ensemble 3) on a batch of 4 rows"), "{stdout}");
    assert!(stdout.contains("random baseline"));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for key in ["total", "categorical", "continuous"] {
        let v = report["accuracy"][key].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&v), "accuracy.{key} = {v}");
    }
    assert!(report["random_baseline"].as_f64().is_some());
    assert!(report["seconds"].as_f64().unwrap() > 0.0);
    assert_eq!(report["backend"]["kind"], "cpu");
    assert!(
        report["backend"]["label"]
            .as_str()
            .unwrap()
            .starts_with("cpu (fused kernel")
    );
    assert_eq!(report["rows"].as_array().unwrap().len(), 4);
}

#[test]
fn bad_input_gets_a_specific_error_and_no_output_file() {
    let ragged = tmp("ragged.csv");
    std::fs::write(&ragged, "a,b,y\n1,2,x\n3,y\n").unwrap();
    let binary = tmp("binary.csv");
    std::fs::write(&binary, b"a,y\n1,\xff\xfe\n").unwrap();
    let one_class = tmp("one-class.csv");
    std::fs::write(&one_class, "a,y\n1,x\n2,x\n").unwrap();
    // A sparse file: 300 MiB on paper, nothing on disk; refused before it is read.
    let huge = tmp("huge.csv");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(300 * 1024 * 1024)
        .unwrap();
    let cases = [
        (huge, "y", "more than the limit of 268435456 bytes"),
        (ragged, "y", "line 3 has 2 fields but the header has 3"),
        (binary, "y", "not valid UTF-8"),
        (one_class, "y", "has a single class"),
        (
            PathBuf::from(data("german-credit.csv")),
            "nope",
            "no column is named \"nope\"",
        ),
        (tmp("missing.csv"), "y", "cannot read"),
    ];
    for (csv, label, message) in cases {
        let json = tmp("never.json");
        let out = bin()
            .arg("attack")
            .arg("--csv")
            .arg(&csv)
            .args(["--label", label, "--quiet", "--json"])
            .arg(&json)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {stderr}", csv.display());
        assert!(
            stderr.contains(message),
            "{}: expected {message:?} in {stderr:?}",
            csv.display()
        );
        assert!(!json.exists(), "no report is written on failure");
    }
}

/// Batch k of a sweep is drawn with seed + k: seeds that would run past u64 are refused up front,
/// before any batch runs, instead of overflowing.
#[test]
fn a_sweep_whose_seeds_overflow_is_refused() {
    let out = bin()
        .args(["sweep", "--csv", &data("german-credit.csv"), "--label", "credit_risk"])
        .args([
            "--seed",
            "18446744073709551615",
            "--batches",
            "2",
            "--batch-sizes",
            "4",
            "--quiet",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("--seed 18446744073709551615 with --batches 2 runs past the largest seed"),
        "{stderr}"
    );
    assert!(
        stderr.contains("use a seed of at most 18446744073709551614"),
        "{stderr}"
    );
}

/// Without the `cuda` cargo feature, asking for CUDA says how to get it.
#[cfg(not(feature = "cuda"))]
#[test]
fn cuda_without_the_feature_says_how_to_build_it() {
    let out = bin()
        .args(["attack", "--csv", &data("german-credit.csv"), "--label", "credit_risk"])
        .args(["--backend", "cuda", "--batch-size", "4", "--iterations", "5", "--quiet"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("this build has no CUDA backend: build with `--features cuda`"),
        "{stderr}"
    );
}

#[test]
fn inspect_lists_columns_and_label_candidates() {
    let out = bin()
        .args(["inspect", "--csv", &data("adult-sample.csv")])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(stdout.contains("4000 rows, 294 with a missing value"), "{stdout}");
    assert!(stdout.contains("label candidates: salary"), "{stdout}");
}

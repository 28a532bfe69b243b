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

/// The received-update commands of docs/usage/real-updates.md: an encoding written by
/// `encoding`, a PyTorch update in safetensors and in JSON, the same report from both.
#[test]
fn a_received_update_is_attacked_from_every_format() {
    let encoding = tmp("encoding.json");
    let out = bin()
        .args([
            "encoding",
            "--csv",
            &data("adult-sample.csv"),
            "--label",
            "salary",
            "--out",
        ])
        .arg(&encoding)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let update = |file: &str| format!("{}/tests/data/pytorch-update/{file}", env!("CARGO_MANIFEST_DIR"));
    let attack = |files: &[&str], json: &PathBuf| {
        let out = bin()
            .arg("attack-update")
            .arg("--encoding")
            .arg(&encoding)
            .args(files.iter().flat_map(|f| {
                let flag = if f.starts_with("weights") {
                    "--weights"
                } else {
                    "--update"
                };
                [flag.to_string(), update(f)]
            }))
            .args([
                "--ensemble",
                "2",
                "--iterations",
                "40",
                "--show",
                "3",
                "--quiet",
                "--json",
            ])
            .arg(json)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
        (stdout, report)
    };
    let (text, from_st) = attack(&["weights.safetensors", "update.safetensors"], &tmp("st.json"));
    let (_, from_json) = attack(&["update.json"], &tmp("json.json"));
    assert!(text.contains("a gradient on 8 rows"), "{text}");
    assert_eq!(from_st["rows"].as_array().unwrap().len(), 8);
    assert!(from_st["accuracy"].is_null(), "no ground truth for a received update");
    assert_eq!(from_st["rows"], from_json["rows"], "one update, two files");
    // numpy archives: by name they carry rows and labels; as Flower's list of arrays they carry
    // neither, so the rows are given and the labels restored from the gradient.
    let (_, from_npz) = attack(&["weights.npz", "update.npz"], &tmp("npz.json"));
    assert_eq!(from_st["rows"], from_npz["rows"], "one update, three files");
    // A short attack of an update against an encoding.
    let short = |encoding: &std::path::Path, weights: &str, updated: &str, extra: &[&str]| {
        bin()
            .args(["attack-update", "--encoding"])
            .arg(encoding)
            .args(["--weights", &update(weights)])
            .args(["--update", &update(updated)])
            .args(["--ensemble", "2", "--iterations", "40", "--quiet"])
            .args(extra)
            .output()
            .unwrap()
    };
    let arrays = |extra: &[&str]| short(&encoding, "weights-arrays.npz", "update-arrays.npz", extra);
    let out = arrays(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("does not say how many rows it was computed on: give the batch size"),
        "{stderr}"
    );
    let out = arrays(&["--batch-size", "8", "--hidden", "none"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "the model is stated with no hidden layer (logistic regression) but the weights have hidden layers [32, 32]"
        ),
        "{stderr}"
    );
    let out = arrays(&["--batch-size", "8", "--head", "sigmoid"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "the model is stated with a sigmoid head (1 output for a 2-class label) but the weights' last layer \
             has 2 outputs"
        ),
        "{stderr}"
    );
    // The encoding may state the model: the activation the weights cannot show, checked against
    // the options where both say it.
    let stated = tmp("stated-encoding.json");
    let gelu = |extra: &[&str]| short(&stated, "gelu/weights.npz", "gelu/update.npz", extra);
    let out = bin()
        .args(["encoding", "--csv", &data("adult-sample.csv"), "--label", "salary"])
        .args(["--hidden", "32,32", "--activation", "gelu", "--out"])
        .arg(&stated)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json = tmp("stated.json");
    let out = gelu(&["--json", json.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["config"]["activation"]["kind"], "gelu");
    let stderr = String::from_utf8_lossy(&gelu(&["--activation", "relu"]).stderr).to_string();
    assert!(
        stderr.contains("the encoding states the model's activation as gelu but the options say relu: leave one out"),
        "{stderr}"
    );
    let out = arrays(&["--batch-size", "8", "--hidden", "32,32"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    // Restored from the gradient: the file's counts (six <=50K, two >50K), in the order restoration gives.
    assert!(
        text.contains("labels used (restored from the update): <=50K, <=50K, <=50K, <=50K, <=50K, <=50K, >50K, >50K"),
        "{text}"
    );
}

#[test]
fn bad_input_gets_a_specific_error_and_no_output_file() {
    let ragged = tmp("ragged.csv");
    std::fs::write(&ragged, "a,b,y\n1,2,x\n3,y\n").unwrap();
    // A gzip file renamed .csv is named as such.
    let binary = tmp("binary.csv");
    std::fs::write(&binary, [0x1F, 0x8B, 0x08, 0x00, 0x00, 0x00]).unwrap();
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
        (binary, "y", "is a gzip-compressed file, not a CSV: decompress it first"),
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

/// `--activation`, `--hidden none` and `--head sigmoid`: the report names them and the definition
/// that ran; what cannot be is refused by name.
#[test]
fn another_activation_logistic_regression_and_a_sigmoid_head_run_and_bad_ones_are_named() {
    let report = |csv: &str, label: &str, args: &[&str]| -> serde_json::Value {
        let json = tmp(&format!("{}.json", args.join("-")));
        let out = bin()
            .args(["attack", "--csv", &data(csv), "--label", label, "--quiet", "--json"])
            .arg(&json)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
    };
    let leaky = report(
        "german-credit.csv",
        "credit_risk",
        &[
            "--batch-size",
            "4",
            "--ensemble",
            "2",
            "--iterations",
            "40",
            "--activation",
            "leaky_relu=0.2",
        ],
    );
    assert_eq!(
        leaky["config"]["activation"],
        serde_json::json!({"kind": "leaky_relu", "slope": 0.2})
    );
    let label = leaky["backend"]["label"].as_str().unwrap();
    assert!(label.contains("burn tensor ops"), "{label}");
    // What the model rules out is said, with why.
    assert_eq!(leaky["not_applied"][0]["part"], "the first layer's proof");
    assert!(
        leaky["not_applied"][0]["why"]
            .as_str()
            .unwrap()
            .contains("ReLU's pattern")
    );
    // A batch too large for the second layer's certificate on the default network (rank 95 of
    // 100 units read above the update's noise, 7 needed): the report says why and up to which
    // batch size it places rows.
    let large = report(
        "adult-sample.csv",
        "salary",
        &["--batch-size", "96", "--ensemble", "2", "--iterations", "20"],
    );
    let why = certificate_not_applied(&large);
    assert!(
        why.contains("rank 95 of the first layer's 100 units") && why.contains("at most 93 rows"),
        "{why}"
    );
    // Logistic regression: one row is its gradient's ratio, recovered exactly.
    let logistic = report(
        "adult-sample.csv",
        "salary",
        &["--hidden", "none", "--batch-size", "1", "--seed", "0"],
    );
    assert_eq!(logistic["config"]["hidden"], serde_json::json!([]));
    assert_eq!(logistic["not_applied"].as_array().unwrap().len(), 3);
    assert_eq!(logistic["accuracy"]["total"], 1.0, "{}", logistic["accuracy"]);
    // One logit under binary cross-entropy: the ReLU pattern still proves the batch, and the
    // labels restored from that one output are the batch's.
    let sigmoid = report(
        "german-credit.csv",
        "credit_risk",
        &["--head", "sigmoid", "--batch-size", "8", "--labels", "restored"],
    );
    assert_eq!(sigmoid["config"]["head"], "sigmoid");
    assert_eq!(sigmoid["accuracy"]["total"], 1.0, "{}", sigmoid["accuracy"]);
    assert_eq!(sigmoid["label_accuracy"], 1.0);
    let out = bin()
        .args([
            "attack",
            "--csv",
            &data("adult-sample.csv"),
            "--label",
            "race",
            "--head",
            "sigmoid",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("a sigmoid head is one logit for a two-class label; this label has 5 classes"),
        "{stderr}"
    );
    for (args, want) in [
        (
            vec!["--activation", "swish"],
            "unknown activation \"swish\": use one of relu, leaky_relu, gelu, tanh, sigmoid",
        ),
        (
            vec!["--activation", "gelu=0.1"],
            "a slope is leaky_relu's; gelu has none",
        ),
        (vec!["--activation", "leaky_relu=steep"], "\"steep\" is not a slope"),
        (
            vec!["--hidden", "10,x"],
            "\"x\" is not a layer width: give widths such as 100,100, or none",
        ),
        (
            vec!["--attack", "cafe", "--activation", "tanh"],
            "CAFE's parties run a ReLU network (client::vertical); activation tanh is not simulated there",
        ),
        (
            vec!["--head", "tanh"],
            "unknown head \"tanh\": use one of softmax, sigmoid",
        ),
        (
            vec!["--attack", "cafe", "--head", "sigmoid"],
            "CAFE's parties run a softmax head (client::vertical); the sigmoid head is not simulated there",
        ),
    ] {
        let out = bin()
            .args([
                "attack",
                "--csv",
                &data("german-credit.csv"),
                "--label",
                "credit_risk",
                "--quiet",
            ])
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(want), "{args:?}: {stderr}");
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

fn table(file: &str) -> String {
    format!("{}/tests/data/tables/{file}", env!("CARGO_MANIFEST_DIR"))
}

/// `inspect --json` prints the schema object (the npm package's `inspect`); the text view shows
/// the same decisions: how the file was read, what is left out and why.
#[test]
fn inspect_shows_how_the_table_is_read() {
    let out = bin()
        .args(["inspect", "--csv", &table("identifiers.csv"), "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema["rows"], 25);
    assert_eq!(
        schema["dialect"],
        serde_json::json!({"delimiter": ",", "decimal_comma": false, "encoding": "utf-8"})
    );
    let id = &schema["columns"][0];
    assert_eq!(
        (&id["name"], &id["treatment"]),
        (&"customer_id".into(), &"identifier".into())
    );
    assert_eq!(
        id["notes"][0],
        "a distinct value on 25 of 25 rows: an identifier or free text"
    );
    assert_eq!(schema["columns"][2]["treatment"], "used");
    assert!(schema["columns"][2]["non_numeric"].is_null());
    let warnings: Vec<&str> = schema["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("include it (--include customer_id) to use it"));

    let out = bin()
        .args(["inspect", "--csv", &table("semicolon-decimal-comma.csv")])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("read as UTF-8, semicolon-separated, decimal comma\n"),
        "{stdout}"
    );
    let out = bin()
        .args(["inspect", "--csv", &table("stray-words.csv")])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("↳ 3 of 80 values are not numbers (\"unknown\", \"n/a\"): read as missing"),
        "{stdout}"
    );
    assert!(
        stdout.contains("note: column \"income\" is numeric but 3 of 80 values"),
        "{stdout}"
    );
}

/// A column left out by default is named in the report's warnings; `--include` puts it back.
#[test]
fn include_puts_a_left_out_column_back() {
    let run = |extra: &[&str]| -> serde_json::Value {
        let json = tmp(&format!("include-{}.json", extra.len()));
        let out = bin()
            .args(["attack", "--csv", &table("identifiers.csv"), "--label", "churn"])
            .args(["--attack", "random", "--batch-size", "4", "--quiet", "--json"])
            .arg(&json)
            .args(extra)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(
            stdout.contains("note: column \"customer_id\" is left out"),
            extra.is_empty(),
            "{stdout}"
        );
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
    };
    let names = |report: &serde_json::Value| -> Vec<String> {
        report["features"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap().to_string())
            .collect()
    };
    let report = run(&[]);
    assert_eq!(names(&report), vec!["age", "plan"]);
    assert!(
        report["warnings"][0]
            .as_str()
            .unwrap()
            .contains("--include customer_id")
    );
    let report = run(&["--include", "customer_id"]);
    assert_eq!(names(&report), vec!["customer_id", "age", "plan"]);
}

/// A small audit grid on the Adult sample: every study, two attacks, two batches.
fn audit_args(out: &std::path::Path) -> Vec<String> {
    [
        "audit",
        "--csv",
        &data("adult-sample.csv"),
        "--label",
        "salary",
        "--batches",
        "2",
        "--iterations",
        "40",
        "--ensemble",
        "3",
        "--attacks",
        "tableak,random",
        "--batch-sizes",
        "4,8",
        "--reference-batch",
        "8",
        "--noise-scales",
        "0,0.1",
        "--canaries",
        "50",
        "--clients",
        "1,2",
        "--local-epochs",
        "1,2",
        "--local-batches",
        "4",
        "--train-epochs",
        "0,1",
        "--client-rows",
        "8,16",
        "--client-epochs",
        "1",
        "--client-batch",
        "4",
        "--quiet",
        "--out",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([out.display().to_string()])
    .collect()
}

/// The audit's JSON with what differs between two runs of the same cells (wall time, and
/// nothing else) taken out.
fn audit_without_timing(dir: &std::path::Path) -> serde_json::Value {
    let mut audit: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("audit.json")).unwrap()).unwrap();
    audit["seconds"] = serde_json::Value::Null;
    for cell in audit["cells"].as_array_mut().unwrap() {
        cell["seconds"] = serde_json::Value::Null;
    }
    audit
}

#[test]
fn an_audit_in_shares_merges_into_the_same_report_as_one_run() {
    let whole = tmp("audit-whole");
    let out = bin().args(audit_args(&whole)).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    for file in [
        "audit.json",
        "audit.md",
        "batch-size.svg",
        "noise.svg",
        "clients.svg",
        "fedavg.svg",
        "training.svg",
        "client-rows.svg",
        "features.svg",
    ] {
        let text = std::fs::read_to_string(whole.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        if file.ends_with(".svg") {
            assert!(
                text.starts_with("<svg") && text.ends_with("</svg>") && text.contains("<polyline")
                    || file == "features.svg"
            );
        }
    }
    assert!(stdout.contains("| B = 8 | TabLeak | 2 |"), "{stdout}");
    assert!(stdout.contains("Batch size:") && stdout.contains("Noise:"), "{stdout}");
    assert!(stdout.contains("| n = 16, E = 1 | TabLeak | 2 |"), "{stdout}");
    assert!(
        stdout.contains("Client size (1 epoch of batches of 4, SGD (lr 0.01)):"),
        "{stdout}"
    );
    // The noise study states ε over the default 100 rounds beside one release.
    assert!(stdout.contains("ε over 100 rounds, q = 1"), "{stdout}");
    let audit: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(whole.join("audit.json")).unwrap()).unwrap();
    let noise_row = |sigma: f64| {
        audit["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["point"]["study"] == "noise" && r["point"]["sigma"] == sigma)
            .unwrap()
    };
    let noisy = noise_row(0.1);
    assert_eq!(noisy["overRounds"]["rounds"], 100);
    // The FedAvg study's rows say what share of the cells each update shows on its own (each
    // client replayed cell by cell); a FedSGD or noised setting's, nothing.
    let rows = audit["rows"].as_array().unwrap();
    for r in rows.iter().filter(|r| r["attack"] == "tableak") {
        let shown = &r["cellsShown"];
        match r["point"]["study"].as_str().unwrap() {
            "fedavg" => assert!(shown.as_f64().is_some_and(|s| s > 0.5 && s <= 1.0), "{r}"),
            "batchSize" | "noise" => assert!(shown.is_null(), "{r}"),
            _ => {}
        }
    }
    assert!(stdout.contains("| cells shown % |"), "{stdout}");
    // Beside it, the ε 50 canaries measure through the same DP-FedAvg: at σ = 0.1 over 100 rounds
    // they separate from the held-out ones entirely, so their ε is a floor ("≥").
    let canaries = &noisy["canaries"];
    assert_eq!(canaries["canaries"], 50, "{canaries}");
    assert_eq!(canaries["rounds"], 100);
    assert_eq!(canaries["every_round"]["beyond_range"], true, "{canaries}");
    assert!(stdout.contains("ε canaries measure (50 inserted"), "{stdout}");
    // Without noise nothing hides a canary: unbounded, and said so.
    let bare = noise_row(0.0);
    assert_eq!(bare["canaries"]["every_round"]["unbounded"], true, "{bare}");
    assert!(stdout.contains("| ∞ (no noise) |"), "{stdout}");
    assert_eq!(
        noisy["overRounds"]["epsilon"],
        noisy["overRounds"]["epsilon_against_server"]
    );

    // Three shares, each its own process, as on three machines; the merge joins two directories.
    let (a, b) = (tmp("audit-share-a"), tmp("audit-share-b"));
    for (i, dir) in [(0, &a), (1, &b), (2, &b)] {
        let out = bin()
            .args(audit_args(dir))
            .args(["--shard", &format!("{i}/3")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(dir.join(format!("shard-{i}-of-3.json")).exists());
        assert!(!dir.join("audit.json").exists(), "a share writes no report of its own");
    }
    let merged = tmp("audit-merged");
    let out = bin()
        .arg("merge")
        .arg(&a)
        .arg(&b)
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(audit_without_timing(&merged), audit_without_timing(&whole));
    assert_eq!(
        std::fs::read_to_string(merged.join("noise.svg")).unwrap(),
        std::fs::read_to_string(whole.join("noise.svg")).unwrap()
    );

    // A missing share is named, and nothing is written.
    let partial = tmp("audit-partial");
    let out = bin().arg("merge").arg(&b).arg("--out").arg(&partial).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("is a shard missing?"),
        "{stderr}"
    );
    assert!(!partial.join("audit.json").exists());
}

#[test]
fn bad_audit_settings_are_refused_before_anything_runs() {
    let dir = tmp("audit-bad");
    for (args, want) in [
        (vec!["--shard", "3/3"], "the share must be 0 to n − 1"),
        (vec!["--clients", "1,5000"], "clients 5000 must be between 1 and 1024"),
        (vec!["--noise-scales=-0.1"], "noise multiplier -0.1"),
        (vec!["--batches", "0"], "batches 0 must be between 1"),
        (
            vec!["--sample-rate", "1.5"],
            "the sampling rate must be in (0, 1], not 1.5",
        ),
        (vec!["--training-rounds", "0"], "the rounds must be between 1"),
        (vec!["--canaries", "1"], "at least 2 inserted and 2 held-out canaries"),
    ] {
        let out = bin().args(audit_args(&dir)).args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(want), "{args:?}: {stderr}");
        assert!(!dir.join("audit.json").exists());
    }
}

#[test]
fn defences_and_aggregation_are_stated_in_the_report() {
    let json = tmp("defended.json");
    let out = bin()
        .args([
            "attack",
            "--csv",
            &data("adult-sample.csv"),
            "--label",
            "salary",
            "--batch-size",
            "4",
        ])
        .args([
            "--ensemble",
            "2",
            "--iterations",
            "20",
            "--quiet",
            "--clients",
            "3",
            "--clip",
            "1",
        ])
        .args([
            "--noise",
            "0.5",
            "--fake-gradients",
            "2",
            "--train-epochs",
            "1",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.contains("the average of 3 clients' batches of 4 rows (12 rows in all)"),
        "{stdout}"
    );
    assert!(stdout.contains("fake gradients (best of 2 draws), clipping to norm 1, Gaussian noise σ = 0.5·C"));
    // σ = 0.5 inside an average of 3: one client's release is as at σ = 0.5·√3.
    assert!(
        stdout.contains("(ε = 5.17, δ = 1e-5), inside the average of 3 clients"),
        "{stdout}"
    );
    assert!(stdout.contains("trained 1 epoch on the table first"), "{stdout}");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["rows"].as_array().unwrap().len(), 12);
    assert!(report["model_accuracy"].as_f64().unwrap() > 0.6);
    // The noise blurs the second layer's span: the report says so rather than leave it off.
    let why = certificate_not_applied(&report);
    assert!(why.contains("noise on the update blurs it"), "{why}");
}

/// Why the report says the second layer's certificate did not apply (panics where it says nothing).
fn certificate_not_applied(report: &serde_json::Value) -> String {
    let parts = report["not_applied"].as_array().unwrap();
    let part = parts
        .iter()
        .find(|p| p["part"] == "the second layer's certificate")
        .unwrap_or_else(|| panic!("{parts:?}"));
    part["why"].as_str().unwrap().to_string()
}

/// `leakscope privacy`: ε over rounds as Opacus gives it (tests/fixtures/rdp_epsilon.json holds
/// z = 1, q = 0.01, T = 1000, δ = 1e-5: ε = 2.1536…), in words and as JSON; bad settings named.
#[test]
fn privacy_accounts_epsilon_over_rounds() {
    let args = [
        "privacy",
        "--noise-multiplier",
        "1",
        "--sample-rate",
        "0.01",
        "--rounds",
        "1000",
    ];
    let out = bin().args(args).arg("--json").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let fixture: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/tests/fixtures/rdp_epsilon.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap(),
    )
    .unwrap();
    let want = fixture["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["noise_multiplier"] == 1.0 && c["sample_rate"] == 0.01 && c["rounds"] == 1000 && c["delta"] == 1e-5)
        .unwrap()["epsilon"]
        .as_f64()
        .unwrap();
    let got = json["epsilon"].as_f64().unwrap();
    assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
    assert!(json["per_round"].as_f64().unwrap() < got);
    assert_eq!(json["releases_seen"], 10);
    assert!(json["epsilon_against_server"].as_f64().unwrap() > got);

    let out = bin().args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("after 1000 rounds") && text.contains("against the server"),
        "{text}"
    );

    for (flag, value, want) in [
        ("--sample-rate", "0", "the sampling rate must be in (0, 1], not 0"),
        (
            "--noise-multiplier",
            "-1",
            "the noise multiplier must be a number ≥ 0, not -1",
        ),
        ("--delta", "2", "δ must be in (0, 1), not 2"),
    ] {
        let out = bin().args(args).arg(format!("{flag}={value}")).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(want),
            "{flag} {value}: {stderr}"
        );
    }
}

/// `leakscope privacy --canaries`: the ε the canaries measure on the Gaussian mechanism, beside the
/// accountant's, in words and as JSON; without noise they separate completely and say so.
#[test]
fn privacy_measures_epsilon_with_canaries_beside_the_accountant() {
    let run = |sigma: &str, extra: &[&str]| {
        bin()
            .args([
                "privacy",
                "--noise-multiplier",
                sigma,
                "--rounds",
                "1",
                "--canaries",
                "300",
            ])
            .args(["--dimension", "30000"])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run("1", &["--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let analytic = json["per_release"].as_f64().unwrap();
    let canaries = &json["canaries"];
    assert_eq!(canaries["held_out"], 300);
    // σ = 1: the canaries stand μ = 1/σ apart (each read with the others taken out), to within 4
    // standard errors (1/√k each), whatever the seed; their ε is near the analytic one.
    for threat in ["every_round", "final_model"] {
        let c = &canaries[threat];
        let mu = c["mu"].as_f64().unwrap();
        assert!((mu - 1.0).abs() <= 4.0 / 300f64.sqrt(), "{threat}: {c}");
        let (lo, hi) = (c["interval"][0].as_f64().unwrap(), c["interval"][1].as_f64().unwrap());
        assert!(
            lo < c["epsilon"].as_f64().unwrap() && hi > c["epsilon"].as_f64().unwrap() && hi - lo < analytic,
            "{c}"
        );
        assert_eq!(c["null_holds"], true, "{c}");
    }
    // Without noise nothing hides a canary: unbounded, said in words.
    let text = String::from_utf8_lossy(&run("0", &[]).stdout).to_string();
    assert!(
        text.contains("canary estimate on the Gaussian mechanism alone: 300 inserted and 300 held-out")
            && text
                .contains("canaries, the final model only: ε unbounded: the aggregate held nothing but the canaries"),
        "{text}"
    );
    let out = bin()
        .args(["privacy", "--noise-multiplier", "1", "--rounds", "1", "--held-out", "5"])
        .output()
        .unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--canaries"));
    let out = run("1", &["--held-out", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("at least 2 inserted and 2 held-out canaries, not 300 and 1"),
        "{stderr}"
    );
}

/// A reader that stops early (`leakscope inspect ... | head -1`) ends the CLI as it ends any Unix
/// tool, by SIGPIPE, without a panic on its standard error.
#[cfg(unix)]
#[test]
fn output_piped_into_a_reader_that_stops_early_ends_quietly() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    // A table wide enough that `inspect` writes more than a pipe holds (64 KiB on Linux), so it
    // is still writing when the reader goes.
    let columns = 3000;
    let mut csv: String = (0..columns)
        .map(|c| format!("column_{c}"))
        .collect::<Vec<_>>()
        .join(",");
    for r in 0..5 {
        csv.push('\n');
        csv.push_str(
            &(0..columns)
                .map(|c| ((r * 7 + c) % 11).to_string())
                .collect::<Vec<_>>()
                .join(","),
        );
    }
    let path = tmp("wide.csv");
    std::fs::write(&path, csv).unwrap();
    let mut child = bin()
        .args(["inspect", "--csv", path.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The read end is closed here: the CLI's next write gets EPIPE.
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    const SIGPIPE: i32 = 13; // on Linux and the BSDs
    assert_eq!(out.status.signal(), Some(SIGPIPE), "{:?} {stderr}", out.status);
}

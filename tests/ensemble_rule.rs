//! The ensemble's stopping rule (`assess::stopping`): what it runs, what the report says of it,
//! and a split run's rounds (a page's workers) giving the report one run gives.
mod common;

use common::dataset;
use leakscope::config::TableakSettings;
use leakscope::{
    AttackConfig, AttackSpec, Report, Runtime, assess_early, assess_round, early_answer, ensemble_rounds,
    invert_members, run_attack,
};

fn attack(data: &leakscope::table::Dataset, config: &AttackConfig) -> Report {
    pollster::block_on(run_attack(&Runtime::cpu(), data, config, &mut |_| true)).unwrap()
}

/// TabLeak with the engine's ensemble (stopping rule on) or all 30 members.
fn config(batch_size: usize, seed: u64, iterations: usize, stop_members: bool) -> AttackConfig {
    AttackConfig {
        attack: AttackSpec::Tableak(TableakSettings {
            stop_members,
            ..Default::default()
        }),
        batch_size,
        seed,
        iterations,
        ..Default::default()
    }
}

/// The report without what differs by design between runs of one attack: its seconds and where
/// they went (a split run's timing is in its workers), the backend's split, and the mean loss
/// curve (each share's mean weighted by its members, summed in another order).
fn comparable(report: &Report) -> serde_json::Value {
    let mut json = serde_json::to_value(report).unwrap();
    let object = json.as_object_mut().unwrap();
    for key in ["seconds", "backend", "loss_curve", "timing"] {
        object.remove(key);
    }
    json
}

/// Where no proof can reach (B = 128 on the default network), the members run in rounds of the
/// rule: the report pools the members run, states each round's change, and stops at the first
/// round that changed at most 1 % of the sure cells; `stop_members: false` runs all 30.
#[test]
fn without_a_proof_the_ensemble_runs_in_rounds_until_its_sure_cells_settle() {
    let data = dataset("german-credit.csv", "credit_risk");
    for seed in [0, 1] {
        let r = attack(&data, &config(128, seed, 200, true));
        let e = r.row_details().and_then(|d| d.ensemble.clone()).expect("the rule ran");
        eprintln!("  seed {seed}: {} members, rounds {:?}", e.members, e.rounds);
        assert_eq!(e.most, 30);
        assert_eq!(r.member_steps.len(), e.members, "the report pools the members run");
        let members: Vec<usize> = e.rounds.iter().map(|r| r.members).collect();
        let expected: Vec<usize> = (0..members.len()).map(|k| 10 + 5 * k).collect();
        assert_eq!(members, expected, "rounds of 10, then 5");
        let (last, before) = e.rounds.split_last().unwrap();
        assert!(last.changed <= 0.01 || last.members == 30, "stopped at {last:?}");
        assert!(
            before.iter().all(|r| r.changed > 0.01),
            "a settled round ends the rule: {before:?}"
        );
        let fixed = attack(&data, &config(128, seed, 200, false));
        assert!(fixed.row_details().unwrap().ensemble.is_none());
        assert_eq!(fixed.member_steps.len(), 30);
    }
}

/// Where a proof can reach the batch, the first 5 members prove it alone after 300 steps (Adult
/// sample, B = 32) and the report says the others did not run.
#[test]
fn the_first_members_answer_where_they_prove_the_batch() {
    let data = dataset("adult-sample.csv", "salary");
    let r = attack(&data, &config(32, 0, 1500, true));
    let d = r.row_details().unwrap();
    assert_eq!(d.answered_after, Some(300));
    let e = d.ensemble.as_ref().expect("the first stage answered");
    assert_eq!((e.members, e.most), (5, 30));
    assert!(e.rule.starts_with("the first 5 members"), "{}", e.rule);
    assert_eq!(r.member_steps.len(), 5);
    assert!(
        r.rows
            .iter()
            .all(|row| row.provenance == Some(leakscope::report::Provenance::Proved))
    );
    let fixed = attack(&data, &config(32, 0, 1500, false));
    assert_eq!(fixed.member_steps.len(), 30);
    assert_eq!(fixed.accuracy, r.accuracy, "proved rows are the batch's either way");
}

/// Where two rows of the batch are near-twins that no proof tells apart (Adult sample, B = 32,
/// seed 2: ages 39 and 41, the rest alike but for fnlwgt), the early answer's members prove the
/// other 30 rows, and those two, inverted alone on what the proved rows leave of the update
/// (`assess::inverted_left`), are consistent with it: the attack answers after 300 steps of its
/// 30 members, where before it ran them all for 1500 steps to the same rows held.
#[test]
fn the_early_answer_stands_where_the_rows_left_inverted_alone_are_held() {
    use leakscope::report::Provenance;
    let data = dataset("adult-sample.csv", "salary");
    let r = attack(&data, &config(32, 2, 1500, true));
    let d = r.row_details().unwrap();
    assert_eq!(d.answered_after, Some(300));
    // The rows left are inverted only once every member has run (`run::answer_from`).
    assert!(d.ensemble.is_none(), "{:?}", d.ensemble);
    assert_eq!(r.member_steps.len(), 30);
    let count = |r: &Report, p: Provenance| r.rows.iter().filter(|row| row.provenance == Some(p)).count();
    assert_eq!(
        (count(&r, Provenance::Proved), count(&r, Provenance::Consistent)),
        (30, 2)
    );
    let text = leakscope::report::text::render_text(&r, 0);
    assert!(text.contains("proved or consistent with the update"), "{text}");
    let full = attack(
        &data,
        &AttackConfig {
            early_stop: false,
            ..config(32, 2, 1500, true)
        },
    );
    assert_eq!(full.row_details().unwrap().answered_after, None);
    for p in [Provenance::Proved, Provenance::Consistent] {
        assert_eq!(count(&full, p), count(&r, p), "{p:?}");
    }
    assert_eq!(full.accuracy, r.accuracy);
}

/// A split run (a page's workers) goes round by round: each round's shares inverted, then
/// `assess_round`, until it reports; the report is the one run's.
#[test]
fn a_split_run_goes_round_by_round_to_the_one_run_report() {
    let data = dataset("german-credit.csv", "credit_risk");
    let rt = Runtime::cpu();
    // Seed 0 runs two rounds (10, then 15 members).
    let config = config(128, 0, 200, true);
    let whole = attack(&data, &config);
    assert_eq!(
        whole.row_details().unwrap().ensemble.as_ref().map(|e| e.rounds.len()),
        Some(2)
    );
    let rounds = pollster::block_on(ensemble_rounds(&rt, &data, &config, 2))
        .unwrap()
        .expect("the rule applies");
    let mut parts = Vec::new();
    let mut split = None;
    for round in rounds {
        assert!(round.len() <= 2);
        for share in round {
            parts.push(pollster::block_on(invert_members(&rt, &data, &config, share, &mut |_| true)).unwrap());
        }
        if let Some(report) =
            pollster::block_on(assess_round(&rt, &data, &config, parts.clone(), None, 1.0, 2)).unwrap()
        {
            split = Some(report);
            break;
        }
    }
    let split = split.expect("the last round reports");
    assert_eq!(comparable(&split), comparable(&whole));
}

/// A split run's early answer goes stage by stage (the first 5 members over the workers, then
/// the other 25) and gives the one run's report where the first stage proves the batch.
#[test]
fn a_split_early_answer_goes_stage_by_stage_to_the_one_run_report() {
    let data = dataset("adult-sample.csv", "salary");
    let rt = Runtime::cpu();
    let config = config(32, 0, 1500, true);
    let whole = attack(&data, &config);
    let early = pollster::block_on(early_answer(&rt, &data, &config, 2))
        .unwrap()
        .expect("an unperturbed batch of 32 may answer early");
    let counts: Vec<Vec<usize>> = early
        .stages
        .iter()
        .map(|s| s.iter().map(|r| r.count).collect())
        .collect();
    assert_eq!(counts, vec![vec![2, 3], vec![12, 13]]);
    let quick = AttackConfig {
        iterations: early.steps,
        ..config.clone()
    };
    let mut parts = Vec::new();
    let mut split = None;
    for stage in early.stages {
        for share in stage {
            parts.push(pollster::block_on(invert_members(&rt, &data, &quick, share, &mut |_| true)).unwrap());
        }
        if let Some(report) = pollster::block_on(assess_early(&rt, &data, &config, parts.clone(), 1.0, 2)).unwrap() {
            split = Some(report);
            break;
        }
    }
    let split = split.expect("the first stage proves the batch");
    assert_eq!(split.member_steps.len(), 5);
    assert_eq!(comparable(&split), comparable(&whole));
}

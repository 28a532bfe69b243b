//! A client's round audited within a budget of work (`received::round`, the Flower Mod's call): the
//! verdict is taken from the problem's sizes before anything runs, so an engine slowed to a crawl
//! gives the same audit; a round over budget is not attacked, and its first local batch, attacked
//! in its place where asked, is kept apart with what its figure says of the server's.
mod common;

use leakscope::client::fedavg::{LocalOrder, LocalTraining};
use leakscope::client::head::{Head, Model};
use leakscope::client::network::Params;
use leakscope::client::optimizer::ClientOptimizer;
use leakscope::client::simulate::{Round, simulate_round};
use leakscope::config::Protocol;
use leakscope::options::ProtocolKind;
use leakscope::received::ReceivedUpdate;
use leakscope::received::round::{FIRST_BATCH_BOUNDS, RoundAudit, RoundBudget, audit_round, audited_work};
use leakscope::table::{Dataset, Encoding, StatedModel};
use leakscope::{AttackConfig, LabelMode, RunOptions, Runtime};
use serde_json::Value;

const ROWS: usize = 16;
const LOCAL_BATCH: usize = 4;

/// A FedAvg client of the sample's first 16 rows, trained as Flower's quickstart trains (SGD with
/// momentum 0.9, batches of 4): the encoding, the update it sends, its rows, and the attack's
/// settings on that update.
fn client() -> (Dataset, ReceivedUpdate, Dataset, AttackConfig) {
    let adult = common::adult();
    let encoding = Encoding::of(&adult).into_dataset().unwrap();
    let truth = Dataset {
        rows: adult.rows[..ROWS].to_vec(),
        labels: adult.labels[..ROWS].to_vec(),
        ..adult.clone()
    };
    let x: Vec<f32> = truth
        .rows
        .iter()
        .flat_map(|r| truth.encode(r))
        .map(|v| v as f32)
        .collect();
    let params = Params::init(&[truth.d(), 32, 32, 2], 3);
    let training = LocalTraining {
        epochs: 1,
        local_batch: LOCAL_BATCH,
        lr: 0.05,
        optimizer: ClientOptimizer {
            momentum: 0.9,
            ..Default::default()
        },
        order: LocalOrder::Given,
    };
    let round = Round {
        protocol: Protocol::Fedavg(training),
        ..Round::fedsgd(Model::default())
    };
    let all: Vec<usize> = (0..ROWS).collect();
    let update = pollster::block_on(simulate_round(&params, &x, &truth.targets(&all, Head::Softmax), &round)).unwrap();
    let received = ReceivedUpdate {
        params,
        update,
        embeddings: Vec::new(),
        rows: Some(ROWS),
        labels: Some(truth.labels.iter().map(|&l| truth.classes[l].clone()).collect()),
    };
    let options = RunOptions {
        protocol: ProtocolKind::Fedavg,
        local_epochs: 1,
        local_batch: LOCAL_BATCH,
        client_lr: 0.05,
        momentum: 0.9,
        ensemble: Some(2),
        iterations: 100,
        ..Default::default()
    };
    let options = received
        .attack_options(
            &encoding,
            options,
            None,
            Some(LabelMode::Known),
            &StatedModel::default(),
        )
        .unwrap();
    let config = options.attack_config().unwrap();
    (encoding, received, truth, config)
}

/// The audit with `budget`, and how many progress reports the engine made; `pause` slows every
/// report down (a throttled engine, as on a busy machine).
fn audit(budget: RoundBudget, pause: std::time::Duration) -> (RoundAudit, usize) {
    let (encoding, received, truth, config) = client();
    let mut reports = 0;
    let mut on = |_: &leakscope::attack::Progress| {
        reports += 1;
        std::thread::sleep(pause);
        true
    };
    let rt = Runtime::cpu();
    let audit = pollster::block_on(audit_round(&rt, &encoding, &config, &received, &truth, budget, &mut on)).unwrap();
    (audit, reports)
}

/// The audit as JSON without its timings.
fn untimed(audit: &RoundAudit) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("seconds");
                m.remove("timing");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = serde_json::to_value(audit).unwrap();
    strip(&mut v);
    v
}

/// The round's counted work: TabLeak's optimisation, twice over for the shadow client of its
/// fallback to the marginals.
fn round_gflop() -> f64 {
    let (encoding, _, _, config) = client();
    let work = audited_work(&config, &encoding).gflop;
    assert_eq!(work, 2.0 * config.work(&encoding).gflop());
    work
}

#[test]
fn a_round_over_budget_is_decided_before_anything_runs() {
    let gflop = round_gflop();
    assert!(gflop > 0.0);
    let budget = RoundBudget {
        gflop: Some(gflop * 0.99),
        first_batch: false,
    };
    let (audit, reports) = audit(budget, std::time::Duration::ZERO);
    assert_eq!(reports, 0, "nothing ran");
    assert!(audit.scored.is_none() && audit.first_batch.is_none());
    let why = audit.skipped.unwrap();
    assert!(
        why.contains("over the budget of") && why.contains("2 members × 100 steps"),
        "{why}"
    );
    assert_eq!(audit.work.gflop, gflop);
}

#[test]
fn a_slowed_engine_gives_the_same_audit() {
    let budget = RoundBudget {
        gflop: Some(round_gflop()),
        first_batch: true,
    };
    let pause = std::time::Duration::from_millis(40);
    let (quick, reports) = audit(budget, std::time::Duration::ZERO);
    let (slow, slowed) = audit(budget, pause);
    assert!(reports > 0 && quick.scored.is_some() && quick.skipped.is_none());
    assert_eq!(untimed(&quick), untimed(&slow));
    // A bound from the pauses alone, whatever else the machine does.
    assert!(
        slow.scored.unwrap().reconstruction.seconds >= slowed as f64 * pause.as_secs_f64(),
        "the throttle slowed the engine"
    );
}

#[test]
fn the_first_local_batch_is_attacked_apart_and_says_what_it_bounds() {
    let budget = RoundBudget {
        gflop: Some(round_gflop() / 2.0),
        first_batch: true,
    };
    let (audit, _) = audit(budget, std::time::Duration::ZERO);
    assert!(audit.scored.is_none() && audit.skipped.is_some());
    let first = audit.first_batch.expect("the first local batch is attacked");
    assert_eq!((first.rows, first.skipped.as_deref()), (LOCAL_BATCH, None));
    assert!(first.work.gflop <= budget.gflop.unwrap());
    let scored = first.scored.expect("scored against its rows");
    assert_eq!(scored.rows, LOCAL_BATCH);
    assert_eq!(first.bounds, FIRST_BATCH_BOUNDS);
    // Under a budget too small for it as well, it is not attacked either.
    let budget = RoundBudget {
        gflop: Some(first.work.gflop / 2.0),
        first_batch: true,
    };
    let (audit, reports) = self::audit(budget, std::time::Duration::ZERO);
    let first = audit.first_batch.unwrap();
    assert_eq!(reports, 0);
    assert!(first.scored.is_none() && first.skipped.unwrap().contains("first local batch"));
}

/// Where the round's attack leaves rows unproved, the server falls back to the marginals as a
/// simulated attack does: a shadow client drawn from the rows' marginals says which cells a guess
/// beats, the report says how many fell back, every cell that did is the random baseline's own
/// draw, and a row all of whose cells fell back is the prior's. Asked not to fall back, the
/// attack reports the ensemble alone.
#[test]
fn an_unproved_round_falls_back_to_the_marginals_where_a_shadow_client_says_guessing_wins() {
    use leakscope::config::AttackSpec;
    use leakscope::received::truth::attack_received_against;
    use leakscope::report::Provenance;
    let (encoding, received, truth, config) = client();
    let rt = Runtime::cpu();
    let run = |config: &AttackConfig| {
        pollster::block_on(attack_received_against(
            &rt,
            &encoding,
            config,
            &received,
            &truth,
            &mut |_| true,
        ))
        .unwrap()
    };
    let scored = run(&config);
    assert!(
        scored.rows_proved < ROWS,
        "the shadow runs where rows are left unproved"
    );
    let fallback = scored
        .reconstruction
        .details
        .fallback
        .clone()
        .expect("the fallback ran");
    assert_eq!(fallback.cells, ROWS * truth.features.len());
    // The rows come in the given order: the server replays the update, and says how far the
    // ensemble and the guess are from explaining it (where the guess does as well, all falls back).
    let (Some(ensemble_fit), Some(prior_fit)) = (fallback.update_fit, fallback.prior_fit) else {
        panic!("a replayable update's fits: {fallback:?}")
    };
    assert_eq!(fallback.exhausted, !(ensemble_fit < prior_fit));
    assert!(
        fallback.shadow_chosen >= fallback.shadow_ensemble.max(fallback.shadow_prior) - 1e-12,
        "{fallback:?}"
    );
    let prior_rows = scored
        .reconstruction
        .provenance
        .iter()
        .find(|p| p.provenance == Provenance::Prior);
    assert_eq!(
        prior_rows.map_or(0, |p| p.rows),
        fallback.prior_rows,
        "{:?}",
        scored.reconstruction.provenance
    );
    // Whatever the ensemble gave, the figure stays within reach of guessing.
    assert!(
        scored.accuracy.total >= scored.random_baseline - 0.05,
        "{} against guessing {}",
        scored.accuracy.total,
        scored.random_baseline
    );
    let mut alone = config.clone();
    if let AttackSpec::Tableak(s) = &mut alone.attack {
        s.prior_fallback = false;
    }
    let ensemble = run(&alone);
    assert!(ensemble.reconstruction.details.fallback.is_none());
    assert_eq!(ensemble.random_baseline, scored.random_baseline);
}

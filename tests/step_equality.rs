//! The accelerators against the definition they accelerate. The definition (`attack::inversion`,
//! burn tensor ops) runs its whole optimisation loop on burn's CPU backend; the fused CPU kernel,
//! and on wgpu the CubeCL kernels, must follow it step by step: the same loss at every step and
//! the same relaxed batch after 50 steps, within f32 rounding, and the same report on a short
//! seeded attack.
mod common;

use common::adult;
use leakscope::table::Dataset;
use leakscope::{
    AttackConfig, AttackKind, AttackSpec, MemberRange, Members, Report, Runtime, invert_members, run_attack,
};

/// Largest difference allowed between two paths' relaxed values after 50 steps, in standardised
/// units (a one-hot column spans about 3 of them, a continuous one 4 to 10).
const X_TOL: f32 = 1e-4;
/// Largest relative difference between two paths' mean loss at any step.
const LOSS_TOL: f64 = 1e-4;

/// Members of TabLeak's and the attribute attack's ensembles here.
const ENSEMBLE: usize = 4;

fn config(attack: AttackKind, iterations: usize, seed: u64) -> AttackConfig {
    let attack = match attack {
        AttackKind::Tableak => common::tableak(ENSEMBLE),
        AttackKind::Cosine => AttackSpec::Cosine,
        AttackKind::Dlg => AttackSpec::Dlg,
        other => panic!("{other} has no step to compare here"),
    };
    AttackConfig {
        attack,
        batch_size: 8,
        iterations,
        seed,
        report_every: 1,
        ..Default::default()
    }
}

fn invert(rt: &Runtime, data: &Dataset, config: &AttackConfig) -> Members {
    let range = MemberRange {
        first: 0,
        count: config.members(),
    };
    pollster::block_on(invert_members(rt, data, config, range, &mut |_| true)).unwrap()
}

fn attack(rt: &Runtime, data: &Dataset, config: &AttackConfig) -> Report {
    pollster::block_on(run_attack(rt, data, config, &mut |_| true)).unwrap()
}

/// `fast` follows `reference`: every step's mean loss, and the final relaxed rows and probabilities.
fn assert_follows(what: &str, reference: &Members, fast: &Members) {
    assert_eq!(
        reference.loss_curve.len(),
        fast.loss_curve.len(),
        "{what}: steps reported"
    );
    let mut worst_loss = 0f64;
    for (&(s1, l1), &(s2, l2)) in reference.loss_curve.iter().zip(&fast.loss_curve) {
        assert_eq!(s1, s2);
        let rel = (l1 - l2).abs() / l1.abs().max(1e-3);
        worst_loss = worst_loss.max(rel);
        assert!(
            rel <= LOSS_TOL,
            "{what}: step {s1}: loss {l2} against {l1} (relative {rel:.1e})"
        );
    }
    let worst = |a: &[f32], b: &[f32]| {
        assert_eq!(a.len(), b.len(), "{what}: lengths");
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max)
    };
    let (dx, dp) = (worst(&reference.x, &fast.x), worst(&reference.probs, &fast.probs));
    eprintln!(
        "{what}: {} steps, worst loss difference {worst_loss:.1e} (relative), worst |Δx| {dx:.1e}, |Δp| {dp:.1e}",
        reference.loss_curve.len()
    );
    assert!(
        dx <= X_TOL,
        "{what}: relaxed rows differ by {dx} after {} steps",
        reference.loss_curve.len()
    );
    assert!(dp <= X_TOL, "{what}: probabilities differ by {dp}");
}

/// The fused kernel runs each thread's members through every step between two reads before the
/// threads join (`Stepper::steps`): exactly what it computes a step at a time, members that stop
/// early included.
#[test]
fn the_cpu_kernel_runs_the_steps_between_reports_as_it_runs_them_one_by_one() {
    let data = adult();
    let kernel = Runtime::cpu();
    let each = config(AttackKind::Tableak, 1500, 1);
    let one = invert(&kernel, &data, &each);
    let many = invert(
        &kernel,
        &data,
        &AttackConfig {
            report_every: 100,
            ..each
        },
    );
    assert!(
        one.steps.iter().any(|&s| s < 1500),
        "a member stops early: {:?}",
        one.steps
    );
    assert_eq!((&one.x, &one.probs, &one.steps), (&many.x, &many.probs, &many.steps));
}

#[test]
fn the_cpu_kernel_follows_the_definition_step_by_step() {
    let data = adult();
    let definition = Runtime::cpu().definition();
    let kernel = Runtime::cpu();
    for attack in [AttackKind::Tableak, AttackKind::Cosine, AttackKind::Dlg] {
        let c = config(attack, 50, 5);
        assert_follows(
            &format!("{attack} kernel"),
            &invert(&definition, &data, &c),
            &invert(&kernel, &data, &c),
        );
    }
}

/// FedAvg over the client's 8 rows: 2 local epochs of 2 local steps.
fn fedavg() -> leakscope::config::Protocol {
    leakscope::config::Protocol::Fedavg(leakscope::client::fedavg::LocalTraining {
        epochs: 2,
        local_batch: 4,
        lr: 0.01,
        ..Default::default()
    })
}

/// FedAvg, differentiated through every local step; TabLeak on rows in the given order (one copy)
/// and reshuffled (per-epoch copies and the epoch prior), and the Cosine baseline.
#[test]
fn the_cpu_kernel_follows_the_definition_through_fedavg() {
    use leakscope::client::fedavg::LocalOrder;
    use leakscope::config::Protocol;
    let data = adult();
    let definition = Runtime::cpu().definition();
    let kernel = Runtime::cpu();
    let shuffled = match fedavg() {
        Protocol::Fedavg(t) => Protocol::Fedavg(leakscope::client::fedavg::LocalTraining {
            order: LocalOrder::Shuffled,
            ..t
        }),
        p => p,
    };
    for (attack, protocol) in [
        (AttackKind::Tableak, fedavg()),
        (AttackKind::Tableak, shuffled),
        (AttackKind::Cosine, fedavg()),
    ] {
        let c = AttackConfig {
            protocol,
            ..config(attack, 50, 5)
        };
        assert_follows(
            &format!("FedAvg {attack} {protocol:?} kernel"),
            &invert(&definition, &data, &c),
            &invert(&kernel, &data, &c),
        );
    }
}

/// The client's SGD (`client::optimizer`) in the CPU kernel (`accel::cpu::optimizer`), one
/// coordinate at a time, against the definition's tensor ops: momentum, dampening, Nesterov and
/// weight decay; and a client that reshuffles its rows (whose every epoch gets rows of its own in
/// every attack). Adam is held to the definition one evaluation at a time instead
/// (tests/golden_optimizers.rs): its du/dd near d = 0 turns float32 rounding into whole
/// sign-Adam steps of the rows within three steps, so whole runs part however right each step is.
#[test]
fn the_cpu_kernel_follows_the_definition_under_every_client_optimiser() {
    use leakscope::client::fedavg::{LocalOrder, LocalTraining};
    use leakscope::client::optimizer::ClientOptimizer;
    use leakscope::config::Protocol;
    let data = adult();
    let definition = Runtime::cpu().definition();
    let kernel = Runtime::cpu();
    let sgd = ClientOptimizer::default();
    let recipes = [
        (
            "momentum + dampening + decay",
            ClientOptimizer {
                momentum: 0.9,
                dampening: 0.1,
                weight_decay: 0.01,
                ..sgd
            },
        ),
        (
            "Nesterov",
            ClientOptimizer {
                momentum: 0.9,
                nesterov: true,
                ..sgd
            },
        ),
    ];
    for (name, optimizer) in recipes {
        for (attack, order) in [
            (AttackKind::Tableak, LocalOrder::Given),
            (AttackKind::Cosine, LocalOrder::Shuffled),
        ] {
            let c = AttackConfig {
                protocol: Protocol::Fedavg(LocalTraining {
                    epochs: 2,
                    local_batch: 4,
                    lr: 0.01,
                    optimizer,
                    order,
                }),
                // 10 steps: each step agrees to float rounding (tests/golden_optimizers.rs holds
                // both to PyTorch at 1e-6), and sign-Adam on the rows turns a rounding in a
                // gradient near zero into a whole step: the rows part by 1e-3 at step 15.
                ..config(attack, 10, 5)
            };
            let ran = self::attack(&kernel, &data, &c).backend.label;
            assert!(ran.contains("fused kernel"), "{name}: {ran}");
            assert_follows(
                &format!("FedAvg {name} {attack} {order:?} kernel"),
                &invert(&definition, &data, &c),
                &invert(&kernel, &data, &c),
            );
        }
    }
}

/// A sigmoid head (one logit under binary cross-entropy): the fused CPU kernel runs it, on FedSGD
/// (TabLeak, DLG) and through FedAvg's local steps, and follows the definition step by step.
#[test]
fn the_cpu_kernel_follows_the_definition_under_a_sigmoid_head() {
    use leakscope::client::head::Head;
    use leakscope::config::Protocol;
    let data = adult();
    let definition = Runtime::cpu().definition();
    let kernel = Runtime::cpu();
    for (attack, protocol) in [
        (AttackKind::Tableak, Protocol::Fedsgd),
        (AttackKind::Dlg, Protocol::Fedsgd),
        (AttackKind::Tableak, fedavg()),
    ] {
        let c = AttackConfig {
            head: Head::Sigmoid,
            protocol,
            ..config(attack, 50, 5)
        };
        // The kernel, not the definition, is what ran: else this would compare the definition
        // with itself.
        let ran = self::attack(&kernel, &data, &c).backend.label;
        assert!(ran.contains("fused kernel"), "{ran}");
        assert_follows(
            &format!("sigmoid head {attack} {protocol:?} kernel"),
            &invert(&definition, &data, &c),
            &invert(&kernel, &data, &c),
        );
    }
}

/// The attribute attack on `relationship` over 2 local epochs of 2 steps.
fn attribute_config(iterations: usize) -> AttackConfig {
    use leakscope::client::fedavg::LocalTraining;
    use leakscope::config::Protocol;
    AttackConfig {
        attack: AttackSpec::Attribute(common::attribute("relationship", ENSEMBLE)),
        protocol: Protocol::Fedavg(LocalTraining {
            epochs: 2,
            local_batch: 4,
            lr: 0.01,
            ..Default::default()
        }),
        ..config(AttackKind::Tableak, iterations, 5)
    }
}

/// The attribute attack: every cell but the sensitive column's pinned (`attack::priors::known`), through
/// FedAvg's local steps; the pinned cells come back exactly as given on both.
#[test]
fn the_cpu_kernel_follows_the_definition_on_the_attribute_attack() {
    let data = adult();
    let c = attribute_config(50);
    let reference = invert(&Runtime::cpu().definition(), &data, &c);
    let kernel = invert(&Runtime::cpu(), &data, &c);
    assert_follows("attribute kernel", &reference, &kernel);
    // Only the sensitive block moved: every other cell is the same in every member.
    let f = data.features.iter().find(|f| f.name == "relationship").unwrap();
    let d = data.d();
    let rows: Vec<&[f32]> = kernel.x.chunks_exact(d).collect();
    let per_member = rows.len() / ENSEMBLE;
    for (i, row) in rows.iter().enumerate() {
        let first = rows[i % per_member];
        for j in (0..d).filter(|j| !(f.offset..f.offset + f.width()).contains(j)) {
            assert_eq!(row[j], first[j], "row {i} column {j}: a known cell moved");
        }
    }
}

#[test]
fn the_cpu_kernel_gives_the_definitions_report() {
    let data = adult();
    let c = AttackConfig {
        report_every: 25,
        ..config(AttackKind::Tableak, 150, 2)
    };
    let (a, b) = (
        attack(&Runtime::cpu().definition(), &data, &c),
        attack(&Runtime::cpu(), &data, &c),
    );
    assert_eq!(
        a.rows.iter().map(|r| &r.reconstructed).collect::<Vec<_>>(),
        b.rows.iter().map(|r| &r.reconstructed).collect::<Vec<_>>()
    );
    assert_eq!(a.accuracy, b.accuracy);
    assert!(
        a.accuracy.total > a.random_baseline,
        "the short attack learned something"
    );
}

/// The GPU kernels on burn's wgpu backend (Mesa's lavapipe in CI): where LEAKSCOPE_WGPU=1 says a
/// Vulkan driver is installed (scripts/test.sh sets it); there a missing adapter is a failure.
#[test]
fn the_gpu_kernels_follow_the_definition_step_by_step() {
    if std::env::var("LEAKSCOPE_WGPU").as_deref() != Ok("1") {
        eprintln!("LEAKSCOPE_WGPU is not 1: GPU kernels not run");
        return;
    }
    let gpu = pollster::block_on(Runtime::wgpu())
        .expect("a wgpu adapter")
        .fixed_cadence();
    eprintln!("wgpu: {}", gpu.info.label);
    let data = adult();
    let definition = Runtime::cpu().definition();
    for attack in [AttackKind::Tableak, AttackKind::Cosine, AttackKind::Dlg] {
        let c = config(attack, 50, 5);
        assert_follows(
            &format!("{attack} GPU kernels"),
            &invert(&definition, &data, &c),
            &invert(&gpu, &data, &c),
        );
    }
    // A batch of 5: the kernels' blocks of four rows end part-filled.
    let c = AttackConfig {
        batch_size: 5,
        ..config(AttackKind::Tableak, 50, 6)
    };
    assert_follows(
        "TabLeak GPU kernels, B = 5",
        &invert(&definition, &data, &c),
        &invert(&gpu, &data, &c),
    );
    let c = AttackConfig {
        report_every: 25,
        ..config(AttackKind::Tableak, 150, 2)
    };
    let (a, b) = (attack(&definition, &data, &c), attack(&gpu, &data, &c));
    assert_eq!(
        a.rows.iter().map(|r| &r.reconstructed).collect::<Vec<_>>(),
        b.rows.iter().map(|r| &r.reconstructed).collect::<Vec<_>>()
    );
    assert_eq!(a.accuracy, b.accuracy);
    assert_eq!(b.backend.kind, leakscope::BackendKind::Wgpu);
    // The attribute attack pins known cells in the definition, which runs it on the GPU too.
    let c = attribute_config(20);
    assert_follows(
        "attribute on wgpu",
        &invert(&definition, &data, &c),
        &invert(&gpu, &data, &c),
    );
}

/// A step of the GPU kernels is at most 25 kernel launches (issue 7's target), counted by
/// cubecl's launch observer on lavapipe.
#[test]
fn a_gpu_step_takes_few_kernel_launches() {
    if std::env::var("LEAKSCOPE_WGPU").as_deref() != Ok("1") {
        eprintln!("LEAKSCOPE_WGPU is not 1: launches not counted");
        return;
    }
    let gpu = pollster::block_on(Runtime::wgpu()).expect("a wgpu adapter");
    let data = adult();
    let per_step = |steps: usize| {
        let c = AttackConfig {
            report_every: 1000,
            ..config(AttackKind::Tableak, steps, 1)
        };
        leakscope::runtime::count_launches(|| invert(&gpu, &data, &c)).0
    };
    // The difference between two run lengths leaves out the setup and the final relaxation.
    let launches = (per_step(12) - per_step(2)) as f64 / 10.0;
    eprintln!("{launches} launches per step");
    assert!(launches <= 25.0, "{launches} launches per step");
    assert!(launches >= 5.0, "the observer saw the kernels ({launches} per step)");
}

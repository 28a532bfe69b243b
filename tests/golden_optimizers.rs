//! Golden vectors for the FedAvg client's optimisers (fixture `fedavg_optimizers.json`, made by
//! scripts/golden_optimizers.py with torch.optim in float64): for SGD with momentum, dampening,
//! Nesterov and weight decay, Adam and AdamW, and a shuffled order, the client's update θ0 − θE
//! (`client::fedavg::local_training_in_order`) and the attacker's gradient of the cosine loss
//! through every local step (`attack::inversion::second_order::reverse_local_training`, the
//! optimiser's reverse included).
use burn::tensor::{Tensor, TensorData};
use leakscope::attack::Objective;
use leakscope::attack::accel::cpu::{HostProblem, loss_and_grad as kernel_loss_and_grad};
use leakscope::attack::inversion::Simulation;
use leakscope::attack::inversion::problem::ProblemSpec;
use leakscope::attack::inversion::second_order::reverse_local_training;
use leakscope::client::fedavg::{LocalOrder, LocalTraining, local_training_in_order};
use leakscope::client::gradient::ParamGrads;
use leakscope::client::network::{Net, Params};
use leakscope::client::optimizer::ClientOptimizer;
use leakscope::client::update::Update;
use leakscope::runtime::{Runtime, read_f32};
use serde_json::Value as Json;

/// float32 against float64: the worst case measured is 3e-5 (an update's W1 under plain SGD).
const REL_TOL: f64 = 2e-4;

fn fixture(name: &str) -> Json {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn flat(v: &Json) -> Vec<f64> {
    match v {
        Json::Array(a) => a.iter().flat_map(flat).collect(),
        Json::Number(n) => vec![n.as_f64().unwrap()],
        other => panic!("not a number array: {other}"),
    }
}

fn f32s(v: &Json) -> Vec<f32> {
    flat(v).iter().map(|&v| v as f32).collect()
}

fn rel_err(ours: &[f32], reference: &[f64]) -> f64 {
    assert_eq!(ours.len(), reference.len());
    let err: f64 = ours.iter().zip(reference).map(|(&a, &b)| (a as f64 - b).powi(2)).sum();
    let norm: f64 = reference.iter().map(|b| b * b).sum();
    (err / norm.max(1e-300)).sqrt()
}

/// The network of `mlp_param_grad.json` (weights [in, out]).
fn params(f: &Json) -> Params {
    let p = &f["params"];
    let mut sizes = vec![p["W1"].as_array().unwrap().len()];
    let (mut weights, mut biases) = (Vec::new(), Vec::new());
    for l in 1..=3 {
        let w = &p[format!("W{l}")];
        sizes.push(w[0].as_array().unwrap().len());
        weights.push(flat(w).iter().map(|&v| v as f32).collect());
        biases.push(flat(&p[format!("b{l}")]).iter().map(|&v| v as f32).collect());
    }
    Params { sizes, weights, biases }
}

fn target(update: &Json, p: &Params, rt: &Runtime) -> (ParamGrads, f64) {
    let up = |key: String, dims: [usize; 3]| {
        let v: Vec<f32> = flat(&update[key]).iter().map(|&v| v as f32).collect();
        Tensor::<3>::from_data(TensorData::new(v, dims), &rt.device)
    };
    let g = ParamGrads {
        weights: (0..3)
            .map(|l| up(format!("W{}", l + 1), [1, p.sizes[l], p.sizes[l + 1]]))
            .collect(),
        biases: (0..3)
            .map(|l| up(format!("b{}", l + 1), [1, 1, p.sizes[l + 1]]))
            .collect(),
    };
    let norm = ["W1", "W2", "W3", "b1", "b2", "b3"]
        .iter()
        .flat_map(|k| flat(&update[*k]))
        .map(|v| v * v)
        .sum::<f64>()
        .sqrt();
    (g, norm)
}

/// The fixture's two-class labels one-hot, [n, 2] row-major.
fn labels_onehot(y: &Json) -> Vec<f32> {
    y.as_array()
        .unwrap()
        .iter()
        .flat_map(|v| {
            let c = v.as_u64().unwrap() as usize;
            (0..2).map(move |k| (k == c) as u8 as f32)
        })
        .collect()
}

fn read(t: Tensor<3>) -> Vec<f32> {
    pollster::block_on(read_f32(t)).unwrap()
}

#[test]
fn every_optimiser_matches_torch_optim_forward_and_reverse() {
    let rt = Runtime::cpu();
    let f = fixture("fedavg_optimizers.json");
    let p = params(&fixture("mlp_param_grad.json"));
    let net = Net::new(&p, &rt.device);
    let x_client = flat(&f["x_client"]);
    let n = f["y"].as_array().unwrap().len();
    let d = p.sizes[0];
    let onehot = labels_onehot(&f["y"]);
    let y = Tensor::<3>::from_data(TensorData::new(onehot.clone(), [1, n, 2]), &rt.device);
    let rows = |v: &[f64]| {
        Tensor::<3>::from_data(
            TensorData::new(v.iter().map(|&v| v as f32).collect::<Vec<_>>(), [1, n, d]),
            &rt.device,
        )
    };
    let cases = f["cases"].as_array().unwrap();
    assert!(cases.len() >= 8, "the fixture covers every optimiser");
    let mut worst = 0f64;
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let optimizer: ClientOptimizer = serde_json::from_value(case["optimizer"].clone()).unwrap();
        let orders: Option<Vec<Vec<usize>>> = serde_json::from_value(case["orders"].clone()).unwrap();
        let training = LocalTraining {
            epochs: f["epochs"].as_u64().unwrap() as usize,
            local_batch: f["local_batch_size"].as_u64().unwrap() as usize,
            lr: case["lr"].as_f64().unwrap(),
            optimizer,
            order: if orders.is_some() {
                LocalOrder::Shuffled
            } else {
                LocalOrder::Given
            },
        };
        let (update, _) =
            local_training_in_order(&net, &[rows(&x_client)], Some(&y), &training, orders.as_deref(), false);
        for l in 0..3 {
            for (kind, ours) in [("W", &update.weights[l]), ("b", &update.biases[l])] {
                let key = format!("{kind}{}", l + 1);
                let e = rel_err(&read(ours.clone()), &flat(&case["update_true"][&key]));
                eprintln!("{name} update {key}: relative error {e:.1e}");
                assert!(e <= REL_TOL, "{name} update {key}: relative error {e:.2e}");
                worst = worst.max(e);
            }
        }
        let (t, tn) = target(&case["update_true"], &p, &rt);
        let (simulated, taken) = local_training_in_order(
            &net,
            &[rows(&flat(&f["z"]))],
            Some(&y),
            &training,
            orders.as_deref(),
            true,
        );
        let (loss, u_bar) = Objective::Cosine.evaluate(&simulated, &t, tn, true);
        let loss = read(loss.reshape([1, 1, 1]))[0] as f64;
        let want = case["loss"].as_f64().unwrap();
        assert!(
            (loss - want).abs() <= REL_TOL * want.abs().max(1e-6),
            "{name} loss {loss} vs {want}"
        );
        let z_bar = reverse_local_training(&taken, &u_bar.unwrap(), &training, orders.as_deref(), 1, false);
        let e = rel_err(&read(z_bar[0].clone()), &flat(&case["dloss_dz"]));
        eprintln!("{name} dloss/dz: relative error {e:.1e}");
        assert!(e <= REL_TOL, "{name} dloss/dz: relative error {e:.2e}");
        worst = worst.max(e);
        // The CPU kernel (`accel::cpu`, the optimiser coordinate by coordinate) on the same problem,
        // where it runs it: the given order. Under SGD's weight decay an attack compares the rows'
        // parts of the updates (`Simulation::decay_share`), not PyTorch's loss: held to the
        // definition on that problem below.
        let decayed = optimizer.decay_share(training.lr, 1) != 0.0;
        if orders.is_none() && !decayed {
            let observed = Update::from_layers(
                (1..=3).map(|l| f32s(&case["update_true"][format!("W{l}")])).collect(),
                (1..=3).map(|l| f32s(&case["update_true"][format!("b{l}")])).collect(),
            );
            let spec = ProblemSpec::new(&p, &observed, onehot.clone(), None, Objective::Cosine)
                .with_simulation(Simulation::LocalTraining { training, copies: 1 }, Vec::new());
            let (k_loss, k_grad) = kernel_loss_and_grad(&HostProblem::new(spec), &f32s(&f["z"]));
            let e = rel_err(&k_grad, &flat(&case["dloss_dz"]));
            eprintln!("{name} kernel dloss/dz: relative error {e:.1e} (loss {})", k_loss[0]);
            assert!(e <= REL_TOL, "{name} kernel dloss/dz: relative error {e:.2e}");
            assert!(
                (k_loss[0] as f64 - want).abs() <= REL_TOL * want.abs().max(1e-6),
                "{name} kernel loss"
            );
            worst = worst.max(e);
        }
    }
    eprintln!("worst relative error {worst:.1e}");
}

/// Draws in [-1, 1), seeded.
fn uniform(mut seed: u64) -> impl FnMut() -> f32 {
    move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((seed >> 33) as f64 / (1u64 << 31) as f64) as f32 * 2.0 - 1.0
    }
}

/// An Adult-sized network, 104 → 100 → 100 → 2, drawn from `rand`.
fn wide_network(rand: &mut impl FnMut() -> f32) -> Params {
    let sizes = vec![104, 100, 100, 2];
    Params {
        weights: sizes
            .windows(2)
            .map(|s| (0..s[0] * s[1]).map(|_| rand() / (s[0] as f32).sqrt()).collect())
            .collect(),
        biases: sizes
            .windows(2)
            .map(|s| (0..s[1]).map(|_| rand() * 0.1).collect())
            .collect(),
        sizes,
    }
}

/// A reshuffling client replayed with a copy of its rows per epoch, each copy in that epoch's
/// order (orders that keep every position's label, as the attack lays them out): its own update
/// exactly, on the definition and on the CPU kernel, which agree on such a problem's losses of
/// several members (`member_losses`, which the definition once sized by the client's rows alone,
/// so that a reshuffled attack off the kernel, leaky ReLU or WebGPU, stopped on a shape error)
/// and on its loss and gradient.
#[test]
fn a_copy_of_the_rows_per_epoch_replays_a_reshuffling_client_on_both_engines() {
    use leakscope::attack::accel::cpu::member_losses as kernel_member_losses;
    use leakscope::attack::inversion::{loss_and_grad, member_losses};
    let rt = Runtime::cpu();
    let mut rand = uniform(777);
    let p = wide_network(&mut rand);
    let (n, d) = (8, 104);
    let onehot: Vec<f32> = (0..n).flat_map(|i| [(i % 2) as f32, 1.0 - (i % 2) as f32]).collect();
    // Epoch 1 takes rows into other batches, each position a row of its label.
    let orders = vec![(0..n).collect::<Vec<_>>(), vec![2, 5, 0, 7, 4, 1, 6, 3]];
    let training = LocalTraining {
        epochs: 2,
        local_batch: 4,
        lr: 0.01,
        optimizer: ClientOptimizer {
            momentum: 0.9,
            ..Default::default()
        },
        order: LocalOrder::Shuffled,
    };
    let x: Vec<f32> = (0..n * d).map(|_| rand()).collect();
    let net = Net::new(&p, &rt.device);
    let xt = Tensor::<3>::from_data(TensorData::new(x.clone(), [1, n, d]), &rt.device);
    let y = Tensor::<3>::from_data(TensorData::new(onehot.clone(), [1, n, 2]), &rt.device);
    let (u, _) = local_training_in_order(&net, &[xt], Some(&y), &training, Some(&orders), false);
    let observed = Update::from_layers(
        u.weights.iter().map(|t| read(t.clone())).collect(),
        u.biases.iter().map(|t| read(t.clone())).collect(),
    );
    let spec = ProblemSpec::new(&p, &observed, onehot, None, Objective::Cosine)
        .with_simulation(Simulation::LocalTraining { training, copies: 2 }, Vec::new());
    // The client's rows laid out epoch after epoch in its orders; the given order every epoch;
    // random rows.
    let laid = |orders: &[Vec<usize>]| -> Vec<f32> {
        orders
            .iter()
            .flatten()
            .flat_map(|&i| x[i * d..(i + 1) * d].to_vec())
            .collect()
    };
    let z: Vec<f32> = (0..2 * n * d).map(|_| rand()).collect();
    let given = vec![(0..n).collect::<Vec<_>>(); 2];
    let members: Vec<f32> = [laid(&orders), laid(&given), z.clone()].concat();
    let on = spec.on_device(&rt.device);
    let problem = spec.problem(&on, 0, 0);
    let losses = pollster::block_on(member_losses(&problem, members.clone(), 3, &rt.device)).unwrap();
    let kernel = kernel_member_losses(&HostProblem::new(spec.clone()), &members);
    eprintln!("1 - cos: the client's orders, the given order, random rows: {losses:?} (kernel {kernel:?})");
    assert!(losses[0] < 1e-5 && kernel[0] < 1e-5, "{losses:?} {kernel:?}");
    assert!(losses[1] > 1e-4, "the given order replays it too: {losses:?}");
    for (a, b) in losses.iter().zip(&kernel) {
        assert!((a - b).abs() <= 1e-4 * b.abs().max(1e-3), "{a} vs {b}");
    }
    let (k_loss, k_grad) = kernel_loss_and_grad(&HostProblem::new(spec.clone()), &z);
    let (loss, grad) = pollster::block_on(loss_and_grad(&problem, z.clone(), 1, &rt.device)).unwrap();
    let e = rel_err(&k_grad, &grad.iter().map(|&v| v as f64).collect::<Vec<_>>());
    eprintln!("loss {} vs {}, gradient relative error {e:.1e}", k_loss[0], loss[0]);
    assert!(
        (k_loss[0] - loss[0]).abs() <= 1e-4 * loss[0].abs(),
        "{k_loss:?} {loss:?}"
    );
    assert!(e <= 1e-3, "kernel and definition gradients differ by {e:.2e}");
}

/// Kernel and definition on an Adult-sized network (104 → 100 → 100 → 2, 8 rows, 2 local epochs of
/// 2 steps) under Adam, and under SGD with momentum and weight decay (whose share of θ0 both take
/// out of the updates they compare): one loss and gradient, compared coordinate by coordinate.
#[test]
fn kernel_and_definition_agree_on_a_wide_network_under_adam_and_decay() {
    use leakscope::attack::inversion::loss_and_grad;
    use leakscope::client::optimizer::OptimizerKind;
    let rt = Runtime::cpu();
    let mut rand = uniform(12345);
    let p = wide_network(&mut rand);
    let n = 8;
    let onehot: Vec<f32> = (0..n).flat_map(|i| [(i % 2) as f32, 1.0 - (i % 2) as f32]).collect();
    let x: Vec<f32> = (0..n * 104).map(|_| rand()).collect();
    let z: Vec<f32> = (0..n * 104).map(|_| rand()).collect();
    for (kind, wd, momentum) in [
        (OptimizerKind::Adam, 0.01, 0.0),
        (OptimizerKind::Adamw, 0.01, 0.0),
        (OptimizerKind::Adam, 0.0, 0.0),
        (OptimizerKind::Sgd, 0.05, 0.9),
    ] {
        let training = LocalTraining {
            epochs: 2,
            local_batch: 4,
            lr: 0.001,
            optimizer: ClientOptimizer {
                kind,
                weight_decay: wd,
                momentum,
                ..Default::default()
            },
            order: LocalOrder::Given,
        };
        let net = Net::new(&p, &rt.device);
        let xt = Tensor::<3>::from_data(TensorData::new(x.clone(), [1, n, 104]), &rt.device);
        let y = Tensor::<3>::from_data(TensorData::new(onehot.clone(), [1, n, 2]), &rt.device);
        let (u, _) = local_training_in_order(&net, &[xt], Some(&y), &training, None, false);
        let observed = Update::from_layers(
            u.weights.iter().map(|t| read(t.clone())).collect(),
            u.biases.iter().map(|t| read(t.clone())).collect(),
        );
        let spec = ProblemSpec::new(&p, &observed, onehot.clone(), None, Objective::Cosine)
            .with_simulation(Simulation::LocalTraining { training, copies: 1 }, Vec::new());
        let (k_loss, k_grad) = kernel_loss_and_grad(&HostProblem::new(spec.clone()), &z);
        let on = spec.on_device(&rt.device);
        let problem = spec.problem(&on, 0, 0);
        let (loss, grad) = pollster::block_on(loss_and_grad(&problem, z.clone(), 1, &rt.device)).unwrap();
        let e = rel_err(&k_grad, &grad.iter().map(|&v| v as f64).collect::<Vec<_>>());
        let worst = k_grad
            .iter()
            .zip(&grad)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        let big = grad.iter().fold(0f32, |m, v| m.max(v.abs()));
        eprintln!(
            "{kind:?} wd {wd}: loss {} vs {}, gradient relative error {e:.1e}, worst {worst:.1e} of {big:.1e}",
            k_loss[0], loss[0]
        );
        // Adam's du/dd is ε/(|d| + ε)²: a coordinate whose d is within a few ε of 0 weighs 1e8
        // times, and float32's rounding of d (from a matmul summed in another order) moves that
        // weight by percents. Measured here: 1e-3 between the two engines, each 1e-6 from PyTorch
        // on the small fixture above.
        assert!(e <= 1e-2, "{kind:?}: kernel and definition gradients differ by {e:.2e}");
    }
}

/// SGD with weight decay: θ0 − θE is c·θ0 plus a combination of the gradients
/// (`ClientOptimizer::decay_share`), so the first layer's update less c·W0 lies in the span of the
/// client's rows again, with momentum or Nesterov too; the update itself does not.
#[test]
fn sgd_weight_decay_leaves_the_rows_span_once_its_share_of_the_weights_is_taken_out() {
    use nalgebra::DMatrix;
    let rt = Runtime::cpu();
    let f = fixture("fedavg_optimizers.json");
    let p = params(&fixture("mlp_param_grad.json"));
    let net = Net::new(&p, &rt.device);
    let (d, h) = (p.sizes[0], p.sizes[1]);
    let x = flat(&f["x_client"]);
    let n = x.len() / d;
    let onehot = labels_onehot(&f["y"]);
    let y = Tensor::<3>::from_data(TensorData::new(onehot, [1, n, 2]), &rt.device);
    let rows = Tensor::<3>::from_data(
        TensorData::new(x.iter().map(|&v| v as f32).collect::<Vec<_>>(), [1, n, d]),
        &rt.device,
    );
    // The projector off the rows' span in R^d.
    let xm = DMatrix::from_row_slice(n, d, &x);
    let q = xm.transpose().qr().q();
    let off = DMatrix::<f64>::identity(d, d) - &q * q.transpose();
    let residual = |w: &[f64]| {
        let m = DMatrix::from_row_slice(d, h, w);
        (&off * &m).norm() / m.norm()
    };
    for optimizer in [
        ClientOptimizer {
            weight_decay: 0.05,
            ..Default::default()
        },
        ClientOptimizer {
            momentum: 0.9,
            dampening: 0.1,
            weight_decay: 0.05,
            ..Default::default()
        },
        ClientOptimizer {
            momentum: 0.9,
            nesterov: true,
            weight_decay: 0.05,
            ..Default::default()
        },
    ] {
        let training = LocalTraining {
            epochs: 3,
            local_batch: 2,
            lr: 0.05,
            optimizer,
            order: LocalOrder::Given,
        };
        let (u, _) = local_training_in_order(&net, &[rows.clone()], Some(&y), &training, None, false);
        let dw: Vec<f64> = read(u.weights[0].clone()).iter().map(|&v| v as f64).collect();
        let c = optimizer.decay_share(training.lr, training.epochs * training.steps_per_epoch(n));
        let less: Vec<f64> = dw.iter().zip(&p.weights[0]).map(|(&u, &w)| u - c * w as f64).collect();
        let (before, after) = (residual(&dw), residual(&less));
        eprintln!("{optimizer:?}: share {c:.4}, off the span {before:.1e} → {after:.1e}");
        assert!(before > 1e-2, "the decay's share is visible off the span: {before:.1e}");
        assert!(
            after < 1e-5,
            "less its share the update lies in the rows' span: {after:.1e}"
        );
    }
}

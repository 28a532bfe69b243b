//! Golden vectors from the reference (float64, PyTorch), reproduced in f32 on the CPU backend.
//! Tolerance: relative error ‖ours − ref‖ / ‖ref‖ ≤ 1e-3 for every tensor, as issue 2 asks.
use burn::tensor::{Tensor, TensorData};
use leakscope::assess::{entropy, matching::Rule, scoring::score};
use leakscope::attack::Objective;
use leakscope::attack::inversion::problem::ProblemSpec;
use leakscope::attack::inversion::relax::{Layout, Relaxation};
use leakscope::attack::inversion::second_order::reverse;
use leakscope::attack::inversion::{Problem, Simulation, loss_and_grad};
use leakscope::client::activation::Activation;
use leakscope::client::gradient::{ParamGrads, param_grads};
use leakscope::client::head::{Head, Model};
use leakscope::client::network::{Net, Params};
use leakscope::client::update::Update;
use leakscope::runtime::{Runtime, read_f32};
use leakscope::table::Value;
use serde_json::Value as Json;

const REL_TOL: f64 = 1e-3;

fn fixture(name: &str) -> Json {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn flat(v: &Json) -> Vec<f64> {
    match v {
        Json::Array(items) => items.iter().flat_map(flat).collect(),
        Json::Number(n) => vec![n.as_f64().unwrap()],
        other => panic!("not numeric: {other}"),
    }
}

fn f32s(v: &Json) -> Vec<f32> {
    flat(v).into_iter().map(|x| x as f32).collect()
}

fn assert_close(name: &str, ours: &[f32], reference: &[f64]) {
    assert_eq!(ours.len(), reference.len(), "{name}: length");
    let err: f64 = ours
        .iter()
        .zip(reference)
        .map(|(&a, &b)| (a as f64 - b).powi(2))
        .sum::<f64>()
        .sqrt();
    let norm: f64 = reference.iter().map(|b| b * b).sum::<f64>().sqrt();
    let rel = err / norm.max(1e-300);
    eprintln!("{name}: relative error {rel:.1e}");
    assert!(rel <= REL_TOL, "{name}: relative error {rel:.2e} > {REL_TOL:.0e}");
}

fn params(f: &Json) -> Params {
    let p = &f["params"];
    let mut sizes = vec![p["W1"].as_array().unwrap().len()];
    let mut weights = Vec::new();
    let mut biases = Vec::new();
    for l in 1..=3 {
        let w = &p[format!("W{l}")];
        sizes.push(w[0].as_array().unwrap().len());
        weights.push(f32s(w));
        biases.push(f32s(&p[format!("b{l}")]));
    }
    Params { sizes, weights, biases }
}

fn onehot(y: &Json, classes: usize) -> Vec<f32> {
    let labels: Vec<usize> = y
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    let mut out = vec![0f32; labels.len() * classes];
    for (i, c) in labels.into_iter().enumerate() {
        out[i * classes + c] = 1.0;
    }
    out
}

/// An inversion problem on the fixtures' two-class network.
fn two_class_problem<'a>(
    net: &'a Net,
    target: &'a ParamGrads,
    target_norm: f64,
    labels: &Json,
    relaxation: Option<&'a Relaxation>,
    objective: Objective,
) -> Problem<'a> {
    Problem {
        net,
        target,
        target_norm,
        onehot: onehot(labels, 2),
        classes: 2,
        relaxation,
        objective,
        simulation: Simulation::Gradient,
        priors: Vec::new(),
        subspace: None,
        known: None,
        rounds: Vec::new(),
    }
}

/// The observed gradient of a fixture, as a one-member ParamGrads, and its norm.
fn target(grad: &Json, p: &Params, rt: &Runtime) -> (ParamGrads, f64) {
    let mut weights = Vec::new();
    let mut biases = Vec::new();
    let mut sq = 0.0;
    for l in 1..=3 {
        let (i, o) = (p.sizes[l - 1], p.sizes[l]);
        let w = f32s(&grad[format!("W{l}")]);
        let b = f32s(&grad[format!("b{l}")]);
        sq += w.iter().chain(&b).map(|&v| (v as f64).powi(2)).sum::<f64>();
        weights.push(Tensor::<3>::from_data(TensorData::new(w, [1, i, o]), &rt.device));
        biases.push(Tensor::<3>::from_data(TensorData::new(b, [1, 1, o]), &rt.device));
    }
    (ParamGrads { weights, biases }, sq.sqrt())
}

#[test]
fn mlp_parameter_gradient() {
    check_mlp_parameter_gradient(&Runtime::cpu());
}

fn check_mlp_parameter_gradient(rt: &Runtime) {
    let f = fixture("mlp_param_grad.json");
    let p = params(&f);
    let net = Net::new(&p, &rt.device);
    let x = f32s(&f["x"]);
    let b = f["x"].as_array().unwrap().len();
    let xt = Tensor::<3>::from_data(TensorData::new(x.clone(), [1, b, p.sizes[0]]), &rt.device);
    let y = Tensor::<3>::from_data(TensorData::new(onehot(&f["y"], 2), [1, b, 2]), &rt.device);
    let (g, _) = param_grads(&net, &xt, &y);
    for l in 0..3 {
        let w = pollster::block_on(read_f32(g.weights[l].clone())).unwrap();
        assert_close(&format!("W{}", l + 1), &w, &flat(&f["grad"][format!("W{}", l + 1)]));
        let bias = pollster::block_on(read_f32(g.biases[l].clone())).unwrap();
        assert_close(&format!("b{}", l + 1), &bias, &flat(&f["grad"][format!("b{}", l + 1)]));
    }
    // The loss itself, through the host forward pass.
    let xs: Vec<f64> = flat(&f["x"]);
    let (_, probs) = p.forward_host(&xs, b, Default::default());
    let labels = flat(&f["y"]);
    let ce = labels
        .iter()
        .enumerate()
        .map(|(i, &c)| -probs[i * 2 + c as usize].ln())
        .sum::<f64>()
        / b as f64;
    assert!((ce - f["loss"].as_f64().unwrap()).abs() < 1e-6 * ce.abs().max(1.0));
}

#[test]
fn cosine_matching_gradient_wrt_input() {
    check_cosine_matching_gradient(&Runtime::cpu());
}

fn check_cosine_matching_gradient(rt: &Runtime) {
    let f = fixture("cosine_matching_grad.json");
    let base = fixture("mlp_param_grad.json");
    let p = params(&base);
    let net = Net::new(&p, &rt.device);
    let (t, tn) = target(&base["grad"], &p, rt);
    let problem = two_class_problem(&net, &t, tn, &f["y"], None, Objective::Cosine);
    let (loss, grad) = pollster::block_on(loss_and_grad(&problem, f32s(&f["z"]), 1, &rt.device)).unwrap();
    assert_close("loss", &loss, &[f["loss"].as_f64().unwrap()]);
    assert_close("dloss_dz", &grad, &flat(&f["dloss_dz"]));
}

fn fixture_layout(f: &Json) -> Layout {
    let blocks = f["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let cols: Vec<usize> = b["columns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_u64().unwrap() as usize)
                .collect();
            (cols[0], cols.len(), b["kind"] == "cat")
        })
        .collect();
    Layout {
        blocks,
        mean: flat(&f["mean"]),
        std: flat(&f["std"]),
        lo: flat(&f["std_bounds_lo"]),
        hi: flat(&f["std_bounds_hi"]),
    }
}

#[test]
fn relaxed_ensemble_gradient() {
    check_relaxed_ensemble_gradient(&Runtime::cpu());
}

/// The same three vectors on burn's wgpu backend (Mesa's lavapipe in CI). Runs where
/// LEAKSCOPE_WGPU=1 says a Vulkan driver is installed (scripts/test.sh sets it); there a missing
/// adapter is a failure, not a skip.
#[test]
fn golden_vectors_on_wgpu() {
    if std::env::var("LEAKSCOPE_WGPU").as_deref() != Ok("1") {
        eprintln!("LEAKSCOPE_WGPU is not 1: wgpu golden vectors not run");
        return;
    }
    let rt = pollster::block_on(Runtime::wgpu()).expect("a wgpu adapter");
    eprintln!("wgpu backend: {}", rt.info.label);
    check_mlp_parameter_gradient(&rt);
    check_cosine_matching_gradient(&rt);
    check_relaxed_ensemble_gradient(&rt);
    check_fedavg_update_gradient(&rt);
}

fn check_relaxed_ensemble_gradient(rt: &Runtime) {
    let f = fixture("relaxed_ensemble_grad.json");
    let base = fixture("mlp_param_grad.json");
    let p = params(&base);
    let net = Net::new(&p, &rt.device);
    let layout = fixture_layout(&f);
    let relaxation = Relaxation::new(&layout, &rt.device);
    let n = f["z"].as_array().unwrap().len();
    let b = f["z"][0].as_array().unwrap().len();
    let d = layout.d();

    // The relaxation on its own.
    let z = f32s(&f["z"]);
    let zt = Tensor::<2>::from_data(TensorData::new(z.clone(), [n * b, d]), &rt.device);
    let relaxed = pollster::block_on(read_f32(relaxation.forward(&zt).x)).unwrap();
    assert_close("relaxed", &relaxed, &flat(&f["relaxed"]));

    let (t, tn) = target(&f["g_true"], &p, rt);
    let problem = two_class_problem(&net, &t, tn, &f["y"], Some(&relaxation), Objective::Cosine);
    let (losses, grad) = pollster::block_on(loss_and_grad(&problem, z, n, &rt.device)).unwrap();
    assert_close("losses", &losses, &flat(&f["losses"]));
    assert_close("dsum_dz", &grad, &flat(&f["dsum_dz"]));
}

#[test]
fn matching_accuracy() {
    let f = fixture("matching_accuracy.json");
    let features = f["features"].as_array().unwrap();
    let rules: Vec<Rule> = features
        .iter()
        .map(|ft| Rule {
            categorical: ft["kind"] == "cat",
            tolerance: ft["tolerance"].as_f64().unwrap_or(0.0),
            follows: None,
        })
        .collect();
    // Categorical strings → indices, one dictionary per feature.
    let mut dicts: Vec<Vec<String>> = vec![Vec::new(); features.len()];
    let mut rows = |key: &str| -> Vec<Vec<Value>> {
        f[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                row.as_array()
                    .unwrap()
                    .iter()
                    .enumerate()
                    .map(|(j, cell)| match cell.as_str() {
                        Some(s) => {
                            if !dicts[j].iter().any(|c| c == s) {
                                dicts[j].push(s.to_string());
                            }
                            Value::Cat(dicts[j].iter().position(|c| c == s).unwrap() as u32)
                        }
                        None => Value::Num(cell.as_f64().unwrap()),
                    })
                    .collect()
            })
            .collect()
    };
    let truth = rows("true_rows");
    let rec = rows("reconstructed_rows");
    let scored = score(&rules, &truth, &rec);
    let expected: Vec<usize> = f["assignment_true_to_rec"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(scored.assignment, expected);
    assert!((scored.accuracy.total - f["accuracy"].as_f64().unwrap()).abs() < 1e-12);
}

#[test]
fn entropies() {
    let f = fixture("entropy.json");
    let probs: Vec<Vec<f64>> = f["member_probabilities"].as_array().unwrap().iter().map(flat).collect();
    let refs: Vec<&[f64]> = probs.iter().map(Vec::as_slice).collect();
    let soft = entropy::categorical_soft(&refs);
    assert!((soft - f["categorical_entropy_soft"].as_f64().unwrap()).abs() < 1e-12);
    let choices: Vec<usize> = probs
        .iter()
        .map(|p| (0..p.len()).max_by(|&a, &b| p[a].total_cmp(&p[b])).unwrap())
        .collect();
    let hard = entropy::categorical_hard(&choices, 3);
    assert!((hard - f["categorical_entropy_hard"].as_f64().unwrap()).abs() < 1e-12);
    let cont = entropy::continuous(&flat(&f["member_continuous_values"])).unwrap();
    assert!((cont - f["continuous_entropy"].as_f64().unwrap()).abs() < 1e-12);
}

/// The observed gradient of a fixture on the host.
fn host_target(grad: &Json) -> Update {
    Update::from_layers(
        (1..=3).map(|l| f32s(&grad[format!("W{l}")])).collect(),
        (1..=3).map(|l| f32s(&grad[format!("b{l}")])).collect(),
    )
}

/// The fused CPU kernel against the same vectors as the tensor path.
#[test]
fn cpu_kernel_matches_golden_vectors() {
    use leakscope::attack::accel::cpu::{HostProblem, loss_and_grad, member_losses};
    let base = fixture("mlp_param_grad.json");
    let p = params(&base);

    let f = fixture("cosine_matching_grad.json");
    let host = HostProblem::new(ProblemSpec::new(
        &p,
        &host_target(&base["grad"]),
        onehot(&f["y"], 2),
        None,
        Objective::Cosine,
    ));
    let (loss, grad) = loss_and_grad(&host, &f32s(&f["z"]));
    assert_close("kernel loss", &loss, &[f["loss"].as_f64().unwrap()]);
    assert_close("kernel dloss_dz", &grad, &flat(&f["dloss_dz"]));
    assert_close(
        "kernel loss without gradient",
        &member_losses(&host, &f32s(&f["z"])),
        &[f["loss"].as_f64().unwrap()],
    );

    let f = fixture("relaxed_ensemble_grad.json");
    let layout = fixture_layout(&f);
    let host = HostProblem::new(ProblemSpec::new(
        &p,
        &host_target(&f["g_true"]),
        onehot(&f["y"], 2),
        Some(&layout),
        Objective::Cosine,
    ));
    let (losses, grad) = loss_and_grad(&host, &f32s(&f["z"]));
    assert_close("kernel losses", &losses, &flat(&f["losses"]));
    assert_close("kernel dsum_dz", &grad, &flat(&f["dsum_dz"]));
}

/// DLG's squared-error objective: kernel and tensor path agree (no fixture exists for it).
#[test]
fn squared_error_objective_agrees_across_paths() {
    use leakscope::attack::accel::cpu::{HostProblem, loss_and_grad as kernel};
    let base = fixture("mlp_param_grad.json");
    let f = fixture("cosine_matching_grad.json");
    let p = params(&base);
    let rt = Runtime::cpu();
    let net = Net::new(&p, &rt.device);
    let (t, tn) = target(&base["grad"], &p, &rt);
    let problem = two_class_problem(&net, &t, tn, &f["y"], None, Objective::SquaredError);
    let (loss, grad) = pollster::block_on(loss_and_grad(&problem, f32s(&f["z"]), 1, &rt.device)).unwrap();
    let host = HostProblem::new(ProblemSpec::new(
        &p,
        &host_target(&base["grad"]),
        onehot(&f["y"], 2),
        None,
        Objective::SquaredError,
    ));
    let (kl, kg) = kernel(&host, &f32s(&f["z"]));
    assert!(loss[0] > 0.0);
    assert_close(
        "squared error loss",
        &kl,
        &loss.iter().map(|&v| v as f64).collect::<Vec<_>>(),
    );
    assert_close(
        "squared error gradient",
        &kg,
        &grad.iter().map(|&v| v as f64).collect::<Vec<_>>(),
    );
}

/// FedAvg's client differentiated (fixture `fedavg_update_grad.json`): 2 epochs of plain SGD over 4
/// rows in local batches of 2, the update θ0 − θE, the cosine loss against the true update, and
/// its gradient w.r.t. the rows through every local step (parameters' adjoints included).
#[test]
fn fedavg_update_gradient() {
    check_fedavg_update_gradient(&Runtime::cpu());
}

fn check_fedavg_update_gradient(rt: &Runtime) {
    use leakscope::attack::inversion::second_order::reverse_local_training;
    use leakscope::client::fedavg::{LocalTraining, local_training};
    let f = fixture("fedavg_update_grad.json");
    let base = fixture("mlp_param_grad.json");
    let p = params(&base);
    let net = Net::new(&p, &rt.device);
    let training = LocalTraining {
        epochs: f["epochs"].as_u64().unwrap() as usize,
        local_batch: f["local_batch_size"].as_u64().unwrap() as usize,
        lr: f["lr"].as_f64().unwrap(),
        ..Default::default()
    };
    let n = f["z"].as_array().unwrap().len();
    let d = p.sizes[0];
    let y = Tensor::<3>::from_data(TensorData::new(onehot(&f["y"], 2), [1, n, 2]), &rt.device);
    let rows = |key: &str| Tensor::<3>::from_data(TensorData::new(f32s(&f[key]), [1, n, d]), &rt.device);

    // The client's own update from its rows.
    let (update, _) = local_training(&net, &[rows("x_client")], Some(&y), &training, false);
    for l in 0..3 {
        let w = pollster::block_on(read_f32(update.weights[l].clone())).unwrap();
        assert_close(
            &format!("update W{}", l + 1),
            &w,
            &flat(&f["update_true"][format!("W{}", l + 1)]),
        );
        let b = pollster::block_on(read_f32(update.biases[l].clone())).unwrap();
        assert_close(
            &format!("update b{}", l + 1),
            &b,
            &flat(&f["update_true"][format!("b{}", l + 1)]),
        );
    }

    // The attacker's loss at z and its gradient through the unrolled training.
    let (t, tn) = target(&f["update_true"], &p, rt);
    let (simulated, taken) = local_training(&net, &[rows("z")], Some(&y), &training, true);
    let (loss, u_bar) = Objective::Cosine.evaluate(&simulated, &t, tn, true);
    let z_bar = reverse_local_training(&taken, &u_bar.unwrap(), &training, None, 1, false);
    assert_close(
        "fedavg loss",
        &pollster::block_on(read_f32(loss)).unwrap(),
        &[f["loss"].as_f64().unwrap()],
    );
    assert_close(
        "fedavg dloss_dz",
        &pollster::block_on(read_f32(z_bar[0].clone())).unwrap(),
        &flat(&f["dloss_dz"]),
    );
}

/// The subspace prior (no PyTorch fixture: it is leakscope's own): the definition's gradient
/// against central differences in f64, and the CPU kernel against the definition on the relaxed
/// ensemble fixture with the prior on.
#[test]
fn subspace_prior_gradient() {
    use leakscope::attack::accel::cpu::{HostProblem, loss_and_grad as kernel_loss_and_grad};
    use leakscope::attack::inversion::subspace_prior;
    let rt = Runtime::cpu();
    let (n, b, d) = (2, 3, 5);
    // A projector on a 2-dimensional span of R^5 (orthonormal u1, u2) and rows around it.
    let u = [[0.6, 0.0, 0.8, 0.0, 0.0], [0.0, 0.6, 0.0, 0.0, 0.8]];
    let proj: Vec<f64> = (0..d * d)
        .map(|k| u.iter().map(|v| v[k / d] * v[k % d]).sum())
        .collect();
    let x: Vec<f64> = (0..n * b * d).map(|i| ((i * 37 % 11) as f64 - 5.0) / 4.0).collect();
    let weight = 0.3;
    let value = |x: &[f64], m: usize| {
        let rows = &x[m * b * d..(m + 1) * b * d];
        let a: f64 = rows.iter().map(|v| v * v).sum();
        let c: f64 = rows
            .chunks_exact(d)
            .map(|r| {
                (0..d)
                    .map(|j| r[j] * (0..d).map(|i| r[i] * proj[i * d + j]).sum::<f64>())
                    .sum::<f64>()
            })
            .sum();
        weight * (1.0 - c / a)
    };
    let xt = Tensor::<3>::from_data(
        TensorData::new(x.iter().map(|&v| v as f32).collect(), [n, b, d]),
        &rt.device,
    );
    let pt = Tensor::<2>::from_data(
        TensorData::new(proj.iter().map(|&v| v as f32).collect(), [d, d]),
        &rt.device,
    );
    let (loss, grad) = subspace_prior(&xt, &pt, weight as f32);
    let loss = pollster::block_on(read_f32(loss)).unwrap();
    let grad = pollster::block_on(read_f32(grad)).unwrap();
    assert_close("prior value", &loss, &[value(&x, 0), value(&x, 1)]);
    let h = 1e-6;
    let numeric: Vec<f64> = (0..x.len())
        .map(|i| {
            let m = i / (b * d);
            let (mut up, mut down) = (x.clone(), x.clone());
            up[i] += h;
            down[i] -= h;
            (value(&up, m) - value(&down, m)) / (2.0 * h)
        })
        .collect();
    assert_close("prior gradient", &grad, &numeric);

    // The kernel with the prior on, against the definition, on the relaxed ensemble fixture.
    let base = fixture("mlp_param_grad.json");
    let p = params(&base);
    let f = fixture("relaxed_ensemble_grad.json");
    let layout = fixture_layout(&f);
    let observed = host_target(&f["g_true"]);
    // The projector on the batch's own rows (what the first layer's span is on a clean update;
    // the fixture's update is not one of its layout, and its measured noise hides the span): a
    // projector that leaves directions out, which is what is tested.
    let rows = f["x_true_standardised"].as_array().unwrap();
    let d = rows[0].as_array().unwrap().len();
    let xs = nalgebra::DMatrix::from_row_slice(rows.len(), d, &rows.iter().flat_map(flat).collect::<Vec<_>>());
    let gram_inv = (&xs * xs.transpose()).try_inverse().unwrap();
    let projector = xs.transpose() * gram_inv * &xs;
    let projector: Vec<f32> = projector.transpose().iter().map(|&v| v as f32).collect();
    assert!(
        projector.iter().step_by(d + 1).map(|&v| v as f64).sum::<f64>() < d as f64 - 1.0,
        "the projector leaves directions out"
    );
    // The kernel and the definition built from one description of the problem.
    let spec = ProblemSpec::new(&p, &observed, onehot(&f["y"], 2), Some(&layout), Objective::Cosine)
        .with_subspace(projector, weight);
    let host = HostProblem::new(spec.clone());
    let (k_losses, k_grad) = kernel_loss_and_grad(&host, &f32s(&f["z"]));
    let on = spec.on_device(&rt.device);
    let problem = spec.problem(&on, 0, 0);
    let n = k_losses.len();
    let (losses, grad) = pollster::block_on(loss_and_grad(&problem, f32s(&f["z"]), n, &rt.device)).unwrap();
    let to64 = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
    assert_close("kernel losses with the prior", &k_losses, &to64(&losses));
    assert_close("kernel gradient with the prior", &k_grad, &to64(&grad));
    // The prior adds to the plain losses.
    let plain = flat(&f["losses"]);
    assert!(
        losses.iter().zip(&plain).any(|(&l, &p)| l as f64 > p + 1e-4),
        "{losses:?} {plain:?}"
    );
}

/// Early stopping retires the same members at the same steps on the CPU kernel and the GPU kernels
/// as on the definition, with the same rows: a strict rule (less than 10 % gained in 20 steps)
/// stops the relaxed ensemble fixture's members one by one (at steps 40, 90 and 200 here).
#[test]
fn early_stopping_retires_the_same_members_on_the_kernel_and_the_definition() {
    use leakscope::attack::accel::cpu::{self, HostProblem};
    use leakscope::attack::inversion::driver::{Cadence, EarlyStop, InversionConfig};
    use leakscope::attack::inversion::invert;
    let rt = Runtime::cpu();
    let base = fixture("mlp_param_grad.json");
    let p = params(&base);
    let f = fixture("relaxed_ensemble_grad.json");
    let layout = fixture_layout(&f);
    let n = f["z"].as_array().unwrap().len();
    let b = f["z"][0].as_array().unwrap().len();
    let config = InversionConfig {
        members: n,
        first_member: 0,
        batch: b,
        d: layout.d(),
        iterations: 300,
        optimiser: leakscope::Optimiser::default(),
        seed: 3,
        report_every: 10,
        early_stop: Some(EarlyStop {
            every: 10,
            window: 20,
            tolerance: 0.1,
            absolute: 0.0,
        }),
        starts: None,
    };
    let host = HostProblem::new(ProblemSpec::new(
        &p,
        &host_target(&f["g_true"]),
        onehot(&f["y"], 2),
        Some(&layout),
        Objective::Cosine,
    ));
    let kernel = pollster::block_on(cpu::invert(&host, &config, Cadence::Every(10), &mut |_| true)).unwrap();
    let net = Net::new(&p, &rt.device);
    let (t, tn) = target(&f["g_true"], &p, &rt);
    let relaxation = Relaxation::new(&layout, &rt.device);
    let problem = two_class_problem(&net, &t, tn, &f["y"], Some(&relaxation), Objective::Cosine);
    let definition =
        pollster::block_on(invert(&problem, &config, Cadence::Every(10), &rt.device, &mut |_| true)).unwrap();
    eprintln!("steps: kernel {:?}, definition {:?}", kernel.steps, definition.steps);
    let mut distinct = definition.steps.clone();
    distinct.dedup();
    assert!(
        distinct.len() > 1 && definition.steps.iter().any(|&s| s < 300),
        "members should stop one by one: {:?}",
        definition.steps
    );
    let worst_gap = |x: &[f32]| {
        x.iter()
            .zip(&definition.x)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max)
    };
    assert_eq!(kernel.steps, definition.steps);
    assert!(worst_gap(&kernel.x) < 1e-4, "rows differ by {}", worst_gap(&kernel.x));
    // The GPU kernels too, where LEAKSCOPE_WGPU=1 says a Vulkan driver is installed.
    if std::env::var("LEAKSCOPE_WGPU").as_deref() == Ok("1") {
        let gpu = pollster::block_on(Runtime::wgpu()).expect("a wgpu adapter");
        let cube = pollster::block_on(leakscope::attack::accel::cube::invert(
            &gpu,
            &host,
            &config,
            Cadence::Every(10),
            &mut |_| true,
        ))
        .unwrap();
        eprintln!("steps: GPU kernels {:?}", cube.steps);
        assert_eq!(cube.steps, definition.steps);
        assert!(worst_gap(&cube.x) < 1e-4, "GPU rows differ by {}", worst_gap(&cube.x));
    }
}

/// ε over rounds against Opacus 1.6's RDP accountant (`scripts/opacus_epsilons.py`): 300 cases of
/// noise multiplier, sampling rate, rounds and δ. The issue asks for 1 %; the same accounting in
/// float64 agrees far closer, so a slip in a series shows.
#[test]
fn epsilon_over_rounds_matches_opacus() {
    use leakscope::client::accountant::epsilon;
    let fixture = fixture("rdp_epsilon.json");
    let cases = fixture["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 300);
    let mut worst = 0.0f64;
    for c in cases {
        let get = |k: &str| c[k].as_f64().unwrap();
        let (z, q, t, delta) = (get("noise_multiplier"), get("sample_rate"), get("rounds"), get("delta"));
        let (eps, order) = epsilon(q, z, t as u64, delta);
        let want = get("epsilon");
        let rel = (eps - want).abs() / want;
        assert!(rel <= 1e-6, "z {z} q {q} T {t} δ {delta}: ε {eps} vs Opacus {want}");
        assert_eq!(order, get("order"), "z {z} q {q} T {t} δ {delta}: order");
        worst = worst.max(rel);
    }
    eprintln!("largest relative difference from Opacus: {worst:.1e}");
}

/// Every activation, no hidden layer, and a sigmoid head and a regression's linear head with and
/// without hidden layers (scripts/golden_activations.py, float64 PyTorch): the client's explicit
/// backward pass, and the attacker's second-order gradient (its reverse) with respect to the rows,
/// to the parameters (as FedAvg's unrolled training needs) and to a regression's label.
#[test]
fn every_activation_head_and_logistic_regression_backward_and_second_order() {
    let f = fixture("activation_grads.json");
    let networks = f["networks"].as_array().unwrap();
    assert_eq!(networks.len(), 6);
    for net in networks {
        check_network(net);
    }
}

fn check_network(f: &Json) {
    let sizes: Vec<usize> = f["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    let layers = sizes.len() - 1;
    let p = Params {
        sizes: sizes.clone(),
        weights: f["weights"].as_array().unwrap().iter().map(f32s).collect(),
        biases: f["biases"].as_array().unwrap().iter().map(f32s).collect(),
    };
    let device = Runtime::cpu().device;
    let b = f["x"].as_array().unwrap().len();
    let head: Head = serde_json::from_value(f["head"].clone()).unwrap();
    let outputs = *sizes.last().unwrap();
    let classes = head.classes(outputs);
    let labels: Vec<usize> = flat(&f["y"]).iter().map(|&c| c as usize).collect();
    let xt = Tensor::<3>::from_data(TensorData::new(f32s(&f["x"]), [1, b, sizes[0]]), &device);
    let targets = match head {
        Head::Linear => f32s(&f["y"]),
        _ => head.targets(&labels, classes),
    };
    let y = Tensor::<3>::from_data(TensorData::new(targets, [1, b, outputs]), &device);
    let tensor = |v: &Json, shape: [usize; 3]| Tensor::<3>::from_data(TensorData::new(f32s(v), shape), &device);
    let big_g = ParamGrads {
        weights: (0..layers)
            .map(|l| tensor(&f["G"]["weights"][l], [1, sizes[l], sizes[l + 1]]))
            .collect(),
        biases: (0..layers)
            .map(|l| tensor(&f["G"]["biases"][l], [1, 1, sizes[l + 1]]))
            .collect(),
    };
    let read = |t: &Tensor<3>| pollster::block_on(read_f32(t.clone())).unwrap();
    for case in f["cases"].as_array().unwrap() {
        let activation: Activation = serde_json::from_value(case["activation"].clone()).unwrap();
        let name = format!("{:?} {} {}", sizes, activation.name(), head.name());
        let model = Model { activation, head };
        let net = Net::new(&p, &device).with_model(model);
        let (g, tape) = param_grads(&net, &xt, &y);
        for l in 0..layers {
            assert_close(
                &format!("{name}: grad W{l}"),
                &read(&g.weights[l]),
                &flat(&case["grad"]["weights"][l]),
            );
            assert_close(
                &format!("{name}: grad b{l}"),
                &read(&g.biases[l]),
                &flat(&case["grad"]["biases"][l]),
            );
        }
        let reversed = reverse(&net, &tape, &big_g, true);
        assert_close(&format!("{name}: dS/dx"), &read(&reversed.x), &flat(&case["dS_dx"]));
        if head == Head::Linear {
            assert_close(
                &format!("{name}: dS/dy"),
                &read(&reversed.targets),
                &flat(&case["dS_dy"]),
            );
        }
        let theta_bar = reversed.params.unwrap();
        for l in 0..layers {
            let (w, bias) = (&case["dS_dtheta"]["weights"][l], &case["dS_dtheta"]["biases"][l]);
            assert_close(&format!("{name}: dS/dW{l}"), &read(&theta_bar.weights[l]), &flat(w));
            assert_close(&format!("{name}: dS/db{l}"), &read(&theta_bar.biases[l]), &flat(bias));
        }
        // The host forward pass (label restoration's) gives PyTorch's loss: a sigmoid head's one
        // logit as two class probabilities.
        let (_, probs) = p.forward_host(&flat(&f["x"]), b, model);
        let want = case["loss"].as_f64().unwrap();
        if head == Head::Linear {
            let y = flat(&f["y"]);
            let mse = (0..b).map(|i| (probs[i] - y[i]).powi(2)).sum::<f64>() / b as f64;
            assert!((mse - want).abs() < 1e-6, "{name}: loss {mse} against PyTorch's {want}");
            continue;
        }
        let ce = labels
            .iter()
            .enumerate()
            .map(|(i, &c)| -probs[i * classes + c].ln())
            .sum::<f64>()
            / b as f64;
        assert!((ce - want).abs() < 1e-6, "{name}: loss {ce} against PyTorch's {want}");
    }
}

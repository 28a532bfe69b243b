//! Batches with one near-dependent pair of rows (issue 43): two rows that share their categories,
//! their label and their first-layer ReLU cell, whose second-layer gradients δ are made nearly
//! parallel as a server can make them: the second-layer units on which the pair's patterns differ
//! get their output weights scaled down by s (10⁻⁹ to 10⁻²), so G₂'s smallest singular value sits
//! anywhere from far below float32's rounding to well above it. Where the two δ's are parallel
//! the update holds the pair only as one combination, and a point between them is in every span
//! the update gives; around the rounding it is in some and not others. Beside the pair: natural
//! rows, now and then three rows whose categories mix into a fourth; networks 32 to 100 wide,
//! ReLU, leaky ReLU and tanh, softmax and sigmoid heads, trained 0, 1 or 5 epochs, weights
//! scaled 10⁴ in the first layer or in a few output units. The candidates are the points a
//! refinement slides to: the pair's combination the update holds, points on and beyond its line,
//! the mixed fourth row, the batch's rows a little off; each is one member of an ensemble that
//! `leakscope::prove_candidates` pools, certifies and peels as an attack's own.
use leakscope::client::activation::Activation;
use leakscope::client::exact::fedsgd_exact;
use leakscope::client::head::{Head, Model};
use leakscope::client::network::Params;
use leakscope::client::simulate::{Round, simulate_round};
use leakscope::client::training::train;
use leakscope::received::ReceivedUpdate;
use leakscope::report::Provenance;
use leakscope::table::{Dataset, FeatureKind, Value, encode_rows};
use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

#[path = "perturb.rs"]
mod perturb;
use perturb::{between, continuous, moved};

/// How the server scaled the weights it sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    None,
    /// W₁ and b₁ × 10⁴, W₂ × 10⁻⁴: the same function, activations 10⁴ times larger.
    FirstLayer,
    /// Three second-layer units' output weights × 10⁴.
    Outputs,
}

/// How the server laid out the units of the network it sent, beyond scaling them: weights
/// crafted by the server are inputs too (issue 43).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Craft {
    None,
    /// A quarter of the first layer's units are copies of others.
    DuplicateUnits,
    /// Half the first layer's units share one direction, their biases at the table's quantiles
    /// along it: the binning of Fowl et al., "Robbing the Fed" (ICLR 2022).
    Binned,
    /// A third of the first layer's units are active on every row (bias 10²).
    AlwaysActive,
    /// A first layer of rank 2 to d/3.
    LowRank,
    /// Each first-layer unit reads one or two input columns.
    FewColumns,
    /// A third of the second layer's units have output weights zero.
    SilentUnits,
    /// A quarter of the second layer's units are copies of others, output weights too.
    DuplicateSecond,
}

pub const CRAFTS: [Craft; 7] = [
    Craft::DuplicateUnits,
    Craft::Binned,
    Craft::AlwaysActive,
    Craft::LowRank,
    Craft::FewColumns,
    Craft::SilentUnits,
    Craft::DuplicateSecond,
];

/// The network a batch is attacked on.
#[derive(Debug, Clone, Copy)]
pub struct Net {
    pub width: usize,
    pub model: Model,
    pub epochs: usize,
    pub scale: Scale,
    pub craft: Craft,
}

/// A random network's description.
pub fn random_net(rng: &mut StdRng) -> Net {
    let activation = match rng.random_range(0..4) {
        0 | 1 => Activation::Relu,
        2 => Activation::LeakyRelu { slope: 0.01 },
        _ => Activation::Tanh,
    };
    Net {
        width: [32, 64, 64, 100, 100][rng.random_range(0..5)],
        model: Model {
            activation,
            head: if rng.random_bool(0.5) {
                Head::Softmax
            } else {
                Head::Sigmoid
            },
        },
        epochs: [0, 0, 1, 5][rng.random_range(0..4)],
        scale: [Scale::None, Scale::None, Scale::FirstLayer, Scale::Outputs][rng.random_range(0..4)],
        craft: Craft::None,
    }
}

/// `count` distinct units of `h` to copy from, and as many others to copy them into.
fn copies(h: usize, count: usize, rng: &mut StdRng) -> Vec<(usize, usize)> {
    let mut units: Vec<usize> = (0..h).collect();
    units.shuffle(rng);
    (0..count.min(h / 2)).map(|k| (units[k], units[h - 1 - k])).collect()
}

/// `params` laid out as `craft` says (weights are stored [inputs][units]).
pub fn craft_units(d: &Dataset, params: &mut Params, craft: Craft, rng: &mut StdRng) {
    let (inputs, h, h2, outputs) = (params.sizes[0], params.sizes[1], params.sizes[2], params.sizes[3]);
    let [w1, w2, w3] = &mut params.weights[..] else {
        unreachable!("two hidden layers")
    };
    let (b1, b2) = params.biases.split_at_mut(1);
    let (b1, b2) = (&mut b1[0], &mut b2[0]);
    match craft {
        Craft::None => {}
        Craft::DuplicateUnits => {
            for (from, to) in copies(h, h / 4, rng) {
                (0..inputs).for_each(|c| w1[c * h + to] = w1[c * h + from]);
                b1[to] = b1[from];
            }
        }
        Craft::Binned => {
            let v: Vec<f64> = (0..inputs).map(|_| rng.random_range(-1.0..1.0)).collect();
            let mut along: Vec<f64> = (0..2000)
                .map(|_| {
                    let x = d.encode(&d.rows[rng.random_range(0..d.n())]);
                    x.iter().zip(&v).map(|(a, b)| a * b).sum()
                })
                .collect();
            along.sort_by(f64::total_cmp);
            let bins = h / 2;
            for j in 0..bins {
                (0..inputs).for_each(|c| w1[c * h + j] = v[c] as f32);
                let q = along[(along.len() - 1) * (2 * j + 1) / (2 * bins)];
                b1[j] = -q as f32;
            }
        }
        Craft::AlwaysActive => {
            for (j, _) in copies(h, h / 3, rng) {
                b1[j] = 1e2;
            }
        }
        Craft::LowRank => {
            let rank = rng.random_range(2..=(inputs / 3).max(2));
            let a: Vec<f64> = (0..h * rank).map(|_| rng.random_range(-1.0..1.0)).collect();
            let b: Vec<f64> = (0..rank * inputs).map(|_| rng.random_range(-1.0..1.0)).collect();
            let scale = 1.0 / ((rank * inputs) as f64).sqrt();
            for c in 0..inputs {
                for j in 0..h {
                    let w: f64 = (0..rank).map(|k| a[j * rank + k] * b[k * inputs + c]).sum();
                    w1[c * h + j] = (w * scale) as f32;
                }
            }
        }
        Craft::FewColumns => {
            w1.iter_mut().for_each(|w| *w = 0.0);
            for j in 0..h {
                for _ in 0..rng.random_range(1..=2) {
                    w1[rng.random_range(0..inputs) * h + j] = rng.random_range(-1.0..1.0);
                }
            }
        }
        Craft::SilentUnits => {
            for (k, _) in copies(h2, h2 / 3, rng) {
                w3[k * outputs..(k + 1) * outputs].iter_mut().for_each(|w| *w = 0.0);
            }
        }
        Craft::DuplicateSecond => {
            for (from, to) in copies(h2, h2 / 4, rng) {
                (0..h).for_each(|j| w2[j * h2 + to] = w2[j * h2 + from]);
                b2[to] = b2[from];
                (0..outputs).for_each(|o| w3[to * outputs + o] = w3[from * outputs + o]);
            }
        }
    }
}

/// The client's network before the pair is crafted: initialised from `seed`, trained `epochs` on
/// the whole table (as `--train-epochs` trains).
pub fn trained(d: &Dataset, net: Net, seed: u64) -> Params {
    let outputs = net.model.head.outputs(d.classes.len());
    let params = Params::init(&[d.d(), net.width, net.width, outputs], seed);
    if net.epochs == 0 {
        return params;
    }
    let all: Vec<usize> = (0..d.n()).collect();
    let x = encode_rows(d, &d.rows);
    let targets = d.targets(&all, net.model.head);
    pollster::block_on(train(&params, &x, &targets, net.epochs, seed, net.model))
        .unwrap()
        .0
}

/// What one batch gave.
#[derive(Debug, Default, Clone, Copy)]
pub struct Outcome {
    pub rows: usize,
    pub proved: usize,
    pub consistent: usize,
    /// Proved rows that are no row of the batch (counted strictly: a continuous value more than
    /// 0.05 std from every row's, or another category), and rows claimed more often than held.
    pub false_proofs: usize,
    pub twice: usize,
    /// Rows kept as near a batch row (`why_not_proved` says the update places one within half
    /// the scoring tolerance), and those more than that (0.16 std) from every row of the batch.
    pub near: usize,
    pub near_false: usize,
    /// G₂'s smallest singular value (the B-th) against its largest, in float64 on the exact
    /// gradient: how near the pair is to dependent.
    pub ratio: f64,
}

fn std_of(feature: &leakscope::table::Feature) -> f64 {
    match feature.kind {
        FeatureKind::Continuous { std, .. } => std,
        FeatureKind::Categorical { .. } => 0.0,
    }
}

/// `row` with every continuous value moved by up to `spread` std.
fn near(d: &Dataset, row: &[Value], rng: &mut StdRng, spread: f64) -> Vec<Value> {
    let mut out = row.to_vec();
    for f in continuous(d) {
        let by = rng.random_range(-1.0..1.0) * spread;
        out[f] = Value::Num(moved(&d.features[f].kind, row[f].num(), by));
    }
    out
}

fn pattern(params: &Params, model: Model, d: &Dataset, row: &[Value], layer: usize) -> Vec<bool> {
    let pre = params.pre_activations_host(&d.encode(row), 1, model);
    pre[layer].iter().map(|&z| z > 0.0).collect()
}

/// δ at the second layer's pre-activations of one row with its targets (float64).
fn delta2(params: &Params, model: Model, d: &Dataset, row: &[Value], targets: &[f32]) -> Vec<f64> {
    let t: Vec<f64> = targets.iter().map(|&v| v as f64).collect();
    fedsgd_exact(params, model, &d.encode(row), &t, 1).biases[1].clone()
}

/// A batch for `net`: the crafted network, the rows and labels, the candidate members.
pub struct Batch {
    pub params: Params,
    pub rows: Vec<Vec<Value>>,
    pub labels: Vec<usize>,
    pub members: Vec<Vec<Vec<Value>>>,
}

/// A batch of `b` rows with one near-dependent pair (and, `mixed`, a triple whose categories mix
/// into a fourth row); None where no twin sharing the first-layer cell was found.
pub fn batch(d: &Dataset, base: &Params, net: Net, b: usize, mixed: bool, rng: &mut StdRng) -> Option<Batch> {
    let model = net.model;
    let mut params = base.clone();
    craft_units(d, &mut params, net.craft, rng);
    let mut drawn = std::collections::HashSet::new();
    let mut draw = |rng: &mut StdRng| loop {
        let i = rng.random_range(0..d.n());
        if drawn.insert(i) {
            break i;
        }
    };
    // The pair: a row and a twin in its first-layer cell.
    let i = draw(rng);
    let (a, label) = (d.rows[i].clone(), d.labels[i]);
    let cell = pattern(&params, model, d, &a, 0);
    let twin = (0..400).find_map(|k| {
        let spread = rng.random_range(0.05..1.0) / (1.0 + k as f64 / 40.0);
        let t = near(d, &a, rng, spread);
        (t != a && pattern(&params, model, d, &t, 0) == cell).then_some(t)
    })?;
    let mut rows = vec![a.clone(), twin.clone()];
    let mut labels = vec![label, label];
    let mut mixed_fourth = None;
    if mixed && b >= 6 {
        let cats: Vec<usize> = (0..d.features.len())
            .filter(|&f| d.features[f].is_categorical())
            .collect();
        let (f, g) = (cats[0], cats[cats.len() - 1]);
        let j = draw(rng);
        let x1 = d.rows[j].clone();
        let pick = |f: usize, rng: &mut StdRng| match &d.features[f].kind {
            FeatureKind::Categorical { categories } => Value::Cat(rng.random_range(0..categories.len() as u32)),
            _ => unreachable!(),
        };
        let (bf, yg) = (pick(f, rng), pick(g, rng));
        let mut x2 = near(d, &x1, rng, 0.1);
        x2[f] = bf;
        x2[g] = yg;
        let mut x3 = near(d, &x1, rng, 0.1);
        x3[f] = bf;
        let mut fourth = x1.clone();
        fourth[g] = yg;
        for c in continuous(d) {
            let v = x1[c].num() - x3[c].num() + x2[c].num();
            fourth[c] = Value::Num(moved(&d.features[c].kind, v, 0.0));
        }
        mixed_fourth = Some(fourth);
        for row in [x1, x2, x3] {
            rows.push(row);
            labels.push(d.labels[j]);
        }
    }
    while rows.len() < b {
        let k = draw(rng);
        rows.push(d.rows[k].clone());
        labels.push(d.labels[k]);
    }
    // The server's scaling, then the pair's δ's made nearly parallel: the second-layer units on
    // which their patterns differ (one made to differ where none does) get output weights × s.
    let h = net.width;
    let outputs = params.sizes[3];
    match net.scale {
        Scale::None => {}
        Scale::FirstLayer => {
            params.weights[0].iter_mut().for_each(|w| *w *= 1e4);
            params.biases[0].iter_mut().for_each(|w| *w *= 1e4);
            params.weights[1].iter_mut().for_each(|w| *w *= 1e-4);
        }
        Scale::Outputs => {
            for _ in 0..3 {
                let k = rng.random_range(0..h);
                params.weights[2][k * outputs..(k + 1) * outputs]
                    .iter_mut()
                    .for_each(|w| *w *= 1e4);
            }
        }
    }
    let (pa, pb) = (pattern(&params, model, d, &a, 1), pattern(&params, model, d, &twin, 1));
    let mut differ: Vec<usize> = (0..h).filter(|&k| pa[k] != pb[k]).collect();
    if differ.is_empty() {
        let za = &params.pre_activations_host(&d.encode(&a), 1, model)[1];
        let zb = &params.pre_activations_host(&d.encode(&twin), 1, model)[1];
        let k = (0..h).max_by(|&x, &y| (za[x] - zb[x]).abs().total_cmp(&(za[y] - zb[y]).abs()))?;
        params.biases[1][k] -= ((za[k] + zb[k]) / 2.0) as f32;
        differ.push(k);
    }
    let s = 10f64.powf(rng.random_range(-6.5..-0.5)) as f32;
    for &k in &differ {
        params.weights[2][k * outputs..(k + 1) * outputs]
            .iter_mut()
            .for_each(|w| *w *= s);
    }
    // The combination of the pair the update holds: δ_b ≈ c·δ_a puts a_a + c·a_b in it, the
    // activation (in their shared cell) of the point (x_a + c·x_b)/(1 + c).
    let targets = model.head.targets(&[label], d.classes.len());
    let (da, db) = (
        delta2(&params, model, d, &a, &targets),
        delta2(&params, model, d, &twin, &targets),
    );
    let dot: f64 = da.iter().zip(&db).map(|(x, y)| x * y).sum();
    let c = dot / da.iter().map(|x| x * x).sum::<f64>().max(f64::MIN_POSITIVE);
    let mut points = vec![between(d, &a, &twin, c / (1.0 + c))];
    for lambda in [0.25, 0.5, 0.75, -0.5, 1.5] {
        points.push(between(d, &a, &twin, lambda));
    }
    points.extend(mixed_fourth);
    // Members: the batch a little off, then with the pair's two slots holding each point.
    let off = |rng: &mut StdRng| -> Vec<Vec<Value>> { rows.iter().map(|r| near(d, r, rng, 0.02)).collect() };
    let mut members = vec![off(rng)];
    for p in points {
        let mut m = off(rng);
        m[0] = p.clone();
        m[1] = p;
        members.push(m);
    }
    Some(Batch {
        params,
        rows,
        labels,
        members,
    })
}

/// One batch attacked: its float32 FedSGD update received with its labels, the candidates
/// pooled, certified and peeled, every proved row held to the batch (strictly: 0.05 std).
pub fn attack(d: &Dataset, encoding: &Dataset, net: Net, batch: &Batch) -> Outcome {
    let model = net.model;
    let b = batch.rows.len();
    let x = encode_rows(d, &batch.rows);
    let targets = model.head.targets(&batch.labels, d.classes.len());
    let update = pollster::block_on(simulate_round(&batch.params, &x, &targets, &Round::fedsgd(model))).unwrap();
    let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let t64: Vec<f64> = targets.iter().map(|&v| v as f64).collect();
    let exact = fedsgd_exact(&batch.params, model, &x64, &t64, b);
    let h = net.width;
    let g2 = nalgebra::DMatrix::from_row_slice(h, h, &exact.weights[1]);
    let mut s: Vec<f64> = g2.singular_values().iter().copied().collect();
    s.sort_by(|p, q| q.total_cmp(p));
    let ratio = s.get(b - 1).copied().unwrap_or(0.0) / s[0].max(f64::MIN_POSITIVE);
    let received = ReceivedUpdate {
        params: batch.params.clone(),
        update,
        embeddings: Vec::new(),
        rows: Some(b),
        labels: Some(batch.labels.iter().map(|&l| d.classes[l].clone()).collect()),
    };
    let config = leakscope::RunOptions {
        label: d.label.clone(),
        batch_size: b,
        ensemble: Some(batch.members.len()),
        iterations: 1,
        hidden: vec![h, h],
        activation: model.activation,
        head: model.head,
        labels: leakscope::LabelMode::Known,
        ..Default::default()
    }
    .attack_config()
    .unwrap();
    let report = pollster::block_on(leakscope::prove_candidates(
        &leakscope::Runtime::cpu(),
        encoding,
        &config,
        &received,
        &batch.members,
    ))
    .unwrap();
    let within = |truth: &[Value], got: &[String], stds: f64| {
        d.features.iter().enumerate().all(|(f, feature)| match truth[f] {
            Value::Num(v) => got[f]
                .parse::<f64>()
                .is_ok_and(|g| (g - v).abs() <= stds * std_of(feature)),
            Value::Cat(_) => d.format(f, truth[f]) == got[f],
        })
    };
    let same = |truth: &[Value], got: &[String]| within(truth, got, 0.05);
    let near: Vec<&Vec<String>> = report
        .rows
        .iter()
        .filter(|r| {
            r.why_not_proved
                .as_deref()
                .is_some_and(|w| w.contains("within half the scoring tolerance"))
        })
        .map(|r| &r.cells)
        .collect();
    let half_tolerance = 0.5 * leakscope::table::dataset::TOLERANCE_FACTOR;
    let mut out = Outcome {
        rows: b,
        ratio,
        ..Default::default()
    };
    let proved: Vec<&Vec<String>> = report
        .rows
        .iter()
        .filter(|r| r.provenance == Some(Provenance::Proved))
        .map(|r| &r.cells)
        .collect();
    out.proved = proved.len();
    out.consistent = report
        .rows
        .iter()
        .filter(|r| r.provenance == Some(Provenance::Consistent))
        .count();
    out.false_proofs = proved.iter().filter(|p| !batch.rows.iter().any(|t| same(t, p))).count();
    out.near = near.len();
    out.near_false = near
        .iter()
        .filter(|p| !batch.rows.iter().any(|t| within(t, p, half_tolerance)))
        .count();
    for t in &batch.rows {
        let cells: Vec<String> = (0..t.len()).map(|f| d.format(f, t[f])).collect();
        let held = batch.rows.iter().filter(|u| same(u, &cells)).count();
        let claimed = proved.iter().filter(|p| same(t, p)).count();
        out.twice += (claimed > held) as usize;
    }
    out
}

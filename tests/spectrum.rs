//! The proofs' noise bound held to the truth (issue 43): on simulated float32 updates of networks
//! of every kind the engine runs (ReLU and leaky ReLU, softmax and sigmoid heads, 32 and 100
//! wide, trained 0-5 epochs, weights scaled 10⁴), the part of the client's rounding that can move
//! a layer's span, ‖P⊥(Ĝ − G)‖₂, stays below `Spectrum::noise`, and the batch's own rows lie
//! within `Spectrum::drift` of the span read off the update, wherever its rank is certain. G is
//! the client's own float32 per-row terms summed exactly: what the update would be without the
//! rounding of its sum and its storage (the rounding inside each row's activation and δ does not
//! move the span of the rows' activations, which the proofs read).
mod common;

use leakscope::attack::priors::spectrum::{Precision, Rank, Spectrum};
use leakscope::client::activation::Activation;
use leakscope::client::head::{Head, Model};
use leakscope::client::network::Params;
use leakscope::client::simulate::{Round, simulate_round};
use leakscope::client::training::train;
use leakscope::table::{Dataset, encode_rows};
use nalgebra::{DMatrix, DVector};

/// Each layer's weight gradient as the sum of the client's float32 per-row terms, in float64:
/// the rows' activations and δ's computed in float32 as the client computes them.
fn per_row_terms(params: &Params, model: Model, x: &[f32], targets: &[f32], rows: usize) -> Vec<DMatrix<f64>> {
    let layers = params.layers();
    let (d, outputs) = (params.sizes[0], params.sizes[layers]);
    let mut out: Vec<DMatrix<f64>> = (0..layers)
        .map(|l| DMatrix::zeros(params.sizes[l], params.sizes[l + 1]))
        .collect();
    for r in 0..rows {
        let mut inputs: Vec<Vec<f32>> = vec![x[r * d..(r + 1) * d].to_vec()];
        let mut pre: Vec<Vec<f32>> = Vec::new();
        for l in 0..layers {
            let (fan_in, fan_out) = (params.sizes[l], params.sizes[l + 1]);
            let h = inputs.last().unwrap().clone();
            let z: Vec<f32> = (0..fan_out)
                .map(|o| {
                    params.biases[l][o]
                        + (0..fan_in)
                            .map(|i| h[i] * params.weights[l][i * fan_out + o])
                            .sum::<f32>()
                })
                .collect();
            if l + 1 < layers {
                inputs.push(z.iter().map(|&v| model.activation.host(v as f64) as f32).collect());
            }
            pre.push(z);
        }
        let logits: Vec<f64> = pre[layers - 1].iter().map(|&v| v as f64).collect();
        let p = model.head.host_probabilities(&logits);
        let y = &targets[r * outputs..(r + 1) * outputs];
        let mut delta: Vec<f32> = match model.head {
            Head::Sigmoid => vec![((p[1] - y[0] as f64) / rows as f64) as f32],
            _ => (0..outputs)
                .map(|c| ((p[c] - y[c] as f64) / rows as f64) as f32)
                .collect(),
        };
        for l in (0..layers).rev() {
            let (fan_in, fan_out) = (params.sizes[l], params.sizes[l + 1]);
            for i in 0..fan_in {
                for o in 0..fan_out {
                    out[l][(i, o)] += inputs[l][i] as f64 * delta[o] as f64;
                }
            }
            if l > 0 {
                delta = (0..fan_in)
                    .map(|i| {
                        let back: f32 = (0..fan_out)
                            .map(|o| params.weights[l][i * fan_out + o] * delta[o])
                            .sum();
                        back * model.activation.host_slope(pre[l - 1][i] as f64) as f32
                    })
                    .collect();
            }
        }
    }
    out
}

/// Column space of `m` (float64, exact up to its own rounding): an orthonormal basis.
fn column_space(m: &DMatrix<f64>) -> DMatrix<f64> {
    let svd = m.clone().svd(true, false);
    let top = svd.singular_values.max();
    let kept: Vec<usize> = (0..svd.singular_values.len())
        .filter(|&k| svd.singular_values[k] > 1e-12 * top)
        .collect();
    svd.u.unwrap().select_columns(&kept)
}

fn networks(d: &Dataset) -> Vec<(String, Model, Params)> {
    let mut out = Vec::new();
    let all: Vec<usize> = (0..d.n()).collect();
    let x = encode_rows(d, &d.rows);
    for model in [
        Model::default(),
        Model {
            activation: Activation::LeakyRelu { slope: 0.01 },
            head: Head::Sigmoid,
        },
    ] {
        let outputs = model.head.outputs(d.classes.len());
        for width in [32, 100] {
            for epochs in [0, 1, 5] {
                let init = Params::init(&[d.d(), width, width, outputs], 11 + epochs as u64);
                let params = match epochs {
                    0 => init,
                    e => {
                        pollster::block_on(train(&init, &x, &d.targets(&all, model.head), e, 3, model))
                            .unwrap()
                            .0
                    }
                };
                let name = format!("{width} wide, {:?}, {epochs} epochs", model);
                let mut scaled = params.clone();
                scaled.weights[0].iter_mut().for_each(|w| *w *= 1e4);
                scaled.biases[0].iter_mut().for_each(|w| *w *= 1e4);
                scaled.weights[1].iter_mut().for_each(|w| *w *= 1e-4);
                out.push((name.clone(), model, params));
                out.push((format!("{name}, first layer × 1e4"), model, scaled));
            }
        }
    }
    out
}

#[test]
fn the_noise_bound_holds_the_clients_rounding_and_the_rows_drift() {
    let tables = [common::adult(), common::dataset("german-credit.csv", "credit_risk")];
    let (mut checked, mut drifts) = (0, 0);
    let mut worst: f64 = 0.0;
    for d in &tables {
        for (name, model, params) in networks(d) {
            for (b, seed) in [(8usize, 1u64), (24, 2)] {
                let batch = leakscope::table::draw_batch(d, b, seed);
                let rows: Vec<_> = batch.iter().map(|&i| d.rows[i].clone()).collect();
                let x = encode_rows(d, &rows);
                let targets = d.targets(&batch, model.head);
                let update = pollster::block_on(simulate_round(&params, &x, &targets, &Round::fedsgd(model))).unwrap();
                let truth = per_row_terms(&params, model, &x, &targets, b);
                for (l, exact) in truth.iter().enumerate().take(2) {
                    let (m, n) = exact.shape();
                    let received = DMatrix::from_row_iterator(m, n, update.weight(l).iter().map(|&v| v as f64));
                    if received.norm() == 0.0 {
                        continue;
                    }
                    let spectrum = Spectrum::of(
                        received.clone(),
                        Precision::of(update.weight(l).iter().copied()),
                        b,
                        false,
                    );
                    let s = column_space(exact);
                    let perp = DMatrix::<f64>::identity(m, m) - &s * s.transpose();
                    let moving = (&perp * (&received - exact)).singular_values().max();
                    worst = worst.max(moving / spectrum.noise);
                    assert!(
                        moving <= spectrum.noise,
                        "{name}, B = {b}, layer {l}: the rounding that moves the span {moving:.2e} > η {:.2e}",
                        spectrum.noise
                    );
                    checked += 1;
                    // Where the rank is certain, each row's input to the layer lies within its drift.
                    if spectrum.rank() != Rank::Certain(b) {
                        continue;
                    }
                    let basis = spectrum.basis(b);
                    let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
                    let pre = params.pre_activations_host(&x64, b, model);
                    for i in 0..b {
                        let v: DVector<f64> = match l {
                            0 => DVector::from_column_slice(&x64[i * m..(i + 1) * m]),
                            _ => DVector::from_iterator(
                                m,
                                pre[0][i * m..(i + 1) * m].iter().map(|&z| model.activation.host(z)),
                            ),
                        };
                        if v.norm() == 0.0 {
                            continue;
                        }
                        let off = (&v - &basis * basis.tr_mul(&v)).norm() / v.norm();
                        // The client's own rounding of the row's input (float32) comes on top.
                        let bound = spectrum.drift(b, &v) + 64.0 * Precision::F32.unit;
                        assert!(
                            off <= bound,
                            "{name}, B = {b}, layer {l}, row {i}: {off:.2e} > {bound:.2e}"
                        );
                        drifts += 1;
                    }
                }
            }
        }
    }
    eprintln!("  {checked} layers checked, {drifts} rows' drift; the rounding at most {worst:.2} of η");
    assert!(checked >= 80 && drifts >= 500, "{checked} layers, {drifts} rows");
}

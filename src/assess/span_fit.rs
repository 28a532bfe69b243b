//! Which of the first layer's span's rows the batch is, where the span holds more rows than the
//! batch (`assess::enumerated`): the update fitted by them. A FedSGD update is the mean of its
//! rows' gradients, B·G = Σᵢ g(xᵢ, yᵢ). Where the span holds every row of the batch (its rank
//! certain and B, every category searched, the continuous values fixed), the batch's rows are
//! among those found, and B·G is a sum of their gradients Jₕ eₕ, linear in each row's output
//! residual eₕ: s·(pₕ − yₕ) for a row of the batch, nothing for another. Where the columns of the
//! Jₕ are independent, the least-squares fit is unique, and it is the batch's: the rows whose
//! weight is a label's residual are the batch, with their labels. The fit is read to the update's
//! precision: what is left within the rounding, each weight within what the rounding moves it
//! (its row of the pseudo-inverse times the rounding) of exactly one of its options. It assumes the
//! rows found are the batch's to that rounding (the span fixes their continuous values:
//! `assess::enumerated` asks each to be precise) and the update's noise within it, as every
//! proof here does (`attack::priors::spectrum`).
use nalgebra::{DMatrix, DVector};

use crate::attack::inversion::setup::Setup;
use crate::attack::priors::spectrum::Precision;
use crate::client::exact::fedsgd_exact;
use crate::client::head::Head;
use crate::config::Protocol;

/// Columns at most, as rows found times outputs (the fit's cost grows with their square).
const MOST_COLUMNS: usize = 2048;
/// The update's rounding over its norm: the stored values' (8·u) and the client's float32 rows
/// against ours, about u·√(fan-in + 1) per layer, this many times.
const FORWARD: f64 = 16.0;
/// What is left of the fit within this many times the rounding.
const FITS: f64 = 4.0;

impl Setup<'_> {
    /// The received update times `scale` (B·G for a FedSGD batch of B), laid out as
    /// `ExactGradient::flat` lays out a gradient: every layer's weights, then the biases.
    pub(super) fn update_times(&self, scale: f64) -> Vec<f64> {
        let observed = &self.scenario.observed;
        let layers = self.scenario.params.layers();
        (0..layers)
            .flat_map(|l| observed.weight(l))
            .chain((0..layers).flat_map(|l| observed.bias(l)))
            .map(|&v| scale * v as f64)
            .collect()
    }

    /// The batch as rows of `encoded` (indices, each with its label), where the update is fitted
    /// by them as the module says; None where the fit does not decide it.
    pub(crate) fn fit_span_rows(&self, encoded: &[Vec<f64>]) -> Option<Vec<(usize, usize)>> {
        let (params, model) = (&self.scenario.params, self.config.model());
        let b = self.config.rows();
        if self.config.protocol != Protocol::Fedsgd || model.head == Head::Linear || encoded.is_empty() {
            return None;
        }
        let classes = self.dataset.classes.len();
        if encoded.len() * classes > MOST_COLUMNS || encoded.len() <= b {
            return None;
        }
        let observed = &self.scenario.observed;
        let layers = params.layers();
        let target = self.update_times(b as f64);
        // Each row's gradient is linear in its output residual e = s·(p − y): Jₕ e. Its columns
        // along the residuals a label can leave (softmax: e sums to zero, so the first C − 1
        // outputs less the last; a sigmoid's one output): the row's weights are then p − y there.
        let outputs = params.sizes[layers];
        let free = if model.head == Head::Softmax {
            outputs - 1
        } else {
            outputs
        };
        let s = model.head.scale();
        let (_, probs) = params.forward_host(&encoded.concat(), encoded.len(), model);
        let mut a = DMatrix::<f64>::zeros(target.len(), encoded.len() * free);
        for (i, row) in encoded.iter().enumerate() {
            let p = &probs[i * classes..(i + 1) * classes];
            let head_p: Vec<f64> = match model.head {
                Head::Sigmoid => vec![p[1]],
                _ => p.to_vec(),
            };
            for k in 0..free {
                // Targets that leave the output gradient (1/s)·(e_k − e_last), or e_k alone.
                let mut e = vec![0.0; outputs];
                e[k] = 1.0;
                if model.head == Head::Softmax {
                    e[outputs - 1] = -1.0;
                }
                let y: Vec<f64> = head_p.iter().zip(&e).map(|(p, e)| p - e / s).collect();
                let g = fedsgd_exact(params, model, row, &y, 1);
                a.set_column(i * free + k, &DVector::from_vec(g.flat()));
            }
        }
        let t = DVector::from_vec(target);
        let unit = Precision::of(observed.values()).unit.max(Precision::F32.unit);
        let forward = FORWARD
            * unit
            * params.sizes[..layers]
                .iter()
                .map(|&n| ((n + 1) as f64).sqrt())
                .sum::<f64>();
        let rounding = (8.0 * unit + forward) * t.norm();
        let svd = a.clone().svd(true, true);
        let smallest = svd.singular_values.min();
        if !(smallest > 0.0) {
            return None;
        }
        let noise = FITS * rounding;
        let w = svd.solve(&t, 0.0).ok()?;
        if (&a * &w - &t).norm() > noise {
            return None;
        }
        // With A of full column rank the fitted weights are the batch's plus A⁺ν, ν the update's
        // rounding (held to FITS times it): each weight lies within its row of A⁺ (V Σ⁻¹) times
        // ‖ν‖ of the batch's. Each row's weights are one of its options: nothing (a row outside
        // the batch) or p − y for a label; a row with exactly one option within reach is decided,
        // with none or several the fit decides nothing. A row the network is sure of weighs little
        // (p − y of 10⁻² on a trained network) but is decided wherever it stands clear of reach.
        let v = svd.v_t.as_ref()?.transpose();
        let sigma = &svd.singular_values;
        let reach: Vec<f64> = (0..v.nrows())
            .map(|r| {
                noise
                    * (0..sigma.len())
                        .map(|j| (v[(r, j)] / sigma[j]).powi(2))
                        .sum::<f64>()
                        .sqrt()
            })
            .collect();
        let mut batch = Vec::new();
        for i in 0..encoded.len() {
            let wi = &w.as_slice()[i * free..(i + 1) * free];
            let within = &reach[i * free..(i + 1) * free];
            let p = &probs[i * classes..(i + 1) * classes];
            // The weights a label gives: p − y over the outputs the columns take.
            let of_label = |c: usize| -> Vec<f64> {
                match model.head {
                    Head::Sigmoid => vec![p[1] - (c == 1) as u8 as f64],
                    _ => (0..free).map(|k| p[k] - (k == c) as u8 as f64).collect(),
                }
            };
            let near = |target: &[f64]| (wi.iter().zip(target).zip(within)).all(|((w, t), r)| (w - t).abs() <= *r);
            let outside = near(&vec![0.0; free]);
            let labels: Vec<usize> = (0..classes).filter(|&c| near(&of_label(c))).collect();
            match (outside, labels.as_slice()) {
                (true, []) => continue,
                (false, &[label]) => batch.push((i, label)),
                _ => return None,
            }
        }
        (batch.len() == b).then_some(batch)
    }
}

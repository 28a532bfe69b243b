//! Peeling proved rows off a FedSGD update. The update is a mean of per-row gradients, and a
//! proved row's gradient is the server's to compute once its output gradient eᵢ (s·(pᵢ − yᵢ),
//! its label's residual) is known: B·G − Σ_proved gᵢ is then the update of the rows left. Those
//! few rows are independent where the batch's were not, so the first layer's part of what is
//! left spans exactly them, and the rows of that span the table can hold (`span_rows`) are
//! candidates for the second layer's certificate (`assess::peeled`).
//!
//! The proved rows' eᵢ come from the second layer's gradient G₂ = (1/B) Σᵢ aᵢ δᵢᵀ ([h₁, h₂]),
//! with aᵢ a row's first-layer activation and δᵢ = Jᵢ eᵢ its gradient at the second layer's
//! pre-activations (Jᵢ from the explicit backward pass, one column per output). Where G₂ has
//! rank B < h₁ (the activations are independent; the certificate's own condition), the part Q
//! of its column space orthogonal to the proved rows' activations belongs to the rows left
//! only, so G₂ᵀQ spans their δ's, T. Projected off T, G₂ is the proved rows' alone: an
//! overdetermined linear system in their eᵢ, and its residual is a certificate (a wrong proved
//! row, or one whose label is not one, leaves no exact solution).
use nalgebra::{DMatrix, DVector};

use crate::attack::inversion::relax::Layout;
use crate::attack::priors::spectrum::{Precision, SEPARATION, Spectrum};
use crate::client::exact::back;
use crate::client::head::{Head, Model};
use crate::client::network::Params;
use crate::client::update::Update;

/// The proved rows explain their share of G₂ where what is left is within this many times the
/// update's noise on it (`Spectrum::noise`) and the client's rounding of their activations.
const EXPLAINED: f64 = 4.0;
/// The most a recovered label may be from one (one-hot, or 0/1), however loosely the update
/// reads it...
const OFF_LABEL: f64 = 0.05;
/// ...and, where a label decides a proof (`Reading::Strict`), at most this many times how
/// precisely the update reads it: a point between two rows of the batch reads as their summed
/// residual, off a label by one row's |p − y|, which training makes small; only a strict
/// reading tells it from a row.
const LABEL_MARGIN: f64 = 8.0;
/// Peeling to find the rows left reads proved rows that may sit a little off (the certificate
/// proves a continuous value to its tolerance): their activations within this relative distance
/// of the span, and their share of G₂ explained to it, however finely the update reads.
const LOOSE: f64 = 1e-3;

/// How strictly the proved rows are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// To grant a proof: every tolerance the update's precision's.
    Strict,
    /// To peel: loose enough for rows a little off, which are read exactly afterwards.
    Loose,
}
/// How far a row's label counts may be from whole numbers. At initialisation p ≈ 0.5, so m and
/// m + 2 copies differ by 2p − 1 (0.015 on a test batch): a count is read only where one m is
/// whole to this, far inside that and far outside float error (~1e-6).
const WHOLE: f64 = 1e-3;

/// One row's forward pass (each layer's input and pre-activation) and what its δ at the second
/// layer is per output gradient.
struct RowPass {
    inputs: Vec<Vec<f64>>,
    pre: Vec<Vec<f64>>,
    /// The row's first-layer activation a [h₁].
    a1: DVector<f64>,
    /// The head's probabilities (or a regression's output).
    probs: Vec<f64>,
    /// δ at the second layer's pre-activations per unit output gradient, [h₂, outputs].
    j2: DMatrix<f64>,
}

/// Each row's forward pass, and the rows' first-layer activations as columns ([h₁, n]).
fn passes(params: &Params, model: Model, rows: &[Vec<f64>]) -> (Vec<RowPass>, DMatrix<f64>) {
    let passes: Vec<RowPass> = rows.iter().map(|x| RowPass::new(params, model, x)).collect();
    let a = DMatrix::from_columns(&passes.iter().map(|r| r.a1.clone()).collect::<Vec<_>>());
    (passes, a)
}

/// The output gradient e whose δ at the second layer, `j`·e, is nearest `delta` (least squares).
fn output_gradient(j: &DMatrix<f64>, delta: &DVector<f64>) -> Option<DVector<f64>> {
    j.clone().svd(true, true).solve(delta, 1e-12).ok()
}

/// The client's float32 rounding of a row's activation, against ours in float64: about
/// u·√(d + 1) times |W₁|ᵀ|x| + |b₁| on its live units, this many times (`activation_span`'s).
const FORWARD: f64 = 2.0;
/// A label read off the update is the client's float32 p less its residual; ours is in float64:
/// they differ by about u·(1 + |logit|), this many times.
const PROBABILITY: f64 = 16.0;

impl RowPass {
    /// The client's rounding of this row's first-layer activation, relative to its norm.
    fn forward_error(&self, params: &Params) -> f64 {
        let x = &self.inputs[0];
        let (d, h) = (params.sizes[0], params.sizes[1]);
        let norm = self.a1.norm();
        if norm == 0.0 {
            return 0.0;
        }
        let scale: f64 = (0..h)
            .filter(|&j| self.pre[0][j] > 0.0 || self.a1[j] != 0.0)
            .map(|j| {
                let s: f64 = (0..d).map(|i| (params.weights[0][i * h + j] as f64 * x[i]).abs()).sum();
                (s + (params.biases[0][j] as f64).abs()).powi(2)
            })
            .sum::<f64>()
            .sqrt();
        FORWARD * Precision::F32.unit * ((d + 1) as f64).sqrt() * scale / norm
    }

    /// How far the client's probabilities can be from ours.
    fn probability_error(&self) -> f64 {
        let logit = self
            .pre
            .last()
            .map_or(0.0, |z| z.iter().fold(0.0f64, |m, v| m.max(v.abs())));
        PROBABILITY * Precision::F32.unit * (1.0 + logit)
    }

    fn new(params: &Params, model: Model, x: &[f64]) -> RowPass {
        let layers = params.layers();
        let pre = params.pre_activations_host(x, 1, model);
        let mut inputs = vec![x.to_vec()];
        inputs.extend(
            pre[..layers - 1]
                .iter()
                .map(|z| z.iter().map(|&v| model.activation.host(v)).collect()),
        );
        let outputs = params.sizes[layers];
        let probs = model.head.host_probabilities(&pre[layers - 1]);
        let mut j2 = DMatrix::zeros(params.sizes[2], outputs);
        for o in 0..outputs {
            let mut delta: Vec<f64> = (0..outputs).map(|k| (k == o) as u8 as f64).collect();
            for l in (2..layers).rev() {
                delta = back(params, model, &pre[l - 1], l, &delta);
            }
            j2.set_column(o, &DVector::from_column_slice(&delta));
        }
        RowPass {
            a1: DVector::from_vec(inputs[1].clone()),
            inputs,
            pre,
            probs,
            j2,
        }
    }

    /// Subtract `scale` times the row's gradient under output gradient `e` from `out` (every
    /// value in `Update::values`' order: each layer's W, then each layer's b); returns its δ at
    /// the first layer.
    fn subtract_gradient(&self, params: &Params, model: Model, e: &[f64], scale: f64, out: &mut [f64]) -> Vec<f64> {
        let layers = params.layers();
        let weights: Vec<usize> = params.weights.iter().map(Vec::len).collect();
        let total: usize = weights.iter().sum();
        let mut delta = e.to_vec();
        for l in (0..layers).rev() {
            let fan_out = params.sizes[l + 1];
            let w_at: usize = weights[..l].iter().sum();
            let b_at: usize = total + (0..l).map(|m| params.sizes[m + 1]).sum::<usize>();
            for (i, &x) in self.inputs[l].iter().enumerate() {
                let row = &mut out[w_at + i * fan_out..w_at + (i + 1) * fan_out];
                row.iter_mut().zip(&delta).for_each(|(o, d)| *o -= scale * x * d);
            }
            out[b_at..b_at + fan_out]
                .iter_mut()
                .zip(&delta)
                .for_each(|(o, d)| *o -= scale * d);
            if l > 0 {
                delta = back(params, model, &self.pre[l - 1], l, &delta);
            }
        }
        delta
    }
}

/// The singular values of `m` in decreasing order and the matching left singular vectors.
fn left_singular(m: &DMatrix<f64>) -> (Vec<f64>, DMatrix<f64>) {
    let svd = m.clone().svd(true, false);
    let u = svd.u.expect("asked for U");
    let mut order: Vec<usize> = (0..svd.singular_values.len()).collect();
    order.sort_by(|&a, &b| svd.singular_values[b].total_cmp(&svd.singular_values[a]));
    let values = order.iter().map(|&k| svd.singular_values[k]).collect();
    (
        values,
        DMatrix::from_fn(m.nrows(), order.len(), |i, k| u[(i, order[k])]),
    )
}

/// The `count` leading left singular vectors of `m`: a basis of its column space where its rank
/// is `count` (None where it has fewer columns).
fn leading_basis(m: &DMatrix<f64>, count: usize) -> Option<DMatrix<f64>> {
    let (_, u) = left_singular(m);
    (u.ncols() >= count).then(|| u.columns(0, count).into_owned())
}

/// A recovered output gradient eᵢ snapped to the label's exact one, s·(pᵢ − yᵢ), where
/// yᵢ = pᵢ − eᵢ/s is a label to within `OFF_LABEL` (one-hot, or 0/1 for a sigmoid head); None
/// where it is not. A regression's label is any value: its eᵢ is kept as solved.
fn snap_to_label(head: Head, probs: &[f64], e: &DVector<f64>, tolerance: f64) -> Option<DVector<f64>> {
    let s = head.scale();
    let y: Vec<f64> = match head {
        Head::Linear => return Some(e.clone()),
        Head::Softmax => (0..probs.len()).map(|c| probs[c] - e[c] / s).collect(),
        Head::Sigmoid => vec![probs[1] - e[0] / s],
    };
    let label: Vec<f64> = y.iter().map(|v| v.round()).collect();
    let off = y.iter().zip(&label).map(|(v, l)| (v - l).abs()).fold(0.0, f64::max);
    let hot = label.iter().filter(|&&l| l == 1.0).count();
    let valid = label.iter().all(|&l| l == 0.0 || l == 1.0) && (head == Head::Sigmoid || hot == 1);
    (valid && off <= tolerance.min(OFF_LABEL)).then(|| match head {
        Head::Sigmoid => DVector::from_element(1, s * (probs[1] - label[0])),
        _ => DVector::from_iterator(probs.len(), (0..probs.len()).map(|c| s * (probs[c] - label[c]))),
    })
}

/// B·G₂ ([h₁, h₂]) of an update of `b` rows and its spectrum, read as the second layer's
/// certificate reads it (`Spectrum`, the update's own precision).
fn second_layer_spectrum(params: &Params, update: &Update, b: usize) -> (DMatrix<f64>, Spectrum) {
    let (h1, h2) = (params.sizes[1], params.sizes[2]);
    let g2 = DMatrix::from_fn(h1, h2, |i, j| b as f64 * update.weight(1)[i * h2 + j] as f64);
    let precision = Precision::of(update.weight(1).iter().copied());
    let spectrum = Spectrum::of(g2.clone(), precision, b, false);
    (g2, spectrum)
}

/// Why the proved rows do not peel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Nothing to peel, a network it does not apply to, or proved rows that do not explain their
    /// share of G₂ (a wrong row among them: the certificate).
    Unexplained,
    /// Proved row i's label residual is not a label's. Either it is not a row of the batch though
    /// its activation lies in the span (a point between two rows that share their categories and
    /// their first-layer ReLU pattern, where the activation is affine in the continuous values:
    /// Adult B = 64 seed 9), or the rows left's δ's nearly span its own. The others may still
    /// peel, with row i among the rows left.
    Unlabelled(usize),
}

/// What peeling leaves: the update of the rows left (their mean gradient), the proved rows as
/// the first layer reads them exactly (encoded, [d] each; `read_rows`), and how many of the rows
/// left the first layer's part of it holds clear of the update's rounding (a row whose residual
/// training made too small to read leaves nothing there).
pub struct Peeled {
    pub update: Update,
    pub rows: Vec<Vec<f64>>,
    pub visible: usize,
}

/// An update of `b` rows ready to peel: its second layer's gradient B·G₂ and the span of the
/// batch's activations, read once for every peeling of it (`peeled_update` peels again as the
/// proved rows are read more exactly). The span is G₂'s determined directions (`Spectrum`),
/// `rank` of them: the batch's B where G₂ has its rank, fewer where rows' δ's are (nearly)
/// dependent; there the proved rows' labels are still read (`labelled`), and nothing is peeled.
pub struct Peeler<'a> {
    params: &'a Params,
    model: Model,
    update: &'a Update,
    b: usize,
    g2: DMatrix<f64>,
    spectrum: Spectrum,
    /// An orthonormal basis of the activations' span, [h₁, rank].
    span: DMatrix<f64>,
    rank: usize,
}

/// The proved rows' label residuals as the second layer's gradient gives them.
struct Read {
    rows: Vec<RowPass>,
    /// Per proved row, its label's residual eᵢ where the update gives one.
    labels: Vec<Option<DVector<f64>>>,
    /// Whether the rows, each with its label, explain B·G₂ projected off the rows left's δ's.
    explained: bool,
}

impl<'a> Peeler<'a> {
    /// None where the network has fewer than two hidden layers, the second layer's gradient has
    /// no determined direction, or its span fills the first layer.
    pub fn new(params: &'a Params, model: Model, update: &'a Update, b: usize) -> Option<Peeler<'a>> {
        if params.layers() < 3 || b == 0 {
            return None;
        }
        let (g2, spectrum) = second_layer_spectrum(params, update, b);
        let rank = spectrum.determined().min(b);
        if rank == 0 || rank >= params.sizes[1] || spectrum.noisy() {
            return None;
        }
        let span = spectrum.basis(rank);
        Some(Peeler {
            params,
            model,
            update,
            b,
            g2,
            spectrum,
            span,
            rank,
        })
    }

    /// Whether the span is every row's activation (G₂ of the batch's rank, every direction
    /// determined): only then are rows peeled.
    pub fn full(&self) -> bool {
        self.rank == self.b && self.spectrum.above_noise() == self.b
    }

    /// The FedSGD update of the `b − proved.len()` rows left once the `proved` rows (encoded,
    /// [p, d] each) are peeled off the update (the mean gradient of `b` rows), as their own mean
    /// gradient. Refused where the proved rows do not explain their share of the second layer's
    /// gradient exactly with a label each.
    pub fn peel(&self, proved: &[Vec<f64>]) -> Result<Peeled, Refused> {
        self.try_peel(proved).unwrap_or(Err(Refused::Unexplained))
    }

    /// The label certificate: of the `proved` rows (encoded), those whose label residual the
    /// second layer's gradient does not give. Projected off the rows left's δ's (the span's part
    /// orthogonal to the proved rows' activations gives them), G₂ is the proved rows' alone, each
    /// row's δ and its label's residual read from it; a point between two rows that share their
    /// first-layer pattern reads as their summed residual, which is no label's. An unlabelled
    /// row joins the rows left and the rest are read again, until each reads a label and
    /// together they explain their share. None where they never do (no row is labelled).
    pub fn unlabelled(&self, proved: &[Vec<f64>]) -> Option<Vec<usize>> {
        let mut keep: Vec<usize> = (0..proved.len()).collect();
        let mut dropped = Vec::new();
        while !keep.is_empty() {
            let rows: Vec<Vec<f64>> = keep.iter().map(|&i| proved[i].clone()).collect();
            let read = self.read(&rows, Reading::Strict)?;
            match read.labels.iter().position(Option::is_none) {
                Some(k) => dropped.push(keep.remove(k)),
                None if read.explained => return Some(dropped),
                None => return None,
            }
        }
        None
    }

    /// The rows' forward passes and their activations ([h₁, n]), where every one lies within
    /// how far a row of the batch can from the span (`Spectrum::drift`, and the rounding of its
    /// activation).
    fn in_span(&self, rows: &[Vec<f64>], reading: Reading) -> Option<(Vec<RowPass>, DMatrix<f64>)> {
        let (passes, a) = passes(self.params, self.model, rows);
        let inside = passes.iter().all(|row| {
            let off = (&row.a1 - &self.span * self.span.tr_mul(&row.a1)).norm();
            let strict = 4.0 * (self.spectrum.drift(self.rank, &row.a1) + row.forward_error(self.params));
            let allowed = match reading {
                Reading::Strict => strict,
                Reading::Loose => strict.max(LOOSE),
            };
            off <= allowed * row.a1.norm()
        });
        inside.then_some((passes, a))
    }

    /// The proved rows' label residuals, read off B·G₂ projected off the rows left's δ's.
    fn read(&self, proved: &[Vec<f64>], reading: Reading) -> Option<Read> {
        let (g2, span, r) = (&self.g2, &self.span, self.rank);
        let p = proved.len();
        if p == 0 || p > r {
            return None;
        }
        let h2 = self.params.sizes[2];
        let (rows, a) = self.in_span(proved, reading)?;
        let k = span.transpose() * &a;
        // The span's part orthogonal to the proved rows: the rows left's alone (r − p dimensions).
        let within = leading_basis(&k, p)?;
        let off_t = match r - p {
            0 => DMatrix::<f64>::identity(h2, h2),
            rest => {
                let complement = leading_basis(&(DMatrix::<f64>::identity(r, r) - &within * within.transpose()), rest)?;
                // The rows left's δ's span T; projected off it, G₂ is the proved rows' alone.
                let t = leading_basis(&(g2.transpose() * (span * complement)), rest)?;
                DMatrix::<f64>::identity(h2, h2) - &t * t.transpose()
            }
        };
        let m = g2 * &off_t;
        // M = A Vᵀ with V's row i = (I − TTᵀ) Jᵢ eᵢ: V from A's pseudo-inverse, then each eᵢ.
        let svd = a.clone().svd(true, true);
        let smallest = svd.singular_values.min();
        if !(smallest > 0.0) {
            return None;
        }
        let v = svd.solve(&m, 1e-12).ok()?;
        // How far v can be off: the update's noise on G₂ and the client's rounding of the
        // activations, through A's pseudo-inverse.
        let forward = rows
            .iter()
            .map(|row| row.forward_error(self.params))
            .fold(0.0, f64::max);
        let v_error = (self.spectrum.noise + forward * m.norm()) / smallest;
        let mut explained = DMatrix::zeros(g2.nrows(), h2);
        let mut labels = Vec::with_capacity(p);
        for (i, row) in rows.iter().enumerate() {
            let j = &off_t * &row.j2;
            let solved = output_gradient(&j, &v.row(i).transpose())?;
            let pinv = j.clone().pseudo_inverse(1e-12).ok()?;
            let tolerance = match reading {
                Reading::Strict => {
                    LABEL_MARGIN * (pinv.norm() * v_error / self.model.head.scale() + row.probability_error())
                }
                Reading::Loose => OFF_LABEL,
            };
            let label = snap_to_label(self.model.head, &row.probs, &solved, tolerance);
            if let Some(e) = &label {
                explained += &row.a1 * (&j * e).transpose();
            }
            labels.push(label);
        }
        let strict = EXPLAINED * (self.spectrum.noise * (h2 as f64).sqrt() + forward * m.norm());
        let allowed = match reading {
            Reading::Strict => strict,
            Reading::Loose => strict.max(LOOSE * m.norm()),
        };
        let fits = (&explained - &m).norm() <= allowed;
        Some(Read {
            rows,
            labels,
            explained: fits,
        })
    }

    /// `peel`, None for `Refused::Unexplained`.
    fn try_peel(&self, proved: &[Vec<f64>]) -> Option<Result<Peeled, Refused>> {
        let (params, model, update, b) = (self.params, self.model, self.update, self.b);
        let p = proved.len();
        if p == 0 || p >= b {
            return None;
        }
        let h1 = params.sizes[1];
        let read = self.read(proved, Reading::Loose)?;
        if let Some(i) = read.labels.iter().position(Option::is_none) {
            return Some(Err(Refused::Unlabelled(i)));
        }
        if !read.explained {
            return None;
        }
        let mut peeled: Vec<f64> = update.values().map(|g| b as f64 * g as f64).collect();
        // Each proved row's δ at the first layer, [h₁, p].
        let mut delta1 = DMatrix::zeros(h1, p);
        for (i, (row, e)) in read.rows.iter().zip(&read.labels).enumerate() {
            let e = e.as_ref().expect("every row labelled");
            let d1 = row.subtract_gradient(params, model, e.as_slice(), 1.0, &mut peeled);
            delta1.set_column(i, &DVector::from_vec(d1));
        }
        let d = params.sizes[0];
        let rows = read_rows(update, &peeled, &delta1, (d, h1, b))?;
        // The rows left the first layer still holds: directions of what is left clear of the
        // update's own rounding of that layer (B·G₁'s, the same units).
        let first = DMatrix::from_fn(d, h1, |i, j| b as f64 * update.weight(0)[i * h1 + j] as f64);
        let noise = Spectrum::of(first, Precision::of(update.weight(0).iter().copied()), b, false).noise;
        let left = DMatrix::from_row_slice(d, h1, &peeled[..d * h1]);
        let visible = left
            .singular_values()
            .iter()
            .filter(|&&v| v >= SEPARATION * noise)
            .count()
            .min(b - p);
        let mut out = update.clone();
        out.values_mut()
            .zip(peeled)
            .for_each(|(v, g)| *v = (g / (b - p) as f64) as f32);
        Some(Ok(Peeled {
            update: out,
            rows,
            visible,
        }))
    }
}

/// How many copies of each of the batch's distinct rows it holds, and each copy's label, where
/// every distinct row is proved (`distinct`, encoded) and the batch repeats some: the second
/// layer's gradient has rank `distinct.len()` < `b`, and G₂ = (1/B) Σ_r a_r (J_r c_r)ᵀ with c_r
/// the sum of the copies' output gradients, s·(m_r p_r − n_r) for m_r copies whose labels count
/// n_r. The c_r solve a linear system; m_r is the one count that makes n_r = m_r p_r − c_r/s a
/// vector of whole label counts. None where the counts are not whole, not unique, or do not
/// add up to `b` (a classifier only: a regression's labels are any values).
pub fn copies(
    params: &Params,
    model: Model,
    update: &Update,
    distinct: &[Vec<f64>],
    b: usize,
) -> Option<Vec<Vec<usize>>> {
    let r = distinct.len();
    if params.layers() < 3 || r == 0 || r >= b || model.head == Head::Linear {
        return None;
    }
    let (g2, spectrum) = second_layer_spectrum(params, update, b);
    if spectrum.determined() != r || spectrum.above_noise() != r {
        return None;
    }
    let (rows, a) = passes(params, model, distinct);
    let v = a.svd(true, true).solve(&g2, 1e-12).ok()?;
    let s = model.head.scale();
    let classes = rows[0].probs.len();
    let mut out = Vec::with_capacity(r);
    for (i, row) in rows.iter().enumerate() {
        let c = output_gradient(&row.j2, &v.row(i).transpose())?;
        // The label counts for m copies: n = m·p − c/s (a sigmoid head's one output is class 1's).
        let counts = |m: usize| -> Option<Vec<usize>> {
            let n: Vec<f64> = match model.head {
                Head::Sigmoid => {
                    let yes = m as f64 * row.probs[1] - c[0] / s;
                    vec![m as f64 - yes, yes]
                }
                _ => (0..classes).map(|k| m as f64 * row.probs[k] - c[k] / s).collect(),
            };
            let whole = n.iter().all(|v| (v - v.round()).abs() <= WHOLE && v.round() >= 0.0);
            let n: Vec<usize> = n.iter().map(|v| v.round() as usize).collect();
            (whole && n.iter().sum::<usize>() == m).then_some(n)
        };
        let fits: Vec<Vec<usize>> = (1..=b - r + 1).filter_map(counts).collect();
        match fits.as_slice() {
            [one] => out.push(one.clone()),
            _ => return None,
        }
    }
    (out.iter().map(|n| n.iter().sum::<usize>()).sum::<usize>() == b).then_some(out)
}

/// The proved rows read off the first layer's gradient G₁ = (1/B) Σᵢ xᵢ δᵢᵀ ([d, h₁]): projected
/// off the span T of the rows left's δ's (the leading δ-side directions of what peeling left,
/// `peeled`, which a proved row's small error hardly moves), G₁ is Σ_proved xᵢ (P δᵢ)ᵀ, and the
/// xᵢ are its least-squares solution. The certificate proves a continuous value only to its
/// tolerance (Adult's fnlwgt to about 70 of its 10⁵ std); this reads it to float error.
fn read_rows(
    update: &Update,
    peeled: &[f64],
    delta1: &DMatrix<f64>,
    (d, h1, b): (usize, usize, usize),
) -> Option<Vec<Vec<f64>>> {
    let p = delta1.ncols();
    let residual = DMatrix::from_row_slice(d, h1, &peeled[..d * h1]);
    let t = leading_basis(&residual.transpose(), b - p)?;
    let off_t = DMatrix::<f64>::identity(h1, h1) - &t * t.transpose();
    let g1 = DMatrix::from_fn(d, h1, |i, j| b as f64 * update.weight(0)[i * h1 + j] as f64);
    let m = &g1 * &off_t;
    let dp = &off_t * delta1;
    let x = dp.svd(true, true).solve(&m.transpose(), 1e-12).ok()?;
    Some((0..p).map(|i| x.row(i).iter().copied().collect()).collect())
}

/// Rows left to search by enumeration at most: 2^this masks, each a product of the span's basis
/// with `rows` entries (65,536 at 16: about 10⁸ multiply-adds on Adult's 105 entries), of which
/// only rows the table can hold go on to the certificate. At 12, held-out HI trained 5 epochs
/// ([100, 100], B = 32) left 13-15 rows unsearched on every seed (docs/results/rounds.md).
const ENUMERATED_ROWS: usize = 16;

/// How far from 0 or 1 (a share of the column's step) a one-hot entry of a span row may read and
/// still be read as one: 10⁻³ where the rows left stand clear of the rest of the spectrum, more
/// where the weakest of them is near it. The span's basis is then off by an angle of about
/// σ_{k+1} / (σ_k − σ_{k+1}) (Wedin's bound, the next singular value standing for the
/// perturbation), and the entries read through it by a few times that (full Adult [100, 100]
/// trained 5 epochs, seed 4: a row left at 320 times the rounding read 0.67 % off its one-hot
/// values, 2.1 times the angle, where no other combination came within 28 %). Never more than
/// `SNAP_MOST`: a row reading further off is not read. `values`: the update's singular values,
/// largest first, at least `rows` (≥ 1) of them.
fn snap_tolerance(values: &[f64], rows: usize) -> f64 {
    let weakest = values[rows - 1];
    let next = values.get(rows).copied().unwrap_or(0.0);
    let angle = match weakest > next {
        true => next / (weakest - next),
        false => f64::INFINITY,
    };
    (SNAP_ANGLES * angle).clamp(SNAP_LEAST, SNAP_MOST)
}

/// `snap_tolerance`'s least, its multiple of the basis's angle, and its most.
const SNAP_LEAST: f64 = 1e-3;
const SNAP_ANGLES: f64 = 8.0;
const SNAP_MOST: f64 = 0.1;

/// Candidate rows in the span of a peeled update's first layer ([d, h], `rows` rows): its x-side
/// span has their dimension, and a row of it that the table can hold has each categorical entry
/// at its hot or its cold value. Fixing the span's independent categorical entries at hot or
/// cold (2^k choices, k ≤ `rows`) fixes the row's categories; those whose other entries are then
/// one-hot are candidates, which the second layer's certificate proves or refuses. Where k <
/// `rows`, some rows left share their categories and differ in continuous values; the
/// candidate takes the least-squares ones, and the certificate's refinement fits them. The members'
/// rows are no start for these: the rows no proof reached are the ones the ensemble got worst
/// (about half their cells right at B = 64 on Adult).
pub fn span_rows(update: &[f32], layout: &Layout, (d, h): (usize, usize), rows: usize) -> Vec<f32> {
    if rows == 0 || rows > ENUMERATED_ROWS {
        return Vec::new();
    }
    let g = DMatrix::from_row_iterator(d, h, update.iter().map(|&v| v as f64));
    let (values, u) = left_singular(&g);
    if u.ncols() < rows {
        return Vec::new();
    }
    let v = u.columns(0, rows).into_owned();
    let tolerance = snap_tolerance(&values, rows);
    let (cold, hot): (Vec<f64>, Vec<f64>) = (0..d)
        .map(|c| {
            (
                (0.0 - layout.mean[c]) / layout.std[c],
                (1.0 - layout.mean[c]) / layout.std[c],
            )
        })
        .unzip();
    let categorical: Vec<usize> = layout
        .blocks
        .iter()
        .filter(|(_, _, cat)| *cat)
        .flat_map(|&(off, w, _)| off..off + w)
        .collect();
    // Entries whose rows of V are independent, the largest first (Gram–Schmidt).
    let mut order = categorical.clone();
    order.sort_by(|&a, &b| v.row(b).norm().total_cmp(&v.row(a).norm()));
    let mut picked: Vec<usize> = Vec::new();
    let mut basis: Vec<DVector<f64>> = Vec::new();
    for &c in &order {
        let mut r: DVector<f64> = v.row(c).transpose();
        let n = r.norm();
        for e in &basis {
            r -= e * e.dot(&r);
        }
        if r.norm() > 1e-3 * n.max(f64::MIN_POSITIVE) {
            basis.push(r.normalize());
            picked.push(c);
        }
        if picked.len() == rows {
            break;
        }
    }
    let k = picked.len();
    if k == 0 {
        return Vec::new();
    }
    let fixed = DMatrix::from_fn(k, rows, |i, j| v[(picked[i], j)]);
    let Some(inverse) = fixed.pseudo_inverse(1e-12).ok() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for mask in 0..1usize << k {
        let values = DVector::from_fn(k, |i, _| match mask >> i & 1 {
            1 => hot[picked[i]],
            _ => cold[picked[i]],
        });
        let x = &v * (&inverse * values);
        let holdable = layout.blocks.iter().all(|&(off, w, cat)| {
            !cat || {
                let near = |c: usize, t: f64| (x[c] - t).abs() <= tolerance * (hot[c] - cold[c]).abs();
                let hots = (off..off + w).filter(|&c| near(c, hot[c])).count();
                hots == 1 && (off..off + w).all(|c| near(c, hot[c]) || near(c, cold[c]))
            }
        });
        if holdable {
            out.extend(x.iter().map(|&v| v as f32));
        }
    }
    out
}

#[cfg(test)]
mod tests;

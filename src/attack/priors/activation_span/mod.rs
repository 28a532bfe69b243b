//! Rows certified by the second layer, where the first layer's proof (`activity`) cannot reach:
//! large batches, tables whose rows are linearly dependent, and activations other than ReLU. In
//! FedSGD the second layer's weight gradient is G₂ = (1/B) Σᵢ aᵢ δᵢᵀ ([h₁, h₂]) with
//! aᵢ = σ(W₁ᵀxᵢ + b₁) row i's first-layer activation, so G₂'s column space is spanned by the rows'
//! activations. The activations do not share the rows' linear dependence (the nonlinearity breaks
//! it), so G₂'s rank r reaches min(B, h₂); while r < h₁, a candidate row x is a row of the batch
//! only if σ(W₁ᵀx + b₁) lies in that space: h₁ − r independent checks per candidate, a
//! certificate. Nothing in it asks σ to be ReLU's.
//!
//! A candidate (the ensemble's pooled row) is refined towards the space: its continuous values
//! by Gauss-Newton on the activation (for ReLU, least squares on the row's own pattern, where the
//! activation is affine in them), rounded to their column's precision, and its categorical cells
//! by coordinate descent over each column's values. A refined row is adopted only when the
//! certificate holds for it.
use nalgebra::{DMatrix, DVector};

use crate::attack::priors::spectrum::{Precision, Rank, Spectrum};
use crate::client::activation::Activation;
use crate::table::{Dataset, FeatureKind, Value};

pub mod certify;
mod first_layer;
mod proof;
mod unproved;
pub use unproved::Unproved;

/// A candidate is adopted where its activation lies within this many times the distance a row
/// of the batch can lie from the span (its drift under the update's rounding, and the client's
/// own rounding of its activation); the proof then holds it to the distance it has.
const ACCEPT: f64 = 2.0;
/// The client's float32 activation a row of the batch put in the span, against ours in float64:
/// its error is about u·√(d + 1) times |W₁|ᵀ|x| + |b₁| on the live units; this many times that.
const FORWARD: f64 = 2.0;
/// Checks the certificate keeps beyond the continuous values a refinement fits: the fit can zero
/// as many of the h₁ − r checks as it has values, so only the rest certify (at B = 128 on the
/// default network r = 99 of h₁ = 100 and a fit passes wrong rows: measured on Adult). Within the
/// first layer's span (`first_layer`) the fit has only the values that span leaves free.
pub(crate) const SPARE_CHECKS: usize = 8;
/// Checks beyond the values fitted before any row is refined (an isolated point, not a fit any
/// row passes); rows with fewer than `SPARE_CHECKS` of their own are held consistent, never
/// proved (`proof.rs`). Narrow networks over few columns need it (docs/results/rounds.md).
const SEARCH_CHECKS: usize = 1;
/// Sweeps of coordinate descent over the categorical columns.
const SWEEPS: usize = 4;
/// Least-squares rounds for the continuous values (each on the pattern the last one left).
const FIT_ROUNDS: usize = 3;
/// The same within the first layer's span (`first_layer`), where the rounds end once the values
/// stop moving: a start 0.5 std from its row reached it in 66 % of tries after them, 7 % after
/// three (40 continuous columns, B = 32, `scripts/first_layer_basin.py`).
const SPAN_FIT_ROUNDS: usize = 30;

/// How the span is read from the second layer's update.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SpanOf {
    /// FedSGD on a batch of `rows` rows: G₂'s column space lies in the rows' activations' span,
    /// and is all of it where G₂ has rank `rows`. The span is G₂'s determined directions
    /// (`spectrum::Spectrum::determined`), and a row in it is proved under
    /// `ActivationSpan::proof`'s conditions.
    Gradient { rows: usize },
    /// FedAvg: the update sums the activations at every local step's weights; the leading `rows`
    /// left singular vectors still hold the rows' activations at the weights the server sent,
    /// nearly (a relative distance of 1e-4 at E = 1 to 5e-2 at E = 10 against 3e-2 or more for a
    /// row one cell off, measured on Adult): a row near it is adopted (`FEDAVG_NEAR`), not proved.
    Update { rows: usize },
    /// FedSGD's gradient of the `rows` rows left once proved rows are peeled off it
    /// (`attack::priors::peel`), read as `Gradient` with the whole update's rounding, `rounding`
    /// in these units: a proved row peeled a little off leaves a direction of its own, which the
    /// spectrum's tail past `rows` shows as noise.
    Peeled { rows: usize, rounding: f64 },
}

/// FedAvg: a refined row within this relative distance of the span is adopted.
pub const FEDAVG_NEAR: f64 = 2e-2;

/// What the span is of the rows' activations, as its spectrum decides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Regime {
    /// G₂ has the batch's rank, every direction determined: the span is every row's activation,
    /// and the theorem proves a row in it where its conditions hold.
    Full,
    /// Fewer directions are determined than the batch has rows (`rank` of `rows`; `uncertain`
    /// more lie between the rounding and the separation the proofs need): rows whose δ's are
    /// (nearly) dependent show only as combinations, and a point between two of them can lie in
    /// the span. A row there is proved only where the update also gives it a label's residual
    /// (`Certified::IfLabelled`, settled by `assess::peeled`).
    Labelled { rank: usize, uncertain: usize, rows: usize },
    /// FedAvg's leading span: adoption, no proof.
    Adoption,
}

/// The second layer's column space, and the first layer that maps a row into it.
pub struct ActivationSpan<'a> {
    dataset: &'a Dataset,
    /// W₁ᵀ ([h₁, d]; `Params` lays W₁ out [d, h₁], x W + b) and b₁ [h₁].
    w1t: DMatrix<f64>,
    b1: DVector<f64>,
    /// |W₁|ᵀ and |b₁|: the scale of the client's rounding of a row's pre-activation.
    w1t_abs: DMatrix<f64>,
    b1_abs: DVector<f64>,
    /// An orthonormal basis of G₂'s column space, [h₁, r], and its transpose.
    basis: DMatrix<f64>,
    basis_t: DMatrix<f64>,
    /// G₂'s spectrum: its noise bound, and how far each direction of the span can be off.
    spectrum: Spectrum,
    precision: Precision,
    /// Per feature, per category: whether the batch holds it (`present_categories`); a descent
    /// tries only those.
    present: Vec<Vec<bool>>,
    regime: Regime,
    /// Between the client's layers (ReLU unless `with_activation`).
    activation: Activation,
    /// The continuous features a refinement fits, and W₁'s rows for them over their std
    /// ([h₁, k]): the pre-activation moves by `continuous_w · Δvalues`.
    continuous: Vec<ContinuousFeature>,
    continuous_w: DMatrix<f64>,
    /// The first layer's span, where it holds every row of the batch (`with_first_layer`).
    first_layer: Option<first_layer::FirstLayerSpan>,
    /// Whether a refinement runs every sweep rather than stop at the threshold (`every_direction`).
    thorough: bool,
}

/// A continuous feature as a refinement fits it: its column, range, precision and std.
struct ContinuousFeature {
    feature: usize,
    min: f64,
    max: f64,
    decimals: u32,
    std: f64,
}

/// A category's first-layer gradient row within this many times its float32 rounding (the
/// update's unit roundoff of the two sums compared) of its constant times the bias gradient is a
/// constant column: the category is absent from the batch. Rounding alone leaves a few u;
/// a present category whose rows all have residuals below it leaves nothing the update holds
/// of those rows either.
const ABSENT: f64 = 64.0;

/// Which categories the batch holds, read exactly from the first layer: a category absent from
/// every row is a constant column c of the standardised encoding, so its row of the weight
/// gradient G₁ = (1/B) Σᵢ xᵢ δᵢᵀ is x_c times the bias gradient (1/B) Σᵢ δᵢ. `g1` [d, h₁] and
/// `gb1` [h₁] as `Params` lays them out. A category whose row is zero too (no signal) counts as
/// present, so that nothing is ruled out on no evidence.
pub fn present_categories(dataset: &Dataset, g1: &[f32], gb1: &[f32]) -> Vec<Vec<bool>> {
    let h = gb1.len();
    let unit = Precision::of(g1.iter().chain(gb1).copied()).unit;
    let bias = DVector::from_iterator(h, gb1.iter().map(|&v| v as f64));
    dataset
        .features
        .iter()
        .map(|f| match &f.kind {
            FeatureKind::Categorical { categories } => (0..categories.len())
                .map(|k| {
                    let c = f.offset + k;
                    let Some(row) = g1.get(c * h..(c + 1) * h) else {
                        return true;
                    };
                    let row = DVector::from_iterator(h, row.iter().map(|&v| v as f64));
                    let constant = -dataset.mean[c] / dataset.std[c];
                    let off = (&row - &bias * constant).norm();
                    let scale = row.norm() + bias.norm() * constant.abs();
                    !(off <= ABSENT * unit * scale && scale > 0.0)
                })
                .collect(),
            FeatureKind::Continuous { .. } => Vec::new(),
        })
        .collect()
}

/// Why the second layer gives no span to certify rows in: what the report says instead of
/// leaving the certificate silently off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoSpan {
    /// The parameters do not have the shapes the layers state (no span to read).
    Shape,
    /// The second layer's gradient is zero: the update says nothing there.
    Silent,
    /// No drop in G₂'s spectrum wide enough to end the rows' span (noise on the update, or an
    /// activation nearly affine at these weights).
    NoGap,
    /// The span's rank r leaves `live` − r checks (dead units check nothing), no more than the
    /// `fitted` continuous values a refinement fits: the batch is too large for this first layer.
    NoRoom {
        rank: usize,
        width: usize,
        live: usize,
        fitted: usize,
    },
}

/// The first layer's units the batch activates: G₂'s row j is (1/B) Σᵢ aᵢⱼ δᵢ, exactly zero where
/// no row activates unit j under ReLU, and below the update's noise where the rows barely do.
fn live_units(g: &DMatrix<f64>, spectrum: &Spectrum) -> usize {
    let floor = spectrum.noise_per_entry() * (g.ncols() as f64).sqrt();
    g.row_iter().filter(|r| r.norm() > floor).count()
}

/// Whether a batch of `rows` rows leaves the certificate room on a network whose first two
/// layers are `(h1, h2)` wide: G₂'s rank reaches min(rows, h₂). Where the spectrum shows no drop
/// (`NoSpan::NoGap`, which would blame noise), a batch that fills the layer is the reason.
pub fn room(dataset: &Dataset, rows: usize, (h1, h2): (usize, usize)) -> Result<(), NoSpan> {
    room_at(dataset, rows.min(h2).min(h1), h1, h1)
}

/// Whether a span of rank `rank` on a first layer of `h1` units, `live` of them live, leaves a
/// refinement its checks: beyond the rank, one per continuous value it fits, and `SEARCH_CHECKS`.
fn room_at(dataset: &Dataset, rank: usize, h1: usize, live: usize) -> Result<(), NoSpan> {
    let fitted = dataset.features.iter().filter(|f| !f.is_categorical()).count();
    match rank + fitted + SEARCH_CHECKS > live {
        true => Err(NoSpan::NoRoom {
            rank,
            width: h1,
            live,
            fitted,
        }),
        false => Ok(()),
    }
}

impl NoSpan {
    /// The reason in words, for the report (None where there is nothing to tell a user).
    pub fn why(&self) -> Option<String> {
        match *self {
            NoSpan::Shape => None,
            NoSpan::Silent => Some("the second layer's gradient is zero: the update says nothing there".into()),
            NoSpan::NoGap => Some(
                "the second layer's gradient shows no drop in its spectrum that would end the rows' span: noise on \
                 the update blurs it, as does an activation nearly affine at these weights"
                    .into(),
            ),
            NoSpan::NoRoom {
                rank,
                width,
                live,
                fitted,
            } => {
                let needed = fitted + SEARCH_CHECKS;
                let dead = match width - live {
                    0 => String::new(),
                    dead => format!(" ({dead} of them dead on every row, which check nothing)"),
                };
                Some(format!(
                    "the second layer's gradient has rank {rank} of the first layer's {width} units{dead}, and a \
                     row's refinement needs {needed} live units beyond its rank, one more than the {fitted} \
                     continuous values it fits; on this network it places batches of at most {} rows, and proves \
                     a row only where its own live units give {SPARE_CHECKS} checks more",
                    live.saturating_sub(needed)
                ))
            }
        }
    }
}

impl<'a> ActivationSpan<'a> {
    /// `g2`: the second layer's weight gradient [h₁, h₂] as `Params` lays it out. Refused (with
    /// the reason, `NoSpan`) where the update shows no span or the span leaves too few checks:
    /// the live units less r no more than the continuous values a refinement fits (`room_at`).
    pub fn new(
        dataset: &'a Dataset,
        w1: &[f32],
        b1: &[f32],
        g2: &[f32],
        present: Vec<Vec<bool>>,
        of: SpanOf,
        (d, h1, h2): (usize, usize, usize),
    ) -> Result<Self, NoSpan> {
        if w1.len() != d * h1 || b1.len() != h1 || g2.len() != h1 * h2 {
            return Err(NoSpan::Shape);
        }
        let precision = Precision::of(g2.iter().copied());
        let g = DMatrix::from_row_iterator(h1, h2, g2.iter().map(|&v| v as f64));
        if !(g.amax() > 0.0) {
            return Err(NoSpan::Silent);
        }
        let (rows, floor) = match of {
            SpanOf::Gradient { rows } | SpanOf::Update { rows } => (rows, 0.0),
            SpanOf::Peeled { rows, rounding } => (rows, rounding),
        };
        let spectrum = Spectrum::of(g.clone(), precision, rows, false).with_rounding(floor);
        let live = live_units(&g, &spectrum);
        let (rank, regime) = match of {
            SpanOf::Gradient { .. } | SpanOf::Peeled { .. } => {
                // More noise than rounding on the update (a defence's) blurs every direction.
                if spectrum.noisy() {
                    return Err(NoSpan::NoGap);
                }
                match spectrum.rank() {
                    Rank::Certain(0) | Rank::Uncertain { determined: 0, .. } => return Err(NoSpan::NoGap),
                    Rank::Certain(r) if r >= rows => (r, Regime::Full),
                    Rank::Certain(r) => (
                        r,
                        Regime::Labelled {
                            rank: r,
                            uncertain: 0,
                            rows,
                        },
                    ),
                    Rank::Uncertain {
                        determined,
                        above_noise,
                    } => (
                        determined,
                        Regime::Labelled {
                            rank: determined,
                            uncertain: above_noise - determined,
                            rows,
                        },
                    ),
                }
            }
            SpanOf::Update { rows } => (rows.min(spectrum.values.len()), Regime::Adoption),
        };
        // The room is counted on every direction above the noise, determined or not.
        room_at(dataset, rank.max(spectrum.above_noise().min(rows)), h1, live)?;
        let w1 = DMatrix::from_row_iterator(d, h1, w1.iter().map(|&v| v as f64));
        let basis = spectrum.basis(rank);
        let (continuous, offsets): (Vec<ContinuousFeature>, Vec<(usize, f64)>) = dataset
            .features
            .iter()
            .enumerate()
            .filter_map(|(feature, f)| match f.kind {
                FeatureKind::Continuous { min, max, decimals, .. } => Some((
                    ContinuousFeature {
                        feature,
                        min,
                        max,
                        decimals,
                        std: dataset.std[f.offset],
                    },
                    (f.offset, dataset.std[f.offset]),
                )),
                FeatureKind::Categorical { .. } => None,
            })
            .unzip();
        let continuous_w = DMatrix::from_fn(h1, offsets.len(), |j, k| w1[(offsets[k].0, j)] / offsets[k].1);
        let b1 = DVector::from_iterator(h1, b1.iter().map(|&v| v as f64));
        Ok(ActivationSpan {
            dataset,
            w1t: w1.transpose(),
            w1t_abs: w1.transpose().abs(),
            b1_abs: b1.abs(),
            b1,
            basis_t: basis.transpose(),
            basis,
            spectrum,
            precision,
            present,
            regime,
            activation: Activation::Relu,
            continuous,
            continuous_w,
            first_layer: None,
            thorough: false,
        })
    }

    /// What the span is of the rows' activations (`Regime`).
    pub fn regime(&self) -> Regime {
        self.regime
    }

    /// η, the bound on what moves the span (`Spectrum::noise`), in G₂'s units.
    pub fn noise(&self) -> f64 {
        self.spectrum.noise
    }

    /// The span's dimension r: rows it can tell apart while r < h₁.
    pub fn rank(&self) -> usize {
        self.basis.ncols()
    }

    /// The first layer's width h₁.
    pub fn width(&self) -> usize {
        self.b1.len()
    }

    /// Whether a row it adopts is proved (FedSGD) or only near the span (FedAvg).
    pub fn proves(&self) -> bool {
        self.regime != Regime::Adoption
    }

    /// The distance under which a refined row is adopted: FedAvg's `FEDAVG_NEAR`; on FedSGD,
    /// `ACCEPT` times how far a row of the batch with this row's activation can lie from the span.
    pub fn threshold(&self, row: &[Value]) -> f64 {
        match self.regime {
            Regime::Adoption => FEDAVG_NEAR,
            _ => {
                let (drift, forward) = self.slack(row);
                ACCEPT * (drift + forward)
            }
        }
    }

    /// The distance under which a refined row that misses `threshold` still fits a span cut
    /// above directions too near the rounding to place (`Regime::Labelled` with `uncertain`
    /// ones): a row of the batch whose activation has a part along them lies further off
    /// (`Spectrum::drift_cut`), most of all a row whose residual training made tiny. Such a row
    /// fits and is never proved. None where no direction is left out.
    pub fn fits_threshold(&self, row: &[Value]) -> Option<f64> {
        let Regime::Labelled { uncertain: 1.., .. } = self.regime else {
            return None;
        };
        let (drift, forward) = self.slack_under(row, |a| self.spectrum.drift_cut(self.rank(), a));
        Some(ACCEPT * (drift + forward))
    }

    /// How far (relative) a row of the batch with `row`'s activation can lie from the span: the
    /// span's drift under the update's noise (`Spectrum::drift`), and the client's own float32
    /// rounding of that activation.
    fn slack(&self, row: &[Value]) -> (f64, f64) {
        self.slack_under(row, |a| self.spectrum.drift(self.rank(), a))
    }

    /// `slack` with the span's drift of the row's activation taken by `drift`.
    fn slack_under(&self, row: &[Value], drift: impl Fn(&DVector<f64>) -> f64) -> (f64, f64) {
        let x = DVector::from_vec(self.dataset.encode(row));
        let z = &self.w1t * &x + &self.b1;
        let a = z.map(|v| self.activation.host(v));
        let norm = a.norm();
        if norm == 0.0 {
            return (0.0, 0.0);
        }
        let scale = &self.w1t_abs * x.abs() + &self.b1_abs;
        let live = DVector::from_fn(z.len(), |j, _| scale[j] * self.activation.host_slope(z[j]).abs());
        let d = x.len() as f64;
        let forward = FORWARD * self.precision.unit * (d + 1.0).sqrt() * live.norm() / norm;
        (drift(&a), forward)
    }

    /// v's part outside the span.
    fn residual(&self, v: &DVector<f64>) -> DVector<f64> {
        v - &self.basis * (&self.basis_t * v)
    }

    /// The span of every direction above the noise its tail shows (`Spectrum::above_tail`; the
    /// batch's rows at most) where fewer are determined: a nearness, no proof (`span_placed`).
    pub fn every_direction(mut self) -> Option<Self> {
        let Regime::Labelled { rows, .. } = self.regime else {
            return None;
        };
        let r = self.spectrum.above_tail(rows);
        if r <= self.rank() {
            return None;
        }
        self.basis = self.spectrum.basis(r);
        self.basis_t = self.basis.transpose();
        // Nothing adopted in it is proved (`proves`).
        (self.thorough, self.regime) = (true, Regime::Adoption);
        Some(self)
    }

    /// The same span for a network with another activation between its layers.
    pub fn with_activation(mut self, activation: Activation) -> Self {
        self.activation = activation;
        self
    }

    /// The refinement's continuous values kept within the first layer's span, `basis` [d, r]
    /// (orthonormal, the encoding's units; the spectrum it was read on and its rank): only where
    /// that span holds every row of the batch, its rank the batch's for certain (`first_layer`).
    pub fn with_first_layer(mut self, basis: DMatrix<f64>, spectrum: (Spectrum, usize)) -> Self {
        let continuous: Vec<(usize, f64)> = self
            .continuous
            .iter()
            .map(|c| (self.dataset.features[c.feature].offset, c.std))
            .collect();
        self.first_layer = first_layer::FirstLayerSpan::new(self.dataset.d(), basis, spectrum, &continuous);
        self
    }

    /// The continuous combinations the proof of `row` reads, in encoded units [k, f], with the
    /// bound on the rest of its difference from a batch row (`FirstLayerSpan::proof_directions`),
    /// where the first layer's span fixes the rest to a negligible part of a `claim`; None: every
    /// continuous value.
    fn proof_directions(&self, row: &[Value], claim: f64) -> Option<(&DMatrix<f64>, f64)> {
        let span = self.first_layer.as_ref()?;
        span.proof_directions(&self.dataset.encode(row))
            .filter(|&(_, bound)| first_layer::FirstLayerSpan::negligible(bound, claim))
    }

    /// The rounds of a refinement's full fit of its continuous values.
    fn fit_rounds(&self) -> usize {
        match self.first_layer {
            Some(_) => SPAN_FIT_ROUNDS,
            None => FIT_ROUNDS,
        }
    }

    fn pre_activation(&self, row: &[Value]) -> DVector<f64> {
        let x = DVector::from_vec(self.dataset.encode(row));
        &self.w1t * x + &self.b1
    }

    /// The relative distance of the row's activation to the span (∞ for a row no unit sees).
    pub fn distance(&self, row: &[Value]) -> f64 {
        self.distance_at(&self.pre_activation(row))
    }

    /// The same, from the row's pre-activation.
    fn distance_at(&self, z: &DVector<f64>) -> f64 {
        let a = z.map(|z| self.activation.host(z));
        let norm = a.norm();
        if norm == 0.0 {
            return f64::INFINITY;
        }
        self.residual(&a).norm() / norm
    }

    /// The continuous values that bring the row's activation nearest the span, its categorical
    /// cells fixed: Gauss-Newton steps (for ReLU, least squares on the row's pattern), each
    /// rounded and kept in range. The pre-activation is linear in the continuous values, so it is
    /// moved rather than recomputed. Returns the distance and the row's pre-activation.
    fn fit_continuous(&self, row: &mut [Value], rounds: usize) -> (f64, DVector<f64>) {
        let z = self.pre_activation(row);
        self.fit_continuous_from(row, z, rounds)
    }

    /// `fit_continuous` from the row's pre-activation `z`, already computed.
    fn fit_continuous_from(&self, row: &mut [Value], mut z: DVector<f64>, rounds: usize) -> (f64, DVector<f64>) {
        for _ in 0..rounds {
            if self.continuous.is_empty() {
                break;
            }
            let (normal, rhs) = self.step_equations(&z);
            let step = match &self.first_layer {
                Some(span) => span.step(&self.dataset.encode(row), (&normal, &rhs), least_squares),
                None => least_squares(normal, &rhs),
            };
            let Some(step) = step else {
                break;
            };
            let mut moved = DVector::zeros(self.continuous.len());
            for (k, c) in self.continuous.iter().enumerate() {
                let scale = 10f64.powi(c.decimals as i32);
                let old = row[c.feature].num();
                let new = (((old + step[k]) * scale).round() / scale).clamp(c.min, c.max);
                row[c.feature] = Value::Num(new);
                moved[k] = new - old;
            }
            // Nothing moved: the next round would take the same step.
            if moved.iter().all(|&m| m == 0.0) {
                break;
            }
            z.gemv(1.0, &self.continuous_w, &moved, 1.0);
        }
        (self.distance_at(&z), z)
    }

    /// A Gauss-Newton step's normal equations at pre-activation `z`: with A = P⊥ (σ′(z) ⊙ W_c)
    /// (d a / d value, ReLU: on the active units, its part outside the span) and P⊥ a the
    /// activation's part outside, AᵀA and −Aᵀ P⊥ a. With M = [σ′ ⊙ W_c | a] and C = Bᵀ M, both
    /// are MᵀM − CᵀC (P⊥ = I − BBᵀ is a projection): one pass over the live units, no [h, k]
    /// product formed (in the page, nalgebra's products run matrixmultiply's scalar kernel).
    fn step_equations(&self, z: &DVector<f64>) -> (DMatrix<f64>, DVector<f64>) {
        let (h, r, k) = (self.width(), self.rank(), self.continuous.len());
        // Unit j's coordinates in the span, contiguous in Bᵀ [r, h]; W_c [h, k] column-major.
        let (bt, wc) = (self.basis_t.as_slice(), self.continuous_w.as_slice());
        let mut c = vec![0.0; r * (k + 1)];
        let mut mtm = DMatrix::<f64>::zeros(k + 1, k + 1);
        let mut m = vec![0.0; k + 1];
        for j in 0..h {
            let (slope, a) = (self.activation.host_slope(z[j]), self.activation.host(z[j]));
            if slope == 0.0 && a == 0.0 {
                continue;
            }
            for (q, v) in m[..k].iter_mut().enumerate() {
                *v = wc[q * h + j] * slope;
            }
            m[k] = a;
            let unit = &bt[j * r..(j + 1) * r];
            for (column, &v) in c.chunks_exact_mut(r).zip(&m) {
                column.iter_mut().zip(unit).for_each(|(acc, u)| *acc += v * u);
            }
            for p in 0..=k {
                for q in 0..=k {
                    mtm[(p, q)] += m[p] * m[q];
                }
            }
        }
        let dot = |p: usize, q: usize| -> f64 {
            let (a, b) = (&c[p * r..(p + 1) * r], &c[q * r..(q + 1) * r]);
            a.iter().zip(b).map(|(x, y)| x * y).sum()
        };
        let normal = DMatrix::from_fn(k, k, |p, q| mtm[(p, q)] - dot(p, q));
        let rhs = DVector::from_fn(k, |p, _| dot(p, k) - mtm[(p, k)]);
        (normal, rhs)
    }

    /// Whether two rows are one for the certificate: the same categories, continuous values within
    /// their column's tolerance (a fnlwgt one unit off moves the activation by 1e-5 of its norm).
    pub fn same_row(&self, a: &[Value], b: &[Value]) -> bool {
        self.dataset.same_row(a, b)
    }

    fn among(&self, row: &[Value], rows: &[Vec<Value>]) -> bool {
        rows.iter().any(|r| self.same_row(r, row))
    }

    /// The row's continuous values fitted towards the span, and its distance then.
    pub fn fitted(&self, row: &[Value], rounds: usize) -> (Vec<Value>, f64) {
        let mut row = row.to_vec();
        let (distance, _) = self.fit_continuous(&mut row, rounds);
        (row, distance)
    }

    /// The candidate refined towards the span (continuous values fitted, categorical cells by
    /// coordinate descent), and its distance. Rows that are one with a row in `avoid` (found
    /// already) count as infinitely far, so a descent that would end in one looks for another.
    pub fn refine(&self, candidate: &[Value], avoid: &[Vec<Value>]) -> (Vec<Value>, f64) {
        let avoided = |row: &[Value], distance: f64| match self.among(row, avoid) {
            true => f64::INFINITY,
            false => distance,
        };
        let mut best = candidate.to_vec();
        let (distance, mut best_z) = self.fit_continuous(&mut best, self.fit_rounds());
        let mut best_distance = avoided(&best, distance);
        for _ in 0..SWEEPS {
            if !self.thorough && best_distance < self.threshold(&best) {
                break;
            }
            let mut improved = false;
            let mut best_x = self.dataset.encode(&best);
            for (f, feature) in self.dataset.features.iter().enumerate() {
                let FeatureKind::Categorical { categories } = &feature.kind else {
                    continue;
                };
                for c in 0..categories.len() as u32 {
                    let held = self
                        .present
                        .get(f)
                        .and_then(|p| p.get(c as usize))
                        .copied()
                        .unwrap_or(true);
                    if best[f] == Value::Cat(c) || !held {
                        continue;
                    }
                    let mut trial = best.clone();
                    trial[f] = Value::Cat(c);
                    // The trial differs from `best` in one block: its pre-activation moves by
                    // W₁ᵀ's columns there rather than being recomputed.
                    let x = self.dataset.encode(&trial);
                    let mut z = best_z.clone();
                    for (j, (new, old)) in x.iter().zip(&best_x).enumerate() {
                        if new != old {
                            z.axpy(new - old, &self.w1t.column(j), 1.0);
                        }
                    }
                    // One round to rank the values; the best gets the full fit below.
                    let (distance, z) = self.fit_continuous_from(&mut trial, z, 1);
                    let distance = avoided(&trial, distance);
                    if distance < best_distance {
                        (best, best_distance, best_z) = (trial, distance, z);
                        best_x = self.dataset.encode(&best);
                        improved = true;
                    }
                }
            }
            let mut refit = best.clone();
            let (distance, z) = self.fit_continuous_from(&mut refit, best_z.clone(), self.fit_rounds());
            let distance = avoided(&refit, distance);
            if distance < best_distance {
                (best, best_distance, best_z) = (refit, distance, z);
            }
            if !improved {
                break;
            }
        }
        let distance = if self.among(&best, avoid) {
            f64::INFINITY
        } else {
            self.distance(&best)
        };
        (best, distance)
    }
}

/// The least-squares step from its normal equations (`ActivationSpan::step_equations`), with a
/// ridge far below any column's scale so a column the pattern zeroes gets no step: the values it
/// proposes are rounded and checked by the distance, so the squared conditioning does not matter.
fn least_squares(mut normal: DMatrix<f64>, rhs: &DVector<f64>) -> Option<DVector<f64>> {
    let ridge = 1e-12 * normal.diagonal().max().max(f64::MIN_POSITIVE);
    for k in 0..normal.nrows() {
        normal[(k, k)] += ridge;
    }
    let step = normal.cholesky()?.solve(rhs);
    step.iter().all(|v| v.is_finite()).then_some(step)
}

/// A row as a key for finding its copies: equal rows (by `==`, so 0.0 and −0.0 alike) give equal
/// keys.
pub(super) fn row_key(row: &[Value]) -> Vec<u64> {
    row.iter()
        .map(|v| match *v {
            Value::Cat(c) => c as u64,
            Value::Num(x) => (x + 0.0).to_bits(),
        })
        .collect()
}

#[cfg(test)]
mod tests;

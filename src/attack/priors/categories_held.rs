//! Which of the table's categories an Adam client's rows hold, read off its update with no
//! optimisation: what its update says outright, beside what the attack recovers.
//!
//! A one-hot column is standardised, x_c = (1[row holds c] − μ_c)/σ_c, so its first-layer weight
//! gradient at unit j is (S_c(j) − μ_c·g_b(j))/σ_c, with g_b the unit's bias gradient and S_c(j)
//! the sum of δ_j over the rows holding c. Where no row holds c, S_c = 0 at every local step: the
//! column's gradients are the bias's times the same negative factor −μ_c/σ_c, step after step.
//! Adam divides each coordinate's moments by their own scale, so a positive factor leaves its
//! steps as they are and a negative one flips them (up to ε): the column's update is the negative
//! of the bias's at every unit. Where a row holding c is active at a unit (a ReLU passes δ only
//! there), it is not. So a column whose update departs from the bias's negative at some units is
//! held by some row; one that departs nowhere is held by none, or only by rows whose δ is too
//! small at every unit to move it (a regression's row whose label the network nearly predicts, a
//! trained network's sure row). Measured (issue 45): on 40 Adam and AdamW clients of 32 rows (full
//! Adult and German Credit, seeds 0–4, one and three epochs), every one of 3,040 categories
//! read right: an absent category's column departed from the bias's negative by more than 10 % at
//! one unit at most (a unit whose gradient is so small that ε shapes its steps), a held one's at
//! 21 units or more.
//!
//! It holds for Adam without weight decay and for AdamW (its decoupled decay, a known share of
//! θ0, taken out first); Adam's L2 decay adds wd·θ to every gradient and breaks the factor, and
//! an SGD client's update is read whole by the span and the proofs.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::attack::inversion::relax::Layout;
use crate::attack::inversion::setup::Setup;
use crate::client::activation::Activation;
use crate::client::fedavg::LocalTraining;
use crate::client::network::Params;
use crate::client::optimizer::OptimizerKind;
use crate::client::update::Update;
use crate::config::Protocol;
use crate::table::{Dataset, FeatureKind, Value};

/// A unit where a column departs from the bias's negative by more than this share of the bias's
/// update speaks for a row holding the category.
const DEPARTS: f64 = 0.1;
/// Units that must depart before a category is read as held: on the clients above an absent
/// category's column departed at one unit at most, a held one's at 21 or more.
pub const UNITS: usize = 3;
/// Float32 rounding of θ0 and θE, in units of the parameters' own size.
const ROUNDING: f64 = 8.0 * f32::EPSILON as f64;

/// Per input column of an Adam or AdamW client's first layer (`observed`: θ0 − θE, `params`: θ0),
/// whether some row of its `n` rows holds the column's category (false for a continuous column);
/// `None` where the reading does not hold (SGD, Adam with L2 weight decay, no categorical column).
pub fn held_columns(
    params: &Params,
    observed: &Update,
    layout: &Layout,
    training: &LocalTraining,
    n: usize,
) -> Option<Vec<bool>> {
    Some(held_of(&departing_units(params, observed, layout, training, n)?))
}

/// Per input column, whether its category is read as held, from `departing_units`' sets.
pub fn held_of(units: &[Vec<bool>]) -> Vec<bool> {
    units
        .iter()
        .map(|u| u.iter().filter(|&&d| d).count() >= UNITS)
        .collect()
}

/// Per input column, the first layer's units at which its update departs from the bias's
/// negative: for a categorical column, units where some row holding its category is active (a
/// subset of them: where the rows' share of the unit's gradient changes no sign or ratio of its
/// steps, Adam's update cannot tell); all false for a continuous column. `None` as `held_columns`.
pub fn departing_units(
    params: &Params,
    observed: &Update,
    layout: &Layout,
    training: &LocalTraining,
    n: usize,
) -> Option<Vec<Vec<bool>>> {
    let opt = &training.optimizer;
    let decoupled = match opt.kind {
        OptimizerKind::Adam if opt.weight_decay == 0.0 => 0.0,
        OptimizerKind::Adamw => opt.weight_decay,
        _ => return None,
    };
    if !layout.blocks.iter().any(|b| b.2) {
        return None;
    }
    let (d, h) = (params.sizes[0], params.sizes[1]);
    let steps = training.epochs * training.steps_per_epoch(n);
    // AdamW shrinks θ by (1 − lr·wd) before each step: θ0's share of θ0 − θE.
    let share = 1.0 - (1.0 - training.lr * decoupled).powi(steps as i32);
    let (w0, b0) = (&params.weights[0], &params.biases[0]);
    let (uw, ub) = (observed.weight(0), observed.bias(0));
    let rows_part = |u: f32, theta: f32| u as f64 - share * theta as f64;
    let bias: Vec<f64> = (0..h).map(|j| rows_part(ub[j], b0[j])).collect();
    let departs = |c: usize, sign: f64, j: usize| {
        let (u, w) = (rows_part(uw[c * h + j], w0[c * h + j]), w0[c * h + j] as f64);
        let gap = (u - sign * bias[j]).abs();
        gap > ROUNDING * (w.abs() + b0[j].abs() as f64 + u.abs()) && gap > DEPARTS * bias[j].abs()
    };
    let mut units = vec![vec![false; h]; d];
    for &(offset, width, categorical) in &layout.blocks {
        if categorical {
            for c in offset..offset + width {
                // The factor's sign: −1 for a standardised column (μ > 0); a column left
                // unstandardised (μ stated 0) has no gradient where no row holds its category.
                let sign = if layout.mean[c] > 0.0 { -1.0 } else { 0.0 };
                units[c] = (0..h).map(|j| departs(c, sign, j)).collect();
            }
        }
    }
    Some(units)
}

impl Setup<'_> {
    /// What the update shows of the categories its rows hold (`held_columns`), checked against the
    /// client's rows where the scenario has them: a FedAvg client with a ReLU network (another
    /// activation passes δ at every unit) and no defence perturbing its update.
    pub fn categories_held(&self) -> Option<CategoriesHeld> {
        self.categories_held_against(self.scenario.truth.as_ref().map(|t| t.rows.as_slice()))
    }

    /// `categories_held`, checked against `truth` (the client's rows in this attack's encoding).
    pub fn categories_held_against(&self, truth: Option<&[Vec<Value>]>) -> Option<CategoriesHeld> {
        let held = held_of(&self.units_departing()?);
        Some(CategoriesHeld::of(self.dataset, &held, truth))
    }

    /// `departing_units` of this client's update, where the reading holds: a FedAvg client with a
    /// ReLU network and no defence perturbing its update (and Adam's or AdamW's steps).
    pub fn units_departing(&self) -> Option<Vec<Vec<bool>>> {
        let Protocol::Fedavg(training) = self.config.protocol else {
            return None;
        };
        if self.config.activation != Activation::Relu || self.perturbed() {
            return None;
        }
        let scenario = &self.scenario;
        departing_units(
            &scenario.params,
            &scenario.observed,
            &self.layout,
            &training,
            self.config.rows(),
        )
    }
}

/// One categorical feature's categories the update shows held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct FeatureHeld {
    pub feature: String,
    /// The categories some row holds, in the encoding's order.
    pub held: Vec<String>,
    /// The feature's categories in the encoding.
    pub of: usize,
}

/// What an Adam client's update says outright: which categories its rows hold
/// (`attack::priors::categories_held`). Read, not proved: measured right on every category of 40
/// classifiers' clients, and checked here against the client's rows where they are at hand. A
/// category not shown is held by no row, or only by rows whose first-layer gradient is too small
/// for the update to show: a regression's row whose label the network nearly predicts (the Adult
/// sample's hours-per-week, seed 0: one such category of 98).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CategoriesHeld {
    pub features: Vec<FeatureHeld>,
    /// Categories shown held, of all the encoding's.
    pub held: usize,
    pub categories: usize,
    /// Against the client's rows, where at hand: categories read wrongly (held but absent, or
    /// absent but held); null without them.
    pub misread: Option<usize>,
    /// Of those, the categories some row holds that the update does not show held.
    #[serde(default)]
    pub missed: Option<usize>,
    /// Rows whose every category was then read by the units it reaches
    /// (`attack::priors::rows_by_category`) and put in the reconstruction (provenance `read`).
    #[serde(default)]
    pub rows_read: usize,
    /// What the rows read gained over the marginals' guess on shadow clients, less two standard
    /// errors, as a share of cells (`assess::category_rows`): they are put in only above 0; null
    /// where no fallback ran.
    #[serde(default)]
    pub read_gain: Option<f64>,
}

impl CategoriesHeld {
    /// The summary of `held` (per input column of `dataset`'s encoding), checked against `truth`.
    pub fn of(dataset: &Dataset, held: &[bool], truth: Option<&[Vec<Value>]>) -> CategoriesHeld {
        let mut features = Vec::new();
        let (mut misread, mut missed) = (0, 0);
        for (f, feature) in dataset.features.iter().enumerate() {
            let FeatureKind::Categorical { categories } = &feature.kind else {
                continue;
            };
            let shown = |k: usize| held[feature.offset + k];
            if let Some(rows) = truth {
                for k in 0..categories.len() {
                    let holds = rows.iter().any(|r| r[f] == Value::Cat(k as u32));
                    misread += (shown(k) != holds) as usize;
                    missed += (!shown(k) && holds) as usize;
                }
            }
            features.push(FeatureHeld {
                feature: feature.name.clone(),
                held: (0..categories.len())
                    .filter(|&k| shown(k))
                    .map(|k| categories[k].clone())
                    .collect(),
                of: categories.len(),
            });
        }
        CategoriesHeld {
            held: features.iter().map(|f| f.held.len()).sum(),
            categories: features.iter().map(|f| f.of).sum(),
            features,
            misread: truth.map(|_| misread),
            missed: truth.map(|_| missed),
            rows_read: 0,
            read_gain: None,
        }
    }

    /// The summary with the rows read by category (`Setup::put_rows_by_category`), where read,
    /// and their gain on shadow clients.
    pub fn with_rows_read(self, read: Option<usize>, gain: Option<f64>) -> CategoriesHeld {
        CategoriesHeld {
            rows_read: read.unwrap_or(0),
            read_gain: gain,
            ..self
        }
    }

    /// The report's sentence.
    pub fn sentence(&self) -> String {
        let check = match (self.misread, self.missed) {
            (Some(0), _) => "; against the client's rows every category is read right".to_string(),
            (Some(k), missed) => {
                let missed = missed.unwrap_or(0);
                format!(
                    "; against the client's rows {} read wrongly: {missed} held by a row but not shown, {} shown but \
                     held by none",
                    match k {
                        1 => "1 category is".to_string(),
                        k => format!("{k} categories are"),
                    },
                    k - missed
                )
            }
            (None, _) => String::new(),
        };
        let rows = match (self.rows_read, self.read_gain) {
            (0, Some(g)) if g <= 0.0 => format!(
                "; rows read by the first-layer units their rarer categories reach were not put in: on shadow \
                 clients they gained no sure ground over the marginals ({:+.1} points, less two standard errors)",
                100.0 * g
            ),
            (0, _) => String::new(),
            (k, g) => format!(
                "; {k} rows' every category read by the first-layer units its rarer categories reach \
                 (not proved; their continuous cells the marginals'{})",
                g.map_or(String::new(), |g| format!(
                    "; on shadow clients they gained {:+.1} points over the marginals, less two standard errors",
                    100.0 * g
                ))
            ),
        };
        format!(
            "the update shows which categories the rows hold: {} of the encoding's {} (read from the first \
             layer's update, where Adam leaves a category no row holds as the bias's negative); one it does not \
             show is held by no row, or only by rows whose first-layer gradient is too small for the update to \
             show (a row whose label the network nearly predicts, or is sure of){check}{rows}",
            self.held, self.categories
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::optimizer::ClientOptimizer;

    /// An 8-unit first layer over one block of 3 categories, the update built as an Adam client's
    /// is: column 0 departs from the bias's negative at units 0–3, column 1 nowhere, column 2 at
    /// two units only (ε's units: too few).
    #[test]
    fn a_category_is_held_where_its_column_departs_from_the_bias_negative() {
        let h = 8;
        let params = Params {
            sizes: vec![3, h, 2],
            weights: vec![vec![0.1; 3 * h], vec![0.0; 2 * h]],
            biases: vec![vec![0.05; h], vec![0.0; 2]],
        };
        let bias: Vec<f32> = (0..h).map(|j| if j % 2 == 0 { 2e-3 } else { -3e-3 }).collect();
        let mut w: Vec<f32> = (0..3).flat_map(|_| bias.iter().map(|b| -b)).collect();
        (0..4).for_each(|j| w[j] = bias[j]);
        (5..7).for_each(|j| w[2 * h + j] *= 0.5);
        w[h + 7] *= 0.98;
        let observed = Update::from_layers(vec![w, vec![0.0; 2 * h]], vec![bias, vec![0.0; 2]]);
        let layout = Layout {
            blocks: vec![(0, 3, true)],
            mean: vec![0.3; 3],
            std: vec![0.4; 3],
            lo: vec![0.0; 3],
            hi: vec![1.0; 3],
        };
        let mut training = LocalTraining {
            optimizer: ClientOptimizer {
                kind: OptimizerKind::Adam,
                ..ClientOptimizer::default()
            },
            lr: 1e-3,
            local_batch: 8,
            ..LocalTraining::default()
        };
        let held = held_columns(&params, &observed, &layout, &training, 32);
        assert_eq!(held, Some(vec![true, false, false]));
        // A column stated unstandardised (mean 0): no row holding its category, no update at all.
        let raw = Layout {
            mean: vec![0.0; 3],
            std: vec![1.0; 3],
            ..layout.clone()
        };
        let mut w = observed.weight(0).to_vec();
        w[h..2 * h].iter_mut().for_each(|v| *v = 0.0);
        let zero = Update::from_layers(vec![w, vec![0.0; 2 * h]], vec![observed.bias(0).to_vec(), vec![0.0; 2]]);
        assert_eq!(
            held_columns(&params, &zero, &raw, &training, 32),
            Some(vec![true, false, true])
        );
        // Adam's L2 decay breaks the reading; SGD's update is read whole elsewhere.
        training.optimizer.weight_decay = 1e-4;
        assert_eq!(held_columns(&params, &observed, &layout, &training, 32), None);
        training.optimizer.kind = OptimizerKind::Sgd;
        training.optimizer.weight_decay = 0.0;
        assert_eq!(held_columns(&params, &observed, &layout, &training, 32), None);
    }
}

//! An Adam client's reconstruction with the rows its update shows by their categories
//! (`attack::priors::rows_by_category`) in place of the marginals' guesses, where shadow clients
//! show them better than the guess.
use pathfinding::{kuhn_munkres::kuhn_munkres_min, matrix::Matrix};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::assess::fallback::{Calibration, LOWER_BOUND_Z, gain_lower_bound};
use crate::assess::reconstruct::Reconstruction;
use crate::assess::scoring::score;
use crate::attack::baselines::random_rows;
use crate::attack::inversion::setup::Setup;
use crate::attack::priors::categories_held::held_of;
use crate::attack::priors::rows_by_category::{CategoricalFeature, ReadRow, read_rows};
use crate::error::Result;
use crate::report::Provenance;
use crate::seed::seed_for;
use crate::table::{Dataset, FeatureKind, Value};

/// The random streams (`seed::seed_for`) of the categories drawn again, and of the shadow
/// clients' rows and guesses (one each per shadow).
const STREAM: u64 = 0xCA7;
const SHADOW_STREAM: u64 = 0xCA70;
/// Shadow clients the rows read are tried on: the rows read change a few categorical cells of a
/// batch, so one batch's few hundred cells bound their gain loosely.
const SHADOWS: u64 = 32;

/// What the reading gives: the categorical features, the rows read, whether each encoded
/// column's category is held.
type Reading = (Vec<CategoricalFeature>, Vec<ReadRow>, Vec<bool>);

impl Setup<'_> {
    /// The rows `rows_by_category` reads off this client's update, where the reading holds (as
    /// `categories_held`: an Adam or AdamW FedAvg client with a ReLU network and no perturbing
    /// defence); None elsewhere.
    pub fn rows_by_category(&self) -> Option<Reading> {
        let units = self.units_departing()?;
        let held = held_of(&units);
        let features: Vec<CategoricalFeature> = (self.dataset.features.iter().enumerate())
            .filter_map(|(feature, f)| match &f.kind {
                FeatureKind::Categorical { categories } => Some(CategoricalFeature {
                    feature,
                    offset: f.offset,
                    width: categories.len(),
                }),
                FeatureKind::Continuous { .. } => None,
            })
            .collect();
        let read = read_rows(&units, &features);
        Some((features, read, held))
    }

    /// The gain in right cells of the marginals' guess with the rows read put in
    /// (`put_read`, every cell fallen back) over the guess alone, on `SHADOWS` shadow clients
    /// of this recipe and network (rows of `marginals` as the fallback's shadow,
    /// `shadow_rows`, each its own draw), less `LOWER_BOUND_Z` standard errors of the paired
    /// per-cell difference; None where the reading does not hold. No inversion runs: a shadow
    /// costs its client's local training. On HI's Adam clients (12 columns, most of two or three
    /// categories) a batch's guess already held 82-83 % of the categories and the rows read no
    /// more (seed 2: 65.1 % with them, 65.9 % guessing).
    pub async fn read_gain_on_shadows(&self, marginals: &Dataset) -> Result<Option<f64>> {
        if self.units_departing().is_none() {
            return Ok(None);
        }
        let (mut guessed, mut with_read) = (Vec::new(), Vec::new());
        for k in 0..SHADOWS {
            let seed = seed_for(self.config.seed, SHADOW_STREAM + 2 * k);
            let (rows, _) = self.shadow_rows_seeded(marginals, seed);
            let scenario = self.scenario.shadow(marginals, self.config, rows).await?;
            let shadow = Setup::new(self.runtime, marginals, self.config, scenario);
            let (Some(truth), Some(reading)) = (&shadow.scenario.truth, shadow.rows_by_category()) else {
                return Ok(None);
            };
            let guess = random_rows(
                marginals,
                self.config.rows(),
                seed_for(self.config.seed, SHADOW_STREAM + 2 * k + 1),
            );
            let mut rows = guess.clone();
            let every = vec![vec![true; marginals.features.len()]; rows.len()];
            shadow.put_read(&mut rows, &reading, &every, marginals);
            guessed.extend(score(&self.rules, &truth.rows, &guess).correct);
            with_read.extend(score(&self.rules, &truth.rows, &rows).correct);
        }
        Ok(Some(gain_lower_bound(&self.rules, &with_read, &guessed, LOWER_BOUND_Z)))
    }

    /// `recon` with the rows read by category put in (`put_read`) where the fallback's shadow
    /// clients found them a sure gain (`Calibration::read_gain` above 0), into the cells that
    /// fell back to the marginals (`fallback`: the calibration and its mask). Cells the ensemble
    /// kept are kept: where the shadow client found them better than the marginals, they can be
    /// better than a row read too (German Credit's Adam clients, seeds 0 and 1: 67.0 and 71.9 %
    /// with the ensemble's, 62.7 and 65.3 % with every row's categories read or drawn again).
    /// The rows put in, where the reading holds (0 where the shadows showed no sure gain or
    /// nothing fell back).
    pub fn put_rows_by_category(
        &self,
        recon: &mut Reconstruction,
        marginals: &Dataset,
        fallback: Option<(&Calibration, &[Vec<bool>])>,
    ) -> Option<usize> {
        let reading = self.rows_by_category()?;
        let Some((_, mask)) = fallback.filter(|(c, _)| c.read_gain.is_some_and(|g| g > 0.0)) else {
            return Some(0);
        };
        let mask: Vec<Vec<bool>> = (mask.iter().zip(&recon.provenance))
            .map(|(m, p)| match p.held_by_update() {
                true => vec![false; m.len()],
                false => m.clone(),
            })
            .collect();
        let into = self.put_read(&mut recon.rows, &reading, &mask, marginals);
        for &i in &into {
            recon.provenance[i] = Provenance::Read;
        }
        Some(into.len())
    }

    /// Each row read put in place of the categorical cells of a row whose every categorical cell
    /// fell back (`fell`, per row and feature), the one that agrees with it most (one row each, by
    /// the assignment that leaves the fewest disagreements), the columns the table determines
    /// from a category (`table::determined`) following; elsewhere, a cell that fell back to a
    /// category no row holds (`categories_held`) drawn again from `marginals`' rows that hold
    /// one that is held. The rows the rows read went into.
    fn put_read(
        &self,
        rows: &mut [Vec<Value>],
        reading: &Reading,
        fell: &[Vec<bool>],
        marginals: &Dataset,
    ) -> Vec<usize> {
        let (features, read, held) = reading;
        let open: Vec<usize> = (0..rows.len())
            .filter(|&i| features.iter().all(|f| fell[i][f.feature]))
            .collect();
        let read = &read[..read.len().min(open.len())];
        let into = self.assign_read(rows, features, read, &open);
        let shown = |f: &CategoricalFeature, v: Value| matches!(v, Value::Cat(k) if held[f.offset + k as usize]);
        // Per feature, the values of `marginals`' rows that hold a category shown held.
        let from: Vec<Vec<Value>> = (features.iter())
            .map(|f| {
                let values = marginals.rows.iter().map(|r| r[f.feature]);
                values.filter(|&v| shown(f, v)).collect()
            })
            .collect();
        let mut rng = StdRng::seed_from_u64(seed_for(self.config.seed, STREAM));
        for i in (0..rows.len()).filter(|i| !into.contains(i)) {
            for (f, from) in features.iter().zip(&from) {
                if !fell[i][f.feature] || shown(f, rows[i][f.feature]) {
                    continue;
                }
                if !from.is_empty() {
                    rows[i][f.feature] = from[rng.random_range(0..from.len())];
                }
            }
        }
        into
    }

    /// `read` put into `rows` at `open` (see `put_read`); the rows they went into.
    fn assign_read(
        &self,
        rows: &mut [Vec<Value>],
        features: &[CategoricalFeature],
        read: &[ReadRow],
        open: &[usize],
    ) -> Vec<usize> {
        if read.is_empty() {
            return Vec::new();
        }
        let costs: Vec<i64> = read
            .iter()
            .flat_map(|r| {
                open.iter().map(|&i| {
                    let row = &rows[i];
                    features
                        .iter()
                        .zip(&r.categories)
                        .filter(|(f, k)| row[f.feature] != Value::Cat(**k))
                        .count() as i64
                })
            })
            .collect();
        let Ok(matrix) = Matrix::from_vec(read.len(), open.len(), costs) else {
            return Vec::new();
        };
        let (_, slot) = kuhn_munkres_min(&matrix);
        for (r, &s) in read.iter().zip(&slot) {
            let row = &mut rows[open[s]];
            for (f, &k) in features.iter().zip(&r.categories) {
                row[f.feature] = Value::Cat(k);
                for d in self.determined.iter().filter(|d| d.by == f.feature) {
                    d.follow(row);
                }
            }
        }
        slot.iter().map(|&s| open[s]).collect()
    }
}

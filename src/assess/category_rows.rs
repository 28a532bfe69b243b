//! An Adam client's reconstruction with the rows its update shows by their categories
//! (`attack::priors::rows_by_category`) in place of the ensemble's or the marginals' guesses.
use pathfinding::{kuhn_munkres::kuhn_munkres_min, matrix::Matrix};

use crate::assess::reconstruct::Reconstruction;
use crate::attack::inversion::setup::Setup;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::attack::priors::categories_held::{departing_units, held_of};
use crate::attack::priors::rows_by_category::{CategoricalFeature, ReadRow, read_rows};
use crate::client::activation::Activation;
use crate::config::Protocol;
use crate::report::Provenance;
use crate::seed::seed_for;
use crate::table::{Dataset, FeatureKind, Value};

/// The random stream of the categories drawn again (`seed::seed_for`).
const STREAM: u64 = 0xCA7;

impl Setup<'_> {
    /// The rows `rows_by_category` reads off this client's update, where the reading holds (as
    /// `categories_held`: an Adam or AdamW FedAvg client with a ReLU network and no perturbing
    /// defence); None elsewhere.
    /// With them, the categorical features and whether each encoded column's category is held.
    pub fn rows_by_category(&self) -> Option<(Vec<CategoricalFeature>, Vec<ReadRow>, Vec<bool>)> {
        let Protocol::Fedavg(training) = self.config.protocol else {
            return None;
        };
        if self.config.activation != Activation::Relu || self.perturbed() {
            return None;
        }
        let scenario = &self.scenario;
        let units = departing_units(
            &scenario.params,
            &scenario.observed,
            &self.layout,
            &training,
            self.config.rows(),
        )?;
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

    /// `recon` with each row read by its categories (`rows_by_category`) put in place of the
    /// categorical cells of a row whose every categorical cell fell back to the marginals
    /// (`fell_back`, `assess::fallback`'s mask), the one that agrees with it most (one row each,
    /// by the assignment that leaves the fewest disagreements), the columns the table determines
    /// from a category (`table::determined`) following; those rows' provenance becomes `Read`.
    /// Elsewhere, a cell that fell back to a category no row holds (`categories_held`) is drawn
    /// again from `marginals`' rows that hold one that is held. Cells the ensemble kept are kept:
    /// where the shadow client found them better than the marginals, they can be better than a
    /// row read too (German Credit's Adam clients, seeds 0 and 1: 67.0 and 71.9 % with the
    /// ensemble's, 62.7 and 65.3 % with every open row's categories read or drawn again). The
    /// rows read, where the reading holds (with no fallback, none are put in).
    pub fn put_rows_by_category(
        &self,
        recon: &mut Reconstruction,
        marginals: &Dataset,
        fell_back: Option<&[Vec<bool>]>,
    ) -> Option<usize> {
        let (features, mut read, held) = self.rows_by_category()?;
        let fell = |i: usize, f: usize| fell_back.is_some_and(|m| m[i][f]);
        let open: Vec<usize> = (0..recon.rows.len())
            .filter(|&i| !recon.provenance[i].held_by_update() && features.iter().all(|f| fell(i, f.feature)))
            .collect();
        read.truncate(open.len());
        let read_into = self.assign_read(recon, &features, &read, &open);
        let mut rng = StdRng::seed_from_u64(seed_for(self.config.seed, STREAM));
        for i in (0..recon.rows.len()).filter(|i| !read_into.contains(i)) {
            for f in &features {
                let shown = |v: Value| matches!(v, Value::Cat(k) if held[f.offset + k as usize]);
                if !fell(i, f.feature) || shown(recon.rows[i][f.feature]) {
                    continue;
                }
                let from: Vec<&Vec<Value>> = marginals.rows.iter().filter(|r| shown(r[f.feature])).collect();
                if !from.is_empty() {
                    recon.rows[i][f.feature] = from[rng.random_range(0..from.len())][f.feature];
                }
            }
        }
        Some(read.len())
    }

    /// `read` put into the rows of `recon` at `open` (see `put_rows_by_category`); the rows
    /// they went into.
    fn assign_read(
        &self,
        recon: &mut Reconstruction,
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
                    let row = &recon.rows[i];
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
            let row = &mut recon.rows[open[s]];
            for (f, &k) in features.iter().zip(&r.categories) {
                row[f.feature] = Value::Cat(k);
                for d in self.determined.iter().filter(|d| d.by == f.feature) {
                    if let Some(v) = d.values[k as usize] {
                        row[d.column] = Value::Num(v);
                    }
                }
            }
            recon.provenance[open[s]] = Provenance::Read;
        }
        slot.iter().map(|&s| open[s]).collect()
    }
}

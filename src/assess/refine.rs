//! The ensemble run again from the rows the update chose. On FedAvg the members stop in minima
//! where most rows are right and a few cells are not; pooled and chosen by the simulated update
//! (`assess::update_choice`), the rows are nearer the batch than any member was. Members started
//! there (the first exactly, the others with their variables jittered) descend with the other
//! rows nearly right, so what is left of the update's residual is the wrong cells' own; the
//! continuous values move freely, where the choice could only try the members' values. The
//! second reconstruction (pooled and chosen in turn) replaces the first only where its rows'
//! simulated update fits the observed one better. Measured on Adult's momentum client at E = 5
//! (docs/results/recipes.md): a seed whose pooled rows fit at 0.055, just above the choice's
//! gate, went from 88.8 % to 93.3 % of cells, its fit to 0.0069.
use std::sync::Arc;

use crate::assess::reconstruct::Reconstruction;
use crate::assess::update_choice::{Rerun, UPDATE_FIT_THRESHOLD, UpdateChoice};
use crate::attack::inversion::Simulation;
use crate::attack::inversion::driver::Progress;
use crate::attack::inversion::ensemble::Members;
use crate::attack::inversion::relax::Layout;
use crate::attack::inversion::setup::Setup;
use crate::client::optimizer::OptimizerKind;
use crate::config::MemberRange;
use crate::error::Result;
use crate::table::{Dataset, Value, encode_rows};

/// The chosen category's logit over the others' at the start: a softmax of 0.987 (41
/// categories) to 0.9997 (2) on it, so the relaxed start decodes to the row and nearly is it
/// (with 4, 0.58–0.98, the continuous values drifted to make up for the soft categories: one
/// seed's fit rose 1.7e-3 → 3.6e-3 at a third of the learning rate), while a category can still
/// move.
const LOGIT: f64 = 8.0;
/// Continuous starts are kept this far inside their bounds (the sigmoid's inverse is infinite on
/// them): 0.07 std of Adult's capital gain, within the scoring's tolerance.
const INSIDE: f64 = 0.005;
/// The jitter of the other members' variables (the uniform draw's scale is 1).
const JITTER: f32 = 0.5;
/// The largest 1 − cos of an Adam client's pooled rows from which the ensemble runs again: twice
/// the choice's gate, which Adam's pooled rows (0.24–0.33) stay far above, since under Adam a
/// better fit misled the choice (docs/results/recipes.md). Under SGD the ensemble runs again from
/// any pooled rows: a rerun is kept only where it fits better, and on German Credit's reshuffling
/// momentum client at E = 5 it took pooled rows at 0.12 and 0.38 to 1.3e-3 and 8.8e-2, 96.1 →
/// 100 % and 91.1 → 93.4 % of cells.
const ADAM_GATE: f64 = 2.0 * UPDATE_FIT_THRESHOLD;

impl Setup<'_> {
    /// Match and pool the ensemble into one reconstruction (`reconstruct_once`), and run it
    /// again from the rows chosen where that applies (`refine`).
    pub async fn reconstruct(
        &self,
        inversion: Members,
        progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<Reconstruction> {
        let recon = self.reconstruct_once(inversion).await?;
        let recon = self.refine(recon, progress).await?;
        self.invert_left(recon, progress).await
    }

    /// `recon` with the ensemble run again from its rows where `refines`: the rerun's rows where
    /// they fit the update better, the first choice stated with the rerun beside it.
    async fn refine(
        &self,
        recon: Reconstruction,
        progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<Reconstruction> {
        if !self.refines(&recon) {
            return Ok(recon);
        }
        // A reshuffling client's epochs each start at the rows in the order the update chose.
        let rows: Vec<Vec<Value>> = match recon.chosen.as_ref().and_then(|c| c.orders.as_ref()) {
            None => recon.rows.clone(),
            Some(o) => o.order.iter().flatten().map(|&i| recon.rows[i].clone()).collect(),
        };
        let again = self.invert_from_rows(&rows, progress).await?;
        let refined = self.reconstruct_once(again).await?;
        let fit = |r: &Reconstruction| r.chosen.as_ref().map_or(f64::INFINITY, |c| c.fit_after);
        let rerun = Rerun {
            fit: fit(&refined),
            kept: fit(&refined) < fit(&recon),
            orders: refined.chosen.as_ref().and_then(|c| c.orders.clone()),
        };
        // The main run's loss curve and steps stay the attack's.
        let first = recon.chosen.clone().map(|c| UpdateChoice {
            rerun: Some(rerun.clone()),
            ..c
        });
        let mut out = match rerun.kept {
            true => Reconstruction {
                loss_curve: recon.loss_curve,
                steps: recon.steps,
                ..refined
            },
            false => recon,
        };
        out.chosen = first;
        Ok(out)
    }

    /// Whether the ensemble may run again after it is pooled (FedAvg in a known order or one the
    /// update chooses, the choice on; FedSGD's rows left, `assess::inverted_left`): a run's
    /// progress plans its steps (`run::run_attack`).
    pub fn may_run_again(&self) -> bool {
        let fedavg = self.known_order().is_some() || self.reshuffled().is_some();
        (self.config.priors().choice && fedavg) || self.may_invert_left()
    }

    /// Whether the ensemble runs again: FedAvg in a known or chosen order with the choice on (it
    /// stated its fit), an Adam client's pooled rows within `ADAM_GATE` of the update, and a row
    /// left that no proof reached.
    fn refines(&self, recon: &Reconstruction) -> bool {
        let copies = recon
            .chosen
            .as_ref()
            .and_then(|c| c.orders.as_ref())
            .map_or(1, |o| o.order.len());
        let gate = match self.simulation() {
            Simulation::LocalTraining { training, .. } if training.optimizer.kind != OptimizerKind::Sgd => ADAM_GATE,
            _ => f64::INFINITY,
        };
        // FedSGD runs again only where the choice searched (the pooled rows, or the picks among a
        // crowded span's rows, fit the update): on Adult [32, 32] trained 1-20 epochs (fits
        // 0.06-0.80) the rerun fitted better and lost (E = 5: 65.1 -> 63.7 %, seed 0 5.1 points
        // below guessing), untrained it gained.
        let gradient = matches!(self.simulation(), Simulation::Gradient);
        recon
            .chosen
            .as_ref()
            .is_some_and(|c| if gradient { c.searched } else { c.fit_before <= gate })
            && !recon.explains_update()
            && recon.rows.len() * copies == self.config.rows_per_member()
            && !recon.all_settled()
    }

    /// The ensemble inverted again from `rows` (`refine`'s starts).
    async fn invert_from_rows(
        &self,
        rows: &[Vec<Value>],
        progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<Members> {
        let starts = starts(self.dataset, &self.layout, rows, self.members, self.config.seed);
        let range = MemberRange {
            first: 0,
            count: self.members,
        };
        let cadence = self.runtime.cadence(self.config.report_every);
        let mut relabel = |p: &Progress| {
            progress(&Progress {
                phase: "refine".into(),
                ..p.clone()
            })
        };
        self.invert_from(range, self.config, cadence, Some(starts), &mut relabel)
            .await
    }
}

/// The relaxation's variables of `rows` for `members` members: the first exactly the rows, the
/// others jittered (seeded).
fn starts(dataset: &Dataset, layout: &Layout, rows: &[Vec<Value>], members: usize, seed: u64) -> Arc<[f32]> {
    let x = encode_rows(dataset, rows);
    let d = layout.d();
    let mut z = vec![0f32; x.len()];
    for (row, out) in x.chunks_exact(d).zip(z.chunks_exact_mut(d)) {
        for &(offset, width, categorical) in &layout.blocks {
            let cols = offset..offset + width;
            if categorical {
                let chosen = cols
                    .clone()
                    .max_by(|&a, &b| row[a].total_cmp(&row[b]))
                    .expect("a category");
                // The relaxation's logit is z·std + mean.
                for j in cols {
                    let logit = if j == chosen { LOGIT } else { 0.0 };
                    out[j] = ((logit - layout.mean[j]) / layout.std[j]) as f32;
                }
            } else {
                for j in cols {
                    let s = ((row[j] as f64 - layout.lo[j]) / (layout.hi[j] - layout.lo[j]).max(1e-12))
                        .clamp(INSIDE, 1.0 - INSIDE);
                    out[j] = (s / (1.0 - s)).ln() as f32;
                }
            }
        }
    }
    let jitter = crate::attack::inversion::driver::initial_rows(z.len() * members, seed ^ 0x5eed_f00d);
    (0..members)
        .flat_map(|m| {
            let jitter = &jitter[m * z.len()..(m + 1) * z.len()];
            z.iter()
                .zip(jitter)
                .map(move |(&v, &j)| if m == 0 { v } else { v + JITTER * j })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attack::inversion::pointwise::{sigmoid_relax, softmax_logit};
    use crate::table::adult_sample as adult;

    /// The relaxation (SPEC §4) of z, as every engine computes it, on the host in f64.
    fn relax(layout: &Layout, z: &[f32]) -> Vec<f32> {
        let mut x = vec![0f32; z.len()];
        for (z, x) in z.chunks_exact(layout.d()).zip(x.chunks_exact_mut(layout.d())) {
            for &(offset, width, categorical) in &layout.blocks {
                let cols = offset..offset + width;
                if categorical {
                    let logits: Vec<f64> = cols
                        .clone()
                        .map(|j| softmax_logit(z[j] as f64, layout.std[j], layout.mean[j]))
                        .collect();
                    let top = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let sum: f64 = logits.iter().map(|l| (l - top).exp()).sum();
                    for (j, l) in cols.zip(&logits) {
                        x[j] = ((((l - top).exp() / sum) - layout.mean[j]) / layout.std[j]) as f32;
                    }
                } else {
                    for j in cols {
                        x[j] = sigmoid_relax(z[j] as f64, layout.hi[j] - layout.lo[j], layout.lo[j]).0 as f32;
                    }
                }
            }
        }
        x
    }

    /// The first member starts at the rows: its relaxed rows decode to them, categories exactly
    /// and continuous values within the scoring's tolerance; the others start apart from it.
    #[test]
    fn the_first_member_starts_at_the_rows_and_the_others_jittered() {
        let dataset = adult();
        let layout = Layout::of(&dataset);
        let rows = &dataset.rows[..12];
        let z = starts(&dataset, &layout, rows, 3, 7);
        let len = rows.len() * layout.d();
        assert_eq!(z.len(), 3 * len);
        let decoded: Vec<Vec<Value>> = relax(&layout, &z[..len])
            .chunks_exact(layout.d())
            .map(|r| dataset.decode(r))
            .collect();
        for (got, want) in decoded.iter().zip(rows) {
            for (f, feature) in dataset.features.iter().enumerate() {
                match (&got[f], &want[f]) {
                    (Value::Num(a), Value::Num(b)) => {
                        let std = dataset.std[feature.offset];
                        assert!(
                            (a - b).abs() <= crate::table::dataset::TOLERANCE_FACTOR * std,
                            "{a} vs {b}"
                        );
                    }
                    (a, b) => assert_eq!(a, b, "feature {f}"),
                }
            }
        }
        assert_ne!(&z[..len], &z[len..2 * len]);
        assert_ne!(&z[len..2 * len], &z[2 * len..]);
    }
}

//! FedAvg's adoptions held to the update they were adopted for. On FedAvg the second layer's
//! certificate adopts a row that lies near the update's leading span (`SpanOf::Update`): a
//! nearness, not a proof. Its rows usually fit the simulated update a little worse than the
//! choice's and are nearer the batch (on the momentum client below, 2.4e-3 → 4.9e-3 and the
//! attack 98.2 % of cells with them, 86.2 % without), so a worse fit alone does not undo them. But
//! where the rows before them explained the update (1 − cos within `UPDATE_FIT_THRESHOLD`) and
//! the adopted rows do not, the adoptions contradict the update, and they are undone until it is
//! explained again. Measured on a Nesterov-momentum client (full Adult, 32 rows, [100, 100],
//! local batches of 8, E = 1, seed 0): the rerun's rows fitted 2.2e-3, its adoptions took them to
//! 0.41, every cell then fell back to the table's guess and the attack scored guessing (62.7 %)
//! on a client whose rows it had read.
use crate::assess::update_choice::{UPDATE_FIT_THRESHOLD, best};
use crate::attack::inversion::setup::Setup;
use crate::attack::priors::activation_span::certify::Certified;
use crate::error::Result;
use crate::report::SecondLayerSummary;
use crate::table::{Value, encode_rows};

impl Setup<'_> {
    /// `rows` (the certificate's, `certified` per slot) where they leave the update unexplained
    /// and the rows before them (`before`) explained it: adoptions undone one at a time, the
    /// undoing that fits best first, until the update is explained again, or all of them.
    /// The client's order is known (`Setup::known_order`). The summary's counts follow.
    pub(super) async fn undo_misfit_adoptions(
        &self,
        before: &[Vec<Value>],
        rows: &mut [Vec<Value>],
        certified: &mut [Certified],
        summary: Option<&mut SecondLayerSummary>,
    ) -> Result<()> {
        let mut adopted: Vec<usize> = (0..rows.len()).filter(|&i| rows[i] != before[i]).collect();
        if adopted.is_empty() {
            return Ok(());
        }
        let fit_of = async |x: Vec<f32>, count: usize| self.projected_losses(x, count).await;
        let was = fit_of(encode_rows(self.dataset, before), 1).await?[0];
        let mut now = fit_of(encode_rows(self.dataset, rows), 1).await?[0];
        let threshold = UPDATE_FIT_THRESHOLD as f32;
        if now <= threshold || was > threshold {
            return Ok(());
        }
        let mut undone = Vec::new();
        while now > threshold && !adopted.is_empty() {
            // One member per adoption, the rows with that one undone.
            let tries: Vec<Vec<Value>> = adopted
                .iter()
                .flat_map(|&i| {
                    let mut t = rows.to_vec();
                    t[i] = before[i].clone();
                    t
                })
                .collect();
            let losses = fit_of(encode_rows(self.dataset, &tries), adopted.len()).await?;
            let Some((k, &best)) = best(&losses) else {
                break;
            };
            if best >= now {
                break;
            }
            let i = adopted.remove(k);
            rows[i] = before[i].clone();
            undone.push(i);
            now = best;
        }
        if now > threshold {
            for i in adopted.drain(..) {
                rows[i] = before[i].clone();
                undone.push(i);
            }
        }
        if let Some(summary) = summary {
            summary.undone_adoptions += undone.len();
            for &i in &undone {
                // A FedAvg adoption that stood as a proof's is counted certified, the others consistent.
                match certified[i] {
                    Certified::No => summary.certified_rows = summary.certified_rows.saturating_sub(1),
                    _ => summary.consistent_rows = summary.consistent_rows.saturating_sub(1),
                }
            }
        }
        for &i in &undone {
            certified[i] = Certified::No;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attack::baselines::random_rows;
    use crate::client::fedavg::LocalTraining;
    use crate::config::{AttackConfig, Protocol};

    /// A FedAvg client of 32 sample rows, local batches of 8, one epoch.
    fn config() -> AttackConfig {
        AttackConfig {
            batch_size: 32,
            seed: 1,
            protocol: Protocol::Fedavg(LocalTraining {
                epochs: 1,
                local_batch: 8,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn summary() -> SecondLayerSummary {
        SecondLayerSummary {
            rank: 32,
            width: 100,
            certified_rows: 8,
            peeled_rows: 0,
            consistent_rows: 0,
            proof: false,
            undone_adoptions: 0,
        }
    }

    async fn fit(setup: &Setup<'_>, rows: &[Vec<Value>]) -> f32 {
        setup
            .projected_losses(encode_rows(setup.dataset, rows), 1)
            .await
            .unwrap()[0]
    }

    /// Rows that explained the update, eight of them adopted for rows of the table that are not
    /// the batch's: the update is no longer explained, and undoing the adoptions one at a time
    /// explains it again, the batch's own rows back in their slots.
    #[test]
    fn adoptions_that_leave_the_update_unexplained_are_undone() {
        crate::assess::with_sample_setup(config(), |setup| {
            pollster::block_on(async {
                let truth = setup.scenario.truth.as_ref().unwrap().rows.clone();
                assert!(fit(setup, &truth).await < 1e-4);
                let strangers = random_rows(setup.dataset, 8, 7);
                let mut rows = truth.clone();
                for (k, s) in strangers.into_iter().enumerate() {
                    rows[4 * k] = s;
                }
                assert!(fit(setup, &rows).await > UPDATE_FIT_THRESHOLD as f32);
                let mut certified = vec![Certified::No; 32];
                let mut counts = summary();
                setup
                    .undo_misfit_adoptions(&truth, &mut rows, &mut certified, Some(&mut counts))
                    .await
                    .unwrap();
                assert!(fit(setup, &rows).await <= UPDATE_FIT_THRESHOLD as f32);
                let undone = (0..8).filter(|k| rows[4 * k] == truth[4 * k]).count();
                assert!(undone >= 1, "no adoption undone");
                assert_eq!((counts.certified_rows, counts.undone_adoptions), (8 - undone, undone));
                assert!(
                    rows.iter()
                        .zip(&truth)
                        .enumerate()
                        .all(|(i, (r, t))| i % 4 == 0 || r == t)
                );
            })
        })
    }

    /// Adoptions that leave the update explained stand, though the rows fit it worse than the
    /// rows before them: the certificate's rows are nearer the batch than a better fit.
    #[test]
    fn adoptions_that_keep_the_update_explained_stand() {
        crate::assess::with_sample_setup(config(), |setup| {
            pollster::block_on(async {
                let truth = setup.scenario.truth.as_ref().unwrap().rows.clone();
                let f = setup.dataset.features.iter().position(|f| !f.is_categorical()).unwrap();
                let mut rows = truth.clone();
                if let Value::Num(v) = rows[3][f] {
                    rows[3][f] = Value::Num(v + 1.0);
                }
                let worse = fit(setup, &rows).await;
                assert!(
                    worse > fit(setup, &truth).await && worse <= UPDATE_FIT_THRESHOLD as f32,
                    "{worse}"
                );
                let adopted = rows.clone();
                let mut certified = vec![Certified::No; 32];
                setup
                    .undo_misfit_adoptions(&truth, &mut rows, &mut certified, None)
                    .await
                    .unwrap();
                assert_eq!(rows, adopted);
            })
        })
    }
}

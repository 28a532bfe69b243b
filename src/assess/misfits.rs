//! Consistent rows the update does not support, inverted again. The second layer's certificate
//! calls a row consistent where its activation fits the update's span (`Unproved`: too few
//! checks, not unique, or only with the directions too near the rounding to place), which says
//! nothing of its own gradient: on a trained network such a row can be wrong in most cells while
//! the rows the update holds leave half of it unexplained (Adult [32, 32], B = 16, trained 20
//! epochs, seed 1: one consistent row wrong in 9 of 14 cells, and taking it out of the sum took
//! 1 − cos of the whole update from 0.32 to near 0). A FedSGD update is the sum of its rows'
//! gradients, so a row whose removal lowers what the rows leave unexplained sends a gradient the
//! update does not hold. Such rows join the rows the ensemble alone gave and are inverted again
//! on what the others leave (`invert_open`), in rounds while the fit improves; the rows found
//! replace them only where the whole reconstruction then explains the update to near its float32
//! rounding (`seen_rows::EXPLAINED`), and are consistent only where the fit pins them
//! (`hold_seen`; the others are the ensemble's, which the fallback judges). Where the update stays
//! unexplained the rows stay as they were: kept wherever the fit merely improved, rows of a
//! better fit fell back to the marginals (Adult B = 16, E = 5, seed 7: 1 − cos 0.11 → 1.3e-4,
//! 94.6 → 89.7 % of cells). Measured in docs/results/rounds.md.
use crate::assess::inverted_left::opens;
use crate::assess::reconstruct::Reconstruction;
use crate::assess::seen_rows::EXPLAINED;
use crate::attack::inversion::driver::Progress;
use crate::attack::inversion::setup::Setup;
use crate::attack::priors::activation_span::Unproved;
use crate::error::Result;
use crate::report::Provenance;

/// A consistent row is reopened where the fit without it leaves at most this share of what the
/// rows leave with it: it takes a tenth or more of the misfit away (rows whose gradient is small
/// beside the misfit change it by less, either way).
const LOWERS: f64 = 0.9;
/// Rounds of reopening at most (each one inversion of the open rows).
const ROUNDS: usize = 3;

impl Setup<'_> {
    /// `recon` with its consistent rows that the update does not support inverted again with its
    /// open rows, as the module says; as it was where the update is explained already, no
    /// consistent row lowers the misfit, or the rows found do not explain the update.
    pub(super) async fn reopen_misfits(
        &self,
        mut recon: Reconstruction,
        progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<Reconstruction> {
        let label_of = self.labels_paired(&recon);
        let mut open: Vec<usize> = (0..recon.rows.len())
            .filter(|&i| !recon.provenance[i].held_by_update())
            .collect();
        let (mut rows, mut entropy) = (recon.rows.clone(), recon.entropy.clone());
        let mut fit = self.fits_without(&rows, &[], &label_of).0;
        for _ in 0..ROUNDS {
            if fit <= EXPLAINED {
                break;
            }
            let consistent: Vec<usize> = (0..rows.len())
                .filter(|&i| recon.provenance[i] == Provenance::Consistent && !open.contains(&i))
                .collect();
            let without = self.fits_without(&rows, &consistent, &label_of).1;
            let misfits = consistent
                .iter()
                .zip(&without)
                .filter(|&(_, &w)| w <= LOWERS * fit)
                .map(|(&i, _)| i);
            let before = open.len();
            open.extend(misfits);
            if open.len() == before || !opens(&recon, &open) {
                break;
            }
            let found = self.invert_open(&rows, &open, &label_of, progress).await?;
            let (again, again_entropy) = found.placed_over(&rows, &entropy);
            let again_fit = self.fits_without(&again, &[], &label_of).0;
            if !(again_fit < fit) {
                break;
            }
            (rows, entropy, fit) = (again, again_entropy, again_fit);
        }
        let reopened = open.iter().any(|&i| recon.provenance[i] == Provenance::Consistent);
        if !(fit <= EXPLAINED) || !reopened {
            return Ok(recon);
        }
        (recon.rows, recon.entropy) = (rows, entropy);
        let left = open.len();
        self.hold_seen(&mut recon, &open, &label_of, |fit| Unproved::InvertedLeft { left, fit });
        recon.row_labels = self.labels_of_rows(&recon.rows);
        Ok(recon)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assess::matching::Rule;
    use crate::assess::scoring::score_aligned;

    /// A batch of the Adult sample on a network trained 20 epochs, every row held consistent,
    /// one swapped for the row of the table with the same label whose gradient is largest (a row
    /// the network is unsure of, far from the batch's): that row alone is reopened, the row
    /// found in its place is the batch's and explains the update, and the others stay.
    #[test]
    fn a_consistent_row_the_update_does_not_hold_is_found_again() {
        crate::assess::with_trained_sample_batch(|setup, truth, labels, norms| {
            let data = setup.dataset;
            let (b, swapped) = (truth.len(), 4);
            let loudest = (0..data.n())
                .filter(|&k| data.labels[k] == labels[swapped] && !truth.contains(&data.rows[k]))
                .max_by(|&a, &b| norms[a].total_cmp(&norms[b]))
                .unwrap();
            let mut rows = truth.clone();
            rows[swapped] = data.rows[loudest].clone();
            let mut recon = pollster::block_on(setup.reconstruction(None, &mut |_: &Progress| true)).unwrap();
            recon.rows = rows.clone();
            recon.provenance = vec![Provenance::Consistent; b];
            recon.unproved = vec![Some(Unproved::Unplaced); b];
            // Each slot with its row's label, as the update pairs the batch's own rows (the
            // last layer pairs the swapped row, of the other class's look, with the wrong one).
            recon.row_labels = Some(labels.clone());
            let misfit = setup.fits_without(&rows, &[], &labels).0;
            assert!(misfit > EXPLAINED, "{misfit}");
            let out = pollster::block_on(setup.reopen_misfits(recon, &mut |_: &Progress| true)).unwrap();
            let fit = setup.fits_without(&out.rows, &[], &labels).0;
            assert!(fit <= EXPLAINED, "{misfit} -> {fit}");
            let scored = score_aligned(&Rule::of(&data.features), &truth, &out.rows);
            for i in 0..b {
                let right = scored.correct[i].iter().filter(|&&c| c).count();
                assert_eq!(
                    right,
                    data.features.len(),
                    "row {i}: {:?} against {:?}",
                    out.rows[i],
                    truth[i]
                );
                if i != swapped {
                    assert_eq!(out.provenance[i], Provenance::Consistent, "row {i}");
                    assert_eq!(out.unproved[i], Some(Unproved::Unplaced), "row {i}");
                }
            }
            assert!(
                matches!(
                    out.unproved[swapped],
                    Some(Unproved::InvertedLeft { left: 1, .. }) | None
                ),
                "{:?}",
                out.unproved[swapped]
            );
        });
    }
}

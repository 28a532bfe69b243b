//! Rows the update cannot see, guessed from what it does say of them. On a trained network a row
//! the network is sure of sends a gradient below the float32 rounding of the update (its
//! residual p − y near 0): with ‖g‖² ≤ 2·ROUNDING·‖t‖² (t the update times the batch) it moves
//! 1 − cos by at most `seen_rows::ROUNDING`, so no attack on this update tells it from any other
//! row as sure. A row of the reconstruction with such a gradient says nothing of the batch's row
//! in its slot but that: the ensemble's row there was one of many that fit, no likelier than a
//! draw (Adult [32, 32], B = 16, trained 20 epochs, seed 5: wrong in 13 of 14 cells). What the
//! update does say of that row is its label and that the network is that sure of it. A server
//! holding the table's rows reads that: among the table's rows of the label (outside the batch)
//! whose gradients lie below the same bound (the `FEWEST` surest where fewer do), each cell the
//! likeliest value (`imputed::filled`; a column a category determines read with it). The row is
//! consistent with the update, as any row as sure is, and says why. Only where the rows explain
//! the update to `seen_rows::EXPLAINED`, before and after. Where the server has no such rows (a
//! received update read with the table's encoding alone), the row is not held and the fallback
//! guesses every cell of it: held, the ensemble's row there, polished to the table's extremes,
//! scored 52.5 % of cells against 61.4 % by guessing (a network a third of whose first-layer
//! units are always active, Adult sample, B = 32, seed 11: 25 rows of 32 below the rounding).
//!
//! The test is on the row reconstructed, not on what its removal does to the fit: rows whose
//! removal merely leaves the fit better are wrong rows, not quiet ones (Adult [100, 100],
//! trained 20 epochs, seed 0: four rows sending gradients 50–600,000 times the bound, 98.4 →
//! 93.3 % of cells where they were guessed). A wrong row the network is sure of where the
//! batch's row is not leaves that row's gradient in the residual, which `EXPLAINED` bounds.
use super::imputed::filled;
use super::polish::norm2;
use super::seen_rows::{EXPLAINED, ROUNDING};
use crate::assess::reconstruct::Reconstruction;
use crate::attack::inversion::setup::Setup;
use crate::attack::priors::activation_span::Unproved;
use crate::report::Provenance;
use crate::table::Value;

/// A label's guess and how many rows it was read among (None: the label has too few rows).
type Likeliest = Option<(Vec<Value>, usize)>;

/// Table rows screened per label (evenly spaced among its rows outside the batch): each costs
/// one row's gradient.
const SCREENED: usize = 4000;
/// The fewest rows the guess is read among: where fewer are within the bound, it is doubled until
/// this many are (a cell's likeliest value among a handful is a draw). On the Adult sample
/// trained 20 epochs, 5 rows of 2,748 lay within it, 26 at 64 times it.
const FEWEST: usize = 20;

impl Setup<'_> {
    /// `recon` with each row no proof reached whose own gradient lies below the update's rounding
    /// replaced by the table's likeliest row as sure (module doc), consistent with the update, or
    /// not held where the table has too few rows of its label (`Unproved::UnseenNoGuess`); as
    /// it was where the rows left are not inverted (`may_invert_left`: a FedSGD classifier's
    /// update, the sum of its rows' gradients, with the update's choice on), or the rows do not
    /// explain it to `EXPLAINED` before or after.
    pub(crate) fn guess_unseen(&self, mut recon: Reconstruction) -> Reconstruction {
        if !self.may_invert_left() || recon.rows.len() != self.config.rows() {
            return recon;
        }
        let open: Vec<usize> = (0..recon.rows.len())
            .filter(|&i| recon.provenance[i] != Provenance::Proved)
            .collect();
        if open.is_empty() {
            return recon;
        }
        let label_of = self.labels_paired(&recon);
        let fit = self.fits_without(&recon.rows, &[], &label_of).0;
        if !(fit <= EXPLAINED) {
            return recon;
        }
        let target = self.update_times(recon.rows.len() as f64);
        // A row whose gradient g has ‖g‖² ≤ 2·ROUNDING·‖t‖² moves 1 − cos by at most ROUNDING.
        let bound = 2.0 * ROUNDING * norm2(&target);
        let quiet = |row: &[Value], label: usize| norm2(&self.row_gradient(row, label)) <= bound;
        let unseen: Vec<usize> = open
            .into_iter()
            .filter(|&i| quiet(&recon.rows[i], label_of[i]))
            .collect();
        let (mut rows, mut among, mut guessed) = (recon.rows.clone(), vec![0; recon.rows.len()], Vec::new());
        // Each label's guess, read once.
        let mut of_label: Vec<Option<Likeliest>> = vec![None; self.dataset.classes.len()];
        for &i in &unseen {
            let y = label_of[i];
            let Some(slot) = of_label.get_mut(y) else { continue };
            let likeliest = slot.get_or_insert_with(|| self.likeliest_as_sure(y, bound));
            if let Some((guess, n)) = likeliest {
                (rows[i], among[i]) = (guess.clone(), *n);
                guessed.push(i);
            }
        }
        // A row with no guess to take (too few rows of its label: a received update read with the
        // table's encoding alone has none) is no more the update's than a draw: not held, and
        // the fallback takes it whole (`Reconstruction::unguessed`).
        for &i in unseen.iter().filter(|i| !guessed.contains(i)) {
            (recon.provenance[i], recon.unproved[i]) = (Provenance::Ensemble, Some(Unproved::UnseenNoGuess));
        }
        if guessed.is_empty() || !(self.fits_without(&rows, &[], &label_of).0 <= EXPLAINED) {
            return recon;
        }
        if let Some(entropy) = recon.entropy.as_mut() {
            let origin: Vec<usize> = (0..rows.len()).collect();
            super::update_choice::move_entropy(self.dataset, entropy, &origin, &recon.rows, &rows);
        }
        for &i in &guessed {
            recon.provenance[i] = Provenance::Consistent;
            recon.unproved[i] = Some(Unproved::Unseen { among: among[i] });
        }
        recon.rows = rows;
        recon
    }

    /// The likeliest row, cell by cell, among the table's rows of `label` (outside the batch,
    /// `SCREENED` at most) whose squared gradient norm is at most `bound`, doubled until
    /// `FEWEST` are; with how many it was read among. None where the label has fewer rows.
    fn likeliest_as_sure(&self, label: usize, bound: f64) -> Likeliest {
        let data = self.dataset;
        let of_label: Vec<usize> = (self.rows_outside_batch().into_iter())
            .filter(|&k| data.labels[k] == label)
            .collect();
        if of_label.len() < FEWEST {
            return None;
        }
        let step = (of_label.len() / SCREENED).max(1);
        let norms: Vec<(usize, f64)> = (of_label.iter().step_by(step))
            .map(|&k| (k, norm2(&self.row_gradient(&data.rows[k], label))))
            .collect();
        let mut bound = bound.max(f64::MIN_POSITIVE);
        // Doubled at most until it passes every norm a float64 holds.
        for _ in 0..2100 {
            let sure: Vec<&[Value]> = (norms.iter().filter(|&&(_, n)| n <= bound))
                .map(|&(k, _)| &data.rows[k][..])
                .collect();
            if sure.len() >= FEWEST.min(norms.len()) {
                let guess = filled(&self.rules, sure[0], &vec![true; sure[0].len()], &sure);
                return Some((guess, sure.len()));
            }
            bound *= 2.0;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Adult sample's batch on a network trained 20 epochs: its own update shows every row
    /// (`seen_rows`' test), so its rows stay as they are.
    #[test]
    fn rows_the_update_shows_stay() {
        crate::assess::with_trained_sample_batch(|setup, truth, labels, _| {
            let out = setup.guess_unseen(crate::assess::consistent_rows(setup, &truth, &labels));
            assert_eq!(out.rows, truth);
            assert!(out.unproved.iter().all(|u| *u == Some(Unproved::Unplaced)));
        });
    }

    /// One row of that batch swapped for the table's row the network is surest of, the update
    /// made from the rows so: that row, and only the rows whose gradients lie below the update's
    /// rounding, take the guess (read here among 26 rows), which agrees with the 20 rows of the
    /// label the network is surest of in more cells than the row swapped in does; the others
    /// stay. Where the server holds no rows to read it among, the row is not held instead.
    #[test]
    fn a_row_below_the_rounding_takes_the_likeliest_row_as_sure() {
        crate::assess::with_trained_sample_batch(|setup, mut rows, mut labels, norms| {
            let data = setup.dataset;
            let surest = (0..data.n()).min_by(|&a, &b| norms[a].total_cmp(&norms[b])).unwrap();
            let (b, faint) = (rows.len(), 5);
            (rows[faint], labels[faint]) = (data.rows[surest].clone(), data.labels[surest]);
            let shown = crate::assess::setup_sending(setup, &rows, &labels);
            let bound = 2.0 * ROUNDING * norm2(&shown.update_times(b as f64));
            let unseen: Vec<bool> = (0..b)
                .map(|i| norm2(&shown.row_gradient(&rows[i], labels[i])) <= bound)
                .collect();
            assert!(
                unseen[faint] && unseen.iter().filter(|&&u| u).count() < b / 2,
                "{unseen:?}"
            );
            let out = shown.guess_unseen(crate::assess::consistent_rows(&shown, &rows, &labels));
            for i in 0..b {
                match unseen[i] {
                    true => assert!(matches!(out.unproved[i], Some(Unproved::Unseen { among }) if among >= FEWEST)),
                    false => assert!(out.rows[i] == rows[i] && out.unproved[i] == Some(Unproved::Unplaced)),
                }
            }
            // With the table's encoding alone (no rows to read a guess among) the row is not held,
            // and is marked for the fallback to take whole (`unguessed`); the others stay.
            let encoding_only = crate::table::Dataset {
                rows: Vec::new(),
                labels: Vec::new(),
                ..data.clone()
            };
            let scenario = crate::scenario::Scenario::of_update(
                shown.scenario.params.clone(),
                shown.scenario.observed.clone(),
                shown.scenario.labels.clone(),
            );
            let bare = Setup::new(shown.runtime, &encoding_only, shown.config, scenario);
            let unread = bare.guess_unseen(crate::assess::consistent_rows(&shown, &rows, &labels));
            assert_eq!(unread.unguessed(), unseen);
            for i in 0..b {
                match unseen[i] {
                    true => assert!(unread.provenance[i] == Provenance::Ensemble && unread.rows[i] == rows[i]),
                    false => assert_eq!(unread.provenance[i], Provenance::Consistent),
                }
            }
            let mut of_label: Vec<usize> = (0..data.n()).filter(|&k| data.labels[k] == labels[faint]).collect();
            of_label.sort_by(|&a, &b| norms[a].total_cmp(&norms[b]));
            let agreement = |row: &[Value]| -> usize {
                (of_label[..FEWEST].iter())
                    .map(|&k| {
                        (setup.rules.iter().enumerate())
                            .filter(|(f, r)| r.agrees(row[*f], data.rows[k][*f]))
                            .count()
                    })
                    .sum()
            };
            assert!(
                agreement(&out.rows[faint]) > agreement(&rows[faint]),
                "{} against {}",
                agreement(&out.rows[faint]),
                agreement(&rows[faint])
            );
        });
    }
}

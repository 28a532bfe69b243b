//! Rows the second layer's certificate placed near a batch row (`Unproved::Imprecise`: a row of
//! the batch within half the scoring tolerance), moved by a later fit (`assess::polish`,
//! `assess::span_placed`). The certificate's bound is its point's, and a moved row keeps none of
//! it: the polish moved such a row 0.23 std from every row of its batch on a crafted network
//! (seed 100,124 of `tests/near_dependent.rs`), and it kept the claim. So a moved row keeps the
//! claim only where the certificate holds at its new point as it did where it was given: in the
//! span to its threshold, the theorem at least at half the scoring tolerance, and where the span
//! has fewer directions than the batch has rows, the label the update gives it among the rows
//! settled (`assess::peeled`'s `settle_labels`). Elsewhere it takes the fit's reason.
use crate::assess::reconstruct::Reconstruction;
use crate::attack::inversion::setup::Setup;
use crate::attack::priors::activation_span::{Regime, Unproved};
use crate::attack::priors::peel::Peeler;
use crate::config::Protocol;
use crate::table::Value;

impl Setup<'_> {
    /// `recon`'s near rows that `rows` moves in any value rechecked at their new points, as the
    /// module says; those the certificate no longer holds for given `why`. Called before `rows`
    /// replace the reconstruction's.
    pub(super) fn recheck_moved_near(&self, recon: &mut Reconstruction, rows: &[Vec<Value>], why: Unproved) {
        let b = rows.len();
        let moved: Vec<usize> = (0..b)
            .filter(|&i| recon.unproved[i] == Some(Unproved::Imprecise) && rows[i] != recon.rows[i])
            .collect();
        if moved.is_empty() {
            return;
        }
        let span = self.second_layer_span(b);
        let mut kept: Vec<usize> = moved
            .iter()
            .copied()
            .filter(|&i| {
                span.as_ref().is_some_and(|s| {
                    let distance = s.distance(&rows[i]);
                    s.regime() != Regime::Adoption
                        && distance < s.threshold(&rows[i])
                        && matches!(s.proof(&rows[i], distance), Ok(()) | Err(Unproved::Imprecise))
                })
            })
            .collect();
        let labelled = span
            .as_ref()
            .is_some_and(|s| matches!(s.regime(), Regime::Labelled { .. }));
        if labelled && !kept.is_empty() {
            kept = self.labelled_at(recon, rows, &moved, kept);
        }
        for i in moved.into_iter().filter(|i| !kept.contains(i)) {
            recon.unproved[i] = Some(why);
        }
    }

    /// Of `kept`, the rows to which the update still gives a label's residual at their points in
    /// `rows`, read among the rows settled there (as `settle_labels` reads them: those of
    /// `moved` the span no longer holds left out); none where the update is not a FedSGD
    /// classifier's or the labels cannot be read.
    fn labelled_at(
        &self,
        recon: &Reconstruction,
        rows: &[Vec<Value>],
        moved: &[usize],
        kept: Vec<usize>,
    ) -> Vec<usize> {
        if self.config.protocol != Protocol::Fedsgd || self.dataset.target.is_some() {
            return Vec::new();
        }
        let (params, model) = (&self.scenario.params, self.config.model());
        let Some(peeler) = Peeler::new(params, model, &self.scenario.observed, rows.len()) else {
            return Vec::new();
        };
        let slots: Vec<usize> = (0..rows.len())
            .filter(|&i| recon.settled(i) && (kept.contains(&i) || !moved.contains(&i)))
            .collect();
        let settled: Vec<Vec<Value>> = slots.iter().map(|&i| rows[i].clone()).collect();
        let Some(unlabelled) = peeler.unlabelled(&self.encoded(&settled)) else {
            return Vec::new();
        };
        let labelled = |i: &usize| {
            slots
                .iter()
                .position(|s| s == i)
                .is_some_and(|k| !unlabelled.contains(&k))
        };
        kept.into_iter().filter(labelled).collect()
    }
}

//! The rows no proof reached, found on what is left of the update once the proved rows are
//! peeled off it (`attack::priors::peel`). Those few rows are independent where the batch's were not,
//! so the first layer's span of what is left has their dimension, and the rows the table can
//! hold in it (`peel::span_rows`) are proved or refused by the second layer's certificate as
//! any candidate is. At B = 64 on Adult the certificate proves all but a few rows, and the
//! ensemble's cells for those were about half right. Where the batch repeats rows (tables of
//! few-valued columns), the rows left are copies of proved ones, read off the update as such.
use crate::attack::inversion::setup::Setup;
use crate::attack::priors::activation_span::certify::Certified;
use crate::attack::priors::activation_span::{self, ActivationSpan, Regime, SpanOf, Unproved};
use crate::attack::priors::peel;
use crate::config::Protocol;
use crate::parallel::{self, Next};
use crate::report::Provenance;
use crate::table::Value;
use crate::table::encode_rows;

use super::entropy;
use super::reconstruct::Reconstruction;

/// Rounds of reading the proved rows off the first layer and peeling them again.
const READS: usize = 8;
/// Proved rows left among the rows to find at most, where the update does not give their labels.
const KEPT_IN: usize = 4;

/// What peeling the proved rows leaves (`Setup::peeled_update`).
pub(super) struct Rest {
    /// The update of the rows left (None where no peel went through), and how many of them its
    /// first layer shows clear of the rounding (`peel::Peeled::visible`).
    pub(super) update: Option<crate::client::update::Update>,
    visible: usize,
    /// The proved rows (positions among them) whose label the update did not give: such a row
    /// may be a point between two rows of the batch that share their categories and their
    /// first-layer ReLU pattern, which the certificate cannot tell from a row.
    pub(super) unlabelled: Vec<usize>,
}

impl Setup<'_> {
    /// Whether the attack composes peeling: FedSGD (a sum of per-row gradients at the weights
    /// sent), the ReLU proof and the second layer's certificate, on a classifier (a
    /// regression's labels are read once every row is proved, after this).
    pub(super) fn peels(&self) -> bool {
        let priors = self.config.priors();
        self.config.protocol == Protocol::Fedsgd
            && self.inverts.relaxed
            && priors.proof
            && priors.second_layer
            && self.dataset.target.is_none()
    }

    /// Rows in the encoding the client trained on (f32, as its update saw them), in f64.
    pub(super) fn encoded(&self, rows: &[Vec<Value>]) -> Vec<Vec<f64>> {
        rows.iter()
            .map(|row| {
                encode_rows(self.dataset, std::slice::from_ref(row))
                    .iter()
                    .map(|&v| v as f64)
                    .collect()
            })
            .collect()
    }

    /// The update of the rows `recon` left unproved, once the proved ones are peeled off it. The
    /// certificate proves a continuous value only to its tolerance (Adult's fnlwgt to about 70 of
    /// its 10⁵ std), and a proved row a little off leaves a direction of its own in what is left;
    /// so the proved rows are read off the first layer (`peel::Peeled::rows`), rounded to their
    /// columns' precision, and peeled again until they hold still. A proved row whose label the
    /// update does not give (`peel::Refused::Unlabelled`) stays in what is left, among the rows
    /// to find, and is reported even where a later peel fails.
    pub(super) fn peeled_update(&self, proved: &[Vec<Value>], b: usize) -> Option<Rest> {
        let (params, model) = (&self.scenario.params, self.config.model());
        let peeler = peel::Peeler::new(params, model, &self.scenario.observed, b)?;
        let mut rows = proved.to_vec();
        let mut at: Vec<usize> = (0..proved.len()).collect();
        let mut unlabelled = Vec::new();
        let (mut rest, mut reads, mut visible) = (None, 0, 0);
        while reads < READS {
            let peeled = match peeler.peel(&self.encoded(&rows)) {
                Ok(peeled) => peeled,
                Err(peel::Refused::Unlabelled(i)) if unlabelled.len() < KEPT_IN => {
                    rows.remove(i);
                    unlabelled.push(at.remove(i));
                    rest = None;
                    continue;
                }
                Err(_) => break,
            };
            reads += 1;
            let read: Vec<Vec<Value>> = peeled
                .rows
                .iter()
                .map(|x| self.dataset.decode(&x.iter().map(|&v| v as f32).collect::<Vec<_>>()))
                .collect();
            rest = Some(peeled.update);
            visible = peeled.visible;
            if read == rows {
                break;
            }
            rows = read;
        }
        Some(Rest {
            update: rest,
            visible,
            unlabelled,
        })
    }

    /// `recon` with the rows it left unproved proved: as copies of proved rows where the
    /// certificate proved every distinct row (`fill_copies`), else on the peeled update where
    /// the second layer's certificate holds for a row of its span. A row found either way is
    /// proved (its provenance says so) and counted in the second layer's `peeled_rows`. A proved
    /// row whose label the update does not give is no longer counted proved (`unprove`), where
    /// rows are left and where none is (`check_labels`). Then the rows left are searched for on
    /// the peeled spans (`assess::peeled_search`), and the rows that only fit are tried on the
    /// span of the rows left (`prove_left`).
    pub(crate) fn peel_rest(&self, recon: Reconstruction) -> Reconstruction {
        let recon = self.peel_found(recon);
        let recon = self.search_left(recon);
        self.prove_left(recon)
    }

    /// `peel_rest` but for `prove_left`.
    fn peel_found(&self, recon: Reconstruction) -> Reconstruction {
        let mut recon = self.settle_labels(recon);
        let b = recon.rows.len();
        let left: Vec<usize> = (0..b).filter(|&i| !recon.settled(i)).collect();
        if left.len() == b || !self.peels() {
            return recon;
        }
        if left.is_empty() {
            return self.check_labels(recon);
        }
        let proved_at: Vec<usize> = (0..b).filter(|i| !left.contains(i)).collect();
        let mut taken: Vec<Vec<Value>> = proved_at.iter().map(|&i| recon.rows[i].clone()).collect();
        // Every distinct row proved, and the batch repeats some: the rows left are copies.
        if recon.second_layer.as_ref().is_some_and(|s| s.rank == taken.len()) {
            return self.fill_copies(recon, &taken, &proved_at, &left);
        }
        let Some(span) = self.second_layer_span(b).filter(|s| s.proves()) else {
            return recon;
        };
        let Some(rest) = self.peeled_update(&taken, b) else {
            return recon;
        };
        let unlabelled: Vec<usize> = rest.unlabelled.iter().map(|&p| proved_at[p]).collect();
        self.unprove(&mut recon, &unlabelled);
        let Some(update) = rest.update else {
            return recon;
        };
        let sizes = &self.scenario.params.sizes;
        let candidates = peel::span_rows(update.weight(0), &self.layout, (sizes[0], sizes[1]), rest.visible);
        let candidates: Vec<Vec<Value>> = candidates
            .chunks_exact(sizes[0])
            .map(|c| self.dataset.decode(c))
            .collect();
        let mut found: Vec<(Vec<Value>, Certified)> = Vec::new();
        // Each refined against the rows taken before it, the refinements run ahead on every core.
        parallel::walk_ahead(
            &candidates,
            &mut taken,
            |row, taken| span.refine(row, taken),
            |(row, distance), taken| match span.verdict(&row, distance, taken) {
                Certified::No => Next::Same,
                verdict => {
                    taken.push(row.clone());
                    found.push((row, verdict));
                    Next::Changed
                }
            },
        );
        if found.is_empty() {
            return recon;
        }
        // Proved rows first, then those a label may prove, then rows that only fit: a row of the
        // rows left's span that fits the update is the batch's, as far as the update tells, and
        // replaces only a row the ensemble gave. An unlabelled row keeps its slot: it is near a
        // row of the batch (within its ReLU cell).
        found.sort_by_key(|(_, c)| match c {
            Certified::Yes | Certified::Near => 0,
            Certified::IfLabelled(_) => 1,
            _ => 2,
        });
        let mut free = self.free_slots(&recon, &left);
        let mut peeled = 0;
        for (row, verdict) in &found {
            if !matches!(verdict, Certified::Yes | Certified::Near | Certified::IfLabelled(_)) {
                free.retain(|(slot, _)| recon.provenance[*slot] == Provenance::Ensemble);
            }
            // A row the certificate gave a slot before (a consistent one) found again: it takes
            // that slot where it may, and no other (Adult [100, 100] trained 5 epochs, seed 0,
            // reported one row of the batch twice, one of them in a twin's slot).
            let again = left.iter().find(|&&i| span.same_row(&recon.rows[i], row));
            if again.is_some_and(|i| !free.iter().any(|(slot, _)| slot == i)) {
                continue;
            }
            let Some(slot) = self.adopt(&mut recon, &mut free, row, again.copied()) else {
                break;
            };
            peeled += 1;
            match verdict {
                Certified::IfLabelled(why) => {
                    self.mark_consistent(&mut recon, slot, *why);
                    recon.pending_labels.push(slot);
                }
                Certified::Fits(why) => self.mark_consistent(&mut recon, slot, *why),
                // Near a batch row: consistent, its values as certain as a proved row's.
                Certified::Near => {
                    recon.provenance[slot] = Provenance::Consistent;
                    recon.unproved[slot] = Some(Unproved::Imprecise);
                }
                _ => {}
            }
        }
        if let Some(summary) = recon.second_layer.as_mut() {
            summary.peeled_rows = peeled;
        }
        let mut recon = self.settle_labels(recon);
        recon.row_labels = self.labels_of_rows(&recon.rows);
        recon
    }

    /// Rows that fit the update and were not proved, proved on what is left of it once the
    /// proved rows alone are peeled off. The rows left's own span (`SpanOf::Peeled`) has their few
    /// dimensions where the batch's has B, so its complement keeps far more of how a row's
    /// activation moves, and the theorem places a row of the batch where the whole span could not
    /// (near-twins whose line the batch's span held, rows it placed only to half the scoring
    /// tolerance). The same theorem and thresholds, read with the whole update's rounding; nothing
    /// is proved where a proved row's label is not read, or where that span's rank is not the
    /// rows left's, every direction determined (a row peeled a little off leaves one of its own).
    fn prove_left(&self, mut recon: Reconstruction) -> Reconstruction {
        let b = recon.rows.len();
        let proved: Vec<usize> = (0..b).filter(|&i| recon.provenance[i] == Provenance::Proved).collect();
        let open: Vec<usize> = (0..b)
            .filter(|&i| recon.provenance[i] == Provenance::Consistent)
            .collect();
        if !self.peels() || proved.is_empty() || open.is_empty() {
            return recon;
        }
        let Some(whole) = self.second_layer_span(b).filter(|s| s.proves()) else {
            return recon;
        };
        let taken: Vec<Vec<Value>> = proved.iter().map(|&i| recon.rows[i].clone()).collect();
        let Some(Rest {
            update: Some(update),
            unlabelled,
            ..
        }) = self.peeled_update(&taken, b)
        else {
            return recon;
        };
        if !unlabelled.is_empty() {
            return recon;
        }
        let Some(left) = self.span_of_rows_left(&update, b - proved.len(), b, whole.noise()) else {
            return recon;
        };
        // Two slots holding one row of the rows left: the first is proved, not both.
        let mut now_proved: Vec<Vec<Value>> = Vec::new();
        for slot in open {
            let row = &recon.rows[slot];
            let distance = left.distance(row);
            if !(distance < left.threshold(row))
                || now_proved.iter().any(|p| left.same_row(p, row))
                || left.proof(row, distance).is_err()
            {
                continue;
            }
            now_proved.push(row.clone());
            recon.provenance[slot] = Provenance::Proved;
            recon.unproved[slot] = None;
            if let Some(summary) = recon.second_layer.as_mut() {
                summary.peeled_rows += 1;
                summary.consistent_rows = summary.consistent_rows.saturating_sub(1);
            }
            if let Some(cells) = recon.entropy.as_mut().map(|e| &mut e[slot]) {
                entropy::agreed(self.dataset, cells);
            }
        }
        recon
    }

    /// The second layer's span of the `rows` rows left of a batch of `b` in `update` (what is left
    /// once the proved rows are peeled off it), read with the whole update's rounding (`noise`,
    /// G₂'s): None where it is refused or is not the rows left's whole (`Regime::Full`).
    pub(super) fn span_of_rows_left(
        &self,
        update: &crate::client::update::Update,
        rows: usize,
        b: usize,
        noise: f64,
    ) -> Option<ActivationSpan<'_>> {
        let (params, observed) = (&self.scenario.params, &self.scenario.observed);
        let sizes = &params.sizes;
        let left = ActivationSpan::new(
            self.dataset,
            &params.weights[0],
            &params.biases[0],
            update.weight(1),
            activation_span::present_categories(self.dataset, observed.weight(0), observed.bias(0)),
            SpanOf::Peeled {
                rows,
                rounding: noise * b as f64 / rows as f64,
            },
            (sizes[0], sizes[1], sizes[2]),
        )
        .ok()?
        .with_activation(self.config.activation);
        (left.regime() == Regime::Full).then_some(left)
    }

    /// A row just adopted as proved (`adopt`) that only fits the update: consistent, for `why`,
    /// its continuous values carrying no confidence.
    fn mark_consistent(&self, recon: &mut Reconstruction, slot: usize, why: Unproved) {
        recon.provenance[slot] = Provenance::Consistent;
        recon.unproved[slot] = Some(why);
        if let Some(cells) = recon.entropy.as_mut().map(|e| &mut e[slot]) {
            entropy::uncertain_continuous(self.dataset, cells);
        }
    }

    /// `recon` with every row proved, less those whose label the second layer's gradient does not
    /// give (`peel::Peeler::unlabelled`): where no row is left, peeling has nothing to catch a
    /// point between two rows with. Where the batch repeats rows (G₂'s rank below B) the labels
    /// cannot be read row by row, and nothing is checked.
    pub(super) fn check_labels(&self, mut recon: Reconstruction) -> Reconstruction {
        let b = recon.rows.len();
        let (params, model) = (&self.scenario.params, self.config.model());
        let unlabelled = peel::Peeler::new(params, model, &self.scenario.observed, b)
            .filter(|peeler| peeler.full())
            .and_then(|peeler| peeler.unlabelled(&self.encoded(&recon.rows)))
            .unwrap_or_default();
        self.unprove(&mut recon, &unlabelled);
        recon
    }

    /// Rows the second layer's certificate proves only with a label (`Reconstruction::
    /// pending_labels`, a span below the batch's rank): proved where the update gives each its
    /// label's residual, beside every row proved already (`peel::Peeler::unlabelled`); the
    /// others stay consistent, for the reason the certificate gave. A regression's label is any
    /// value and tells nothing here.
    fn settle_labels(&self, mut recon: Reconstruction) -> Reconstruction {
        let pending = std::mem::take(&mut recon.pending_labels);
        if pending.is_empty() || self.config.protocol != Protocol::Fedsgd || self.dataset.target.is_some() {
            return recon;
        }
        let b = recon.rows.len();
        let (params, model) = (&self.scenario.params, self.config.model());
        let Some(peeler) = peel::Peeler::new(params, model, &self.scenario.observed, b) else {
            return recon;
        };
        // Rows proved already stand with the pending ones in what the update must explain.
        let slots: Vec<usize> = (0..b).filter(|i| pending.contains(i) || recon.settled(*i)).collect();
        let rows: Vec<Vec<Value>> = slots.iter().map(|&i| recon.rows[i].clone()).collect();
        let Some(unlabelled) = peeler.unlabelled(&self.encoded(&rows)) else {
            return recon;
        };
        let labelled: Vec<usize> = (0..slots.len())
            .filter(|k| !unlabelled.contains(k))
            .map(|k| slots[k])
            .filter(|i| pending.contains(i))
            .collect();
        // A labelled row is proved where the theorem holds at the proof's precision, else near a
        // batch row (it held at half the scoring tolerance: `ActivationSpan::verdict`).
        let span = match labelled.is_empty() {
            true => None,
            false => self.second_layer_span(b),
        };
        for slot in labelled {
            let row = &recon.rows[slot];
            match span.as_ref().map(|s| s.proof(row, s.distance(row))) {
                Some(Ok(())) => {
                    recon.provenance[slot] = Provenance::Proved;
                    recon.unproved[slot] = None;
                    if let Some(summary) = recon.second_layer.as_mut() {
                        summary.certified_rows += 1;
                        summary.consistent_rows = summary.consistent_rows.saturating_sub(1);
                    }
                }
                Some(Err(Unproved::Imprecise)) => recon.unproved[slot] = Some(Unproved::Imprecise),
                // Read again, the theorem no longer holds: consistent, for the reason given.
                _ => continue,
            }
            if let Some(cells) = recon.entropy.as_mut().map(|e| &mut e[slot]) {
                entropy::agreed(self.dataset, cells);
            }
        }
        recon.row_labels = self.labels_of_rows(&recon.rows);
        recon
    }

    /// Rows in `slots` no longer counted proved (`Rest::unlabelled`): they fit the update
    /// (consistent), their categories stand (any point between two rows that share them has
    /// them), their continuous values carry no confidence.
    pub(super) fn unprove(&self, recon: &mut Reconstruction, slots: &[usize]) {
        for &slot in slots {
            // A near row was counted consistent already.
            let proved = recon.provenance[slot] == Provenance::Proved;
            recon.provenance[slot] = Provenance::Consistent;
            recon.unproved[slot] = Some(Unproved::Unlabelled);
            if let Some(summary) = recon.second_layer.as_mut().filter(|_| proved) {
                summary.certified_rows = summary.certified_rows.saturating_sub(1);
                summary.consistent_rows += 1;
            }
            if let Some(cells) = recon.entropy.as_mut().map(|e| &mut e[slot]) {
                entropy::uncertain_continuous(self.dataset, cells);
            }
        }
    }

    /// The unproved slots and their pooled rows, encoded.
    pub(super) fn free_slots(&self, recon: &Reconstruction, left: &[usize]) -> Vec<(usize, Vec<f32>)> {
        left.iter()
            .map(|&i| (i, encode_rows(self.dataset, std::slice::from_ref(&recon.rows[i]))))
            .collect()
    }

    /// `row` into free slot `at` where given, else the free slot whose pooled row is nearest it,
    /// as a proved row.
    pub(super) fn adopt(
        &self,
        recon: &mut Reconstruction,
        free: &mut Vec<(usize, Vec<f32>)>,
        row: &[Value],
        at: Option<usize>,
    ) -> Option<usize> {
        let x = encode_rows(self.dataset, &[row.to_vec()]);
        let distance = |pooled: &[f32]| -> f32 { pooled.iter().zip(&x).map(|(a, b)| (a - b) * (a - b)).sum() };
        let nearest = || (0..free.len()).min_by(|&a, &c| distance(&free[a].1).total_cmp(&distance(&free[c].1)));
        let pos = match at {
            Some(at) => free.iter().position(|(slot, _)| *slot == at),
            None => nearest(),
        }?;
        let (slot, _) = free.swap_remove(pos);
        recon.rows[slot] = row.to_vec();
        recon.provenance[slot] = Provenance::Proved;
        recon.unproved[slot] = None;
        if let Some(cells) = recon.entropy.as_mut().map(|e| &mut e[slot]) {
            entropy::agreed(self.dataset, cells);
        }
        Some(slot)
    }

    /// The unproved slots (`left`) filled with copies of the proved `distinct` rows (in slots
    /// `proved_at`), as many of each, and with the labels, as the update says (`peel::copies`).
    /// Every row then has its label.
    fn fill_copies(
        &self,
        mut recon: Reconstruction,
        distinct: &[Vec<Value>],
        proved_at: &[usize],
        left: &[usize],
    ) -> Reconstruction {
        let b = recon.rows.len();
        let (params, model) = (&self.scenario.params, self.config.model());
        let encoded = self.encoded(distinct);
        let Some(counts) = peel::copies(params, model, &self.scenario.observed, &encoded, b) else {
            return recon;
        };
        let mut free = self.free_slots(&recon, left);
        let mut labels: Vec<Option<usize>> = vec![None; b];
        let mut added = 0;
        for ((&at, row), n) in proved_at.iter().zip(distinct).zip(&counts) {
            let mut each: Vec<usize> = n
                .iter()
                .enumerate()
                .flat_map(|(c, &k)| std::iter::repeat_n(c, k))
                .collect();
            labels[at] = each.pop();
            for label in each {
                let Some(slot) = self.adopt(&mut recon, &mut free, row, None) else {
                    return recon;
                };
                labels[slot] = Some(label);
                added += 1;
            }
        }
        if let Some(summary) = recon.second_layer.as_mut() {
            summary.peeled_rows = added;
        }
        recon.row_labels = labels.into_iter().collect();
        recon
    }
}

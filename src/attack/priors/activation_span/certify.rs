//! The batch's rows certified one slot at a time: each pooled row refined towards the span and
//! judged (`ActivationSpan::verdict`), then the members' rows searched for the slots left.
use super::{ActivationSpan, Regime, SPARE_CHECKS, Unproved, row_key};
use crate::parallel::Next;
use crate::table::Value;

/// Refinements tried per row of the batch still missing, over the members' rows.
const TRIES_PER_ROW: usize = 200;
/// ...stopping after this many failures in a row: a search that finds nothing for so long will
/// not (an ensemble stopped after 3 steps on B = 128 would otherwise refine 25,000 rows).
const STALE_TRIES: usize = 400;

/// What the certificate made of one slot of the batch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Certified {
    /// Not adopted: the slot keeps the ensemble's row.
    No,
    /// Adopted and proved a row of the batch (`ActivationSpan::proof`); on FedAvg adopted for
    /// lying near the update's span, which proves nothing (`ActivationSpan::proves`).
    Yes,
    /// Adopted as a proved row is, the theorem holding in a span of the batch's rank only at half
    /// the scoring tolerance (`Unproved::Imprecise`): near a row of the batch, reported consistent.
    /// (Below the batch's rank such a row is `IfLabelled`, and near once labelled.)
    Near,
    /// Adopted, the theorem's conditions hold in a span of rank below the batch's
    /// (`Regime::Labelled`): proved only where the update also gives the row a label's residual
    /// (`assess::peeled`), else consistent for the reason given.
    IfLabelled(Unproved),
    /// Adopted, its activation in the span, and not proved: why.
    Fits(Unproved),
}

impl Certified {
    /// Adopted into its slot, proved or not.
    pub fn adopted(&self) -> bool {
        *self != Certified::No
    }
}

impl ActivationSpan<'_> {
    /// A refined row's verdict: in the span (to its threshold) and not one of `found`, then
    /// proved, proved once labelled, or only fitting the update; fitting only where the span
    /// leaves out directions too near the rounding to place (`fits_threshold`). FedAvg's
    /// adoption proves nothing and is not checked.
    pub fn verdict(&self, row: &[Value], distance: f64, found: &[Vec<Value>]) -> Certified {
        if self.among(row, found) {
            return Certified::No;
        }
        if !(distance < self.threshold(row)) {
            return match self.fits_threshold(row) {
                Some(fits) if distance < fits => Certified::Fits(Unproved::Unplaced),
                _ => Certified::No,
            };
        }
        match self.regime {
            Regime::Adoption => Certified::Yes,
            Regime::Full => match self.proof(row, distance) {
                Ok(()) => Certified::Yes,
                Err(Unproved::Imprecise) => Certified::Near,
                Err(why) => Certified::Fits(why),
            },
            Regime::Labelled { rank, uncertain, rows } => {
                let below = Unproved::RankBelowBatch { rank, uncertain, rows };
                match self.proof(row, distance) {
                    Err(why) if why != Unproved::Imprecise => Certified::Fits(why),
                    // A table without continuous values has no point between two rows, only copies.
                    _ if self.continuous.is_empty() => Certified::Yes,
                    // A smooth activation's rank falls short where it is nearly affine at these
                    // weights, not where rows share a pattern: mixtures of rows fit, and no
                    // label tells them apart.
                    _ if !self.activation.is_piecewise_linear() => Certified::Fits(below),
                    // Proved or near a batch row once a label rules out a point between two rows
                    // (`assess::peeled` holds it to the proof's precision then).
                    _ => Certified::IfLabelled(below),
                }
            }
        }
    }
}

/// The batch's rows certified: `pooled` (the ensemble's reconstruction) refined and adopted where
/// the certificate holds; a slot whose row refines to one already found (two pooled rows near the
/// same batch row) takes the next proved row refined from `candidates` (the members' rows),
/// nearest the span first. A pooled row that refines into the span without a proof keeps its slot
/// as fitting the update (`Certified::Fits`); a candidate must be proved to take a slot (or fit a
/// span of rank below the batch's, whose unproved points are isolated), so the points of one
/// unprovable line do not crowd out rows; once the proved ones have, a candidate at an isolated
/// point (`isolated`: narrow networks over few columns) takes a slot left, consistent.
/// `proved`: per slot, whether its row is proved already (by the first layer): it is kept as it
/// is and not refined again (refining is most of a proved attack's time). Returns, per slot, what
/// this made of its row.
pub fn certify_batch(
    span: &ActivationSpan,
    pooled: &mut [Vec<Value>],
    candidates: Vec<Vec<Value>>,
    proved: &[bool],
) -> Vec<Certified> {
    let mut found: Vec<Vec<Value>> = pooled
        .iter()
        .zip(proved)
        .filter(|(_, p)| **p)
        .map(|(row, _)| row.clone())
        .collect();
    let mut certified = vec![Certified::No; pooled.len()];
    // Each pooled row refines on its own (nothing to avoid): all at once, adopted in order.
    let slots: Vec<usize> = (0..pooled.len()).filter(|&s| !known(proved, s)).collect();
    let refined = crate::parallel::map(&slots, |&slot| span.refine(&pooled[slot], &[]));
    for (slot, (refined, distance)) in slots.into_iter().zip(refined) {
        certified[slot] = span.verdict(&refined, distance, &found);
        if certified[slot].adopted() {
            found.push(refined.clone());
            pooled[slot] = refined;
        }
    }
    let missing = open_slots(&certified, proved).len();
    // Nothing of the ensemble's passes: it has not found the batch, and neither will its members,
    // unless the first layer's span leads them (`first_layer`: wider basins).
    if missing == 0 || (found.is_empty() && span.first_layer.is_none()) {
        return certified;
    }
    let mut distinct = rustc_hash::FxHashSet::default();
    let rows: Vec<Vec<Value>> = candidates
        .into_iter()
        .filter(|row| !span.among(row, &found) && distinct.insert(row_key(row)))
        .collect();
    let distances = crate::parallel::map(&rows, |row| span.distance(row));
    let mut ranked: Vec<(f64, Vec<Value>)> = distances.into_iter().zip(rows).collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
    ranked.truncate(missing * TRIES_PER_ROW);
    let ranked: Vec<Vec<Value>> = ranked.into_iter().map(|(_, row)| row).collect();
    // Proved rows take the open slots first; then rows that fit the span at an isolated point
    // (`isolated`), held as consistent, take what is left. The second pass refines again, since
    // its refinements avoid the rows the first one found.
    for few in [false, true] {
        let open = open_slots(&certified, proved);
        if open.is_empty() || (few && !matches!(span.regime, Regime::Full)) {
            break;
        }
        walk(span, &ranked, pooled, &mut found, &mut certified, open, few);
    }
    certified
}

/// Whether the first layer proved the row in `slot` (`proved` may be shorter than the batch).
fn known(proved: &[bool], slot: usize) -> bool {
    proved.get(slot).copied().unwrap_or(false)
}

/// The slots neither known (`proved`) nor adopted yet.
fn open_slots(certified: &[Certified], proved: &[bool]) -> Vec<usize> {
    (0..certified.len())
        .filter(|&s| certified[s] == Certified::No && !known(proved, s))
        .collect()
}

/// A refined candidate whose own live units give more checks than the values it fits, fewer than
/// a proof needs: an isolated point of the span, as a row of the batch is, though not a proved one.
fn isolated(verdict: &Certified) -> bool {
    matches!(verdict, Certified::Fits(Unproved::FewChecks { checks, needed }) if checks + SPARE_CHECKS > *needed)
}

/// The ranked candidates refined in turn into the `open` slots: a proved (or, below the batch's
/// rank, any fitting) row takes the next slot; with `few`, an `isolated` one too.
fn walk(
    span: &ActivationSpan,
    ranked: &[Vec<Value>],
    pooled: &mut [Vec<Value>],
    found: &mut Vec<Vec<Value>>,
    certified: &mut [Certified],
    open: Vec<usize>,
    few: bool,
) {
    let mut open = open.into_iter();
    let mut slot = open.next();
    let mut stale = 0;
    // Each candidate refined against the rows found before it, as a loop over them would; the
    // refinements run ahead on every core (`parallel::walk_ahead`).
    crate::parallel::walk_ahead(
        ranked,
        found,
        |row, found| span.refine(row, found),
        |(refined, distance), found| {
            let Some(s) = slot else { return Next::Stop };
            if stale == STALE_TRIES {
                return Next::Stop;
            }
            stale += 1;
            let verdict = span.verdict(&refined, distance, found);
            // A rank below the batch's leaves isolated points, not lines: they may take a slot
            // (consistent, or proved once a label decides).
            let below = matches!(span.regime, Regime::Labelled { .. });
            let takes = match verdict {
                Certified::Yes | Certified::Near | Certified::IfLabelled(_) => true,
                Certified::Fits(_) => below || (few && isolated(&verdict)),
                Certified::No => false,
            };
            if !takes {
                return Next::Same;
            }
            stale = 0;
            found.push(refined.clone());
            pooled[s] = refined;
            certified[s] = verdict;
            slot = open.next();
            Next::Changed
        },
    );
}

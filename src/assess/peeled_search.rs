//! The rows left searched for again on what is left of the update once the proved rows are
//! peeled off it, round after round. Each row proved and peeled takes its directions out of both
//! layers' spans: the rows left's second-layer span leaves more checks per row, their first-layer
//! span fewer free directions, and a refinement from a start far from any row reaches one more
//! often. Where the first layer's span holds every row left (`with_first_layer`), the open
//! slots' rows and rows drawn from the table's marginals are refined on the rows left's spans;
//! a row the certificate proves there is a row of the batch (the theorem on the rows left's span,
//! as `assess::peeled::prove_left` reads it), adopted and peeled with the others before the
//! next round.
//!
//! Why: on a table of 40 continuous columns ([100, 100], B = 32) the ensemble's rows were 0.5-1
//! std off per cell; the whole span's certificate proved 4 rows of 32 from them. In
//! `scripts/first_layer_basin.py`'s model a start 0.8 std off reached its row in 21 % of tries
//! with no row peeled, 64 % with 8 of 32 peeled, 91 % with 16 (docs/results/continuous.md).
use crate::attack::baselines::random_rows;
use crate::attack::inversion::setup::Setup;
use crate::attack::priors::activation_span::ActivationSpan;
use crate::attack::priors::activation_span::Unproved;
use crate::attack::priors::activation_span::certify::Certified;
use crate::attack::priors::activity::{self, ActivitySolver};
use crate::attack::priors::spectrum::Rank;
use crate::attack::priors::subspace::{DEFAULT_SUBSPACE_WEIGHT, Subspace};
use crate::parallel::{self, Next};
use crate::report::Provenance;
use crate::seed::seed_for;
use crate::table::number::TOLERANCE_FACTOR;
use crate::table::{Value, encode_rows};

use super::reconstruct::Reconstruction;

/// Rounds of peeling the rows found and searching again.
const ROUNDS: usize = 64;
/// Rows drawn from the marginals per row left, as starts beside the open slots' rows.
const STARTS_PER_ROW: usize = 128;
/// A round stops after this many refinements in a row that prove nothing.
const STALE: usize = 500;

impl Setup<'_> {
    /// `recon` with rows of its open slots (the ensemble's) replaced by rows proved on the rows
    /// left's spans, where the first layer's span is read exactly (`first_layer_read_exactly`)
    /// and the attack peels (`peels`). The whole batch need not fit the first layer's span: on
    /// a table of fewer encoded columns than rows, the rows left once some are peeled may.
    /// Each adopted row is proved and counted in the second layer's `peeled_rows`.
    pub(crate) fn search_left(&self, mut recon: Reconstruction) -> Reconstruction {
        let b = recon.rows.len();
        if !self.peels() || !self.first_layer_read_exactly() {
            return recon;
        }
        let Some(whole) = self.second_layer_span(b).filter(|s| s.proves()) else {
            return recon;
        };
        let mut adopted = 0;
        for round in 0..ROUNDS {
            let proved: Vec<usize> = (0..b).filter(|&i| recon.provenance[i] == Provenance::Proved).collect();
            let open: Vec<usize> = (0..b)
                .filter(|&i| recon.provenance[i] == Provenance::Ensemble)
                .collect();
            if proved.is_empty() || open.is_empty() {
                break;
            }
            let taken: Vec<Vec<Value>> = proved.iter().map(|&i| recon.rows[i].clone()).collect();
            let open_rows: Vec<Vec<Value>> = open.iter().map(|&i| recon.rows[i].clone()).collect();
            let Some((left, by_pattern)) = self.span_left_of(&taken, b, whole.noise(), &open_rows) else {
                break;
            };
            let rows_left = b - proved.len();
            // The rows the first layer's ReLU pattern gives first: they are the rows left exactly,
            // where it finds them, and the certificate still decides.
            let mut candidates: Vec<Vec<Value>> = by_pattern;
            candidates.extend(open_rows);
            if self.dataset.n() > 0 {
                let draws = rows_left * STARTS_PER_ROW;
                candidates.extend(random_rows(
                    self.dataset,
                    draws,
                    seed_for(self.config.seed, 17 + round as u64),
                ));
            }
            let distances = parallel::map(&candidates, |row| left.distance(row));
            let mut ranked: Vec<(f64, Vec<Value>)> = distances.into_iter().zip(candidates).collect();
            ranked.sort_by(|a, c| a.0.total_cmp(&c.0));
            let ranked: Vec<Vec<Value>> = ranked.into_iter().map(|(_, row)| row).collect();
            let mut found: Vec<Vec<Value>> = taken.clone();
            let mut new_rows: Vec<Vec<Value>> = Vec::new();
            let mut stale = 0;
            parallel::walk_ahead(
                &ranked,
                &mut found,
                |row, found| left.refine(row, found),
                |(row, distance), found| {
                    if new_rows.len() == open.len() || stale == STALE {
                        return Next::Stop;
                    }
                    stale += 1;
                    if left.verdict(&row, distance, found) != Certified::Yes {
                        return Next::Same;
                    }
                    stale = 0;
                    found.push(row.clone());
                    new_rows.push(row);
                    Next::Changed
                },
            );
            if new_rows.is_empty() {
                break;
            }
            let mut free = self.free_slots(&recon, &open);
            for row in &new_rows {
                // A row the update placed near a batch row already (`Unproved::Imprecise`) may be
                // the one just proved: that slot is proved, not an open one, whose row would be lost.
                let near = self.near_slot(&recon, row);
                if let Some(slot) = near {
                    free.push((slot, Vec::new()));
                }
                if self.adopt(&mut recon, &mut free, row, near).is_none() {
                    break;
                }
                adopted += 1;
                if let Some(summary) = recon.second_layer.as_mut() {
                    summary.peeled_rows += 1;
                }
            }
        }
        if adopted == 0 {
            return recon;
        }
        // A proved row whose label the update does not give may be a point between two rows of
        // the batch: no longer counted proved, as `peel_found` does.
        let proved: Vec<usize> = (0..b).filter(|&i| recon.provenance[i] == Provenance::Proved).collect();
        if proved.len() == b {
            recon = self.check_labels(recon);
        } else {
            let taken: Vec<Vec<Value>> = proved.iter().map(|&i| recon.rows[i].clone()).collect();
            let unlabelled: Vec<usize> = self
                .peeled_update(&taken, b)
                .map(|rest| rest.unlabelled.iter().map(|&p| proved[p]).collect())
                .unwrap_or_default();
            self.unprove(&mut recon, &unlabelled);
        }
        recon.row_labels = self.labels_of_rows(&recon.rows);
        recon
    }

    /// The slot of a row kept as near a batch row (`Unproved::Imprecise`: within half the scoring
    /// tolerance) that `row` is within half that tolerance of, its categories the same.
    fn near_slot(&self, recon: &Reconstruction, row: &[Value]) -> Option<usize> {
        let x = encode_rows(self.dataset, &[row.to_vec()]);
        let half = (TOLERANCE_FACTOR / 2.0) as f32;
        (0..recon.rows.len()).find(|&i| {
            recon.provenance[i] != Provenance::Proved
                && recon.unproved[i] == Some(Unproved::Imprecise)
                && encode_rows(self.dataset, std::slice::from_ref(&recon.rows[i]))
                    .iter()
                    .zip(&x)
                    .all(|(a, b)| (a - b).abs() <= half)
        })
    }

    /// The second layer's span of the rows left once `taken` (proved rows of a batch of `b`) are
    /// peeled off the update, its refinement kept within their first layer's span: None where
    /// a peel does not go through, a proved row's label is not given, the span is not the rows
    /// left's whole (`Regime::Full`) or their first layer's rank is not theirs for certain.
    /// `noise`: the whole update's second-layer rounding, which what is left carries. With it, the
    /// rows left as the first layer's ReLU pattern gives them (`rows_by_pattern`), `open` (the
    /// open slots' rows) as candidates.
    fn span_left_of(
        &self,
        taken: &[Vec<Value>],
        b: usize,
        noise: f64,
        open: &[Vec<Value>],
    ) -> Option<(ActivationSpan<'_>, Vec<Vec<Value>>)> {
        let rest = self.peeled_update(taken, b)?;
        if !rest.unlabelled.is_empty() {
            return None;
        }
        let update = rest.update?;
        let rows = b - taken.len();
        let left = self.span_of_rows_left(&update, rows, b, noise)?;
        let (params, sizes) = (&self.scenario.params, &self.scenario.params.sizes);
        // What is left carries the whole first layer's rounding, scaled as the second layer's.
        let whole = self.subspace.as_ref()?.spectrum.noise;
        let first = Subspace::from_peeled_update(
            update.weight(0),
            update.bias(0),
            (sizes[0], sizes[1]),
            Some(&self.layout),
            (rows, DEFAULT_SUBSPACE_WEIGHT, self.config.update_source(params)),
            whole * b as f64 / rows as f64,
        );
        let holds = first.exact && first.summary.off.is_none() && first.spectrum.rank() == Rank::Certain(rows);
        holds.then(|| {
            let basis = first.rows_basis(&self.layout);
            let by_pattern = self.rows_by_pattern(&update, &first, rows, open);
            let left = left.with_first_layer(basis, (first.spectrum.clone(), first.rank()));
            (left, by_pattern)
        })
    }

    /// The rows left as the first layer's ReLU pattern gives them (`activity::ActivitySolver` on
    /// what is left of the update, `open` as candidates): where the rows left are few, random
    /// subsets of the units find their δ's with no candidate near. Not proofs: candidates for
    /// the certificate on the rows left's spans.
    fn rows_by_pattern(
        &self,
        update: &crate::client::update::Update,
        first: &Subspace,
        rows: usize,
        open: &[Vec<Value>],
    ) -> Vec<Vec<Value>> {
        let (params, sizes) = (&self.scenario.params, &self.scenario.params.sizes);
        let Some(v) = first.hyperplane.as_ref() else {
            return Vec::new();
        };
        let Some(solver) = ActivitySolver::new(
            update.weight(0),
            &params.weights[0],
            &params.biases[0],
            v,
            (sizes[0], sizes[1], rows),
            &self.layout,
            activity::precision_steps(self.dataset),
        ) else {
            return Vec::new();
        };
        let solved = solver.solve(&encode_rows(self.dataset, open));
        solved
            .rows
            .iter()
            .map(|row| self.dataset.decode(&row.iter().map(|&v| v as f32).collect::<Vec<_>>()))
            .collect()
    }
}

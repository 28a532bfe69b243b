//! The rows no proof reached placed by every direction of the second layer's span the update
//! shows above its noise. On a trained network the rows the network is sure of send gradients a
//! thousand times smaller than its unsure rows', and their directions of G₂'s span lie between
//! the noise bound η and the `SEPARATION`·η a proof needs: the certificate reads the span cut
//! above them and calls the rows it finds there consistent, only fitting (`Unproved::Unplaced`).
//! That cut span tells such a row badly from a wrong one. The span of every direction above η
//! (the batch's rows at most) tells them apart: on HI ([100, 100], B = 32, trained 5 epochs,
//! seed 5, 27 of 32 directions determined) every batch row lay within 3·10⁻⁴ (relative) of it,
//! and the 11 wrong rows the certificate left within 1–12·10⁻² of it.
//!
//! So each row no proof reached is refined towards that span (its categories by descent, its
//! continuous values by least squares, `ActivationSpan::refine`) and moved where it then lies
//! `NEARER` times nearer; and rows are harvested from it: the table's rows (outside the batch)
//! refined there, avoiding the rows the reconstruction has, each taking the slot whose row lies
//! farthest off, at least `NEARER` times as far. A row the span holds badly (a batch's row at
//! 6·10⁻² on the Adult sample trained 20 epochs) is not moved by a small gain in it. Both moves
//! are kept only where the reconstruction's gradient fits the update no more than `LOUDER` times
//! worse than before: the span says nothing of a row's label, and a row placed in a slot of the
//! other label sends a gradient the update does not hold (HI seed 5: 1 − cos 3·10⁻⁶ → 0.15). A
//! row placed so is consistent with the update, never proved: the directions it lies along are
//! not determined (`Unproved::Unplaced`). Measured in docs/results/rounds.md.
use crate::assess::polish::polishable;
use crate::assess::reconstruct::Reconstruction;
use crate::assess::update_choice::move_entropy;
use crate::attack::inversion::setup::Setup;
use crate::attack::priors::activation_span::{ActivationSpan, Unproved};
use crate::report::Provenance;
use crate::table::{FeatureKind, Value};

/// Table rows (outside the batch, evenly spaced) whose continuous values are fitted to the span
/// as starts, and how many least-squares rounds each gets.
const STARTS: usize = 800;
const START_ROUNDS: usize = 10;
/// The starts nearest the span after their fit, refined fully (categories too).
const REFINED: usize = 200;
/// Every tuple of categories is a start where the table's categorical columns allow this many
/// at most (HI 1,152; Adult's are 10⁸), each with the continuous values of this many of the
/// table's rows.
const TUPLES: usize = 4096;
const CONTINUOUS_STARTS: usize = 4;
/// The nearest tuples of categories started again, and from how many of the table's rows'
/// continuous values each (`twin_starts`).
const TWIN_TUPLES: usize = 64;
const TWIN_BASES: usize = 16;
/// Harvests at most; they end where one places no row.
const HARVESTS: usize = 3;
/// A row refined, or harvested into a slot, is moved only where it lies this many times nearer
/// the span than the slot's row.
const NEARER: f64 = 10.0;
/// The most the reconstruction's 1 − cos may grow by a row placed (a row of the other label's
/// residual grows it by orders of magnitude; a right row among wrong ones leaves it about as it
/// was: HI seed 5, 3.10 → 3.11·10⁻⁶).
const LOUDER: f64 = 2.0;

impl Setup<'_> {
    /// `recon` with its rows no proof reached placed by the span of every direction above the
    /// noise, as the module says; as it was where the update is not a FedSGD classifier's sum of
    /// its rows' gradients (`may_invert_left`) or every direction is determined.
    pub(super) fn place_in_span(&self, mut recon: Reconstruction) -> Reconstruction {
        let b = recon.rows.len();
        let free: Vec<usize> = (0..b).filter(|&i| polishable(&recon, i)).collect();
        if !self.may_invert_left() || free.is_empty() || b != self.config.rows() {
            return recon;
        }
        let Some(span) = self.second_layer_span(b).and_then(ActivationSpan::every_direction) else {
            return recon;
        };
        let label_of = self.labels_paired(&recon);
        let before = recon.rows.clone();
        let mut rows = recon.rows.clone();
        let mut fit = self.fits_without(&rows, &[], &label_of).0;
        let keep = |rows: &mut Vec<Vec<Value>>, i: usize, row: Vec<Value>, fit: &mut f64| -> bool {
            let mut trial = rows.clone();
            trial[i] = row;
            let f = self.fits_without(&trial, &[], &label_of).0;
            let kept = f <= LOUDER * *fit;
            if kept {
                *rows = trial;
                *fit = f;
            }
            kept
        };
        for &i in &free {
            let avoid: Vec<Vec<Value>> = (0..b).filter(|&j| j != i).map(|j| rows[j].clone()).collect();
            let (row, distance) = span.refine(&rows[i], &avoid);
            if NEARER * distance <= span.distance(&rows[i]) {
                keep(&mut rows, i, row, &mut fit);
            }
        }
        let starts = self.span_starts(&span);
        for _ in 0..HARVESTS {
            let mut placed = 0;
            for (distance, row) in self.harvest(&span, &starts, &rows) {
                let mut slots: Vec<(f64, usize)> = (free.iter())
                    .map(|&i| (span.distance(&rows[i]), i))
                    .filter(|&(d, _)| d > NEARER * distance)
                    .collect();
                slots.sort_by(|a, b| b.0.total_cmp(&a.0));
                if slots
                    .into_iter()
                    .any(|(_, i)| keep(&mut rows, i, row.clone(), &mut fit))
                {
                    placed += 1;
                }
            }
            if placed == 0 {
                break;
            }
        }
        let moved: Vec<usize> = (free.iter().copied())
            .filter(|&i| !self.dataset.same_row(&rows[i], &before[i]))
            .collect();
        if moved.is_empty() {
            return recon;
        }
        if let Some(entropy) = recon.entropy.as_mut() {
            move_entropy(self.dataset, entropy, &(0..b).collect::<Vec<_>>(), &before, &rows);
        }
        for &i in &moved {
            recon.provenance[i] = Provenance::Consistent;
            recon.unproved[i] = Some(Unproved::Unplaced);
        }
        self.recheck_moved_near(&mut recon, &rows, Unproved::Unplaced);
        recon.rows = rows;
        recon.row_labels = self.labels_of_rows(&recon.rows);
        recon
    }

    /// The harvest's starts: the table's rows outside the batch (`STARTS` at most, evenly
    /// spaced) and, where the table's categories allow few tuples, every tuple
    /// (`tuple_starts`), with their continuous values fitted to the span, the nearest tuples
    /// again from more values (`twin_starts`); the `REFINED` nearest, each row once. They do
    /// not depend on the rows the reconstruction has, so every harvest shares them.
    fn span_starts(&self, span: &ActivationSpan) -> Vec<Vec<Value>> {
        let outside = self.rows_outside_batch();
        let step = (outside.len() / STARTS).max(1);
        let table = outside.iter().step_by(step).map(|&k| self.dataset.rows[k].clone());
        let fit = |starts: Vec<Vec<Value>>| -> Vec<(f64, Vec<Value>)> {
            (starts.iter())
                .map(|start| {
                    let (row, distance) = span.fitted(start, START_ROUNDS);
                    (distance, row)
                })
                .collect()
        };
        let mut fitted = fit(table.chain(self.tuple_starts(&outside)).collect());
        // Rows that share their categories with another: each of the nearest tuples started
        // again from more of the table's continuous values.
        let again = self.twin_starts(&self.nearest_distinct(&mut fitted), &outside);
        fitted.extend(fit(again));
        self.nearest_distinct(&mut fitted)
    }

    /// The first `TWIN_TUPLES` tuples of categories among `starts`, each with the continuous
    /// values of `TWIN_BASES` of the table's rows. Rows of the batch that share their categories
    /// lie on one tuple's values, and its few starts may all land on one of them (HI, trained 5
    /// epochs, seeds 3 and 7: one row each, found this way).
    fn twin_starts(&self, starts: &[Vec<Value>], outside: &[usize]) -> Vec<Vec<Value>> {
        let mut tuples: Vec<&Vec<Value>> = Vec::new();
        for row in starts {
            let same = |t: &&Vec<Value>| categories(t).eq(categories(row));
            if tuples.len() < TWIN_TUPLES && !tuples.iter().any(same) {
                tuples.push(row);
            }
        }
        let bases = self.spaced_rows(outside, TWIN_BASES, true);
        tuples.into_iter().flat_map(|t| on_bases(t, &bases)).collect()
    }

    /// `n` of the table's rows `outside` the batch, evenly spaced; `between`: offset by half a
    /// step, so that they are other rows than those spaced from the first.
    fn spaced_rows(&self, outside: &[usize], n: usize, between: bool) -> Vec<&Vec<Value>> {
        let step = (outside.len() / n).max(1);
        let skip = if between { step / 2 } else { 0 };
        (outside.iter().skip(skip).step_by(step).take(n))
            .map(|&k| &self.dataset.rows[k])
            .collect()
    }

    /// The `REFINED` nearest of `fitted` (distance, row), each row once: where starts that land
    /// on one row counted for each, a row of many starts took the places of the rest (HI seed 1,
    /// trained 5 epochs: 4 of every tuple's starts landed on one row, and a row that shares its
    /// categories with another was never started).
    fn nearest_distinct(&self, fitted: &mut [(f64, Vec<Value>)]) -> Vec<Vec<Value>> {
        fitted.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut starts: Vec<Vec<Value>> = Vec::with_capacity(REFINED);
        for (_, row) in fitted.iter() {
            if starts.len() == REFINED {
                break;
            }
            if !starts.iter().any(|r| self.dataset.same_row(r, row)) {
                starts.push(row.clone());
            }
        }
        starts
    }

    /// Every tuple of the table's categories, where they number `TUPLES` at most, each with the
    /// continuous values of `CONTINUOUS_STARTS` of the table's rows (evenly spaced among
    /// `outside`); none where they are more. The table's own rows miss tuples a batch holds (HI,
    /// 1,152 tuples: seed 1's trained batch left 1 of its 32 rows unfound from 800 table rows;
    /// from every tuple, each of its rows' tuples was among the 28 nearest).
    fn tuple_starts(&self, outside: &[usize]) -> Vec<Vec<Value>> {
        let sizes: Vec<(usize, usize)> = (self.dataset.features.iter().enumerate())
            .filter_map(|(f, feature)| match &feature.kind {
                FeatureKind::Categorical { categories } => Some((f, categories.len())),
                FeatureKind::Continuous { .. } => None,
            })
            .collect();
        let tuples = sizes.iter().try_fold(1usize, |n, &(_, k)| n.checked_mul(k));
        let Some(tuples) = tuples.filter(|&n| n <= TUPLES) else {
            return Vec::new();
        };
        let bases = self.spaced_rows(outside, CONTINUOUS_STARTS, false);
        let Some(&first) = bases.first() else {
            return Vec::new();
        };
        (0..tuples)
            .flat_map(|t| {
                let mut tuple = first.clone();
                let mut rest = t;
                for &(f, k) in &sizes {
                    tuple[f] = Value::Cat((rest % k) as u32);
                    rest /= k;
                }
                on_bases(&tuple, &bases)
            })
            .collect()
    }

    /// Rows of the span that `rows` do not hold, nearest first, with their distances: each of
    /// `starts` refined avoiding `rows`, each row found once.
    fn harvest(&self, span: &ActivationSpan, starts: &[Vec<Value>], rows: &[Vec<Value>]) -> Vec<(f64, Vec<Value>)> {
        let mut found: Vec<(f64, Vec<Value>)> = Vec::new();
        for start in starts {
            let (row, distance) = span.refine(start, rows);
            if distance.is_finite() && !found.iter().any(|(_, r)| self.dataset.same_row(r, &row)) {
                found.push((distance, row));
            }
        }
        found.sort_by(|a, b| a.0.total_cmp(&b.0));
        found
    }
}

/// A row's categorical cells, in order.
fn categories(row: &[Value]) -> impl Iterator<Item = &Value> {
    row.iter().filter(|v| matches!(v, Value::Cat(_)))
}

/// `tuple`'s categories with the continuous values of each of `bases`: one start per base.
fn on_bases(tuple: &[Value], bases: &[&Vec<Value>]) -> Vec<Vec<Value>> {
    (bases.iter())
        .map(|base| {
            (tuple.iter().zip(base.iter()))
                .map(|(t, b)| if matches!(t, Value::Cat(_)) { *t } else { *b })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Dataset;

    /// The Adult sample without its three widest categorical columns (education with the number
    /// it determines, occupation, native-country): 2,940 tuples of categories, few enough to
    /// start from each.
    fn narrow_sample() -> Dataset {
        crate::table::adult_sample_without(&["education", "education-num", "occupation", "native-country"])
    }

    /// Where the table's categories allow few tuples, each is a start `CONTINUOUS_STARTS` times;
    /// where they allow many (the whole sample's), none is.
    #[test]
    fn every_tuple_is_a_start_where_the_tuples_are_few() {
        let count = |data: &Dataset| {
            let config = crate::config::AttackConfig {
                batch_size: 16,
                hidden: vec![32, 32],
                ..Default::default()
            };
            let scenario = pollster::block_on(crate::scenario::Scenario::of_rows(data, &config)).unwrap();
            let runtime = crate::runtime::Runtime::cpu();
            let setup = Setup::new(&runtime, data, &config, scenario);
            let starts = setup.tuple_starts(&setup.rows_outside_batch());
            let tuples: std::collections::HashSet<Vec<u32>> = (starts.iter())
                .map(|row| {
                    (row.iter())
                        .filter_map(|v| match v {
                            Value::Cat(c) => Some(*c),
                            Value::Num(_) => None,
                        })
                        .collect()
                })
                .collect();
            (starts.len(), tuples.len())
        };
        let data = narrow_sample();
        let tuples: usize = (data.features.iter())
            .map(|f| match &f.kind {
                FeatureKind::Categorical { categories } => categories.len(),
                FeatureKind::Continuous { .. } => 1,
            })
            .product();
        assert!((1000..=TUPLES).contains(&tuples), "{tuples} tuples");
        assert_eq!(count(&data), (tuples * CONTINUOUS_STARTS, tuples));
        assert_eq!(count(&crate::table::adult_sample()), (0, 0));
    }

    /// The narrow sample's batch of 32 on [100, 100] trained 20 epochs (`seed`), the span of
    /// every direction of its second layer's update, the harvest's starts and the batch's rows.
    fn trained_narrow_batch<T>(seed: u64, f: impl FnOnce(&ActivationSpan, Vec<Vec<Value>>, &[Vec<Value>]) -> T) -> T {
        let data = narrow_sample();
        let config = crate::config::AttackConfig {
            batch_size: 32,
            hidden: vec![100, 100],
            training_epochs: 20,
            seed,
            ..Default::default()
        };
        let scenario = pollster::block_on(crate::scenario::Scenario::of_rows(&data, &config)).unwrap();
        let runtime = crate::runtime::Runtime::cpu();
        let setup = Setup::new(&runtime, &data, &config, scenario);
        let truth = &setup.scenario.truth.as_ref().unwrap().rows;
        let span = (setup.second_layer_span(truth.len()))
            .and_then(ActivationSpan::every_direction)
            .expect("the trained batch's span leaves directions undetermined");
        f(&span, setup.span_starts(&span), truth)
    }

    /// Seed 6: the span of every direction takes those above the noise its tail shows, all 32 of
    /// the batch's, and every row lies within 2.5·10⁻³ of it; read above η it took 31, and two
    /// rows lay 2·10⁻² and 4·10⁻² off it, as far as wrong rows lie.
    #[test]
    fn every_direction_is_read_above_the_noise_its_tail_shows() {
        trained_narrow_batch(6, |span, _, truth| {
            assert_eq!(span.rank(), truth.len());
            for (i, row) in truth.iter().enumerate() {
                assert!(span.distance(row) < 2.5e-3, "row {i}: {:.1e}", span.distance(row));
            }
        });
    }

    /// Seed 3, whose span of every direction holds 30 of its rows: each of those rows'
    /// categories is a start's, and each row that shares its categories with no other row of the
    /// batch is a start. From the table's rows alone, three such rows (no row outside the batch
    /// has their categories) were not; of the 18 rows sharing their categories, one is not.
    #[test]
    fn the_starts_hold_the_categories_of_every_row_the_span_holds() {
        trained_narrow_batch(3, |span, starts, truth| {
            let same = |a: &Vec<Value>, b: &Vec<Value>| categories(a).eq(categories(b));
            let held: Vec<usize> = (0..truth.len()).filter(|&i| span.distance(&truth[i]) < 1e-3).collect();
            assert!(held.len() >= 28, "rows the span holds: {held:?}");
            for &i in &held {
                let alone = (0..truth.len()).all(|j| j == i || !same(&truth[j], &truth[i]));
                assert!(starts.iter().any(|r| same(r, &truth[i])), "row {i}'s categories");
                assert!(
                    !alone || starts.iter().any(|r| span.same_row(r, &truth[i])),
                    "row {i}, alone in its categories"
                );
            }
        });
    }

    /// Seed 4, whose span of every direction holds all 32 rows: each is a start. Without the
    /// nearest tuples started again (`twin_starts`), row 5, which shares its categories with
    /// another, was not.
    #[test]
    fn rows_sharing_their_categories_are_started_from_more_values() {
        trained_narrow_batch(4, |span, starts, truth| {
            for (i, row) in truth.iter().enumerate() {
                assert!(span.distance(row) < 1e-3, "row {i} is held");
                assert!(starts.iter().any(|r| span.same_row(r, row)), "row {i}");
            }
        });
    }

    /// The trained sample batch (B = 16 on [32, 32], trained 20 epochs: G₂ shows directions
    /// between its noise and what a proof needs), the row the cut span holds worst among those
    /// every direction places moved off in one category and every continuous cell: the span of
    /// every direction places the batch's row back in its slot, consistent, and the other rows
    /// stay as they are (among them one the span holds badly and one below the noise).
    #[test]
    fn a_quiet_row_moved_off_is_placed_back() {
        crate::assess::with_trained_sample_batch(|setup, truth, labels, _| {
            let b = truth.len();
            let span = setup.second_layer_span(b).and_then(ActivationSpan::every_direction);
            assert!(
                span.is_some(),
                "the trained batch's span leaves directions undetermined"
            );
            let (cut, wide) = (setup.second_layer_span(b).unwrap(), span.unwrap());
            // The row the cut span holds worst among those every direction places.
            let quietest = (0..b)
                .filter(|&i| wide.distance(&truth[i]) < 1e-3)
                .max_by(|&i, &j| cut.distance(&truth[i]).total_cmp(&cut.distance(&truth[j])))
                .unwrap();
            assert!(cut.distance(&truth[quietest]) > NEARER * wide.distance(&truth[quietest]));
            let data = setup.dataset;
            let mut rows = truth.clone();
            let mut moved_category = false;
            for (f, feature) in data.features.iter().enumerate() {
                match (&feature.kind, rows[quietest][f]) {
                    (crate::table::FeatureKind::Categorical { categories }, Value::Cat(c))
                        if !moved_category && categories.len() > 2 =>
                    {
                        rows[quietest][f] = Value::Cat((c + 1) % categories.len() as u32);
                        moved_category = true;
                    }
                    (crate::table::FeatureKind::Continuous { .. }, Value::Num(v)) => {
                        rows[quietest][f] = Value::Num(v + 0.3 * data.std[feature.offset]);
                    }
                    _ => {}
                }
            }
            assert!(!data.same_row(&rows[quietest], &truth[quietest]));
            let out = setup.place_in_span(crate::assess::consistent_rows(setup, &rows, &labels));
            for i in 0..b {
                assert!(data.same_row(&out.rows[i], &truth[i]), "row {i} (moved: {quietest})");
            }
            assert_eq!(out.unproved[quietest], Some(Unproved::Unplaced));
        });
    }
}

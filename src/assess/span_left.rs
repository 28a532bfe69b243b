//! The first layer's span's rows that no row of the reconstruction holds, placed by the update.
//!
//! Where the span's rank is certain and the batch's and every category was searched
//! (`assess::enumerated`), every row of the batch is one of the span's rows, up to the
//! continuous directions the span leaves free (two rows of the batch that share their categories
//! put their difference there, so a row held may have a twin along them). The rows the proofs
//! left to the ensemble are then placed from the span by the update: a FedSGD update is the sum
//! of its rows' gradients, B·G = Σᵢ g(xᵢ, yᵢ), so what the rows the update holds (proved or
//! consistent, each with the label the update gives it) leave of it, r, is the missing rows'
//! sum. Each span row, with each label left and its values along the free directions searched
//! on grids within the columns' ranges, is scored by what it leaves of r, ‖r − g‖²; the best is
//! placed where it leaves at most `1 − BETTER` of ‖r‖², r loses its gradient, and the search
//! goes on while rows are open. The rows placed are kept only where the reconstruction then
//! explains the update as the report measures it (1 − cos at most `UPDATE_FIT_THRESHOLD`) and
//! they took all but `EXPLAINS` of ‖r‖² off: a row of the batch still missing, or combinations of
//! rows that only fit better, leave much of it.
//! Such a row is consistent, never proved: its values along a free direction are the fit's
//! choice. Measured in docs/results/rounds.md (Adult [32, 32], B = 16: the rows no proof
//! reached were rows of the span whose categories no member found, or twins of rows found).
use nalgebra::DVector;

use crate::assess::enumerated::SpanRows;
use crate::assess::reconstruct::Reconstruction;
use crate::assess::update_choice::{UPDATE_FIT_THRESHOLD, move_entropy};
use crate::attack::inversion::setup::Setup;
use crate::attack::priors::activation_span::Unproved;
use crate::attack::priors::enumerate;
use crate::client::exact;
use crate::client::head::Head;
use crate::config::Protocol;
use crate::error::Result;
use crate::report::Provenance;
use crate::table::{Dataset, Value, encode_rows};

/// Span rows at most that are tried, per row of the batch (more are mostly combinations of its
/// rows, and the search's cost grows with them).
const MOST_TRIED_PER_ROW: usize = 4;
/// Grid points per free direction (odd: the centre is one) on the first pass over the ranges,
/// by how many directions are free, and on each finer pass.
const FIRST: [usize; 2] = [65, 17];
const FINER: usize = 9;
/// Finer passes around the best point, each over the last pass's step either side.
const PASSES: usize = 4;
/// Free directions at most that are searched (a grid's points grow as its power).
const MOST_FREE: usize = 2;
/// A row is placed where it leaves at most 1 − this share of what the rows held leave of the
/// update (‖r‖²): a row of the batch takes its own gradient off it.
const BETTER: f64 = 0.05;
/// The rows placed are kept where they take at least 1 − this share of what the rows held leave
/// of the update (‖r‖²) off it: together they are the rows it lacked. Adult [32, 32], B = 16,
/// seeds 0-9 (docs/results/rounds.md): a row placed wrong took the update's fit from 2.8e-2 (the
/// marginals' rows in the open slots) to 2.2e-2 only, a confident row's small gradient hidden by
/// the error of the rows held; rows placed right took it to 2e-8-1.4e-3.
const EXPLAINS: f64 = 0.1;
/// A value this share of its column's range outside it is put back at its end (the span's row
/// was solved within ranges widened by as much: `enumerate::in_range`).
const EDGE: f64 = 1e-3;

impl Setup<'_> {
    /// The span's rows placed at the rows the ensemble alone gave, as the module says (each
    /// placed row consistent, `Unproved::SpanRowLeft`); the rows as they were where it does not
    /// apply (no span that holds the batch, no row open, too many span rows, more than
    /// `MOST_FREE` free directions, not a FedSGD classifier) or the fit does not keep them.
    pub(crate) async fn place_span_rows_left(&self, span: Option<&SpanRows>, recon: &mut Reconstruction) -> Result<()> {
        let (dataset, model) = (self.dataset, self.config.model());
        let Some(span) = span.filter(|s| s.holds_lines && !s.proof && s.free.ncols() <= MOST_FREE) else {
            return Ok(());
        };
        if self.config.protocol != Protocol::Fedsgd || dataset.target.is_some() || model.head == Head::Linear {
            return Ok(());
        }
        let mut open: Vec<usize> = (0..recon.rows.len())
            .filter(|&i| recon.provenance[i] == Provenance::Ensemble)
            .collect();
        let held = |row: &[Value]| held_like(recon, row, |h, row| same_categories(dataset, h, row));
        // Where the span leaves a direction free, a row held may have a twin along it.
        let tried: Vec<usize> = (0..span.rows.len())
            .filter(|&k| span.free.ncols() > 0 || !held(&span.rows[k]))
            .collect();
        if open.is_empty() || tried.is_empty() || tried.len() > MOST_TRIED_PER_ROW * span.batch {
            return Ok(());
        }
        let label_of = self.labels_paired(recon);
        let mut r = self.left_by_held(&recon.rows, &open, &label_of);
        let before = (
            recon.rows.clone(),
            recon.provenance.clone(),
            recon.unproved.clone(),
            recon.row_labels.clone(),
        );
        let unexplained = r.iter().map(|v| v * v).sum::<f64>();
        let mut placed = 0;
        while !open.is_empty() {
            let mut left_labels: Vec<usize> = open.iter().map(|&p| label_of[p]).collect();
            left_labels.sort_unstable();
            left_labels.dedup();
            let pairs: Vec<(usize, usize)> = tried
                .iter()
                .flat_map(|&k| left_labels.iter().map(move |&y| (k, y)))
                .collect();
            let scored = crate::parallel::map(&pairs, |&(k, y)| self.best_along_free(span, k, y, &r));
            // A point within the scoring tolerance of a row held is that row again, not its twin.
            let repeats_held = |row: &[Value]| held_like(recon, row, |h, row| dataset.same_row(h, row));
            let scored: Vec<_> = scored
                .into_iter()
                .map(|s| {
                    if repeats_held(&s.1) {
                        (f64::INFINITY, s.1, s.2)
                    } else {
                        s
                    }
                })
                .collect();
            let now = r.iter().map(|v| v * v).sum::<f64>();
            let Some(((_, y), (_, row, g))) = pairs
                .into_iter()
                .zip(scored)
                .filter(|(_, s)| s.0 <= (1.0 - BETTER) * now)
                .min_by(|a, b| a.1.0.total_cmp(&b.1.0))
            else {
                break;
            };
            let p = *open
                .iter()
                .find(|&&p| label_of[p] == y)
                .expect("a label left is an open row's");
            recon.rows[p] = row;
            recon.provenance[p] = Provenance::Consistent;
            recon.unproved[p] = Some(Unproved::SpanRowLeft {
                found: span.rows.len(),
                free: span.free.ncols(),
            });
            r.iter_mut().zip(&g).for_each(|(r, g)| *r -= g);
            open.retain(|&q| q != p);
            placed += 1;
        }
        if placed == 0 {
            return Ok(());
        }
        if recon.row_labels.is_some() {
            recon.row_labels = self.labels_of_rows(&recon.rows);
        }
        let fit = self.update_fit(recon).await?.distance;
        let left = r.iter().map(|v| v * v).sum::<f64>();
        if fit > UPDATE_FIT_THRESHOLD || left > EXPLAINS * unexplained {
            (recon.rows, recon.provenance, recon.unproved, recon.row_labels) = before;
            return Ok(());
        }
        if let Some(entropy) = recon.entropy.as_mut() {
            // Every row stays in its slot; a changed cell loses the members' confidence.
            let slots: Vec<usize> = (0..recon.rows.len()).collect();
            move_entropy(dataset, entropy, &slots, &before.0, &recon.rows);
        }
        Ok(())
    }

    /// Each row's label as the update pairs them (`update_fit`'s order): the rows held the labels
    /// the update gives them, the open ones the labels left.
    pub(super) fn labels_paired(&self, recon: &Reconstruction) -> Vec<usize> {
        let order = self.update_order(&recon.rows, &recon.provenance, recon.row_labels.as_deref());
        let mut label_of = vec![0; recon.rows.len()];
        for (position, &i) in order.iter().enumerate() {
            label_of[i] = self.scenario.labels[position];
        }
        label_of
    }

    /// What the rows held (all but `open`, each with its label) leave of B·G, as the update lays
    /// it out (`update_times`).
    pub(super) fn left_by_held(&self, rows: &[Vec<Value>], open: &[usize], label_of: &[usize]) -> Vec<f64> {
        let mut r = self.update_times(rows.len() as f64);
        // Row by row: a wide network's gradients, all held at once, outweigh the attack's own
        // working set (B = 128 on [300, 200]: 95 MiB).
        for i in (0..rows.len()).filter(|i| !open.contains(i)) {
            let g = self.row_gradient(&rows[i], label_of[i]);
            r.iter_mut().zip(&g).for_each(|(r, g)| *r -= g);
        }
        r
    }

    /// A row's FedSGD gradient with label `label`, as the update lays it out (every layer's
    /// weights, then the biases), in float64.
    pub(crate) fn row_gradient(&self, row: &[Value], label: usize) -> Vec<f64> {
        let x: Vec<f64> = encode_rows(self.dataset, std::slice::from_ref(&row.to_vec()))
            .iter()
            .map(|&v| v as f64)
            .collect();
        let (params, classes) = (&self.scenario.params, self.dataset.classes.len());
        exact::row_gradient(params, self.config.model(), &x, label, classes)
    }

    /// The span's row `k` with label `y` and its values along the free directions that leave the
    /// least of `r`, searched on grids ever finer over the box the columns' ranges allow, each
    /// point on its columns' grids as decoding puts it: ‖r − g‖², the row and its gradient g.
    fn best_along_free(&self, span: &SpanRows, k: usize, y: usize, r: &[f64]) -> (f64, Vec<Value>, Vec<f64>) {
        let (dataset, layout) = (self.dataset, &self.layout);
        let continuous = layout.continuous();
        let free = &span.free;
        let f = free.ncols();
        let at = DVector::from_iterator(continuous.len(), continuous.iter().map(|&j| span.encoded[k][j]));
        let edge = |j: usize| EDGE * (layout.hi[j] - layout.lo[j]);
        let lo: Vec<f64> = continuous.iter().map(|&j| layout.lo[j] - edge(j)).collect();
        let hi: Vec<f64> = continuous.iter().map(|&j| layout.hi[j] + edge(j)).collect();
        let base: Vec<f32> = span.encoded[k].iter().map(|&v| v as f32).collect();
        let score = |beta: &[f64]| -> Option<(f64, Vec<Value>, Vec<f64>)> {
            let t = &at + free * DVector::from_column_slice(beta);
            let mut row = base.clone();
            for (c, &j) in continuous.iter().enumerate() {
                if !(t[c] >= lo[c] && t[c] <= hi[c]) {
                    return None;
                }
                row[j] = t[c].clamp(layout.lo[j], layout.hi[j]) as f32;
            }
            let decoded = dataset.decode(&row);
            let g = self.row_gradient(&decoded, y);
            let left = r.iter().zip(&g).map(|(r, g)| (r - g) * (r - g)).sum::<f64>();
            Some((left, decoded, g))
        };
        let mut best = score(&vec![0.0; f]);
        if f == 0 {
            return best.unwrap_or((f64::INFINITY, span.rows[k].clone(), Vec::new()));
        }
        let Some((from, to)) = enumerate::feasible_box((&at, free), &lo, &hi) else {
            return best.unwrap_or((f64::INFINITY, span.rows[k].clone(), Vec::new()));
        };
        let mut centre: Vec<f64> = from.iter().zip(&to).map(|(a, b)| 0.5 * (a + b)).collect();
        let mut half: Vec<f64> = from.iter().zip(&to).map(|(a, b)| 0.5 * (b - a)).collect();
        let mut points = FIRST[f - 1];
        for _ in 0..=PASSES {
            for beta in grid_points(&centre, &half, points) {
                if let Some(s) = score(&beta)
                    && best.as_ref().is_none_or(|b| s.0 < b.0)
                {
                    best = Some(s);
                    centre = beta;
                }
            }
            half.iter_mut().for_each(|h| *h *= 2.0 / (points - 1) as f64);
            points = FINER;
        }
        best.unwrap_or((f64::INFINITY, span.rows[k].clone(), Vec::new()))
    }
}

/// `points` per axis over `centre` ± `half` (per axis).
fn grid_points(centre: &[f64], half: &[f64], points: usize) -> Vec<Vec<f64>> {
    let mut out = vec![centre.to_vec()];
    for (dim, &h) in half.iter().enumerate() {
        out = out
            .into_iter()
            .flat_map(|b| {
                (0..points).map(move |i| {
                    let mut b = b.clone();
                    b[dim] += -h + 2.0 * h * i as f64 / (points - 1).max(1) as f64;
                    b
                })
            })
            .collect();
    }
    out
}

/// Whether a row the update holds (not the ensemble's alone) is `like` `row`.
fn held_like(recon: &Reconstruction, row: &[Value], like: impl Fn(&[Value], &[Value]) -> bool) -> bool {
    recon
        .rows
        .iter()
        .zip(&recon.provenance)
        .any(|(h, p)| *p != Provenance::Ensemble && like(h, row))
}

/// Whether two rows hold the same category in every categorical feature.
fn same_categories(dataset: &Dataset, a: &[Value], b: &[Value]) -> bool {
    dataset
        .features
        .iter()
        .zip(a.iter().zip(b))
        .all(|(f, (a, b))| !f.is_categorical() || a == b)
}

//! The batch chosen among a crowded span's rows by the update as a whole (FedSGD). Where the
//! first layer's span holds more rows than the update's fit can tell apart (`assess::span_fit`
//! takes 2,048 columns; Adult [32, 32] at B = 32 holds 461-14,702 rows), the update still is the
//! sum of the batch's rows' gradients, B·G = Σᵢ g(xᵢ, yᵢ), each a whole row of the span with a
//! label. The pursuit picks, greedily, the row and label whose gradient lowers ‖B·G − Σ g‖ most,
//! as many per label as the batch's slots hold, then lets each pick trade for the best other
//! until none improves. A row's gradient with a label is, per layer, the outer product of its δ
//! and the layer's input, so two gradients' inner product is Σₗ (δ·δ′)(a·a′ + 1): the search
//! never forms them. This is a search, not a proof (rows of the span combine into others, and
//! nothing says the sum is met once; where the span leaves continuous directions free, its rows
//! are one point of each line, and the greedy stops in a minimum near the batch: Adult [32, 32],
//! B = 32, untrained, 0.07-0.26 of the update left): the choice keeps its rows only where the
//! client's update they simulate fits the observed one better than the pooled rows' and within
//! the choice's threshold (`assess::update_choice`). The search runs twice, from nothing and
//! from the heaviest atoms of the non-negative least-squares weights (`Search::nonnegative`),
//! and keeps what leaves less: Adult [32, 32], B = 32, untrained, seeds 0-9, 85.2 → 85.7 % of
//! cells (five seeds moved, four up).
use crate::assess::enumerated::SpanRows;
use crate::assess::matching::match_rows;
use crate::assess::pursuits::{Picked, Pursued};
use crate::assess::row_test::{Placed, RowTest};
use crate::assess::search_bounds::{MOST_PURSUIT_BYTES, pursues, pursuit_bytes};
use crate::attack::inversion::setup::Setup;
use crate::attack::priors::spectrum::Precision;
use crate::client::exact::{label_deltas, row_trace};
use crate::client::head::{Head, Model};
use crate::client::network::Params;
use crate::table::{Value, encode_rows};

/// A pursuit among the row test's points whose residual is within this share of the update
/// leaves the span's rows as they are unsearched (the batch's rows sum to the update within float32's
/// rounding, 1e-7; where a pick is off, 1e-2 and beyond).
const PLACED_FITS: f64 = 1e-4;
/// Rounds of trades at most; each visits every pick once.
const MOST_ROUNDS: usize = 6;

/// One candidate row's input to every layer and, per label, its δ at every layer's output (the
/// first layer's first), each flat (`client::exact`'s pass of one row).
fn row_atoms(params: &Params, model: Model, row: &[f64], classes: usize) -> (Vec<f64>, Vec<f64>) {
    let (inputs, pre) = row_trace(params, model, row);
    let deltas = (0..classes).flat_map(|c| label_deltas(params, model, &pre, c, classes).into_iter().flatten());
    (inputs.concat(), deltas.collect())
}

/// Every candidate's `row_atoms`: a row's gradient with a label is, per layer, the outer product
/// of the layer's input and δ (weights) and δ (biases).
struct Atoms {
    rows: usize,
    classes: usize,
    /// Offsets of layer l's input within a row's inputs, and of its δ within a label's deltas.
    input_at: Vec<usize>,
    delta_at: Vec<usize>,
    inputs: Vec<f64>,
    deltas: Vec<f64>,
}

impl Atoms {
    fn new(params: &Params, rows: usize, classes: usize) -> Atoms {
        let layers = params.layers();
        let offsets = |sizes: &[usize]| -> Vec<usize> {
            std::iter::once(0)
                .chain(sizes.iter().scan(0, |s, &n| {
                    *s += n;
                    Some(*s)
                }))
                .collect()
        };
        Atoms {
            rows: 0,
            classes,
            input_at: offsets(&params.sizes[..layers]),
            delta_at: offsets(&params.sizes[1..]),
            inputs: Vec::with_capacity(rows * params.sizes[..layers].iter().sum::<usize>()),
            deltas: Vec::new(),
        }
    }

    fn push(&mut self, (inputs, deltas): (Vec<f64>, Vec<f64>)) {
        self.inputs.extend(inputs);
        self.deltas.extend(deltas);
        self.rows += 1;
    }

    fn layers(&self) -> usize {
        self.input_at.len() - 1
    }

    fn input(&self, i: usize, l: usize) -> &[f64] {
        let len = self.input_at[self.layers()];
        &self.inputs[i * len + self.input_at[l]..i * len + self.input_at[l + 1]]
    }

    fn delta(&self, i: usize, c: usize, l: usize) -> &[f64] {
        let len = self.delta_at[self.layers()];
        let at = (i * self.classes + c) * len;
        &self.deltas[at + self.delta_at[l]..at + self.delta_at[l + 1]]
    }

    /// ‖g(i, c)‖².
    fn norm(&self, i: usize, c: usize) -> f64 {
        (0..self.layers())
            .map(|l| dot(self.delta(i, c, l), self.delta(i, c, l)) * (dot(self.input(i, l), self.input(i, l)) + 1.0))
            .sum()
    }

    /// ⟨g(i, c), T⟩ for `t` laid out as an update (every layer's weights [in, out], then biases).
    fn against(&self, i: usize, c: usize, t: &[f64]) -> f64 {
        let layers = self.layers();
        let mut at = 0;
        let mut sum = 0.0;
        for l in 0..layers {
            let (a, d) = (self.input(i, l), self.delta(i, c, l));
            let out = d.len();
            for (k, &v) in a.iter().enumerate().filter(|(_, v)| **v != 0.0) {
                sum += v * dot(&t[at + k * out..at + (k + 1) * out], d);
            }
            at += a.len() * out;
        }
        for l in 0..layers {
            let d = self.delta(i, c, l);
            sum += dot(&t[at..at + d.len()], d);
            at += d.len();
        }
        sum
    }

    /// `into` += sign · g(i, c), laid out as an update.
    fn add_to(&self, i: usize, c: usize, sign: f64, into: &mut [f64]) {
        let layers = self.layers();
        let mut at = 0;
        for l in 0..layers {
            let (a, d) = (self.input(i, l), self.delta(i, c, l));
            for &v in a {
                into[at..at + d.len()]
                    .iter_mut()
                    .zip(d)
                    .for_each(|(t, d)| *t += sign * v * d);
                at += d.len();
            }
        }
        for l in 0..layers {
            let d = self.delta(i, c, l);
            into[at..at + d.len()]
                .iter_mut()
                .zip(d)
                .for_each(|(t, d)| *t += sign * d);
            at += d.len();
        }
    }

    /// ⟨g(i, c), g(j, e)⟩ for every (i, c), into `out` ([rows · classes]).
    fn column(&self, j: usize, e: usize, out: &mut [f64]) {
        let layers = self.layers();
        let mut inner = vec![0.0; layers];
        for i in 0..self.rows {
            for (l, v) in inner.iter_mut().enumerate() {
                *v = dot(self.input(i, l), self.input(j, l)) + 1.0;
            }
            for c in 0..self.classes {
                out[i * self.classes + c] = (0..layers)
                    .map(|l| dot(self.delta(i, c, l), self.delta(j, e, l)) * inner[l])
                    .sum();
            }
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The search's state: the residual r = target − Σ picks (laid out as an update), and per atom
/// ⟨r, g⟩ and ‖g‖².
struct Search {
    classes: usize,
    /// Where each candidate holds one label only (a point the row test placed), its label.
    only: Option<Vec<usize>>,
    atoms: Atoms,
    against: Vec<f64>,
    norms: Vec<f64>,
    r: Vec<f64>,
    column: Vec<f64>,
}

impl Search {
    /// The pick k's gradient taken off the residual (`sign` 1) or given back (−1).
    fn take(&mut self, k: usize, sign: f64) {
        let (i, c) = (k / self.classes, k % self.classes);
        self.atoms.column(i, c, &mut self.column);
        self.against
            .iter_mut()
            .zip(&self.column)
            .for_each(|(a, g)| *a -= sign * g);
        self.atoms.add_to(i, c, -sign, &mut self.r);
    }

    /// What adding atom k lowers ‖r‖² by: 2⟨r, g⟩ − ‖g‖².
    fn gain(&self, k: usize) -> f64 {
        2.0 * self.against[k] - self.norms[k]
    }

    /// The atom of label c that lowers ‖r‖² most (None where no candidate holds c).
    fn best_of(&self, c: usize) -> Option<(usize, f64)> {
        (0..self.atoms.rows)
            .filter(|&i| self.only.as_ref().is_none_or(|only| only[i] == c))
            .map(|i| (i * self.classes + c, self.gain(i * self.classes + c)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Picks, `quota[c]` of label c: the atoms `first` (within the quota), then each the atom
    /// that lowers ‖r‖² most.
    fn greedy(&mut self, quota: &[usize], first: &[usize]) -> Vec<usize> {
        let mut left = quota.to_vec();
        let mut picks = Vec::new();
        for &k in first {
            if left[k % self.classes] == 0 {
                continue;
            }
            left[k % self.classes] -= 1;
            self.take(k, 1.0);
            picks.push(k);
        }
        while let Some((k, _)) = (0..self.classes)
            .filter(|&c| left[c] > 0)
            .filter_map(|c| self.best_of(c))
            .max_by(|a, b| a.1.total_cmp(&b.1))
        {
            left[k % self.classes] -= 1;
            self.take(k, 1.0);
            picks.push(k);
        }
        picks
    }

    /// Non-negative weights on the atoms (Lawson–Hanson's active set, on inner products only)
    /// that bring Σ wₖ gₖ nearest the residual, at most `most` atoms weighted; the atoms of each
    /// label c by weight, heaviest first. The residual is left as it was. Where the batch's rows
    /// are among the atoms and no other sparse sum meets the update, their weights are 1 and the
    /// rest 0 (a shadow client's placed points, Adult [32, 32]: 32 weights of 1.00 leaving 9e-8 of
    /// it), which the greedy need not find: it stops where one pick blocks the next.
    fn nonnegative(&mut self, most: usize) -> Vec<Vec<usize>> {
        let n = self.against.len();
        let classes = self.classes;
        let only = self.only.as_ref();
        // Atoms that may enter: of their row's label where it holds one; each enters once (one
        // dropped does not come back, so the search ends even where rounding drops an atom as it
        // enters).
        let mut open: Vec<bool> = (0..n)
            .map(|k| only.is_none_or(|only| only[k / classes] == k % classes))
            .collect();
        let target = self.against.clone();
        let floor = 1e-12 * target.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        // The weighted atoms: index, its inner products with every atom, weight.
        let mut set: Vec<(usize, Vec<f64>, f64)> = Vec::new();
        let mut w = target.clone();
        for _ in 0..3 * most {
            let Some(k) = (0..n)
                .filter(|&k| open[k] && w[k] > floor)
                .max_by(|&a, &b| (w[a] / self.norms[a].sqrt()).total_cmp(&(w[b] / self.norms[b].sqrt())))
            else {
                break;
            };
            open[k] = false;
            let mut column = vec![0.0; n];
            self.atoms.column(k / classes, k % classes, &mut column);
            set.push((k, column, 0.0));
            while !set.is_empty() {
                let m = set.len();
                let gram = nalgebra::DMatrix::from_fn(m, m, |a, b| set[b].1[set[a].0]);
                let rhs = nalgebra::DVector::from_iterator(m, set.iter().map(|(k, _, _)| target[*k]));
                let Some(s) = (gram.clone().cholesky().map(|c| c.solve(&rhs)))
                    .or_else(|| gram.svd(true, true).solve(&rhs, 1e-12).ok())
                else {
                    return Vec::new();
                };
                if s.iter().all(|&v| v > 0.0) {
                    set.iter_mut().zip(s.iter()).for_each(|(a, &v)| a.2 = v);
                    break;
                }
                // Step towards s as far as keeps every weight non-negative; drop those it zeroes.
                let alpha = (set.iter().zip(s.iter()))
                    .filter(|(_, v)| **v <= 0.0)
                    .map(|(a, v)| a.2 / (a.2 - v))
                    .fold(1.0f64, f64::min);
                set.iter_mut()
                    .zip(s.iter())
                    .for_each(|(a, &v)| a.2 += alpha * (v - a.2));
                set.retain(|a| a.2 > 1e-12);
            }
            if set.len() >= most {
                break;
            }
            w = target.clone();
            for (_, column, x) in &set {
                w.iter_mut().zip(column).for_each(|(w, g)| *w -= x * g);
            }
        }
        set.sort_by(|a, b| b.2.total_cmp(&a.2));
        let mut by_label = vec![Vec::new(); classes];
        set.iter().for_each(|(k, _, _)| by_label[k % classes].push(*k));
        by_label
    }

    /// Each pick traded for the atom of its label that lowers ‖r‖² most, until none does.
    fn trade(&mut self, picks: &mut [usize]) {
        for _ in 0..MOST_ROUNDS {
            let mut traded = false;
            for pick in picks.iter_mut() {
                let k = *pick;
                self.take(k, -1.0);
                let (best, gain) = self.best_of(k % self.classes).unwrap_or((k, f64::NEG_INFINITY));
                *pick = if gain > self.gain(k) { best } else { k };
                traded |= *pick != k;
                self.take(*pick, 1.0);
            }
            if !traded {
                break;
            }
        }
    }
}

/// The rows among `candidates` (encoded) and labels whose gradients' sum comes nearest `target`
/// (B·G less the settled rows' gradients, laid out as `ExactGradient::flat`), `quota[c]` rows of
/// label c; where `only` gives each candidate one label, with that label alone, the candidates
/// `first` taken before the greedy's own (ignored without `only`). None where there
/// are no candidates, nothing to choose, or too few of a label to fill its quota.
pub(crate) fn pursue(
    params: &Params,
    model: Model,
    candidates: &[Vec<f64>],
    only: Option<Vec<usize>>,
    first: &[usize],
    target: &[f64],
    quota: &[usize],
) -> Option<Pursued> {
    let classes = quota.len();
    if candidates.is_empty() || quota.iter().sum::<usize>() == 0 {
        return None;
    }
    if let Some(only) = &only
        && (0..classes).any(|c| quota[c] > 0 && !only.contains(&c))
    {
        return None;
    }
    let mut atoms = Atoms::new(params, candidates.len(), classes);
    for row in candidates {
        atoms.push(row_atoms(params, model, row, classes));
    }
    let n = atoms.rows * classes;
    let mut search = Search {
        classes,
        only,
        against: (0..n)
            .map(|k| atoms.against(k / classes, k % classes, target))
            .collect(),
        norms: (0..n).map(|k| atoms.norm(k / classes, k % classes)).collect(),
        atoms,
        r: target.to_vec(),
        column: vec![0.0; n],
    };
    // Candidates taken first, each with the label it holds alone.
    let first: Vec<usize> = match &search.only {
        Some(only) => first.iter().map(|&i| i * classes + only[i]).collect(),
        None => Vec::new(),
    };
    let mut picks = search.greedy(quota, &first);
    search.trade(&mut picks);
    let left = |search: &Search| dot(&search.r, &search.r);
    // The same search started from the non-negative weights' heaviest atoms instead; the one that
    // leaves less kept.
    let greedy = (picks.clone(), left(&search));
    picks.iter().for_each(|&k| search.take(k, -1.0));
    let weighted = search.nonnegative(4 * quota.iter().sum::<usize>());
    let heaviest: Vec<usize> = (first.iter().copied())
        .chain((0..classes).flat_map(|c| weighted[c].iter().copied().take(quota[c])))
        .fold(Vec::new(), |mut seen, k| {
            if !seen.contains(&k) {
                seen.push(k);
            }
            seen
        });
    let mut picks = search.greedy(quota, &heaviest);
    search.trade(&mut picks);
    let (picks, left) = if left(&search) < greedy.1 {
        (picks, left(&search))
    } else {
        greedy
    };
    Some(Pursued {
        picks: picks.iter().map(|&k| (k / classes, k % classes)).collect(),
        residual: (left / dot(target, target).max(f64::MIN_POSITIVE)).sqrt(),
    })
}

/// The pursuit's rows in the attack's slots, what their gradients leave of the update, the points
/// the row test placed on the span's lines (None where it did not hold), and whether the picks
/// are among those points. Where the picks are points of lines the row test did not place, `rows`
/// holds each at its line's point nearest the pooled row, and `on_lines` at the span's own point.
pub(crate) struct SpanPicks {
    pub rows: Vec<Vec<Value>>,
    pub on_lines: Option<Vec<Vec<Value>>>,
    pub residual: f64,
    pub placed: Option<usize>,
    pub from_placed: bool,
}

impl Setup<'_> {
    /// The pursuit's rows (`pursue`) among the span's for the slots of `rows` no proof settled
    /// (`fixed` stay, their gradients taken off the update first), each slot's label kept, each
    /// row placed at the slot of its label whose pooled row it differs from least, at its line's
    /// point nearest that pooled row where the span leaves directions free; with the pursuit's
    /// residual. None where the span holds no more rows than the slots left, or on a regression.
    pub(crate) fn pursue_span_rows(&self, span: &SpanRows, rows: &[Vec<Value>], fixed: &[bool]) -> Option<SpanPicks> {
        let (params, model) = (&self.scenario.params, self.config.model());
        let (labels, classes) = (&self.scenario.labels, self.dataset.classes.len());
        let open: Vec<usize> = (0..rows.len()).filter(|&p| !fixed[p]).collect();
        if !pursues(&params.sizes, self.config.rows())
            || pursuit_bytes(span.rows.len(), &params.sizes, classes) > MOST_PURSUIT_BYTES
            || model.head == Head::Linear
            || span.rows.len() <= open.len()
            || open.is_empty()
        {
            return None;
        }
        let mut target = self.update_times(self.config.rows() as f64);
        for p in (0..rows.len()).filter(|&p| fixed[p]) {
            let g = self.row_gradient(&rows[p], labels[p]);
            target.iter_mut().zip(g).for_each(|(t, g)| *t -= g);
        }
        let mut quota = vec![0; classes];
        open.iter().for_each(|&p| quota[labels[p]] += 1);
        let (pursued, placed, points) = self
            .pursuits
            .answer(span, &target, &quota, || self.pick_span_rows(span, &target, &quota))?;
        let mut out = rows.to_vec();
        // Where the picks are points of the span's lines, the same picks at the points the span
        // gave (the search's own, whose gradients the pursuit summed).
        let mut on_lines = (placed.is_none() && span.free.ncols() > 0).then(|| rows.to_vec());
        for c in 0..classes {
            let slots: Vec<usize> = open.iter().copied().filter(|&p| labels[p] == c).collect();
            let picked: Vec<usize> = (pursued.picks.iter())
                .filter(|&&(_, label)| label == c)
                .map(|&(i, _)| i)
                .collect();
            let found: Vec<Vec<Value>> = match &placed {
                Some(placed) => (picked.iter())
                    .map(|&i| (self.dataset).decode(&placed[i].row.iter().map(|&v| v as f32).collect::<Vec<_>>()))
                    .collect(),
                None => picked.iter().map(|&i| span.rows[i].clone()).collect(),
            };
            let pooled: Vec<Vec<Value>> = slots.iter().map(|&p| rows[p].clone()).collect();
            for (slot, j) in slots.iter().zip(match_rows(&self.rules, &pooled, &found)) {
                if let Some(on_lines) = on_lines.as_mut() {
                    on_lines[*slot] = found[j].clone();
                }
                out[*slot] = match placed {
                    Some(_) => found[j].clone(),
                    // Along the directions the span leaves free, the pooled row's values (the
                    // members'): the span's point of each line is only one of its rows.
                    None => span.point_near(self, picked[j], &encode_rows(self.dataset, &rows[*slot..*slot + 1])),
                };
            }
        }
        Some(SpanPicks {
            from_placed: placed.is_some(),
            rows: out,
            on_lines,
            residual: pursued.residual,
            placed: points,
        })
    }

    /// The pursuit among the span's rows for `target` (B·G less the settled rows' gradients),
    /// `quota[c]` rows of label c: its picks, the points the row test placed where they are what
    /// it picked among, and how many points it placed.
    fn pick_span_rows(&self, span: &SpanRows, target: &[f64], quota: &[usize]) -> Option<Picked> {
        let (params, model) = (&self.scenario.params, self.config.model());
        // The points the row test places first (those that read as rows of the batch of one
        // another taken first); the span's rows as they are where it places none, or where
        // their sum fits the update better.
        let placed = self.placed_rows(span, quota);
        let points = placed.as_ref().map(|(p, _)| p.len());
        let placed = placed.and_then(|(placed, first)| {
            let encoded: Vec<Vec<f64>> = placed.iter().map(|p| p.row.clone()).collect();
            let only = placed.iter().map(|p| p.label).collect();
            let pursued = pursue(params, model, &encoded, Some(only), &first, target, quota)?;
            Some((placed, pursued))
        });
        let whole = match &placed {
            Some((_, p)) if p.residual <= PLACED_FITS => None,
            _ => pursue(params, model, &span.encoded, None, &[], target, quota),
        };
        match (placed, whole) {
            (Some((placed, p)), Some(w)) if p.residual < w.residual => Some((p, Some(placed), points)),
            (Some((placed, p)), None) => Some((p, Some(placed), points)),
            (_, Some(w)) => Some((w, None, points)),
            (None, None) => None,
        }
    }

    /// The points of the crowded span's rows and lines that the row test reads as the batch's
    /// (`assess::row_test`), with their labels, and those of them that read as rows of the batch
    /// of one another (`RowTest::mutual`) within the labels' `quota`. None where the test does not hold (the first
    /// layer's rank uncertain) or the span leaves more than one direction free.
    fn placed_rows(&self, span: &SpanRows, quota: &[usize]) -> Option<(Vec<Placed>, Vec<usize>)> {
        let (params, model) = (&self.scenario.params, self.config.model());
        let observed = &self.scenario.observed;
        let precision = Precision::of((0..params.layers()).flat_map(|l| observed.weight(l)).copied());
        let test = RowTest::new(
            &self.update_times(self.config.rows() as f64),
            params,
            precision,
            self.config.rows(),
        )?;
        let continuous = self.layout.continuous();
        let bounds = (&self.layout.lo[..], &self.layout.hi[..]);
        let classes = self.dataset.classes.len();
        let placed = crate::parallel::map(&span.encoded, |row| {
            test.place(params, model, classes, row, &span.free, &continuous, bounds)
        });
        let placed: Vec<Placed> = placed
            .into_iter()
            .collect::<Option<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect();
        let mutual = test.mutual(params, model, &placed, quota);
        Some((placed, mutual))
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng, rngs::StdRng};

    use super::*;
    use crate::client::exact::row_gradient;

    /// `count` rows of `d` values in [-2, 2], and the gradients' sum of `batch` (rows, labels).
    fn problem(params: &Params, model: Model, rows: &[Vec<f64>], batch: &[(usize, usize)]) -> Vec<f64> {
        let classes = params.sizes[params.layers()];
        let mut target = vec![0.0; params.len()];
        for &(i, label) in batch {
            let g = row_gradient(params, model, &rows[i], label, classes);
            target.iter_mut().zip(g).for_each(|(t, g)| *t += g);
        }
        target
    }

    fn rows(count: usize, d: usize, rng: &mut StdRng) -> Vec<Vec<f64>> {
        (0..count)
            .map(|_| (0..d).map(|_| rng.random_range(-2.0..2.0)).collect())
            .collect()
    }

    /// Where the rows are points (no direction free), the pursuit picks the batch's rows with their
    /// labels among rows that are not the batch's, and leaves nothing of the update.
    #[test]
    fn the_pursuit_picks_the_rows_whose_gradients_sum_to_the_update() {
        let mut rng = StdRng::seed_from_u64(3);
        let (d, model) = (6, Model::default());
        let params = Params::init(&[d, 12, 12, 3], 7);
        let candidates = rows(40, d, &mut rng);
        let batch = [(3, 0), (8, 2), (15, 1), (21, 1), (30, 0)];
        let target = problem(&params, model, &candidates, &batch);
        let pursued = pursue(&params, model, &candidates, None, &[], &target, &[2, 2, 1]).expect("picks");
        let mut picked = pursued.picks;
        picked.sort();
        assert_eq!(picked, batch);
        assert!(pursued.residual < 1e-9, "residual {}", pursued.residual);
    }

    /// The non-negative weights put 1 on each of the batch's atoms and nothing elsewhere.
    #[test]
    fn the_nonnegative_weights_are_the_batch() {
        let mut rng = StdRng::seed_from_u64(5);
        let (d, model, classes) = (6, Model::default(), 3);
        let params = Params::init(&[d, 12, 12, classes], 9);
        let candidates = rows(60, d, &mut rng);
        let batch = [(2, 1), (9, 0), (17, 2), (33, 1), (41, 0), (58, 2)];
        let target = problem(&params, model, &candidates, &batch);
        let mut atoms = Atoms::new(&params, candidates.len(), classes);
        candidates
            .iter()
            .for_each(|row| atoms.push(row_atoms(&params, model, row, classes)));
        let n = atoms.rows * classes;
        let mut search = Search {
            classes,
            only: None,
            against: (0..n)
                .map(|k| atoms.against(k / classes, k % classes, &target))
                .collect(),
            norms: (0..n).map(|k| atoms.norm(k / classes, k % classes)).collect(),
            atoms,
            r: target.clone(),
            column: vec![0.0; n],
        };
        let weighted = search.nonnegative(24);
        let mut found: Vec<(usize, usize)> = (0..classes)
            .flat_map(|c| weighted[c].iter().take(2).map(move |&k| (k / classes, c)))
            .collect();
        found.sort();
        assert_eq!(found, batch);
        assert_eq!(search.r, target, "the residual is left as it was");
    }
}

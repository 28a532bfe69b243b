//! Each row of the batch read back from a hidden layer's update (FedSGD). A layer's summed update
//! is A = Σᵢ ãᵢ δᵢᵀ = ÃᵀΔ (ã the layer's input with a 1 for the bias, δ the row's δ at its
//! output, B·G as the client's mean makes it). Where the batch's distinct rows have independent
//! inputs and independent δ's at the layer (A's rank is their count), A⁺ = Δ⁺(Ãᵀ)⁺, so a row of
//! the batch held k times reads δᵢᵀA⁺ãᵢ = 1/k, and its ã lies in A's column space; two rows
//! a ≠ b read δ_bᵀA⁺ã_a = 0 (b's coefficient in a's coordinates over the batch's rows). A row of
//! the first layer's span with another label, or at another point of its line, reads otherwise:
//! the test gives each line of a crowded span its points (the roots of δ(t)ᵀA⁺ã(t) = 1 along it),
//! drops points a deeper layer of the same rank reads otherwise, and takes among the rest those
//! that read 0 against one another (`RowTest::mutual`). Adult [32, 32], B = 32, untrained: seed 0,
//! 59 points on 461 lines held 27 of the batch's 32 rows with their labels; seed 6, 860 points on
//! 6,572 lines held 31, and the mutual reading took 32 points (both attacks then 100 % of cells).
//! It is not a proof: where the rank is not the distinct rows' count (a row whose δ the training
//! made too small to read) the batch's rows read otherwise, and the pursuit keeps what the test
//! placed only where its sum fits the update better.
use nalgebra::{DMatrix, DVector};

use crate::attack::priors::spectrum::{Precision, Rank, Spectrum};
use crate::client::activation::Activation;
use crate::client::exact::{label_deltas, row_trace};
use crate::client::head::Model;
use crate::client::network::Params;

/// A deeper layer's reading of a point placed by the first layer's: within this of 1/k (and its
/// input within this share of the layer's column space). The batch's rows read 1e-8 to 3e-5 (Adult
/// [32, 32], seeds 0 and 9, float32 updates); a line's other points 1e-3 and beyond.
const AGREES: f64 = 1e-3;
/// Points of each piece of a line (`pieces`) at which δ(t)ᵀA⁺ã(t) is read before its roots are
/// bisected, the outer two `INSIDE` of its length within its ends.
const PER_PIECE: usize = 4;
const INSIDE: f64 = 1e-9;
/// Pieces of a line where the activation has no kinks: the whole range, read at this many points.
const SMOOTH_PIECES: usize = 8;
/// How far (encoded units, std) a line's points may pass its columns' ranges: the span's free
/// direction carries its rounding into columns it does not move (1e-5 where a row sits at its
/// column's bound, as most capital gains do), which would end the line at the row.
const SLACK: f64 = 1e-3;
/// Bisection steps per root (the interval scanned over 2⁴⁰).
const BISECT: usize = 40;

/// One hidden layer's update as the test reads it: (A⁺)ᵀ = UΣ⁻¹Vᵀ, [in + 1, out], and A's
/// column space U, [in + 1, r].
struct LayerTest {
    pinv_t: DMatrix<f64>,
    basis: DMatrix<f64>,
}

/// A point a line of the span holds where the test reads it as a row of the batch (held once or,
/// where the rank allows, twice): the encoded row and its label.
#[derive(Clone)]
pub(crate) struct Placed {
    pub row: Vec<f64>,
    pub label: usize,
}

pub(crate) struct RowTest {
    layers: Vec<LayerTest>,
    /// The first layer's rank: the batch's distinct rows where the test holds.
    rank: usize,
    batch: usize,
}

/// Layer l's summed update as [in + 1, out] (weights then the bias row) from a flat update laid
/// out as `ExactGradient::flat` (every layer's weights [in, out], then every layer's biases).
fn layer_matrix(update: &[f64], params: &Params, l: usize) -> DMatrix<f64> {
    let layers = params.layers();
    let weights = |k: usize| params.sizes[k] * params.sizes[k + 1];
    let w_at: usize = (0..l).map(weights).sum();
    let b_at = (0..layers).map(weights).sum::<usize>() + (0..l).map(|k| params.sizes[k + 1]).sum::<usize>();
    let (fan_in, fan_out) = (params.sizes[l], params.sizes[l + 1]);
    DMatrix::from_fn(fan_in + 1, fan_out, |k, j| match k < fan_in {
        true => update[w_at + k * fan_out + j],
        false => update[b_at + j],
    })
}

impl RowTest {
    /// The test on `update` (B·G, flat) of a batch of `batch` rows, read at `precision`: None
    /// where the first layer's rank is not certain (`Spectrum`); deeper layers join where theirs
    /// is certain and the same.
    pub fn new(update: &[f64], params: &Params, precision: Precision, batch: usize) -> Option<RowTest> {
        let read = |l: usize| {
            let spectrum = Spectrum::of(layer_matrix(update, params, l), precision, batch, true);
            let Rank::Certain(r) = spectrum.rank() else {
                return None;
            };
            let right = spectrum.right_basis(r)?;
            let basis = spectrum.basis(r);
            let inverse =
                DMatrix::from_diagonal(&DVector::from_iterator(r, spectrum.values[..r].iter().map(|s| 1.0 / s)));
            Some((
                r,
                LayerTest {
                    pinv_t: &basis * inverse * right.transpose(),
                    basis,
                },
            ))
        };
        let (rank, first) = read(0).filter(|(r, _)| *r > 0)?;
        let mut layers = vec![first];
        layers.extend(
            (1..params.layers() - 1)
                .filter_map(read)
                .filter(|(r, _)| *r == rank)
                .map(|(_, t)| t),
        );
        Some(RowTest { layers, rank, batch })
    }

    /// Per label, δᵀA⁺ã at every layer the test holds, and (deeper layers) how far ã lies from
    /// A's column space over its norm.
    fn read(&self, params: &Params, model: Model, row: &[f64], classes: usize) -> Vec<(Vec<f64>, Vec<f64>)> {
        let (inputs, pre) = row_trace(params, model, row);
        let inputs: Vec<DVector<f64>> = (inputs.iter().take(self.layers.len()))
            .map(|a| DVector::from_iterator(a.len() + 1, a.iter().copied().chain([1.0])))
            .collect();
        let apart: Vec<f64> = (self.layers.iter().zip(&inputs).skip(1))
            .map(|(t, a)| (a - &t.basis * t.basis.tr_mul(a)).norm() / a.norm())
            .collect();
        (0..classes)
            .map(|c| {
                let deltas = label_deltas(params, model, &pre, c, classes);
                let reads = (self.layers.iter().zip(&inputs).zip(&deltas))
                    .map(|((t, a), d)| a.dot(&(&t.pinv_t * DVector::from_column_slice(d))))
                    .collect();
                (reads, apart.clone())
            })
            .collect()
    }

    /// Among `placed` points, a set that reads as rows of the batch of one another: for two rows
    /// a ≠ b of the batch δ_bᵀA⁺ã_a = 0 (the coefficient of b in a's coordinates over the batch's
    /// rows), where a point that is not a row of the batch reads otherwise against nearly every
    /// row of it (its δ is no row's). Points taken in decreasing count of the points they read
    /// 0 against both ways (within `AGREES`), each where it reads so against every point taken,
    /// at most `quota[c]` of label c. Adult [32, 32], seed 6: 31 of the batch's rows among 860
    /// points, which the pursuit alone did not find.
    pub fn mutual(&self, params: &Params, model: Model, placed: &[Placed], quota: &[usize]) -> Vec<usize> {
        let classes = quota.len();
        let first = &self.layers[0];
        // Per point: w = (A⁺)ᵀ-side reading of its input, and its δ with its label.
        let (w, d): (Vec<DVector<f64>>, Vec<DVector<f64>>) = placed
            .iter()
            .map(|p| {
                let (_, pre) = row_trace(params, model, &p.row);
                let delta = label_deltas(params, model, &pre, p.label, classes).swap_remove(0);
                let a = DVector::from_iterator(p.row.len() + 1, p.row.iter().copied().chain([1.0]));
                (first.pinv_t.tr_mul(&a), DVector::from_vec(delta))
            })
            .unzip();
        let agree = |a: usize, b: usize| w[a].dot(&d[b]).abs() <= AGREES && w[b].dot(&d[a]).abs() <= AGREES;
        let n = placed.len();
        let degree: Vec<usize> = (0..n)
            .map(|a| (0..n).filter(|&b| b != a && agree(a, b)).count())
            .collect();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| degree[b].cmp(&degree[a]));
        let mut left = quota.to_vec();
        let mut taken: Vec<usize> = Vec::new();
        for a in order {
            if left[placed[a].label] > 0 && taken.iter().all(|&b| agree(a, b)) {
                left[placed[a].label] -= 1;
                taken.push(a);
            }
        }
        taken
    }

    /// How many times a row of the batch may be held: once, or twice where the rank is below the
    /// batch's (a pair of equal rows; more are rarer than the rank tells apart).
    fn times(&self) -> &'static [usize] {
        match self.rank < self.batch {
            true => &[1, 2],
            false => &[1],
        }
    }

    /// The points of the span's row `point` (encoded) and the line through it along `free`
    /// (continuous columns `continuous`, one direction at most; None for more) that the test
    /// reads as rows of the batch, with their labels, within the encoding's ranges `lo`, `hi`.
    #[allow(clippy::too_many_arguments)]
    pub fn place(
        &self,
        params: &Params,
        model: Model,
        classes: usize,
        point: &[f64],
        free: &DMatrix<f64>,
        continuous: &[usize],
        (lo, hi): (&[f64], &[f64]),
    ) -> Option<Vec<Placed>> {
        let at = |t: f64| -> Vec<f64> {
            let mut x = point.to_vec();
            if free.ncols() == 1 {
                continuous
                    .iter()
                    .enumerate()
                    .for_each(|(k, &j)| x[j] += t * free[(k, 0)]);
            }
            x
        };
        let mut placed = Vec::new();
        match free.ncols() {
            0 => self.keep_where_read(
                point.to_vec(),
                &self.read(params, model, point, classes),
                None,
                &mut placed,
            ),
            1 => {
                let Some((a, b)) = line_range(point, free, continuous, lo, hi) else {
                    return Some(placed);
                };
                // A row at one end of its range (a value at its column's bound, as most rows'
                // capital gains are) reads 1/k there, with no sign change.
                for t in [a, b] {
                    self.keep_where_read(at(t), &self.read(params, model, &at(t), classes), None, &mut placed);
                }
                // Within a piece where no unit changes side the reading is smooth: each piece is
                // scanned on its own (a unit's δ switches at its kink, a jump that no scan across
                // it tells from a root).
                for (s, e) in pieces(params, model, &at, a, b).into_iter().filter(|(s, e)| e > s) {
                    let ts: Vec<f64> = (0..PER_PIECE)
                        .map(|k| (k as f64 / (PER_PIECE - 1) as f64).clamp(INSIDE, 1.0 - INSIDE))
                        .map(|f| s + (e - s) * f)
                        .collect();
                    let reads: Vec<Vec<(Vec<f64>, Vec<f64>)>> =
                        ts.iter().map(|&t| self.read(params, model, &at(t), classes)).collect();
                    for (label, times) in (0..classes).flat_map(|c| self.times().iter().map(move |&k| (c, k))) {
                        let want = 1.0 / times as f64;
                        let g = |t: f64| self.read(params, model, &at(t), classes)[label].0[0] - want;
                        for k in 1..ts.len() {
                            let (g0, g1) = (reads[k - 1][label].0[0] - want, reads[k][label].0[0] - want);
                            if g0.signum() != g1.signum() {
                                let t = bisect(&g, (ts[k - 1], g0), ts[k]);
                                let r = self.read(params, model, &at(t), classes);
                                self.keep_where_read(at(t), &r, Some((label, times)), &mut placed);
                            }
                        }
                    }
                }
            }
            _ => return None,
        }
        Some(placed)
    }

    /// `x` kept, with each label (or only `only`'s label, held so many times) with which its
    /// `reads` are a row's of the batch at every layer the test holds.
    fn keep_where_read(
        &self,
        x: Vec<f64>,
        reads: &[(Vec<f64>, Vec<f64>)],
        only: Option<(usize, usize)>,
        placed: &mut Vec<Placed>,
    ) {
        for (label, (f, apart)) in reads.iter().enumerate() {
            let read_as = |times: usize| {
                let want = 1.0 / times as f64;
                f.iter().all(|f| (f - want).abs() <= AGREES) && apart.iter().all(|&m| m <= AGREES)
            };
            let held = match only {
                Some((c, times)) => c == label && read_as(times),
                None => self.times().iter().any(|&k| read_as(k)),
            };
            if held {
                placed.push(Placed { row: x.clone(), label });
            }
        }
    }
}

/// The line's range [a, b] cut where a hidden unit changes side (ReLU's and leaky ReLU's kinks):
/// layer by layer, each piece's pre-activations are affine in t where the layers below keep
/// their sides, read at two points. A smooth activation's range in `SMOOTH_PIECES` equal pieces.
fn pieces(params: &Params, model: Model, at: &dyn Fn(f64) -> Vec<f64>, a: f64, b: f64) -> Vec<(f64, f64)> {
    if !matches!(model.activation, Activation::Relu | Activation::LeakyRelu { .. }) {
        let w = (b - a) / SMOOTH_PIECES as f64;
        return (0..SMOOTH_PIECES)
            .map(|k| (a + w * k as f64, a + w * (k + 1) as f64))
            .collect();
    }
    let mut pieces = vec![(a, b)];
    for l in 0..params.layers() - 1 {
        let mut next = Vec::with_capacity(pieces.len());
        for (s, e) in pieces {
            let (t1, t2) = (s + (e - s) / 3.0, s + 2.0 * (e - s) / 3.0);
            let z1 = params.pre_activations_host(&at(t1), 1, model).swap_remove(l);
            let z2 = params.pre_activations_host(&at(t2), 1, model).swap_remove(l);
            let mut cuts: Vec<f64> = (z1.iter().zip(&z2))
                .filter(|(u, v)| u != v)
                .map(|(u, v)| t1 - u * (t2 - t1) / (v - u))
                .filter(|&t| t > s && t < e)
                .collect();
            cuts.sort_by(f64::total_cmp);
            let mut from = s;
            for t in cuts.into_iter().chain([e]) {
                next.push((from, t));
                from = t;
            }
        }
        pieces = next;
    }
    pieces
}

/// The range of t that keeps `point + t·free` within the encoding's ranges.
fn line_range(point: &[f64], free: &DMatrix<f64>, continuous: &[usize], lo: &[f64], hi: &[f64]) -> Option<(f64, f64)> {
    let (mut a, mut b) = (f64::NEG_INFINITY, f64::INFINITY);
    for (k, &j) in continuous.iter().enumerate() {
        let v = free[(k, 0)];
        // The free basis's rounding in a column is no direction of it.
        if v.abs() < 1e-6 {
            continue;
        }
        let (l, h) = ((lo[j] - SLACK - point[j]) / v, (hi[j] + SLACK - point[j]) / v);
        a = a.max(l.min(h));
        b = b.min(l.max(h));
    }
    (a.is_finite() && b.is_finite() && a < b).then_some((a, b))
}

/// A root of `g` between t₀ (where it is g₀) and t₁, where g changes sign.
fn bisect(g: &dyn Fn(f64) -> f64, (mut t0, mut g0): (f64, f64), mut t1: f64) -> f64 {
    for _ in 0..BISECT {
        let mid = 0.5 * (t0 + t1);
        let gm = g(mid);
        if gm.signum() == g0.signum() {
            (t0, g0) = (mid, gm);
        } else {
            t1 = mid;
        }
    }
    0.5 * (t0 + t1)
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng, rngs::StdRng};

    use super::*;
    use crate::client::exact::row_gradient;

    /// A batch of `labels.len()` rows of `d` values in [-2, 2] and B·G, their gradients' sum.
    fn batch(params: &Params, model: Model, labels: &[usize], rng: &mut StdRng) -> (Vec<Vec<f64>>, Vec<f64>) {
        let (d, classes) = (params.sizes[0], params.sizes[params.layers()]);
        let rows: Vec<Vec<f64>> = (labels.iter())
            .map(|_| (0..d).map(|_| rng.random_range(-2.0..2.0)).collect())
            .collect();
        let mut sum = vec![0.0; params.len()];
        for (x, &c) in rows.iter().zip(labels) {
            let g = row_gradient(params, model, x, c, classes);
            sum.iter_mut().zip(g).for_each(|(s, g)| *s += g);
        }
        (rows, sum)
    }

    /// Each row of the batch reads 1 with its label at every layer and otherwise with another;
    /// a row that is not the batch's reads 1 with none.
    #[test]
    fn a_row_of_the_batch_reads_one_with_its_label_alone() {
        let mut rng = StdRng::seed_from_u64(5);
        let (model, labels) = (Model::default(), [0, 2, 1, 1, 0]);
        let params = Params::init(&[6, 12, 12, 3], 7);
        let (rows, sum) = batch(&params, model, &labels, &mut rng);
        let test = RowTest::new(&sum, &params, Precision::F32, labels.len()).expect("the rank is certain");
        assert_eq!((test.rank, test.layers.len()), (5, 2));
        for (x, &c) in rows.iter().zip(&labels) {
            for (label, (reads, apart)) in test.read(&params, model, x, 3).iter().enumerate() {
                let ones = reads.iter().filter(|f| (*f - 1.0).abs() < 1e-8).count();
                assert_eq!(
                    ones,
                    if label == c { 2 } else { 0 },
                    "label {label} of a row of label {c}: {reads:?}"
                );
                assert!(apart[0] < 1e-8);
            }
        }
        let other: Vec<f64> = (0..6).map(|_| rng.random_range(-2.0..2.0)).collect();
        for (reads, _) in test.read(&params, model, &other, 3) {
            assert!(reads.iter().all(|f| (f - 1.0).abs() > AGREES), "{reads:?}");
        }
    }

    /// On a line through a row of the batch (two columns moving together), the test places the
    /// row, with its label, wherever the line's given point is.
    #[test]
    fn a_line_through_a_row_of_the_batch_is_placed_at_the_row() {
        let mut rng = StdRng::seed_from_u64(11);
        let (model, labels) = (Model::default(), [1, 0, 2, 0]);
        let params = Params::init(&[5, 10, 10, 3], 3);
        let (rows, sum) = batch(&params, model, &labels, &mut rng);
        let test = RowTest::new(&sum, &params, Precision::F32, labels.len()).expect("the rank is certain");
        let continuous = [0, 3];
        let free = DMatrix::from_column_slice(2, 1, &[0.6, 0.8]);
        let (lo, hi) = (vec![-10.0; 5], vec![10.0; 5]);
        for (x, &c) in rows.iter().zip(&labels) {
            let mut point = x.clone();
            point[0] += 0.6 * 0.9;
            point[3] += 0.8 * 0.9;
            let placed = test
                .place(&params, model, 3, &point, &free, &continuous, (&lo, &hi))
                .expect("one direction");
            let at_row = |p: &Placed| p.row.iter().zip(x).all(|(a, b)| (a - b).abs() < 1e-7);
            assert!(
                placed.iter().any(|p| p.label == c && at_row(p)),
                "row of label {c} not placed"
            );
            assert!(placed.iter().all(|p| p.label == c || !at_row(p)));
        }
    }

    /// Among the batch's rows and rows that are not the batch's, each with a label, the rows
    /// that read as the batch's of one another are the batch's.
    #[test]
    fn the_rows_of_the_batch_read_zero_against_one_another() {
        let mut rng = StdRng::seed_from_u64(4);
        let (model, labels) = (Model::default(), [0, 1, 2, 1, 0, 2]);
        let params = Params::init(&[6, 12, 12, 3], 5);
        let (rows, sum) = batch(&params, model, &labels, &mut rng);
        let test = RowTest::new(&sum, &params, Precision::F32, labels.len()).expect("the rank is certain");
        let mut placed: Vec<Placed> = (0..6)
            .map(|k| Placed {
                row: (0..6).map(|_| rng.random_range(-2.0..2.0)).collect(),
                label: k % 3,
            })
            .collect();
        placed.extend(rows.iter().zip(&labels).map(|(x, &c)| Placed {
            row: x.clone(),
            label: c,
        }));
        let mut mutual = test.mutual(&params, model, &placed, &[2, 2, 2]);
        mutual.sort();
        assert_eq!(mutual, (6..12).collect::<Vec<_>>());
    }
}

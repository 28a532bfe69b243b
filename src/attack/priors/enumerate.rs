//! Every row the table's encoding can hold that lies in a span: the first layer's span of the
//! rows, enumerated (issue 43). A row is its categories (one hot per block) and its continuous
//! values; it lies in the span U where its part outside U, Q x (Q = I − UUᵀ), vanishes. For
//! fixed categories the continuous values that come nearest are a least-squares solution, and
//! what they cannot reach is L x_cat with L the projector onto Q's range less Q·C's (C the
//! continuous columns): a sum of one vector per block, one per category chosen, plus a constant.
//! So the rows in the span are the choices, one category per block, whose vectors sum to minus
//! the constant: a multiple-choice subset sum, solved exactly by meeting in the middle (the
//! blocks split in two halves, each half's sums enumerated, the halves matched on a projection
//! to one line, every match within the tolerance checked in full). Nothing is missed: a sum
//! within the tolerance projects within it. Then each row's continuous values are solved, put on
//! their column's grid and in its range, and the row is kept where it lies within its own
//! tolerance of the span.
//!
//! Known gap: where the span leaves a continuous direction free (`Enumerated::free`: two rows of
//! the batch share their categories), least squares reads the values along it as the update's
//! rounding says, and a value put back into its range on its own leaves the span, so such a row
//! of the batch can be missed (Adult [32, 32], B = 16, trained 1 epoch, seed 0: 9 of 16). Nothing
//! that proves reads those rows (`assess::enumerated` proves and fits only where no direction
//! is free); a fix is measured in docs/results/rounds.md (2026-11-29, a fresh machine).
//!
//! Where the span holds every row of the batch (the first layer's update of rank B: FedSGD, and
//! FedAvg under SGD, whose first-layer update is Σᵢ xᵢ vᵢᵀ), the batch is among the rows found;
//! where exactly B are found, they are the batch (`assess::enumerated`).
use nalgebra::{DMatrix, DVector};

use crate::attack::inversion::relax::Layout;

/// Sums one half of the blocks may enumerate at most (the search is refused past it).
pub const HALF_LIMIT: usize = 2_000_000;
/// Full checks of matched pairs at most (the search is refused past it).
const CHECK_LIMIT: usize = 2_000_000;
/// A combination of continuous columns is determined by the span where its part outside the
/// span keeps at least this share of its norm; below it, the rows' values are not.
pub const DETERMINED: f64 = 0.05;

/// How near the span (absolute, encoded units) a row of categories and continuous values must
/// come to be matched: `constant + ‖scaled·x‖ + relative·‖x‖`. A row read off a rounded update
/// drifts from its span by how weakly the update holds it (`Spectrum::drift`), so one bound for
/// every row would be the loosest row's: on Adult's [32, 32] network 1000 times a typical row's,
/// and the search was refused. The bound splits over the blocks (a row's parts have disjoint
/// columns, and both terms are norms), so each half of the search carries its own part of it.
#[derive(Debug, Clone)]
pub struct Tolerance {
    pub constant: f64,
    /// [k, d]; no rows where the bound does not grow with the row.
    pub scaled: DMatrix<f64>,
    pub relative: f64,
}

impl Tolerance {
    /// The same bound for every row.
    pub fn fixed(constant: f64) -> Tolerance {
        Tolerance {
            constant,
            scaled: DMatrix::zeros(0, 0),
            relative: 0.0,
        }
    }

    /// The growing part at most, over continuous values anywhere in their ranges (`columns`):
    /// ‖S_C‖₂ and the relative term times the largest norm those values reach.
    fn of_continuous(&self, layout: &Layout, columns: &[usize]) -> f64 {
        let widest = columns
            .iter()
            .map(|&j| {
                let slack = 0.05 * (layout.hi[j] - layout.lo[j]);
                (layout.lo[j] - slack).abs().max((layout.hi[j] + slack).abs()).powi(2)
            })
            .sum::<f64>()
            .sqrt();
        // No continuous columns (or a bound that does not grow): nothing to add.
        let norm = match (self.scaled.nrows(), columns.len()) {
            (0, _) | (_, 0) => 0.0,
            _ => self.scaled.select_columns(columns).singular_values().max(),
        };
        (norm + self.relative) * widest
    }
}

/// What the enumeration found.
#[derive(Debug, Clone, PartialEq)]
pub struct Enumerated {
    pub rows: Vec<Found>,
    /// Whether every combination of the allowed categories was searched (false: refused past
    /// the limits, and `rows` is empty).
    pub complete: bool,
    /// The combinations of continuous values (in the continuous columns' order, encoded units,
    /// orthonormal columns) that lie nearly inside the span, so that it does not fix them: two
    /// rows of the batch with the same categories put their difference there, and then every
    /// row's values slide along it. Empty where the span fixes every continuous value.
    pub free: DMatrix<f64>,
}

/// One row of the span.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The encoded row ([d]): its categories, and the continuous values nearest the span (on
    /// their grids and in range where the span fixes them).
    pub row: Vec<f64>,
    /// Its distance to the span, relative to its norm.
    pub distance: f64,
    /// Whether the span fixes its continuous values (`Enumerated::free` is empty).
    pub fixed: bool,
}

/// How far the span lets continuous values slide per unit of distance to it: the smallest
/// singular value of Q·C (Q = I − UUᵀ, C the continuous columns), ∞ without continuous columns.
/// A row within distance δ (absolute) of the span has its values within δ over this of the
/// nearest point's.
pub fn continuous_precision(basis: &DMatrix<f64>, layout: &Layout) -> f64 {
    let d = layout.d();
    let continuous: Vec<usize> = layout.blocks.iter().filter(|b| !b.2).map(|b| b.0).collect();
    if continuous.is_empty() {
        return f64::INFINITY;
    }
    let qc = DMatrix::from_fn(d, continuous.len(), |i, k| {
        (i == continuous[k]) as u8 as f64 - basis.row(i).dot(&basis.row(continuous[k]))
    });
    qc.singular_values().min()
}

/// One half of the blocks: every combination's sum, by its index.
struct Half {
    /// The blocks (indices into the categorical blocks) and their allowed categories.
    blocks: Vec<usize>,
    sizes: Vec<usize>,
    /// Every combination's projected sum and index, sorted by the sum.
    keys: Vec<(f64, usize)>,
    /// Every combination's part of the tolerance, ‖S·x_part‖ + relative·‖x_part‖, by index.
    bounds: Vec<f64>,
}

/// A half's combinations in groups of similar tolerance (within a factor of two), each with its
/// largest bound and sorted by its sums: a match is sought per group at that group's bound.
fn grouped(half: &Half) -> Vec<(f64, Vec<(f64, usize)>)> {
    let mut groups: Vec<(f64, Vec<(f64, usize)>)> = Vec::new();
    let smallest = half
        .bounds
        .iter()
        .copied()
        .filter(|&b| b > 0.0)
        .fold(f64::INFINITY, f64::min);
    for &(key, index) in &half.keys {
        let bound = half.bounds[index];
        // Group 0 holds bounds up to the smallest positive one; group g up to 2^g times it.
        let g = match bound > smallest {
            true => (bound / smallest).log2().ceil() as usize,
            false => 0,
        };
        if groups.len() <= g {
            groups.resize_with(g + 1, || (0.0, Vec::new()));
        }
        groups[g].0 = groups[g].0.max(bound);
        groups[g].1.push((key, index));
    }
    groups.retain(|(_, keys)| !keys.is_empty());
    groups
}

/// The categorical blocks' allowed columns, one list per block, in the layout's order.
fn allowed_columns(layout: &Layout, allowed: &[Vec<bool>]) -> Vec<Vec<usize>> {
    layout
        .blocks
        .iter()
        .filter(|b| b.2)
        .enumerate()
        .map(|(k, &(offset, width, _))| {
            (0..width)
                .filter(|&c| allowed.get(k).and_then(|a| a.get(c)).copied().unwrap_or(true))
                .map(|c| offset + c)
                .collect()
        })
        .collect()
}

/// The blocks split in two halves whose products of sizes are as even as a greedy split gets,
/// largest first.
fn split(sizes: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&k| std::cmp::Reverse(sizes[k]));
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let (mut pa, mut pb) = (1f64, 1f64);
    for k in order {
        if pa <= pb {
            pa *= sizes[k] as f64;
            a.push(k);
        } else {
            pb *= sizes[k] as f64;
            b.push(k);
        }
    }
    (a, b)
}

/// Combination `index` of a half as one category (column) per block.
fn decode(index: usize, half: &Half, columns: &[Vec<usize>]) -> Vec<usize> {
    let mut rest = index;
    half.blocks
        .iter()
        .zip(&half.sizes)
        .map(|(&b, &n)| {
            let c = columns[b][rest % n];
            rest /= n;
            c
        })
        .collect()
}

/// Every combination of `blocks`' categories, its sum of `vectors` projected on `line`
/// (plus `start`), sorted, and its part of the tolerance: `hot[c]` is the encoded row's part
/// on the block of column c with c hot.
fn half(
    blocks: Vec<usize>,
    columns: &[Vec<usize>],
    (vectors, hot): (&DMatrix<f64>, &[DVector<f64>]),
    line: &DVector<f64>,
    start: f64,
    tolerance: &Tolerance,
) -> Half {
    let sizes: Vec<usize> = blocks.iter().map(|&b| columns[b].len()).collect();
    let total: usize = sizes.iter().product();
    let projected: Vec<Vec<f64>> = blocks
        .iter()
        .map(|&b| columns[b].iter().map(|&c| vectors.column(c).dot(line)).collect())
        .collect();
    // The tolerance's parts per block and category: S·x_block and ‖x_block‖².
    let scaled: Vec<Vec<DVector<f64>>> = blocks
        .iter()
        .map(|&b| {
            columns[b]
                .iter()
                .map(|&c| match tolerance.scaled.nrows() {
                    0 => DVector::zeros(0),
                    _ => &tolerance.scaled * &hot[c],
                })
                .collect()
        })
        .collect();
    let squares: Vec<Vec<f64>> = blocks
        .iter()
        .map(|&b| columns[b].iter().map(|&c| hot[c].norm_squared()).collect())
        .collect();
    let mut keys = Vec::with_capacity(total);
    let mut bounds = Vec::with_capacity(total);
    let mut sum = DVector::zeros(tolerance.scaled.nrows());
    for index in 0..total {
        let mut rest = index;
        let mut key = start;
        let mut square = 0.0;
        sum.fill(0.0);
        for (k, &n) in sizes.iter().enumerate() {
            key += projected[k][rest % n];
            square += squares[k][rest % n];
            if !sum.is_empty() {
                sum += &scaled[k][rest % n];
            }
            rest /= n;
        }
        keys.push((key, index));
        bounds.push(sum.norm() + tolerance.relative * square.sqrt());
    }
    keys.sort_by(|a, b| a.0.total_cmp(&b.0));
    Half {
        blocks,
        sizes,
        keys,
        bounds,
    }
}

/// The rows of the encoding `layout` in the span `basis` ([d, k], orthonormal columns): the
/// categories `allowed` per categorical block (all where empty), continuous values on their
/// grids (`steps`, per encoded column, raw units) and within their range. A combination is
/// matched where the categories' part outside the span is within `tolerance` (its bound for
/// the row, at most) of what the continuous values can reach, and a row is kept where `accept`
/// says of it (encoded row, its distance to the span relative to its norm). Refused (not
/// complete) past `most` rows, `HALF_LIMIT` sums a half or `CHECK_LIMIT` matches.
pub fn rows_in_span(
    basis: &DMatrix<f64>,
    layout: &Layout,
    allowed: &[Vec<bool>],
    steps: &[Option<f64>],
    tolerance: &Tolerance,
    accept: &dyn Fn(&[f64], f64) -> bool,
    most: usize,
) -> Enumerated {
    let d = layout.d();
    let refused = |free: DMatrix<f64>| Enumerated {
        rows: Vec::new(),
        complete: false,
        free,
    };
    let q = DMatrix::<f64>::identity(d, d) - basis * basis.transpose();
    let continuous: Vec<usize> = layout.blocks.iter().filter(|b| !b.2).map(|b| b.0).collect();
    let qc = DMatrix::from_fn(d, continuous.len(), |i, k| q[(i, continuous[k])]);
    // The continuous values the span fixes: Q·C keeps their directions' norm outside the span;
    // those it does not (`DETERMINED`) are free.
    let (free, uc) = match continuous.is_empty() {
        true => (DMatrix::zeros(0, 0), DMatrix::zeros(d, 0)),
        false => {
            let svd = qc.clone().svd(true, true);
            let values = &svd.singular_values;
            let kept: Vec<usize> = (0..values.len()).filter(|&k| values[k] >= 1e-9).collect();
            let loose: Vec<usize> = (0..values.len()).filter(|&k| values[k] < DETERMINED).collect();
            let v = svd.v_t.expect("asked for Vᵀ").transpose();
            (
                v.select_columns(&loose),
                svd.u.expect("asked for U").select_columns(&kept),
            )
        }
    };
    // L = Q less the directions the continuous values reach; what a category leaves there, the
    // continuous values cannot take back.
    let l = &q - &uc * uc.transpose();
    let columns = allowed_columns(layout, allowed);
    if columns.iter().any(Vec::is_empty) {
        return refused(free);
    }
    // Cold everywhere (every block's cold value), and each category's hot minus cold.
    let cold = DVector::from_fn(d, |j, _| {
        match layout.blocks.iter().any(|b| b.2 && (b.0..b.0 + b.1).contains(&j)) {
            true => -layout.mean[j] / layout.std[j],
            false => 0.0,
        }
    });
    let vectors = DMatrix::from_fn(d, d, |i, j| if i == j { 1.0 / layout.std[j] } else { 0.0 });
    let vectors = &l * vectors;
    let base = &l * &cold;
    let hot = hot_blocks(layout, &cold);
    // What the continuous values and the constant add to every combination's bound.
    let shared = tolerance.constant + tolerance.of_continuous(layout, &continuous);
    // One line to match on: a fixed direction, so the search is the same every run.
    let line = DVector::from_fn(d, |i, _| ((i as f64 + 1.0) * 0.618_033_988_749_895).fract() - 0.5);
    let line = &l * line;
    let norm = line.norm();
    if !(norm > 0.0) {
        return refused(free);
    }
    let line = line / norm;
    let Some((first, second)) = halves(&columns, (&vectors, &hot), &line, base.dot(&line), tolerance, shared) else {
        return refused(free);
    };
    let sum_of = |cols: &[usize]| -> DVector<f64> {
        let mut s = DVector::zeros(d);
        for &c in cols {
            s += vectors.column(c);
        }
        s
    };
    let mut rows = Vec::new();
    // The continuous values nearest the span: t = −(Q C)⁺ Q x_cat.
    let solve = match continuous.is_empty() {
        true => DMatrix::zeros(0, d),
        false => match qc.clone().pseudo_inverse(1e-9) {
            Ok(pinv) => -(pinv * &q),
            Err(_) => return refused(free),
        },
    };
    let fixed = free.ncols() == 0;
    for &(key, ia) in &first.keys {
        let from_a = shared + first.bounds[ia];
        for (widest, keys) in &second.groups {
            for &(key_b, ib) in &keys[match_range(keys, key, from_a + widest)] {
                let within = from_a + second.half.bounds[ib];
                if (key + key_b).abs() > within {
                    continue;
                }
                let (ca, cb) = (decode(ia, &first, &columns), decode(ib, &second.half, &columns));
                let total = &base + sum_of(&ca) + sum_of(&cb);
                if total.norm() > within {
                    continue;
                }
                let solved = solved_row(layout, &solve, &cold, (&ca, &cb), &continuous, fixed.then_some(steps));
                if let Some(row) = solved {
                    let x = DVector::from_column_slice(&row);
                    let distance = (&q * &x).norm() / x.norm().max(f64::MIN_POSITIVE);
                    if accept(&row, distance) {
                        rows.push(Found { row, distance, fixed });
                        if rows.len() > most {
                            return refused(free);
                        }
                    }
                }
            }
        }
    }
    Enumerated {
        rows,
        complete: true,
        free,
    }
}

/// The second half, grouped by its bounds (`grouped`).
struct Second {
    half: Half,
    groups: Vec<(f64, Vec<(f64, usize)>)>,
}

/// Each category's block as the row holds it with that category hot ([d] each, zero off the
/// block; zero for a continuous column): the parts the tolerance is bounded on.
fn hot_blocks(layout: &Layout, cold: &DVector<f64>) -> Vec<DVector<f64>> {
    let d = layout.d();
    (0..d)
        .map(|c| {
            let mut part = DVector::zeros(d);
            if let Some(&(o, w, _)) = layout.blocks.iter().find(|b| b.2 && (b.0..b.0 + b.1).contains(&c)) {
                part.rows_mut(o, w).copy_from(&cold.rows(o, w));
                part[c] = (1.0 - layout.mean[c]) / layout.std[c];
            }
            part
        })
        .collect()
}

/// The two halves' sums (the first from `start`), or None past the limits: `HALF_LIMIT` sums a
/// half, or more than `CHECK_LIMIT` matches. Past the checks' limit the search is refused whatever
/// it finds, so the matches are counted before any is checked (at B = 32 on Adult's [32, 32]
/// network a refused search had checked 2 million matches, 0.5-1.1 s, for nothing).
fn halves(
    columns: &[Vec<usize>],
    parts: (&DMatrix<f64>, &[DVector<f64>]),
    line: &DVector<f64>,
    start: f64,
    tolerance: &Tolerance,
    shared: f64,
) -> Option<(Half, Second)> {
    let sizes: Vec<usize> = columns.iter().map(Vec::len).collect();
    let (a, b) = split(&sizes);
    let product = |blocks: &[usize]| blocks.iter().map(|&k| sizes[k] as f64).product::<f64>();
    if product(&a) > HALF_LIMIT as f64 || product(&b) > HALF_LIMIT as f64 {
        return None;
    }
    let first = half(a, columns, parts, line, start, tolerance);
    let second = half(b, columns, parts, line, 0.0, tolerance);
    let second = Second {
        groups: grouped(&second),
        half: second,
    };
    (matches(&first, &second, shared) <= CHECK_LIMIT).then_some((first, second))
}

/// Pairs of the two halves whose keys sum to within their bound (`shared` plus each half's
/// part) of zero, counted at each group's widest bound: at least the matches the search checks
/// in full.
fn matches(first: &Half, second: &Second, shared: f64) -> usize {
    first
        .keys
        .iter()
        .map(|&(key, ia)| {
            let from_a = shared + first.bounds[ia];
            second
                .groups
                .iter()
                .map(|(widest, keys)| match_range(keys, key, from_a + widest).len())
                .sum::<usize>()
        })
        .sum()
}

/// The sums (sorted) that `key` matches: key + key_b within the tolerance.
fn match_range(keys: &[(f64, usize)], key: f64, tolerance: f64) -> std::ops::Range<usize> {
    let from = keys.partition_point(|&(k, _)| k < -key - tolerance);
    let to = keys.partition_point(|&(k, _)| k <= -key + tolerance);
    from..to.max(from)
}

/// The row of the categories `a` and `b` (both halves' columns) with the continuous values that
/// bring it nearest the span (`solve`: −(Q C)⁺ Q), in range and, where `steps` are given (the
/// span fixes the values), on their grids; None where a value falls out of range.
fn solved_row(
    layout: &Layout,
    solve: &DMatrix<f64>,
    cold: &DVector<f64>,
    (a, b): (&[usize], &[usize]),
    continuous: &[usize],
    steps: Option<&[Option<f64>]>,
) -> Option<Vec<f64>> {
    let mut x = cold.clone();
    for &c in a.iter().chain(b) {
        x[c] = (1.0 - layout.mean[c]) / layout.std[c];
    }
    let t = solve * &x;
    for (k, &j) in continuous.iter().enumerate() {
        let (lo, hi) = (layout.lo[j], layout.hi[j]);
        let slack = 0.05 * (hi - lo);
        if !(t[k] >= lo - slack && t[k] <= hi + slack) {
            return None;
        }
        let mut v = t[k].clamp(lo, hi);
        if let Some(step) = steps.and_then(|s| s.get(j).copied().flatten()) {
            let raw = v * layout.std[j] + layout.mean[j];
            v = ((raw / step).round() * step - layout.mean[j]) / layout.std[j];
        }
        x[j] = v;
    }
    Some(x.iter().copied().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attack::priors::subspace::tests::layout;
    use rand::{Rng, SeedableRng, rngs::StdRng};

    const CAT: [(usize, usize); 4] = [(0, 5), (5, 7), (12, 4), (16, 6)];
    const D: usize = 25;

    /// Rows of the layout: one hot per block, three continuous values on a 0.1 grid.
    fn random_row(rng: &mut StdRng) -> Vec<f64> {
        let mut row = vec![0.0; D];
        for &(o, w) in &CAT {
            let hot = rng.random_range(0..w);
            for j in o..o + w {
                row[j] = if j == o + hot { 1.0 } else { 0.0 } - 1.0 / w as f64;
            }
        }
        for v in row.iter_mut().skip(22) {
            *v = (rng.random_range(-2.0f64..2.0) * 10.0).round() / 10.0;
        }
        row
    }

    fn span_of(rows: &[Vec<f64>]) -> DMatrix<f64> {
        let x = DMatrix::from_fn(D, rows.len(), |i, k| rows[k][i]);
        x.svd(true, false).u.unwrap().columns(0, rows.len()).into_owned()
    }

    #[test]
    fn every_row_of_a_span_is_found_and_nothing_else() {
        let l = layout(D, &CAT);
        let steps: Vec<Option<f64>> = (0..D).map(|j| (j >= 22).then_some(0.1)).collect();
        for seed in 0..5 {
            let mut rng = StdRng::seed_from_u64(seed);
            let rows: Vec<Vec<f64>> = (0..8).map(|_| random_row(&mut rng)).collect();
            let basis = span_of(&rows);
            let found = rows_in_span(
                &basis,
                &l,
                &[],
                &steps,
                &Tolerance::fixed(1e-6),
                &|_, distance| distance < 1e-6,
                1000,
            );
            assert!(found.complete && found.free.ncols() == 0);
            for row in &rows {
                assert!(
                    found
                        .rows
                        .iter()
                        .any(|f| f.row.iter().zip(row).all(|(a, b)| (a - b).abs() < 1e-9)),
                    "seed {seed}: a row of the span was missed"
                );
            }
            // Every row found lies in the span and is one the layout can hold.
            for f in &found.rows {
                let x = DVector::from_column_slice(&f.row);
                assert!((&x - &basis * basis.tr_mul(&x)).norm() < 1e-6 * x.norm());
                assert!(f.fixed);
            }
            assert!(found.rows.len() >= rows.len());
        }
    }

    /// A half of `n` keys on a grid of 0.25, with bounds from `bound`.
    fn keyed(n: usize, rng: &mut StdRng, bound: &dyn Fn(&mut StdRng) -> f64) -> Half {
        let mut keys: Vec<(f64, usize)> = (0..n)
            .map(|i| ((rng.random_range(-20i32..20) as f64) / 4.0, i))
            .collect();
        keys.sort_by(|a, b| a.0.total_cmp(&b.0));
        Half {
            blocks: Vec::new(),
            sizes: Vec::new(),
            keys,
            bounds: (0..n).map(|_| bound(rng)).collect(),
        }
    }

    fn second(half: Half) -> Second {
        Second {
            groups: grouped(&half),
            half,
        }
    }

    /// Pairs with |key_a + key_b| within `shared` plus `scale` times both bounds.
    fn brute(a: &Half, b: &Half, shared: f64, scale: f64) -> usize {
        a.keys
            .iter()
            .flat_map(|x| b.keys.iter().map(move |y| (x, y)))
            .filter(|(x, y)| (x.0 + y.0).abs() <= shared + a.bounds[x.1] + scale * b.bounds[y.1])
            .count()
    }

    #[test]
    fn the_matches_counted_are_the_pairs_within_the_tolerance() {
        let mut rng = StdRng::seed_from_u64(3);
        let (a, b) = (keyed(300, &mut rng, &|_| 0.0), keyed(200, &mut rng, &|_| 0.0));
        let b = second(b);
        // One bound for every row: exactly the pairs within it (sums land on its edges too).
        for tolerance in [0.0, 0.25, 1.0, 3.0] {
            assert_eq!(
                matches(&a, &b, tolerance),
                brute(&a, &b.half, tolerance, 1.0),
                "tolerance {tolerance}"
            );
        }
        // Bounds that grow with the row: every pair within its own bound is counted, and none
        // past twice its second half's (the groups' width).
        let grid = |rng: &mut StdRng| rng.random_range(1..40) as f64 / 16.0;
        let (a, b) = (keyed(300, &mut rng, &grid), keyed(200, &mut rng, &grid));
        let b = second(b);
        for shared in [0.0, 0.5] {
            let counted = matches(&a, &b, shared);
            assert!(brute(&a, &b.half, shared, 1.0) <= counted && counted <= brute(&a, &b.half, shared, 2.0));
            assert!(b.groups.len() > 1);
        }
    }

    #[test]
    fn a_tolerance_that_grows_with_the_row_misses_nothing_the_loosest_finds() {
        let l = layout(D, &CAT);
        let steps: Vec<Option<f64>> = (0..D).map(|j| (j >= 22).then_some(0.1)).collect();
        for seed in 0..4 {
            let mut rng = StdRng::seed_from_u64(seed);
            let rows: Vec<Vec<f64>> = (0..8).map(|_| random_row(&mut rng)).collect();
            // The span read off a noisy update: the rows drift from it.
            let mut basis = span_of(&rows);
            basis.iter_mut().for_each(|v| *v += rng.random_range(-1e-4..1e-4));
            let basis = basis.svd(true, false).u.unwrap();
            let growing = Tolerance {
                constant: 1e-4,
                scaled: DMatrix::from_fn(3, D, |_, _| rng.random_range(-1e-2..1e-2)),
                relative: 1e-4,
            };
            // A table without continuous columns adds nothing (an empty SVD had panicked).
            assert_eq!(growing.of_continuous(&l, &[]), 0.0);
            // The growing bound for a row, and at most for any row the layout holds.
            let of = |x: &DVector<f64>| growing.constant + (&growing.scaled * x).norm() + growing.relative * x.norm();
            let widest = 4.0 * (D as f64).sqrt() * 3.0;
            let loosest = growing.constant + (growing.scaled.norm() + growing.relative) * widest;
            let accept = |row: &[f64], distance: f64| {
                let x = DVector::from_column_slice(row);
                distance * x.norm() <= of(&x)
            };
            let a = rows_in_span(&basis, &l, &[], &steps, &growing, &accept, 10_000);
            let b = rows_in_span(&basis, &l, &[], &steps, &Tolerance::fixed(loosest), &accept, 10_000);
            assert!(a.complete && b.complete);
            // The same rows, found in another order.
            let sorted = |mut rows: Vec<Found>| {
                rows.sort_by(|x, y| {
                    x.row
                        .iter()
                        .zip(&y.row)
                        .fold(std::cmp::Ordering::Equal, |o, (p, q)| o.then(p.total_cmp(q)))
                });
                rows
            };
            let (a, b) = (sorted(a.rows), sorted(b.rows));
            assert_eq!(a, b, "seed {seed}");
            assert!(a.len() >= 4, "seed {seed}: the drifted span still holds the rows");
        }
    }

    #[test]
    fn categories_ruled_out_are_not_searched_and_limits_refuse() {
        let l = layout(D, &CAT);
        let mut rng = StdRng::seed_from_u64(9);
        let rows: Vec<Vec<f64>> = (0..6).map(|_| random_row(&mut rng)).collect();
        let basis = span_of(&rows);
        // Only the rows' own categories allowed: the same rows come back.
        let allowed: Vec<Vec<bool>> = CAT
            .iter()
            .map(|&(o, w)| (0..w).map(|c| rows.iter().any(|r| r[o + c] > 0.0)).collect())
            .collect();
        let found = rows_in_span(
            &basis,
            &l,
            &allowed,
            &[],
            &Tolerance::fixed(1e-6),
            &|_, d| d < 1e-6,
            1000,
        );
        assert!(found.rows.len() >= 6);
        assert_eq!(split(&[5, 4, 3, 2]).0.len() + split(&[5, 4, 3, 2]).1.len(), 4);
    }
}

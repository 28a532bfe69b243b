//! Every row the table's encoding can hold that lies in a span: the first layer's span of the
//! rows, enumerated (issue 43). A row is its categories (one hot per block) and its continuous
//! values; it lies in the span U where its part outside U, Q x (Q = I − UUᵀ), vanishes. For
//! fixed categories the continuous values that come nearest are a least-squares solution, and
//! what they cannot reach is L x_cat with L the projector onto Q's range less Q·C's (C the
//! continuous columns): a sum of one vector per block, one per category chosen, plus a constant.
//! So the rows in the span are the choices, one category per block, whose vectors sum to minus
//! the constant: a multiple-choice subset sum, solved exactly by meeting in the middle (the
//! blocks split in two halves, each half's sums enumerated, the halves matched on a projection
//! to one line, every match within the tolerance on two more lines too, then checked in full).
//! Nothing is missed: a sum within the tolerance projects within it on every line. Then each
//! row's continuous values are solved, put on their column's grid and in its range, and the row
//! is kept where it lies within its own tolerance of the span.
//!
//! Where the span leaves a continuous direction free (`Enumerated::free`: two rows of the batch
//! share their categories), least squares reads the values along it as the update's rounding
//! says, often out of their columns' ranges, and clamping each value back on its own leaves the
//! span (Adult [32, 32], B = 16, trained 1 epoch, seed 0: 9 of the batch's 16 rows were missed
//! so). There the values along the free directions are the point of the ranges nearest the span
//! (`in_range`: least squares within the box), and every row of the batch is found; such a row is
//! one point of a line of them, which nothing proves (`assess::enumerated` proves and fits only
//! where no direction is free) and the update places (`assess::span_left`).
//!
//! Where the span holds every row of the batch (the first layer's update of rank B: FedSGD, and
//! FedAvg under SGD, whose first-layer update is Σᵢ xᵢ vᵢᵀ), the batch is among the rows found;
//! where exactly B are found, they are the batch (`assess::enumerated`).
use nalgebra::{DMatrix, DVector};

use crate::attack::inversion::relax::Layout;

mod in_range;
mod sum_cache;

pub use sum_cache::SUM_CACHE_BYTES;
use sum_cache::{SUM_CACHE, SumCache};

pub use in_range::feasible_box;

/// Free directions at most along which the search takes each row's values within the ranges;
/// past them least squares reads the values, and rows of the batch read out of range are dropped
/// (Adult [32, 32], B = 32, seed 2: four free directions, 6 of the batch's 32 rows missed).
pub const FREE_SEARCHED: usize = in_range::MOST_FREE;

/// Sums one half of the blocks may enumerate at most (the search is refused past it).
pub const HALF_LIMIT: usize = 2_000_000;
/// Pairs matched on the first line at most (the search is refused past it). Each is checked on
/// `MORE_LINES` more lines before its full check, which nearly all fail on a trained network
/// (German Credit [32, 32], B = 32, 20 epochs: 3.7-8.4 million matched, 41-50 rows found).
const CHECK_LIMIT: usize = 16_000_000;
/// Other lines a matched pair's sum is projected on before it is checked in full: a pair whose
/// projection on any unit line exceeds the bound exceeds it in norm too, so none is lost.
const MORE_LINES: usize = 2;
/// Full checks at most (pairs within the bound on every line; the search is refused past it):
/// a server's scaled weights can leave millions (6 s a batch of the near-dependent generator).
const FULL_LIMIT: usize = 2_000_000;
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

impl Enumerated {
    /// A search refused past its limits: no rows, with the free directions it found.
    pub fn refused(free: DMatrix<f64>) -> Enumerated {
        Enumerated {
            rows: Vec::new(),
            complete: false,
            free,
        }
    }
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
    let continuous = layout.continuous();
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
    /// Every combination's projected sums on the `MORE_LINES` other lines, by index.
    more: Vec<[f64; MORE_LINES]>,
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

/// Every combination of `blocks`' categories, its sum of `vectors` projected on each of `lines`
/// (plus `start`), sorted by the first, and its part of the tolerance: `hot[c]` is the encoded
/// row's part on the block of column c with c hot.
fn half(
    blocks: Vec<usize>,
    columns: &[Vec<usize>],
    (vectors, hot): (&DMatrix<f64>, &[DVector<f64>]),
    lines: &[DVector<f64>; 1 + MORE_LINES],
    start: &[f64; 1 + MORE_LINES],
    tolerance: &Tolerance,
) -> Half {
    let sizes: Vec<usize> = blocks.iter().map(|&b| columns[b].len()).collect();
    let total: usize = sizes.iter().product();
    // Per block and category, its projections on every line.
    let projected: Vec<Vec<[f64; 1 + MORE_LINES]>> = blocks
        .iter()
        .map(|&b| {
            columns[b]
                .iter()
                .map(|&c| std::array::from_fn(|l| vectors.column(c).dot(&lines[l])))
                .collect()
        })
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
    let mut more = Vec::with_capacity(total);
    let mut sum = DVector::zeros(tolerance.scaled.nrows());
    for index in 0..total {
        let mut rest = index;
        let mut key = *start;
        let mut square = 0.0;
        sum.fill(0.0);
        for (k, &n) in sizes.iter().enumerate() {
            let p = &projected[k][rest % n];
            key.iter_mut().zip(p).for_each(|(key, p)| *key += p);
            square += squares[k][rest % n];
            if !sum.is_empty() {
                sum += &scaled[k][rest % n];
            }
            rest /= n;
        }
        keys.push((key[0], index));
        bounds.push(sum.norm() + tolerance.relative * square.sqrt());
        more.push(std::array::from_fn(|l| key[1 + l]));
    }
    keys.sort_by(|a, b| a.0.total_cmp(&b.0));
    Half {
        blocks,
        sizes,
        keys,
        bounds,
        more,
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
    rows_in_span_keeping(basis, layout, allowed, steps, tolerance, accept, most, SUM_CACHE)
}

/// `rows_in_span`, keeping at most `keep` numbers of the second half's sums (`SumCache`).
#[allow(clippy::too_many_arguments)]
fn rows_in_span_keeping(
    basis: &DMatrix<f64>,
    layout: &Layout,
    allowed: &[Vec<bool>],
    steps: &[Option<f64>],
    tolerance: &Tolerance,
    accept: &dyn Fn(&[f64], f64) -> bool,
    most: usize,
    keep: usize,
) -> Enumerated {
    let d = layout.d();
    let refused = Enumerated::refused;
    let q = DMatrix::<f64>::identity(d, d) - basis * basis.transpose();
    let continuous = layout.continuous();
    let qc = DMatrix::from_fn(d, continuous.len(), |i, k| q[(i, continuous[k])]);
    let (free, uc, determined) = continuous_directions(&q, &qc);
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
    // Lines to match on, fixed directions so the search is the same every run: the first to
    // pair the halves, the others to drop pairs before their full check.
    const STEPS: [f64; 1 + MORE_LINES] = [0.618_033_988_749_895, 0.414_213_562_373_095, 0.732_050_807_568_877];
    let lines: [DVector<f64>; 1 + MORE_LINES] = std::array::from_fn(|k| {
        let line = DVector::from_fn(d, |i, _| ((i as f64 + 1.0) * STEPS[k]).fract() - 0.5);
        let line = &l * line;
        let norm = line.norm();
        line / norm
    });
    if !lines.iter().all(|line| line.iter().all(|v| v.is_finite())) {
        return refused(free);
    }
    let start: [f64; 1 + MORE_LINES] = std::array::from_fn(|k| base.dot(&lines[k]));
    let Some((first, second)) = halves(&columns, (&vectors, &hot), &lines, &start, tolerance, shared) else {
        return refused(free);
    };
    // The categories' columns summed into buffers made once: millions of pairs can reach the full
    // check (the sums as nalgebra's `+` forms them, with no vector allocated per pair).
    let sum_into = |s: &mut DVector<f64>, cols: &[usize]| {
        s.fill(0.0);
        for &c in cols {
            *s += vectors.column(c);
        }
    };
    let (mut sum_a, mut sum_b, mut total) = (DVector::zeros(d), DVector::zeros(d), DVector::zeros(d));
    let mut rows = Vec::new();
    // The continuous values nearest the span: t = −(Q C)⁺ Q x_cat; where the span leaves some
    // free, the determined part of that and the point of the ranges nearest the span along the
    // free ones (`in_range`).
    let fixed = free.ncols() == 0;
    let solve = match continuous.is_empty() {
        true => Solve::Fixed(DMatrix::zeros(0, d)),
        false if !fixed && free.ncols() <= in_range::MOST_FREE => Solve::Free {
            determined,
            along: &qc * &free,
            free: free.clone(),
            q: q.clone(),
            qc: qc.clone(),
            boxes: widened_ranges(layout, &continuous),
        },
        false => match qc.clone().pseudo_inverse(1e-9) {
            Ok(pinv) => Solve::Fixed(-(pinv * &q)),
            Err(_) => return refused(free),
        },
    };
    // Each combination's sum formed once, not once per pair (`SumCache`): the pairs come grouped
    // by the first half's combination.
    let mut sums_b = SumCache::new(second.half.bounds.len(), d, keep);
    let (mut current, mut ca) = (usize::MAX, Vec::new());
    for (ia, ib, within) in within_every_line(&first, &second, shared) {
        if ia != current {
            (ca, current) = (decode(ia, &first, &columns), ia);
            sum_into(&mut sum_a, &ca);
        }
        sums_b.sum_of(ib, &mut sum_b, |s| sum_into(s, &decode(ib, &second.half, &columns)));
        for ((t, b), (a, c)) in total.iter_mut().zip(base.iter()).zip(sum_a.iter().zip(sum_b.iter())) {
            *t = b + a + c;
        }
        if total.norm() > within {
            continue;
        }
        let cb = decode(ib, &second.half, &columns);
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
    Enumerated {
        rows,
        complete: true,
        free,
    }
}

/// The continuous values the span fixes: Q·C ([d, m], `qc`) keeps their directions' norm
/// outside the span; those it does not (`DETERMINED`) are free. The free directions ([m, f]),
/// Q·C's range ([d, k]), and the least-squares values along the directions the span determines
/// (−V Σ⁻¹ Uᵀ Q, [m, d]).
fn continuous_directions(q: &DMatrix<f64>, qc: &DMatrix<f64>) -> (DMatrix<f64>, DMatrix<f64>, DMatrix<f64>) {
    let d = q.nrows();
    match qc.ncols() == 0 {
        true => (DMatrix::zeros(0, 0), DMatrix::zeros(d, 0), DMatrix::zeros(0, d)),
        false => {
            let svd = qc.clone().svd(true, true);
            let values = &svd.singular_values;
            let kept: Vec<usize> = (0..values.len()).filter(|&k| values[k] >= 1e-9).collect();
            let loose: Vec<usize> = (0..values.len()).filter(|&k| values[k] < DETERMINED).collect();
            let firm: Vec<usize> = (0..values.len()).filter(|&k| values[k] >= DETERMINED).collect();
            let v = svd.v_t.expect("asked for Vᵀ").transpose();
            let u = svd.u.expect("asked for U");
            // The least-squares values along the directions the span determines: −V Σ⁻¹ Uᵀ Q.
            let inverse = DMatrix::from_diagonal(&DVector::from_iterator(
                firm.len(),
                firm.iter().map(|&k| 1.0 / values[k]),
            ));
            let determined = -(v.select_columns(&firm) * inverse * u.select_columns(&firm).transpose() * q);
            (v.select_columns(&loose), u.select_columns(&kept), determined)
        }
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
    lines: &[DVector<f64>; 1 + MORE_LINES],
    start: &[f64; 1 + MORE_LINES],
    tolerance: &Tolerance,
    shared: f64,
) -> Option<(Half, Second)> {
    let sizes: Vec<usize> = columns.iter().map(Vec::len).collect();
    let (a, b) = split(&sizes);
    let product = |blocks: &[usize]| blocks.iter().map(|&k| sizes[k] as f64).product::<f64>();
    if product(&a) > HALF_LIMIT as f64 || product(&b) > HALF_LIMIT as f64 {
        return None;
    }
    let first = half(a, columns, parts, lines, start, tolerance);
    let second = half(b, columns, parts, lines, &[0.0; 1 + MORE_LINES], tolerance);
    let second = Second {
        groups: grouped(&second),
        half: second,
    };
    let within = matches(&first, &second, shared) <= CHECK_LIMIT
        && within_every_line(&first, &second, shared).take(FULL_LIMIT + 1).count() <= FULL_LIMIT;
    within.then_some((first, second))
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

/// The pairs of the halves (each's index, and their bound) whose sum projects within the bound on
/// every line: the pairs the search checks in full.
fn within_every_line<'a>(
    first: &'a Half,
    second: &'a Second,
    shared: f64,
) -> impl Iterator<Item = (usize, usize, f64)> + 'a {
    first.keys.iter().flat_map(move |&(key, ia)| {
        let from_a = shared + first.bounds[ia];
        second.groups.iter().flat_map(move |(widest, keys)| {
            keys[match_range(keys, key, from_a + widest)]
                .iter()
                .filter_map(move |&(key_b, ib)| {
                    let within = from_a + second.half.bounds[ib];
                    let (ma, mb) = (&first.more[ia], &second.half.more[ib]);
                    let inside =
                        (key + key_b).abs() <= within && ma.iter().zip(mb).all(|(a, b)| (a + b).abs() <= within);
                    inside.then_some((ia, ib, within))
                })
        })
    })
}

/// The sums (sorted) that `key` matches: key + key_b within the tolerance.
fn match_range(keys: &[(f64, usize)], key: f64, tolerance: f64) -> std::ops::Range<usize> {
    let from = keys.partition_point(|&(k, _)| k < -key - tolerance);
    let to = keys.partition_point(|&(k, _)| k <= -key + tolerance);
    from..to.max(from)
}

/// How a combination of categories gets its continuous values (`solved_row`).
enum Solve {
    /// Every value the span fixes (or too many free directions to search): t = −(Q C)⁺ Q x.
    Fixed(DMatrix<f64>),
    /// The `determined` part of that ([m, d]), then along the `free` directions ([m, f]) the
    /// point of the ranges nearest the span (`along` = Q C F, [d, f]).
    Free {
        determined: DMatrix<f64>,
        along: DMatrix<f64>,
        free: DMatrix<f64>,
        q: DMatrix<f64>,
        qc: DMatrix<f64>,
        /// The ranges tried, ever wider (`widened_ranges`).
        boxes: Vec<(Vec<f64>, Vec<f64>)>,
    },
}

/// The continuous columns' ranges, widened by a millionth of them, then a thousandth (a row at
/// its columns' least or greatest values, a corner of the ranges, read a little off along the
/// determined directions, needs them a little wider; clamped back by as much afterwards), and
/// the slack's whole width last (`slack`), as the search allowed before.
fn widened_ranges(layout: &Layout, continuous: &[usize]) -> Vec<(Vec<f64>, Vec<f64>)> {
    [2e-5, 0.02, 1.0]
        .into_iter()
        .map(|widen| {
            continuous
                .iter()
                .map(|&j| {
                    (
                        layout.lo[j] - widen * slack(layout, j),
                        layout.hi[j] + widen * slack(layout, j),
                    )
                })
                .unzip()
        })
        .collect()
}

/// How far past its range a continuous value may be solved before it is refused.
fn slack(layout: &Layout, j: usize) -> f64 {
    0.05 * (layout.hi[j] - layout.lo[j])
}

/// The row of the categories `a` and `b` (both halves' columns) with the continuous values that
/// bring it nearest the span (`solve`: −(Q C)⁺ Q), in range and, where `steps` are given (the
/// span fixes the values), on their grids; None where a value falls out of range.
fn solved_row(
    layout: &Layout,
    solve: &Solve,
    cold: &DVector<f64>,
    (a, b): (&[usize], &[usize]),
    continuous: &[usize],
    steps: Option<&[Option<f64>]>,
) -> Option<Vec<f64>> {
    let mut x = cold.clone();
    for &c in a.iter().chain(b) {
        x[c] = (1.0 - layout.mean[c]) / layout.std[c];
    }
    let t = match solve {
        Solve::Fixed(solve) => solve * &x,
        Solve::Free {
            determined,
            along,
            free,
            q,
            qc,
            boxes,
        } => {
            let t = determined * &x;
            let left = q * &x + qc * &t;
            // Within the ranges themselves first: a value clamped into its range afterwards
            // would leave the free line, and the span with it (by how much the span moves along
            // that column alone: Adult [32, 32], B = 16, trained 1 epoch, seed 0, fnlwgt put
            // 0.24 below its least value, a relative distance of 0.0076 for a row of the batch).
            let beta = boxes
                .iter()
                .find_map(|(lo, hi)| in_range::nearest_in_box(along, &left, (&t, free), lo, hi))?;
            t + free * beta
        }
    };
    for (k, &j) in continuous.iter().enumerate() {
        let (lo, hi) = (layout.lo[j], layout.hi[j]);
        let slack = slack(layout, j);
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
mod tests;

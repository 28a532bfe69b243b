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
        more: vec![[0.0; MORE_LINES]; n],
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

/// Two rows with the same categories put a continuous direction into the span, which a
/// rounded update holds only to its rounding: least squares then reads the rows' values along
/// it as the rounding says, past their ranges. Every row of the batch is still found, each
/// within its columns' ranges (the search had clamped such values back one by one, off the
/// line, and dropped the rows).
#[test]
fn rows_that_share_their_categories_are_found_along_the_direction_the_span_leaves_free() {
    let steps: Vec<Option<f64>> = (0..D).map(|j| (j >= 22).then_some(0.1)).collect();
    let continuous = [22, 23, 24];
    let mut past_range = 0;
    for seed in 0..8 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut rows: Vec<Vec<f64>> = (0..8).map(|_| random_row(&mut rng)).collect();
        // Row 1: row 0's categories, other continuous values.
        let twin = random_row(&mut rng);
        rows[1] = rows[0].clone();
        rows[1][22..].copy_from_slice(&twin[22..]);
        // Each continuous column's range is the rows' own, as a table's is its rows'.
        let mut l = layout(D, &CAT);
        for j in continuous {
            l.lo[j] = rows.iter().map(|r| r[j]).fold(f64::INFINITY, f64::min);
            l.hi[j] = rows.iter().map(|r| r[j]).fold(f64::NEG_INFINITY, f64::max);
        }
        // The span as a rounded update gives it: each row moved by 1e-7.
        let moved: Vec<Vec<f64>> = rows
            .iter()
            .map(|r| r.iter().map(|v| v + 1e-7 * rng.random_range(-1.0..1.0)).collect())
            .collect();
        let basis = span_of(&moved);
        let found = rows_in_span(
            &basis,
            &l,
            &[],
            &steps,
            &Tolerance::fixed(1e-5),
            &|_, distance| distance < 1e-5,
            1000,
        );
        assert!(
            found.complete && found.free.ncols() == 1,
            "seed {seed}: {}",
            found.free.ncols()
        );
        let categories = |r: &[f64]| r[..22].iter().map(|v| (v * 1e6).round() as i64).collect::<Vec<_>>();
        for (i, row) in rows.iter().enumerate() {
            assert!(
                found.rows.iter().any(|f| categories(&f.row) == categories(row)),
                "seed {seed}: row {i}'s categories were missed"
            );
        }
        for f in &found.rows {
            assert!(continuous.iter().all(|&j| f.row[j] >= l.lo[j] && f.row[j] <= l.hi[j]));
        }
        // Not vacuous: least squares over every direction (the search before) reads some
        // row's values out of their ranges, where clamping them back leaves the span.
        let q = DMatrix::<f64>::identity(D, D) - &basis * basis.transpose();
        let qc = DMatrix::from_fn(D, 3, |i, k| q[(i, continuous[k])]);
        let solve = -(qc.pseudo_inverse(1e-9).unwrap() * &q);
        for row in &rows {
            let mut x = DVector::from_column_slice(row);
            continuous.iter().for_each(|&j| x[j] = 0.0);
            let t = &solve * x;
            past_range += continuous
                .iter()
                .zip(t.iter())
                .any(|(&j, v)| *v < l.lo[j] - 1e-3 || *v > l.hi[j] + 1e-3) as usize;
        }
    }
    assert!(past_range > 0, "no row's least-squares values left their ranges");
}

/// The span of eight random rows read off a noisy update (each entry moved by up to `by`): the
/// rows drift from it.
fn drifted_span(rng: &mut StdRng, by: f64) -> DMatrix<f64> {
    let rows: Vec<Vec<f64>> = (0..8).map(|_| random_row(rng)).collect();
    let mut basis = span_of(&rows);
    basis.iter_mut().for_each(|v| *v += rng.random_range(-by..by));
    basis.svd(true, false).u.unwrap()
}

#[test]
fn a_tolerance_that_grows_with_the_row_misses_nothing_the_loosest_finds() {
    let l = layout(D, &CAT);
    let steps: Vec<Option<f64>> = (0..D).map(|j| (j >= 22).then_some(0.1)).collect();
    for seed in 0..4 {
        let mut rng = StdRng::seed_from_u64(seed);
        let basis = drifted_span(&mut rng, 1e-4);
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

/// The second half's sums kept once formed (`SumCache`) are the sums formed pair by pair: the
/// same rows, to the bit, in the same order, where the search completes and where it is refused.
#[test]
fn sums_kept_find_what_sums_formed_per_pair_find() {
    let l = layout(D, &CAT);
    let steps: Vec<Option<f64>> = (0..D).map(|j| (j >= 22).then_some(0.1)).collect();
    for seed in 0..4 {
        let basis = drifted_span(&mut StdRng::seed_from_u64(seed), 1e-3);
        let accept = |_: &[f64], distance: f64| distance < 2e-2;
        for most in [10_000, 6] {
            let search =
                |keep| rows_in_span_keeping(&basis, &l, &[], &steps, &Tolerance::fixed(0.3), &accept, most, keep);
            let (kept, formed) = (search(SUM_CACHE), search(0));
            assert_eq!(
                (kept.complete, &kept.rows),
                (formed.complete, &formed.rows),
                "seed {seed}, most {most}"
            );
            assert_eq!(
                kept.complete,
                most == 10_000,
                "seed {seed}, most {most}: {} rows",
                kept.rows.len()
            );
            if most == 10_000 {
                assert!(kept.rows.len() > 6, "seed {seed}: {} rows", kept.rows.len());
            }
        }
    }
}

/// What `assess::enumerated` skips on: a search with every category allowed is the search over
/// all of them (the same rows in the same order), and one refused past `most` rows is refused
/// past any fewer.
#[test]
fn every_category_allowed_is_the_whole_search_and_a_refusal_holds_for_fewer_rows() {
    let l = layout(D, &CAT);
    let steps: Vec<Option<f64>> = (0..D).map(|j| (j >= 22).then_some(0.1)).collect();
    let every: Vec<Vec<bool>> = CAT.iter().map(|&(_, w)| vec![true; w]).collect();
    for seed in 0..4 {
        let basis = drifted_span(&mut StdRng::seed_from_u64(seed), 1e-3);
        let accept = |_: &[f64], distance: f64| distance < 2e-2;
        let search = |allowed: &[Vec<bool>], most| {
            rows_in_span(&basis, &l, allowed, &steps, &Tolerance::fixed(0.3), &accept, most)
        };
        let all = search(&[], 10_000);
        assert!(
            all.complete && all.rows.len() > 6,
            "seed {seed}: {} rows",
            all.rows.len()
        );
        assert_eq!(search(&every, 10_000), all, "seed {seed}");
        let n = all.rows.len();
        for most in [n - 1, n / 2, 1] {
            let refused = search(&every, most);
            assert!(!refused.complete && refused.rows.is_empty(), "seed {seed}, most {most}");
            assert_eq!(refused.free, all.free, "seed {seed}, most {most}");
        }
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

//! The continuous values a span leaves free, chosen in their columns' ranges. Where two rows of
//! the batch share their categories, their difference lies in the span, and every row's values
//! slide along it: least squares fixes the values only along the directions the span
//! determines. Along a free one the span barely moves (Adult [32, 32], B = 16, trained 1 epoch,
//! seed 0: 4·10⁻⁷), so least squares put a row of the batch wherever the rounding said, out of
//! its columns' ranges, and clamping each value back into its range left the line and the span
//! with it: the search missed 9 of the batch's 16 rows, all within its own tolerance of the
//! span. Here the free coordinates are the point of the ranges nearest the span: least squares
//! within a box, so no value leaves its range and none is clamped off the line.
use nalgebra::{DMatrix, DVector};

/// Free directions at most that are searched exactly: every set of at most this many active
/// range limits is tried.
pub const MOST_FREE: usize = 3;
/// Singular values of the free directions' part outside the span at or below this count as
/// zero: there the distance does not tell one point from another.
const FLAT: f64 = 1e-14;
/// AᵀA's entries carry float64's rounding of its norm, this many times: an eigenvalue below it is
/// flat as well.
const NORMAL: f64 = 1e-15;
/// A range limit is kept to this much (encoded units) after solving for it.
const LIMIT: f64 = 1e-9;

/// β minimising ‖A β + r‖ subject to lo ≤ c + F β ≤ hi, row by row of F ([m, f], f ≤
/// `MOST_FREE`), where such a β exists. A convex problem in f unknowns has an optimum with at
/// most f independent active limits, so every set of at most f limits (on distinct rows) is
/// solved with those limits as equalities, and the best that keeps every limit is kept.
pub fn nearest_in_box(
    a: &DMatrix<f64>,
    r: &DVector<f64>,
    (c, f): (&DVector<f64>, &DMatrix<f64>),
    lo: &[f64],
    hi: &[f64],
) -> Option<DVector<f64>> {
    let free = f.ncols();
    if free == 0 || free > MOST_FREE {
        return None;
    }
    let limits = limits_of((c, f), lo, hi);
    let keeps = |beta: &DVector<f64>| keeps_limits((c, f), lo, hi, beta);
    // Every subproblem on the normal equations, f × f (A is [d, f], and its SVD per subset
    // was most of a trained network's attack: Adult [100, 100], trained 20 epochs, 2x the time).
    let (h, g) = (a.tr_mul(a), a.tr_mul(r));
    let normal = (&h, (FLAT * FLAT).max(NORMAL * h.norm()));
    // The unconstrained optimum, where it keeps every limit, is the optimum (most rows).
    if let Some(beta) = solve_with(normal, &g, f, std::iter::empty()).filter(|b| keeps(b)) {
        return Some(beta);
    }
    let mut best: Option<(f64, DVector<f64>)> = None;
    let mut active: Vec<usize> = Vec::new();
    subsets(limits.len(), free, &mut active, &mut |set| {
        let rows: Vec<usize> = set.iter().map(|&i| limits[i].0).collect();
        if (1..rows.len()).any(|i| rows[..i].contains(&rows[i])) {
            return;
        }
        let Some(beta) = solve_with(normal, &g, f, set.iter().map(|&i| limits[i])) else {
            return;
        };
        if !keeps(&beta) {
            return;
        }
        // ‖A β + r‖² less ‖r‖².
        let cost = beta.dot(&(&h * &beta)) + 2.0 * g.dot(&beta);
        if best.as_ref().is_none_or(|(b, _)| cost < *b) {
            best = Some((cost, beta));
        }
    });
    best.map(|(_, beta)| beta)
}

/// The box of β (f ≤ `MOST_FREE`) with lo ≤ c + F β ≤ hi: the bounds of the polytope's
/// vertices, each where f limits hold as equalities; None where no point keeps every limit.
pub fn feasible_box((c, f): (&DVector<f64>, &DMatrix<f64>), lo: &[f64], hi: &[f64]) -> Option<(Vec<f64>, Vec<f64>)> {
    let free = f.ncols();
    if free == 0 || free > MOST_FREE {
        return None;
    }
    let limits = limits_of((c, f), lo, hi);
    let mut vertices: Vec<DVector<f64>> = Vec::new();
    subsets(limits.len(), free, &mut Vec::new(), &mut |set| {
        if set.len() < free {
            return;
        }
        let rows = DMatrix::from_fn(free, free, |r, col| f[(limits[set[r]].0, col)]);
        let values = DVector::from_iterator(free, set.iter().map(|&i| limits[i].1));
        if let Some(beta) = rows.lu().solve(&values).filter(|b| keeps_limits((c, f), lo, hi, b)) {
            vertices.push(beta);
        }
    });
    let bound = |pick: fn(f64, f64) -> f64, from: f64| -> Vec<f64> {
        (0..free)
            .map(|k| vertices.iter().map(|v| v[k]).fold(from, pick))
            .collect()
    };
    (!vertices.is_empty()).then(|| (bound(f64::min, f64::INFINITY), bound(f64::max, f64::NEG_INFINITY)))
}

/// Each range limit on a row F moves: its row, and the value F β must take there.
fn limits_of((c, f): (&DVector<f64>, &DMatrix<f64>), lo: &[f64], hi: &[f64]) -> Vec<(usize, f64)> {
    (0..f.nrows())
        .filter(|&k| f.row(k).norm() > 1e-12)
        .flat_map(|k| [(k, lo[k] - c[k]), (k, hi[k] - c[k])])
        .collect()
}

/// Whether c + F β keeps every range limit (to `LIMIT`).
fn keeps_limits((c, f): (&DVector<f64>, &DMatrix<f64>), lo: &[f64], hi: &[f64], beta: &DVector<f64>) -> bool {
    let moved = f * beta;
    (0..f.nrows()).all(|k| moved[k] >= lo[k] - c[k] - LIMIT && moved[k] <= hi[k] - c[k] + LIMIT)
}

/// Least squares of ‖A β + r‖ with (F β)_k = v for each given limit (k, v), on the normal
/// equations (`h` = AᵀA with the eigenvalue below which a direction is flat, `g` = Aᵀr) and the
/// limits' multipliers: [H + flat·I, F_Sᵀ; F_S, 0] [β; λ] = [−g; v], a system of at most 2f
/// unknowns (the ridge picks the least β along a flat direction). None where the limits are
/// dependent (the system is singular, or its β misses them).
fn solve_with(
    (h, flat): (&DMatrix<f64>, f64),
    g: &DVector<f64>,
    f: &DMatrix<f64>,
    limits: impl Iterator<Item = (usize, f64)>,
) -> Option<DVector<f64>> {
    let limits: Vec<(usize, f64)> = limits.collect();
    let (n, k) = (f.ncols(), limits.len());
    let mut m = DMatrix::<f64>::zeros(n + k, n + k);
    let mut rhs = DVector::<f64>::zeros(n + k);
    for i in 0..n {
        for j in 0..n {
            m[(i, j)] = h[(i, j)] + if i == j { flat } else { 0.0 };
        }
        rhs[i] = -g[i];
    }
    for (s, &(row, v)) in limits.iter().enumerate() {
        for j in 0..n {
            m[(n + s, j)] = f[(row, j)];
            m[(j, n + s)] = f[(row, j)];
        }
        rhs[n + s] = v;
    }
    let solution = m.lu().solve(&rhs)?;
    let beta = solution.rows(0, n).into_owned();
    let holds = limits
        .iter()
        .all(|&(row, v)| (f.row(row).dot(&beta.transpose()) - v).abs() <= LIMIT);
    (beta.iter().all(|b| b.is_finite()) && holds).then_some(beta)
}

/// Every subset of 0..n of at most `most` elements, in increasing order, handed to `each`.
fn subsets(n: usize, most: usize, chosen: &mut Vec<usize>, each: &mut dyn FnMut(&[usize])) {
    each(chosen);
    if chosen.len() == most {
        return;
    }
    let from = chosen.last().map_or(0, |&i| i + 1);
    for i in from..n {
        chosen.push(i);
        subsets(n, most, chosen, each);
        chosen.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_point_in_the_box_is_found_where_the_unconstrained_one_lies_outside() {
        // One free direction along the first of two values; the distance falls towards +∞.
        let f = DMatrix::from_row_slice(2, 1, &[1.0, 0.0]);
        let a = DMatrix::from_row_slice(3, 1, &[1e-6, 0.0, 0.0]);
        let r = DVector::from_row_slice(&[-5e-6, 0.0, 0.0]);
        let c = DVector::from_row_slice(&[0.0, 0.3]);
        let (lo, hi) = ([-2.0, -2.0], [2.0, 2.0]);
        let beta = nearest_in_box(&a, &r, (&c, &f), &lo, &hi).unwrap();
        assert!((beta[0] - 2.0).abs() < 1e-9, "{beta}");
        // Inside the box the unconstrained optimum stands.
        let r = DVector::from_row_slice(&[-1e-6, 0.0, 0.0]);
        let beta = nearest_in_box(&a, &r, (&c, &f), &lo, &hi).unwrap();
        assert!((beta[0] - 1.0).abs() < 1e-6, "{beta}");
    }

    #[test]
    fn two_free_directions_meet_the_box_at_a_corner_or_an_edge() {
        // Two values, both free; the unconstrained optimum (3, 3) lies past both upper limits.
        let f = DMatrix::identity(2, 2);
        let a = DMatrix::from_row_slice(2, 2, &[1e-3, 0.0, 0.0, 1e-3]);
        let c = DVector::zeros(2);
        let (lo, hi) = ([-1.0, -1.0], [1.0, 1.0]);
        let beta = nearest_in_box(&a, &DVector::from_row_slice(&[-3e-3, -3e-3]), (&c, &f), &lo, &hi).unwrap();
        assert!((&beta - DVector::from_row_slice(&[1.0, 1.0])).norm() < 1e-9, "{beta}");
        // Past one limit only: on that edge, the other value at its own optimum.
        let beta = nearest_in_box(&a, &DVector::from_row_slice(&[-3e-3, -0.5e-3]), (&c, &f), &lo, &hi).unwrap();
        assert!((&beta - DVector::from_row_slice(&[1.0, 0.5])).norm() < 1e-9, "{beta}");
    }

    #[test]
    fn a_box_the_free_directions_cannot_reach_has_no_point() {
        // The free direction moves only the first value; the second lies outside its range.
        let f = DMatrix::from_row_slice(2, 1, &[1.0, 0.0]);
        let a = DMatrix::from_row_slice(1, 1, &[1e-4]);
        let c = DVector::from_row_slice(&[0.0, 3.0]);
        let none = nearest_in_box(&a, &DVector::zeros(1), (&c, &f), &[-1.0, -1.0], &[1.0, 1.0]);
        assert!(none.is_none());
    }
}

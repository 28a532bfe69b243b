//! Rows' δ's found from random subsets of the first layer's units (`ActivitySolver::solve`'s
//! last stage). A row's uᵢ is the null vector of R's rows at its inactive units; B − 1 of them
//! fix it. Where a candidate names a row's inactive units only roughly, or no candidate is near,
//! units drawn at random are all one row's often enough, and what they fix is checked as
//! `certify` checks a candidate's units: δ = R u vanishes at B + 4 units or more, and R's rows
//! there have a one-dimensional null space.
use nalgebra::{DMatrix, DVector};

use super::{ActivitySolver, EXTRA_EQUATIONS, LEVELS, Null};

/// Random subsets of a candidate's most inactive units tried (`certify_sampled`): this many over
/// all candidates, and no fewer than `SUBSET_TRIALS` per candidate (a few candidates, the rows
/// left's open slots, each far from its row, get many).
const SUBSET_BUDGET: usize = 50_000;
const SUBSET_TRIALS: usize = 48;
/// Those subsets are drawn from this many times B of the candidate's most inactive units (and
/// no fewer than B + 8).
const SUBSET_POOL: f64 = 1.5;
/// Random subsets of the units with a say in the update tried where no candidate names a row's
/// units (`sample_unguided`), with few rows: B − 1 units drawn from all are one row's inactive
/// ones in one draw of ~3,000 at B = 12 (half of 100 units inactive per row), of ~10⁵ at 16.
const UNGUIDED_TRIALS: usize = 20_000;
const UNGUIDED_ROWS: usize = 14;
/// A subset's null vector is taken as some row's where δ is below this share of its largest at
/// B + 4 units or more (the certificate then reads them exactly): loose, as B − 1 equations
/// amplify the update's rounding, and a wrong subset's δ comes that near zero at ~0.1 units.
const SUBSET_ZERO: f64 = 1e-3;

/// A u found, and whether a unit was needed for its null space (`null_of`).
type Sampled = (DVector<f64>, bool);

impl ActivitySolver<'_> {
    /// Rows' u's the candidates' own B + 4 units missed: from random subsets of each
    /// candidate's inactive units, then, where the rows are few, of all units.
    pub(super) fn sample_subsets(&self, rows: &[DVector<f64>], found: &mut Vec<DVector<f64>>) {
        let indexed: Vec<(u64, &DVector<f64>)> = (0..).zip(rows).collect();
        let trials = SUBSET_TRIALS.max(SUBSET_BUDGET / rows.len().max(1));
        for u in crate::parallel::map(&indexed, |(i, x)| self.certify_sampled(x, *i, trials))
            .into_iter()
            .flatten()
        {
            Self::add(found, u);
        }
        self.project_rounds(rows, found, LEVELS[LEVELS.len() - 1]);
        if found.len() < self.b && self.b <= UNGUIDED_ROWS {
            // Seeded by what the solver was given: the same update and candidates, the same draws.
            self.sample_unguided(found, rows.len() as u64);
            self.project_rounds(rows, found, LEVELS[LEVELS.len() - 1]);
        }
    }

    /// uᵢ for a row whose inactive units include most of the candidate's, where its B + 4 most
    /// inactive (`certify`) are not all that row's: a candidate 0.5 std off a row of 40 continuous
    /// values gets a few of them wrong, and one wrong unit spoils the null space. B − 1 units drawn
    /// at random from its 1.5 B most inactive are all its row's often enough (with 6 of 48 wrong
    /// at B = 32: one draw in 300) and fix a null vector u; a row's u makes δ = R u vanish at all
    /// of that row's inactive units, about half of them, where another's vanishes at the B − 1
    /// drawn. Those zeros are then certified as `certify` does: a one-dimensional null space.
    fn certify_sampled(&self, x: &DVector<f64>, seed: u64, trials: usize) -> Option<DVector<f64>> {
        use rand::{SeedableRng, rngs::StdRng};
        let z = self.preactivations(x);
        let mut units: Vec<usize> = (0..self.h).filter(|&j| z[j] < 0.0).collect();
        units.sort_by(|&a, &b| z[a].total_cmp(&z[b]));
        let pool = ((self.b as f64 * SUBSET_POOL) as usize)
            .max(self.b + 2 * EXTRA_EQUATIONS)
            .min(units.len());
        if pool < self.b + EXTRA_EQUATIONS {
            return None;
        }
        let mut rng = StdRng::seed_from_u64(seed);
        // A combination of two rows' u's vanishes where both rows are inactive and at one unit
        // where both are active and cancel: one the candidate activates clearly.
        let clear = LEVELS[LEVELS.len() - 1].0;
        // Only a u no unit was needed for: a candidate near a row, tried many times, finds
        // that row's u, where two rows' u's mixed would block it in `add`.
        (0..trials).find_map(|_| {
            self.subset_zeros(&units[..pool], &mut rng)
                .filter(|zeros| zeros.iter().all(|&j| z[j] <= clear))
                .and_then(|zeros| self.null_of(&zeros))
                .and_then(|(u, needed)| (!needed).then_some(u))
        })
    }

    /// Rows' u's from random subsets of every unit with a say in the update, where the rows are
    /// few (`UNGUIDED_ROWS`) and no candidate is near: the rows left once others are peeled.
    /// What one row's u and another's mix into is refused as `add` refuses it, and spoils only
    /// the rows it mixes, which `valid` then drops.
    fn sample_unguided(&self, found: &mut Vec<DVector<f64>>, seed: u64) {
        use rand::{SeedableRng, rngs::StdRng};
        let norms: Vec<f64> = (0..self.h).map(|j| self.r.row(j).norm()).collect();
        let top = norms.iter().copied().fold(0.0, f64::max);
        let live: Vec<usize> = (0..self.h).filter(|&j| norms[j] > 1e-6 * top).collect();
        if live.len() < self.b + EXTRA_EQUATIONS {
            return;
        }
        let mut rng = StdRng::seed_from_u64(seed);
        let mut needed = Vec::new();
        for _ in 0..UNGUIDED_TRIALS {
            if found.len() >= self.b {
                return;
            }
            match self
                .subset_zeros(&live, &mut rng)
                .and_then(|zeros| self.null_of(&zeros))
            {
                Some((u, false)) => Self::add(found, u),
                Some(one) => needed.push(one),
                None => {}
            }
        }
        Self::add_needed_last(found, needed);
    }

    /// Adds the u's no unit was needed for, then the others: where one of those is two rows'
    /// u's mixed, it then comes after them and `add` refuses it, where before it would have
    /// refused one of them.
    fn add_needed_last(found: &mut Vec<DVector<f64>>, sampled: Vec<Sampled>) {
        let (needed, free): (Vec<Sampled>, Vec<Sampled>) = sampled.into_iter().partition(|(_, n)| *n);
        for (u, _) in free.into_iter().chain(needed) {
            Self::add(found, u);
        }
    }

    /// The units where δ = R u vanishes (`SUBSET_ZERO`), u the null vector of R's rows at B − 1
    /// units drawn from `pool`, where they are B + 4 or more: None otherwise.
    fn subset_zeros(&self, pool: &[usize], rng: &mut impl rand::Rng) -> Option<Vec<usize>> {
        let k = self.b - 1;
        if k == 0 || pool.len() < k {
            return None;
        }
        let pick = rand::seq::index::sample(rng, pool.len(), k);
        let a = DMatrix::from_fn(k, k, |i, c| self.r[(pool[pick.index(i)], c)]);
        let last = DVector::from_fn(k, |i, _| -self.r[(pool[pick.index(i)], k)]);
        // (A⁻¹(−r_B), 1), A the drawn rows' first B − 1 columns: cheaper than their SVD.
        let y = a.lu().solve(&last)?;
        let u = DVector::from_fn(self.b, |i, _| if i < k { y[i] } else { 1.0 });
        if !u.iter().all(|v| v.is_finite()) {
            return None;
        }
        let delta = &self.r * &u;
        let big = delta.amax();
        let zeros: Vec<usize> = (0..self.h).filter(|&j| delta[j].abs() < SUBSET_ZERO * big).collect();
        (zeros.len() >= self.b + EXTRA_EQUATIONS).then_some(zeros)
    }

    /// The one-dimensional null space of R's rows at `units`, read as `certify` reads it, and
    /// whether a unit is needed for it (`null_at`): what two rows' u's mix into vanishes where
    /// both rows are inactive and at one unit where they cancel. A row's own zeros can need one
    /// too (a unit the only one of them another row is active at): a candidate's draws refuse
    /// such a u (it tries many draws, and finds its row's without one), the draws with no
    /// candidate add it last (`add_needed_last`).
    fn null_of(&self, units: &[usize]) -> Option<Sampled> {
        match self.null_at(units, true) {
            Null::One(u, needed) => Some((u, needed)),
            Null::Empty | Null::Shared => None,
        }
    }
}

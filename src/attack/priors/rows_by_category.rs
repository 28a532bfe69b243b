//! An Adam client's rows read by their categories: the first-layer units each row is active at,
//! shown by its rarer categories, and in every feature the category that reaches those units.
//!
//! `categories_held::departing_units` gives, per category c, the units D(c) at which its
//! column's update departs from the bias's negative: units where some row holding c is active
//! (a subset of them: where that row's share of the unit's gradient changes no sign or ratio of
//! its steps, Adam's update cannot tell). A category that one row alone holds reaches that row's
//! active units and no others, so two such categories of one row, in different features, reach
//! nearly the same units, and every category the row holds reaches them too. So:
//!
//! 1. categories reaching at most `ATOM_SHARE` of the units are taken in order of how few they
//!    reach, and each joins the first set of units read so far that it matches (Jaccard ≥
//!    `SAME_ROW`) and that holds no category of its feature yet, or starts one (the set grows to
//!    the union: each category misses some of the row's units);
//! 2. each set A is read as a row: in every categorical feature, among the categories shown
//!    held, the one reaching the fewest units of those that cover A nearly as well as the best
//!    (within `NEAR_BEST`); where no category of some feature covers `COVERED` of A, A is no
//!    row's (the union of two rows' units, which one category of each feature rarely covers) and
//!    is dropped.
//!
//! 3. a category held by more than one row reaches their units together: where some of its
//!    holders are read, the units none of them is active at are the others', and are read as
//!    in steps 1 and 2 (twice, rows already read skipped).
//!
//! Continuous cells are not read here (a unit's gradient mixes every active row's values).
//! Measured on Adam and AdamW clients in docs/results/recipes.md; read, not proved.

use super::categories_held::UNITS;

/// A category reaching more of the units than this share is held by more than one row, or by
/// a row active nearly everywhere, and starts no row.
const ATOM_SHARE: f64 = 0.65;
/// Two categories reaching units this alike (|A ∩ B| / |A ∪ B|) are read as one row's.
const SAME_ROW: f64 = 0.7;
/// A row's category in a feature covers at least this share of its units.
const COVERED: f64 = 0.85;
/// Categories within this share of the best cover are the row's candidates in that feature.
const NEAR_BEST: f64 = 0.05;
/// Rounds of reading what the rows read leave of their categories' units.
const PEEL_ROUNDS: usize = 2;
/// What a category's read holders leave is another holder's only where it is this share of the
/// units or more.
const LEFT_SHARE: f64 = 0.15;
/// What is left of two categories' units is one row's where this alike (less than `SAME_ROW`:
/// the units a read holder shares are gone from one and not the other).
const SAME_ROW_LEFT: f64 = 0.6;

/// One categorical feature's columns: the feature's index and its first encoded column, and
/// how many categories it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CategoricalFeature {
    pub feature: usize,
    pub offset: usize,
    pub width: usize,
}

/// A row read off the update: its category in each categorical feature, in `features`' order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRow {
    pub categories: Vec<u32>,
    /// The first-layer units the row is read active at.
    pub units: Vec<bool>,
}

fn count(a: &[bool]) -> usize {
    a.iter().filter(|&&x| x).count()
}

fn both(a: &[bool], b: &[bool]) -> usize {
    a.iter().zip(b).filter(|(x, y)| **x && **y).count()
}

/// A held category: its feature's position in `features`, its index there, its unit set.
struct Held<'a> {
    position: usize,
    category: usize,
    units: &'a [bool],
}

/// The rows read from `units` (per encoded column, `departing_units`) over the categorical
/// `features`, rarest first, then those the rows read leave of the categories they hold
/// (`PEEL_ROUNDS`); empty where no category is rare enough to show a row.
pub fn read_rows(units: &[Vec<bool>], features: &[CategoricalFeature]) -> Vec<ReadRow> {
    let Some(h) = units.iter().map(Vec::len).max().filter(|&h| h > 0) else {
        return Vec::new();
    };
    let held: Vec<Held> = features
        .iter()
        .enumerate()
        .flat_map(|(position, f)| (0..f.width).map(move |category| (position, category, &units[f.offset + category])))
        .filter(|(_, _, u)| count(u) >= UNITS)
        .map(|(position, category, units)| Held {
            position,
            category,
            units,
        })
        .collect();
    let first: Vec<(usize, Vec<bool>)> = held.iter().map(|c| (c.position, c.units.to_vec())).collect();
    let mut read: Vec<ReadRow> = (sets_alike(first, h, SAME_ROW).iter())
        .filter_map(|a| read_row(a, &held, features.len()))
        .collect();
    // A category more than one row holds reaches their units together: what the rows read of it
    // leave is another holder's (those of its units no read holder shares).
    for _ in 0..PEEL_ROUNDS {
        let left: Vec<(usize, Vec<bool>)> = (held.iter())
            .filter_map(|c| {
                let holders: Vec<&ReadRow> = (read.iter())
                    .filter(|r| r.categories[c.position] as usize == c.category)
                    .collect();
                let rest: Vec<bool> = (0..h)
                    .map(|j| c.units[j] && !holders.iter().any(|r| r.units[j]))
                    .collect();
                (!holders.is_empty() && count(&rest) as f64 >= LEFT_SHARE * h as f64).then_some((c.position, rest))
            })
            .collect();
        let found: Vec<ReadRow> = (sets_alike(left, h, SAME_ROW_LEFT).iter())
            .filter_map(|a| read_row(a, &held, features.len()))
            .filter(|r| !read.iter().any(|q| q.categories == r.categories))
            .collect();
        if found.is_empty() {
            break;
        }
        read.extend(found);
    }
    read
}

/// Sets of units of at most `ATOM_SHARE` of the `h` units, (feature position, units) each, taken
/// from the smallest and joined where alike (Jaccard ≥ `alike`) and of different features
/// (the module's step 1).
fn sets_alike(mut sets: Vec<(usize, Vec<bool>)>, h: usize, alike: f64) -> Vec<Vec<bool>> {
    sets.retain(|(_, u)| count(u) >= UNITS && count(u) as f64 <= ATOM_SHARE * h as f64);
    // Stable: equal sizes keep the encoding's order.
    sets.sort_by_key(|(_, u)| count(u));
    let mut joined: Vec<(Vec<bool>, Vec<usize>)> = Vec::new();
    for (p, d) in sets {
        let joins = joined.iter_mut().find(|(a, from)| {
            let union = a.iter().zip(&d).filter(|(x, y)| **x || **y).count();
            !from.contains(&p) && union > 0 && both(a, &d) as f64 >= alike * union as f64
        });
        match joins {
            Some((a, from)) => {
                a.iter_mut().zip(&d).for_each(|(x, y)| *x |= *y);
                from.push(p);
            }
            None => joined.push((d, vec![p])),
        }
    }
    joined.into_iter().map(|(a, _)| a).collect()
}

/// The row whose active units are `a`: per feature position, the held category covering `a`
/// (see the module's step 2); None where some feature has none.
fn read_row(a: &[bool], held: &[Held], features: usize) -> Option<ReadRow> {
    let size = count(a);
    if size == 0 {
        return None;
    }
    let mut categories = Vec::with_capacity(features);
    for p in 0..features {
        let cover = |c: &Held| both(a, c.units) as f64 / size as f64;
        let own: Vec<&Held> = held.iter().filter(|c| c.position == p).collect();
        let best = own.iter().map(|c| cover(c)).fold(0.0, f64::max);
        if best < COVERED {
            return None;
        }
        let chosen = own
            .iter()
            .filter(|c| cover(c) >= best - NEAR_BEST)
            .min_by_key(|c| count(c.units))?;
        categories.push(chosen.category as u32);
    }
    Some(ReadRow {
        categories,
        units: a.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Units 0..40 for one row, 30..70 for another, the third active everywhere; two features of
    /// three categories, the rows holding (0, 0), (1, 1) and (2, 1).
    fn units_of(active: &[Vec<usize>], holders: &[Vec<usize>], h: usize) -> Vec<bool> {
        let mut u = vec![false; h];
        for &r in holders.iter().flatten() {
            active[r].iter().for_each(|&j| u[j] = true);
        }
        u
    }

    #[test]
    fn rows_held_alone_by_rare_categories_are_read_and_a_crowd_is_not() {
        let h = 100;
        let active = vec![(0..40).collect::<Vec<_>>(), (30..70).collect(), (0..100).collect()];
        let rows = [[0usize, 0], [1, 1], [2, 1]];
        let features = [
            CategoricalFeature {
                feature: 1,
                offset: 0,
                width: 3,
            },
            CategoricalFeature {
                feature: 3,
                offset: 3,
                width: 3,
            },
        ];
        let mut units = Vec::new();
        for (p, f) in features.iter().enumerate() {
            for k in 0..f.width {
                let holders: Vec<usize> = (0..3).filter(|&r| rows[r][p] == k).collect();
                units.push(units_of(&active, &[holders], h));
            }
        }
        // Adam misses a few of a row's units in one column.
        units[0][5] = false;
        let read = read_rows(&units, &features);
        // Row 0 (categories reaching 0..40) is read whole; row 1's second category is shared with
        // the row active everywhere, so its first category alone shows it, and the second
        // feature's category covering it is category 1, the only one held there that does. Row
        // 2 reaches every unit, so no category shows it first; what row 1 leaves of their shared
        // category (units 0..30 and 70..100) shows it.
        assert_eq!(
            read.iter().map(|r| r.categories.clone()).collect::<Vec<_>>(),
            vec![vec![0, 0], vec![1, 1], vec![2, 1]]
        );
        assert_eq!(read[0].units.iter().filter(|&&u| u).count(), 40);
        // Nothing rare enough: no row.
        let crowd: Vec<Vec<bool>> = units.iter().map(|_| vec![true; h]).collect();
        assert!(read_rows(&crowd, &features).is_empty());
    }
}

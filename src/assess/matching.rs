//! Row matching by the Hungarian algorithm on the number of wrong features (SPEC §4, §6).
use pathfinding::{kuhn_munkres::kuhn_munkres_min, matrix::Matrix};

use crate::table::{Feature, Value};

/// How one feature is compared: categorical features must be equal, continuous ones within a tolerance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    pub categorical: bool,
    pub tolerance: f64,
    /// A column the table determines from a categorical one (`table::determined`), where the
    /// attack reads it so: the categorical feature, whose cell its cell falls back with.
    pub follows: Option<usize>,
}

impl Rule {
    pub fn of(features: &[Feature]) -> Vec<Rule> {
        features
            .iter()
            .map(|f| Rule {
                categorical: f.is_categorical(),
                tolerance: f.tolerance(),
                follows: None,
            })
            .collect()
    }

    pub fn agrees(&self, a: Value, b: Value) -> bool {
        if self.categorical {
            a == b
        } else {
            (a.num() - b.num()).abs() <= self.tolerance + 1e-9
        }
    }
}

/// Number of features on which two rows disagree.
pub fn wrong_features(rules: &[Rule], a: &[Value], b: &[Value]) -> i64 {
    rules
        .iter()
        .zip(a.iter().zip(b))
        .filter(|(r, (x, y))| !r.agrees(**x, **y))
        .count() as i64
}

/// For each reference row i, the index of the row matched to it, minimising total disagreement.
pub fn match_rows(rules: &[Rule], reference: &[Vec<Value>], rows: &[Vec<Value>]) -> Vec<usize> {
    assert_eq!(reference.len(), rows.len(), "matching needs equally many rows");
    if reference.is_empty() {
        return Vec::new();
    }
    let costs = Matrix::from_fn(reference.len(), rows.len(), |(i, j)| {
        wrong_features(rules, &reference[i], &rows[j])
    });
    kuhn_munkres_min(&costs).1
}

//! Continuous columns the table determines from a categorical one: every row with the same
//! category holds the same number (Adult's `education-num` is a code of `education`). The
//! attack reads such a column from its category (`assess::pooling`) instead of from the
//! members' own values of it, which the update pins far less well: on full Adult [32, 32],
//! B = 32, seeds 0–9, `education` was right in 78 % of cells and `education-num` in 61 %.
//!
//! A column is taken as determined only where the table says so beyond chance: were its values
//! drawn from its marginal independently of the category, every category's rows would agree
//! with a probability of Πc Σv p(v)^(n_c − 1) (n_c rows hold category c), and that must be below
//! `CHANCE`. So a 32-row table whose rare categories hold a row each proves nothing by them, and
//! a nearly constant column (capital-loss, 0 in most rows) is not read from the category its
//! zeros happen to share.
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{Dataset, FeatureKind, Value};

/// The largest chance, for a column independent of the category, that the table still shows it
/// constant within every category.
pub const CHANCE: f64 = 1e-6;

pub use super::dataset::Determined;

/// Every continuous column of `dataset` that one of its categorical columns determines (the one
/// that shows it least by chance, where several do); those its encoding states where it states
/// them (`Encoding::determined`: the server read them off its own table, and a received update's
/// dataset has no rows to read them from).
pub fn determined_columns(dataset: &Dataset) -> Vec<Determined> {
    if !dataset.determined.is_empty() {
        return dataset.determined.clone();
    }
    let features = &dataset.features;
    let mut found: Vec<Determined> = Vec::new();
    for (column, f) in features.iter().enumerate() {
        if !matches!(f.kind, FeatureKind::Continuous { .. }) {
            continue;
        }
        let counts = value_counts(dataset, column);
        if counts.len() < 2 {
            continue;
        }
        let best = features
            .iter()
            .enumerate()
            .filter_map(|(by, g)| match &g.kind {
                FeatureKind::Categorical { categories } => {
                    follows(dataset, column, by, categories.len(), &counts).map(|d| (by, d))
                }
                FeatureKind::Continuous { .. } => None,
            })
            .min_by(|a, b| a.1.1.total_cmp(&b.1.1));
        if let Some((by, (values, log10_chance))) = best {
            found.push(Determined {
                column,
                by,
                values,
                log10_chance,
            });
        }
    }
    found
}

/// How often each value of continuous feature `column` occurs (keyed by its bits).
fn value_counts(dataset: &Dataset, column: usize) -> HashMap<u64, usize> {
    let mut counts = HashMap::new();
    for row in &dataset.rows {
        *counts.entry(row[column].num().to_bits()).or_insert(0) += 1;
    }
    counts
}

/// The value per category of `by` where `column` is constant within each, and log₁₀ of the
/// chance of that for an independent column; None where it is not, or not beyond `CHANCE`.
fn follows(
    dataset: &Dataset,
    column: usize,
    by: usize,
    categories: usize,
    counts: &HashMap<u64, usize>,
) -> Option<(Vec<Option<f64>>, f64)> {
    let mut values: Vec<Option<f64>> = vec![None; categories];
    let mut held = vec![0usize; categories];
    for row in &dataset.rows {
        let (Value::Cat(c), v) = (row[by], row[column].num()) else {
            return None;
        };
        let c = c as usize;
        match values[c] {
            Some(w) if w.to_bits() != v.to_bits() => return None,
            _ => values[c] = Some(v),
        }
        held[c] += 1;
    }
    let n = dataset.rows.len() as f64;
    // log Σv p(v)^(k) per group of k + 1 rows, summed over the groups.
    let log_chance: f64 = held
        .iter()
        .filter(|&&k| k > 1)
        .map(|&k| {
            let agree: f64 = counts.values().map(|&m| (m as f64 / n).powi(k as i32 - 1)).sum();
            agree.ln()
        })
        .sum();
    let log10_chance = log_chance / std::f64::consts::LN_10;
    (log10_chance < CHANCE.log10()).then_some((values, log10_chance))
}

/// What a report says of a determined column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ReadFromCategory {
    /// The continuous column...
    pub column: String,
    /// ...read from this categorical one...
    pub by: String,
    /// ...whose categories (this many of them held by the table's rows) each fix its value.
    pub categories: usize,
    /// log₁₀ of the chance that a column independent of the category would show it.
    pub log10_chance: f64,
}

impl Determined {
    /// `row`'s column set to its category's value, as every row of the table holds it (a
    /// category no row of the table holds leaves it as it is).
    pub fn follow(&self, row: &mut [Value]) {
        if let Value::Cat(k) = row[self.by]
            && let Some(Some(v)) = self.values.get(k as usize)
        {
            row[self.column] = Value::Num(*v);
        }
    }

    pub fn described(&self, dataset: &Dataset) -> ReadFromCategory {
        ReadFromCategory {
            column: dataset.features[self.column].name.clone(),
            by: dataset.features[self.by].name.clone(),
            categories: self.values.iter().filter(|v| v.is_some()).count(),
            log10_chance: self.log10_chance.max(-999.0),
        }
    }
}

impl ReadFromCategory {
    /// The report's sentence.
    pub fn sentence(&self) -> String {
        format!(
            "{} read from {}: every row of the table with the same {} has the same {} ({} categories; \
             a column unrelated to it would show that with a chance below 1e{:.0})",
            self.column,
            self.by,
            self.by,
            self.column,
            self.categories,
            self.log10_chance.max(-300.0).ceil(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::adult_sample;
    use proptest::prelude::*;

    fn named(dataset: &Dataset, found: &[Determined]) -> Vec<(String, String)> {
        found
            .iter()
            .map(|d| {
                (
                    dataset.features[d.column].name.clone(),
                    dataset.features[d.by].name.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn adults_education_number_follows_its_education_and_nothing_else_follows() {
        let data = adult_sample();
        let found = determined_columns(&data);
        assert_eq!(
            named(&data, &found),
            vec![("education-num".to_string(), "education".to_string())]
        );
        let d = &found[0];
        let FeatureKind::Categorical { categories } = &data.features[d.by].kind else {
            panic!("education is categorical")
        };
        let at = |name: &str| d.values[categories.iter().position(|c| c == name).unwrap()];
        assert_eq!((at("HS-grad"), at("Bachelors")), (Some(9.0), Some(13.0)));
    }

    #[test]
    fn one_row_against_it_and_the_column_is_not_determined() {
        let mut data = adult_sample();
        let column = data.features.iter().position(|f| f.name == "education-num").unwrap();
        let v = data.rows[0][column].num();
        data.rows[0][column] = Value::Num(v + 1.0);
        assert!(named(&data, &determined_columns(&data)).is_empty());
    }

    proptest! {
        // A column shuffled against the categories keeps its marginal and loses the dependency;
        // with few rows a category's agreement is not taken for one.
        #[test]
        fn a_shuffled_or_short_table_shows_no_dependency(seed in 0u64..1000, keep in 4usize..40) {
            use rand::{SeedableRng, seq::SliceRandom};
            let mut data = adult_sample();
            let column = data.features.iter().position(|f| f.name == "education-num").unwrap();
            let mut values: Vec<Value> = data.rows.iter().map(|r| r[column]).collect();
            values.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
            for (row, v) in data.rows.iter_mut().zip(values) {
                row[column] = v;
            }
            prop_assert!(determined_columns(&data).iter().all(|d| d.column != column));
            let mut short = adult_sample();
            short.rows.truncate(keep);
            for pair in named(&short, &determined_columns(&short)) {
                prop_assert_eq!(pair, ("education-num".to_string(), "education".to_string()));
            }
        }
    }
}

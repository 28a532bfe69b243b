//! How much leaked (SPEC §6): rows matched to the truth by the Hungarian algorithm, a categorical
//! cell right iff equal, a continuous one iff within 0.319·std of the true value.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::matching::{Rule, match_rows};
use crate::table::Value;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Accuracy {
    pub total: f64,
    pub categorical: Option<f64>,
    pub continuous: Option<f64>,
    /// Per feature, in table order.
    pub per_feature: Vec<f64>,
    /// Share of rows recovered on every feature.
    pub exact_rows: f64,
}

pub struct Scored {
    pub accuracy: Accuracy,
    /// For each true row, the index of its reconstructed row.
    pub assignment: Vec<usize>,
    /// For each true row and feature, whether the matched cell is right.
    pub correct: Vec<Vec<bool>>,
}

pub fn score(rules: &[Rule], truth: &[Vec<Value>], reconstructed: &[Vec<Value>]) -> Scored {
    score_assigned(rules, truth, reconstructed, match_rows(rules, truth, reconstructed))
}

/// Scoring of rows that are aligned already (row i reconstructs row i): the attacks that know
/// which row is which (attribute reconstruction, CAFE) are not matched.
pub fn score_aligned(rules: &[Rule], truth: &[Vec<Value>], reconstructed: &[Vec<Value>]) -> Scored {
    score_assigned(rules, truth, reconstructed, (0..truth.len()).collect())
}

fn score_assigned(
    rules: &[Rule],
    truth: &[Vec<Value>],
    reconstructed: &[Vec<Value>],
    assignment: Vec<usize>,
) -> Scored {
    let correct: Vec<Vec<bool>> = truth
        .iter()
        .zip(&assignment)
        .map(|(t, &j)| {
            rules
                .iter()
                .zip(t.iter().zip(&reconstructed[j]))
                .map(|(r, (a, b))| r.agrees(*a, *b))
                .collect()
        })
        .collect();
    let rows = truth.len().max(1) as f64;
    let per_feature: Vec<f64> = (0..rules.len())
        .map(|f| correct.iter().filter(|row| row[f]).count() as f64 / rows)
        .collect();
    let mean_over = |want_cat: bool| {
        let picked: Vec<f64> = rules
            .iter()
            .zip(&per_feature)
            .filter(|(r, _)| r.categorical == want_cat)
            .map(|(_, &a)| a)
            .collect();
        (!picked.is_empty()).then(|| picked.iter().sum::<f64>() / picked.len() as f64)
    };
    let accuracy = Accuracy {
        total: per_feature.iter().sum::<f64>() / per_feature.len().max(1) as f64,
        categorical: mean_over(true),
        continuous: mean_over(false),
        exact_rows: correct.iter().filter(|row| row.iter().all(|&c| c)).count() as f64 / rows,
        per_feature,
    };
    Scored {
        accuracy,
        assignment,
        correct,
    }
}

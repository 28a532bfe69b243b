//! A regression's label: a number on every row, which the client's loss sees standardised with
//! the table's mean and std, and which the server reconstructs with each row (`Dataset::target`).
use serde::{Deserialize, Serialize};

use super::csv_input::RawTable;
use super::number::{MAX_DECIMALS, TOLERANCE_FACTOR, mean_std, parse_number_with_decimals};
use super::schema::is_missing;
use crate::error::{Error, Result};

/// A regression's label: a number per row, which the client trains on standardised with the
/// table's mean and std (its squared error's target), and the server reconstructs with each row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    pub min: f64,
    pub max: f64,
    pub decimals: u32,
    pub mean: f64,
    /// The values' unbiased std (1 where they are constant).
    pub std: f64,
}

impl Target {
    /// What the client's loss sees of a value.
    pub fn standardise(&self, v: f64) -> f32 {
        ((v - self.mean) / self.std) as f32
    }

    /// A standardised value back in the label's units: clamped to its range and rounded to its
    /// decimals, as a continuous cell is (`Dataset::decode`).
    pub fn value(&self, z: f64) -> f64 {
        let v = (z * self.std + self.mean).clamp(self.min, self.max);
        let scale = 10f64.powi(self.decimals as i32);
        let rounded = (v * scale).round() / scale;
        if rounded.is_finite() {
            rounded.clamp(self.min, self.max)
        } else {
            v
        }
    }

    /// Largest distance at which a reconstructed label counts as right, as for a continuous cell.
    pub fn tolerance(&self) -> f64 {
        TOLERANCE_FACTOR * self.std
    }

    pub fn format(&self, v: f64) -> String {
        format!("{:.*}", self.decimals as usize, v)
    }
}

/// A regression's label: every row must have a number there (a row without one cannot be left
/// out unnoticed: it is one of the client's rows). `keep`: the rows whose features are whole.
pub fn read_target(raw: &RawTable, label: usize, keep: &[usize]) -> Result<(Target, Vec<f64>)> {
    let name = &raw.headers[label];
    let dc = raw.dialect.decimal_comma;
    let missing: Vec<u64> = (0..raw.rows.len())
        .filter(|&i| is_missing(&raw.rows[i][label]))
        .map(|i| raw.lines[i])
        .collect();
    if !missing.is_empty() {
        let shown: Vec<String> = missing.iter().take(10).map(u64::to_string).collect();
        return Err(Error::Config(format!(
            "the regression label {name:?} is missing on {} rows (lines {}{}): a regression needs every \
             row's value; fill or drop those rows, or choose another label",
            missing.len(),
            shown.join(", "),
            if missing.len() > shown.len() { ", …" } else { "" }
        )));
    }
    let mut values = Vec::with_capacity(keep.len());
    let mut decimals = 0;
    for &i in keep {
        let cell = &raw.rows[i][label];
        let Some((v, places)) = parse_number_with_decimals(cell, dc) else {
            return Err(Error::Config(format!(
                "the regression label {name:?} needs a number on every row; line {} has {cell:?}",
                raw.lines[i]
            )));
        };
        decimals = decimals.max(places.min(MAX_DECIMALS));
        values.push(v);
    }
    let (mean, std) = mean_std(values.iter().copied());
    if std <= 0.0 || !std.is_finite() {
        return Err(Error::Config(format!(
            "the regression label {name:?} has one value on every row; there is nothing to predict"
        )));
    }
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Ok((
        Target {
            min,
            max,
            decimals,
            mean,
            std,
        },
        values,
    ))
}

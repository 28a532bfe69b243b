//! A feature of a table (its kind, categories or range, and where it sits in an encoded row) and
//! a decoded cell: what the dataset, an encoding file and a client's pipeline all describe.
use serde::{Deserialize, Serialize};

use super::number::TOLERANCE_FACTOR;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum FeatureKind {
    Categorical {
        categories: Vec<String>,
    },
    Continuous {
        min: f64,
        max: f64,
        decimals: u32,
        std: f64,
    },
}

/// One feature (CSV column other than the label) and where it sits in an encoded row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Feature {
    pub name: String,
    #[serde(flatten)]
    pub kind: FeatureKind,
    pub offset: usize,
}

impl Feature {
    pub fn width(&self) -> usize {
        match &self.kind {
            FeatureKind::Categorical { categories } => categories.len(),
            FeatureKind::Continuous { .. } => 1,
        }
    }
    pub fn is_categorical(&self) -> bool {
        matches!(self.kind, FeatureKind::Categorical { .. })
    }
    /// Largest distance at which a continuous value still counts as recovered.
    pub fn tolerance(&self) -> f64 {
        match &self.kind {
            FeatureKind::Categorical { .. } => 0.0,
            FeatureKind::Continuous { std, .. } => TOLERANCE_FACTOR * std,
        }
    }
}

/// A decoded cell: a category index or a number in the column's own units.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Cat(u32),
    Num(f64),
}

impl Value {
    pub fn num(self) -> f64 {
        match self {
            Value::Num(v) => v,
            Value::Cat(c) => c as f64,
        }
    }
}

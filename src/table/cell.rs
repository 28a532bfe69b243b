//! What a cell is before a column is read: missing or not, and the two kinds a column takes.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum ColumnKind {
    Categorical,
    Continuous,
}

/// Cells that mean "no value". The reference drops rows holding any of them.
#[inline]
pub fn is_missing(cell: &str) -> bool {
    // By length first: a pass over every cell of a large table asks this once per cell.
    match cell.len() {
        0 => true,
        1 => cell == "?",
        2 => cell.eq_ignore_ascii_case("na"),
        3 => cell.eq_ignore_ascii_case("nan"),
        4 => cell.eq_ignore_ascii_case("null"),
        _ => false,
    }
}

//! Column kinds: inferred from the cells (numbers → continuous, anything else → categorical),
//! overridable per column, and the label column chosen by name.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::csv_input::RawTable;
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum ColumnKind {
    Categorical,
    Continuous,
}

/// Cells that mean "no value". The reference drops rows holding any of them.
pub fn is_missing(cell: &str) -> bool {
    cell.is_empty()
        || cell == "?"
        || cell.eq_ignore_ascii_case("na")
        || cell.eq_ignore_ascii_case("nan")
        || cell.eq_ignore_ascii_case("null")
}

/// What a person sees before running: one entry per CSV column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ColumnInfo {
    pub name: String,
    pub kind: ColumnKind,
    pub distinct: usize,
    pub missing: usize,
    /// A handful of example values, for display.
    pub examples: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SchemaSummary {
    pub columns: Vec<ColumnInfo>,
    pub rows: usize,
    /// Rows with a missing value in any column (dropped by default).
    pub rows_with_missing: usize,
    /// Columns with 2..=20 distinct values, the likely labels, most plausible first.
    pub label_candidates: Vec<String>,
}

/// The kind a column gets without an override.
pub fn infer_kind(raw: &RawTable, column: usize) -> ColumnKind {
    let numeric = raw
        .rows
        .iter()
        .map(|r| r[column].as_str())
        .filter(|c| !is_missing(c))
        .all(|c| c.parse::<f64>().is_ok());
    if numeric {
        ColumnKind::Continuous
    } else {
        ColumnKind::Categorical
    }
}

pub fn summarize(raw: &RawTable) -> SchemaSummary {
    let mut columns = Vec::with_capacity(raw.headers.len());
    for (j, name) in raw.headers.iter().enumerate() {
        let mut seen = std::collections::BTreeSet::new();
        let mut missing = 0;
        let mut examples = Vec::new();
        for row in &raw.rows {
            let cell = row[j].as_str();
            if is_missing(cell) {
                missing += 1;
            } else if seen.insert(cell) && examples.len() < 5 {
                examples.push(cell.to_string());
            }
        }
        columns.push(ColumnInfo {
            name: name.clone(),
            kind: infer_kind(raw, j),
            distinct: seen.len(),
            missing,
            examples,
        });
    }
    let rows_with_missing = raw.rows.iter().filter(|r| r.iter().any(|c| is_missing(c))).count();
    let mut candidates: Vec<&ColumnInfo> = columns.iter().filter(|c| (2..=20).contains(&c.distinct)).collect();
    // Binary categorical columns at the end of the table are the usual label.
    candidates.sort_by_key(|c| (c.distinct != 2, c.kind != ColumnKind::Categorical));
    let mut label_candidates: Vec<String> = candidates.iter().map(|c| c.name.clone()).collect();
    if let Some(last) = columns.last().filter(|c| (2..=20).contains(&c.distinct)) {
        label_candidates.retain(|n| n != &last.name);
        label_candidates.insert(0, last.name.clone());
    }
    SchemaSummary {
        columns,
        rows: raw.rows.len(),
        rows_with_missing,
        label_candidates,
    }
}

/// Find a column by exact name, with an error that lists the names there are.
pub fn column_index(raw: &RawTable, name: &str) -> Result<usize> {
    raw.headers
        .iter()
        .position(|h| h == name)
        .ok_or_else(|| Error::UnknownColumn {
            name: name.to_string(),
            available: raw.headers.join(", "),
        })
}

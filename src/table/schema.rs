//! The schema a person sees before running: each column's kind (numbers → continuous, anything
//! else → categorical, overridable per column), whether it is used and why (`inference`), and the
//! likely label columns.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub use super::cell::{ColumnKind, is_missing};
use super::csv_input::RawTable;
use super::dialect::Dialect;
use super::inference::{Inferred, MAX_LABEL_CLASSES, NonNumeric, Treatment, infer, left_out_warning, stray_warning};
use super::number::parse_number;
use crate::error::{Error, Result};
use rustc_hash::FxHashSet as FastSet;

/// What a person sees before running: one entry per CSV column, with how it will be read and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ColumnInfo {
    pub name: String,
    pub kind: ColumnKind,
    pub distinct: usize,
    pub missing: usize,
    /// A handful of example values, for display.
    pub examples: Vec<String>,
    /// Used, or left out (an identifier, pandas' index: `include` puts it back), or dropped (empty).
    pub treatment: Treatment,
    /// Why the column is read the way it is, when that is not plain (empty otherwise).
    pub notes: Vec<String>,
    /// A continuous column's values that are not numbers (read as missing).
    pub non_numeric: Option<NonNumeric>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SchemaSummary {
    pub columns: Vec<ColumnInfo>,
    pub rows: usize,
    /// Rows with a missing value in a used column, a stray word in a numeric one counting as
    /// missing (dropped by default).
    pub rows_with_missing: usize,
    /// Used columns with 2..=20 distinct values, the likely labels, most plausible first.
    pub label_candidates: Vec<String>,
    /// How the file was read: encoding, delimiter, decimal mark.
    pub dialect: Dialect,
    /// The dialect in words ("UTF-8, semicolon-separated, decimal comma"), as the CLI and the
    /// page show it.
    pub read_as: String,
    /// Every decision that changes what is read: rows, columns or cells dropped, columns left
    /// out, the encoding guessed. The same words as a run's report.
    pub warnings: Vec<String>,
}

pub fn summarize(raw: &RawTable) -> SchemaSummary {
    let inferred: Vec<Inferred> = (0..raw.headers.len()).map(|j| infer(raw, j)).collect();
    let mut columns = Vec::with_capacity(raw.headers.len());
    let mut warnings = raw.warnings.clone();
    for (j, (name, inf)) in raw.headers.iter().zip(&inferred).enumerate() {
        let mut seen = FastSet::default();
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
        match (inf.treatment, &inf.non_numeric) {
            (Treatment::Used, Some(stray)) => warnings.push(stray_warning(name, stray)),
            (Treatment::Used, None) => {}
            _ => warnings.push(left_out_warning(name, inf)),
        }
        columns.push(ColumnInfo {
            name: name.clone(),
            kind: inf.kind,
            distinct: seen.len(),
            missing,
            examples,
            treatment: inf.treatment,
            notes: inf.notes.clone(),
            non_numeric: inf.non_numeric.clone(),
        });
    }
    // What a run with the defaults drops: a missing value in a used column, or a stray word in a
    // numeric one.
    let used: Vec<(usize, bool)> = inferred
        .iter()
        .enumerate()
        .filter(|(_, inf)| inf.treatment == Treatment::Used)
        .map(|(j, inf)| (j, inf.non_numeric.is_some()))
        .collect();
    let dc = raw.dialect.decimal_comma;
    let rows_with_missing = raw
        .rows
        .iter()
        .filter(|r| {
            used.iter()
                .any(|&(j, strays)| is_missing(&r[j]) || strays && parse_number(&r[j], dc).is_none())
        })
        .count();
    let likely = |c: &&ColumnInfo| c.treatment == Treatment::Used && (2..=MAX_LABEL_CLASSES).contains(&c.distinct);
    let mut candidates: Vec<&ColumnInfo> = columns.iter().filter(likely).collect();
    // Binary categorical columns at the end of the table are the usual label.
    candidates.sort_by_key(|c| (c.distinct != 2, c.kind != ColumnKind::Categorical));
    let mut label_candidates: Vec<String> = candidates.iter().map(|c| c.name.clone()).collect();
    if let Some(last) = columns.iter().rfind(|c| c.treatment == Treatment::Used).filter(likely) {
        label_candidates.retain(|n| n != &last.name);
        label_candidates.insert(0, last.name.clone());
    }
    SchemaSummary {
        columns,
        rows: raw.rows.len(),
        rows_with_missing,
        label_candidates,
        dialect: raw.dialect,
        read_as: raw.dialect.describe(),
        warnings,
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

//! How each column is read unless the user says otherwise, and why. Numbers make a column
//! continuous even with a few stray words ("unknown", "n/a"), which then count as missing; an
//! identifier (a distinct value on almost every row, e-mail addresses, UUIDs, a row number), the
//! index pandas writes as an unnamed first column, and a column without any value are left out.
//! `summarize` shows these decisions and `Dataset::from_raw` applies them, both from here, and
//! every one comes with a note that says why.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::cell::{ColumnKind, is_missing};
use super::csv_input::RawTable;
use super::number::parse_number;
use rustc_hash::{FxHashMap as FastMap, FxHashSet as FastSet};

/// A column is continuous when at least this share of its values are numbers (and at least
/// `MIN_NUMERIC_CELLS` of them): the rest are stray words, read as missing.
pub const NUMERIC_SHARE: f64 = 0.95;
/// Fewest numbers that make a column with stray words continuous (a column without any stray
/// word is continuous however short).
pub const MIN_NUMERIC_CELLS: usize = 10;
/// A text column with a distinct value on at least this share of its values is an identifier (or
/// free text): one-hot encoding would give it a column per row, and nothing of it could be scored.
pub const IDENTIFIER_SHARE: f64 = 0.95;
/// Fewest values for the identifier rules on distinct values (a small table's names are distinct
/// by chance).
pub const MIN_IDENTIFIER_ROWS: usize = 20;
/// Share of a column's values that must look like e-mail addresses or UUIDs to call it one.
pub const SHAPE_SHARE: f64 = 0.9;
/// Most classes a label takes without a warning (and the most a column offered as a likely label
/// has).
pub const MAX_LABEL_CLASSES: usize = 20;
/// A column forced continuous must hold at least this share of numbers: below it the column is
/// words, and forcing it is refused (the first word named) rather than most rows dropped.
pub const FORCED_NUMERIC_SHARE: f64 = 0.5;
/// Stray values named in a note.
const STRAY_EXAMPLES: usize = 5;

/// What the engine does with a column by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum Treatment {
    /// A feature (or the label).
    Used,
    /// Left out: a distinct value on (almost) every row, e-mail addresses, UUIDs or a row number.
    /// `include` (or a kind given for it) puts it back.
    Identifier,
    /// Left out: the unnamed first column, where pandas writes its row index and R its row names.
    /// `include` (or a kind given for it) puts it back.
    Index,
    /// Dropped: no value on any row.
    Empty,
}

/// The cells of a numeric column that are not numbers: they count as missing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct NonNumeric {
    pub count: usize,
    /// Values in the column (cells not missing), numbers and not.
    pub present: usize,
    /// The most frequent of them (at most 5), distinct.
    pub values: Vec<String>,
}

impl NonNumeric {
    /// `3 of 80 values are not numbers ("unknown", "n/a")`.
    pub fn describe(&self) -> String {
        let values = self
            .values
            .iter()
            .map(|v| format!("{v:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        let more = if self.values.len() == STRAY_EXAMPLES {
            ", …"
        } else {
            ""
        };
        format!(
            "{} of {} values are not numbers ({values}{more})",
            self.count, self.present
        )
    }
}

/// A column's default reading.
#[derive(Debug, Clone, PartialEq)]
pub struct Inferred {
    pub kind: ColumnKind,
    pub treatment: Treatment,
    /// Why the column is not simply used: its treatment, or the stray words read as missing.
    pub notes: Vec<String>,
    /// A continuous column's stray words.
    pub non_numeric: Option<NonNumeric>,
}

/// A column's numbers, one pass (stopped early for a column of words).
struct Profile<'a> {
    /// Exact only when `gave_up` is false.
    missing: usize,
    numeric: usize,
    /// The stray words, counted only when the column turns out numeric (a column of words would
    /// hash every cell it was read to).
    strays: Vec<&'a str>,
    stray_count: usize,
    /// More stray words than a numeric column can have: counting stopped.
    gave_up: bool,
}

/// Count a column's missing cells, numbers and stray words; stop after `stray_limit` stray words
/// (a column of words then costs a few of its cells, not a pass).
fn profile(raw: &RawTable, j: usize, stray_limit: usize) -> Profile<'_> {
    let dc = raw.dialect.decimal_comma;
    let mut p = Profile {
        missing: 0,
        numeric: 0,
        strays: Vec::new(),
        stray_count: 0,
        gave_up: false,
    };
    // As lean as the pass it replaced: what only an identifier needs is looked at afterwards, in
    // the few columns that could be one.
    for row in &raw.rows {
        let cell = row[j].as_str();
        if is_missing(cell) {
            p.missing += 1;
            continue;
        }
        match parse_number(cell, dc) {
            Some(_) => p.numeric += 1,
            None => {
                p.stray_count += 1;
                p.strays.push(cell);
                if p.stray_count > stray_limit {
                    p.gave_up = true;
                    break;
                }
            }
        }
    }
    p
}

impl Profile<'_> {
    fn non_numeric(&self, present: usize) -> Option<NonNumeric> {
        if self.stray_count == 0 {
            return None;
        }
        let mut counts: FastMap<&str, usize> = FastMap::default();
        for v in &self.strays {
            *counts.entry(v).or_default() += 1;
        }
        let mut values: Vec<(&str, usize)> = counts.into_iter().collect();
        values.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        Some(NonNumeric {
            count: self.stray_count,
            present,
            values: values.iter().take(STRAY_EXAMPLES).map(|(v, _)| v.to_string()).collect(),
        })
    }
}

/// A column's default kind and treatment, with the notes that explain them.
pub fn infer(raw: &RawTable, j: usize) -> Inferred {
    let n = raw.rows.len();
    let name = raw.headers[j].as_str();
    let p = profile(raw, j, ((1.0 - NUMERIC_SHARE) * n as f64) as usize);
    // Exact unless the column is words (then only used as a bound).
    let present = n - p.missing;
    let mut out = Inferred {
        kind: ColumnKind::Categorical,
        treatment: Treatment::Used,
        notes: Vec::new(),
        non_numeric: None,
    };
    if !p.gave_up && present == 0 {
        out.treatment = Treatment::Empty;
        out.notes.push(format!("no value on any of the {n} rows"));
        return out;
    }
    let numeric = !p.gave_up
        && p.numeric > 0
        && (p.stray_count == 0 || p.numeric as f64 >= NUMERIC_SHARE * present as f64 && p.numeric >= MIN_NUMERIC_CELLS);
    if numeric {
        out.kind = ColumnKind::Continuous;
        out.non_numeric = p.non_numeric(present);
        if let Some(s) = &out.non_numeric {
            out.notes.push(format!("{}: read as missing", s.describe()));
        }
    }
    if j == 0 && is_unnamed(name) {
        out.treatment = Treatment::Index;
        out.notes.insert(
            0,
            "the unnamed first column, where pandas writes its row index and R its row names".into(),
        );
        return out;
    }
    let cells = || raw.rows.iter().map(|r| r[j].as_str()).filter(|c| !is_missing(c));
    let identifier = if !numeric {
        shape(cells(), n).or_else(|| {
            let (distinct, present) = mostly_distinct(cells(), n)?;
            Some(format!(
                "a distinct value on {distinct} of {present} rows: an identifier or free text"
            ))
        })
    } else if p.stray_count == 0 && present >= MIN_IDENTIFIER_ROWS {
        if p.missing == 0 && consecutive(raw, j) {
            Some("consecutive whole numbers, one per row: a row number".to_string())
        } else if id_like_name(name) && distinct_whole_numbers(raw, j) == Some(present) {
            Some("whole numbers, distinct on every row, in a column named like an identifier".to_string())
        } else {
            None
        }
    } else {
        None
    };
    if let Some(note) = identifier {
        out.treatment = Treatment::Identifier;
        out.notes.insert(0, note);
    }
    out
}

/// How a column forced continuous reads: its stray words, or the refusal's first word when too
/// few of its values are numbers.
pub fn forced_continuous(raw: &RawTable, j: usize) -> std::result::Result<Option<NonNumeric>, (u64, String)> {
    let p = profile(raw, j, usize::MAX);
    let present = raw.rows.len() - p.missing;
    if (p.numeric as f64) < FORCED_NUMERIC_SHARE * present as f64 {
        let dc = raw.dialect.decimal_comma;
        let i = raw
            .rows
            .iter()
            .position(|r| !is_missing(&r[j]) && parse_number(&r[j], dc).is_none())
            .unwrap_or(0);
        return Err((raw.lines[i], raw.rows[i][j].clone()));
    }
    Ok(p.non_numeric(present))
}

/// pandas' name for a column without one ("Unnamed: 3").
pub fn is_unnamed(name: &str) -> bool {
    name.strip_prefix("Unnamed: ")
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// Named like an identifier: id, index, key, uuid, customer_id, customerId, CustomerID.
fn id_like_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let exact = ["id", "index", "idx", "key", "uuid", "guid", "rowid", "row_id"];
    let suffixes = ["_id", "-id", " id", ".id", "_key", "_uuid", "_guid", "_idx", "_index"];
    let camel = name.len() > 2
        && (name.ends_with("Id") || name.ends_with("ID"))
        && name[..name.len() - 2].ends_with(|c: char| c.is_ascii_lowercase());
    exact.contains(&lower.as_str()) || suffixes.iter().any(|s| lower.ends_with(s)) || lower.starts_with("id_") || camel
}

/// Repeats a column of `present` values may have and still be mostly `share` distinct (or shaped).
fn allowance(present: usize, share: f64) -> usize {
    present - (share * present as f64).ceil() as usize
}

/// The distinct values of a text column and its values, when the distinct ones are at least
/// `IDENTIFIER_SHARE` of them. Gives up as soon as there are more repeats than `rows` values
/// could allow (a few cells for a category); the exact count is checked at the end.
fn mostly_distinct<'a>(cells: impl Iterator<Item = &'a str>, rows: usize) -> Option<(usize, usize)> {
    if rows < MIN_IDENTIFIER_ROWS {
        return None;
    }
    let bound = allowance(rows, IDENTIFIER_SHARE);
    let mut seen = FastSet::default();
    let (mut present, mut repeats) = (0, 0);
    for cell in cells {
        present += 1;
        if !seen.insert(cell) {
            repeats += 1;
            if repeats > bound {
                return None;
            }
        }
    }
    (present >= MIN_IDENTIFIER_ROWS && repeats <= allowance(present, IDENTIFIER_SHARE)).then_some((seen.len(), present))
}

/// Whole numbers counting up by one from the first row to the last (a row number); stops at the
/// first that does not (the second row, for a measurement).
fn consecutive(raw: &RawTable, j: usize) -> bool {
    let dc = raw.dialect.decimal_comma;
    let mut next: Option<f64> = None;
    raw.rows.iter().all(|r| match parse_number(&r[j], dc) {
        Some(v) if v.fract() == 0.0 && next.is_none_or(|n| v == n) => {
            next = Some(v + 1.0);
            true
        }
        _ => false,
    })
}

/// How many distinct values a column of whole numbers holds (None if one is not whole).
fn distinct_whole_numbers(raw: &RawTable, j: usize) -> Option<usize> {
    let dc = raw.dialect.decimal_comma;
    let mut seen = FastSet::default();
    for r in raw.rows.iter().filter(|r| !is_missing(&r[j])) {
        if let Some(v) = parse_number(&r[j], dc) {
            if v.fract() != 0.0 {
                return None;
            }
            seen.insert(v.to_bits());
        }
    }
    Some(seen.len())
}

/// E-mail addresses or UUIDs on at least `SHAPE_SHARE` of the values: personal identifiers
/// even where they repeat. Stops once too many of `rows` values fit neither.
fn shape<'a>(cells: impl Iterator<Item = &'a str>, rows: usize) -> Option<String> {
    let allowed = allowance(rows, SHAPE_SHARE);
    let (mut emails, mut uuids, mut neither) = (0, 0, 0);
    for cell in cells {
        if is_email(cell) {
            emails += 1;
        } else if is_uuid(cell) {
            uuids += 1;
        } else {
            neither += 1;
        }
        if neither + uuids > allowed && neither + emails > allowed {
            return None;
        }
    }
    let present = emails + uuids + neither;
    let need = present - allowance(present, SHAPE_SHARE);
    if present == 0 {
        None
    } else if emails >= need {
        Some(format!("e-mail addresses on {emails} of {present} rows"))
    } else if uuids >= need {
        Some(format!("UUIDs on {uuids} of {present} rows"))
    } else {
        None
    }
}

fn is_email(cell: &str) -> bool {
    let Some((local, domain)) = cell.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !cell.contains(char::is_whitespace)
}

/// 8-4-4-4-12 hexadecimal digits, optionally in braces.
fn is_uuid(cell: &str) -> bool {
    let s = cell
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or(cell)
        .as_bytes();
    s.len() == 36
        && s.iter().enumerate().all(|(i, &b)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                b == b'-'
            } else {
                b.is_ascii_hexdigit()
            }
        })
}

/// A name as the command line takes it, quoted when the shell would split it.
pub fn flag_value(name: &str) -> String {
    if !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || "_-.:".contains(c)) {
        name.to_string()
    } else {
        format!("{name:?}")
    }
}

/// The warning for a column the reading leaves out.
pub fn left_out_warning(name: &str, inferred: &Inferred) -> String {
    let why = inferred.notes.first().map_or("", String::as_str);
    match inferred.treatment {
        Treatment::Empty => format!("column {name:?} is dropped: {why}"),
        _ => format!(
            "column {name:?} is left out ({why}); include it (--include {}) to use it",
            flag_value(name)
        ),
    }
}

/// The warning for a continuous column's stray words.
pub fn stray_warning(name: &str, stray: &NonNumeric) -> String {
    format!(
        "column {name:?} is numeric but {}: they count as missing, so their rows are dropped \
         (--kind {}=categorical reads the column as categories)",
        stray.describe(),
        flag_value(name)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_names() {
        assert!(is_email("ann.lee@example.co.uk"));
        assert!(!is_email("ann@localhost") && !is_email("a b@x.org") && !is_email("@x.org"));
        assert!(is_uuid("123e4567-e89b-12d3-a456-426614174000"));
        assert!(is_uuid("{123E4567-E89B-12D3-A456-426614174000}"));
        assert!(!is_uuid("123e4567e89b12d3a456426614174000"));
        for name in [
            "id",
            "ID",
            "customer_id",
            "customerId",
            "CustomerID",
            "order id",
            "Index",
        ] {
            assert!(id_like_name(name), "{name}");
        }
        for name in ["paid", "valid", "age", "fnlwgt", "kid"] {
            assert!(!id_like_name(name), "{name}");
        }
        assert!(is_unnamed("Unnamed: 0") && !is_unnamed("Unnamed: x"));
        assert_eq!(flag_value("customer_id"), "customer_id");
        assert_eq!(flag_value("customer id"), "\"customer id\"");
    }
}

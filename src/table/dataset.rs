//! The encoded table (SPEC §2): full one-hot categoricals, raw continuous values, every encoded
//! column standardised with the table's mean and unbiased std, bounds kept in standardised units.
use serde::{Deserialize, Serialize};

use super::csv_input::RawTable;
pub use super::feature::{Feature, FeatureKind, Value};
use super::inference::{MAX_LABEL_CLASSES, Treatment, forced_continuous, infer, left_out_warning, stray_warning};
pub use super::number::{MAX_DECIMALS, PROVED_WITHIN, TOLERANCE_FACTOR, mean_std};
use super::number::{parse_number, parse_number_with_decimals};
use super::pipeline::Pipeline;
use super::schema::{ColumnKind, column_index, is_missing};
pub use super::target::Target;
use super::target::read_target;
use crate::client::head::{Head, Task};
use crate::error::{Error, Result};
use rustc_hash::FxHashSet as FastSet;

/// Widest encoded row the engine takes. One-hot encoding gives a column one value per category, so
/// a free-text or identifier column can make rows as wide as the table is long; an attack on such
/// rows would need gigabytes and recovers nothing meaningful of that column.
pub const MAX_ENCODED_WIDTH: usize = 10_000;

/// How to build a dataset from a parsed CSV.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DatasetOptions {
    pub label: String,
    /// Column name → kind, replacing the inferred kind. A kind given for a column left out by
    /// default (an identifier, pandas' index) puts it back.
    #[serde(default)]
    pub kinds: Vec<(String, ColumnKind)>,
    /// Columns to leave out entirely (an identifier, say).
    #[serde(default)]
    pub ignore: Vec<String>,
    /// Columns left out by default (`Treatment::Identifier`, `Treatment::Index`) to use after all.
    #[serde(default)]
    pub include: Vec<String>,
    /// Classification: the label's values are classes. Regression: a number per row.
    #[serde(default)]
    pub task: Task,
}

/// A continuous column the table determines from a categorical one (`table::determined` reads
/// them off a table's rows; an encoding states them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Determined {
    /// The continuous feature (its index among the features)...
    pub column: usize,
    /// ...the categorical feature it follows...
    pub by: usize,
    /// ...and its value for each of that feature's categories (None: no row of the table holds
    /// the category, and the column is left as the members read it).
    pub values: Vec<Option<f64>>,
    /// log₁₀ of the chance that an independent column would show it (below log₁₀ `CHANCE`).
    pub log10_chance: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    pub features: Vec<Feature>,
    pub label: String,
    pub classes: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    /// Each row's class (0 for every row of a regression).
    pub labels: Vec<usize>,
    /// A regression's label (None: classification, `classes` and `labels` hold it).
    #[serde(default)]
    pub target: Option<Target>,
    /// A regression's label per row, in its units (empty for classification).
    #[serde(default)]
    pub values: Vec<f64>,
    /// Per encoded column: mean and std used for standardisation (std = 1 where it was 0).
    pub mean: Vec<f64>,
    pub std: Vec<f64>,
    /// Rows dropped because a cell was missing.
    pub dropped: usize,
    /// Things a careful user should know (constant columns, say).
    pub warnings: Vec<String>,
    /// The client's own preprocessing where its encoding file states one that is not
    /// leakscope's (a dropped category, ordinal codes): the dataset itself is always in
    /// leakscope's terms (`pipeline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<Pipeline>,
    /// Continuous columns a categorical one determines, as the dataset's encoding states them
    /// (empty: read off the rows, `table::determined`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub determined: Vec<Determined>,
}

enum Column {
    Cat(Vec<String>),
    Num(Vec<f64>, u32),
}

/// A column that becomes a feature: its index, kind, and whether its cells need a parse to tell
/// the numbers from stray words.
struct Used {
    j: usize,
    kind: ColumnKind,
    strays: bool,
}

/// A label that may not be what the user meant: numbers that look like a quantity (fractions, or
/// more than `MAX_LABEL_CLASSES` values), or text with more than that many classes.
fn label_warning(label: &str, classes: &[String], dc: bool) -> Option<String> {
    let numbers: Option<Vec<f64>> = classes.iter().map(|c| parse_number(c, dc)).collect();
    let many = classes.len() > MAX_LABEL_CLASSES;
    match numbers {
        Some(values) if many || values.iter().any(|v| v.fract() != 0.0) => Some(format!(
            "the label column {label:?} holds numbers ({} distinct values): each value is a class of the \
             client's classifier; if it is a quantity to predict, choose a column of classes as the label",
            classes.len()
        )),
        _ if many => Some(format!(
            "the label column {label:?} has {} classes (more than {MAX_LABEL_CLASSES}): each is a class of \
             the client's classifier; is it the label you meant?",
            classes.len()
        )),
        _ => None,
    }
}

impl Dataset {
    pub fn from_raw(raw: &RawTable, options: &DatasetOptions) -> Result<Dataset> {
        let label_idx = column_index(raw, &options.label)?;
        let mut forced = vec![None; raw.headers.len()];
        for (name, kind) in &options.kinds {
            forced[column_index(raw, name)?] = Some(*kind);
        }
        for name in options.ignore.iter().chain(&options.include) {
            column_index(raw, name)?;
        }
        let dc = raw.dialect.decimal_comma;
        // Every decision the reading makes is stated: the file's (encoding, repeated headers), then
        // each column's.
        let mut warnings = raw.warnings.clone();
        let used = select_columns(raw, options, label_idx, &forced, &mut warnings)?;
        if used.is_empty() {
            return Err(Error::NoFeatures);
        }
        // A row is kept when its label and every used cell have a value, and every used numeric
        // cell is a number (parsed only in the columns that have stray words).
        let keep: Vec<usize> = (0..raw.rows.len())
            .filter(|&i| {
                let r = &raw.rows[i];
                !is_missing(&r[label_idx])
                    && used
                        .iter()
                        .all(|u| !is_missing(&r[u.j]) && (!u.strays || parse_number(&r[u.j], dc).is_some()))
            })
            .collect();
        let dropped = raw.rows.len() - keep.len();
        if keep.len() < 2 {
            return Err(Error::TooFewRows {
                dropped,
                left: keep.len(),
                needed: 2,
            });
        }

        if dropped > 0 {
            let why = if used.iter().any(|u| u.strays) {
                "missing values or words in a numeric column"
            } else {
                "missing values"
            };
            warnings.push(format!("dropped {dropped} of {} rows with {why}", raw.rows.len()));
        }
        let (classes, labels, target, values) = match options.task {
            Task::Classification => {
                let mut classes: Vec<String> = keep.iter().map(|&i| raw.rows[i][label_idx].clone()).collect();
                classes.sort();
                classes.dedup();
                if classes.len() < 2 {
                    return Err(Error::SingleClass {
                        column: options.label.clone(),
                        class: classes[0].clone(),
                    });
                }
                if let Some(w) = label_warning(&options.label, &classes, dc) {
                    warnings.push(w);
                }
                let labels = keep
                    .iter()
                    .map(|&i| classes.binary_search(&raw.rows[i][label_idx]).unwrap())
                    .collect();
                (classes, labels, None, Vec::new())
            }
            Task::Regression => {
                let (target, values) = read_target(raw, label_idx, &keep)?;
                (Vec::new(), vec![0; keep.len()], Some(target), values)
            }
        };

        let columns = read_columns(raw, &used, &keep)?;
        let used: Vec<usize> = used.iter().map(|u| u.j).collect();

        // The encoded width, checked before anything of that width is built.
        check_width(raw, &used, &columns)?;

        let (features, rows, offset) = build_features(raw, &used, columns, keep.len(), &mut warnings);

        let mut dataset = Dataset {
            features,
            label: options.label.clone(),
            classes,
            rows,
            labels,
            target,
            values,
            mean: vec![0.0; offset],
            std: vec![1.0; offset],
            dropped,
            warnings,
            pipeline: None,
            determined: Vec::new(),
        };
        dataset.fit_standardisation();
        Ok(dataset)
    }

    /// Width of an encoded row.
    pub fn d(&self) -> usize {
        self.features.last().map_or(0, |f| f.offset + f.width())
    }

    pub fn n(&self) -> usize {
        self.rows.len()
    }

    pub fn task(&self) -> Task {
        match self.target {
            Some(_) => Task::Regression,
            None => Task::Classification,
        }
    }

    /// The loss's targets of the table's rows `rows` ([rows, outputs] row-major): the head's
    /// (one-hot, or 0/1) for a class, the standardised value for a regression.
    pub fn targets(&self, rows: &[usize], head: Head) -> Vec<f32> {
        match &self.target {
            Some(t) => rows.iter().map(|&i| t.standardise(self.values[i])).collect(),
            None => {
                let labels: Vec<usize> = rows.iter().map(|&i| self.labels[i]).collect();
                head.targets(&labels, self.classes.len())
            }
        }
    }

    /// Mean and unbiased std of every encoded column, feature by feature: a one-hot column's
    /// statistics follow from its category's count, so no n × d matrix is ever built.
    fn fit_standardisation(&mut self) {
        let n = self.n();
        for (f, feature) in self.features.iter().enumerate() {
            let stats: Vec<(f64, f64)> = match &feature.kind {
                FeatureKind::Categorical { categories } => {
                    let mut counts = vec![0usize; categories.len()];
                    for row in &self.rows {
                        if let Value::Cat(c) = row[f] {
                            counts[c as usize] += 1;
                        }
                    }
                    counts.into_iter().map(|count| one_hot_mean_std(count, n)).collect()
                }
                FeatureKind::Continuous { .. } => vec![mean_std(self.rows.iter().map(|r| r[f].num()))],
            };
            for (k, (mean, std)) in stats.into_iter().enumerate() {
                let c = feature.offset + k;
                self.mean[c] = mean;
                self.std[c] = if std > 0.0 { std } else { 1.0 };
            }
        }
    }

    /// One-hot / raw encoding, before standardisation.
    fn one_hot(&self, row: &[Value]) -> Vec<f64> {
        let mut out = vec![0.0; self.d()];
        for (f, v) in self.features.iter().zip(row) {
            match (v, &f.kind) {
                (Value::Cat(c), FeatureKind::Categorical { .. }) => out[f.offset + *c as usize] = 1.0,
                (v, _) => out[f.offset] = v.num(),
            }
        }
        out
    }

    /// A row as the client's own network sees it: `encode`, or its pipeline's where it has one.
    pub fn encode_for_client(&self, row: &[Value]) -> Vec<f64> {
        match &self.pipeline {
            Some(p) => p.encode(row),
            None => self.encode(row),
        }
    }

    /// A row in the standardised space the network sees.
    pub fn encode(&self, row: &[Value]) -> Vec<f64> {
        let mut out = self.one_hot(row);
        for (c, v) in out.iter_mut().enumerate() {
            *v = (*v - self.mean[c]) / self.std[c];
        }
        out
    }

    /// Whether two rows are one as scoring counts them: the same categories, each number within
    /// its column's tolerance.
    pub fn same_row(&self, a: &[Value], b: &[Value]) -> bool {
        self.features
            .iter()
            .zip(a.iter().zip(b))
            .all(|(f, (x, y))| match (x, y) {
                (Value::Num(x), Value::Num(y)) => (x - y).abs() <= f.tolerance(),
                _ => x == y,
            })
    }

    /// Standardised row → cells: argmax per categorical block; continuous values clamped to the
    /// column's range and rounded to its precision.
    pub fn decode(&self, encoded: &[f32]) -> Vec<Value> {
        self.features
            .iter()
            .map(|f| match &f.kind {
                FeatureKind::Categorical { .. } => {
                    let block = &encoded[f.offset..f.offset + f.width()];
                    // Compare in raw units: standardisation rescales each one-hot column differently.
                    let mut best = 0;
                    let mut best_v = f64::NEG_INFINITY;
                    for (k, &z) in block.iter().enumerate() {
                        let c = f.offset + k;
                        let v = z as f64 * self.std[c] + self.mean[c];
                        if v > best_v {
                            best_v = v;
                            best = k;
                        }
                    }
                    Value::Cat(best as u32)
                }
                FeatureKind::Continuous { min, max, decimals, .. } => {
                    let c = f.offset;
                    let v = (encoded[c] as f64 * self.std[c] + self.mean[c]).clamp(*min, *max);
                    // Rounded to the column's decimals, unless that overflows (a value near the
                    // largest double, or more decimals than a double has digits), and clamped again:
                    // rounding 1e-308 to 308 decimals gives 9.999999999999994e-309.
                    let scale = 10f64.powi(*decimals as i32);
                    let rounded = (v * scale).round() / scale;
                    Value::Num(if rounded.is_finite() {
                        rounded.clamp(*min, *max)
                    } else {
                        v
                    })
                }
            })
            .collect()
    }

    /// Standardised lower and upper bounds per encoded column (0 for one-hot columns).
    pub fn bounds(&self) -> (Vec<f64>, Vec<f64>) {
        let d = self.d();
        let (mut lo, mut hi) = (vec![0.0; d], vec![0.0; d]);
        for f in &self.features {
            if let FeatureKind::Continuous { min, max, .. } = f.kind {
                let c = f.offset;
                lo[c] = (min - self.mean[c]) / self.std[c];
                hi[c] = (max - self.mean[c]) / self.std[c];
            }
        }
        (lo, hi)
    }

    /// A cell as text, in the column's own terms.
    pub fn format(&self, feature: usize, value: Value) -> String {
        match (&self.features[feature].kind, value) {
            (FeatureKind::Categorical { categories }, Value::Cat(c)) => categories[c as usize].clone(),
            (FeatureKind::Continuous { decimals, .. }, v) => {
                let text = format!("{:.*}", *decimals as usize, v.num());
                // A small negative value rounds to "-0": the column never holds one.
                match text.strip_prefix('-') {
                    Some(rest) if rest.bytes().all(|b| b == b'0' || b == b'.') => rest.to_string(),
                    _ => text,
                }
            }
            (_, v) => format!("{}", v.num()),
        }
    }
}

/// Mean and unbiased std of a 0/1 column with `count` ones among `n` values.
fn one_hot_mean_std(count: usize, n: usize) -> (f64, f64) {
    let mean = count as f64 / n as f64;
    let ss = count as f64 * (1.0 - mean).powi(2) + (n - count) as f64 * mean * mean;
    let std = if n > 1 { (ss / (n - 1) as f64).sqrt() } else { 0.0 };
    (mean, std)
}

/// The columns the reading uses, with their kinds: every column but the label, those left out, and
/// those the reading leaves out by default (an identifier, pandas' index) unless put back; each
/// decision stated in `warnings`.
fn select_columns(
    raw: &RawTable,
    options: &DatasetOptions,
    label_idx: usize,
    forced: &[Option<ColumnKind>],
    warnings: &mut Vec<String>,
) -> Result<Vec<Used>> {
    let mut used: Vec<Used> = Vec::new();
    for (j, name) in raw.headers.iter().enumerate() {
        if j == label_idx || options.ignore.contains(name) {
            continue;
        }
        let inferred = infer(raw, j);
        let put_back = forced[j].is_some() || options.include.contains(name);
        match inferred.treatment {
            Treatment::Used => {}
            Treatment::Identifier | Treatment::Index if put_back => {}
            _ => {
                warnings.push(left_out_warning(name, &inferred));
                continue;
            }
        }
        let kind = forced[j].unwrap_or(inferred.kind);
        let strays = match (kind, inferred.kind) {
            (ColumnKind::Categorical, _) => None,
            (ColumnKind::Continuous, ColumnKind::Continuous) => inferred.non_numeric,
            // Forced continuous: the stray words of a column of numbers count as missing; a
            // column of words is refused.
            (ColumnKind::Continuous, ColumnKind::Categorical) => {
                forced_continuous(raw, j).map_err(|(line, value)| Error::NotNumeric {
                    column: name.clone(),
                    line,
                    value,
                })?
            }
        };
        if let Some(stray) = &strays {
            warnings.push(stray_warning(name, stray));
        }
        used.push(Used {
            j,
            kind,
            strays: strays.is_some(),
        });
    }
    Ok(used)
}

/// The used columns' cells of the kept rows: categories as written, numbers parsed (with the
/// decimals they are written to), each number finite and each column standardisable.
fn read_columns(raw: &RawTable, used: &[Used], keep: &[usize]) -> Result<Vec<Column>> {
    let dc = raw.dialect.decimal_comma;
    let mut columns = Vec::with_capacity(used.len());
    for u in used {
        let j = u.j;
        let name = &raw.headers[j];
        columns.push(match u.kind {
            ColumnKind::Categorical => Column::Cat(keep.iter().map(|&i| raw.rows[i][j].clone()).collect()),
            ColumnKind::Continuous => {
                let mut values = Vec::with_capacity(keep.len());
                let mut decimals = 0;
                for &i in keep {
                    let cell = &raw.rows[i][j];
                    let line = raw.lines[i];
                    let (v, places) = parse_number_with_decimals(cell, dc).ok_or_else(|| Error::NotNumeric {
                        column: name.clone(),
                        line,
                        value: cell.clone(),
                    })?;
                    if !v.is_finite() {
                        return Err(Error::NotFinite {
                            column: name.clone(),
                            line,
                            value: cell.clone(),
                        });
                    }
                    decimals = decimals.max(places.min(MAX_DECIMALS));
                    values.push(v);
                }
                // Numbers whose mean or spread overflows a double cannot be standardised.
                let (mean, std) = mean_std(values.iter().copied());
                if !(mean.is_finite() && std.is_finite()) {
                    let k = (0..values.len())
                        .max_by(|&a, &b| values[a].abs().total_cmp(&values[b].abs()))
                        .unwrap_or(0);
                    return Err(Error::Config(format!(
                        "column {name:?}, line {}: {} is too large: the column's mean or spread overflows a \
                         64-bit float, so it cannot be standardised",
                        raw.lines[keep[k]], raw.rows[keep[k]][j]
                    )));
                }
                Column::Num(values, decimals)
            }
        });
    }
    Ok(columns)
}

/// Refuse a table whose encoded width is past `MAX_ENCODED_WIDTH`, naming its widest columns.
fn check_width(raw: &RawTable, used: &[usize], columns: &[Column]) -> Result<()> {
    let mut widths: Vec<(usize, &str)> = used
        .iter()
        .zip(columns)
        .map(|(&j, column)| {
            let width = match column {
                Column::Cat(cells) => cells.iter().collect::<FastSet<_>>().len(),
                Column::Num(..) => 1,
            };
            (width, raw.headers[j].as_str())
        })
        .collect();
    let width: usize = widths.iter().map(|w| w.0).sum();
    if width > MAX_ENCODED_WIDTH {
        widths.sort_by_key(|w| std::cmp::Reverse(w.0));
        let widest = widths
            .iter()
            .take(3)
            .filter(|w| w.0 > 1)
            .map(|(w, name)| format!("{name:?} ({w} distinct values)"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(Error::TooWide {
            width,
            limit: MAX_ENCODED_WIDTH,
            widest,
        });
    }

    Ok(())
}

/// Every used column as a feature (its categories or range), every kept row as values, and the
/// encoded width; a column of a single value is stated in `warnings`.
fn build_features(
    raw: &RawTable,
    used: &[usize],
    columns: Vec<Column>,
    n: usize,
    warnings: &mut Vec<String>,
) -> (Vec<Feature>, Vec<Vec<Value>>, usize) {
    let mut features = Vec::with_capacity(used.len());
    let mut rows = vec![Vec::with_capacity(used.len()); n];
    let mut offset = 0;
    for (&j, column) in used.iter().zip(columns) {
        let name = raw.headers[j].clone();
        let kind = match column {
            Column::Cat(cells) => {
                let mut categories = cells.clone();
                categories.sort();
                categories.dedup();
                for (row, cell) in rows.iter_mut().zip(&cells) {
                    row.push(Value::Cat(categories.binary_search(cell).unwrap() as u32));
                }
                FeatureKind::Categorical { categories }
            }
            Column::Num(values, decimals) => {
                let (_, std) = mean_std(values.iter().copied());
                let min = values.iter().copied().fold(f64::INFINITY, f64::min);
                let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                for (row, v) in rows.iter_mut().zip(&values) {
                    row.push(Value::Num(*v));
                }
                FeatureKind::Continuous {
                    min,
                    max,
                    decimals,
                    std,
                }
            }
        };
        let feature = Feature { name, kind, offset };
        offset += feature.width();
        if feature.width() == 1 && feature.is_categorical()
            || matches!(feature.kind, FeatureKind::Continuous { min, max, .. } if min == max)
        {
            warnings.push(format!(
                "column {:?} holds a single value: it carries no information",
                feature.name
            ));
        }
        features.push(feature);
    }

    (features, rows, offset)
}

#[cfg(test)]
mod tests;

//! A table's encoding as a file: what turns a row into the network's input (one-hot categories,
//! raw numbers, every encoded column standardised) and back, without the rows. An update received
//! from elsewhere is attacked against this; `leakscope encoding` writes it from a CSV, and a
//! client's own pipeline can write it by hand (docs/usage/real-updates.md).
use serde::{Deserialize, Serialize};

use super::dataset::{Dataset, FeatureKind, MAX_DECIMALS, MAX_ENCODED_WIDTH, Target};
use super::determined::{CHANCE, Determined, determined_columns};
use super::feature::Feature;
use super::pipeline::{Coding, EncodedFeature, Pipeline};
use crate::client::activation::Activation;
use crate::client::head::Head;
use crate::error::{Error, Result};

/// The format tag written into every encoding file.
pub const ENCODING_FORMAT: &str = "leakscope-encoding/1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Encoding {
    pub format: String,
    pub label: String,
    /// The label's classes, in the order of the network's outputs (none for a regression).
    pub classes: Vec<String>,
    /// A regression's label: its range, decimals, and the mean and std the client standardises
    /// it with (absent for a classifier).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// Features in input order: a categorical one takes `categories.len()` inputs from `offset`
    /// (one fewer where a category is `dropped`, one where its `coding` is ordinal, `width` for
    /// an embedding), a continuous one input `offset`.
    pub features: Vec<EncodedFeature>,
    /// Per input: the network sees (value − mean) / std, with value the one-hot 0/1, the ordinal
    /// code or the number: a scaler's centre and scale (standard: mean_ and scale_; min-max:
    /// −min_/scale_ and 1/scale_; robust: center_ and scale_; none: 0 and 1).
    pub mean: Vec<f64>,
    pub std: Vec<f64>,
    /// The client's model, where the file states it: what a received update is checked against
    /// and attacked as when the caller states nothing (the weights show the widths and the head,
    /// but not the activation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<StatedModel>,
    /// Continuous columns the server's table determines from a categorical one (`education-num`
    /// is a code of `education`), read off that table when the encoding was written: a received
    /// update's attack reads them from the category it recovers, as a simulated one does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub determined: Vec<StatedDetermined>,
}

/// A continuous column an encoding states its table determines from a categorical one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatedDetermined {
    /// The continuous feature's name...
    pub column: String,
    /// ...the categorical feature's it follows...
    pub by: String,
    /// ...its value for each of that feature's categories, in their order (null: no row held it)...
    pub values: Vec<Option<f64>>,
    /// ...and log₁₀ of the chance that a column independent of the category would show it.
    pub log10_chance: f64,
}

/// A model as stated beside an encoding or by a caller; each part optional.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatedModel {
    /// Hidden widths; empty: logistic regression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<Vec<usize>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation: Option<Activation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<Head>,
}

impl StatedModel {
    /// The encoding's statement with the caller's: each part from whichever states it; where both
    /// do and differ, an error naming both.
    pub fn merged(file: Option<&StatedModel>, caller: StatedModel) -> Result<StatedModel> {
        let Some(file) = file else {
            return Ok(caller);
        };
        fn pick<T: PartialEq + Clone>(
            part: &str,
            file: &Option<T>,
            caller: Option<T>,
            show: impl Fn(&T) -> String,
        ) -> Result<Option<T>> {
            match (file, caller) {
                (Some(f), Some(c)) if *f != c => Err(Error::Config(format!(
                    "the encoding states the model's {part} as {} but the options say {}: leave one out",
                    show(f),
                    show(&c)
                ))),
                (f, c) => Ok(c.or_else(|| f.clone())),
            }
        }
        Ok(StatedModel {
            hidden: pick("hidden layers", &file.hidden, caller.hidden, |h| format!("{h:?}"))?,
            activation: pick("activation", &file.activation, caller.activation, |a| a.name().into())?,
            head: pick("head", &file.head, caller.head, |h| h.name().into())?,
        })
    }
}

impl Encoding {
    /// The encoding a dataset was read with: the client's pipeline where it has one, leakscope's
    /// own otherwise.
    pub fn of(dataset: &Dataset) -> Encoding {
        let (features, mean, std) = match &dataset.pipeline {
            Some(p) => (p.features.clone(), p.mean.clone(), p.std.clone()),
            None => (
                dataset.features.iter().cloned().map(EncodedFeature::plain).collect(),
                dataset.mean.clone(),
                dataset.std.clone(),
            ),
        };
        Encoding {
            format: ENCODING_FORMAT.into(),
            label: dataset.label.clone(),
            classes: dataset.classes.clone(),
            target: dataset.target.clone(),
            features,
            mean,
            std,
            model: None,
            determined: (determined_columns(dataset).into_iter())
                .map(|d| StatedDetermined {
                    column: dataset.features[d.column].name.clone(),
                    by: dataset.features[d.by].name.clone(),
                    values: d.values,
                    // JSON has no −∞: a chance below 1e-999 is stated as that.
                    log10_chance: d.log10_chance.max(-999.0),
                })
                .collect(),
        }
    }

    /// The encoding as a dataset without rows, checked whole.
    pub fn into_dataset(self) -> Result<Dataset> {
        let fail = |m: String| Err(Error::Config(format!("encoding: {m}")));
        if self.format != ENCODING_FORMAT {
            return fail(format!("format {:?} is not {ENCODING_FORMAT:?}", self.format));
        }
        match &self.target {
            None if self.classes.len() < 2 => {
                return fail(format!(
                    "the label has {} classes; an attack needs at least two",
                    self.classes.len()
                ));
            }
            Some(_) if !self.classes.is_empty() => {
                return fail("a regression's label (target) has no classes: leave classes empty".into());
            }
            Some(t) if !(t.min <= t.max && t.std > 0.0 && t.std.is_finite() && t.mean.is_finite()) => {
                return fail(format!(
                    "the regression label needs min ≤ max, a finite mean and std > 0 (min {}, max {}, mean {}, std {})",
                    t.min, t.max, t.mean, t.std
                ));
            }
            Some(t) if t.decimals > MAX_DECIMALS => {
                return fail(format!(
                    "the regression label has {} decimals; at most {MAX_DECIMALS} mean anything",
                    t.decimals
                ));
            }
            _ => {}
        }
        if self.features.is_empty() {
            return fail("no features".into());
        }
        let mut next = 0;
        for encoded in &self.features {
            check_coding(encoded)?;
            let f = &encoded.feature;
            if f.offset != next {
                return fail(format!(
                    "feature {:?} starts at input {} but the features before it end at {next}",
                    f.name, f.offset
                ));
            }
            match &f.kind {
                FeatureKind::Categorical { categories } if categories.is_empty() => {
                    return fail(format!("categorical feature {:?} has no categories", f.name));
                }
                // A constant column's std is 0 (its input's std is 1: `Dataset::fit_standardisation`).
                FeatureKind::Continuous { min, max, std, .. } if !(min <= max && *std >= 0.0 && std.is_finite()) => {
                    return fail(format!(
                        "continuous feature {:?} needs min ≤ max and std ≥ 0 (min {min}, max {max}, std {std})",
                        f.name
                    ));
                }
                FeatureKind::Continuous { decimals, .. } if *decimals > MAX_DECIMALS => {
                    return fail(format!(
                        "continuous feature {:?} has {decimals} decimals; at most {MAX_DECIMALS} mean anything in a \
                         64-bit float",
                        f.name
                    ));
                }
                _ => {}
            }
            next += encoded.width();
        }
        if self.mean.len() != next || self.std.len() != next {
            return fail(format!(
                "the features take {next} inputs but mean has {} values and std {}",
                self.mean.len(),
                self.std.len()
            ));
        }
        if let Some(c) = self.std.iter().position(|&s| !(s > 0.0 && s.is_finite())) {
            return fail(format!(
                "std of input {c} is {}; every std must be positive",
                self.std[c]
            ));
        }
        if self.mean.iter().any(|m| !m.is_finite()) {
            return fail("every mean must be a finite number".into());
        }
        let (features, mean, std, pipeline) = match self.features.iter().all(EncodedFeature::is_plain) {
            true => (
                self.features.into_iter().map(|f| f.feature).collect(),
                self.mean,
                self.std,
                None,
            ),
            false => {
                let pipeline = Pipeline {
                    features: self.features,
                    mean: self.mean,
                    std: self.std,
                };
                let (features, mean, std) = pipeline.canonical();
                (features, mean, std, Some(pipeline))
            }
        };
        let determined = (self.determined.iter())
            .map(|d| d.resolved(&features))
            .collect::<Result<Vec<_>>>()?;
        Ok(Dataset {
            features,
            label: self.label,
            classes: self.classes,
            rows: Vec::new(),
            labels: Vec::new(),
            target: self.target,
            values: Vec::new(),
            mean,
            std,
            dropped: 0,
            warnings: Vec::new(),
            pipeline,
            determined,
        })
    }
}

impl StatedDetermined {
    /// The column as the dataset's features index it, checked: a continuous column, a categorical
    /// one it follows, a value (or null) for each of its categories, each within the column's
    /// range.
    fn resolved(&self, features: &[Feature]) -> Result<Determined> {
        let fail = |m: String| {
            Err(Error::Config(format!(
                "encoding: determined column {:?}: {m}",
                self.column
            )))
        };
        let find = |name: &str| features.iter().position(|f| f.name == name);
        let (Some(column), Some(by)) = (find(&self.column), find(&self.by)) else {
            return fail(format!("{:?} or {:?} is not a feature", self.column, self.by));
        };
        let FeatureKind::Continuous { min, max, .. } = features[column].kind else {
            return fail("is not a continuous feature".into());
        };
        let FeatureKind::Categorical { categories } = &features[by].kind else {
            return fail(format!("{:?} is not a categorical feature", self.by));
        };
        if self.values.len() != categories.len() {
            return fail(format!(
                "{} values for the {} categories of {:?}",
                self.values.len(),
                categories.len(),
                self.by
            ));
        }
        if let Some(v) = self.values.iter().flatten().find(|v| !(min..=max).contains(*v)) {
            return fail(format!("the value {v} is outside the column's range [{min}, {max}]"));
        }
        if !(self.log10_chance <= CHANCE.log10()) {
            return fail(format!(
                "log10_chance {} is not below log10 of {CHANCE:e}: the table does not show it beyond chance",
                self.log10_chance
            ));
        }
        Ok(Determined {
            column,
            by,
            values: self.values.clone(),
            log10_chance: self.log10_chance,
        })
    }
}

/// A categorical feature's coding checked: ordinal codes and a dropped category belong to
/// categorical features, the dropped category is one of them and one-hot keeps at least one input.
fn check_coding(f: &EncodedFeature) -> Result<()> {
    let name = &f.feature.name;
    let fail = |m: String| Err(Error::Config(format!("encoding: {m}")));
    match &f.feature.kind {
        FeatureKind::Continuous { .. } if !f.is_plain() => fail(format!(
            "continuous feature {name:?} is given a coding ({}); codings are for categorical features",
            f.describe()
        )),
        FeatureKind::Categorical { .. } if !f.coding.is_one_hot() && f.dropped.is_some() => fail(format!(
            "categorical feature {name:?} is coded as {} and drops {:?}; only a one-hot coding drops a category",
            f.describe(),
            f.dropped.as_deref().unwrap_or_default()
        )),
        FeatureKind::Categorical { .. } if (f.coding == Coding::Embedding) != f.width.is_some() => fail(format!(
            "categorical feature {name:?}: an embedding states its width (the table's columns), and only an \
             embedding has one"
        )),
        FeatureKind::Categorical { .. } if f.coding != Coding::Embedding && f.tensor.is_some() => fail(format!(
            "categorical feature {name:?} names a tensor but is not coded as an embedding"
        )),
        FeatureKind::Categorical { .. } if f.width == Some(0) || f.width.is_some_and(|w| w > MAX_ENCODED_WIDTH) => {
            fail(format!(
                "categorical feature {name:?} has an embedding {} wide; it takes 1 to {MAX_ENCODED_WIDTH} inputs",
                f.width.unwrap_or(0)
            ))
        }
        FeatureKind::Categorical { categories } => match &f.dropped {
            Some(d) if !categories.contains(d) => fail(format!(
                "categorical feature {name:?} drops {d:?}, which is not one of its categories"
            )),
            Some(_) if categories.len() < 2 => fail(format!(
                "categorical feature {name:?} drops its only category and takes no input"
            )),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{DatasetOptions, parse_csv};

    #[test]
    fn an_encoding_round_trips_and_bad_ones_are_named() {
        let csv = b"a,b,y\n1,x,p\n2,z,q\n3,x,p\n";
        let data = Dataset::from_raw(
            &parse_csv(csv, 1 << 20).unwrap(),
            &DatasetOptions {
                label: "y".into(),
                ..Default::default()
            },
        )
        .unwrap();
        let enc = Encoding::of(&data);
        let back = enc.clone().into_dataset().unwrap();
        assert_eq!(back.encode(&data.rows[1]), data.encode(&data.rows[1]));
        assert_eq!((back.d(), back.classes.clone()), (data.d(), data.classes.clone()));
        let mut short = enc.clone();
        short.std.pop();
        let err = short.into_dataset().unwrap_err().to_string();
        assert!(
            err.contains("the features take 3 inputs but mean has 3 values and std 2"),
            "{err}"
        );
        let mut one_class = enc.clone();
        one_class.classes.truncate(1);
        assert!(
            one_class
                .into_dataset()
                .unwrap_err()
                .to_string()
                .contains("at least two")
        );
        let mut negative = enc;
        if let FeatureKind::Continuous { std, .. } = &mut negative.features[0].feature.kind {
            *std = -1.0;
        }
        assert!(negative.into_dataset().unwrap_err().to_string().contains("std ≥ 0"));
    }

    #[test]
    fn decimals_beyond_a_double_are_refused() {
        // Found by tests/prop_encoding.rs (a long run): 4294967295 decimals read, and formatting one
        // value of the column in a report would have allocated 4 GiB.
        let data = Dataset::from_raw(
            &parse_csv(b"a,y\n1.5,p\n2,q\n", 1 << 20).unwrap(),
            &DatasetOptions {
                label: "y".into(),
                ..Default::default()
            },
        )
        .unwrap();
        let mut enc = Encoding::of(&data);
        if let FeatureKind::Continuous { decimals, .. } = &mut enc.features[0].feature.kind {
            *decimals = u32::MAX;
        }
        let err = enc.into_dataset().unwrap_err().to_string();
        assert!(
            err.contains("continuous feature \"a\" has 4294967295 decimals; at most 340"),
            "{err}"
        );
    }

    #[test]
    fn the_encoding_of_a_table_with_a_constant_column_reads_back() {
        // Found by tests/prop_table.rs: a constant numeric column's std is 0, which the reader
        // refused, so `leakscope encoding` wrote files `attack-update` would not read.
        let data = Dataset::from_raw(
            &parse_csv(b"a,b,y\n0,1,p\n0,2,q\n", 1 << 20).unwrap(),
            &DatasetOptions {
                label: "y".into(),
                ..Default::default()
            },
        )
        .unwrap();
        let text = serde_json::to_string(&Encoding::of(&data)).unwrap();
        let back = serde_json::from_str::<Encoding>(&text).unwrap().into_dataset().unwrap();
        assert_eq!((back.d(), back.std.clone()), (data.d(), data.std.clone()));
    }

    #[test]
    fn a_stated_model_merges_with_the_callers_and_a_conflict_names_both() {
        let file = StatedModel {
            hidden: Some(vec![32, 32]),
            activation: Some(Activation::Gelu),
            head: None,
        };
        let caller = StatedModel {
            head: Some(Head::Sigmoid),
            ..Default::default()
        };
        let merged = StatedModel::merged(Some(&file), caller).unwrap();
        assert_eq!(merged.hidden, Some(vec![32, 32]));
        assert_eq!(
            (merged.activation, merged.head),
            (Some(Activation::Gelu), Some(Head::Sigmoid))
        );
        let clash = StatedModel {
            activation: Some(Activation::Tanh),
            ..Default::default()
        };
        let e = StatedModel::merged(Some(&file), clash).unwrap_err().to_string();
        assert!(
            e.contains("the encoding states the model's activation as gelu but the options say tanh"),
            "{e}"
        );
        // Written only where stated: an encoding without a model reads as before.
        let json = r#"{"activation": {"kind": "tanh"}, "hidden": []}"#;
        let read: StatedModel = serde_json::from_str(json).unwrap();
        assert_eq!(
            (read.hidden, read.activation, read.head),
            (Some(vec![]), Some(Activation::Tanh), None)
        );
        assert!(serde_json::from_str::<StatedModel>(r#"{"activaton": "relu"}"#).is_err());
    }

    /// The Adult sample's encoding states that its education-num is a code of its education; the
    /// dataset read back from the file (no rows) reads the same columns as the table, and a
    /// statement the features do not bear out is refused by name.
    #[test]
    fn the_columns_a_table_determines_travel_in_its_encoding() {
        let data = crate::table::adult_sample();
        let enc = Encoding::of(&data);
        let stated: Vec<(&str, &str)> = enc.determined.iter().map(|d| (&d.column[..], &d.by[..])).collect();
        assert_eq!(stated, [("education-num", "education")]);
        let text = serde_json::to_string(&enc).unwrap();
        let back = serde_json::from_str::<Encoding>(&text).unwrap().into_dataset().unwrap();
        assert!(back.rows.is_empty());
        let (ours, theirs) = (determined_columns(&back), determined_columns(&data));
        assert_eq!(ours.len(), 1);
        assert_eq!(
            (ours[0].column, ours[0].by, &ours[0].values),
            (theirs[0].column, theirs[0].by, &theirs[0].values)
        );
        let refused = |edit: &dyn Fn(&mut StatedDetermined)| {
            let mut bad = enc.clone();
            edit(&mut bad.determined[0]);
            bad.into_dataset().unwrap_err().to_string()
        };
        assert!(refused(&|d| d.column = "nope".into()).contains("is not a feature"));
        assert!(refused(&|d| d.column = "workclass".into()).contains("is not a continuous feature"));
        assert!(refused(&|d| d.by = "age".into()).contains("\"age\" is not a categorical feature"));
        assert!(
            refused(&|d| {
                d.values.pop();
            })
            .contains("15 values for the 16 categories")
        );
        assert!(refused(&|d| d.values[0] = Some(99.0)).contains("outside the column's range"));
        assert!(refused(&|d| d.log10_chance = -1.0).contains("not below"));
    }
}

//! A client's own preprocessing, as its encoding file states it: which inputs each column takes,
//! how a categorical column is coded (one-hot with every category, one-hot with a dropped
//! category, or ordinal codes) and the affine scaling of every input. scikit-learn's
//! `OneHotEncoder` / `OrdinalEncoder` and its standard, min-max and robust scalers, and pandas'
//! `get_dummies`, are all of this form.
//!
//! The attack itself works in leakscope's own terms: full one-hot blocks, one input per
//! continuous column (`Dataset`). A pipeline whose every categorical column is a full one-hot
//! block is those terms already (any column order, any per-input scaling); one that drops a
//! category or codes ordinally is not, and `received::pipeline` rewrites the client's network and
//! update into them where that is exact.
use serde::{Deserialize, Serialize};

use super::feature::{Feature, FeatureKind, Value};

/// How a categorical column becomes inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Coding {
    /// One input per category (0/1), less the `dropped` one where stated.
    #[default]
    OneHot,
    /// One input: the category's index in `categories` (scikit-learn's `OrdinalEncoder`).
    Ordinal,
    /// `width` inputs: the category's row of an `nn.Embedding` table (the network's own weights,
    /// [categories, width], indexed in `categories`' order), named by `tensor` or found by
    /// `received::pipeline`'s convention.
    Embedding,
}

impl Coding {
    pub fn is_one_hot(&self) -> bool {
        *self == Coding::OneHot
    }
}

/// A feature as an encoding file states it: the feature (its `offset` in the client's inputs)
/// and, for a categorical one, its coding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EncodedFeature {
    #[serde(flatten)]
    pub feature: Feature,
    #[serde(default, skip_serializing_if = "Coding::is_one_hot")]
    pub coding: Coding,
    /// One-hot only: the category that has no input (it reads as every input of the block 0):
    /// scikit-learn's `drop="first"` / `"if_binary"` / a list, pandas' `drop_first`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<String>,
    /// Embedding only: the table's width (the inputs it takes)...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<usize>,
    /// ...and the module that holds it (`embeddings.workclass`, say; `.weight` optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor: Option<String>,
}

impl EncodedFeature {
    /// A feature in leakscope's own terms.
    pub fn plain(feature: Feature) -> EncodedFeature {
        EncodedFeature {
            feature,
            coding: Coding::OneHot,
            dropped: None,
            width: None,
            tensor: None,
        }
    }

    /// Whether this is a full one-hot block or a continuous input, as leakscope codes them.
    pub fn is_plain(&self) -> bool {
        self.coding.is_one_hot() && self.dropped.is_none() && self.width.is_none() && self.tensor.is_none()
    }

    /// The index of the dropped category, checked by `Encoding::into_dataset`.
    pub fn dropped_index(&self) -> Option<usize> {
        let FeatureKind::Categorical { categories } = &self.feature.kind else {
            return None;
        };
        self.dropped
            .as_ref()
            .and_then(|d| categories.iter().position(|c| c == d))
    }

    /// One-hot only: the client's input (its offset) of category `c`; None for the dropped one.
    pub fn one_hot_input(&self, c: usize) -> Option<usize> {
        let at = self.feature.offset;
        match self.dropped_index() {
            Some(d) if c == d => None,
            Some(d) if c > d => Some(at + c - 1),
            _ => Some(at + c),
        }
    }

    /// Inputs this feature takes in the client's network.
    pub fn width(&self) -> usize {
        match (&self.feature.kind, self.coding) {
            (FeatureKind::Categorical { .. }, Coding::Ordinal) => 1,
            (FeatureKind::Categorical { .. }, Coding::Embedding) => self.width.unwrap_or(0),
            (FeatureKind::Categorical { categories }, Coding::OneHot) => {
                categories.len() - self.dropped.is_some() as usize
            }
            (FeatureKind::Continuous { .. }, _) => 1,
        }
    }

    /// A short description of the coding, for messages.
    pub fn describe(&self) -> String {
        match (self.coding, &self.dropped) {
            (Coding::Ordinal, _) => "ordinal codes".into(),
            (Coding::Embedding, _) => format!("an embedding {} wide", self.width.unwrap_or(0)),
            (Coding::OneHot, Some(d)) => format!("one-hot without {d:?}"),
            (Coding::OneHot, None) => "one-hot".into(),
        }
    }
}

/// The client's pipeline where it is not leakscope's own: its features with their codings and
/// offsets in the client's inputs, and each input's centre and scale (input = (value − mean) / std).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pipeline {
    pub features: Vec<EncodedFeature>,
    pub mean: Vec<f64>,
    pub std: Vec<f64>,
}

impl Pipeline {
    /// Width of the client's input.
    pub fn d(&self) -> usize {
        self.mean.len()
    }

    /// Whether a column passes through an embedding table.
    pub fn embeds(&self) -> bool {
        self.features.iter().any(|f| f.coding == Coding::Embedding)
    }

    /// A row (cells in the features' order) as the client's network sees it. An embedded
    /// column's inputs are its table's row, which the file does not hold: the category's index
    /// (what the client feeds its `nn.Embedding`) stands at its first input, 0 after it.
    pub fn encode(&self, row: &[Value]) -> Vec<f64> {
        let mut out = vec![0.0; self.d()];
        for (f, v) in self.features.iter().zip(row) {
            let at = f.feature.offset;
            match (v, f.coding) {
                (Value::Cat(c), Coding::Ordinal | Coding::Embedding) => out[at] = *c as f64,
                (Value::Cat(c), Coding::OneHot) => {
                    if let Some(j) = f.one_hot_input(*c as usize) {
                        out[j] = 1.0;
                    }
                }
                (v, _) => out[at] = v.num(),
            }
        }
        for (c, v) in out.iter_mut().enumerate() {
            *v = (*v - self.mean[c]) / self.std[c];
        }
        out
    }

    /// The same features in leakscope's terms (full one-hot blocks, in the client's column
    /// order) and each canonical input's centre and scale: the client's where the input is the
    /// client's, and 0 / 1 for a dropped category and for every input of an ordinal column.
    pub fn canonical(&self) -> (Vec<Feature>, Vec<f64>, Vec<f64>) {
        let (mut features, mut mean, mut std) = (Vec::new(), Vec::new(), Vec::new());
        for f in &self.features {
            let offset = mean.len();
            let at = f.feature.offset;
            match (&f.feature.kind, f.coding) {
                (FeatureKind::Categorical { categories }, Coding::OneHot) => {
                    for c in 0..categories.len() {
                        let client = f.one_hot_input(c);
                        mean.push(client.map_or(0.0, |j| self.mean[j]));
                        std.push(client.map_or(1.0, |j| self.std[j]));
                    }
                }
                (FeatureKind::Categorical { categories }, Coding::Ordinal | Coding::Embedding) => {
                    mean.extend(std::iter::repeat_n(0.0, categories.len()));
                    std.extend(std::iter::repeat_n(1.0, categories.len()));
                }
                (FeatureKind::Continuous { .. }, _) => {
                    mean.push(self.mean[at]);
                    std.push(self.std[at]);
                }
            }
            features.push(Feature {
                offset,
                ..f.feature.clone()
            });
        }
        (features, mean, std)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cat(name: &str, categories: &[&str], offset: usize) -> Feature {
        Feature {
            name: name.into(),
            kind: FeatureKind::Categorical {
                categories: categories.iter().map(|c| c.to_string()).collect(),
            },
            offset,
        }
    }

    #[test]
    fn a_dropped_category_and_ordinal_codes_encode_as_scikit_learn_does() {
        let age = Feature {
            name: "age".into(),
            kind: FeatureKind::Continuous {
                min: 0.0,
                max: 90.0,
                decimals: 0,
                std: 10.0,
            },
            offset: 0,
        };
        let p = Pipeline {
            features: vec![
                EncodedFeature::plain(age),
                EncodedFeature {
                    dropped: Some("b".into()),
                    ..EncodedFeature::plain(cat("c", &["a", "b", "c"], 1))
                },
                EncodedFeature {
                    coding: Coding::Ordinal,
                    ..EncodedFeature::plain(cat("o", &["x", "y", "z"], 3))
                },
            ],
            mean: vec![40.0, 0.0, 0.0, 1.0],
            std: vec![10.0, 1.0, 1.0, 0.5],
        };
        let widths: Vec<usize> = p.features.iter().map(|f| f.width()).collect();
        assert_eq!(widths, [1, 2, 1]);
        let row = |c, o| vec![Value::Num(50.0), Value::Cat(c), Value::Cat(o)];
        assert_eq!(p.encode(&row(0, 2)), [1.0, 1.0, 0.0, 2.0]);
        assert_eq!(
            p.encode(&row(1, 0)),
            [1.0, 0.0, 0.0, -2.0],
            "the dropped category is all zeros"
        );
        assert_eq!(p.encode(&row(2, 1)), [1.0, 0.0, 1.0, 0.0]);
        let (features, mean, std) = p.canonical();
        let offsets: Vec<usize> = features.iter().map(|f| f.offset).collect();
        assert_eq!(offsets, [0, 1, 4]);
        assert_eq!(mean, [40.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(std, [10.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
    }
}

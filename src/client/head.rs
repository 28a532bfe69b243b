//! The client's output layer and loss. PyTorch's two recipes for a classifier: `softmax`, one
//! logit per class under `nn.CrossEntropyLoss`, and `sigmoid`, one logit for a two-class label
//! under `nn.BCEWithLogitsLoss` (the target is 1 for the label's second class); and its recipe for
//! a regression, `linear`: one output under `nn.MSELoss` on the standardised label. All three give
//! the outputs' gradient s·(p − y)/B (s = 1, or 2 for the squared error), so the explicit backward
//! pass is the same past the head; only p, s and p's Jacobian (the attacker's second-order
//! gradient) differ.
use burn::tensor::{Tensor, activation};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::activation::Activation;
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, Default)]
#[serde(rename_all = "snake_case")]
pub enum Head {
    /// One output per class, softmax cross-entropy.
    #[default]
    Softmax,
    /// One output for a two-class label, binary cross-entropy on its sigmoid.
    Sigmoid,
    /// One output for a continuous label, mean squared error: the task `regression`.
    Linear,
}

/// What the client's network predicts: a label's class, or a continuous label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, Default)]
#[serde(rename_all = "snake_case")]
pub enum Task {
    #[default]
    Classification,
    /// Mean squared error on a continuous label, which the server does not know: it reconstructs
    /// it with each row.
    Regression,
}

impl Task {
    pub const NAMES: [&'static str; 2] = ["classification", "regression"];

    pub fn name(&self) -> &'static str {
        match self {
            Task::Classification => "classification",
            Task::Regression => "regression",
        }
    }

    pub fn parse(name: &str) -> Result<Task> {
        match name.trim().to_ascii_lowercase().as_str() {
            "classification" => Ok(Task::Classification),
            "regression" => Ok(Task::Regression),
            other => Err(Error::Config(format!(
                "unknown task {other:?}: use one of {}",
                Self::NAMES.join(", ")
            ))),
        }
    }

    /// The head of this task given the head a caller stated (None: the task's default). A
    /// regression's is its one linear output; a classifier's is softmax or sigmoid.
    pub fn head(&self, stated: Option<Head>) -> Result<Head> {
        match (self, stated) {
            (Task::Regression, None | Some(Head::Linear)) => Ok(Head::Linear),
            (Task::Regression, Some(h)) => Err(Error::Config(format!(
                "a regression's head is one linear output under the squared error; the {} head is a \
                 classifier's: leave the head out",
                h.name()
            ))),
            (Task::Classification, Some(Head::Linear)) => Err(Error::Config(
                "the linear head is a regression's: state the task as regression, or use the softmax or \
                 sigmoid head"
                    .into(),
            )),
            (Task::Classification, h) => Ok(h.unwrap_or_default()),
        }
    }
}

impl Head {
    /// The names the CLI takes.
    pub const NAMES: [&'static str; 3] = ["softmax", "sigmoid", "linear"];

    pub fn name(&self) -> &'static str {
        match self {
            Head::Softmax => "softmax",
            Head::Sigmoid => "sigmoid",
            Head::Linear => "linear",
        }
    }

    pub fn task(&self) -> Task {
        match self {
            Head::Linear => Task::Regression,
            _ => Task::Classification,
        }
    }

    /// s in the outputs' gradient s·(p − y)/B: PyTorch's MSELoss differentiates (z − y)² to 2(z − y).
    pub fn scale(&self) -> f64 {
        match self {
            Head::Linear => 2.0,
            _ => 1.0,
        }
    }

    pub fn parse(name: &str) -> Result<Head> {
        match name.trim().to_ascii_lowercase().as_str() {
            "softmax" => Ok(Head::Softmax),
            "sigmoid" => Ok(Head::Sigmoid),
            "linear" => Ok(Head::Linear),
            other => Err(Error::Config(format!(
                "unknown head {other:?}: use one of {}",
                Self::NAMES.join(", ")
            ))),
        }
    }

    /// The last layer's width for a label of `classes` classes.
    pub fn outputs(&self, classes: usize) -> usize {
        match self {
            Head::Softmax => classes,
            Head::Sigmoid | Head::Linear => 1,
        }
    }

    /// The label's classes behind a last layer of `outputs` outputs (none for a regression).
    pub fn classes(&self, outputs: usize) -> usize {
        match self {
            Head::Softmax => outputs,
            Head::Sigmoid => 2,
            Head::Linear => 0,
        }
    }

    /// A sigmoid head is one logit for a yes/no label; the message names the label's classes.
    pub fn check_label(&self, classes: &[String]) -> Result<()> {
        if *self == Head::Sigmoid && classes.len() != 2 {
            return Err(Error::Config(format!(
                "a sigmoid head is one logit for a two-class label; this label has {} classes ({}): \
                 use the softmax head",
                classes.len(),
                classes.join(", ")
            )));
        }
        Ok(())
    }

    /// The loss's targets, [rows, outputs] row-major: one-hot, or 1 where the label is the second
    /// class. A regression's targets are its label's values (`Dataset::targets`), not classes.
    pub fn targets(&self, labels: &[usize], classes: usize) -> Vec<f32> {
        match self {
            Head::Linear => panic!("a regression's targets are its label's values, not classes"),
            Head::Softmax => {
                let mut out = vec![0f32; labels.len() * classes];
                for (i, &c) in labels.iter().enumerate() {
                    out[i * classes + c] = 1.0;
                }
                out
            }
            Head::Sigmoid => labels.iter().map(|&c| (c == 1) as u8 as f32).collect(),
        }
    }

    /// p from the logits [N, B, outputs].
    pub fn probabilities(&self, logits: Tensor<3>) -> Tensor<3> {
        match self {
            Head::Softmax => activation::softmax(logits, 2),
            Head::Sigmoid => activation::sigmoid(logits),
            Head::Linear => logits,
        }
    }

    /// dL/d(logits) from dL/dp and p: through the softmax's Jacobian diag(p) − ppᵀ, the
    /// sigmoid's p(1 − p), or the identity.
    pub fn reverse(&self, p: Tensor<3>, p_bar: Tensor<3>) -> Tensor<3> {
        match self {
            Head::Softmax => {
                let inner = (p_bar.clone() * p.clone()).sum_dim(2);
                p * (p_bar - inner)
            }
            Head::Sigmoid => p.clone() * p.neg().add_scalar(1.0) * p_bar,
            Head::Linear => p_bar,
        }
    }

    /// One row's class probabilities from its logits, on the host (`outputs` values in,
    /// `classes` out); a regression's prediction itself.
    pub fn host_probabilities(&self, logits: &[f64]) -> Vec<f64> {
        match self {
            Head::Linear => logits.to_vec(),
            Head::Softmax => {
                let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = logits.iter().map(|v| (v - max).exp()).collect();
                let sum: f64 = e.iter().sum();
                e.into_iter().map(|v| v / sum).collect()
            }
            Head::Sigmoid => {
                let p = 1.0 / (1.0 + (-logits[0]).exp());
                vec![1.0 - p, p]
            }
        }
    }

    /// Class `c`'s share of a last-layer gradient row (one value per output): the sigmoid head's
    /// one output is the second class's, and the first class's is its negative.
    pub fn class_gradient(&self, row: &[f32], c: usize) -> f64 {
        match self {
            Head::Softmax => row[c] as f64,
            Head::Sigmoid if c == 1 => row[0] as f64,
            Head::Sigmoid => -(row[0] as f64),
            Head::Linear => row[0] as f64,
        }
    }
}

/// What the client's network computes besides its weights: the nonlinearity between its layers
/// and its head.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Model {
    pub activation: Activation,
    pub head: Head,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sigmoid_head_is_one_logit_for_a_two_class_label() {
        let two = vec!["no".to_string(), "yes".to_string()];
        assert_eq!(Head::Sigmoid.outputs(2), 1);
        assert_eq!(Head::Sigmoid.classes(1), 2);
        assert!(Head::Sigmoid.check_label(&two).is_ok());
        let three: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let e = Head::Sigmoid.check_label(&three).unwrap_err().to_string();
        assert!(
            e.contains("a sigmoid head is one logit for a two-class label; this label has 3 classes (a, b, c)"),
            "{e}"
        );
        assert_eq!(Head::Sigmoid.targets(&[0, 1, 1], 2), vec![0.0, 1.0, 1.0]);
        assert_eq!(Head::Softmax.targets(&[1, 0], 2), vec![0.0, 1.0, 1.0, 0.0]);
        // The two-class view of one logit: p(yes) = σ(z), and class 0's gradient is the negative.
        let p = Head::Sigmoid.host_probabilities(&[0.0]);
        assert_eq!(p, vec![0.5, 0.5]);
        assert_eq!(Head::Sigmoid.class_gradient(&[0.25], 0), -0.25);
        assert!(
            Head::parse("tanh")
                .unwrap_err()
                .to_string()
                .contains("use one of softmax, sigmoid")
        );
        assert_eq!(Head::parse(" Sigmoid").unwrap(), Head::Sigmoid);
    }
}

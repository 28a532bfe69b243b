//! The attribute attack's own settings (`AttackSpec::Attribute`): plain data.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Members the attribute attack averages by default: one unknown column is far easier than a
/// whole row, and a few members steady the guess of rows the update says little about.
pub const DEFAULT_ENSEMBLE: usize = 5;

/// Most rounds the attribute attack observes (each is a whole simulated training in every step).
pub const MAX_ROUNDS: usize = 20;

/// Attribute reconstruction (Lyu & Chen): the server knows every column of the client's rows but
/// `column` and relaxes that one alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AttributeSettings {
    /// The sensitive column the server does not know (categorical).
    pub column: String,
    /// Match the updates by squared error instead of cosine (the paper's L2 baseline).
    #[serde(default)]
    pub l2: bool,
    /// Whether the server knows which rows the client trained on (`attack::attribute::membership`).
    #[serde(default)]
    pub membership: Membership,
    /// Rounds the server observes (the first ones): in each the client trains from the model the
    /// previous round's update left, and the attack sums the rounds' losses. 1 by default.
    #[serde(default = "one_round")]
    pub rounds: usize,
    /// Members averaged.
    #[serde(default = "default_ensemble")]
    pub ensemble: usize,
}

fn one_round() -> usize {
    1
}

fn default_ensemble() -> usize {
    DEFAULT_ENSEMBLE
}

impl AttributeSettings {
    /// The attack on `column` with every other setting at its default.
    pub fn on(column: impl Into<String>) -> AttributeSettings {
        AttributeSettings {
            column: column.into(),
            l2: false,
            membership: Membership::Known,
            rounds: 1,
            ensemble: DEFAULT_ENSEMBLE,
        }
    }
}

/// Whether the server knows which rows the client trained on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum Membership {
    #[default]
    Known,
    /// It holds the client's rows among as many others and infers which (`attack::attribute::membership`).
    Unknown,
}

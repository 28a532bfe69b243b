//! The attacks as the engine offers them to a caller: each one's name, label, what it is, the
//! protocols it takes and its own settings with their defaults and limits, as options of
//! `RunOptions`. A page builds its attack form, hints and result cards from this description, so
//! no attack's name, default or option routing is written in JavaScript.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::attack::attribute::settings::{DEFAULT_ENSEMBLE as ATTRIBUTE_ENSEMBLE, MAX_ROUNDS as ATTRIBUTE_ROUNDS};
use crate::attack::cafe::settings::{CafeSettings, MAX_ROUNDS as CAFE_ROUNDS, MAX_ROWS as CAFE_ROWS};
use crate::attack::spec::AttackKind;
use crate::attack::tableak::settings::{ENSEMBLE_FEDAVG, ENSEMBLE_FEDSGD};
use crate::config::{MAX_ENSEMBLE, ProtocolKind};

/// One attack as the engine offers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct AttackInfo {
    /// The `attack` option's value.
    pub name: AttackKind,
    pub label: String,
    /// One sentence for people: what it does and whom it stands for.
    pub summary: String,
    /// The protocols it takes; the first is the one it faces unless told otherwise.
    pub protocols: Vec<ProtocolKind>,
    /// Whether it runs optimisation steps (`iterations`, a loss curve, progress in steps).
    pub inverts: bool,
    /// Whether it attacks an update received from elsewhere.
    pub received: bool,
    /// Its own settings, beyond those every attack shares.
    pub settings: Vec<SettingInfo>,
}

/// One setting of an attack, as an option of `RunOptions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SettingInfo {
    /// The option's name in `RunOptions` (camelCase).
    pub option: String,
    pub label: String,
    pub hint: String,
    pub input: SettingInput,
}

/// What a setting takes, and its default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum SettingInput {
    /// A whole number in [min, max]; its default on FedSGD and on FedAvg, and where it differs the
    /// value a page starts from so that a run finishes in a browser tab in seconds.
    #[serde(rename_all = "camelCase")]
    Whole {
        min: usize,
        max: usize,
        default: usize,
        default_fedavg: usize,
        quick: Option<usize>,
    },
    /// One of `values`.
    Choice { values: Vec<String>, default: String },
    /// A categorical column of the table.
    Column,
    /// On or off.
    Flag { default: bool },
}

fn whole(option: &str, label: &str, hint: &str, (min, max): (usize, usize), default: usize) -> SettingInfo {
    whole_by_protocol(option, label, hint, (min, max), (default, default))
}

fn whole_by_protocol(
    option: &str,
    label: &str,
    hint: &str,
    (min, max): (usize, usize),
    (default, default_fedavg): (usize, usize),
) -> SettingInfo {
    SettingInfo {
        option: option.into(),
        label: label.into(),
        hint: hint.into(),
        input: SettingInput::Whole {
            min,
            max,
            default,
            default_fedavg,
            quick: None,
        },
    }
}

/// A setting a page starts at `quick` rather than at the engine's default.
fn quick(mut setting: SettingInfo, value: usize) -> SettingInfo {
    if let SettingInput::Whole { quick, .. } = &mut setting.input {
        *quick = Some(value);
    }
    setting
}

/// TabLeak's description.
pub fn tableak() -> AttackInfo {
    AttackInfo {
        name: AttackKind::Tableak,
        label: AttackKind::Tableak.label().into(),
        summary: "Vero et al.'s ensemble of softmax-relaxed dummy batches, matched and median-pooled, with an \
                  entropy per cell; leakscope adds the first layer's span and rows proved from its ReLU pattern"
            .into(),
        protocols: vec![ProtocolKind::Fedsgd, ProtocolKind::Fedavg],
        inverts: true,
        received: true,
        settings: vec![
            whole_by_protocol(
                "ensemble",
                "ensemble",
                "dummy batches inverted together and pooled",
                (1, MAX_ENSEMBLE),
                (ENSEMBLE_FEDSGD, ENSEMBLE_FEDAVG),
            ),
            SettingInfo {
                option: "subspace".into(),
                label: "first-layer span and ReLU proof".into(),
                hint: "keep the rows in the span of the first layer's gradient and prove rows from its ReLU pattern \
                       (off, with the second-layer certificate off too: plain TabLeak)"
                    .into(),
                input: SettingInput::Flag { default: true },
            },
            SettingInfo {
                option: "secondLayer".into(),
                label: "second-layer certificate".into(),
                hint: "prove rows of large batches from the second layer's gradient, which the rows' first-layer \
                       activations span (FedSGD; off where the span leaves too few checks)"
                    .into(),
                input: SettingInput::Flag { default: true },
            },
            SettingInfo {
                option: "priorFallback".into(),
                label: "fall back to the marginals".into(),
                hint:
                    "under noise or fake gradients, take a cell from the table's marginals where a shadow client the \
                       server simulates shows the update says less than they do (never below the random guess)"
                        .into(),
                input: SettingInput::Flag { default: true },
            },
            SettingInfo {
                option: "updateChoice".into(),
                label: "let the update choose rows".into(),
                hint:
                    "on FedAvg in a known order, change a pooled row to a member's row or cell, or a row of the first \
                       layer's span, where the client's simulated update then fits the observed one better"
                        .into(),
                input: SettingInput::Flag { default: true },
            },
        ],
    }
}

/// A published baseline's description (Cosine, DLG, the random guess): no settings of its own.
pub fn baseline(kind: AttackKind, summary: &str, inverts: bool) -> AttackInfo {
    AttackInfo {
        name: kind,
        label: kind.label().into(),
        summary: summary.into(),
        protocols: vec![ProtocolKind::Fedsgd, ProtocolKind::Fedavg],
        inverts,
        received: inverts,
        settings: Vec::new(),
    }
}

/// The attribute attack's description.
pub fn attribute() -> AttackInfo {
    AttackInfo {
        name: AttackKind::Attribute,
        label: "Attribute reconstruction".into(),
        summary: "Lyu & Chen: could the server learn this column of the client's rows from its updates, if it \
                  knew every other column and the labels? The batch size is the client's rows, trained on for the \
                  local epochs (FedAvg)"
            .into(),
        protocols: vec![ProtocolKind::Fedavg, ProtocolKind::Fedsgd],
        inverts: true,
        received: false,
        settings: vec![
            SettingInfo {
                option: "sensitive".into(),
                label: "sensitive column".into(),
                hint: "the categorical column the server does not know".into(),
                input: SettingInput::Column,
            },
            SettingInfo {
                option: "membership".into(),
                label: "membership".into(),
                hint: "whether the server knows which rows the client trained on, or infers them among as many others"
                    .into(),
                input: SettingInput::Choice {
                    values: vec!["known".into(), "unknown".into()],
                    default: "known".into(),
                },
            },
            whole(
                "rounds",
                "rounds observed",
                "rounds of the client's training the server sees",
                (1, ATTRIBUTE_ROUNDS),
                1,
            ),
            whole(
                "ensemble",
                "ensemble",
                "members averaged",
                (1, MAX_ENSEMBLE),
                ATTRIBUTE_ENSEMBLE,
            ),
        ],
    }
}

/// CAFE's description.
pub fn cafe() -> AttackInfo {
    let d = CafeSettings::default();
    AttackInfo {
        name: AttackKind::Cafe,
        label: AttackKind::Cafe.label().into(),
        summary: "Jin et al., vertical federated learning: the parties hold column groups of the same shared \
                  rows, the server the labels; each round it picks batch-size row indices and receives the \
                  aggregated gradients, and recovers every shared row from enough rounds"
            .into(),
        protocols: vec![ProtocolKind::Fedsgd],
        inverts: false,
        received: false,
        settings: vec![
            // The paper's 800 rows over 2000 rounds; a page starts smaller.
            quick(
                whole(
                    "cafeRows",
                    "shared rows",
                    "rows the parties share",
                    (1, CAFE_ROWS),
                    d.rows,
                ),
                200,
            ),
            quick(
                whole(
                    "rounds",
                    "rounds observed",
                    "rounds of batch-size indices each",
                    (1, CAFE_ROUNDS),
                    d.rounds,
                ),
                400,
            ),
            whole(
                "parties",
                "parties",
                "parties holding column groups",
                (1, usize::MAX),
                d.parties,
            ),
        ],
    }
}

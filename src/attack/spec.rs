//! What a caller asks of an attack: one variant per attack, each carrying its own settings, so that
//! a setting one attack does not take cannot be given to it. Plain data; what each attack does with
//! it is its module's, reached through `attack::registry`.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::attack::attribute::settings::{AttributeSettings, DEFAULT_ENSEMBLE as ATTRIBUTE_ENSEMBLE, Membership};
use crate::attack::cafe::settings::CafeSettings;
use crate::attack::tableak::settings::{ENSEMBLE_FEDAVG, ENSEMBLE_FEDSGD, EpochPrior, TableakSettings};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum AttackSpec {
    /// Softmax-relaxed ensemble, matched, median-pooled, with entropies (Vero et al.).
    Tableak(TableakSettings),
    /// Cosine loss, no relaxation, one member (Geiping et al.), as published: no priors.
    Cosine,
    /// Squared-error loss, no relaxation, one member (Zhu et al.), as published: no priors.
    Dlg,
    /// Rows drawn from the table's marginals: what an attacker knows without the update.
    Random,
    /// Attribute reconstruction (Lyu & Chen): the server knows every column of the client's rows
    /// but one and relaxes that one alone (`attack::attribute`).
    Attribute(AttributeSettings),
    /// CAFE (Jin et al.) on vertically split rows (`attack::cafe`).
    Cafe(CafeSettings),
}

impl Default for AttackSpec {
    fn default() -> Self {
        AttackSpec::Tableak(TableakSettings::default())
    }
}

/// An attack's name, without its settings: what tables, plots and the command line list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum AttackKind {
    Tableak,
    Cosine,
    Dlg,
    Random,
    Attribute,
    Cafe,
}

impl AttackKind {
    /// Every attack, in the order they are offered.
    pub const ALL: [AttackKind; 6] = [
        AttackKind::Tableak,
        AttackKind::Cosine,
        AttackKind::Dlg,
        AttackKind::Random,
        AttackKind::Attribute,
        AttackKind::Cafe,
    ];

    /// The name as it is written in options and files ("tableak").
    pub fn name(self) -> &'static str {
        match self {
            AttackKind::Tableak => "tableak",
            AttackKind::Cosine => "cosine",
            AttackKind::Dlg => "dlg",
            AttackKind::Random => "random",
            AttackKind::Attribute => "attribute",
            AttackKind::Cafe => "cafe",
        }
    }

    /// The name by which it is known ("TabLeak").
    pub fn label(self) -> &'static str {
        match self {
            AttackKind::Tableak => "TabLeak",
            AttackKind::Cosine => "Cosine",
            AttackKind::Dlg => "DLG",
            AttackKind::Random => "Random",
            AttackKind::Attribute => "Attribute",
            AttackKind::Cafe => "CAFE",
        }
    }

    /// Whether it is the guess an attacker makes without the update (what audits and plots
    /// measure the attacks against), rather than an attack on it.
    pub fn is_guess(self) -> bool {
        match self {
            AttackKind::Random => true,
            AttackKind::Tableak | AttackKind::Cosine | AttackKind::Dlg | AttackKind::Attribute | AttackKind::Cafe => {
                false
            }
        }
    }

    /// Its colour in plots.
    pub fn colour(self) -> &'static str {
        match self {
            AttackKind::Tableak => "#c0392b",
            AttackKind::Cosine => "#2471a3",
            AttackKind::Dlg => "#7d3c98",
            AttackKind::Random => "#7f8c8d",
            AttackKind::Attribute => "#b9770e",
            AttackKind::Cafe => "#117a65",
        }
    }
}

impl std::fmt::Display for AttackKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// Every attack's settings as flat options give them (`options::RunOptions`), for
/// `AttackSpec::from_flat` to hand each attack its own.
#[derive(Debug, Clone, PartialEq)]
pub struct FlatSettings {
    pub ensemble: Option<usize>,
    /// The client trains locally (FedAvg): TabLeak's default ensemble is smaller there.
    pub fedavg: bool,
    pub epoch_prior: EpochPrior,
    pub subspace: bool,
    pub second_layer: bool,
    pub prior_fallback: bool,
    pub update_choice: bool,
    pub sensitive: Option<String>,
    pub l2: bool,
    pub membership: Membership,
    pub rounds: Option<usize>,
    pub parties: Option<usize>,
    pub cafe_rows: Option<usize>,
    pub fake_gradients: Option<usize>,
}

impl AttackSpec {
    /// The attack `kind` with its own settings from flat ones. The attribute attack's and CAFE's
    /// settings given to another attack are refused by name rather than ignored; the ensemble and
    /// the span prior, which a grid of attacks shares, are left to the attacks that take them.
    pub fn from_flat(kind: AttackKind, f: FlatSettings) -> Result<AttackSpec, String> {
        // Which attacks take the settings only some attacks take.
        let (takes_attribute, takes_cafe, takes_rounds) = match kind {
            AttackKind::Tableak | AttackKind::Cosine | AttackKind::Dlg | AttackKind::Random => (false, false, false),
            AttackKind::Attribute => (true, false, true),
            AttackKind::Cafe => (false, true, true),
        };
        if !takes_attribute && (f.sensitive.is_some() || f.l2 || f.membership != Membership::Known) {
            return Err("a sensitive column is for the attribute attack (attack \"attribute\")".into());
        }
        if (!takes_cafe && (f.parties.is_some() || f.cafe_rows.is_some())) || (!takes_rounds && f.rounds.is_some()) {
            return Err("shared rows, parties and rounds are CAFE's settings (attack \"cafe\")".into());
        }
        Ok(match kind {
            AttackKind::Tableak => AttackSpec::Tableak(TableakSettings {
                ensemble: f
                    .ensemble
                    .unwrap_or(if f.fedavg { ENSEMBLE_FEDAVG } else { ENSEMBLE_FEDSGD }),
                epoch_prior: f.epoch_prior,
                subspace: f.subspace,
                second_layer: f.second_layer,
                prior_fallback: f.prior_fallback,
                update_choice: f.update_choice,
                stop_members: f.ensemble.is_none(),
            }),
            // The published baselines take no settings of their own (leakscope's priors included).
            AttackKind::Cosine => AttackSpec::Cosine,
            AttackKind::Dlg => AttackSpec::Dlg,
            AttackKind::Random => AttackSpec::Random,
            AttackKind::Attribute => AttackSpec::Attribute(AttributeSettings {
                column: f
                    .sensitive
                    .ok_or("the attribute attack needs the sensitive column it reconstructs")?,
                l2: f.l2,
                membership: f.membership,
                rounds: f.rounds.unwrap_or(1),
                ensemble: f.ensemble.unwrap_or(ATTRIBUTE_ENSEMBLE),
            }),
            AttackKind::Cafe => {
                let d = CafeSettings::default();
                AttackSpec::Cafe(CafeSettings {
                    parties: f.parties.unwrap_or(d.parties),
                    rows: f.cafe_rows.unwrap_or(d.rows),
                    rounds: f.rounds.unwrap_or(d.rounds),
                    fake_gradients: f.fake_gradients,
                })
            }
        })
    }

    pub fn kind(&self) -> AttackKind {
        match self {
            AttackSpec::Tableak(_) => AttackKind::Tableak,
            AttackSpec::Cosine => AttackKind::Cosine,
            AttackSpec::Dlg => AttackKind::Dlg,
            AttackSpec::Random => AttackKind::Random,
            AttackSpec::Attribute(_) => AttackKind::Attribute,
            AttackSpec::Cafe(_) => AttackKind::Cafe,
        }
    }
}

/// The baselines take no settings: these stand for them where an attack is asked about itself
/// (`attack::registry`; their behaviour is `attack::baselines`').
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CosineBaseline;
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DlgBaseline;
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RandomBaseline;

//! What a caller asks for: the attack (`attack::spec`) and the settings every attack shares (the
//! client, the network, the inversion's steps). Plain data that every other module reads and none
//! of them defines; each attack's own checks are its module's (`attack::registry`).
use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub use crate::attack::attribute::settings::{AttributeSettings, Membership};
pub use crate::attack::cafe::settings::CafeSettings;
pub use crate::attack::spec::{AttackKind, AttackSpec};
pub use crate::attack::tableak::settings::{DEFAULT_EPOCH_PRIOR, EpochPrior, PRIOR_CANDIDATES, TableakSettings};
use crate::client::defence::Defence;
use crate::client::fedavg::LocalTraining;
use crate::client::head::Task;
use crate::error::{Error, Result};
use crate::table::Dataset;

/// Most clients one simulated aggregate averages.
pub const MAX_CLIENTS: usize = 1024;
/// Most epochs of training before an attack.
pub const MAX_TRAINING_EPOCHS: usize = 100;
/// Most members of an ensemble.
pub const MAX_ENSEMBLE: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum LabelMode {
    Known,
    Restored,
}

/// What the client sends the server (SPEC §3).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Protocol {
    /// The gradient of its loss on one batch (`batch_size` rows).
    Fedsgd,
    /// θ0 − θE after local training over its `batch_size` rows.
    Fedavg(LocalTraining),
}

/// The protocol by name, for flat options (the CLI's and the page's) and the protocols an attack
/// takes (`attack::describe`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum ProtocolKind {
    Fedsgd,
    Fedavg,
}

/// Adam fed the sign of the gradient, as the reference runs it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct Optimiser {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub sign: bool,
}

impl Default for Optimiser {
    fn default() -> Self {
        Optimiser {
            lr: 0.06,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            sign: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct AttackConfig {
    /// The attack, with its own settings.
    pub attack: AttackSpec,
    /// FedSGD's batch, or a FedAvg client's rows; CAFE's indices per round.
    pub batch_size: usize,
    pub protocol: Protocol,
    /// Optimisation steps of the attacks that invert.
    pub iterations: usize,
    #[ts(type = "number")]
    pub seed: u64,
    pub labels: LabelMode,
    pub hidden: Vec<usize>,
    /// The nonlinearity between the client's layers (ReLU by default).
    pub activation: crate::client::activation::Activation,
    /// The output layer and its loss (softmax cross-entropy by default).
    pub head: crate::client::head::Head,
    /// Epochs of ordinary training on the whole table (`client::training`) before the attacked
    /// round; 0 attacks the network at initialisation, as the paper does.
    pub training_epochs: usize,
    /// Clients whose updates are averaged before the server sees them (what secure aggregation
    /// reveals): the attack faces `clients × batch_size` rows. Each client applies `defence` to
    /// its own update first.
    pub clients: usize,
    pub defence: Option<Defence>,
    /// None: the attack's own default (`Attack::default_optimiser`).
    pub optimiser: Option<Optimiser>,
    /// Read the loss back (and report progress) every this many steps. On a GPU the engine may
    /// report less often, so that a slow readback never stalls the device (see `attack::cadence`).
    pub report_every: usize,
    /// Members whose loss has stopped improving stop (`attack::inversion::driver::EARLY_STOP`).
    pub early_stop: bool,
}

impl Default for AttackConfig {
    fn default() -> Self {
        AttackConfig {
            attack: AttackSpec::default(),
            batch_size: 32,
            protocol: Protocol::Fedsgd,
            iterations: 1500,
            seed: 0,
            labels: LabelMode::Known,
            hidden: vec![100, 100],
            activation: crate::client::activation::Activation::Relu,
            head: crate::client::head::Head::Softmax,
            training_epochs: 0,
            clients: 1,
            defence: None,
            optimiser: None,
            report_every: 25,
            early_stop: true,
        }
    }
}

/// Why a client's update cannot be replayed (`AttackConfig::unreplayable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreplayable {
    /// Its local batches are reshuffled in an order the server is not told.
    Reshuffled,
    /// Its defence adds noise or fake gradients.
    Randomised,
}

impl Unreplayable {
    pub fn why(self) -> &'static str {
        match self {
            Unreplayable::Reshuffled => {
                "the client reshuffles its rows every epoch in an order leakscope is not told, so its update \
                 cannot be replayed"
            }
            Unreplayable::Randomised => {
                "the client's defence adds randomness (noise or fake gradients) that cannot be replayed"
            }
        }
    }
}

impl AttackConfig {
    /// The model's task is the label's: a linear head under the squared error for a regression's
    /// numbers, a classifier's head for classes. A regression's label is unknown to the server,
    /// which reconstructs it with each row: there is nothing to restore.
    fn check_task(&self, dataset: &Dataset) -> Result<()> {
        let label = &dataset.label;
        match (self.head.task(), dataset.task()) {
            (Task::Regression, Task::Classification) => Err(Error::Config(format!(
                "the model is a regression (one linear output under the squared error) but the label {label:?} \
                 was read as classes: read the table with the task regression"
            ))),
            (Task::Classification, Task::Regression) => Err(Error::Config(format!(
                "the label {label:?} was read as a regression's numbers but the model has a classifier's {} head: \
                 state the task regression",
                self.head.name()
            ))),
            (Task::Regression, _) if self.labels == LabelMode::Restored => Err(Error::Config(
                "a regression's label is a number the server does not know: it is reconstructed with each row, \
                 not restored; leave the labels at known"
                    .into(),
            )),
            _ => Ok(()),
        }
    }

    /// The attack's name.
    pub fn kind(&self) -> AttackKind {
        self.attack.kind()
    }

    /// Rows behind the update the server sees: one client's batch, or every averaged client's.
    /// Saturating: absurd settings are refused by the checks, never overflow on the way there.
    pub fn rows(&self) -> usize {
        self.batch_size.saturating_mul(self.clients.max(1))
    }

    /// Why the server cannot replay this client's update from its `rows` rows, where it cannot: a
    /// client that reshuffles its local batches in an order the server is not told, or a defence
    /// that adds randomness. Only a replayable update's fit says how far an attack got.
    pub fn unreplayable(&self, rows: usize) -> Option<Unreplayable> {
        if let Protocol::Fedavg(t) = &self.protocol
            && t.order == crate::client::fedavg::LocalOrder::Shuffled
            && t.local_batch < rows
        {
            return Some(Unreplayable::Reshuffled);
        }
        match &self.defence {
            Some(d) if d.noise > 0.0 || d.fake_gradients.is_some() => Some(Unreplayable::Randomised),
            _ => None,
        }
    }

    /// How the client made its first layer's update, for the rounding it carries
    /// (`spectrum::Source`): a gradient, or local training from `params`' weights.
    pub fn update_source(&self, params: &crate::client::network::Params) -> crate::attack::priors::spectrum::Source {
        use crate::attack::priors::spectrum::Source;
        match &self.protocol {
            Protocol::Fedsgd => Source::Gradient,
            Protocol::Fedavg(_) => Source::Training {
                weights: params.weights[0]
                    .iter()
                    .map(|&w| (w as f64) * (w as f64))
                    .sum::<f64>()
                    .sqrt(),
                steps: self.local_steps(),
            },
        }
    }

    /// Local steps a member's loss unrolls (1 for FedSGD).
    pub fn local_steps(&self) -> usize {
        match &self.protocol {
            Protocol::Fedsgd => 1,
            Protocol::Fedavg(t) => t.epochs.saturating_mul(t.steps_per_epoch(self.batch_size)),
        }
    }

    /// Layer widths of the client's network on this table: [d, hidden..., outputs] (the head's
    /// outputs: one per class, or one).
    pub fn layer_sizes(&self, dataset: &Dataset) -> Vec<usize> {
        let mut sizes = vec![dataset.d()];
        sizes.extend(&self.hidden);
        sizes.push(self.head.outputs(dataset.classes.len()));
        sizes
    }

    /// The client's model besides its widths.
    pub fn model(&self) -> crate::client::head::Model {
        crate::client::head::Model {
            activation: self.activation,
            head: self.head,
        }
    }

    /// The checks every attack shares: the client, the network, the protocol. `has_rows`: the
    /// table has rows to draw from (not the encoding of a received update).
    pub fn validate_common(&self, dataset: &Dataset, has_rows: bool) -> Result<()> {
        let fail = |m: String| Err(Error::Config(m));
        if self.batch_size == 0 || (has_rows && self.batch_size > dataset.n()) {
            return fail(format!(
                "batch size {} must be between 1 and the {} rows of the table",
                self.batch_size,
                dataset.n()
            ));
        }
        if self.clients == 0 || self.clients > MAX_CLIENTS {
            return fail(format!("clients {} must be between 1 and {MAX_CLIENTS}", self.clients));
        }
        if has_rows && self.rows() > dataset.n() {
            return fail(format!(
                "{} clients of {} rows each need {} distinct rows; the table has {}",
                self.clients,
                self.batch_size,
                self.rows(),
                dataset.n()
            ));
        }
        if self.clients > 1 && matches!(self.protocol, Protocol::Fedavg(_)) {
            return fail(
                "averaging several FedAvg clients is not simulated yet: use one client for FedAvg, or \
                 FedSGD to study secure aggregation"
                    .into(),
            );
        }
        if self.training_epochs > MAX_TRAINING_EPOCHS {
            return fail(format!(
                "training epochs {} must be at most {MAX_TRAINING_EPOCHS}",
                self.training_epochs
            ));
        }
        if self.hidden.contains(&0) {
            return fail("hidden layer sizes must be positive".into());
        }
        self.activation.validate()?;
        self.check_task(dataset)?;
        self.head.check_label(&dataset.classes)?;
        if self.report_every == 0 {
            return fail("report_every must be at least 1".into());
        }
        if let Protocol::Fedavg(t) = &self.protocol {
            if t.epochs == 0 || t.local_batch == 0 {
                return fail("FedAvg needs at least one local epoch and a local batch of at least one row".into());
            }
            if !(t.lr > 0.0 && t.lr.is_finite()) {
                return fail(format!("the client's learning rate {} must be a positive number", t.lr));
            }
            t.optimizer
                .validate()
                .map_err(|m| Error::Config(format!("the client's optimiser: {m}")))?;
            if self.labels == LabelMode::Restored {
                return fail(
                    "restored labels are for FedSGD (they are read off one gradient); on FedAvg the server \
                     is given the labels in their order, as the reference does"
                        .into(),
                );
            }
        }
        if let Some(d) = &self.defence {
            d.validate().map_err(Error::Config)?;
        }
        Ok(())
    }
}

/// Which members of the ensemble one call inverts. A page splits the ensemble over several workers
/// (wasm has one thread each); every member starts from the same draw however it is split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct MemberRange {
    pub first: usize,
    pub count: usize,
}

//! The options object a caller hands over in one piece (the npm package's `run`, the page's form,
//! the CLI's flags): flat, every field but `label` with the engine's default, and its one
//! conversion into an `AttackConfig`, where a setting given to an attack that does not take it is
//! refused by name.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::attack::attribute::settings::Membership;
use crate::attack::spec::{AttackKind, AttackSpec, FlatSettings};
use crate::attack::tableak::settings::{EpochPrior, TableakSettings};
use crate::client::defence::Defence;
use crate::client::fedavg::{LocalOrder, LocalTraining};
use crate::client::optimizer::{ClientOptimizer, OptimizerKind};
pub use crate::config::ProtocolKind;
use crate::config::{AttackConfig, LabelMode, Optimiser, Protocol};
use crate::error::{Error, Result};
use crate::table::{ColumnKind, DatasetOptions};

/// An attack as a caller describes it in one object: the table's reading (label, kinds, columns
/// left out) and the attack's settings. The npm package's `run` takes this (camelCase); every
/// field but `label` has the engine's default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct RunOptions {
    /// Name of the label column.
    pub label: String,
    /// Column name → kind, replacing the inferred kind.
    #[ts(as = "Option<_>", optional)]
    pub kinds: std::collections::BTreeMap<String, ColumnKind>,
    /// Columns to leave out.
    #[ts(as = "Option<_>", optional)]
    pub ignore: Vec<String>,
    /// Columns the reading leaves out by default (an identifier, pandas' index column; see the
    /// schema's `treatment`) to use after all.
    #[ts(as = "Option<_>", optional)]
    pub include: Vec<String>,
    #[ts(as = "Option<_>", optional)]
    pub attack: AttackKind,
    /// FedSGD's batch, or a FedAvg client's rows.
    #[ts(as = "Option<_>", optional)]
    pub batch_size: usize,
    /// Members of the ensemble, all of them run (TabLeak: by default the engine's, up to 30 for
    /// FedSGD by its stopping rule, 15 for FedAvg; the attribute attack: 5).
    #[ts(optional)]
    pub ensemble: Option<usize>,
    #[ts(as = "Option<_>", optional)]
    pub iterations: usize,
    /// "fedsgd" (the client sends a gradient) or "fedavg" (θ0 − θE after local training).
    #[ts(as = "Option<_>", optional)]
    pub protocol: ProtocolKind,
    /// FedAvg: rows per local step, local epochs, and the client's SGD step.
    #[ts(as = "Option<_>", optional)]
    pub local_batch: usize,
    #[ts(as = "Option<_>", optional)]
    pub local_epochs: usize,
    #[ts(as = "Option<_>", optional)]
    pub client_lr: f64,
    /// FedAvg: the client's optimiser, with torch.optim's settings: "sgd" (the default; momentum,
    /// dampening, nesterov, weightDecay), "adam" or "adamw" (betas, adamEps, weightDecay).
    #[ts(as = "Option<_>", optional)]
    pub optimizer: OptimizerKind,
    #[ts(as = "Option<_>", optional)]
    pub momentum: f64,
    #[ts(as = "Option<_>", optional)]
    pub dampening: f64,
    #[ts(as = "Option<_>", optional)]
    pub nesterov: bool,
    #[ts(as = "Option<_>", optional)]
    pub weight_decay: f64,
    #[ts(as = "Option<_>", optional)]
    pub betas: [f64; 2],
    #[ts(as = "Option<_>", optional)]
    pub adam_eps: f64,
    /// FedAvg: "given" (the client's rows in the same order every epoch, the default) or
    /// "shuffled" (reshuffled every epoch, in an order the server does not know).
    #[ts(as = "Option<_>", optional)]
    pub local_order: LocalOrder,
    /// TabLeak on FedAvg over rows reshuffled every epoch: the epoch prior's weight λ; "auto"
    /// chooses it without the truth. (In the given order every epoch shares one copy of the rows.)
    #[ts(as = "Option<_>", optional)]
    pub epoch_prior: EpochPrior,
    #[ts(as = "Option<f64>", optional)]
    pub seed: u64,
    #[ts(as = "Option<_>", optional)]
    pub labels: LabelMode,
    #[ts(as = "Option<_>", optional)]
    pub hidden: Vec<usize>,
    /// Between the client's layers: {kind: 'relu'} (the default), 'leaky_relu' (with its slope),
    /// 'gelu', 'tanh' or 'sigmoid'.
    #[ts(as = "Option<_>", optional)]
    pub activation: crate::client::activation::Activation,
    /// The output layer: 'softmax' (one logit per class, the default) or 'sigmoid' (one logit
    /// with binary cross-entropy, for a two-class label).
    #[ts(as = "Option<_>", optional)]
    pub head: crate::client::head::Head,
    /// 'classification' (the default) or 'regression': one linear output under the squared error
    /// on a numeric label, which the server does not know and reconstructs with each row.
    #[ts(as = "Option<_>", optional)]
    pub task: crate::client::head::Task,
    /// Epochs of ordinary training on the table before the attacked round (default 0).
    #[ts(as = "Option<_>", optional)]
    pub training_epochs: usize,
    /// Clients averaged before the server sees the update (secure aggregation; default 1).
    #[ts(as = "Option<_>", optional)]
    pub clients: usize,
    /// Defence: clip each client's update to this L2 norm.
    #[ts(optional)]
    pub clip: Option<f64>,
    /// Defence: Gaussian noise multiplier σ (std σ·clip, or σ without clipping; default 0).
    #[ts(as = "Option<_>", optional)]
    pub noise: f64,
    /// Defence: CAFE's fake gradients, the best of this many draws.
    #[ts(optional)]
    pub fake_gradients: Option<usize>,
    /// The δ of the (ε, δ) reported for a clipped, noised update (default 1e-5).
    #[ts(optional)]
    pub delta: Option<f64>,
    /// Adam's step; default 0.1 for TabLeak, 0.06 for the baselines.
    #[ts(optional)]
    pub lr: Option<f64>,
    /// Report progress (and check for cancellation) at least every this many steps.
    #[ts(as = "Option<_>", optional)]
    pub report_every: usize,
    /// TabLeak: the first layer's span as a prior on the rows (default on; see
    /// `TableakSettings::subspace`).
    #[ts(as = "Option<_>", optional)]
    pub subspace: bool,
    /// TabLeak: certify rows by the second layer's span of activations (default on; see
    /// `TableakSettings::second_layer`).
    #[ts(as = "Option<_>", optional)]
    pub second_layer: bool,
    /// TabLeak: under a defence that perturbs the update, fall back cell by cell to the table's
    /// marginals where a shadow client shows they score higher (default on; see
    /// `TableakSettings::prior_fallback`).
    #[ts(as = "Option<_>", optional)]
    pub prior_fallback: bool,
    /// TabLeak on FedAvg in a known order: let the client's simulated update choose among the
    /// members' rows and cells, and run the ensemble again from the rows it chose; on FedSGD, run
    /// it again on what the rows the update holds leave of it (default on; see
    /// `TableakSettings::update_choice`).
    #[ts(as = "Option<_>", optional)]
    pub update_choice: bool,
    /// Stop members whose loss has stopped improving (default on).
    #[ts(as = "Option<_>", optional)]
    pub early_stop: bool,
    /// The attribute attack: the sensitive column it reconstructs.
    #[ts(optional)]
    pub sensitive: Option<String>,
    /// The attribute attack: match the updates by squared error (the L2 baseline), not cosine.
    #[ts(as = "Option<_>", optional)]
    pub l2: bool,
    /// The attribute attack: whether the server knows which rows the client used (default known).
    #[ts(as = "Option<_>", optional)]
    pub membership: Membership,
    /// CAFE: parties (default 4), rows they share (default 800), rounds observed (default 2000);
    /// `batchSize` is the indices per round. `rounds` is also the attribute attack's (default 1).
    #[ts(optional)]
    pub parties: Option<usize>,
    #[ts(optional)]
    pub cafe_rows: Option<usize>,
    #[ts(optional)]
    pub rounds: Option<usize>,
}

impl Default for RunOptions {
    fn default() -> Self {
        let c = AttackConfig::default();
        let t = TableakSettings::default();
        RunOptions {
            label: String::new(),
            kinds: Default::default(),
            ignore: Vec::new(),
            include: Vec::new(),
            attack: AttackKind::Tableak,
            batch_size: c.batch_size,
            ensemble: None,
            iterations: c.iterations,
            protocol: ProtocolKind::Fedsgd,
            local_batch: LocalTraining::default().local_batch,
            local_epochs: LocalTraining::default().epochs,
            client_lr: LocalTraining::default().lr,
            optimizer: ClientOptimizer::default().kind,
            momentum: ClientOptimizer::default().momentum,
            dampening: ClientOptimizer::default().dampening,
            nesterov: ClientOptimizer::default().nesterov,
            weight_decay: ClientOptimizer::default().weight_decay,
            betas: ClientOptimizer::default().betas,
            adam_eps: ClientOptimizer::default().eps,
            local_order: LocalOrder::default(),
            epoch_prior: t.epoch_prior,
            seed: c.seed,
            labels: c.labels,
            hidden: c.hidden,
            activation: c.activation,
            head: c.head,
            task: c.head.task(),
            training_epochs: c.training_epochs,
            clients: c.clients,
            clip: None,
            noise: 0.0,
            fake_gradients: None,
            delta: None,
            lr: None,
            report_every: c.report_every,
            subspace: t.subspace,
            second_layer: t.second_layer,
            prior_fallback: t.prior_fallback,
            update_choice: t.update_choice,
            early_stop: c.early_stop,
            sensitive: None,
            l2: false,
            membership: Membership::Known,
            parties: None,
            cafe_rows: None,
            rounds: None,
        }
    }
}

impl RunOptions {
    pub fn dataset_options(&self) -> DatasetOptions {
        DatasetOptions {
            label: self.label.clone(),
            kinds: self.kinds.clone().into_iter().collect(),
            ignore: self.ignore.clone(),
            include: self.include.clone(),
            task: self.task,
        }
    }

    pub fn protocol(&self) -> Protocol {
        match self.protocol {
            ProtocolKind::Fedsgd => Protocol::Fedsgd,
            ProtocolKind::Fedavg => Protocol::Fedavg(LocalTraining {
                epochs: self.local_epochs,
                local_batch: self.local_batch,
                lr: self.client_lr,
                optimizer: ClientOptimizer {
                    kind: self.optimizer,
                    momentum: self.momentum,
                    dampening: self.dampening,
                    nesterov: self.nesterov,
                    weight_decay: self.weight_decay,
                    betas: self.betas,
                    eps: self.adam_eps,
                },
                order: self.local_order,
            }),
        }
    }

    /// The FedAvg recipe these options state (whatever the protocol): optimiser and order; the
    /// epochs, batch and lr as given.
    pub fn protocol_recipe(&self) -> LocalTraining {
        match (RunOptions {
            protocol: ProtocolKind::Fedavg,
            ..self.clone()
        })
        .protocol()
        {
            Protocol::Fedavg(t) => t,
            Protocol::Fedsgd => unreachable!("asked for FedAvg"),
        }
    }

    /// The same options with the client's local-training recipe at the engine's defaults (what a
    /// FedSGD setting of an audit holds).
    pub fn without_local_training(self) -> RunOptions {
        self.with_local_training_of(&RunOptions::default())
    }

    /// The same options with `from`'s local-training recipe (optimiser, its settings, order, lr).
    pub fn with_local_training_of(self, from: &RunOptions) -> RunOptions {
        RunOptions {
            client_lr: from.client_lr,
            optimizer: from.optimizer,
            momentum: from.momentum,
            dampening: from.dampening,
            nesterov: from.nesterov,
            weight_decay: from.weight_decay,
            betas: from.betas,
            adam_eps: from.adam_eps,
            local_order: from.local_order,
            ..self
        }
    }

    /// The local training's settings are FedAvg's: on FedSGD (one gradient) they would be ignored,
    /// so they are refused by name.
    fn check_fedavg_only(&self) -> Result<()> {
        if self.protocol == ProtocolKind::Fedavg {
            return Ok(());
        }
        let d = RunOptions::default();
        let set: Vec<&str> = [
            ("optimizer", self.optimizer != d.optimizer),
            ("momentum", self.momentum != d.momentum),
            ("dampening", self.dampening != d.dampening),
            ("nesterov", self.nesterov != d.nesterov),
            ("weight decay", self.weight_decay != d.weight_decay),
            ("betas", self.betas != d.betas),
            ("Adam's eps", self.adam_eps != d.adam_eps),
            ("local order", self.local_order != d.local_order),
        ]
        .into_iter()
        .filter_map(|(name, on)| on.then_some(name))
        .collect();
        match set.is_empty() {
            true => Ok(()),
            false => Err(Error::Config(format!(
                "{} describe{} a FedAvg client's local training; FedSGD sends one gradient (use protocol fedavg)",
                set.join(", "),
                if set.len() == 1 { "s" } else { "" }
            ))),
        }
    }

    /// The client's defence, if any part of it is on.
    pub fn defence(&self) -> Option<Defence> {
        let d = Defence {
            clip: self.clip,
            noise: self.noise,
            fake_gradients: self.fake_gradients,
            delta: self.delta.unwrap_or(crate::client::privacy::DEFAULT_DELTA),
        };
        (!d.is_off() || self.delta.is_some()).then_some(d)
    }

    /// The attack these options ask for, with its own settings (`AttackSpec::from_flat`).
    pub fn attack_spec(&self) -> Result<AttackSpec> {
        AttackSpec::from_flat(
            self.attack,
            FlatSettings {
                ensemble: self.ensemble,
                fedavg: self.protocol == ProtocolKind::Fedavg,
                epoch_prior: self.epoch_prior,
                subspace: self.subspace,
                second_layer: self.second_layer,
                prior_fallback: self.prior_fallback,
                update_choice: self.update_choice,
                sensitive: self.sensitive.clone(),
                l2: self.l2,
                membership: self.membership,
                rounds: self.rounds,
                parties: self.parties,
                cafe_rows: self.cafe_rows,
                fake_gradients: self.fake_gradients,
            },
        )
        .map_err(Error::Config)
    }

    /// The whole configuration (the one place flat options become one).
    /// The task's head: a regression's linear output, a classifier's stated head (the default
    /// softmax stands for "not stated").
    pub fn head(&self) -> Result<crate::client::head::Head> {
        use crate::client::head::Head;
        let stated = match (self.task, self.head) {
            (crate::client::head::Task::Regression, Head::Softmax) => None,
            (_, h) => Some(h),
        };
        self.task.head(stated)
    }

    pub fn attack_config(&self) -> Result<AttackConfig> {
        let attack = self.attack_spec()?;
        self.check_fedavg_only()?;
        Ok(AttackConfig {
            optimiser: self.lr.map(|lr| Optimiser {
                lr,
                ..crate::attack::registry::attack_of(&attack).default_optimiser()
            }),
            attack,
            batch_size: self.batch_size,
            protocol: self.protocol(),
            iterations: self.iterations,
            seed: self.seed,
            labels: self.labels,
            hidden: self.hidden.clone(),
            activation: self.activation,
            head: self.head()?,
            training_epochs: self.training_epochs,
            clients: self.clients,
            defence: self.defence(),
            report_every: self.report_every,
            early_stop: self.early_stop,
        })
    }
}

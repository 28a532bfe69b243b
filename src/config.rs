//! What a caller asks for: the attack, its settings and their limits. Plain data that every other
//! module reads (experiment, report, the CLI, the JS boundary) and none of them defines.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::client::defence::Defence;
use crate::client::fedavg::LocalTraining;
use crate::error::{Error, Result};
use crate::table::{ColumnKind, Dataset, DatasetOptions};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum AttackKind {
    /// Softmax-relaxed ensemble, matched, median-pooled, with entropies (Vero et al.).
    Tableak,
    /// Cosine loss, no relaxation, one member (Geiping et al.).
    Cosine,
    /// Squared-error loss, no relaxation, one member (Zhu et al.).
    Dlg,
    /// Rows drawn from the table's marginals: what an attacker knows without the update.
    Random,
    /// Attribute reconstruction (Lyu & Chen): the server knows every column of the client's rows
    /// but `AttackConfig::attribute`'s and relaxes that one alone (`attack::attribute`).
    Attribute,
    /// CAFE (Jin et al.) on vertically split rows: `AttackConfig::cafe`'s n rows over its rounds of
    /// `batch_size` indices each (`attack::cafe`).
    Cafe,
}

/// CAFE's vertical setting (`AttackKind::Cafe`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct CafeConfig {
    /// Parties holding column groups of the rows.
    pub parties: usize,
    /// Rows the parties share (the attack recovers all of them).
    pub rows: usize,
    /// Rounds the server observes, each on `batch_size` indices it chooses.
    pub rounds: usize,
    /// CAFE's countermeasure: each party sends fake gradients, the closest of this many draws.
    pub fake_gradients: Option<usize>,
}

impl Default for CafeConfig {
    /// The paper's setting: 4 parties, 800 rows; 2000 rounds (each row sampled 100 times at K = 40).
    fn default() -> Self {
        CafeConfig {
            parties: 4,
            rows: 800,
            rounds: 2000,
            fake_gradients: None,
        }
    }
}

/// The attribute attack's settings (`AttackKind::Attribute`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AttributeConfig {
    /// The sensitive column the server does not know (categorical).
    pub column: String,
    /// Match the updates by squared error instead of cosine (the paper's L2 baseline).
    #[serde(default)]
    pub l2: bool,
    /// Whether the server knows which rows the client trained on (`attack::membership`).
    #[serde(default)]
    pub membership: Membership,
    /// Rounds the server observes (the first ones): in each the client trains from the model the
    /// previous round's update left, and the attack sums the rounds' losses. 1 by default.
    #[serde(default = "one_round")]
    pub rounds: usize,
}

fn one_round() -> usize {
    1
}

/// Whether the server knows which rows the client trained on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum Membership {
    #[default]
    Known,
    /// It holds the client's rows among as many others and infers which (`attack::membership`).
    Unknown,
}

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

impl Protocol {
    /// The reference's ensemble: 30 members for FedSGD, 15 for FedAvg (a member costs a whole
    /// local training per step there).
    pub fn default_ensemble(&self) -> usize {
        match self {
            Protocol::Fedsgd => 30,
            Protocol::Fedavg(_) => 15,
        }
    }
}

/// The epoch prior's weight unless a caller asks otherwise. The reference picks λ per setting by
/// the error against the ground truth (an oracle); leakscope fixes it without the truth: on Adult at
/// 5 local epochs of batches of 8, λ = 0.1 was the best of the reference's grid on one batch and
/// within 0.2 points of the best on the other, and `EpochPrior::Auto` (λ chosen by fit to the
/// update) averaged 78.7 % against λ = 0.1's 79.3 % over the two at 7× the work (docs/fidelity.md).
pub const DEFAULT_EPOCH_PRIOR: f64 = 0.1;

/// The weights λ `EpochPrior::Auto` tries: the reference's grid (SPEC §7).
pub const PRIOR_CANDIDATES: [f64; 7] = [0.0, 0.5, 0.1, 0.05, 0.01, 0.005, 0.001];

/// The weight λ of TabLeak-FedAvg's epoch-matching prior (SPEC §7).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum EpochPrior {
    /// Run each of `attack::fedavg::PRIOR_CANDIDATES` and keep the one whose reconstruction matches
    /// the observed update best (no ground truth involved).
    Auto,
    Fixed(f64),
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
    pub attack: AttackKind,
    /// FedSGD's batch, or a FedAvg client's rows.
    pub batch_size: usize,
    pub ensemble: usize,
    pub protocol: Protocol,
    /// TabLeak on FedAvg: the epoch prior's weight.
    pub epoch_prior: EpochPrior,
    pub iterations: usize,
    #[ts(type = "number")]
    pub seed: u64,
    pub labels: LabelMode,
    pub hidden: Vec<usize>,
    /// Epochs of ordinary training on the whole table (`client::training`) before the attacked
    /// round; 0 attacks the network at initialisation, as the paper does.
    pub training_epochs: usize,
    /// Clients whose updates are averaged before the server sees them (what secure aggregation
    /// reveals): the attack faces `clients × batch_size` rows. Each client applies `defence` to
    /// its own update first.
    pub clients: usize,
    pub defence: Option<Defence>,
    /// None: the attack's own default (`AttackKind::default_optimiser`).
    pub optimiser: Option<Optimiser>,
    /// Read the loss back (and report progress) every this many steps. On a GPU the engine may
    /// report less often, so that a slow readback never stalls the device (see `attack::cadence`).
    pub report_every: usize,
    /// TabLeak and Cosine: keep the dummy rows in the span of the first layer's gradient
    /// (`attack::subspace`); the prior switches itself off where that span says nothing.
    pub subspace: bool,
    /// Members whose loss has stopped improving stop (`attack::driver::EARLY_STOP`).
    pub early_stop: bool,
    /// The attribute attack's sensitive column (`AttackKind::Attribute` only).
    pub attribute: Option<AttributeConfig>,
    /// CAFE's vertical setting (`AttackKind::Cafe` only; None: its defaults).
    pub cafe: Option<CafeConfig>,
}

impl Default for AttackConfig {
    fn default() -> Self {
        AttackConfig {
            attack: AttackKind::Tableak,
            batch_size: 32,
            ensemble: 30,
            protocol: Protocol::Fedsgd,
            epoch_prior: EpochPrior::Fixed(DEFAULT_EPOCH_PRIOR),
            iterations: 1500,
            seed: 0,
            labels: LabelMode::Known,
            hidden: vec![100, 100],
            training_epochs: 0,
            clients: 1,
            defence: None,
            optimiser: None,
            report_every: 25,
            subspace: true,
            early_stop: true,
            attribute: None,
            cafe: None,
        }
    }
}

impl std::fmt::Display for AttackKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AttackKind::Tableak => "TabLeak",
            AttackKind::Cosine => "Cosine",
            AttackKind::Dlg => "DLG",
            AttackKind::Random => "Random",
            AttackKind::Attribute => "Attribute",
            AttackKind::Cafe => "CAFE",
        })
    }
}

impl AttackKind {
    /// TabLeak runs sign-Adam at lr 0.1: on 10 Adult batches each this recovered 98.9 % (B = 8) and
    /// 86.0 % (B = 32) against 94.4 % and 83.5 % at the reference's 0.06, whose runs at B = 8 sometimes
    /// had not converged by step 1500 (docs/fidelity.md). The baselines keep the reference's 0.06 so
    /// that they stay comparable with the published numbers.
    pub fn default_optimiser(self) -> Optimiser {
        match self {
            AttackKind::Tableak | AttackKind::Attribute => Optimiser {
                lr: 0.1,
                ..Optimiser::default()
            },
            _ => Optimiser::default(),
        }
    }
}

const GIB: f64 = (1u64 << 30) as f64;

/// Most clients one simulated aggregate averages.
pub const MAX_CLIENTS: usize = 1024;
/// Most rounds the attribute attack observes (each is a whole simulated training in every step).
pub const MAX_ATTRIBUTE_ROUNDS: usize = 20;

/// Most rows and rounds CAFE simulates (its normal equations are rows × rows).
pub const MAX_CAFE_ROWS: usize = 4000;
pub const MAX_CAFE_ROUNDS: usize = 100_000;

/// Most epochs of training before an attack.
pub const MAX_TRAINING_EPOCHS: usize = 100;

/// What the attack may hold at once: a wasm32 tab has a 4 GiB address space; natively, stay well
/// inside a workstation's memory rather than swap.
#[cfg(target_arch = "wasm32")]
pub const MAX_WORKING_SET_BYTES: u64 = 2 << 30;
#[cfg(not(target_arch = "wasm32"))]
pub const MAX_WORKING_SET_BYTES: u64 = 16 << 30;

impl AttackConfig {
    /// The optimiser this run uses.
    pub fn optimiser(&self) -> Optimiser {
        self.optimiser.unwrap_or_else(|| self.attack.default_optimiser())
    }

    /// How many members this attack inverts: the ensemble for TabLeak, one run for the single-run
    /// baselines, none for random guessing.
    pub fn members(&self) -> usize {
        match self.attack {
            AttackKind::Tableak => self.ensemble * self.prior_candidates().len(),
            AttackKind::Attribute => self.ensemble,
            AttackKind::Cafe => 0,
            AttackKind::Cosine | AttackKind::Dlg => 1,
            AttackKind::Random => 0,
        }
    }

    /// The epoch-prior weights this attack runs, one ensemble each: several when `Auto` chooses
    /// among them, none where there is no prior (FedSGD, the baselines).
    pub fn prior_candidates(&self) -> Vec<f64> {
        match (&self.protocol, self.attack, self.epoch_prior) {
            (Protocol::Fedavg(t), AttackKind::Tableak, EpochPrior::Auto) if t.epochs > 1 => PRIOR_CANDIDATES.to_vec(),
            (Protocol::Fedavg(t), AttackKind::Tableak, EpochPrior::Fixed(l)) if t.epochs > 1 => vec![l],
            _ => vec![0.0],
        }
    }

    /// The epoch prior's weight for member `m` of the whole ensemble (candidates in order, one
    /// ensemble each).
    pub fn prior_of(&self, m: usize) -> f64 {
        let candidates = self.prior_candidates();
        candidates[(m / self.ensemble.max(1)).min(candidates.len() - 1)]
    }

    /// Rows behind the update the server sees: one client's batch, or every averaged client's.
    pub fn rows(&self) -> usize {
        self.batch_size * self.clients.max(1)
    }

    /// Dummy rows each member optimises: the rows behind the update, or for TabLeak on FedAvg one
    /// copy of the client's rows per local epoch.
    pub fn rows_per_member(&self) -> usize {
        match (&self.protocol, self.attack) {
            (Protocol::Fedavg(t), AttackKind::Tableak) => t.epochs * self.rows(),
            _ => self.rows(),
        }
    }

    /// Local steps a member's loss unrolls (1 for FedSGD).
    pub fn local_steps(&self) -> usize {
        match &self.protocol {
            Protocol::Fedsgd => 1,
            Protocol::Fedavg(t) => t.epochs * t.steps_per_epoch(self.batch_size),
        }
    }

    /// Layer widths of the client's network on this table: [d, hidden..., classes].
    pub fn layer_sizes(&self, dataset: &Dataset) -> Vec<usize> {
        let mut sizes = vec![dataset.d()];
        sizes.extend(&self.hidden);
        sizes.push(dataset.classes.len());
        sizes
    }

    /// Check the settings against the table they will draw batches from.
    pub fn validate(&self, dataset: &Dataset) -> Result<()> {
        self.validate_with(dataset, true)
    }

    /// Check the settings of an attack on a received update: `dataset` is the encoding only (no
    /// rows to draw from).
    pub fn validate_for_update(&self, dataset: &Dataset) -> Result<()> {
        self.validate_with(dataset, false)
    }

    fn validate_with(&self, dataset: &Dataset, has_rows: bool) -> Result<()> {
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
        if has_rows
            && self
                .attribute
                .as_ref()
                .is_some_and(|a| a.membership == Membership::Unknown)
            && 2 * self.rows() > dataset.n()
        {
            return fail(format!(
                "unknown membership needs as many other rows as the client's {}: the table has {}",
                self.rows(),
                dataset.n()
            ));
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
        if self.ensemble == 0 || self.ensemble > 1000 {
            return fail(format!("ensemble size {} must be between 1 and 1000", self.ensemble));
        }
        match (self.attack, &self.attribute) {
            (AttackKind::Attribute, None) => {
                return fail("the attribute attack needs the sensitive column it reconstructs".into());
            }
            (AttackKind::Attribute, Some(a)) => {
                let Some(f) = dataset.features.iter().find(|f| f.name == a.column) else {
                    return fail(format!(
                        "no column is named {:?}; the columns are: {}",
                        a.column,
                        dataset
                            .features
                            .iter()
                            .map(|f| f.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                };
                if !f.is_categorical() {
                    return fail(format!(
                        "the sensitive column {:?} is continuous; the attribute attack reconstructs a categorical one",
                        a.column
                    ));
                }
                if self.labels == LabelMode::Restored {
                    return fail("the attribute attack takes the labels as known".into());
                }
                if a.rounds == 0 || a.rounds > MAX_ATTRIBUTE_ROUNDS {
                    return fail(format!(
                        "the attribute attack observes 1 to {MAX_ATTRIBUTE_ROUNDS} rounds, not {}",
                        a.rounds
                    ));
                }
                if a.rounds > 1 && a.membership == Membership::Unknown {
                    return fail("unknown membership is inferred from one round: use --rounds 1".into());
                }
            }
            (_, Some(_)) => {
                return fail("a sensitive column is for the attribute attack (attack \"attribute\")".into());
            }
            _ => {}
        }
        if self.attack == AttackKind::Cafe {
            let c = self.cafe.unwrap_or_default();
            if c.rows == 0 || (has_rows && c.rows > dataset.n()) || c.rows > MAX_CAFE_ROWS {
                return fail(format!(
                    "CAFE's rows {} must be between 1 and the table's {} (at most {MAX_CAFE_ROWS})",
                    c.rows,
                    dataset.n()
                ));
            }
            if self.batch_size > c.rows {
                return fail(format!(
                    "CAFE's batch of {} indices must be at most its {} rows",
                    self.batch_size, c.rows
                ));
            }
            if c.parties == 0 || c.parties > dataset.features.len() {
                return fail(format!(
                    "CAFE's {} parties must be between 1 and the table's {} columns",
                    c.parties,
                    dataset.features.len()
                ));
            }
            if c.rounds == 0 || c.rounds > MAX_CAFE_ROUNDS {
                return fail(format!(
                    "CAFE's rounds {} must be between 1 and {MAX_CAFE_ROUNDS}",
                    c.rounds
                ));
            }
            if let Some(k) = c.fake_gradients
                && !(1..=crate::client::defence::MAX_FAKE_DRAWS).contains(&k)
            {
                return fail(format!(
                    "fake gradients take 1 to {} draws, not {k}",
                    crate::client::defence::MAX_FAKE_DRAWS
                ));
            }
        }
        if self.attack == AttackKind::Cafe
            && (!matches!(self.protocol, Protocol::Fedsgd)
                || self.defence.is_some_and(|d| d.clip.is_some() || d.noise > 0.0)
                || self.clients > 1)
        {
            return fail(
                "CAFE simulates its own vertical rounds: FedAvg, clipping, noise and averaged clients do not apply \
                 (its countermeasure is --fake-gradients)"
                    .into(),
            );
        }
        if self.attack != AttackKind::Cafe && self.cafe.is_some() {
            return fail("shared rows, parties and rounds are CAFE's settings (attack \"cafe\")".into());
        }
        if self.iterations == 0 && self.attack != AttackKind::Random {
            return fail("iterations must be at least 1".into());
        }
        if self.hidden.contains(&0) {
            return fail("hidden layer sizes must be positive".into());
        }
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
            if self.labels == LabelMode::Restored {
                return fail(
                    "restored labels are for FedSGD (they are read off one gradient); on FedAvg the server \
                     is given the labels in their order, as the reference does"
                        .into(),
                );
            }
        }
        if let EpochPrior::Fixed(l) = self.epoch_prior
            && !(l >= 0.0 && l.is_finite())
        {
            return fail(format!("the epoch prior's weight {l} must be a number ≥ 0"));
        }
        // Every attack simulates the client, so the network's size is checked for all of them
        // (the random baseline included) before anything is allocated.
        let need = self.working_set_bytes(dataset);
        if need > MAX_WORKING_SET_BYTES {
            let sizes = self.layer_sizes(dataset);
            let what = if self.members() > 0 {
                format!(
                    "an ensemble of {} × {} rows on a {} network",
                    self.members(),
                    self.rows_per_member(),
                    join_sizes(&sizes)
                )
            } else {
                format!(
                    "simulating a batch of {} rows on a {} network",
                    self.rows(),
                    join_sizes(&sizes)
                )
            };
            return fail(format!(
                "{what} needs about {:.1} GiB of memory for the attack; this engine allows {:.0} GiB: \
                 use fewer members, a smaller batch or smaller hidden layers",
                need as f64 / GIB,
                MAX_WORKING_SET_BYTES as f64 / GIB
            ));
        }
        let lr = self.optimiser().lr;
        if !(lr > 0.0 && lr.is_finite()) {
            return fail(format!("learning rate {lr} must be a positive number"));
        }
        if let Some(d) = &self.defence {
            d.validate().map_err(Error::Config)?;
        }
        Ok(())
    }

    /// Bytes the attack holds at its peak, in f32: the client's network and its simulated gradient
    /// on the batch (every attack), and for the inverting attacks what the CPU kernel allocates
    /// (`attack::accel::cpu::Workspace` per member: the relaxed rows and their companions, every
    /// layer's activations and their derivatives, a parameter-gradient copy; z and Adam's two
    /// moments; the final relaxation of the whole ensemble). Saturating: absurd settings estimate
    /// as u64::MAX rather than wrap.
    pub fn working_set_bytes(&self, dataset: &Dataset) -> u64 {
        let sizes: Vec<u64> = self.layer_sizes(dataset).into_iter().map(|s| s as u64).collect();
        let d = sizes[0];
        let b = self.rows() as u64;
        let members = self.members() as u64;
        let sum = |f: &dyn Fn(u64, u64) -> u64| sizes.windows(2).fold(0u64, |acc, w| acc.saturating_add(f(w[0], w[1])));
        let params = sum(&|i, o| i.saturating_mul(o).saturating_add(o));
        let outs = sum(&|_, o| o);
        let ins = sum(&|i, _| i);
        // The client, simulated: the parameters on the host and on a device, its gradient and the
        // observed update, the accelerators' copies of both; one pass over the batch.
        let client = params
            .saturating_mul(8)
            .saturating_add(b.saturating_mul(ins.saturating_add(3 * outs)));
        // Per inverted row: x, probs, sig, z̄ (4d) + z, m, v (3d) + the final relaxation's x, probs,
        // sig (3d); per layer its output, δ and d̄ (3·out) and h̄ (in). Per member a gradient copy,
        // and on FedAvg every local step's parameters and tape (rows × (in + 2·out)).
        let rows = self.rows_per_member() as u64;
        let steps = self.local_steps() as u64;
        let per_row = (10 * d).saturating_add(3 * outs).saturating_add(ins);
        let trajectory = if steps > 1 {
            steps.saturating_mul(params.saturating_add(b.saturating_mul(ins.saturating_add(2 * outs))))
        } else {
            0
        };
        let inversion = members.saturating_mul(
            rows.saturating_mul(per_row)
                .saturating_add(params)
                .saturating_add(trajectory),
        );
        client.saturating_add(inversion).saturating_mul(4)
    }
}

fn join_sizes(sizes: &[usize]) -> String {
    sizes.iter().map(usize::to_string).collect::<Vec<_>>().join("-")
}

/// Which members of the ensemble one call inverts. A page splits the ensemble over several workers
/// (wasm has one thread each); every member starts from the same draw however it is split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct MemberRange {
    pub first: usize,
    pub count: usize,
}

/// An attack as a caller describes it in one object: the table's reading (label, kinds, columns
/// left out) and the attack's settings. The npm package's `run` takes this (camelCase); every
/// field but `label` has the engine's default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase", default)]
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
    /// TabLeak's members; default 30 for FedSGD, 15 for FedAvg.
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
    /// TabLeak on FedAvg: the epoch prior's weight λ; "auto" chooses it without the truth.
    #[ts(as = "Option<_>", optional)]
    pub epoch_prior: EpochPrior,
    #[ts(as = "Option<f64>", optional)]
    pub seed: u64,
    #[ts(as = "Option<_>", optional)]
    pub labels: LabelMode,
    #[ts(as = "Option<_>", optional)]
    pub hidden: Vec<usize>,
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
    /// The first layer's span as a prior on the rows (default on; see `AttackConfig::subspace`).
    #[ts(as = "Option<_>", optional)]
    pub subspace: bool,
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
        RunOptions {
            label: String::new(),
            kinds: Default::default(),
            ignore: Vec::new(),
            include: Vec::new(),
            attack: c.attack,
            batch_size: c.batch_size,
            ensemble: None,
            iterations: c.iterations,
            protocol: ProtocolKind::Fedsgd,
            local_batch: LocalTraining::default().local_batch,
            local_epochs: LocalTraining::default().epochs,
            client_lr: LocalTraining::default().lr,
            epoch_prior: c.epoch_prior,
            seed: c.seed,
            labels: c.labels,
            hidden: c.hidden,
            training_epochs: c.training_epochs,
            clients: c.clients,
            clip: None,
            noise: 0.0,
            fake_gradients: None,
            delta: None,
            lr: None,
            report_every: c.report_every,
            subspace: c.subspace,
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

/// The protocol by name, for flat options (the CLI's and the page's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum ProtocolKind {
    Fedsgd,
    Fedavg,
}

impl RunOptions {
    pub fn dataset_options(&self) -> DatasetOptions {
        DatasetOptions {
            label: self.label.clone(),
            kinds: self.kinds.clone().into_iter().collect(),
            ignore: self.ignore.clone(),
            include: self.include.clone(),
        }
    }

    pub fn protocol(&self) -> Protocol {
        match self.protocol {
            ProtocolKind::Fedsgd => Protocol::Fedsgd,
            ProtocolKind::Fedavg => Protocol::Fedavg(LocalTraining {
                epochs: self.local_epochs,
                local_batch: self.local_batch,
                lr: self.client_lr,
            }),
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

    pub fn attack_config(&self) -> AttackConfig {
        let protocol = self.protocol();
        AttackConfig {
            attack: self.attack,
            batch_size: self.batch_size,
            ensemble: self.ensemble.unwrap_or_else(|| match self.attack {
                AttackKind::Attribute => crate::attack::attribute::DEFAULT_ENSEMBLE,
                _ => protocol.default_ensemble(),
            }),
            protocol,
            epoch_prior: self.epoch_prior,
            iterations: self.iterations,
            seed: self.seed,
            labels: self.labels,
            hidden: self.hidden.clone(),
            training_epochs: self.training_epochs,
            clients: self.clients,
            defence: self.defence(),
            optimiser: self.lr.map(|lr| Optimiser {
                lr,
                ..self.attack.default_optimiser()
            }),
            report_every: self.report_every,
            subspace: self.subspace,
            early_stop: self.early_stop,
            // CAFE's settings given to another attack reach validation, which names them.
            cafe: (self.attack == AttackKind::Cafe
                || self.parties.is_some()
                || self.cafe_rows.is_some()
                || (self.rounds.is_some() && self.attack != AttackKind::Attribute))
                .then(|| {
                    let d = CafeConfig::default();
                    CafeConfig {
                        parties: self.parties.unwrap_or(d.parties),
                        rows: self.cafe_rows.unwrap_or(d.rows),
                        rounds: self.rounds.unwrap_or(d.rounds),
                        fake_gradients: self.fake_gradients,
                    }
                }),
            attribute: self.sensitive.clone().map(|column| AttributeConfig {
                column,
                l2: self.l2,
                membership: self.membership,
                rounds: self
                    .rounds
                    .filter(|_| self.attack == AttackKind::Attribute)
                    .unwrap_or(1),
            }),
        }
    }
}

/// The engine's limits, for a page to check input before handing it over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Largest CSV the engine reads, in bytes.
    pub max_csv_bytes: usize,
    /// Most workers one ensemble is split over.
    pub max_workers: usize,
    /// Most classes a label has without a warning (more looks like a wrong column).
    pub max_label_classes: usize,
}

impl Limits {
    pub fn of_this_engine() -> Limits {
        Limits {
            max_csv_bytes: crate::table::MAX_CSV_BYTES,
            max_workers: crate::plan::MAX_WORKERS,
            max_label_classes: crate::table::inference::MAX_LABEL_CLASSES,
        }
    }
}

//! The attacks leakscope offers, behind one trait. Every question the engine asks of an attack
//! (its checks, its ensemble, its optimiser, the inversion it runs, the priors it composes) goes
//! through `Attack`, reached from a configuration's `AttackSpec` by the one exhaustive match in
//! `attack_of`. Adding an attack is a module implementing `Attack`, an arm here and in
//! `AttackSpec`, and its tests (docs/engine.md).
use crate::assess::search_bounds;
use crate::attack::describe::{self, AttackInfo};
use crate::attack::inversion::objective::Objective;
use crate::attack::spec::{AttackKind, AttackSpec, CosineBaseline, DlgBaseline, RandomBaseline};
use crate::client::fedavg::LocalOrder;
use crate::config::{AttackConfig, MAX_ENSEMBLE, Optimiser, Protocol};
use crate::error::{Error, Result};
use crate::plan::cost::{self, Work};
use crate::plan::limits::WorkingSet;
use crate::table::Dataset;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// The inversion an attack runs: what it optimises and against what.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Inverts {
    /// Rows relaxed by softmax/sigmoid (TabLeak) or optimised as encoded (the baselines).
    pub relaxed: bool,
    pub objective: Objective,
}

/// The parts beyond the published attacks that an attack composes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Priors {
    /// The first layer's span as a prior on the rows, and rows decoded in it (`attack::priors::subspace`).
    pub span: bool,
    /// Rows proved exactly from the first layer's ReLU pattern (`attack::priors::activity`).
    pub proof: bool,
    /// Rows certified by the second layer's span of activations (`attack::priors::activation_span`).
    pub second_layer: bool,
    /// Cells falling back to the table's marginals where a shadow client shows the update says
    /// less than they do (`assess::fallback`).
    pub fallback: bool,
    /// FedAvg in a known order: the rows the client's simulated update chooses among the
    /// members' and the span's (`assess::update_choice`).
    pub choice: bool,
    /// Continuous columns the table determines from a category, read from it (`table::determined`).
    pub determined: bool,
}

/// A part an attack would compose that the client's model rules out, and why: what the report
/// says instead of leaving it silently off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct NotApplied {
    pub part: String,
    pub why: String,
}

/// The lines a report prints for them: parts off for one reason share a line.
pub fn not_applied_lines(parts: &[NotApplied]) -> Vec<String> {
    let mut lines: Vec<(Vec<&str>, &str)> = Vec::new();
    for p in parts {
        match lines.iter_mut().find(|(_, why)| *why == p.why) {
            Some((names, _)) => names.push(&p.part),
            None => lines.push((vec![&p.part], &p.why)),
        }
    }
    lines
        .into_iter()
        .map(|(names, why)| format!("not applied: {} ({why})", names.join(", ")))
        .collect()
}

/// The parts a model can rule out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Span,
    Proof,
    SecondLayer,
    LabelRestoration,
}

impl Part {
    fn name(&self) -> &'static str {
        match self {
            Part::Span => "the first layer's span",
            Part::Proof => "the first layer's proof",
            Part::SecondLayer => "the second layer's certificate",
            Part::LabelRestoration => "label restoration",
        }
    }
}

/// What an attack is, to the engine.
pub trait Attack {
    fn kind(&self) -> AttackKind;

    /// How a report names it, with what sets it apart ("TabLeak (ensemble 30)").
    fn title(&self) -> String;

    /// The inversion it runs; None where it inverts nothing (the random guess, CAFE's linear
    /// algebra).
    fn inversion(&self) -> Option<Inverts>;

    /// Members it inverts per epoch-prior candidate: its ensemble (1 for a single run).
    fn ensemble(&self) -> usize {
        usize::from(self.inversion().is_some())
    }

    /// Adam's settings unless the caller gives a learning rate.
    fn default_optimiser(&self) -> Optimiser {
        Optimiser::default()
    }

    /// The priors it composes in this setting.
    fn priors(&self, _config: &AttackConfig) -> Priors {
        Priors::default()
    }

    /// The epoch-prior weights it runs, one ensemble each ([0] where it has none).
    fn prior_candidates(&self, _protocol: &Protocol) -> Vec<f64> {
        vec![0.0]
    }

    /// Whether it runs its ensemble by the stopping rule (`assess::stopping`) where that applies.
    fn stops_members(&self) -> bool {
        false
    }

    /// Whether its ensemble may be split over a page's workers.
    fn splits_over_workers(&self) -> bool {
        false
    }

    /// Its own checks, after the common ones (`AttackConfig::validate_common`). `has_rows`: the
    /// table has rows (not the encoding of a received update).
    fn validate(&self, _config: &AttackConfig, _dataset: &Dataset, _has_rows: bool) -> Result<()> {
        Ok(())
    }

    /// Why it cannot attack an update received from elsewhere, if it cannot.
    fn refuses_received(&self) -> Option<&'static str> {
        None
    }
}

/// Every attack the engine offers, described for a caller (`attack::describe`), in the order they
/// are offered.
pub fn describe_attacks() -> Vec<AttackInfo> {
    AttackKind::ALL
        .into_iter()
        .map(|kind| match kind {
            AttackKind::Tableak => describe::tableak(),
            AttackKind::Cosine => describe::baseline(
                kind,
                "Geiping et al.'s cosine inversion of one dummy batch, as published",
                true,
            ),
            AttackKind::Dlg => describe::baseline(
                kind,
                "Zhu et al.'s squared-error inversion of one dummy batch, as published",
                true,
            ),
            AttackKind::Random => describe::baseline(
                kind,
                "rows drawn from the table's columns: what the server knows without the update",
                false,
            ),
            AttackKind::Attribute => describe::attribute(),
            AttackKind::Cafe => describe::cafe(),
        })
        .collect()
}

/// The attack a specification names, with its settings: the one place every attack is listed.
pub fn attack_of(spec: &AttackSpec) -> &dyn Attack {
    match spec {
        AttackSpec::Tableak(s) => s,
        AttackSpec::Cosine => &CosineBaseline,
        AttackSpec::Dlg => &DlgBaseline,
        AttackSpec::Random => &RandomBaseline,
        AttackSpec::Attribute(s) => s,
        AttackSpec::Cafe(s) => s,
    }
}

impl AttackConfig {
    /// The configured attack.
    pub fn attacker(&self) -> &dyn Attack {
        attack_of(&self.attack)
    }

    /// The optimiser this run uses.
    pub fn optimiser(&self) -> Optimiser {
        self.optimiser.unwrap_or_else(|| self.attacker().default_optimiser())
    }

    /// How many members this attack inverts: its ensemble per epoch-prior candidate (0: none).
    pub fn members(&self) -> usize {
        self.attacker().ensemble().saturating_mul(self.prior_candidates().len())
    }

    /// The epoch-prior weights this attack runs, one ensemble each.
    pub fn prior_candidates(&self) -> Vec<f64> {
        self.attacker().prior_candidates(&self.protocol)
    }

    /// The epoch prior's weight for member `m` of the whole ensemble (candidates in order, one
    /// ensemble each).
    pub fn prior_of(&self, m: usize) -> f64 {
        let candidates = self.prior_candidates();
        candidates[(m / self.attacker().ensemble().max(1)).min(candidates.len() - 1)]
    }

    /// Dummy rows each member optimises: the rows behind the update; on FedAvg over rows in the
    /// given order, the same rows in every epoch (one copy, the client's exact model); over rows
    /// reshuffled every epoch, one copy per epoch (their batches differ), which TabLeak ties by
    /// its epoch prior and every attack matches and averages afterwards.
    pub fn rows_per_member(&self) -> usize {
        match &self.protocol {
            Protocol::Fedavg(t) if t.order == LocalOrder::Shuffled => t.epochs.saturating_mul(self.rows()),
            _ => self.rows(),
        }
    }

    /// The priors the attack composes here: those it asks for, less what the model rules out
    /// (`not_applied`).
    pub fn priors(&self) -> Priors {
        let mut priors = self.attacker().priors(self);
        for (part, _) in self.ruled_out() {
            match part {
                Part::Span => priors.span = false,
                Part::Proof => priors.proof = false,
                Part::SecondLayer => priors.second_layer = false,
                // Refused where asked for (`AttackConfig::check_task`); said so where not.
                Part::LabelRestoration => {}
            }
        }
        priors
    }

    /// The parts the attack asks for that the client's model rules out, with the reason.
    pub fn not_applied(&self) -> Vec<NotApplied> {
        self.ruled_out()
            .into_iter()
            .map(|(part, why)| NotApplied {
                part: part.name().into(),
                why,
            })
            .collect()
    }

    fn ruled_out(&self) -> Vec<(Part, String)> {
        let asked = self.attacker().priors(self);
        let mut out = Vec::new();
        if self.head == crate::client::head::Head::Linear {
            out.push((
                Part::LabelRestoration,
                "a regression's label is a number, not a class: the server reconstructs it with each row, and \
                 reads it off the last layer exactly once the rows are proved"
                    .to_string(),
            ));
        }
        if self.hidden.is_empty() {
            // Without a hidden layer (logistic regression) the first layer is the output layer:
            // its gradient X Δ has rank at most the outputs, and its span no longer holds the rows.
            let model = match self.head {
                crate::client::head::Head::Linear => "linear regression",
                _ => "logistic regression",
            };
            let why = format!(
                "{model} has no hidden layer: its one layer's gradient has rank at most its outputs and does not \
                 span the rows"
            );
            out.extend(rows_readers(&asked, &why));
            return out;
        }
        if let Protocol::Fedavg(t) = &self.protocol
            && let Some(why) = t.optimizer.span_broken_by()
        {
            // The span, the proof and the certificate read the update as a sum of the rows' terms
            // (SGD's weight decay taken out first: `Scenario::rows_part`).
            out.extend(rows_readers(&asked, why));
            return out;
        }
        // The first layer's proof reads the ReLU pattern (`attack::priors::activity`), which another
        // activation has not; the second layer's span holds any activation's rows.
        if asked.proof && !self.activation.is_relu() {
            out.push((
                Part::Proof,
                format!(
                    "it reads ReLU's pattern, a zero gradient at every inactive unit, which {} has not",
                    self.activation.name()
                ),
            ));
        }
        if asked.second_layer && self.hidden.len() < 2 {
            out.push((
                Part::SecondLayer,
                "it reads the second hidden layer's gradient; this network has one hidden layer".into(),
            ));
        }
        out
    }

    /// What the attack holds in memory at its peak (`plan::limits`).
    pub fn working_set(&self, dataset: &Dataset) -> WorkingSet {
        let sizes = self.layer_sizes(dataset);
        // FedSGD's choice among a crowded span's rows (`assess::span_pursuit`).
        let priors = self.priors();
        let pursues = self.protocol == Protocol::Fedsgd
            && dataset.target.is_none()
            && priors.choice
            && priors.span
            && self.members() > 0;
        let pursuit_bytes = match pursues {
            true => search_bounds::pursuit_working_bytes(&sizes, self.rows(), dataset.classes.len()),
            false => 0,
        };
        let span_search_bytes = match priors.span && self.members() > 0 {
            true => crate::attack::priors::enumerate::SUM_CACHE_BYTES,
            false => 0,
        };
        WorkingSet {
            sizes,
            rows: self.rows(),
            members: self.members(),
            rows_per_member: self.rows_per_member(),
            local_steps: self.local_steps(),
            pursuit_bytes,
            span_search_bytes,
            shows_rows: self.protocol == Protocol::Fedsgd && dataset.target.is_none(),
        }
    }

    /// What the attack's optimisation costs at most (`plan::cost`): counted from the sizes, so the
    /// same on every machine and under any load.
    pub fn work(&self, dataset: &Dataset) -> Work {
        let (rows_per_step, per_row_weight) = match &self.protocol {
            Protocol::Fedsgd => (self.rows(), cost::ONE_GRADIENT),
            Protocol::Fedavg(t) => (t.epochs.saturating_mul(self.rows()), cost::LOCAL_STEP),
        };
        let (runs, replays) = self.choice_work(dataset);
        Work {
            sizes: self.layer_sizes(dataset),
            members: self.members(),
            iterations: self.iterations,
            rows_per_step,
            per_row_weight,
            runs,
            replays,
        }
    }

    /// The runs of the optimisation and the client updates replayed at most where the update
    /// chooses rows (FedSGD of a classifier; FedAvg of a classifier in a known order, or
    /// reshuffled with a copy of the rows per epoch, whose orders it chooses too) and the ensemble
    /// may run again: twice each, every run pooled up to twice (the second layer's certificate
    /// alone first). Elsewhere one run, nothing replayed.
    fn choice_work(&self, dataset: &Dataset) -> (usize, usize) {
        let (runs, poolings) = (2, 2);
        let t = match &self.protocol {
            Protocol::Fedsgd if self.priors().choice && dataset.target.is_none() => {
                // The pursuit's rows (`assess::span_pursuit`) replayed besides.
                let per_pooling = search_bounds::choice_replays(self.rows(), self.rows(), false)
                    + self.members()
                    + search_bounds::PURSUIT_REPLAYS;
                return (runs, runs * poolings * per_pooling);
            }
            Protocol::Fedsgd => return (1, 0),
            Protocol::Fedavg(t) => t,
        };
        let (n, b, members) = (self.rows(), t.local_batch, self.members());
        let known = t.order_known(n);
        let reshuffled = !known && self.rows_per_member() == t.epochs.saturating_mul(n);
        if !(self.priors().choice && dataset.target.is_none() && (known || reshuffled)) {
            return (1, 0);
        }
        let orders = match reshuffled {
            true => search_bounds::order_replays(n, t.epochs, b, members),
            false => 0,
        };
        let per_pooling = search_bounds::choice_replays(n, b, known) + orders + members;
        (runs, runs * poolings * per_pooling)
    }

    /// Bytes the attack holds at its peak (`plan::limits::WorkingSet::bytes`).
    pub fn working_set_bytes(&self, dataset: &Dataset) -> u64 {
        self.working_set(dataset).bytes()
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
        self.validate_common(dataset, has_rows)?;
        let attack = self.attacker();
        attack.validate(self, dataset, has_rows)?;
        if attack.inversion().is_some() {
            let ensemble = attack.ensemble();
            if ensemble == 0 || ensemble > MAX_ENSEMBLE {
                return Err(Error::Config(format!(
                    "ensemble size {ensemble} must be between 1 and {MAX_ENSEMBLE}"
                )));
            }
            if self.iterations == 0 {
                return Err(Error::Config("iterations must be at least 1".into()));
            }
        }
        // A learning rate that means nothing is refused whichever attack it was given to.
        let lr = self.optimiser().lr;
        if !(lr > 0.0 && lr.is_finite()) {
            return Err(Error::Config(format!("learning rate {lr} must be a positive number")));
        }
        // Every attack simulates the client, so the network's size is checked for all of them
        // (the random baseline included) before anything is allocated.
        self.working_set(dataset).check().map_err(Error::Config)
    }
}

/// Every part asked for that reads the update as the rows' terms (the first layer's span, its
/// proof, the second layer's certificate), ruled out for `why`.
fn rows_readers(asked: &Priors, why: &str) -> Vec<(Part, String)> {
    [
        (Part::Span, asked.span),
        (Part::Proof, asked.proof),
        (Part::SecondLayer, asked.second_layer),
    ]
    .into_iter()
    .filter(|&(_, on)| on)
    .map(|(part, _)| (part, why.to_string()))
    .collect()
}

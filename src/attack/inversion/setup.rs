//! One inversion set up: the scenario's update as the problem the definition (`inversion`) and
//! each accelerator (`accel::cpu`, `accel::cube`) are built from, the members it inverts, and the
//! step engine that runs them. The attacks that invert share it; what they do before (the
//! scenario) and after (the assessment) is theirs.
use crate::assess::matching::Rule;
use crate::attack::accel::cpu::{self, HostProblem};
use crate::attack::inversion::driver::{Cadence, EARLY_STOP, InversionConfig, Progress};
use crate::attack::inversion::ensemble::{self, EnsembleRounds, Members, Shape};
use crate::attack::inversion::problem::ProblemSpec;
use crate::attack::inversion::relax::Layout;
use crate::attack::inversion::{self, Simulation, member_losses};
use crate::attack::priors::subspace::{DEFAULT_SUBSPACE_WEIGHT, Subspace, SubspaceSummary};
use crate::attack::registry::Inverts;
use crate::client::head::Head;
use crate::config::{AttackConfig, MemberRange, Protocol};
use crate::error::Result;
use crate::runtime::{BackendInfo, Needs, Runtime, StepEngine};
use crate::scenario::Scenario;
use crate::seed::seed_for;
use crate::table::Dataset;

/// An inversion ready to run: the scenario, and how the attack inverts it.
pub struct Setup<'a> {
    pub runtime: &'a Runtime,
    /// What the report says ran: the runtime's, plus how a caller split the work.
    pub backend: BackendInfo,
    pub dataset: &'a Dataset,
    pub config: &'a AttackConfig,
    pub scenario: Scenario,
    pub layout: Layout,
    pub rules: Vec<Rule>,
    /// Members of this attack (0: it inverts nothing).
    pub members: usize,
    pub inverts: Inverts,
    /// The first layer's span, where the attack composes it (`attack::priors::subspace`).
    pub subspace: Option<Subspace>,
    /// Where the ensemble ran by its stopping rule, what it did (`members` is then the members
    /// it pooled).
    pub rounds: Option<EnsembleRounds>,
    /// The shadow client's members, inverted in shares on a page's workers
    /// (`run::invert_shadow`): the fallback's calibration joins them instead of inverting.
    pub shadow_parts: Option<Vec<crate::attack::inversion::ensemble::Members>>,
    /// A FedSGD shadow client's choice of rows searches where the client's did, and not elsewhere
    /// (`Setup::calibrate_fallback_on`): its thresholds are then for rows chosen as the client's
    /// were. None: by its own fit (`UPDATE_FIT_THRESHOLD`).
    pub choice_follows: Option<bool>,
    /// Continuous columns the table determines from a category, where the attack reads them so
    /// (`table::determined`, `assess::pooling::ReadFrom`).
    pub determined: Vec<crate::table::determined::Determined>,
    /// The table's guess (`Setup::table_guess`), made once: the fallback's fits and the report
    /// both read it.
    pub(crate) table_guess: std::sync::OnceLock<Option<crate::assess::table_guess::typical::TableGuess>>,
    /// The first layer's span searched (`Setup::enumerate_span`), once.
    pub(crate) span_rows: std::sync::OnceLock<crate::assess::span_rows::SpanSearch>,
    /// The span of every direction above its tail's noise, searched for the choice alone
    /// (`Setup::span_of_every_direction`), once.
    pub(crate) every_direction_rows: std::sync::OnceLock<Option<crate::assess::span_rows::SpanRows>>,
    /// The span's pursuits run, by what they were asked (`assess::pursuits`).
    pub(crate) pursuits: crate::assess::pursuits::Pursuits,
}

impl<'a> Setup<'a> {
    pub fn new(runtime: &'a Runtime, dataset: &'a Dataset, config: &'a AttackConfig, scenario: Scenario) -> Setup<'a> {
        // What every part reads as the update: its rows' part (SGD's weight decay taken out).
        let scenario = scenario.rows_part(config);
        // An attack that inverts nothing (the random guess) is set up with the published
        // objective, which it never runs.
        let inverts = config.attacker().inversion().unwrap_or(Inverts {
            relaxed: false,
            objective: crate::attack::inversion::objective::Objective::Cosine,
        });
        let layout = Layout::of(dataset);
        // The span prior fits the cosine objective's scale.
        let subspace = (config.priors().span
            && inverts.objective == crate::attack::inversion::objective::Objective::Cosine)
            .then(|| {
                let sizes = &scenario.params.sizes;
                Subspace::from_update(
                    scenario.observed.weight(0),
                    scenario.observed.bias(0),
                    (sizes[0], sizes[1]),
                    Some(&layout),
                    config.rows(),
                    DEFAULT_SUBSPACE_WEIGHT,
                    config.update_source(&scenario.params),
                )
            });
        let mut setup = Setup {
            runtime,
            backend: runtime.info.clone(),
            dataset,
            config,
            scenario,
            rules: Rule::of(&dataset.features),
            layout,
            members: config.members(),
            inverts,
            subspace,
            rounds: None,
            shadow_parts: None,
            choice_follows: None,
            determined: match config.priors().determined {
                true => crate::table::determined::determined_columns(dataset),
                false => Vec::new(),
            },
            table_guess: std::sync::OnceLock::new(),
            span_rows: std::sync::OnceLock::new(),
            every_direction_rows: std::sync::OnceLock::new(),
            pursuits: Default::default(),
        };
        for d in &setup.determined {
            setup.rules[d.column].follows = Some(d.by);
        }
        // The report names what really computes the steps.
        setup.backend = setup.backend.clone().with_engine(setup.engine());
        setup
    }

    /// The subspace prior as the report states it, with the rows it solved.
    pub fn summary(&self, (decoded_rows, rows): (usize, usize), proved_rows: usize) -> Option<SubspaceSummary> {
        self.subspace.as_ref().map(|s| SubspaceSummary {
            decoded_rows,
            rows,
            proved_rows,
            ..s.summary.clone()
        })
    }

    /// The problem, once, for the definition and the accelerators: the scenario's update and
    /// labels, how the client made the update, and the priors this attack composes.
    fn spec(&self) -> ProblemSpec {
        // A regression's labels are unknowns of the rows (`inversion::Problem::onehot`).
        let onehot = match self.config.head {
            Head::Linear => vec![0.0; self.scenario.labels.len()],
            head => head.targets(&self.scenario.labels, self.dataset.classes.len()),
        };
        let spec = ProblemSpec::new(
            &self.scenario.params,
            &self.scenario.observed,
            onehot,
            self.inverts.relaxed.then_some(&self.layout),
            self.inverts.objective,
        )
        .with_known(self.scenario.known.clone())
        .with_later_rounds(self.scenario.later_rounds.clone())
        .with_model(self.config.model())
        .with_simulation(
            self.simulation(),
            (0..self.members).map(|m| self.config.prior_of(m)).collect(),
        );
        match self.active_subspace() {
            Some(s) => spec.with_subspace(s.projector.clone(), s.weight()),
            None => spec,
        }
    }

    /// The subspace prior where it is on (a rank that says something).
    pub fn active_subspace(&self) -> Option<&Subspace> {
        self.subspace.as_ref().filter(|s| s.weight() > 0.0)
    }

    /// What the server simulates on a member's dummy rows (see `inversion::Simulation`).
    pub fn simulation(&self) -> Simulation {
        match self.config.protocol {
            Protocol::Fedsgd => Simulation::Gradient,
            Protocol::Fedavg(training) => Simulation::LocalTraining {
                training,
                copies: self.config.rows_per_member() / self.config.rows(),
            },
        }
    }

    /// The projected rows' fit to the update, one client's rows per member ([N, n, d]): the same
    /// rows in every local epoch, no prior (what the anchor and the epoch prior are chosen by).
    pub async fn projected_losses(&self, projected: Vec<f32>, members: usize) -> Result<Vec<f32>> {
        self.projected_losses_in(projected, members, 1).await
    }

    /// `projected_losses` where each member holds `copies` × the client's rows, one copy per
    /// local epoch in the order it visits them (a reshuffling client's epochs as
    /// `assess::epoch_orders` lays them out); `copies` 1: the same rows every epoch.
    pub async fn projected_losses_in(&self, projected: Vec<f32>, members: usize, copies: usize) -> Result<Vec<f32>> {
        let shared_rows = match self.simulation() {
            Simulation::LocalTraining { training, .. } => Simulation::LocalTraining { training, copies },
            s => s,
        };
        let mut spec = self.spec().with_simulation(shared_rows, Vec::new());
        spec.subspace = None;
        if self.engine() == StepEngine::Definition {
            let on = spec.on_device(&self.runtime.device);
            return member_losses(&spec.problem(&on, 0, 0), projected, members, &self.runtime.device).await;
        }
        // A one-off of N losses: on the host, by the CPU kernel.
        Ok(cpu::member_losses(&HostProblem::new(spec), &projected))
    }

    /// What runs the steps (`Runtime::engine_for`).
    pub fn engine(&self) -> StepEngine {
        self.runtime.engine_for(&Needs {
            local_training: matches!(self.config.protocol, Protocol::Fedavg(_)),
            known_cells: self.scenario.known.is_some(),
            rounds: 1 + self.scenario.later_rounds.len(),
            beyond_kernels: !self.config.activation.is_relu()
                || self.config.hidden.is_empty()
                || self.config.head == Head::Linear,
            sigmoid_head: self.config.head == Head::Sigmoid,
        })
    }

    /// A dummy row's width: the network's inputs, and a regression's label after them (the
    /// server's unknown as much as the row: `inversion::Problem::targets_in_rows`).
    pub fn row_width(&self) -> usize {
        self.dataset.d() + (self.config.head == Head::Linear) as usize
    }

    pub fn check_range(&self, range: MemberRange) -> Result<()> {
        ensemble::check_range(range, self.members)
    }

    /// What each member holds.
    pub fn shape(&self) -> Shape {
        Shape {
            members: self.members,
            rows: self.config.rows_per_member(),
            d: self.row_width(),
            inputs: self.dataset.d(),
            relaxed: self.inverts.relaxed,
        }
    }

    pub async fn invert(&self, range: MemberRange, progress: &mut dyn FnMut(&Progress) -> bool) -> Result<Members> {
        let cadence = self.runtime.cadence(self.config.report_every);
        self.invert_with(range, self.config, cadence, progress).await
    }

    pub async fn invert_with(
        &self,
        range: MemberRange,
        config: &AttackConfig,
        cadence: Cadence,
        progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<Members> {
        self.invert_from(range, config, cadence, None, progress).await
    }

    /// `invert_with`, the members starting at `starts` (the relaxation's variables of the whole
    /// ensemble, `InversionConfig::starts`) where given.
    pub async fn invert_from(
        &self,
        range: MemberRange,
        config: &AttackConfig,
        cadence: Cadence,
        starts: Option<std::sync::Arc<[f32]>>,
        progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<Members> {
        self.check_range(range)?;
        let inv_config = InversionConfig {
            members: range.count,
            first_member: range.first,
            batch: config.rows_per_member(),
            d: self.row_width(),
            iterations: config.iterations,
            optimiser: config.optimiser(),
            seed: seed_for(config.seed, 6),
            report_every: config.report_every,
            early_stop: config.early_stop.then_some(EARLY_STOP),
            starts,
        };
        let spec = self.spec();
        let inversion = match self.engine() {
            StepEngine::CpuKernel => cpu::invert(&HostProblem::new(spec), &inv_config, cadence, progress).await?,
            #[cfg(any(feature = "wgpu", feature = "cuda"))]
            StepEngine::CubeKernels => {
                let host = HostProblem::new(spec);
                crate::attack::accel::cube::invert(self.runtime, &host, &inv_config, cadence, progress).await?
            }
            #[cfg(not(any(feature = "wgpu", feature = "cuda")))]
            StepEngine::CubeKernels => return Err(crate::error::Error::Device("this build has no GPU kernels".into())),
            StepEngine::Definition => {
                let on = spec.on_device(&self.runtime.device);
                let problem = spec.problem(&on, range.first, range.count);
                inversion::invert(&problem, &inv_config, cadence, &self.runtime.device, progress).await?
            }
        };
        Ok(Members {
            range,
            x: inversion.x,
            probs: inversion.probs,
            loss_curve: inversion.loss_curve,
            steps: inversion.steps,
        })
    }
}

//! One inversion set up: the scenario's update as the problem the definition (`inversion`) and
//! each accelerator (`accel::cpu`, `accel::cube`) are built from, the members it inverts, and the
//! step engine that runs them. The attacks that invert share it; what they do before (the
//! scenario) and after (the assessment) is theirs.
use burn::tensor::{Device, Tensor, TensorData};

use super::accel::cpu::{self, HostProblem};
use super::driver::{Cadence, EARLY_STOP, InversionConfig, Progress};
use super::ensemble::{self, Members, Shape};
use super::inversion::{self, Problem, Simulation, SubspacePrior, member_losses};
use super::registry::Inverts;
use super::relax::{Layout, Relaxation};
use super::subspace::{DEFAULT_SUBSPACE_WEIGHT, Subspace, SubspaceSummary};
use crate::assess::matching::Rule;
use crate::client::defence;
use crate::client::gradient::ParamGrads;
use crate::client::network::Net;
use crate::config::{AttackConfig, MemberRange, Protocol};
use crate::error::Result;
use crate::runtime::{BackendInfo, Needs, Runtime, StepEngine};
use crate::scenario::{Scenario, seed_for};
use crate::table::Dataset;

fn onehot(labels: &[usize], classes: usize) -> Vec<f32> {
    let mut out = vec![0f32; labels.len() * classes];
    for (i, &c) in labels.iter().enumerate() {
        out[i * classes + c] = 1.0;
    }
    out
}

/// The observed update as a one-member ParamGrads on a device: every layer's W as [1, in, out],
/// then every b as [1, 1, out].
fn upload_grads(host: &[Vec<f32>], sizes: &[usize], device: &Device) -> ParamGrads {
    let layers = sizes.len() - 1;
    let up = |v: &Vec<f32>, dims: [usize; 3]| Tensor::<3>::from_data(TensorData::new(v.clone(), dims), device);
    ParamGrads {
        weights: (0..layers).map(|l| up(&host[l], [1, sizes[l], sizes[l + 1]])).collect(),
        biases: (0..layers)
            .map(|l| up(&host[layers + l], [1, 1, sizes[l + 1]]))
            .collect(),
    }
}

/// What the definition needs on the runtime's device.
struct OnDevice {
    net: Net,
    target: ParamGrads,
    relaxation: Relaxation,
    /// Further rounds (the attribute attack): network, update and its norm.
    rounds: Vec<(Net, ParamGrads, f64)>,
}

/// An inversion ready to run: the scenario, and how the attack inverts it.
pub struct Setup<'a> {
    pub runtime: &'a Runtime,
    /// What the report says ran: the runtime's, plus how a caller split the work.
    pub backend: BackendInfo,
    pub dataset: &'a Dataset,
    pub config: &'a AttackConfig,
    pub scenario: Scenario,
    pub target_norm: f64,
    pub layout: Layout,
    pub rules: Vec<Rule>,
    /// Members of this attack (0: it inverts nothing).
    pub members: usize,
    pub inverts: Inverts,
    /// The first layer's span, where the attack composes it (`attack::subspace`).
    pub subspace: Option<Subspace>,
}

impl<'a> Setup<'a> {
    pub fn new(runtime: &'a Runtime, dataset: &'a Dataset, config: &'a AttackConfig, scenario: Scenario) -> Setup<'a> {
        // An attack that inverts nothing (the random guess) is set up with the published
        // objective, which it never runs.
        let inverts = config.attacker().inversion().unwrap_or(Inverts {
            relaxed: false,
            objective: super::objective::Objective::Cosine,
        });
        let layout = Layout::of(dataset);
        // The span prior fits the cosine objective's scale.
        let subspace = (config.priors().span && inverts.objective == super::objective::Objective::Cosine).then(|| {
            let sizes = &scenario.params.sizes;
            Subspace::from_first_layer(
                &scenario.observed[0],
                &scenario.observed[sizes.len() - 1],
                sizes[0],
                sizes[1],
                Some(&layout),
                config.rows(),
                DEFAULT_SUBSPACE_WEIGHT,
            )
        });
        let mut setup = Setup {
            runtime,
            backend: runtime.info.clone(),
            dataset,
            config,
            target_norm: defence::l2_norm(&scenario.observed),
            scenario,
            rules: Rule::of(&dataset.features),
            layout,
            members: config.members(),
            inverts,
            subspace,
        };
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

    /// The problem's tensors on the runtime's device, for the definition.
    fn on_device(&self) -> OnDevice {
        let device = &self.runtime.device;
        OnDevice {
            net: Net::new(&self.scenario.params, device),
            target: upload_grads(&self.scenario.observed, &self.scenario.params.sizes, device),
            relaxation: Relaxation::new(&self.layout, device),
            rounds: self
                .scenario
                .later_rounds
                .iter()
                .map(|(params, update)| {
                    (
                        Net::new(params, device),
                        upload_grads(update, &params.sizes, device),
                        defence::l2_norm(update),
                    )
                })
                .collect(),
        }
    }

    fn problem<'b>(&'b self, on: &'b OnDevice, range: MemberRange) -> Problem<'b> {
        Problem {
            net: &on.net,
            target: &on.target,
            target_norm: self.target_norm,
            onehot: onehot(&self.scenario.labels, self.dataset.classes.len()),
            classes: self.dataset.classes.len(),
            relaxation: self.inverts.relaxed.then_some(&on.relaxation),
            objective: self.inverts.objective,
            simulation: self.simulation(),
            priors: (range.first..range.first + range.count)
                .map(|m| self.config.prior_of(m))
                .collect(),
            subspace: self.active_subspace().map(|s| SubspacePrior {
                projector: Tensor::from_data(TensorData::new(s.projector.clone(), [s.d, s.d]), &self.runtime.device),
                weight: s.weight() as f32,
            }),
            rounds: on.rounds.iter().map(|(n, t, norm)| (n, t, *norm)).collect(),
            known: self.scenario.known.as_ref().map(|k| {
                let (rows, d) = (k.free.len() / self.dataset.d(), self.dataset.d());
                let upload =
                    |v: &[f32]| Tensor::<3>::from_data(TensorData::new(v.to_vec(), [1, rows, d]), &self.runtime.device);
                (upload(&k.free), upload(&k.fixed))
            }),
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
        let shared_rows = match self.simulation() {
            Simulation::LocalTraining { training, .. } => Simulation::LocalTraining { training, copies: 1 },
            s => s,
        };
        if self.engine() == StepEngine::Definition {
            let on = self.on_device();
            let mut problem = self.problem(&on, MemberRange { first: 0, count: 0 });
            problem.simulation = shared_rows;
            problem.subspace = None;
            return member_losses(&problem, projected, members, &self.runtime.device).await;
        }
        // A one-off of N losses: on the host, by the CPU kernel.
        let host = self.host_without_priors().with_simulation(shared_rows, Vec::new());
        Ok(cpu::member_losses(&host, &projected))
    }

    /// What runs the steps (`Runtime::engine_for`).
    pub fn engine(&self) -> StepEngine {
        self.runtime.engine_for(&Needs {
            local_training: matches!(self.config.protocol, Protocol::Fedavg(_)),
            known_cells: self.scenario.known.is_some(),
            rounds: 1 + self.scenario.later_rounds.len(),
        })
    }

    /// The problem as host arrays: what the accelerators (the fused CPU kernel, the GPU kernels)
    /// work from.
    fn host(&self) -> HostProblem {
        let host = self.host_without_priors().with_simulation(
            self.simulation(),
            (0..self.members).map(|m| self.config.prior_of(m)).collect(),
        );
        match self.active_subspace() {
            Some(s) => host.with_subspace(s.projector.clone(), s.weight()),
            None => host,
        }
    }

    fn host_without_priors(&self) -> HostProblem {
        HostProblem::new(
            &self.scenario.params,
            &self.scenario.observed,
            onehot(&self.scenario.labels, self.dataset.classes.len()),
            self.inverts.relaxed.then_some(&self.layout),
            self.inverts.objective,
        )
        .with_known(self.scenario.known.clone())
    }

    pub fn check_range(&self, range: MemberRange) -> Result<()> {
        ensemble::check_range(range, self.members)
    }

    /// What each member holds.
    pub fn shape(&self) -> Shape {
        Shape {
            members: self.members,
            rows: self.config.rows_per_member(),
            d: self.dataset.d(),
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
        self.check_range(range)?;
        let inv_config = InversionConfig {
            members: range.count,
            first_member: range.first,
            batch: config.rows_per_member(),
            d: self.dataset.d(),
            iterations: config.iterations,
            optimiser: config.optimiser(),
            seed: seed_for(config.seed, 6),
            report_every: config.report_every,
            early_stop: config.early_stop.then_some(EARLY_STOP),
        };
        let inversion = match self.engine() {
            StepEngine::CpuKernel => cpu::invert(&self.host(), &inv_config, cadence, progress).await?,
            #[cfg(any(feature = "wgpu", feature = "cuda"))]
            StepEngine::CubeKernels => {
                crate::attack::accel::cube::invert(self.runtime, &self.host(), &inv_config, cadence, progress).await?
            }
            #[cfg(not(any(feature = "wgpu", feature = "cuda")))]
            StepEngine::CubeKernels => return Err(crate::error::Error::Device("this build has no GPU kernels".into())),
            StepEngine::Definition => {
                let on = self.on_device();
                let problem = self.problem(&on, range);
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

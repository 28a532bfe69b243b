//! One attack end to end: draw a batch, simulate the client, invert its update, pool and score.
use burn::tensor::{Device, Tensor, TensorData};
use rand::{SeedableRng, rngs::StdRng, seq::index::sample};
use serde::{Deserialize, Serialize};

use crate::assess::epochs::average_epochs;
use crate::assess::scoring::{Accuracy, score_aligned};
use crate::assess::{matching::Rule, matching::match_rows, pooling::pool, scoring::score};
use crate::attack::accel::cpu::{self, HostProblem};
use crate::attack::activity::ActivitySolver;
use crate::attack::attribute::{self, AttributeReport, SoftmaxRegression};
use crate::attack::baselines::random_rows;
use crate::attack::cafe::{self, CafeReport};
use crate::attack::driver::{Cadence, EARLY_STOP, InversionConfig, Progress};
use crate::attack::inversion::{self, Problem, Simulation, SubspacePrior, member_losses};
use crate::attack::known::KnownCells;
use crate::attack::labels::{labels_from_counts, restore_counts};
use crate::attack::membership::{self, MembershipReport};
use crate::attack::objective::Objective;
use crate::attack::relax::{Layout, Relaxation};
use crate::attack::subspace::{DEFAULT_SUBSPACE_WEIGHT, Subspace, SubspaceSummary};
use crate::client::defence;
use crate::client::gradient::ParamGrads;
use crate::client::network::{Net, Params};
use crate::client::simulate::{Round, simulate_round};
use crate::client::training;
use crate::client::vertical;
use crate::config::{AttackConfig, AttackKind, LabelMode, MemberRange, Membership, Protocol};
use crate::error::{Error, Result};
use crate::received::ReceivedUpdate;
use crate::report::reconstruction::ReconstructionReport;
use crate::report::{PriorFit, Report, build_report};
use crate::runtime::{BackendInfo, MeasuredRate, Runtime, StepEngine};
use crate::table::{Dataset, FeatureKind, Value};
use pathfinding::{kuhn_munkres::kuhn_munkres_min, matrix::Matrix};

/// A row decoded in the span must lie in it to within this share of its squared norm...
const DECODE_TOLERANCE: f64 = 1e-4;
/// ...and its continuous values within their column's range, give or take this share of it.
const DECODE_SLACK: f64 = 0.05;

/// Independent streams derived from one seed, so that changing one part keeps the others.
fn seed_for(seed: u64, stream: u64) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(stream.wrapping_mul(0xBF58_476D_1CE4_E5B9))
}

/// The batch a client holds for a given seed: B distinct rows of the table.
pub fn draw_batch(dataset: &Dataset, batch_size: usize, seed: u64) -> Vec<usize> {
    let mut rng = StdRng::seed_from_u64(seed_for(seed, 1));
    let mut rows = sample(&mut rng, dataset.n(), batch_size).into_vec();
    rows.sort_unstable();
    rows
}

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

fn encode_rows(dataset: &Dataset, rows: &[Vec<Value>]) -> Vec<f32> {
    rows.iter().flat_map(|r| dataset.encode(r)).map(|v| v as f32).collect()
}

/// What the attack produced before scoring.
struct Reconstruction {
    rows: Vec<Vec<Value>>,
    entropy: Option<Vec<Vec<Option<f64>>>>,
    loss_curve: Vec<(usize, f64)>,
    epoch_prior: Option<f64>,
    epoch_prior_fits: Vec<PriorFit>,
    /// Members' rows whose continuous values were solved in the span, of all their rows.
    decoded: (usize, usize),
    /// Rows proved exactly from the ReLU pattern (`attack::activity`).
    proved: usize,
    steps: Vec<usize>,
}

/// The inverted members of one range: relaxed rows, softmax probabilities and the mean loss curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Members {
    pub range: MemberRange,
    pub x: Vec<f32>,
    pub probs: Vec<f32>,
    pub loss_curve: Vec<(usize, f64)>,
    /// Steps each member took before it stopped (`attack::driver::EarlyStop`).
    pub steps: Vec<usize>,
}

/// Everything the server has before it inverts: the simulated client's update, the labels it uses,
/// and the batch it is scored against. Deterministic in the seed, so every worker derives the same.
struct Setup<'a> {
    runtime: &'a Runtime,
    /// What the report says ran: the runtime's, plus how a caller split the work.
    backend: BackendInfo,
    dataset: &'a Dataset,
    config: &'a AttackConfig,
    /// The rows behind the update and how right the server's labels were; None for a received
    /// update.
    truth: Option<Truth>,
    params: Params,
    observed: Vec<Vec<f32>>,
    target_norm: f64,
    labels: Vec<usize>,
    layout: Layout,
    rules: Vec<Rule>,
    /// Ensemble size of this attack (1 for the single-run baselines, 0 for random).
    members: usize,
    relaxed: bool,
    objective: Objective,
    /// The trained network's accuracy on the table (None: attacked at initialisation).
    model_accuracy: Option<f64>,
    /// The first layer's span, where the attack uses it (`attack::subspace`).
    subspace: Option<Subspace>,
    /// The cells the server knows (the attribute attack, `attack::known`).
    known: Option<KnownCells>,
    /// The attribute attack: the table rows it attacks (the client's, or those the server took
    /// for the client's), sorted; and how well it told them apart.
    attack_rows: Vec<usize>,
    membership: Option<MembershipReport>,
    /// The attribute attack's rounds after the first: the model the server sent, and the update.
    later_rounds: Vec<(Params, Vec<Vec<f32>>)>,
}

struct Truth {
    rows: Vec<Vec<Value>>,
    /// The rows' indices in the table (sorted).
    indices: Vec<usize>,
    /// Share of the rows' labels the server had right (1 with known labels).
    label_accuracy: f64,
}

/// What the definition needs on the runtime's device.
struct OnDevice {
    net: Net,
    target: ParamGrads,
    relaxation: Relaxation,
    /// The attribute attack's further rounds: network, update and its norm.
    rounds: Vec<(Net, ParamGrads, f64)>,
}

impl<'a> Setup<'a> {
    /// A simulated round: the batch drawn from the table by the seed, the clients' updates.
    async fn new(runtime: &'a Runtime, dataset: &'a Dataset, config: &'a AttackConfig) -> Result<Setup<'a>> {
        config.validate(dataset)?;
        if config.attack == AttackKind::Cafe {
            return Err(Error::Config(
                "CAFE has no ensemble to invert in shares: run it whole (run_attack)".into(),
            ));
        }
        let (rows, classes) = (config.rows(), dataset.classes.len());
        let batch = draw_batch(dataset, rows, config.seed);
        let truth: Vec<Vec<Value>> = batch.iter().map(|&i| dataset.rows[i].clone()).collect();
        let true_labels: Vec<usize> = batch.iter().map(|&i| dataset.labels[i]).collect();

        // The client's network: untrained, or trained on the whole table first.
        let mut params = Params::init(&config.layer_sizes(dataset), seed_for(config.seed, 2));
        let mut model_accuracy = None;
        if config.training_epochs > 0 {
            let x_all = encode_rows(dataset, &dataset.rows);
            let (trained, accuracy) = training::train(
                &params,
                &x_all,
                &dataset.labels,
                config.training_epochs,
                seed_for(config.seed, 7),
            )
            .await?;
            params = trained;
            model_accuracy = Some(accuracy);
        }
        let round = Round {
            protocol: config.protocol,
            clients: config.clients,
            defence: config.defence,
            seed: seed_for(config.seed, 3),
        };
        let observed = simulate_round(&params, &encode_rows(dataset, &truth), &true_labels, classes, &round).await?;

        // The server's view of the labels: for a gradient their counts are all that matters; on
        // FedAvg the server is given them in the client's order (local batches are contiguous).
        // The attribute attack's rows: the client's, or with unknown membership those of the
        // candidates the server takes for the client's (`attack::membership`).
        let (attack_rows, membership) = match &config.attribute {
            Some(a) if config.attack == AttackKind::Attribute && a.membership == Membership::Unknown => {
                let (rows, report) =
                    membership::infer(dataset, &params, &observed, &batch, &a.column, seed_for(config.seed, 9));
                (rows, Some(report))
            }
            _ => (batch.clone(), None),
        };
        let labels = match config.labels {
            // The attribute attack knows each of its rows' labels, in their order.
            LabelMode::Known if config.attack == AttackKind::Attribute => {
                attack_rows.iter().map(|&i| dataset.labels[i]).collect()
            }
            LabelMode::Known if matches!(config.protocol, Protocol::Fedavg(_)) => true_labels.clone(),
            LabelMode::Known => {
                let mut l = true_labels.clone();
                l.sort_unstable();
                l
            }
            LabelMode::Restored => {
                let last = observed[params.layers() - 1].clone();
                labels_from_counts(&restore_counts(&params, &last, rows, seed_for(config.seed, 4)))
            }
        };
        let label_accuracy = {
            let count = |ls: &[usize], c: usize| ls.iter().filter(|&&l| l == c).count();
            (0..classes)
                .map(|c| count(&labels, c).min(count(&true_labels, c)))
                .sum::<usize>() as f64
                / rows as f64
        };
        let known = (config.attack == AttackKind::Attribute).then(|| {
            let unknown: Vec<(usize, usize)> = config
                .attribute
                .iter()
                .filter_map(|a| dataset.features.iter().find(|f| f.name == a.column))
                .map(|f| (f.offset, f.width()))
                .collect();
            let rows: Vec<Vec<Value>> = attack_rows.iter().map(|&i| dataset.rows[i].clone()).collect();
            KnownCells::all_but(&encode_rows(dataset, &rows), dataset.d(), &unknown)
        });
        let client_x = encode_rows(dataset, &truth);
        let truth = Truth {
            rows: truth,
            indices: batch,
            label_accuracy,
        };
        let mut setup = Setup::assemble(
            runtime,
            dataset,
            config,
            params,
            observed,
            labels,
            Some(truth),
            model_accuracy,
        )?;
        setup.known = known;
        // Further rounds: the client trains from the model its last update left (the server
        // applies it), and sends again.
        let rounds = config.attribute.as_ref().map_or(1, |a| a.rounds);
        let mut model = setup.params.clone();
        let mut update = setup.observed.clone();
        for r in 1..rounds {
            model = model.minus(&update);
            let round = Round {
                seed: seed_for(config.seed, 20 + r as u64),
                ..round
            };
            update = simulate_round(&model, &client_x, &true_labels, classes, &round).await?;
            setup.later_rounds.push((model.clone(), update.clone()));
        }
        setup.attack_rows = attack_rows;
        setup.membership = membership;
        setup.backend = setup.backend.clone().with_engine(setup.engine());
        Ok(setup)
    }

    /// A received update: no table, no truth; the labels as the update carries them, or
    /// restored from it (FedSGD).
    fn received(
        runtime: &'a Runtime,
        dataset: &'a Dataset,
        config: &'a AttackConfig,
        received: &ReceivedUpdate,
    ) -> Result<Setup<'a>> {
        config.validate_for_update(dataset)?;
        if config.attack == AttackKind::Attribute {
            return Err(Error::Config(
                "the attribute attack knows the client's rows but one column; a received update comes without them"
                    .into(),
            ));
        }
        let sizes = &received.params.sizes;
        if sizes[0] != dataset.d() || *sizes.last().unwrap() != dataset.classes.len() {
            return Err(Error::Config(format!(
                "the network takes {} inputs and gives {} outputs, but the encoding makes rows {} wide with {} \
                 classes ({}): is it the encoding the client used?",
                sizes[0],
                sizes.last().unwrap(),
                dataset.d(),
                dataset.classes.len(),
                dataset.classes.join(", ")
            )));
        }
        if config.layer_sizes(dataset) != *sizes {
            return Err(Error::Config(format!(
                "the received network's layers are {:?} but the attack's settings say hidden {:?}",
                sizes, config.hidden
            )));
        }
        if let Some(r) = received.rows
            && r != config.rows()
        {
            return Err(Error::Config(format!(
                "the update was computed on {r} rows but the attack is set for {}",
                config.rows()
            )));
        }
        if config.clients > 1 || config.training_epochs > 0 || config.defence.is_some() {
            return Err(Error::Config(
                "clients, training epochs and defences describe a simulated client; a received update is \
                 attacked as it came"
                    .into(),
            ));
        }
        let labels = match (&received.labels, config.labels) {
            (Some(names), LabelMode::Known) => {
                let mut labels = names
                    .iter()
                    .map(|n| {
                        dataset.classes.iter().position(|c| c == n).ok_or_else(|| {
                            Error::Config(format!(
                                "the update's label {n:?} is not a class of the encoding ({})",
                                dataset.classes.join(", ")
                            ))
                        })
                    })
                    .collect::<Result<Vec<usize>>>()?;
                if !matches!(config.protocol, Protocol::Fedavg(_)) {
                    labels.sort_unstable();
                }
                labels
            }
            (_, LabelMode::Restored) => {
                let last = received.update[received.params.layers() - 1].clone();
                labels_from_counts(&restore_counts(
                    &received.params,
                    &last,
                    config.rows(),
                    seed_for(config.seed, 4),
                ))
            }
            (None, LabelMode::Known) => {
                return Err(Error::Config(
                    "the update carries no labels: restore them from the update (FedSGD) or add the client's \
                     labels to the file"
                        .into(),
                ));
            }
        };
        Setup::assemble(
            runtime,
            dataset,
            config,
            received.params.clone(),
            received.update.clone(),
            labels,
            None,
            None,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        runtime: &'a Runtime,
        dataset: &'a Dataset,
        config: &'a AttackConfig,
        params: Params,
        observed: Vec<Vec<f32>>,
        labels: Vec<usize>,
        truth: Option<Truth>,
        model_accuracy: Option<f64>,
    ) -> Result<Setup<'a>> {
        let target_norm = defence::l2_norm(&observed);
        let (relaxed, objective) = match config.attack {
            AttackKind::Tableak => (true, Objective::Cosine),
            // CAFE runs on its own (`run_cafe`), never through a setup.
            AttackKind::Cosine | AttackKind::Random | AttackKind::Cafe => (false, Objective::Cosine),
            AttackKind::Dlg => (false, Objective::SquaredError),
            AttackKind::Attribute => match &config.attribute {
                Some(a) if a.l2 => (true, Objective::SquaredError),
                _ => (true, Objective::Cosine),
            },
        };
        let mut setup = Setup {
            runtime,
            backend: runtime.info.clone(),
            dataset,
            config,
            truth,
            target_norm,
            labels,
            rules: Rule::of(&dataset.features),
            layout: Layout::of(dataset),
            members: config.members(),
            relaxed,
            objective,
            model_accuracy,
            subspace: None,
            known: None,
            attack_rows: Vec::new(),
            membership: None,
            later_rounds: Vec::new(),
            params,
            observed,
        };
        // The span prior fits the cosine objective's scale; DLG and the random guess go without.
        let prior_applies = matches!(config.attack, AttackKind::Tableak | AttackKind::Cosine);
        if config.subspace && objective == Objective::Cosine && prior_applies {
            let sizes = &setup.params.sizes;
            setup.subspace = Some(Subspace::from_first_layer(
                &setup.observed[0],
                &setup.observed[sizes.len() - 1],
                sizes[0],
                sizes[1],
                Some(&setup.layout),
                config.rows(),
                DEFAULT_SUBSPACE_WEIGHT,
            ));
        }
        // The report names what really computes the steps.
        setup.backend = setup.backend.clone().with_engine(setup.engine());
        Ok(setup)
    }

    /// The problem's tensors on the runtime's device, for the definition.
    fn on_device(&self) -> OnDevice {
        let device = &self.runtime.device;
        OnDevice {
            net: Net::new(&self.params, device),
            target: upload_grads(&self.observed, &self.params.sizes, device),
            relaxation: Relaxation::new(&self.layout, device),
            rounds: self
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
            onehot: onehot(&self.labels, self.dataset.classes.len()),
            classes: self.dataset.classes.len(),
            relaxation: self.relaxed.then_some(&on.relaxation),
            objective: self.objective,
            simulation: self.simulation(),
            priors: (range.first..range.first + range.count)
                .map(|m| self.config.prior_of(m))
                .collect(),
            subspace: self.active_subspace().map(|s| SubspacePrior {
                projector: Tensor::from_data(TensorData::new(s.projector.clone(), [s.d, s.d]), &self.runtime.device),
                weight: s.weight() as f32,
            }),
            rounds: on.rounds.iter().map(|(n, t, norm)| (n, t, *norm)).collect(),
            known: self.known.as_ref().map(|k| {
                let (rows, d) = (k.free.len() / self.dataset.d(), self.dataset.d());
                let upload =
                    |v: &[f32]| Tensor::<3>::from_data(TensorData::new(v.to_vec(), [1, rows, d]), &self.runtime.device);
                (upload(&k.free), upload(&k.fixed))
            }),
        }
    }

    /// The subspace prior where it is on (a rank that says something).
    fn active_subspace(&self) -> Option<&Subspace> {
        self.subspace.as_ref().filter(|s| s.weight() > 0.0)
    }

    /// What the server simulates on a member's dummy rows (see `inversion::Simulation`).
    fn simulation(&self) -> Simulation {
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
    async fn projected_losses(&self, projected: Vec<f32>, members: usize) -> Result<Vec<f32>> {
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

    /// What runs the steps: the runtime's accelerator where it has one for this attack, the
    /// definition otherwise (the GPU kernels do FedSGD only).
    fn engine(&self) -> StepEngine {
        match (self.runtime.engine(), &self.config.protocol) {
            (StepEngine::CubeKernels, Protocol::Fedavg(_)) => StepEngine::Definition,
            // Known cells (the attribute attack) are pinned by the definition and the CPU kernel.
            (StepEngine::CubeKernels, _) if self.known.is_some() => StepEngine::Definition,
            // Several rounds: the definition sums them; the accelerators take one.
            _ if !self.later_rounds.is_empty() => StepEngine::Definition,
            (engine, _) => engine,
        }
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
            &self.params,
            &self.observed,
            onehot(&self.labels, self.dataset.classes.len()),
            self.relaxed.then_some(&self.layout),
            self.objective,
        )
        .with_known(self.known.clone())
    }

    fn check_range(&self, range: MemberRange) -> Result<()> {
        if range.count == 0 || range.first + range.count > self.members {
            return Err(Error::Config(format!(
                "members {}..{} are not within the {} of this attack",
                range.first,
                range.first + range.count,
                self.members
            )));
        }
        Ok(())
    }

    async fn invert(&self, range: MemberRange, progress: &mut dyn FnMut(&Progress) -> bool) -> Result<Members> {
        let cadence = self.runtime.cadence(self.config.report_every);
        self.invert_with(range, self.config, cadence, progress).await
    }

    async fn invert_with(
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
            StepEngine::CubeKernels => return Err(Error::Device("this build has no GPU kernels".into())),
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

    /// Join the inverted ranges into the whole ensemble, in member order. Shares from elsewhere (a
    /// page's workers) are checked whole: every member once, and rows of the right length.
    fn join(&self, mut parts: Vec<Members>) -> Result<Members> {
        parts.sort_by_key(|p| p.range.first);
        let len = self.config.rows_per_member() * self.dataset.d();
        let mut next = 0;
        for p in &parts {
            self.check_range(p.range)?;
            if p.range.first != next {
                return Err(Error::Config(format!(
                    "the inverted members do not cover the ensemble of {} once, in order",
                    self.members
                )));
            }
            let want = p.range.count * len;
            let want_probs = if self.relaxed { want } else { 0 };
            if p.steps.len() != p.range.count {
                return Err(Error::Config(format!(
                    "members {}..{} report the steps of {} members",
                    p.range.first,
                    p.range.first + p.range.count,
                    p.steps.len()
                )));
            }
            if p.x.len() != want || p.probs.len() != want_probs {
                return Err(Error::Config(format!(
                    "members {}..{} hold {} values and {} probabilities; {} rows of {} columns need {want} and {want_probs}",
                    p.range.first,
                    p.range.first + p.range.count,
                    p.x.len(),
                    p.probs.len(),
                    p.range.count * self.config.rows_per_member(),
                    self.dataset.d()
                )));
            }
            next += p.range.count;
        }
        if next != self.members {
            return Err(Error::Config(format!(
                "{next} of {} members were inverted",
                self.members
            )));
        }
        Ok(Members {
            range: MemberRange {
                first: 0,
                count: self.members,
            },
            x: parts.iter().flat_map(|p| p.x.iter().copied()).collect(),
            probs: parts.iter().flat_map(|p| p.probs.iter().copied()).collect(),
            loss_curve: join_loss_curves(&parts, self.members),
            steps: parts.iter().flat_map(|p| p.steps.iter().copied()).collect(),
        })
    }

    /// Match and pool the ensemble into one reconstruction (choosing the epoch prior's weight
    /// where several ran).
    async fn reconstruct(&self, inversion: Members) -> Result<Reconstruction> {
        let (dataset, config) = (self.dataset, self.config);
        let b = config.rows();
        // Each member's one reconstruction of the client's rows (FedAvg: its epochs averaged).
        let (mut x, mut probs) = self.member_rows(&inversion);
        let mut in_span = self.decode_in_span(&mut x, &mut probs);
        let proved = self.solve_by_activity(&mut x, &mut probs, &mut in_span);
        let decoded = (in_span.iter().filter(|&&c| c).count(), in_span.len());
        let candidates = config.prior_candidates();
        let ensemble = self.members / candidates.len();
        let mut fits = Vec::new();
        let mut best: Option<(f32, usize, Vec<Vec<Value>>, Option<Vec<Vec<Option<f64>>>>)> = None;
        for (k, _) in candidates.iter().enumerate() {
            let span = k * ensemble * b * dataset.d()..(k + 1) * ensemble * b * dataset.d();
            // The unrelaxed baselines have no probabilities.
            let member_probs = if probs.is_empty() {
                &probs[..]
            } else {
                &probs[span.clone()]
            };
            let rows_span = k * ensemble * b..(k + 1) * ensemble * b;
            let certified = if in_span.is_empty() {
                &in_span[..]
            } else {
                &in_span[rows_span]
            };
            let (rows, entropy) = self.pool(&x[span], member_probs, certified, ensemble).await?;
            // Several priors: keep the one whose pooled rows fit the update best.
            let fit = if candidates.len() > 1 {
                let fit = self.projected_losses(encode_rows(dataset, &rows), 1).await?[0];
                fits.push(PriorFit {
                    lambda: candidates[k],
                    fit: fit as f64,
                });
                fit
            } else {
                0.0
            };
            if best.as_ref().is_none_or(|(f, ..)| fit < *f) {
                best = Some((fit, k, rows, entropy));
            }
        }
        let (_, k, rows, entropy) = best.expect("at least one prior candidate");
        Ok(Reconstruction {
            rows,
            entropy,
            loss_curve: inversion.loss_curve,
            epoch_prior: (candidates.len() > 1 || candidates[0] > 0.0).then_some(candidates[k]),
            epoch_prior_fits: fits,
            decoded,
            proved,
            steps: inversion.steps,
        })
    }

    /// TabLeak with the subspace prior: each member row decoded exactly in the span (its categorical
    /// choices searched and its continuous values solved, `subspace::RowDecoder`), where that
    /// proves itself: the row then lies in the span, with values within their columns' ranges.
    /// A decoded row's probabilities become its one-hots. Returns, per member row, whether it was
    /// decoded (it then lies in the span: certified).
    fn decode_in_span(&self, x: &mut [f32], probs: &mut [f32]) -> Vec<bool> {
        let d = self.dataset.d();
        let Some(span) = self.active_subspace().filter(|_| self.relaxed) else {
            return vec![false; x.len() / d];
        };
        let decoder = span.row_decoder(&self.layout);
        let (lo, hi) = (&self.layout.lo, &self.layout.hi);
        let mut solved = Vec::with_capacity(x.len() / d);
        for (row, p) in x.chunks_exact_mut(d).zip(probs.chunks_exact_mut(d)) {
            let current: Vec<f64> = row.iter().map(|&v| v as f64).collect();
            let Some(decoded) = decoder.decode(&current, DECODE_TOLERANCE) else {
                solved.push(false);
                continue;
            };
            let within = self.layout.blocks.iter().filter(|b| !b.2).all(|&(j, ..)| {
                let slack = DECODE_SLACK * (hi[j] - lo[j]);
                decoded[j] >= lo[j] - slack && decoded[j] <= hi[j] + slack
            });
            if !within {
                solved.push(false);
                continue;
            }
            for &(o, w, categorical) in &self.layout.blocks {
                for j in o..o + w {
                    if categorical {
                        row[j] = decoded[j] as f32;
                        p[j] = (decoded[j] * self.layout.std[j] + self.layout.mean[j]).round() as f32;
                    } else {
                        row[j] = decoded[j].clamp(lo[j], hi[j]) as f32;
                    }
                }
            }
            solved.push(true);
        }
        solved
    }

    /// TabLeak with the subspace prior on FedSGD: the batch's rows proved exactly from the first
    /// layer's ReLU pattern (`attack::activity`), the members' rows as candidates. Every member's
    /// row nearest a proved row becomes it (and certified), so the pooled row is the proved one
    /// and the ensemble agrees on it. Returns how many rows were proved.
    fn solve_by_activity(&self, x: &mut [f32], probs: &mut [f32], in_span: &mut [bool]) -> usize {
        let (d, b) = (self.dataset.d(), self.config.rows());
        let Some(span) = self.active_subspace().filter(|_| self.relaxed) else {
            return 0;
        };
        let (Protocol::Fedsgd, Some(v)) = (self.config.protocol, span.hyperplane.as_ref()) else {
            return 0;
        };
        let sizes = &self.params.sizes;
        let mut step = vec![None; d];
        for f in &self.dataset.features {
            if let FeatureKind::Continuous { decimals, .. } = f.kind {
                step[f.offset] = Some(10f64.powi(-(decimals as i32)));
            }
        }
        let Some(solver) = ActivitySolver::new(
            &self.observed[0],
            &self.params.weights[0],
            &self.params.biases[0],
            v,
            (sizes[0], sizes[1], b),
            &self.layout,
            step,
        ) else {
            return 0;
        };
        let proved = solver.solve(x).rows;
        if proved.is_empty() {
            return 0;
        }
        let members = x.chunks_exact_mut(b * d).zip(probs.chunks_exact_mut(b * d));
        for (m, (mx, mp)) in members.enumerate() {
            // Each member keeps its own row order: each proved row takes the member's row nearest it.
            let costs = Matrix::from_fn(proved.len(), b, |(k, i)| {
                let row = &mx[i * d..(i + 1) * d];
                let sq: f64 = row.iter().zip(&proved[k]).map(|(&a, &c)| (a as f64 - c).powi(2)).sum();
                (sq.min(1e12) * 1e6) as i64
            });
            let assignment = kuhn_munkres_min(&costs).1;
            for (k, &i) in assignment.iter().enumerate() {
                let (row, p) = (&mut mx[i * d..(i + 1) * d], &mut mp[i * d..(i + 1) * d]);
                for &(o, w, categorical) in &self.layout.blocks {
                    for j in o..o + w {
                        row[j] = proved[k][j] as f32;
                        if categorical {
                            p[j] = (proved[k][j] * self.layout.std[j] + self.layout.mean[j]).round() as f32;
                        }
                    }
                }
                in_span[m * b + i] = true;
            }
        }
        proved.len()
    }

    /// The attribute attack's report: the sensitive column guessed per row from the members' mean
    /// probabilities, scored row by row (the rows are the client's own, not matched), against the
    /// baselines of an attacker without the update (`attack::attribute`). With unknown membership
    /// the attack ran on the rows the server took as the client's; a client row it missed gets the
    /// public classifier's guess.
    fn assess_attribute(&self, inverted: Members, seconds: f64) -> Result<Report> {
        let (dataset, config) = (self.dataset, self.config);
        let Some(truth) = &self.truth else {
            return Err(Error::Config("the attribute attack needs the client's rows".into()));
        };
        let column = &config.attribute.as_ref().expect("validated").column;
        let fi = dataset
            .features
            .iter()
            .position(|f| &f.name == column)
            .expect("validated");
        let feature = &dataset.features[fi];
        let (block, k) = ((feature.offset, feature.width()), feature.width());
        let (rows, d) = (config.rows(), dataset.d());
        let value = |v: Value| match v {
            Value::Cat(c) => c as usize,
            Value::Num(_) => unreachable!("the sensitive column is categorical"),
        };
        let truth_values: Vec<usize> = truth.rows.iter().map(|r| value(r[fi])).collect();

        // What the server has without the update: the public split's values, and a classifier
        // on it from the other columns and the label.
        let public = attribute::public_split(dataset.n(), &truth.indices, seed_for(config.seed, 8));
        let public_values: Vec<usize> = public.iter().map(|&i| value(dataset.rows[i][fi])).collect();
        let marginal = attribute::accuracy(&vec![attribute::most_frequent(&public_values, k); rows], &truth_values);
        let features_of = |i: usize| -> Vec<f64> {
            let mut x: Vec<f64> = dataset
                .encode(&dataset.rows[i])
                .into_iter()
                .enumerate()
                .filter(|(j, _)| !(block.0..block.0 + block.1).contains(j))
                .map(|(_, v)| v)
                .collect();
            x.extend((0..dataset.classes.len()).map(|c| (dataset.labels[i] == c) as u8 as f64));
            x
        };
        let classifier = SoftmaxRegression::train(
            &public.iter().map(|&i| features_of(i)).collect::<Vec<_>>(),
            &public_values,
            k,
        );
        let prior: Vec<Vec<f64>> = truth
            .indices
            .iter()
            .map(|&i| classifier.probs(&features_of(i)))
            .collect();
        let classified: Vec<usize> = prior.iter().map(|p| attribute::argmax(p)).collect();
        let public_classifier = attribute::accuracy(&classified, &truth_values);

        // The attack's mean probabilities per client row: from the attack row that is it, or
        // none (uniform) where the server did not take the row as the client's.
        let attacked = attribute::mean_probs(&inverted.probs, self.members, self.attack_rows.len(), d, block);
        let means: Vec<Option<&Vec<f64>>> = truth
            .indices
            .iter()
            .map(|t| self.attack_rows.binary_search(t).ok().map(|p| &attacked[p]))
            .collect();
        let guesses: Vec<usize> = means
            .iter()
            .zip(&classified)
            .map(|(m, &c)| m.map_or(c, |p| attribute::argmax(p)))
            .collect();
        let uniform_probs = vec![1.0 / k as f64; k];
        let combined_means: Vec<Vec<f64>> = means.iter().map(|m| m.unwrap_or(&uniform_probs).clone()).collect();
        let with_public_prior = attribute::accuracy(&attribute::combine(&combined_means, &prior), &truth_values);
        let reconstructed: Vec<Vec<Value>> = truth
            .rows
            .iter()
            .zip(&guesses)
            .map(|(r, &g)| {
                let mut r = r.clone();
                r[fi] = Value::Cat(g as u32);
                r
            })
            .collect();
        // Only the sensitive cells were reconstructed: only they carry an entropy (none where
        // the attack did not reach the row).
        let entropy: Vec<Vec<Option<f64>>> = means
            .iter()
            .map(|m| {
                (0..dataset.features.len())
                    .map(|j| {
                        m.filter(|_| j == fi)
                            .map(|p| crate::assess::entropy::categorical_soft(&[&p[..]]))
                    })
                    .collect()
            })
            .collect();
        let acc = attribute::accuracy(&guesses, &truth_values);

        let uniform = 1.0 / k as f64;
        let scored = score_aligned(&self.rules, &truth.rows, &reconstructed);
        let random = Accuracy {
            total: uniform,
            categorical: Some(uniform),
            continuous: None,
            per_feature: (0..dataset.features.len())
                .map(|j| if j == fi { uniform } else { 1.0 })
                .collect(),
            exact_rows: uniform,
        };
        let mut report = build_report(
            dataset,
            config,
            &self.backend,
            &truth.rows,
            &reconstructed,
            Some(&entropy),
            &scored,
            random,
            truth.label_accuracy,
            inverted.loss_curve,
            seconds,
        );
        // The attack's accuracy is the sensitive column's: every other cell was given.
        report.accuracy.total = acc;
        report.accuracy.categorical = Some(acc);
        report.accuracy.continuous = None;
        report.accuracy.exact_rows = acc;
        report.gain_over_random = acc - uniform;
        report.member_steps = inverted.steps;
        report.attribute = Some(AttributeReport {
            column: column.clone(),
            values: k,
            l2: self.objective == Objective::SquaredError,
            accuracy: acc,
            random: uniform,
            marginal,
            public_classifier,
            public_rows: public.len(),
            with_public_prior,
            membership: self.membership.clone(),
        });
        Ok(report)
    }

    /// Match, pool and score the ensemble (None: the random baseline) into the report.
    async fn assess(&self, inverted: Option<Members>, seconds: f64) -> Result<Report> {
        let (dataset, config) = (self.dataset, self.config);
        if config.attack == AttackKind::Attribute {
            let inverted = inverted.ok_or_else(|| Error::Config("the attribute attack inverts".into()))?;
            return self.assess_attribute(inverted, seconds);
        }
        let Some(truth) = &self.truth else {
            return Err(Error::Config("a received update has no truth to score against".into()));
        };
        // The random baseline: what an attacker knows without the update, scored on the same batch.
        let random_guess = random_rows(dataset, config.rows(), seed_for(config.seed, 5));
        let recon = match inverted {
            None => Reconstruction {
                rows: random_guess.clone(),
                entropy: None,
                loss_curve: Vec::new(),
                epoch_prior: None,
                epoch_prior_fits: Vec::new(),
                decoded: (0, 0),
                proved: 0,
                steps: Vec::new(),
            },
            Some(inversion) => self.reconstruct(inversion).await?,
        };
        let scored = score(&self.rules, &truth.rows, &recon.rows);
        let random = score(&self.rules, &truth.rows, &random_guess);
        let mut report = build_report(
            dataset,
            config,
            &self.backend,
            &truth.rows,
            &recon.rows,
            recon.entropy.as_deref(),
            &scored,
            random.accuracy,
            truth.label_accuracy,
            recon.loss_curve,
            seconds,
        );
        report.epoch_prior = recon.epoch_prior;
        report.epoch_prior_fits = recon.epoch_prior_fits;
        report.model_accuracy = self.model_accuracy;
        report.subspace = self.summary(recon.decoded, recon.proved);
        report.member_steps = recon.steps;
        Ok(report)
    }

    /// The subspace prior as the report states it, with the rows it solved.
    fn summary(&self, (decoded_rows, rows): (usize, usize), proved_rows: usize) -> Option<SubspaceSummary> {
        self.subspace.as_ref().map(|s| SubspaceSummary {
            decoded_rows,
            rows,
            proved_rows,
            ..s.summary.clone()
        })
    }

    /// Each member's rows of the client's batch, [N, n, d] (x and probabilities): as inverted, or
    /// for TabLeak on FedAvg its per-epoch copies matched to the first and averaged.
    fn member_rows(&self, inversion: &Members) -> (Vec<f32>, Vec<f32>) {
        let copies = self.config.rows_per_member() / self.config.rows();
        if copies == 1 {
            return (inversion.x.clone(), inversion.probs.clone());
        }
        let len = self.config.rows_per_member() * self.dataset.d();
        let (mut x, mut probs) = (Vec::new(), Vec::new());
        for m in 0..self.members {
            let span = m * len..(m + 1) * len;
            let (mx, mp) = average_epochs(
                &self.layout,
                &self.rules,
                &inversion.x[span.clone()],
                &inversion.probs[span],
                copies,
                |row| self.dataset.decode(row),
            );
            x.extend(mx);
            probs.extend(mp);
        }
        (x, probs)
    }

    /// Pool `members` members' rows ([members, n, d]) into one reconstruction: the anchor is the
    /// member whose projected rows fit the update best; every member is matched to it and the
    /// cells median-pooled, with an entropy per cell. One member is its own reconstruction.
    async fn pool(
        &self,
        x: &[f32],
        probs: &[f32],
        certified: &[bool],
        members: usize,
    ) -> Result<(Vec<Vec<Value>>, Option<Vec<Vec<Option<f64>>>>)> {
        let (dataset, b, d) = (self.dataset, self.config.rows(), self.dataset.d());
        let decoded: Vec<Vec<Vec<Value>>> = (0..members)
            .map(|m| {
                (0..b)
                    .map(|i| dataset.decode(&x[(m * b + i) * d..(m * b + i + 1) * d]))
                    .collect()
            })
            .collect();
        if members == 1 {
            return Ok((decoded.into_iter().next().unwrap(), None));
        }
        let projected: Vec<f32> = decoded.iter().flat_map(|rows| encode_rows(dataset, rows)).collect();
        let scores = self.projected_losses(projected, members).await?;
        let anchor = (0..members).min_by(|&a, &b| scores[a].total_cmp(&scores[b])).unwrap();
        let perm: Vec<Vec<usize>> = decoded
            .iter()
            .map(|rows| match_rows(&self.rules, &decoded[anchor], rows))
            .collect();
        let pooled = pool(&self.layout, x, probs, certified, members, b, &perm);
        Ok((
            pooled.rows.iter().map(|r| dataset.decode(r)).collect(),
            Some(pooled.entropy),
        ))
    }
}

/// The mean loss over the whole ensemble at the steps every share reported: each share's mean
/// weighted by its member count. A share whose members all stopped early counts at its last.
pub fn join_loss_curves(parts: &[Members], members: usize) -> Vec<(usize, f64)> {
    let Some(longest) = parts.iter().max_by_key(|p| p.loss_curve.last().map_or(0, |l| l.0)) else {
        return Vec::new();
    };
    longest
        .loss_curve
        .iter()
        .filter_map(|&(step, _)| {
            let mut total = 0.0;
            for p in parts {
                let &(last, last_loss) = p.loss_curve.last()?;
                let loss = if step > last {
                    last_loss
                } else {
                    p.loss_curve.iter().find(|&&(s, _)| s == step)?.1
                };
                total += loss * p.range.count as f64;
            }
            Some((step, total / members.max(1) as f64))
        })
        .collect()
}

/// Run one attack on one batch. `progress` is called now and then; returning false cancels.
pub async fn run_attack(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Report> {
    let start = web_time::Instant::now();
    if config.attack == AttackKind::Cafe {
        return run_cafe(runtime, dataset, config, progress, start);
    }
    let setup = Setup::new(runtime, dataset, config).await?;
    let inverted = match setup.members {
        0 => None,
        count => Some(setup.invert(MemberRange { first: 0, count }, progress).await?),
    };
    setup.assess(inverted, start.elapsed().as_secs_f64()).await
}

/// CAFE (`attack::cafe`): the vertical rounds simulated on `cafe.rows` rows drawn by the seed, the
/// rows recovered from them, scored row by row (the server knows each row's index).
fn run_cafe(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    progress: &mut dyn FnMut(&Progress) -> bool,
    start: web_time::Instant,
) -> Result<Report> {
    config.validate(dataset)?;
    let c = config.cafe.unwrap_or_default();
    let (n, k, d) = (c.rows, config.batch_size, dataset.d());
    let indices = draw_batch(dataset, n, config.seed);
    let truth: Vec<Vec<Value>> = indices.iter().map(|&i| dataset.rows[i].clone()).collect();
    let labels: Vec<usize> = indices.iter().map(|&i| dataset.labels[i]).collect();
    let params = Params::init(&config.layer_sizes(dataset), seed_for(config.seed, 2));
    let h = params.sizes[1];
    let x: Vec<f64> = truth.iter().flat_map(|r| dataset.encode(r)).collect();
    let deltas = vertical::first_layer_deltas(&params, &x, &labels);
    let mut rounds = vertical::simulate(&x, &deltas, n, d, h, k, c.rounds, seed_for(config.seed, 10));
    // Each party's encoded columns: its features' blocks, contiguous.
    let columns: Vec<(usize, usize)> = vertical::party_columns(dataset.features.len(), c.parties)
        .into_iter()
        .map(|(first, count)| {
            let fs = &dataset.features[first..first + count];
            (fs[0].offset, fs.iter().map(|f| f.width()).sum())
        })
        .collect();
    let mut training = (None, None);
    if let Some(draws) = c.fake_gradients {
        vertical::fake_rounds(&mut rounds, &columns, h, draws, seed_for(config.seed, 11));
        // What the countermeasure costs the model: the same training with true and fake gradients.
        let train = |fake| {
            vertical::train_rounds(
                &params,
                &x,
                &labels,
                k,
                c.rounds,
                cafe::TRAINING_LR,
                fake,
                seed_for(config.seed, 12),
            )
        };
        training = (Some(train(None)), Some(train(Some((&columns[..], draws)))));
    }
    let phase = |step: usize| Progress {
        phase: "cafe".into(),
        step,
        of: 3,
        loss: None,
        elapsed: start.elapsed().as_secs_f64(),
    };
    if !progress(&phase(1)) {
        return Err(Error::Cancelled);
    }
    let v = cafe::recover_deltas(&rounds, n, h);
    if !progress(&phase(2)) {
        return Err(Error::Cancelled);
    }
    let xs = cafe::recover_inputs(&rounds, &v, n, d, h);
    progress(&phase(3));
    let relative = |a: &[f64], b: &[f64]| {
        let num: f64 = a.iter().zip(b).map(|(p, q)| (p - q).powi(2)).sum();
        let den: f64 = b.iter().map(|q| q * q).sum();
        (num / den.max(1e-300)).sqrt()
    };
    // Step III: the relaxation's projection of each recovered row.
    let rows: Vec<Vec<Value>> = xs
        .chunks_exact(d)
        .map(|r| dataset.decode(&r.iter().map(|&v| v as f32).collect::<Vec<_>>()))
        .collect();
    let rules = Rule::of(&dataset.features);
    let scored = score_aligned(&rules, &truth, &rows);
    let random = score_aligned(&rules, &truth, &random_rows(dataset, n, seed_for(config.seed, 5)));
    let mut report = build_report(
        dataset,
        config,
        &runtime.info,
        &truth,
        &rows,
        None,
        &scored,
        random.accuracy,
        1.0,
        Vec::new(),
        start.elapsed().as_secs_f64(),
    );
    report.cafe = Some(CafeReport {
        parties: c.parties,
        rows: n,
        rounds: c.rounds,
        batch: k,
        covered: cafe::covered(&rounds, n).iter().filter(|&&s| s).count(),
        step1_error: relative(&v, &deltas),
        step2_error: relative(&xs, &x),
        fake_gradients: c.fake_gradients,
        training_loss: training.0,
        training_loss_fake: training.1,
    });
    Ok(report)
}

/// Attack an update received from elsewhere (see `received`) with the table's encoding as
/// `dataset` (no rows): the reconstruction and its confidence, without accuracy.
pub async fn attack_received(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    received: &ReceivedUpdate,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<ReconstructionReport> {
    let start = web_time::Instant::now();
    if config.attack == AttackKind::Random {
        return Err(Error::Config(
            "the random baseline draws from the table's rows, which a received update does not come with".into(),
        ));
    }
    let setup = Setup::received(runtime, dataset, config, received)?;
    let inverted = setup
        .invert(
            MemberRange {
                first: 0,
                count: setup.members,
            },
            progress,
        )
        .await?;
    let recon = setup.reconstruct(inverted).await?;
    let subspace = setup.summary(recon.decoded, recon.proved);
    let mut report = ReconstructionReport::build(
        dataset,
        config,
        &setup.backend,
        &recon.rows,
        recon.entropy.as_deref(),
        &setup.labels,
        recon.loss_curve,
        recon.epoch_prior,
        recon.epoch_prior_fits,
        start.elapsed().as_secs_f64(),
    );
    report.subspace = subspace;
    report.member_steps = recon.steps;
    Ok(report)
}

/// Invert a share of the ensemble only (see `MemberRange`); `assess_members` joins the shares.
pub async fn invert_members(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    range: MemberRange,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Members> {
    let setup = Setup::new(runtime, dataset, config).await?;
    setup.invert(range, progress).await
}

/// The report of an ensemble inverted in shares: the same as `run_attack` on one worker would give.
/// `seconds` is the wall time the caller measured across its workers.
pub async fn assess_members(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    parts: Vec<Members>,
    seconds: f64,
) -> Result<Report> {
    let mut setup = Setup::new(runtime, dataset, config).await?;
    setup.backend = setup.backend.clone().with_workers(parts.len());
    let joined = setup.join(parts)?;
    setup.assess(Some(joined), seconds).await
}

/// Time `warmup + steps` steps of members `range` of this attack on `runtime`: the rate of the
/// timed steps (the warm-up pays compilation and allocation), for `plan::decide`. A backend whose
/// first two timed steps show the rest would take more than `plan::PROBE_SECONDS` is cut short
/// there and rated on those two.
pub async fn time_steps(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    range: MemberRange,
    warmup: usize,
    steps: usize,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<MeasuredRate> {
    let setup = Setup::new(runtime, dataset, config).await?;
    setup.check_range(range)?;
    let warmup = warmup.max(1);
    let probe = AttackConfig {
        iterations: warmup + steps.max(2),
        early_stop: false,
        ..config.clone()
    };
    let mut marks: Vec<(usize, f64)> = Vec::new();
    let mut cut_short = false;
    let phase = format!("time {}", runtime.kind().name());
    let mut record = |p: &Progress| {
        marks.push((p.step, p.elapsed));
        if let [.., (s0, t0), (s1, t1)] = marks[..]
            && s0 == warmup
            && s1 < probe.iterations
        {
            let left = (probe.iterations - s1) as f64 * (t1 - t0) / (s1 - s0) as f64;
            if left > crate::plan::PROBE_SECONDS {
                cut_short = true;
                return false;
            }
        }
        progress(&Progress {
            phase: phase.clone(),
            ..p.clone()
        })
    };
    match setup
        .invert_with(range, &probe, Cadence::Probe(warmup), &mut record)
        .await
    {
        Ok(_) => {}
        Err(Error::Cancelled) if cut_short => {}
        Err(e) => return Err(e),
    }
    let (&(s0, t0), &(s1, t1)) = (marks.first().unwrap(), marks.last().unwrap());
    Ok(MeasuredRate {
        kind: runtime.kind(),
        adapter: runtime.info.adapter.clone(),
        steps_per_second: (s1 - s0) as f64 / (t1 - t0).max(1e-9),
        steps: s1 - s0,
        workers: 1,
        error: None,
    })
}

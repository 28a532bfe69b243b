//! One inversion problem, described once on the host: the network the server sent, the update it
//! received, the labels, how the client made the update (`Simulation`), the relaxation, the
//! objective and the priors, and any further rounds. The definition (`inversion::Problem`, on a
//! device) and the accelerators (`accel::cpu::HostProblem`, which `accel::cube` uploads) are both
//! built from it, so they cannot be handed different problems.
use burn::tensor::{Device, Tensor, TensorData};

use crate::attack::inversion::objective::Objective;
use crate::attack::inversion::relax::{Layout, Relaxation};
use crate::attack::inversion::{Problem, Simulation, SubspacePrior};
use crate::attack::priors::known::KnownCells;
use crate::client::gradient::ParamGrads;
use crate::client::head::Model;
use crate::client::network::{Net, Params};
use crate::client::update::Update;

/// What the server inverts.
#[derive(Debug, Clone)]
pub struct ProblemSpec {
    pub params: Params,
    pub target: Update,
    /// The client's labels in its order as the head's targets [n, outputs] (shared by every
    /// member; `Head::targets`).
    pub onehot: Vec<f32>,
    /// None: optimise the encoded rows directly (the Cosine and DLG baselines).
    pub layout: Option<Layout>,
    pub objective: Objective,
    pub simulation: Simulation,
    /// The epoch prior's weight per member of the whole ensemble (empty: none).
    pub priors: Vec<f64>,
    /// The first layer's span as a prior (`attack::priors::subspace`): its projector [d, d] and weight.
    pub subspace: Option<(Vec<f32>, f64)>,
    /// Cells the server knows (`attack::priors::known`).
    pub known: Option<KnownCells>,
    /// Rounds after the first the server observed of the same rows: the model it sent, the update.
    pub later_rounds: Vec<(Params, Update)>,
    /// Activation and head. The accelerators run ReLU only (`Needs::beyond_kernels`), the GPU
    /// kernels a softmax head only (`Needs::sigmoid_head`).
    pub model: Model,
}

/// The tensors the definition needs on a device.
pub struct OnDevice {
    net: Net,
    target: ParamGrads,
    relaxation: Option<Relaxation>,
    subspace: Option<SubspacePrior>,
    known: Option<(Tensor<3>, Tensor<3>)>,
    /// Further rounds: network, update and its norm.
    rounds: Vec<(Net, ParamGrads, f64)>,
}

/// An update as a one-member ParamGrads on a device: every layer's W as [1, in, out], every b as
/// [1, 1, out].
fn upload(update: &Update, sizes: &[usize], device: &Device) -> ParamGrads {
    let layers = sizes.len() - 1;
    let up = |v: &[f32], dims: [usize; 3]| Tensor::<3>::from_data(TensorData::new(v.to_vec(), dims), device);
    ParamGrads {
        weights: (0..layers)
            .map(|l| up(update.weight(l), [1, sizes[l], sizes[l + 1]]))
            .collect(),
        biases: (0..layers).map(|l| up(update.bias(l), [1, 1, sizes[l + 1]])).collect(),
    }
}

impl ProblemSpec {
    /// A FedSGD problem with no priors: the network, the update, the labels one-hot, the
    /// relaxation's layout (None: none) and the objective.
    pub fn new(
        params: &Params,
        target: &Update,
        onehot: Vec<f32>,
        layout: Option<&Layout>,
        objective: Objective,
    ) -> ProblemSpec {
        ProblemSpec {
            params: params.clone(),
            target: target.clone(),
            onehot,
            layout: layout.cloned(),
            objective,
            simulation: Simulation::Gradient,
            priors: Vec::new(),
            subspace: None,
            known: None,
            later_rounds: Vec::new(),
            model: Model::default(),
        }
    }

    pub fn with_model(mut self, model: Model) -> ProblemSpec {
        self.model = model;
        self
    }

    /// The same problem made by the client's local training (FedAvg), with the epoch prior's
    /// weight per member of the whole ensemble. Under SGD's weight decay `target` is the update's
    /// rows' part (`Scenario::rows_part`), as both engines take c·θ0 out of the simulated update.
    pub fn with_simulation(mut self, simulation: Simulation, priors: Vec<f64>) -> ProblemSpec {
        self.simulation = simulation;
        self.priors = priors;
        self
    }

    /// The same problem with the subspace prior: projector [d, d] and weight (0: off).
    pub fn with_subspace(mut self, projector: Vec<f32>, weight: f64) -> ProblemSpec {
        let d = self.d();
        assert_eq!(projector.len(), d * d, "a projector is [d, d]");
        self.subspace = (weight > 0.0).then_some((projector, weight));
        self
    }

    pub fn with_known(mut self, known: Option<KnownCells>) -> ProblemSpec {
        self.known = known;
        self
    }

    pub fn with_later_rounds(mut self, rounds: Vec<(Params, Update)>) -> ProblemSpec {
        self.later_rounds = rounds;
        self
    }

    /// Width of an encoded row.
    pub fn d(&self) -> usize {
        self.params.sizes[0]
    }

    pub fn classes(&self) -> usize {
        *self.params.sizes.last().expect("a network has layers")
    }

    /// The client's rows.
    pub fn rows(&self) -> usize {
        self.onehot.len() / self.classes()
    }

    /// The update's L2 norm (the cosine objective's scale).
    pub fn target_norm(&self) -> f64 {
        self.target.norm()
    }

    /// The problem's tensors on `device`, for the definition.
    pub fn on_device(&self, device: &Device) -> OnDevice {
        let (rows, d) = (self.rows(), self.d());
        let up3 = |v: &[f32]| Tensor::<3>::from_data(TensorData::new(v.to_vec(), [1, rows, d]), device);
        OnDevice {
            net: Net::new(&self.params, device).with_model(self.model),
            target: upload(&self.target, &self.params.sizes, device),
            relaxation: self.layout.as_ref().map(|l| Relaxation::new(l, device)),
            subspace: self.subspace.as_ref().map(|(projector, weight)| SubspacePrior {
                projector: Tensor::from_data(TensorData::new(projector.clone(), [d, d]), device),
                weight: *weight as f32,
            }),
            known: self.known.as_ref().map(|k| (up3(&k.free), up3(&k.fixed))),
            rounds: self
                .later_rounds
                .iter()
                .map(|(params, update)| {
                    (
                        Net::new(params, device).with_model(self.model),
                        upload(update, &params.sizes, device),
                        update.norm(),
                    )
                })
                .collect(),
        }
    }

    /// The definition's problem for members `first..first + count` of the ensemble.
    pub fn problem<'a>(&self, on: &'a OnDevice, first: usize, count: usize) -> Problem<'a> {
        Problem {
            net: &on.net,
            target: &on.target,
            target_norm: self.target_norm(),
            onehot: self.onehot.clone(),
            classes: self.classes(),
            relaxation: on.relaxation.as_ref(),
            objective: self.objective,
            simulation: self.simulation,
            priors: self
                .priors
                .get(first..first + count)
                .map(<[f64]>::to_vec)
                .unwrap_or_default(),
            subspace: on.subspace.clone(),
            known: on.known.clone(),
            rounds: on.rounds.iter().map(|(n, t, norm)| (n, t, *norm)).collect(),
        }
    }
}

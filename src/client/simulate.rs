//! One federated round as the server sees it: each client computes its update on its own rows
//! (a FedSGD gradient or FedAvg's θ0 − θE), applies its defence, and the server receives their
//! average (what secure aggregation reveals). Simulated on the CPU whatever runs the attack: a few
//! small gradients, for which a GPU would first compile kernels.
use burn::tensor::{Device, Tensor, TensorData};

use super::defence::{self, Defence};
use super::fedavg::{LocalOrder, local_training_in_order, shuffled_orders};
use super::gradient::{ParamGrads, param_grads};
use super::network::{Net, Params};
use super::update::Update;
use crate::config::Protocol;
use crate::error::{Error, Result};
use crate::runtime::read_f32;
use crate::seed::seed_for;

/// How the round runs.
#[derive(Debug, Clone, Copy)]
pub struct Round {
    pub protocol: Protocol,
    /// Clients averaged; the rows are split among them in order, equally.
    pub clients: usize,
    pub defence: Option<Defence>,
    /// The defences' randomness and a shuffling client's orders (client k draws from its own streams).
    pub seed: u64,
    /// The client's activation and head.
    pub model: crate::client::head::Model,
}

impl Round {
    /// One client's plain FedSGD gradient: no defence, nothing averaged.
    pub fn fedsgd(model: crate::client::head::Model) -> Round {
        Round {
            protocol: Protocol::Fedsgd,
            clients: 1,
            defence: None,
            seed: 0,
            model,
        }
    }
}

/// Host copy of a one-member update.
async fn to_host(g: &ParamGrads) -> Result<Update> {
    let (mut weights, mut biases) = (Vec::new(), Vec::new());
    for t in &g.weights {
        weights.push(read_f32(t.clone()).await?);
    }
    for t in &g.biases {
        biases.push(read_f32(t.clone()).await?);
    }
    Ok(Update::from_layers(weights, biases))
}

/// The update the server receives from `clients` clients holding `x` (encoded rows, [rows, d]
/// row-major) with the loss's targets `targets` ([rows, outputs]: `Dataset::targets`), split
/// equally in order.
pub async fn simulate_round(params: &Params, x: &[f32], targets: &[f32], round: &Round) -> Result<Update> {
    simulate_round_in_orders(params, x, targets, round, None).await
}

/// `simulate_round` for one client whose epochs visit its rows in `orders` where given (a
/// reshuffling client replayed in the orders an attack chose), not in those of `round.seed`.
pub async fn simulate_round_in_orders(
    params: &Params,
    x: &[f32],
    targets: &[f32],
    round: &Round,
    orders: Option<&[Vec<usize>]>,
) -> Result<Update> {
    let d = params.sizes[0];
    let outputs = *params.sizes.last().expect("a network has layers");
    let rows = targets.len() / outputs;
    let clients = round.clients.max(1);
    let b = rows / clients;
    let device = &Device::flex();
    let net = Net::new(params, device).with_model(round.model);
    let mut observed: Option<Update> = None;
    for k in 0..clients {
        let part = k * b..(k + 1) * b;
        let y = targets[part.start * outputs..part.end * outputs].to_vec();
        let xt = Tensor::<3>::from_data(
            TensorData::new(x[part.start * d..part.end * d].to_vec(), [1, b, d]),
            device,
        );
        let yt = Tensor::<3>::from_data(TensorData::new(y, [1, b, outputs]), device);
        let update = match &round.protocol {
            Protocol::Fedsgd => param_grads(&net, &xt, &yt).0,
            Protocol::Fedavg(training) => {
                let given = orders.filter(|_| clients == 1);
                let drawn = (training.order == LocalOrder::Shuffled && given.is_none())
                    .then(|| shuffled_orders(b, training.epochs, seed_for(round.seed, 16 + k as u64)));
                let orders = given.or(drawn.as_deref());
                local_training_in_order(&net, &[xt], Some(&yt), training, orders, false).0
            }
        };
        let mut own = to_host(&update).await?;
        if let Some(defence) = &round.defence {
            // Client 0 keeps the stream a single client has always used.
            defence::apply(
                &mut own,
                defence,
                round.seed ^ (k as u64).wrapping_mul(0xD1B5_4A32_D192_ED03),
            );
        }
        match observed.as_mut() {
            None => observed = Some(own),
            Some(sum) => sum.add(&own),
        }
    }
    let mut observed = observed.expect("at least one client");
    if clients > 1 {
        observed.scale(1.0 / clients as f32);
    }
    if !observed.is_finite() {
        return Err(Error::NonFinite("the client's update holds NaN or infinity".into()));
    }
    Ok(observed)
}

//! What the server has before it attacks, and what the attack is scored against: the batch drawn
//! from the table by the seed, the simulated client's update (after training, defences and
//! averaging), the labels as the server sees them, and the truth. Deterministic in the seed, so
//! every worker of a split run derives the same.
use crate::attack::attribute::membership::MembershipReport;
use crate::attack::baselines::random_values;
use crate::attack::priors::known::KnownCells;
use crate::attack::priors::labels::{labels_from_counts, restore_counts};
use crate::client::network::Params;
use crate::client::simulate::{Round, simulate_round};
use crate::client::training;
use crate::client::update::Update;
use crate::config::{AttackConfig, LabelMode, Protocol};
use crate::error::{Error, Result};
use crate::received::ReceivedUpdate;
use crate::seed::seed_for;
use crate::table::{Dataset, Value, draw_batch, encode_rows};

/// The rows behind the update, which the server never sees.
pub struct Truth {
    pub rows: Vec<Vec<Value>>,
    /// The rows' indices in the table (sorted).
    pub indices: Vec<usize>,
    /// Share of the rows' labels the server had right (1 with known labels).
    pub label_accuracy: f64,
    /// A shadow client's regression labels, drawn from the table's (it has no indices).
    pub drawn_values: Option<Vec<f64>>,
}

impl Truth {
    /// A regression's labels of the rows, in the label's units (`Dataset::values`).
    pub fn values(&self, dataset: &Dataset) -> Vec<f64> {
        match &self.drawn_values {
            Some(values) => values.clone(),
            None => self.indices.iter().map(|&i| dataset.values[i]).collect(),
        }
    }
}

/// The simulated client's round seed: its defence's randomness and its reshuffled orders.
pub fn client_round_seed(config: &AttackConfig) -> u64 {
    seed_for(config.seed, 3)
}

/// The simulated client: its network, the update it sent, the rows it trained on.
pub struct Client {
    pub params: Params,
    pub observed: Update,
    /// The batch's indices in the table (sorted), its rows and their labels.
    pub batch: Vec<usize>,
    pub rows: Vec<Vec<Value>>,
    pub labels: Vec<usize>,
    /// The trained network's accuracy on the table (None: attacked at initialisation).
    pub model_accuracy: Option<f64>,
    /// How it made its update (for further rounds).
    pub round: Round,
}

impl Client {
    /// The client the seed draws: its batch, its network (trained on the whole table first where
    /// asked), and the update the server receives.
    pub async fn simulate(dataset: &Dataset, config: &AttackConfig) -> Result<Client> {
        let head = config.model().head;
        let batch = draw_batch(dataset, config.rows(), config.seed);
        let rows: Vec<Vec<Value>> = batch.iter().map(|&i| dataset.rows[i].clone()).collect();
        let labels: Vec<usize> = batch.iter().map(|&i| dataset.labels[i]).collect();
        let mut params = Params::init(&config.layer_sizes(dataset), seed_for(config.seed, 2));
        let mut model_accuracy = None;
        if config.training_epochs > 0 {
            let x_all = encode_rows(dataset, &dataset.rows);
            let all: Vec<usize> = (0..dataset.n()).collect();
            let (trained, accuracy) = training::train(
                &params,
                &x_all,
                &dataset.targets(&all, head),
                config.training_epochs,
                seed_for(config.seed, 7),
                config.model(),
            )
            .await?;
            params = trained;
            model_accuracy = Some(accuracy);
        }
        let round = Round {
            protocol: config.protocol,
            clients: config.clients,
            defence: config.defence,
            seed: client_round_seed(config),
            model: config.model(),
        };
        let targets = dataset.targets(&batch, head);
        let observed = simulate_round(&params, &encode_rows(dataset, &rows), &targets, &round).await?;
        Ok(Client {
            params,
            observed,
            batch,
            rows,
            labels,
            model_accuracy,
            round,
        })
    }

    /// The truth the attack is scored against, given the labels the server used (a regression's
    /// it reconstructs: `Truth::values`).
    pub fn truth(&self, server_labels: &[usize], classes: usize) -> Truth {
        let count = |ls: &[usize], c: usize| ls.iter().filter(|&&l| l == c).count();
        let right: usize = (0..classes)
            .map(|c| count(server_labels, c).min(count(&self.labels, c)))
            .sum();
        Truth {
            rows: self.rows.clone(),
            indices: self.batch.clone(),
            label_accuracy: right as f64 / self.labels.len().max(1) as f64,
            drawn_values: None,
        }
    }
}

/// Everything the server has before it inverts, and the truth where the client was simulated.
pub struct Scenario {
    pub params: Params,
    /// The update the server received.
    pub observed: Update,
    /// The labels the server uses, in the order its dummy rows take them.
    pub labels: Vec<usize>,
    /// None for a received update.
    pub truth: Option<Truth>,
    pub model_accuracy: Option<f64>,
    /// The table rows the attack inverts, sorted: the client's, or those the server took for
    /// the client's (`attack::attribute::membership`).
    pub attack_rows: Vec<usize>,
    /// How the server told the client's rows apart, where it had to.
    pub membership: Option<MembershipReport>,
    /// Cells the server knows (`attack::priors::known`).
    pub known: Option<KnownCells>,
    /// Rounds after the first it observed: the model it sent, and the update.
    pub later_rounds: Vec<(Params, Update)>,
}

/// The labels of the rows behind an update as the server uses them: for a gradient only their
/// counts matter (sorted); on FedAvg it is given them in the client's order (local batches are
/// contiguous); restored from the last layer's gradient where asked.
pub fn server_labels(params: &Params, observed: &Update, labels: &[usize], config: &AttackConfig) -> Vec<usize> {
    match config.labels {
        LabelMode::Known if matches!(config.protocol, Protocol::Fedavg(_)) => labels.to_vec(),
        LabelMode::Known => {
            let mut l = labels.to_vec();
            l.sort_unstable();
            l
        }
        LabelMode::Restored => {
            let last = observed.weight(params.layers() - 1);
            labels_from_counts(&restore_counts(
                params,
                last,
                observed.bias(params.layers() - 1),
                config.rows(),
                seed_for(config.seed, 4),
                config.model(),
            ))
        }
    }
}

impl Scenario {
    /// The scenario with the update the attack reads: under a FedAvg client's SGD weight decay,
    /// θ0 − θE less c·θ0, the share of the weights the decay leaves in it
    /// (`ClientOptimizer::decay_share`); what is left is a combination of the rows' terms, as
    /// without a decay, which the span, the proofs and the objective read
    /// (`inversion::Simulation::decay_share` takes the same share out of the simulated update).
    pub fn rows_part(mut self, config: &AttackConfig) -> Scenario {
        let share = match &config.protocol {
            Protocol::Fedavg(t) => t.optimizer.decay_share(t.lr, config.local_steps()),
            Protocol::Fedsgd => 0.0,
        };
        if share != 0.0 {
            let mut theta0 = Update::from_layers(self.params.weights.clone(), self.params.biases.clone());
            theta0.scale(-share as f32);
            self.observed.add(&theta0);
        }
        self
    }

    /// A simulated client attacked for its rows (TabLeak, the baselines).
    pub async fn of_rows(dataset: &Dataset, config: &AttackConfig) -> Result<Scenario> {
        let client = Client::simulate(dataset, config).await?;
        let labels = server_labels(&client.params, &client.observed, &client.labels, config);
        Ok(Scenario {
            truth: Some(client.truth(&labels, dataset.classes.len())),
            attack_rows: client.batch.clone(),
            labels,
            model_accuracy: client.model_accuracy,
            params: client.params,
            observed: client.observed,
            membership: None,
            known: None,
            later_rounds: Vec::new(),
        })
    }

    /// A shadow client the server simulates itself (`assess::fallback`): `rows` it drew from the
    /// table's marginals, the labels it uses and the network it sent, updated as the attacked
    /// client declares it trains and defends, with randomness of its own.
    pub async fn shadow(&self, dataset: &Dataset, config: &AttackConfig, rows: Vec<Vec<Value>>) -> Result<Scenario> {
        self.shadow_drawn(dataset, config, rows, seed_for(config.seed, 13))
            .await
    }

    /// `shadow`, its round's randomness (a defence's, reshuffled orders) drawn by `seed`.
    pub async fn shadow_drawn(
        &self,
        dataset: &Dataset,
        config: &AttackConfig,
        rows: Vec<Vec<Value>>,
        seed: u64,
    ) -> Result<Scenario> {
        let round = Round {
            protocol: config.protocol,
            clients: config.clients,
            defence: config.defence,
            seed,
            model: config.model(),
        };
        let x = encode_rows(dataset, &rows);
        // A regression's labels are unknown to the server: the shadow client's are drawn from
        // the table's, as its rows are from the marginals.
        let drawn_values = dataset
            .target
            .as_ref()
            .map(|_| random_values(dataset, rows.len(), seed_for(config.seed, 14)));
        let targets = match (&dataset.target, &drawn_values) {
            (Some(t), Some(values)) => values.iter().map(|&v| t.standardise(v)).collect(),
            _ => config.model().head.targets(&self.labels, dataset.classes.len()),
        };
        let observed = simulate_round(&self.params, &x, &targets, &round).await?;
        Ok(Scenario {
            params: self.params.clone(),
            observed,
            labels: self.labels.clone(),
            truth: Some(Truth {
                rows,
                indices: Vec::new(),
                label_accuracy: 1.0,
                drawn_values,
            }),
            model_accuracy: None,
            attack_rows: Vec::new(),
            membership: None,
            known: None,
            later_rounds: Vec::new(),
        })
    }

    /// A received update: no table, no truth; the labels as the update carries them, or
    /// restored from it (FedSGD).
    pub fn received(dataset: &Dataset, config: &AttackConfig, received: &ReceivedUpdate) -> Result<Scenario> {
        received.check_against(dataset, config)?;
        let labels = match (&received.labels, config.labels) {
            // A regression's labels are the server's unknowns, reconstructed with the rows: any
            // the file carries are not used.
            _ if dataset.target.is_some() => vec![0; config.rows()],
            (Some(names), LabelMode::Known) => {
                let labels = names
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
                server_labels(&received.params, &received.update, &labels, config)
            }
            (_, LabelMode::Restored) => server_labels(&received.params, &received.update, &[], config),
            (None, LabelMode::Known) => {
                return Err(Error::Config(
                    "the update carries no labels: restore them from the update (FedSGD) or add the client's \
                     labels to the file"
                        .into(),
                ));
            }
        };
        Ok(Scenario::of_update(
            received.params.clone(),
            received.update.clone(),
            labels,
        ))
    }

    /// An update and the labels the server uses, and nothing else: no truth, no cells known, one
    /// round.
    pub fn of_update(params: Params, observed: Update, labels: Vec<usize>) -> Scenario {
        Scenario {
            params,
            observed,
            labels,
            truth: None,
            model_accuracy: None,
            attack_rows: Vec::new(),
            membership: None,
            known: None,
            later_rounds: Vec::new(),
        }
    }
}

//! TabLeak's own settings (`AttackSpec::Tableak`): plain data, read by the configuration and the
//! CLI and written by the options; what they do is `attack::tableak`'s.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// The epoch prior's weight unless a caller asks otherwise. The reference picks λ per setting by
/// the error against the ground truth (an oracle); leakscope fixes it without the truth: on Adult at
/// 5 local epochs of batches of 8, λ = 0.1 was the best of the reference's grid on one batch and
/// within 0.2 points of the best on the other, and `EpochPrior::Auto` (λ chosen by fit to the
/// update) averaged 78.7 % against λ = 0.1's 79.3 % over the two at 7× the work (docs/fidelity.md).
pub const DEFAULT_EPOCH_PRIOR: f64 = 0.1;

/// The weights λ `EpochPrior::Auto` tries: the reference's grid (SPEC §7).
pub const PRIOR_CANDIDATES: [f64; 7] = [0.0, 0.5, 0.1, 0.05, 0.01, 0.005, 0.001];

/// The reference's ensemble: 30 members for FedSGD, 15 for FedAvg (a member costs a whole local
/// training per step there).
pub const ENSEMBLE_FEDSGD: usize = 30;
pub const ENSEMBLE_FEDAVG: usize = 15;

/// The weight λ of TabLeak-FedAvg's epoch-matching prior (SPEC §7).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum EpochPrior {
    /// Run each of `PRIOR_CANDIDATES` and keep the one whose reconstruction matches the observed
    /// update best (no ground truth involved).
    Auto,
    Fixed(f64),
}

/// TabLeak (Vero et al.): a softmax-relaxed ensemble, matched and median-pooled, with entropies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct TableakSettings {
    /// Members of the ensemble (per epoch-prior candidate).
    pub ensemble: usize,
    /// On FedAvg over reshuffled rows: the epoch prior's weight.
    pub epoch_prior: EpochPrior,
    /// Keep the dummy rows in the span of the first layer's gradient and prove rows from its ReLU
    /// pattern (`attack::priors::subspace`, `attack::priors::activity`); both switch themselves off where the
    /// span says nothing.
    pub subspace: bool,
    /// Certify rows by the second layer's span of activations (`attack::priors::activation_span`), on
    /// FedSGD where the span leaves checks; it switches itself off elsewhere.
    pub second_layer: bool,
    /// Under a defence that perturbs the update (noise, fake gradients), fall back cell by cell to
    /// the table's marginals where a shadow client the server simulates shows the ensemble's cells
    /// score below them (`assess::fallback`).
    pub prior_fallback: bool,
    /// On FedAvg in a known order, change pooled rows to their members' rows, their members'
    /// cells or the first layer's span's rows where the client's simulated update fits the
    /// observed one better (`assess::update_choice`), then run the ensemble again from the rows
    /// chosen and keep its rows where they fit better still (`assess::refine`). On FedSGD the
    /// same where the pooled rows, or the rows the update's sum picks among a crowded span's
    /// (`assess::span_pursuit`), fit the update (1 − cos ≤ 0.05), the span's rows tried first;
    /// and run it again on what the rows the update holds leave of it, for the rows left
    /// (`assess::inverted_left`).
    pub update_choice: bool,
    /// Run the ensemble by the stopping rule where no proof can reach the batch
    /// (`assess::stopping`): up to `ensemble` members, stopping once a round leaves the cells it
    /// is sure of as they were. False where the caller fixed the ensemble.
    pub stop_members: bool,
}

impl Default for TableakSettings {
    fn default() -> Self {
        TableakSettings {
            ensemble: ENSEMBLE_FEDSGD,
            epoch_prior: EpochPrior::Fixed(DEFAULT_EPOCH_PRIOR),
            subspace: true,
            second_layer: true,
            prior_fallback: true,
            update_choice: true,
            stop_members: true,
        }
    }
}

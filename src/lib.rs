//! leakscope: how much of a table a federated-learning server can reconstruct from one client's
//! update. The data flow is the module order: table → client (the simulated client) → scenario
//! (what the server has) → attack (each attack behind `attack::registry`) → assess → report;
//! `config` and `options` hold what a caller asks for, `run` runs one attack end to end, `runtime`
//! says where, `plan` how, and `audit` runs a grid of them and says what it found.
pub mod assess;
pub mod attack;
pub mod audit;
pub mod client;
pub mod config;
pub mod error;
pub mod options;
pub mod parallel;
pub mod plan;
pub mod received;
pub mod report;
pub mod run;
pub mod runtime;
pub mod scenario;
pub mod seed;
pub mod table;
pub mod warm_up;
#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use attack::inversion::ensemble::Members;
pub use config::{AttackConfig, AttackKind, AttackSpec, LabelMode, MemberRange, Optimiser};
pub use error::{Error, Result};
pub use options::RunOptions;
pub use report::Report;
pub use run::{
    assess_early, assess_members, assess_round, attack_received, early_answer, ensemble_rounds, invert_members,
    invert_shadow, prove_candidates, run_attack, settled_members, shadow_shares,
};
pub use runtime::{BackendInfo, BackendKind, Runtime, StepEngine};

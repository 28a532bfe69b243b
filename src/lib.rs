//! leakscope: how much of a table a federated-learning server can reconstruct from one client's
//! update. The data flow is the module order: table → client → attack → assess → report; `config`
//! holds what a caller asks for, `experiment` runs one attack end to end, `runtime` says where,
//! `audit` runs a grid of them and says what it found.
pub mod assess;
pub mod attack;
pub mod audit;
pub mod client;
pub mod config;
pub mod error;
pub mod experiment;
pub mod plan;
pub mod received;
pub mod report;
pub mod runtime;
pub mod table;
#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use config::{AttackConfig, AttackKind, LabelMode, MemberRange, Optimiser, RunOptions};
pub use error::{Error, Result};
pub use experiment::{Members, assess_members, attack_received, invert_members, run_attack};
pub use report::Report;
pub use runtime::{BackendInfo, BackendKind, Runtime, StepEngine};

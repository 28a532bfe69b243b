//! leakscope: how much of a table a federated-learning server can reconstruct from one client's
//! update. The data flow is the module order: table → client → attack → assess → report.
pub mod assess;
pub mod attack;
pub mod client;
pub mod error;
pub mod experiment;
pub mod report;
pub mod runtime;
pub mod table;
#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use error::{Error, Result};
pub use experiment::{
    AttackConfig, AttackKind, LabelMode, MemberRange, Members, assess_members, invert_members, run_attack,
};
pub use report::Report;
pub use runtime::{BackendChoice, Runtime};

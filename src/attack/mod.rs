//! Attack: every attack behind one registry (`spec` what a caller asks for, `registry` what an
//! attack is, a module per attack: `tableak`, `baselines`, `attribute`, `cafe`), the priors they
//! compose (`subspace`, `activity`), and the inversion they share: the relaxation, the objective,
//! the attacker's second derivative, defined once on tensors (`inversion`), set up from a scenario
//! (`setup`), driven by one loop (`driver`) and accelerated per device (`accel`).
pub mod accel;
pub mod activation_span;
pub mod activity;
pub mod attribute;
pub mod baselines;
pub mod cafe;
pub mod describe;
pub mod driver;
pub mod ensemble;
pub mod inversion;
pub mod known;
pub mod labels;
pub mod membership;
pub mod objective;
pub mod peel;
pub mod pointwise;
pub mod problem;
pub mod registry;
pub mod relax;
pub mod row_labels;
pub mod second_order;
pub mod setup;
pub mod spec;
pub mod subspace;
pub mod tableak;

pub use driver::Progress;
pub use objective::Objective;
pub use registry::{Attack, attack_of, describe_attacks};

//! Attack: the relaxation, the objective, the attacker's second derivative, the inversion (defined
//! once on tensors, driven by one loop, accelerated per device), label restoration and baselines.
pub mod accel;
pub mod activity;
pub mod attribute;
pub mod baselines;
pub mod cafe;
pub mod driver;
pub mod inversion;
pub mod known;
pub mod labels;
pub mod membership;
pub mod objective;
pub mod pointwise;
pub mod relax;
pub mod second_order;
pub mod subspace;

pub use driver::Progress;
pub use objective::Objective;

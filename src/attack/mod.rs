//! Attack: every attack behind one registry. The folders follow the roles:
//! - the front door: `spec` (what a caller asks for), `registry` (what an attack is) and
//!   `describe` (the attacks as the engine offers them);
//! - the attacks, a module each: `tableak`, `baselines`, `attribute`, `cafe`;
//! - `priors`: the priors and proofs an attack composes (the first layer's span, the ReLU-pattern
//!   proof, the second layer's certificate, peeling, label restoration, known cells);
//! - `inversion`: the gradient inversion they share, defined once on tensors (relaxation,
//!   objective, the attacker's second derivative), set up from a scenario and driven by one loop;
//! - `accel`: the accelerators of that definition (the fused CPU kernel, the CubeCL kernels).
pub mod accel;
pub mod attribute;
pub mod baselines;
pub mod cafe;
pub mod describe;
pub mod inversion;
pub mod priors;
pub mod registry;
pub mod spec;
pub mod tableak;

pub use inversion::driver::{Progress, StepTiming};
pub use inversion::objective::Objective;
pub use registry::{Attack, attack_of, describe_attacks};

//! Attack: relaxation, gradient inversion, label restoration and the baselines.
pub mod baselines;
pub mod cpu_kernel;
pub mod inversion;
pub mod labels;
pub mod relax;

pub use inversion::{Objective, Optimiser, Progress};

//! Accelerators of the inversion's definition (`attack::inversion`): the same step computed in
//! their own loops or kernels, each held to the definition step by step (tests/step_equality.rs).
pub mod cpu;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
pub mod cube;

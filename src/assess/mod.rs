//! Assessment: match ensemble members, pool them, measure confidence, score against the truth.
pub mod entropy;
mod enumerated;
pub mod epoch_orders;
pub mod epochs;
pub mod fallback;
mod inverted_left;
pub mod matching;
mod misfits;
mod paired_labels;
mod peeled;
pub mod pooling;
pub mod reconstruct;
mod refine;
mod row_test;
pub mod rows;
pub mod scoring;
pub mod search_bounds;
mod second_layer;
mod seen_rows;
mod shadow_rows;
mod span_fit;
mod span_left;
mod span_pursuit;
pub mod stopping;
pub mod table_prior;
pub mod update_choice;

/// `f` on a setup of the Adult sample's batch that `config` draws (the tests' common start).
#[cfg(test)]
pub(crate) fn with_sample_setup<T>(
    config: crate::config::AttackConfig,
    f: impl FnOnce(&crate::attack::inversion::setup::Setup) -> T,
) -> T {
    let data = crate::table::adult_sample();
    let scenario = pollster::block_on(crate::scenario::Scenario::of_rows(&data, &config)).unwrap();
    let runtime = crate::runtime::Runtime::cpu();
    f(&crate::attack::inversion::setup::Setup::new(
        &runtime, &data, &config, scenario,
    ))
}

//! Assessment: match ensemble members, pool them, measure confidence, score against the truth.
pub mod entropy;
mod enumerated;
pub mod epoch_orders;
pub mod epochs;
pub mod fallback;
pub mod matching;
mod peeled;
pub mod pooling;
pub mod reconstruct;
mod refine;
pub mod rows;
pub mod scoring;
pub mod search_bounds;
mod second_layer;
mod span_fit;
mod span_left;
pub mod stopping;
pub mod update_choice;

//! The priors and proofs an attack composes: what the server knows besides the update's value.
//! - `categories_held`: which categories an Adam client's rows hold, read off its update;
//! - `labels`: the batch's labels counted from the last layer's gradient (Geng et al.);
//! - `known`: cells the server already holds (the attribute attack's other columns);
//! - `subspace`: the first layer's gradient as a prior on the rows (their span);
//! - `activity`: the whole batch, exactly, from the first layer's ReLU pattern;
//! - `enumerate`: every row the encoding can hold in a span (the first layer's), exactly;
//! - `activation_span`: the second layer's certificate, a row proved from G₂'s column space;
//! - `peel`: proved rows taken off the update, and the rest attacked again;
//! - `rows_by_category`: an Adam client's rows read by the units their categories reach;
//! - `row_labels`: each proved row's label, from the last layer's gradient;
//! - `spectrum`: the one numerical basis their ranks and spans are read on (the update's precision).
pub mod activation_span;
pub mod activity;
pub mod categories_held;
pub mod enumerate;
pub mod known;
pub mod labels;
pub mod peel;
pub mod row_labels;
pub mod rows_by_category;
pub mod spectrum;
pub mod subspace;

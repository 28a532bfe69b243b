//! The rows of the first layer's span found for an attack's batch (`Setup::enumerate_span`), held
//! apart from the search so that a setup can keep them (`Setup::span_rows`) without the search's
//! module depending on the setup's and back.
use crate::attack::priors::activation_span::Unproved;
use crate::table::Value;

/// The first layer's span enumerated for this attack's batch.
pub struct SpanRows {
    /// The rows found, decoded, and as the client's encoding holds them. Where the span leaves
    /// continuous values free (`free`), a row's are one point of a line or plane of them.
    pub rows: Vec<Vec<Value>>,
    pub encoded: Vec<Vec<f64>>,
    /// The continuous directions the span leaves free ([continuous columns, f], encoded units).
    pub free: nalgebra::DMatrix<f64>,
    /// Whether they are the batch (the module's proof).
    pub proof: bool,
    /// Where they are the batch but some rows' continuous values are read more loosely than a
    /// proof claims: per row, how (None for a precise row, proved). Empty elsewhere.
    pub loose: Vec<Option<Unproved>>,
    /// Whether every row of the batch is one of them, up to the continuous directions the span
    /// leaves free: its rank certain and the batch's, every category searched, the values along
    /// at most `enumerate::FREE_SEARCHED` free directions taken within the ranges.
    pub holds_lines: bool,
    /// The span's rank (its determined directions), whether it is certain, and the batch's rows.
    pub rank: usize,
    pub certain: bool,
    pub batch: usize,
}

/// `Setup::enumerate_span`'s two answers, owned: the span's rows, and a crowded span's for the
/// update's choice alone.
pub type SpanSearch = (Option<SpanRows>, Option<SpanRows>);

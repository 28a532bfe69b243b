//! Why a row that fits the update is not proved (`proof.rs` checks the conditions).

/// Why a row whose activation lies in the span is not proved a row of the batch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unproved {
    /// The row's live units leave `checks` independent checks where the certificate needs `needed`.
    FewChecks { checks: usize, needed: usize },
    /// Other points with the row's categories and ReLU cell, a tolerance or more away, fit the
    /// update as well (`margin`: M's smallest singular value over what uniqueness needs, below 1).
    NotUnique { margin: f64 },
    /// The second layer's gradient gives the row no label's residual (`attack::priors::peel`).
    Unlabelled,
    /// G₂ has `rank` independent directions for `rows` rows: rows whose δ's are dependent (two
    /// rows that share their second-layer ReLU pattern on a binary head) show in it only as a
    /// combination, and where they also share their categories and first-layer cell one point
    /// between them lies in the span without being a row.
    RankBelowBatch { rank: usize, rows: usize },
}

impl Unproved {
    /// The reason in words, for the report's row and its per-batch count.
    pub fn why(&self) -> String {
        match *self {
            Unproved::FewChecks { checks, needed } => {
                format!("its live first-layer units give {checks} independent checks where a proof needs {needed}")
            }
            Unproved::NotUnique { .. } => {
                "other points with its categories and ReLU pattern fit the update too (rows of \
                                           the batch that share them, such as near-twins, make a line of such points)"
                    .into()
            }
            Unproved::RankBelowBatch { rank, rows } => format!(
                "the second layer's gradient has rank {rank} for {rows} rows: rows that share their ReLU patterns show \
                 in it only as combinations, and a point between two of them would fit"
            ),
            Unproved::Unlabelled => {
                "the second layer's gradient gives it no label's residual (a point between rows that share their \
                 ReLU pattern)"
                    .into()
            }
        }
    }
}

//! Why a row that fits the update is not proved (`proof.rs` checks the conditions).
use crate::table::dataset::{PROVED_WITHIN, TOLERANCE_FACTOR};

/// Why a row whose activation lies in the span is not proved a row of the batch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unproved {
    /// The row's live units leave `checks` independent checks where the certificate needs `needed`.
    FewChecks { checks: usize, needed: usize },
    /// Other points with the row's categories and ReLU cell, a tolerance or more away, fit the
    /// update as well (`margin`: M's smallest singular value over what uniqueness needs, below 1).
    NotUnique { margin: f64 },
    /// The point of the row's ReLU cell that fits the update lies on the cell's edge (within what
    /// the update's precision can place): the next cell may hold a line of fitting points (rows
    /// of the batch that share their categories and cell), and this row sit just past its end.
    AtCellEdge,
    /// The certificate's bound puts a row of the batch within half the scoring tolerance of this
    /// one, not within what "proved" claims (0.05 std): it keeps its slot, not proved.
    Imprecise,
    /// The second layer's gradient gives the row no label's residual (`attack::priors::peel`).
    Unlabelled,
    /// G₂ has `rank` determined directions for `rows` rows (and `uncertain` more too near its
    /// float32 rounding to place): rows whose δ's are (nearly) dependent (two rows that share
    /// their second-layer ReLU pattern on a binary head) show in it only as a combination, and
    /// where they also share their categories and first-layer cell one point between them lies
    /// in the span without being a row. Such a span proves a row only with its label
    /// (`attack::priors::peel`); this is why one was not proved.
    RankBelowBatch { rank: usize, uncertain: usize, rows: usize },
    /// Its activation lies in the span only once the directions too near the update's rounding
    /// to place are allowed for (`ActivationSpan::fits_threshold`): it fits, and nothing about it
    /// is certain.
    Unplaced,
    /// It is one of `found` rows the encoding can hold in the first layer's span, whose rank
    /// `rank` is not the batch's `rows` or which holds more rows than the batch: it fits the
    /// first layer's update exactly, as the others do (`assess::enumerated`).
    SpanHoldsMore { found: usize, rank: usize, rows: usize },
    /// One of the batch's rows as the first layer's span gives them (`found` rows there, the
    /// update's fit choosing the batch where more), where the span reads `loose` of them more
    /// loosely than a proof claims: the fit's choice is then not proved, nor a row read beyond
    /// half the scoring tolerance (`assess::enumerated`).
    SpanFitted { found: usize, loose: usize },
    /// One of `found` rows of the first layer's span that holds the batch, placed where the
    /// update left its gradient once the rows it holds were taken off (`assess::span_left`); its
    /// values along the `free` directions the span leaves free are the fit's choice.
    SpanRowLeft { found: usize, free: usize },
    /// One of the `left` rows the ensemble, run again on what the rows held leave of the update,
    /// gave, where the whole reconstruction then fits the update to 1 − cos `fit`, near its
    /// float32 rounding (`assess::inverted_left`): other rows may leave the same.
    InvertedLeft { left: usize, fit: f64 },
    /// One of the `chosen` rows no proof reached among those the update's choice picked
    /// (`assess::update_choice`), with which the reconstruction fits the update to 1 − cos `fit`,
    /// its float32 rounding, and whose gradient the update sees (`assess::seen_rows`): other rows
    /// may fit it as well.
    ChosenFit { chosen: usize, fit: f64 },
    /// Moved, with the other rows no proof reached, against what the rows leave of the update
    /// (`assess::polish`), to where the whole reconstruction fits it to 1 − cos `fit`, near its
    /// float32 rounding: other rows may fit as well.
    Polished { fit: f64 },
    /// The ensemble's, left where it was while the other rows no proof reached were polished
    /// (`assess::polish`), where the whole reconstruction then fits the update to 1 − cos `fit`,
    /// near its float32 rounding, and the update sees it (`assess::seen_rows`).
    PolishKept { fit: f64 },
    /// Its gradient lies below the update's float32 rounding (the network is sure of it), so any
    /// row as sure fits as well: the table's likeliest row, cell by cell, among the `among` rows
    /// of its label the network is surest of (`assess::unseen_rows`).
    Unseen { among: usize },
    /// Its gradient lies below the update's float32 rounding, as `Unseen`, and the server holds
    /// too few rows of its label to read a likelier one: the ensemble's row, not held, every cell
    /// the fallback's guess where the fallback runs (`assess::unseen_rows`).
    UnseenNoGuess,
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
            Unproved::AtCellEdge => {
                "the point of its ReLU cell that fits the update lies on the cell's edge, where the next cell's \
                 points (a line of them where rows of the batch share categories and cell) fit the update too"
                    .into()
            }
            Unproved::RankBelowBatch { rank, uncertain, rows } => {
                let near = match uncertain {
                    0 => String::new(),
                    k => format!(" and {k} more too near its float32 rounding to place"),
                };
                format!(
                    "the second layer's gradient has {rank} directions clear of its rounding{near} for {rows} rows: rows \
                     that share their ReLU patterns show in it only as combinations, a point between two of them \
                     would fit, and the update gave this row no label that would tell it from one"
                )
            }
            Unproved::SpanHoldsMore { found, rank, rows } => format!(
                "it lies exactly in the first layer's span of the rows, which has rank {rank} for {rows} rows and holds \
                 {found} rows the table can hold: the span cannot tell which of them are the batch's"
            ),
            Unproved::SpanRowLeft { found, free } => {
                let values = match free {
                    0 => String::new(),
                    f => format!(
                        "; its values along the {f} continuous direction{} the span leaves free are the fit's choice",
                        if f == 1 { "" } else { "s" }
                    ),
                };
                format!(
                    "it is one of the {found} rows of the first layer's span, which holds every row of the batch, placed \
                     where the update left its gradient once the rows it holds were taken off{values}"
                )
            }
            Unproved::InvertedLeft { left, fit } => format!(
                "the rows the update holds leave a part of it that {left} row{} explain{}, found by the ensemble run \
                 again on that part alone: with them the reconstruction fits the whole update to 1 − cos {fit:.1e}, \
                 near its float32 rounding, and other rows may fit it as well",
                if left == 1 { "" } else { "s" },
                if left == 1 { "s" } else { "" }
            ),
            Unproved::ChosenFit { chosen, fit } => format!(
                "it is one of {chosen} row{} the update's fit chose, with which the reconstruction fits the whole \
                 update to 1 − cos {fit:.1e}, its float32 rounding, and the update sees it (a guess in its place \
                 fits worse): other rows may fit as well",
                if chosen == 1 { "" } else { "s" }
            ),
            Unproved::Polished { fit } => format!(
                "it was moved, with the other rows no proof reached, against what the rows leave of the update, to \
                 where the whole reconstruction fits it to 1 − cos {fit:.1e}, near its float32 rounding: other rows \
                 may fit as well"
            ),
            Unproved::PolishKept { fit } => format!(
                "it stayed as the ensemble gave it while the other rows no proof reached were moved against what \
                 the rows leave of the update, to where the whole reconstruction fits it to 1 − cos {fit:.1e}, near \
                 its float32 rounding, and the update sees this row: other rows may fit as well"
            ),
            Unproved::Unseen { among } => format!(
                "the update does not show it: its gradient lies below the update's float32 rounding (the network \
                 is sure of it), so any row as sure fits as well; it is the likeliest row, cell by cell, among the \
                 table's {among} rows of its label the network is surest of"
            ),
            Unproved::UnseenNoGuess => "the update does not show it: its gradient lies below the update's float32 \
                 rounding (the network is sure of it), so any row as sure fits as well, and the server holds too few \
                 rows of its label to read a likelier one: this row is one of many that fit, no likelier than a draw"
                .into(),
            Unproved::SpanFitted { found, loose } => format!(
                "it is one of the batch's rows as the first layer's span gives them ({found} rows found there, the \
                 update's fit choosing the batch where more), but the span reads {loose} of them more loosely than \
                 the {PROVED_WITHIN} std a proof claims: the fit's choice is then not proved, nor a row read beyond \
                 half the scoring tolerance"
            ),
            Unproved::Unplaced => {
                "its activation lies in the second layer's span only with the directions too near the update's \
                 float32 rounding to place: it fits the update, and no row of the batch is placed near it"
                    .into()
            }
            Unproved::Imprecise => format!(
                "the update places a row of the batch within half the scoring tolerance of it ({:.2} std in each \
                 number), not within the {PROVED_WITHIN} std a proof claims",
                0.5 * TOLERANCE_FACTOR
            ),
            Unproved::Unlabelled => {
                "the second layer's gradient gives it no label's residual (a point between rows that share their \
                 ReLU pattern)"
                    .into()
            }
        }
    }
}

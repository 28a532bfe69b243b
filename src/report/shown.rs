//! What a simulated FedSGD client's update shows of its own batch, for the report.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// What a simulated FedSGD client's update shows of its own batch (`assess::seen_rows`): the
/// rows whose gradient shows in it, and the cells the attack got right on those and on the
/// others. A row the update does not show is one no attack on this update can tell from any row
/// the network is as sure of: the figure bounds every attacker, not only this one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RowsShown {
    /// The batch's rows, and those whose gradient shows in the update (the batch's own rows
    /// fit it less well without the row, beyond its float32 rounding).
    pub rows: usize,
    pub shown: usize,
    /// Share of cells right on the rows shown and on the others (null where there are none).
    pub accuracy_shown: Option<f64>,
    pub accuracy_hidden: Option<f64>,
}

impl RowsShown {
    /// `shown` (per row of the batch) with the cells right on each (`correct`, in the same order).
    pub fn of<'a>(shown: &[bool], correct: impl Iterator<Item = &'a [bool]>) -> RowsShown {
        let mut cells = [[0usize; 2]; 2];
        for (&shown, correct) in shown.iter().zip(correct) {
            cells[shown as usize][0] += correct.iter().filter(|&&c| c).count();
            cells[shown as usize][1] += correct.len();
        }
        let share = |[right, all]: [usize; 2]| (all > 0).then(|| right as f64 / all as f64);
        RowsShown {
            rows: shown.len(),
            shown: shown.iter().filter(|&&s| s).count(),
            accuracy_shown: share(cells[1]),
            accuracy_hidden: share(cells[0]),
        }
    }

    /// The report's sentence.
    pub fn sentence(&self) -> String {
        let pct = |a: Option<f64>| a.map_or("—".to_string(), |a| format!("{:.1}%", 100.0 * a));
        match self.shown == self.rows {
            true => "the update shows every row of the batch (checked against the client's rows: each one's gradient \
                     stands clear of the update's float32 rounding)"
                .to_string(),
            false => {
                let hidden = self.rows - self.shown;
                let (rows, lie) = match hidden {
                    1 => ("row's gradient lies", "it"),
                    _ => ("rows' gradients lie", "them"),
                };
                format!(
                    "the update shows {} of the batch's {} rows: the other {hidden} {rows} below its float32 rounding \
                     (the network is sure of {lie}), so no attack on this update can tell {lie} from other rows it is \
                     as sure of (checked against the client's rows; cells right: {} on the rows shown, {} on the \
                     others)",
                    self.shown,
                    self.rows,
                    pct(self.accuracy_shown),
                    pct(self.accuracy_hidden)
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cells right on the rows shown and on the others, and the sentence that says so.
    #[test]
    fn the_rows_shown_split_the_cells_right() {
        let correct = [vec![true, true], vec![true, false], vec![false, false]];
        let shown = RowsShown::of(&[true, true, false], correct.iter().map(|c| &c[..]));
        assert_eq!((shown.rows, shown.shown), (3, 2));
        assert_eq!((shown.accuracy_shown, shown.accuracy_hidden), (Some(0.75), Some(0.0)));
        assert!(
            shown.sentence().contains("shows 2 of the batch's 3 rows"),
            "{}",
            shown.sentence()
        );
        let every = RowsShown::of(&[true], correct.iter().map(|c| &c[..]));
        assert_eq!((every.accuracy_shown, every.accuracy_hidden), (Some(1.0), None));
        assert!(every.sentence().starts_with("the update shows every row"));
    }
}

//! What a client's update shows of its own batch, for the report: a FedSGD client's rows, a
//! FedAvg client's cells.
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

/// What a FedAvg client's update shows of its own batch, cell by cell (`assess::cells_shown`):
/// the cells whose move just past their scoring tolerance moves the client's replayed update
/// clear of what its own rows leave, and the cells right on those and on the others. A cell the
/// update does not show is one no attack on it can pin down at the scoring's resolution; where
/// it shows nearly every cell and the attack is near guessing, the attack, not the update, ran
/// out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CellsShown {
    /// The batch's cells, those moved (within their column's range; a random draw of them where
    /// `drawn`), and those shown.
    pub cells: usize,
    pub tested: usize,
    pub shown: usize,
    /// ‖replay − update‖ / ‖update‖ of the client's own rows, against which each move is measured,
    /// and the least gap a move must add beyond it besides (float32's rounding, over ten times).
    pub own_gap: f64,
    pub floor: f64,
    /// The least change of that gap among the moves that show (null where none shows).
    pub least_shown: Option<f64>,
    /// Share of cells right among those shown and among the others moved (null where there are
    /// none).
    pub accuracy_shown: Option<f64>,
    pub accuracy_hidden: Option<f64>,
    /// Whether the cells moved are a random draw (replaying every cell would take too long).
    pub drawn: bool,
    /// Whether the client reshuffles its rows and was replayed in its own orders, which the
    /// server is not told: the cells the update pins given the order.
    pub own_orders: bool,
}

impl CellsShown {
    /// The counts of `shown` (per row of the batch and feature; None: not moved) with the cells
    /// right on each (`correct`, in the same order); the check's own figures (gaps, draw, orders)
    /// are the caller's to set.
    pub fn of<'a>(shown: &[Vec<Option<bool>>], correct: impl Iterator<Item = &'a [bool]>) -> CellsShown {
        let mut cells = [[0usize; 2]; 2];
        let (mut all, mut tested, mut seen) = (0, 0, 0);
        for (row, correct) in shown.iter().zip(correct) {
            for (&s, &right) in row.iter().zip(correct) {
                all += 1;
                let Some(s) = s else { continue };
                tested += 1;
                seen += s as usize;
                cells[s as usize][0] += right as usize;
                cells[s as usize][1] += 1;
            }
        }
        let share = |[right, all]: [usize; 2]| (all > 0).then(|| right as f64 / all as f64);
        CellsShown {
            cells: all,
            tested,
            shown: seen,
            own_gap: 0.0,
            floor: 0.0,
            least_shown: None,
            accuracy_shown: share(cells[1]),
            accuracy_hidden: share(cells[0]),
            drawn: false,
            own_orders: false,
        }
    }

    /// The report's sentence.
    pub fn sentence(&self) -> String {
        let pct = |a: Option<f64>| a.map_or("—".to_string(), |a| format!("{:.1}%", 100.0 * a));
        let by = self
            .least_shown
            .map_or(String::new(), |m| format!(" by {m:.1e} of its norm or more,"));
        let moved = match (self.drawn, self.cells - self.tested) {
            (true, _) => format!("a random draw of the batch's {}, the check's time limit", self.cells),
            (false, 0) => format!("every one of the batch's {}", self.cells),
            (false, n) => format!(
                "the batch's {} but {n} that cannot move within their column's range",
                self.cells
            ),
        };
        let orders = match self.own_orders {
            true => ", replayed in the orders the client drew, which the server is not told",
            false => "",
        };
        let what = match self.tested - self.shown {
            0 => {
                "the update pins every cell moved, each on its own, so what the attack misses there is its own limit, \
                  not the update's"
                    .to_string()
            }
            n => format!(
                "the other {n} move it by less: no attack on this update can pin them down at the scoring's resolution"
            ),
        };
        let right = match self.tested == self.shown {
            true => format!("{} of them", pct(self.accuracy_shown)),
            false => format!(
                "{} of those shown, {} of the others",
                pct(self.accuracy_shown),
                pct(self.accuracy_hidden)
            ),
        };
        format!(
            "the update shows {} of the {} cells moved ({moved}), each on its own: each, moved just past its scoring \
             tolerance or to another category, moves the client's replayed update{by} farther from the update than \
             its own rows' replay (which leaves {:.1e}) by that again and {:.0e} (checked against the client's \
             rows{orders}); cells right: {right}; {what}",
            self.shown, self.tested, self.own_gap, self.floor,
        )
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

    /// The cells shown, those not moved, the cells right on each kind, and the sentence's two
    /// endings: every cell pinned, or some the update cannot pin.
    #[test]
    fn the_cells_shown_split_the_cells_right() {
        let correct = [vec![true, false, true], vec![false, true, true]];
        let shown = [
            vec![Some(true), Some(true), None],
            vec![Some(false), Some(true), Some(true)],
        ];
        let cells = CellsShown {
            own_gap: 1e-5,
            floor: 1e-6,
            least_shown: Some(3e-3),
            ..CellsShown::of(&shown, correct.iter().map(|c| &c[..]))
        };
        assert_eq!((cells.cells, cells.tested, cells.shown), (6, 5, 4));
        // Shown: true, false, true, true; the other moved: false (the cell not moved counts in neither).
        assert_eq!((cells.accuracy_shown, cells.accuracy_hidden), (Some(0.75), Some(0.0)));
        let s = cells.sentence();
        assert!(
            s.starts_with("the update shows 4 of the 5 cells moved (the batch's 6 but 1 that cannot move"),
            "{s}"
        );
        assert!(s.contains("by 3.0e-3 of its norm or more"), "{s}");
        assert!(s.contains("the other 1 move it by less"), "{s}");
        let every = CellsShown {
            drawn: true,
            ..CellsShown::of(&shown[..1], correct.iter().map(|c| &c[..]))
        };
        assert!(
            every.sentence().contains("pins every cell moved, each on its own"),
            "{}",
            every.sentence()
        );
        assert!(
            every
                .sentence()
                .contains("(a random draw of the batch's 3, the check's"),
            "{}",
            every.sentence()
        );
    }
}

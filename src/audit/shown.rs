//! What the audit says of the updates the attack does not read: where it is at guessing on
//! updates that show their cells (`report::shown::CellsShown`), the attack is what runs out.

/// One setting of the judged attack, as the sentence needs it.
pub(super) struct ShownPoint {
    pub label: String,
    /// The attack's and guessing's mean accuracy, and the mean share of the cells moved that
    /// each update shows (None: not checked).
    pub accuracy: f64,
    pub random: f64,
    pub shown: Option<f64>,
}

/// Where `attack` is within `margin` of guessing but the updates show half their cells or more
/// on their own (the client replayed with one cell moved moves away from them), the attack is
/// what runs out there, not the update: said, lest the audit read as the update hiding the rows.
pub(super) fn shown_sentence(attack: &str, points: &[ShownPoint], margin: f64) -> Option<String> {
    let runs_out: Vec<&ShownPoint> = (points.iter())
        .filter(|p| p.accuracy <= p.random + margin && p.shown.is_some_and(|s| s >= 0.5))
        .collect();
    let least = runs_out.iter().filter_map(|p| p.shown).reduce(f64::min)?;
    let labels: Vec<&str> = runs_out.iter().map(|p| &p.label[..]).collect();
    Some(format!(
        "At {}, {attack} recovers no more than guessing, yet its updates show {:.0}% or more of the \
         cells moved on their own (a mean over batches: the client replayed with one cell moved \
         past its tolerance gives another update): there the attack runs out, not the update, and \
         a stronger attacker may recover more.",
        labels.join(", "),
        100.0 * least
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(label: &str, accuracy: f64, shown: Option<f64>) -> ShownPoint {
        ShownPoint {
            label: label.into(),
            accuracy,
            random: 0.62,
            shown,
        }
    }

    #[test]
    fn an_attack_at_guessing_on_updates_that_show_their_cells_is_said_to_run_out() {
        let points = [
            point("E = 1", 0.95, Some(1.0)),
            point("E = 3", 0.63, Some(0.9)),
            point("E = 5", 0.62, Some(0.2)),
        ];
        let sentence = shown_sentence("TabLeak", &points, 0.02).expect("E = 3 is at guessing and shows 90 %");
        assert!(
            sentence.starts_with("At E = 3, TabLeak recovers no more than guessing"),
            "{sentence}"
        );
        assert!(sentence.contains("show 90% or more") && sentence.contains("runs out, not the update"));
        // Nothing checked, an attack above guessing everywhere, or updates that show little:
        // nothing said.
        assert_eq!(shown_sentence("TabLeak", &[point("E = 3", 0.62, None)], 0.02), None);
        assert_eq!(shown_sentence("TabLeak", &points[..1], 0.02), None);
        assert_eq!(shown_sentence("TabLeak", &points[2..], 0.02), None);
    }
}

//! The span's pursuits a setup ran, kept by what they were asked (`assess::span_pursuit`): the
//! early answer's choice and the full run's ask the same of the same span and update.
use crate::assess::row_test::Placed;
use crate::assess::span_rows::SpanRows;

/// The pursuit's answer: per pick, the candidate and its label; and ‖B·G − Σ g‖ over ‖B·G‖.
#[derive(Clone)]
pub(crate) struct Pursued {
    pub picks: Vec<(usize, usize)>,
    pub residual: f64,
}

/// A pursuit's picks, the row test's points where they are what it picked among, and how many
/// points the test placed.
pub(crate) type Picked = (Pursued, Option<Vec<Placed>>, Option<usize>);

/// The pursuits a setup ran, by what they were asked: the early answer's choice and the full
/// run's ask the same of the same span and update (Adult [32, 32], B = 32, untrained: four times
/// an attack, 0.6 s each among 12,000-15,000 rows), and the answer is the same.
#[derive(Default)]
pub(crate) struct Pursuits(std::sync::Mutex<Vec<(Vec<u64>, Option<Picked>)>>);

impl Pursuits {
    /// The answer for `span`, `target` and `quota`: the one kept, or `pick`'s.
    pub(crate) fn answer(
        &self,
        span: &SpanRows,
        target: &[f64],
        quota: &[usize],
        pick: impl FnOnce() -> Option<Picked>,
    ) -> Option<Picked> {
        use std::hash::{Hash, Hasher};
        // The span by a hash of its rows (it holds up to 32,768 of them), the rest as it is.
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (span.encoded.iter().flatten().chain(span.free.as_slice())).for_each(|v| v.to_bits().hash(&mut hasher));
        let key: Vec<u64> = (target.iter().map(|v| v.to_bits()))
            .chain(quota.iter().map(|&q| q as u64))
            .chain([span.encoded.len() as u64, hasher.finish()])
            .collect();
        let kept = |memo: &[(Vec<u64>, Option<Picked>)]| memo.iter().find(|(k, _)| *k == key).map(|(_, a)| a.clone());
        if let Some(answer) = kept(&self.0.lock().expect("pursuits")) {
            return answer;
        }
        let answer = pick();
        self.0.lock().expect("pursuits").push((key, answer.clone()));
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pursuit asked again of the same span, target and quota is answered from the first
    /// time; asked of another target, it runs.
    #[test]
    fn a_pursuit_asked_again_is_not_run_again() {
        let span = SpanRows {
            rows: Vec::new(),
            encoded: vec![vec![0.5, -1.0], vec![1.5, 2.0]],
            free: nalgebra::DMatrix::zeros(2, 0),
            proof: false,
            loose: Vec::new(),
            holds_lines: false,
            rank: 2,
            certain: true,
            batch: 2,
        };
        let pursuits = Pursuits::default();
        let runs = std::cell::Cell::new(0);
        let pick = |residual: f64| {
            runs.set(runs.get() + 1);
            Some((
                Pursued {
                    picks: vec![(1, 0)],
                    residual,
                },
                None,
                None,
            ))
        };
        let first = pursuits.answer(&span, &[1.0, 2.0], &[1], || pick(0.25));
        let again = pursuits.answer(&span, &[1.0, 2.0], &[1], || pick(0.5));
        assert_eq!(
            (runs.get(), first.map(|a| a.0.residual), again.map(|a| a.0.residual)),
            (1, Some(0.25), Some(0.25))
        );
        pursuits.answer(&span, &[1.0, 3.0], &[1], || pick(0.5));
        pursuits.answer(&span, &[1.0, 2.0], &[0], || pick(0.5));
        assert_eq!(runs.get(), 3);
    }
}

//! How each reconstructed row was obtained (proved, consistent with the update, from the
//! ensemble, from the marginals), why a row that fits is not proved, and what the second layer's
//! certificate did.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// How a reconstructed row was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum Provenance {
    /// Proved a row of the batch: by the first layer's ReLU pattern or the second layer's span,
    /// under the conditions docs/method.md states ("What proved means").
    Proved,
    /// Its activation lies in the second layer's span, so it fits the update, but the conditions
    /// under which that proves a row of the batch do not hold (the row says why): near-twins,
    /// dead units, a label the update does not give.
    Consistent,
    /// Its categories read off an Adam client's update by the first-layer units they reach
    /// (`attack::priors::rows_by_category`), not proved; its continuous cells the ensemble's or
    /// the marginals'.
    Read,
    /// Pooled from the ensemble (some cells may have fallen back to the marginals).
    Ensemble,
    /// Every cell from the table's marginals (the random guess's draw).
    Prior,
}

/// The rows of one provenance and how many of their cells are right.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ProvenanceGroup {
    pub provenance: Provenance,
    pub rows: usize,
    pub accuracy: f64,
    /// Why the group's rows are not proved, with how many rows each reason holds (consistent
    /// rows only; empty otherwise).
    #[serde(default)]
    pub reasons: Vec<ReasonCount>,
}

/// One reason a row is not proved, and how many rows of the batch it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ReasonCount {
    pub why: String,
    pub rows: usize,
}

/// What the second layer's certificate did, for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SecondLayerSummary {
    /// The span's dimension (the second layer's gradient's rank) and the first layer's width.
    pub rank: usize,
    pub width: usize,
    /// Rows of the batch whose first-layer activation was proved to lie in the span: each one
    /// is a row of the batch (categories exact, continuous values within their tolerance).
    /// On FedAvg (`proof` false) the rows adopted for lying near the span, which proves nothing.
    pub certified_rows: usize,
    /// Rows proved on the update left once the rows proved were peeled off it, or copies of
    /// proved rows where the batch repeats them (`assess::peeled`), beside `certified_rows`.
    #[serde(default)]
    pub peeled_rows: usize,
    /// Rows whose activation lies in the span but which the certificate does not prove (the
    /// rows' `why_not_proved` says why): counted in neither of the above.
    #[serde(default)]
    pub consistent_rows: usize,
    /// Whether an adopted row is proved (FedSGD) or only scored near the span (FedAvg).
    pub proof: bool,
    /// FedAvg's adoptions undone because with them the rows no longer reproduced an update the
    /// rows before them did (`assess::adoptions`); the counts above no longer hold them.
    #[serde(default)]
    pub undone_adoptions: usize,
}

impl SecondLayerSummary {
    /// What the report says of FedAvg's adoptions undone (None where none were).
    pub fn undone_sentence(&self) -> Option<String> {
        let n = self.undone_adoptions;
        (n > 0).then(|| {
            format!(
                "{n} {} taken near the second layer's update put back as {} were: with them the rows no longer \
                 reproduced the update, which the rows before them did",
                if n == 1 { "row" } else { "rows" },
                if n == 1 { "it" } else { "they" }
            )
        })
    }
}

impl Provenance {
    /// What the provenance says of a row, for a terminal.
    pub fn words(self) -> &'static str {
        match self {
            Provenance::Proved => "proved",
            Provenance::Consistent => "consistent with the update, not proved",
            Provenance::Read => "categories read from the update, not proved",
            Provenance::Ensemble => "from the ensemble",
            Provenance::Prior => "guessed without the update",
        }
    }

    /// Whether the update itself holds the row: proved, or found in its span and fitting it
    /// (consistent), not the ensemble's guess or the marginals'.
    pub fn held_by_update(self) -> bool {
        matches!(self, Provenance::Proved | Provenance::Consistent)
    }
}

/// Every provenance, strongest first.
pub const PROVENANCES: [Provenance; 5] = [
    Provenance::Proved,
    Provenance::Consistent,
    Provenance::Read,
    Provenance::Ensemble,
    Provenance::Prior,
];

/// Each distinct reason with the rows that give it, in the order first given.
pub fn reason_counts<'a>(reasons: impl Iterator<Item = &'a str>) -> Vec<ReasonCount> {
    let mut counts: Vec<ReasonCount> = Vec::new();
    for why in reasons {
        match counts.iter_mut().find(|c| c.why == why) {
            Some(c) => c.rows += 1,
            None => counts.push(ReasonCount {
                why: why.to_string(),
                rows: 1,
            }),
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report names the adoptions undone, in number, and says nothing where there were none.
    #[test]
    fn adoptions_undone_are_said_with_their_count() {
        let mut summary = SecondLayerSummary {
            rank: 32,
            width: 100,
            certified_rows: 29,
            peeled_rows: 0,
            consistent_rows: 0,
            proof: false,
            undone_adoptions: 0,
        };
        assert_eq!(summary.undone_sentence(), None);
        summary.undone_adoptions = 1;
        assert!(summary.undone_sentence().unwrap().starts_with("1 row taken near"));
        summary.undone_adoptions = 2;
        let said = summary.undone_sentence().unwrap();
        assert!(
            said.starts_with("2 rows taken near") && said.contains("as they were"),
            "{said}"
        );
    }
}

//! The ensemble's stopping rule. Where no proof can reach the batch (B = 128 on the default
//! network), the pooled reconstruction is all the attack gives, and TabLeak's 30 members cost
//! three times 10's work for a few tenths of a point (Adult, seeds 0-3: 72.8 % from the first 10
//! members, 73.2 % from all 30; docs/results/ensemble.md). The members run in rounds instead: 10,
//! then 5 at a time. After each round the pooled reconstruction is compared with the one before
//! (the first round's with that of its first 5 members) on the cells either pooling calls sure or
//! fairly sure (● or ◐: `report::CONFIDENCE_LEVELS`): where at most `SETTLED` of the batch's cells
//! changed there, more members would not change what the report claims, and the attack stops.
//! The other cells change from round to round whatever the ensemble's size (at B = 128, 11 % of
//! all cells from 5 to 10 members and still 2.8 % from 25 to 30): they are the contested ones, on
//! which the median flips, and the report calls them unsure either way.
//!
//! Where a proof can reach the batch, the early answer's members run in two stages instead
//! (`early_stages`): the first `EARLY_FIRST` alone, then the rest with them (`run::answer_early`).
//!
//! The entropy per cell is that of the members run: fewer members show less of the spread, so a
//! stopped ensemble calls more cells sure than 30 would (at B = 128, 190-230 cells at 10 members
//! against 110-130 at 30, right 96.7 % of the time against 98.2 %). The report states the members
//! it pooled (`ensemble::EnsembleRounds`).
use crate::assess::matching::match_rows;
use crate::attack::inversion::driver::Progress;
use crate::attack::inversion::ensemble::{self, EnsembleRounds, Members, RoundChange};
use crate::attack::inversion::setup::Setup;
use crate::config::{MemberRange, Protocol};
use crate::error::Result;
use crate::report::Confidence;
use crate::table::ColumnKind;

/// Members of the first round...
pub const FIRST_ROUND: usize = 10;
/// ...and of each round after it.
pub const ROUND: usize = 5;
/// The share of the batch's cells, among those either pooling calls sure or fairly sure, that
/// may change in a round for the ensemble to count as settled.
pub const SETTLED: f64 = 0.01;

/// Members of an early answer's first stage (`early_stages`). Its proofs read the rows from the
/// update; the members only bring them near: at B = 32 (Adult sample and full Adult, seeds 0-9;
/// full Adult [100, 100] trained 5 epochs and HI's trained 5 epochs, seeds 0-4) the first 5
/// proved or held what the first 10 did, row for row but for proved rows' continuous values moved
/// within the proof's claim (full Adult seed 1: four fnlwgt values, by 1-20), in half the steps.
pub const EARLY_FIRST: usize = 5;

/// The early answer's rule as the report states it, where its first `members` answered.
pub fn proved_rule(members: usize) -> String {
    format!(
        "the first {members} members, pooled after 300 steps, proved every row of the batch or held it consistent \
         with the update: the others were not run"
    )
}

/// The rule as the report states it.
pub const RULE: &str = "members in rounds (10, then 5 at a time); stop once a round changes at most 1 % of the \
                        batch's cells among those the ensemble calls sure or fairly sure";

/// The rounds of an ensemble of `members`: `FIRST_ROUND`, then `ROUND` at a time (the last one
/// shorter where they do not divide).
pub fn rounds(members: usize) -> Vec<MemberRange> {
    let mut out = Vec::new();
    let mut first = 0;
    while first < members {
        let count = if first == 0 { FIRST_ROUND } else { ROUND }.min(members - first);
        out.push(MemberRange { first, count });
        first += count;
    }
    out
}

/// An early answer's members where its first stage proved the batch.
pub fn proved_by(members: usize, most: usize) -> EnsembleRounds {
    EnsembleRounds {
        members,
        most,
        rounds: Vec::new(),
        rule: proved_rule(members),
    }
}

/// The stages of an early answer (`run::answer_early`) over an ensemble of `members`: the first
/// `EARLY_FIRST`, proved alone where they can, then the rest with them.
pub fn early_stages(members: usize) -> Vec<MemberRange> {
    let first = EARLY_FIRST.min(members);
    let mut stages = vec![MemberRange { first: 0, count: first }];
    if members > first {
        stages.push(MemberRange {
            first,
            count: members - first,
        });
    }
    stages
}

impl Setup<'_> {
    /// Whether the attack runs its members by the stopping rule here: an attack that composes it
    /// (TabLeak with its ensemble left to the engine), on an unperturbed FedSGD update of a
    /// classifier, one ensemble (no epoch-prior candidates), more members than the first round,
    /// and no proof that can reach every row (where one can, the proofs take the members' rows as
    /// candidates and the early answer stops the attack).
    pub fn stops_members(&self) -> bool {
        self.config.attacker().stops_members()
            && self.config.protocol == Protocol::Fedsgd
            && self.dataset.target.is_none()
            && self.config.prior_candidates().len() == 1
            && self.members > FIRST_ROUND
            && !self.perturbed()
            && !self.may_prove_batch()
    }

    /// What the round `round` changed: the share of the batch's cells that differ between the
    /// pooled members before it (the first round: its own first half) and those up to its end,
    /// among the cells either pooling calls sure. `inverted`: at least the members to its end.
    pub async fn round_change(&self, inverted: &Members, round: MemberRange) -> Result<RoundChange> {
        let (b, d) = (self.config.rows(), self.dataset.d());
        let upto = round.first + round.count;
        let before = match round.first {
            0 => (round.count / 2).max(1),
            first => first,
        };
        let (x, probs) = (&inverted.x, &inverted.probs);
        let (now, now_entropy, ..) = self
            .pool(&x[..upto * b * d], &probs[..upto * b * d], &[], &[], upto)
            .await?;
        let (was, was_entropy, ..) = self
            .pool(&x[..before * b * d], &probs[..before * b * d], &[], &[], before)
            .await?;
        let perm = match_rows(&self.rules, &now, &was);
        let sure = |entropy: &Option<Vec<Vec<Option<f64>>>>, i: usize, f: usize| {
            let kind = match self.dataset.features[f].is_categorical() {
                true => ColumnKind::Categorical,
                false => ColumnKind::Continuous,
            };
            let e = entropy.as_ref().and_then(|e| e[i][f]);
            Confidence::of(kind, e) != Confidence::Low
        };
        let features = self.dataset.features.len();
        let changed = (0..b)
            .flat_map(|i| (0..features).map(move |f| (i, f)))
            .filter(|&(i, f)| {
                let j = perm[i];
                (sure(&now_entropy, i, f) || sure(&was_entropy, j, f)) && !self.rules[f].agrees(now[i][f], was[j][f])
            })
            .count();
        Ok(RoundChange {
            members: upto,
            changed: changed as f64 / (b * features).max(1) as f64,
        })
    }

    /// The ensemble inverted by its stopping rule: round after round until one leaves the cells
    /// it is sure of as they were, or every member has run. Progress counts each round's steps as
    /// its share of the whole ensemble's, so a stopped ensemble ends short of its total and never
    /// goes back. (On an H200 the members after the first round run at once took as long as
    /// rounds of 5: 1.75 s against 1.65 s where the rule stopped at 15.)
    pub async fn invert_in_rounds(
        &self,
        progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<(Members, EnsembleRounds)> {
        let (most, iterations) = (self.members, self.config.iterations);
        let mut parts = Vec::new();
        let mut changes = Vec::new();
        let mut joined = None;
        for round in rounds(most) {
            let before = round.first * iterations / most;
            let share = |p: &Progress| Progress {
                step: before + p.step * round.count / most,
                of: iterations,
                ..p.clone()
            };
            parts.push(self.invert(round, &mut |p| progress(&share(p))).await?);
            let all = ensemble::join_first(self.shape(), parts.clone(), round.first + round.count)?;
            let change = self.round_change(&all, round).await?;
            changes.push(change);
            joined = Some(all);
            if change.changed <= SETTLED {
                break;
            }
        }
        let rounds = self.rounds_run(changes);
        Ok((joined.expect("an ensemble has a round"), rounds))
    }

    /// The rounds a split run's shares inverted so far (`parts`, from its first member on),
    /// joined, with what each round changed, where the rule stops there (or every member has
    /// run); None where another round is due.
    pub async fn settled(&self, parts: Vec<Members>) -> Result<Option<(Members, EnsembleRounds)>> {
        let done: usize = parts.iter().map(|p| p.range.count).sum();
        let joined = ensemble::join_first(self.shape(), parts, done)?;
        let run: Vec<MemberRange> = rounds(self.members)
            .into_iter()
            .take_while(|r| r.first < done)
            .collect();
        let Some(&last) = run.last().filter(|r| r.first + r.count == done) else {
            return Err(crate::error::Error::Config(format!(
                "{done} members end no round of the ensemble's stopping rule"
            )));
        };
        // The last round decides; the earlier rounds' changes are only for the report.
        let change = self.round_change(&joined, last).await?;
        if change.changed > SETTLED && done < self.members {
            return Ok(None);
        }
        let mut changes = Vec::new();
        for &round in &run[..run.len() - 1] {
            changes.push(self.round_change(&joined, round).await?);
        }
        changes.push(change);
        Ok(Some((joined, self.rounds_run(changes))))
    }

    fn rounds_run(&self, rounds: Vec<RoundChange>) -> EnsembleRounds {
        EnsembleRounds {
            members: rounds.last().map_or(0, |r| r.members),
            most: self.members,
            rounds,
            rule: RULE.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_cover_the_ensemble_once_in_order() {
        for members in [1, 9, 10, 11, 15, 29, 30, 31] {
            let r = rounds(members);
            assert_eq!(r[0].first, 0);
            assert!(r[0].count == FIRST_ROUND.min(members));
            assert!(
                r.windows(2)
                    .all(|w| w[0].first + w[0].count == w[1].first && w[1].count <= ROUND)
            );
            assert_eq!(r.iter().map(|r| r.count).sum::<usize>(), members, "{members}");
        }
    }
}

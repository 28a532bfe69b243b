//! An ensemble inverted in shares: each share's members, and their joining into the whole (a
//! page's workers each invert a range of members; `assess_members` joins them).
use serde::{Deserialize, Serialize};

use ts_rs::TS;

use crate::config::MemberRange;
use crate::error::{Error, Result};

/// The inverted members of one range: relaxed rows, softmax probabilities and the mean loss curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Members {
    pub range: MemberRange,
    pub x: Vec<f32>,
    pub probs: Vec<f32>,
    pub loss_curve: Vec<(usize, f64)>,
    /// Steps each member took before it stopped (`attack::inversion::driver::EarlyStop`).
    pub steps: Vec<usize>,
}

/// What an ensemble run by its stopping rule (`assess::stopping`) did: the members it pooled, of the most it would have, and after each
/// round the share of the batch's cells that changed among those either pooling calls sure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct EnsembleRounds {
    pub members: usize,
    pub most: usize,
    pub rounds: Vec<RoundChange>,
    pub rule: String,
}

/// One round: the members pooled after it, and the share of cells it changed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct RoundChange {
    pub members: usize,
    pub changed: f64,
}

/// What every member of an ensemble holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub members: usize,
    /// Dummy rows per member, and their width (a regression's label included)...
    pub rows: usize,
    pub d: usize,
    /// ...and the relaxation's (its probabilities' width: the network's inputs).
    pub inputs: usize,
    /// Whether members carry probabilities (relaxed rows).
    pub relaxed: bool,
}

/// A range of members must be some of the ensemble's.
pub fn check_range(range: MemberRange, members: usize) -> Result<()> {
    if range.count == 0 || range.first.checked_add(range.count).is_none_or(|end| end > members) {
        return Err(Error::Config(format!(
            "members {}..{} are not within the {members} of this attack",
            range.first,
            range.first.saturating_add(range.count),
        )));
    }
    Ok(())
}

/// Join the inverted ranges into the whole ensemble, in member order. Shares from elsewhere (a
/// page's workers) are checked whole: every member once, and rows of the right length.
pub fn join(shape: Shape, parts: Vec<Members>) -> Result<Members> {
    join_first(shape, parts, shape.members)
}

/// The same for the ensemble's first `members` members (the rounds its stopping rule has run,
/// `assess::stopping`): the ranges must cover them once, in order.
pub fn join_first(shape: Shape, mut parts: Vec<Members>, members: usize) -> Result<Members> {
    parts.sort_by_key(|p| p.range.first);
    let len = shape.rows * shape.d;
    let mut next = 0;
    for p in &parts {
        check_range(p.range, shape.members)?;
        if p.range.first != next {
            return Err(Error::Config(format!(
                "the inverted members do not cover the ensemble of {} once, in order",
                shape.members
            )));
        }
        let want = p.range.count.saturating_mul(len);
        let want_probs = match shape.relaxed {
            true => p.range.count.saturating_mul(shape.rows * shape.inputs),
            false => 0,
        };
        if p.steps.len() != p.range.count {
            return Err(Error::Config(format!(
                "members {}..{} report the steps of {} members",
                p.range.first,
                p.range.first + p.range.count,
                p.steps.len()
            )));
        }
        if p.x.len() != want || p.probs.len() != want_probs {
            return Err(Error::Config(format!(
                "members {}..{} hold {} values and {} probabilities; {} rows of {} columns need {want} and {want_probs}",
                p.range.first,
                p.range.first + p.range.count,
                p.x.len(),
                p.probs.len(),
                p.range.count * shape.rows,
                shape.d
            )));
        }
        next += p.range.count;
    }
    if next != members {
        return Err(Error::Config(format!("{next} of {members} members were inverted")));
    }
    Ok(Members {
        range: MemberRange {
            first: 0,
            count: members,
        },
        x: parts.iter().flat_map(|p| p.x.iter().copied()).collect(),
        probs: parts.iter().flat_map(|p| p.probs.iter().copied()).collect(),
        loss_curve: join_loss_curves(&parts, members),
        steps: parts.iter().flat_map(|p| p.steps.iter().copied()).collect(),
    })
}

/// The ensemble's first `shape.members` members, from shares that may cover more of it (a split
/// run's shadow client, inverted whole before the client's rounds stopped at fewer,
/// `assess::fallback`). Each share is checked whole before it is cut; a cut share keeps its loss
/// curve (the mean over all its members).
pub fn join_leading(shape: Shape, mut parts: Vec<Members>) -> Result<Members> {
    parts.sort_by_key(|p| p.range.first);
    let keep = shape.members;
    let len = shape.rows * shape.d;
    let probs_len = if shape.relaxed { shape.rows * shape.inputs } else { 0 };
    let mut kept = Vec::new();
    for mut p in parts {
        let (first, count) = (p.range.first, p.range.count);
        if p.x.len() != count.saturating_mul(len) || p.probs.len() != count.saturating_mul(probs_len) {
            return Err(Error::Config(format!(
                "members {first}..{} hold {} values and {} probabilities, not {count} members' rows",
                first.saturating_add(count),
                p.x.len(),
                p.probs.len()
            )));
        }
        if first >= keep {
            continue;
        }
        let count = count.min(keep - first);
        p.x.truncate(count * len);
        p.probs.truncate(count * probs_len);
        p.steps.truncate(count);
        p.range.count = count;
        kept.push(p);
    }
    join_first(shape, kept, keep)
}

/// The mean loss over the whole ensemble at the steps every share reported: each share's mean
/// weighted by its member count. A share whose members all stopped early counts at its last.
pub fn join_loss_curves(parts: &[Members], members: usize) -> Vec<(usize, f64)> {
    let Some(longest) = parts.iter().max_by_key(|p| p.loss_curve.last().map_or(0, |l| l.0)) else {
        return Vec::new();
    };
    longest
        .loss_curve
        .iter()
        .filter_map(|&(step, _)| {
            let mut total = 0.0;
            for p in parts {
                let &(last, last_loss) = p.loss_curve.last()?;
                let loss = if step > last {
                    last_loss
                } else {
                    p.loss_curve.iter().find(|&&(s, _)| s == step)?.1
                };
                total += loss * p.range.count as f64;
            }
            Some((step, total / members.max(1) as f64))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(first: usize, count: usize, shape: Shape) -> Members {
        let (len, probs) = (shape.rows * shape.d, shape.rows * shape.inputs);
        Members {
            range: MemberRange { first, count },
            x: (first * len..(first + count) * len).map(|v| v as f32).collect(),
            probs: (first * probs..(first + count) * probs).map(|v| -(v as f32)).collect(),
            loss_curve: vec![(10, 1.0)],
            steps: (first..first + count).collect(),
        }
    }

    #[test]
    fn the_leading_members_of_longer_shares_are_those_inverted_alone() {
        let whole = Shape {
            members: 30,
            rows: 3,
            d: 4,
            inputs: 2,
            relaxed: true,
        };
        let ten = Shape { members: 10, ..whole };
        let shares = vec![share(16, 14, whole), share(0, 8, whole), share(8, 8, whole)];
        let leading = join_leading(ten, shares).unwrap();
        let alone = join_first(ten, vec![share(0, 8, whole), share(8, 2, whole)], 10).unwrap();
        assert_eq!(leading.x, alone.x);
        assert_eq!(leading.probs, alone.probs);
        assert_eq!(leading.steps, (0..10).collect::<Vec<_>>());
        assert_eq!(leading.range, MemberRange { first: 0, count: 10 });
        // A share too short for its range is refused, not cut to fit.
        let mut short = share(0, 16, whole);
        short.x.pop();
        assert!(join_leading(ten, vec![short, share(16, 14, whole)]).is_err());
        // Shares that leave a gap before the tenth member are refused too.
        assert!(join_leading(ten, vec![share(0, 8, whole), share(9, 21, whole)]).is_err());
    }
}

//! Where and how a run executes, decided here and nowhere else: how an ensemble is split over a
//! page's workers, how their progress joins into one, and which backend `auto` takes, by timing a
//! few steps of the actual problem on each candidate. The JavaScript shells only carry these
//! decisions out.
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub mod cost;
pub mod limits;

use crate::attack::inversion::driver::Progress;
use crate::config::{AttackConfig, AttackKind, MemberRange};
use crate::runtime::{BackendKind, MeasuredRate};
use crate::table::Dataset;

/// At most this many workers split one ensemble (and never more than its members).
pub const MAX_WORKERS: usize = 8;
/// Every worker of a split run parses the whole table: past this size only one worker runs.
pub const SPLIT_MAX_BYTES: usize = 16 * 1024 * 1024;
/// Steps a probe runs before timing (the first steps pay shader compilation and allocation)...
pub const PROBE_WARMUP_STEPS: usize = 2;
/// ...and steps a CPU times (one worker's share: each step done when it returns), unless the
/// first two show the rest would take longer than
pub const PROBE_STEPS: usize = 8;
/// this many seconds (a software GPU): then those two are the measurement.
pub const PROBE_SECONDS: f64 = 1.0;
/// Steps a GPU times, with the same cut: its steps are queued and the probe's last readback waits
/// for them all, so that wait is timed once over the steps. In Chromium on an H200 at B = 32, 8
/// steps timed 1.6 ms a step where a run's steps take 0.55, and `auto` took the CPU's 8 workers,
/// whose attack took 1.7 times WebGPU's there (docs/results/webgpu.md).
pub const PROBE_GPU_STEPS: usize = 48;

/// The steps a probe on `kind` times.
pub fn probe_steps(kind: BackendKind) -> usize {
    match kind {
        BackendKind::Cpu => PROBE_STEPS,
        _ => PROBE_GPU_STEPS,
    }
}

/// The ranges of members each of `workers` workers inverts: contiguous, in order, as even as can
/// be. One range (no split) for the single-run attacks, small ensembles or large tables.
pub fn shares(config: &AttackConfig, workers: usize, csv_bytes: usize) -> Vec<MemberRange> {
    let members = config.members();
    if members == 0 {
        return Vec::new();
    }
    let k = if config.attacker().splits_over_workers() && csv_bytes <= SPLIT_MAX_BYTES {
        workers.clamp(1, MAX_WORKERS).min(members)
    } else {
        1
    };
    split(
        MemberRange {
            first: 0,
            count: members,
        },
        k,
    )
}

/// Each of `stages` in `k` pieces (`split`): a split run's stages or rounds over its workers.
pub fn split_each(stages: Vec<MemberRange>, k: usize) -> Vec<Vec<MemberRange>> {
    stages.into_iter().map(|stage| split(stage, k)).collect()
}

/// `range` in `k` contiguous pieces, in order, as even as can be (fewer where it has fewer
/// members).
pub fn split(range: MemberRange, k: usize) -> Vec<MemberRange> {
    let (members, k) = (range.count, k.clamp(1, range.count.max(1)));
    (0..k)
        .map(|i| {
            let first = i * members / k;
            MemberRange {
                first: range.first + first,
                count: (i + 1) * members / k - first,
            }
        })
        .filter(|r| r.count > 0)
        .collect()
}

/// The progress of a split run from each share's latest report: the slowest share's step, and the
/// ensemble's mean loss (each share's mean weighted by its members). None until every share has
/// reported.
pub fn combine_progress(latest: &[Option<Progress>], shares: &[MemberRange]) -> Option<Progress> {
    let reports: Vec<&Progress> = latest.iter().map(Option::as_ref).collect::<Option<_>>()?;
    let slowest = reports.iter().min_by_key(|p| p.step)?;
    let members: usize = shares.iter().map(|s| s.count).sum();
    // Loss values at different steps do not average into one; report it only when they agree.
    let aligned = reports.iter().all(|p| p.step == slowest.step && p.loss.is_some());
    let loss = aligned.then(|| {
        reports
            .iter()
            .zip(shares)
            .map(|(p, s)| p.loss.unwrap_or(0.0) * s.count as f64)
            .sum::<f64>()
            / members.max(1) as f64
    });
    Some(Progress {
        phase: slowest.phase.clone(),
        step: slowest.step,
        of: slowest.of,
        loss,
        elapsed: reports.iter().map(|p| p.elapsed).fold(0.0, f64::max),
    })
}

/// What `auto` chose and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Decision {
    pub kind: BackendKind,
    pub reason: String,
    pub rates: Vec<MeasuredRate>,
}

/// The faster of the measured candidates. Ties go to the CPU (no device to share, no readback).
pub fn decide(rates: Vec<MeasuredRate>) -> Option<Decision> {
    let best = rates
        .iter()
        .filter(|r| r.steps_per_second.is_finite() && r.steps_per_second > 0.0)
        .max_by(|a, b| {
            a.steps_per_second
                .total_cmp(&b.steps_per_second)
                .then((a.kind == BackendKind::Cpu).cmp(&(b.kind == BackendKind::Cpu)))
        })?
        .clone();
    let describe = |r: &MeasuredRate| {
        let place = match (r.kind, &r.adapter) {
            (BackendKind::Cpu, _) if r.workers > 1 => format!("the CPU ({} workers)", r.workers),
            (BackendKind::Cpu, _) => "the CPU".to_string(),
            (k, Some(a)) => format!("{} ({a})", k.name()),
            (k, None) => k.name().to_string(),
        };
        format!("{place} {:.1} steps/s", r.steps_per_second)
    };
    let others: Vec<&MeasuredRate> = rates.iter().filter(|r| r.kind != best.kind).collect();
    if let Some(failed) = others.iter().find(|r| r.error.is_some()) {
        let reason = format!(
            "auto chose {}: {} failed while being timed: {}",
            best.kind.name(),
            failed.kind.name(),
            failed.error.as_deref().unwrap_or_default()
        );
        return Some(Decision {
            kind: best.kind,
            reason,
            rates,
        });
    }
    let reason = match others
        .iter()
        .map(|r| r.steps_per_second)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
    {
        Some(next) if next > 0.0 => format!(
            "auto chose {} by measurement: {}, against {} ({:.1}× faster)",
            best.kind.name(),
            describe(&best),
            others.iter().map(|r| describe(r)).collect::<Vec<_>>().join(", "),
            best.steps_per_second / next
        ),
        _ => format!("auto chose {}: {}", best.kind.name(), describe(&best)),
    };
    Some(Decision {
        kind: best.kind,
        reason,
        rates,
    })
}

/// What makes two runs the same problem for the speed of a step: the adapter, the attack and the
/// shapes it works on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProblemKey {
    pub adapter: Option<String>,
    pub attack: AttackKind,
    pub members: usize,
    /// Dummy rows per member and the local steps each step unrolls: what a step costs.
    pub batch: usize,
    pub local_steps: usize,
    pub sizes: Vec<usize>,
    pub workers: usize,
}

impl ProblemKey {
    pub fn of(adapter: Option<String>, dataset: &Dataset, config: &AttackConfig, workers: usize) -> ProblemKey {
        ProblemKey {
            adapter,
            attack: config.kind(),
            members: config.members(),
            batch: config.rows_per_member(),
            local_steps: config.local_steps(),
            sizes: config.layer_sizes(dataset),
            workers,
        }
    }
}

/// Decisions already measured, per problem.
#[derive(Debug, Default)]
pub struct Decisions(HashMap<ProblemKey, Decision>);

impl Decisions {
    pub fn get(&self, key: &ProblemKey) -> Option<&Decision> {
        self.0.get(key)
    }
    pub fn insert(&mut self, key: ProblemKey, decision: Decision) {
        self.0.insert(key, decision);
    }
}

/// How a page runs one attack: which backend, the measurements still to take, and the shares of a
/// split CPU run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunPlan {
    /// None while `probe` has measurements to take.
    pub kind: Option<BackendKind>,
    /// Time the GPU on the whole problem, and one CPU worker on `cpu_share`, then `decide`.
    pub probe: Option<Probe>,
    /// The members each CPU worker inverts (one share: no split).
    pub shares: Vec<MemberRange>,
    /// Helper workers the run needs.
    pub helpers: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Probe {
    pub warmup: usize,
    /// Steps timed on one CPU worker's share (`PROBE_STEPS`)...
    pub steps: usize,
    /// ...and on the GPU (`PROBE_GPU_STEPS`).
    pub gpu_steps: usize,
    /// What the GPU times: the whole ensemble.
    pub whole: MemberRange,
    /// The share one CPU worker times: what each of the workers would run.
    pub cpu_share: MemberRange,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(kind: BackendKind, sps: f64, workers: usize) -> MeasuredRate {
        MeasuredRate {
            kind,
            adapter: (kind != BackendKind::Cpu).then(|| "google swiftshader".into()),
            steps_per_second: sps,
            steps: 8,
            workers,
            error: None,
        }
    }

    #[test]
    fn shares_cover_the_ensemble_once_in_order() {
        let config = AttackConfig::default();
        let s = shares(&config, 4, 1000);
        assert_eq!(s.iter().map(|r| r.count).collect::<Vec<_>>(), vec![7, 8, 7, 8]);
        assert!(s.windows(2).all(|w| w[0].first + w[0].count == w[1].first));
        assert_eq!(shares(&config, 64, 1000).len(), MAX_WORKERS);
        assert_eq!(shares(&config, 4, SPLIT_MAX_BYTES + 1).len(), 1);
        let cosine = AttackConfig {
            attack: crate::config::AttackSpec::Cosine,
            ..config.clone()
        };
        assert_eq!(shares(&cosine, 4, 1000), vec![MemberRange { first: 0, count: 1 }]);
        let random = AttackConfig {
            attack: crate::config::AttackSpec::Random,
            ..config
        };
        assert!(shares(&random, 4, 1000).is_empty());
    }

    #[test]
    fn progress_joins_at_the_slowest_share_with_a_weighted_loss() {
        let p = |step, loss| {
            Some(Progress {
                phase: "invert".into(),
                step,
                of: 100,
                loss: Some(loss),
                elapsed: step as f64,
            })
        };
        let shares = [MemberRange { first: 0, count: 1 }, MemberRange { first: 1, count: 3 }];
        assert_eq!(combine_progress(&[p(10, 1.0), None], &shares), None);
        let joined = combine_progress(&[p(10, 1.0), p(10, 0.2)], &shares).unwrap();
        assert_eq!(joined.step, 10);
        assert!((joined.loss.unwrap() - 0.4).abs() < 1e-12);
        let ahead = combine_progress(&[p(20, 1.0), p(10, 0.2)], &shares).unwrap();
        assert_eq!((ahead.step, ahead.loss), (10, None));
    }

    #[test]
    fn auto_takes_the_faster_backend_and_says_why() {
        let d = decide(vec![rate(BackendKind::Wgpu, 0.5, 1), rate(BackendKind::Cpu, 60.0, 2)]).unwrap();
        assert_eq!(d.kind, BackendKind::Cpu);
        assert!(d.reason.contains("120.0× faster"), "{}", d.reason);
        assert!(d.reason.contains("google swiftshader"), "{}", d.reason);
        let d = decide(vec![rate(BackendKind::Wgpu, 900.0, 1), rate(BackendKind::Cpu, 60.0, 2)]).unwrap();
        assert_eq!(d.kind, BackendKind::Wgpu);
        // A GPU that failed while being timed loses, and the reason says so.
        let failed = MeasuredRate {
            steps_per_second: 0.0,
            error: Some("the device was lost".into()),
            ..rate(BackendKind::Wgpu, 0.0, 1)
        };
        let d = decide(vec![failed, rate(BackendKind::Cpu, 60.0, 2)]).unwrap();
        assert_eq!(d.kind, BackendKind::Cpu);
        assert!(
            d.reason.contains("wgpu failed while being timed: the device was lost"),
            "{}",
            d.reason
        );
        let tie = decide(vec![rate(BackendKind::Wgpu, 60.0, 1), rate(BackendKind::Cpu, 60.0, 2)]).unwrap();
        assert_eq!(tie.kind, BackendKind::Cpu);
        assert!(decide(vec![rate(BackendKind::Wgpu, f64::NAN, 1)]).is_none());
    }
}

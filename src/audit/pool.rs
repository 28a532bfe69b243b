//! An audit's cells run side by side (the page's workers each take the next cell): the plan a
//! coordinator dispatches from, and the progress of the cells running at once.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::grid::Cell;
use crate::config::{AttackConfig, AttackKind};

/// Where an audit is: cells done of the share, and the current cell's progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct AuditProgress {
    pub done: usize,
    pub cells: usize,
    /// The cell running: its setting and attack.
    pub current: String,
    pub step: usize,
    pub steps: usize,
    /// The share of the whole work done, 0..1, weighting each cell by its cost.
    pub fraction: f64,
}

/// A cell's rough cost, for progress: members × rows × local steps × iterations (a random guess
/// costs a unit).
pub fn cell_cost(cell: &Cell) -> f64 {
    config_cost(&cell.config)
}

/// An attack's rough cost (`cell_cost`).
pub fn config_cost(c: &AttackConfig) -> f64 {
    let inversion = c.members() as f64 * c.rows_per_member() as f64 * c.local_steps() as f64 * c.iterations as f64;
    1.0 + inversion + (c.training_epochs as f64) * 1e5
}

/// One cell as a dispatcher sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct PlannedCell {
    pub index: usize,
    /// "B = 32 tableak, batch 2".
    pub label: String,
    pub attack: AttackKind,
    /// Its share of the whole audit's work (the shares sum to 1).
    pub weight: f64,
    pub steps: usize,
}

/// How an audit runs over `workers` workers: its cells, dearest first (so the last cell to finish
/// is a cheap one), and how many workers take part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct AuditPlan {
    pub cells: Vec<PlannedCell>,
    pub workers: usize,
}

/// A cell being run: its index and step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct RunningCell {
    pub index: usize,
    pub step: usize,
    /// The steps of all the cell's attack's stages (its progress's `of`; the plan's steps where
    /// absent).
    #[serde(default)]
    #[ts(optional)]
    pub of: Option<usize>,
}

pub fn cell_label(cell: &Cell) -> String {
    format!("{} {}, batch {}", cell.points[0].label(), cell.attack, cell.batch + 1)
}

pub fn plan(cells: &[Cell], workers: usize) -> AuditPlan {
    let total: f64 = cells.iter().map(cell_cost).sum::<f64>().max(f64::MIN_POSITIVE);
    let mut planned: Vec<PlannedCell> = cells
        .iter()
        .map(|c| PlannedCell {
            index: c.index,
            label: cell_label(c),
            attack: c.config.kind(),
            weight: cell_cost(c) / total,
            steps: c.config.iterations,
        })
        .collect();
    planned.sort_by(|a, b| b.weight.total_cmp(&a.weight).then(a.index.cmp(&b.index)));
    AuditPlan {
        workers: workers.clamp(1, planned.len().max(1)),
        cells: planned,
    }
}

/// The whole audit's progress from the cells done and those running.
pub fn progress(plan: &AuditPlan, done: &[usize], running: &[RunningCell]) -> AuditProgress {
    let cell = |i: usize| plan.cells.iter().find(|c| c.index == i);
    let finished: f64 = done.iter().filter_map(|&i| cell(i)).map(|c| c.weight).sum();
    let partial: f64 = running
        .iter()
        .filter_map(|r| {
            cell(r.index).map(|c| {
                let of = r.of.unwrap_or(c.steps).max(1);
                c.weight * r.step.min(of) as f64 / of as f64
            })
        })
        .sum();
    let first = running.first().and_then(|r| cell(r.index));
    AuditProgress {
        done: done.len(),
        cells: plan.cells.len(),
        current: running
            .iter()
            .filter_map(|r| cell(r.index).map(|c| c.label.clone()))
            .collect::<Vec<_>>()
            .join("; "),
        step: running.first().map_or(0, |r| r.step),
        steps: first.map_or(0, |c| c.steps),
        fraction: (finished + partial).clamp(0.0, 1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::AuditOptions;

    #[test]
    fn progress_weighs_cells_by_cost_and_reaches_one() {
        let cells = AuditOptions::quick().grid().unwrap();
        let p = plan(&cells, 4);
        assert_eq!(p.workers, 4);
        assert!((p.cells.iter().map(|c| c.weight).sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(p.cells.windows(2).all(|w| w[0].weight >= w[1].weight));
        assert_eq!(progress(&p, &[], &[]).fraction, 0.0);
        let dear = &p.cells[0];
        let half = progress(
            &p,
            &[],
            &[RunningCell {
                index: dear.index,
                step: dear.steps / 2,
                of: None,
            }],
        );
        assert!((half.fraction - dear.weight * (dear.steps / 2) as f64 / dear.steps as f64).abs() < 1e-9);
        assert_eq!(half.current, dear.label);
        let all: Vec<usize> = p.cells.iter().map(|c| c.index).collect();
        assert!((progress(&p, &all, &[]).fraction - 1.0).abs() < 1e-9);
        // A random guess is cheap: it weighs far less than a TabLeak ensemble (the cells last in
        // the plan are random guesses at the reference setting).
        let random = p.cells.last().unwrap();
        assert_eq!(random.attack, AttackKind::Random);
        assert!(random.weight * 100.0 < dear.weight);
    }
}

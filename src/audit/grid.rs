//! What an audit runs: the studies a data owner asks about (batch size, noise, clients averaged,
//! FedAvg's local training, the FedAvg client's size, training before the attack), each a line of settings around one
//! reference setting, times the attacks compared, times the batches averaged. Every cell is one
//! attack on one batch, independent of the others: a shard is any subset, and the same cell gives
//! the same result wherever it runs.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::config::{AttackConfig, AttackKind};
use crate::error::{Error, Result};
use crate::options::{ProtocolKind, RunOptions};
use crate::table::Dataset;

/// Most batches an audit averages per setting.
pub const MAX_BATCHES: usize = 100;

/// Most cells a grid holds (each is a whole attack: the CLI's default grid at `MAX_BATCHES` is
/// 5 400). Checked from the settings' lengths before the grid is built: a share file of a few
/// kilobytes could otherwise state a grid of millions of cells (FedAvg's study is a product).
pub const MAX_CELLS: usize = 10_000;

/// The grid of an audit. An empty list leaves its study out. Each study varies one thing from the
/// reference setting (FedSGD, a batch of `reference_batch` rows, one client, no defence, the
/// network at initialisation); everything else (the table's reading, the attack's steps, members
/// and network, the first seed) comes from `run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct AuditOptions {
    pub run: RunOptions,
    pub attacks: Vec<AttackKind>,
    /// Batches per setting: batch k is drawn with seed `run.seed + k`, the same for every attack.
    pub batches: usize,
    /// The batch (FedSGD) or client's rows (FedAvg) the studies other than batch size hold fixed.
    pub reference_batch: usize,
    pub batch_sizes: Vec<usize>,
    /// Gaussian noise multipliers σ, each with clipping to `clip`.
    pub noise_scales: Vec<f64>,
    pub clip: f64,
    /// Clients averaged before the server sees the update (secure aggregation).
    pub clients: Vec<usize>,
    /// FedAvg: local epochs × local batch sizes (client lr from `run.client_lr`).
    pub local_epochs: Vec<usize>,
    pub local_batches: Vec<usize>,
    /// Epochs of training on the table before the attacked round.
    pub training_epochs: Vec<usize>,
    /// FedAvg: the client's rows (its whole local dataset), each at every one of `client_epochs`
    /// in local batches of `client_batch`, trained as `run` states (optimiser, order): at what
    /// size the table stops leaking through this recipe. Sizes above the table's rows are left out.
    /// Options that leave these out run no such study (a grid written before it keeps its
    /// cells); the CLI's, the page's and Python's grids start from `default()`/`quick()`.
    #[serde(default)]
    pub client_rows: Vec<usize>,
    #[serde(default)]
    pub client_epochs: Vec<usize>,
    pub client_batch: usize,
    /// Rounds of training the noise study's ε is accounted over (`client::accountant`).
    #[ts(type = "number")]
    pub rounds: u64,
    /// The chance that a client takes part in a round, for that account.
    pub sample_rate: f64,
    /// Canaries run through each noise setting's DP-FedAvg over those rounds, as many more held
    /// out (`client::canary`): an ε measured beside the accountant's. 0 runs none.
    #[serde(default)]
    #[ts(as = "Option<usize>", optional)]
    pub canaries: usize,
}

impl Default for AuditOptions {
    /// The CLI's audit: the paper's batch sizes, the reference's noise scales, up to 8 clients,
    /// FedAvg's cheaper half of the reference grid, a little training; 5 batches each.
    fn default() -> Self {
        AuditOptions {
            run: RunOptions::default(),
            attacks: vec![AttackKind::Tableak, AttackKind::Cosine, AttackKind::Random],
            batches: 5,
            reference_batch: 32,
            batch_sizes: vec![8, 32, 128],
            noise_scales: vec![0.0, 0.001, 0.01, 0.1],
            clip: 1.0,
            clients: vec![1, 2, 4, 8],
            local_epochs: vec![1, 5],
            local_batches: vec![32, 8],
            training_epochs: vec![0, 1, 5],
            client_rows: vec![32, 64, 128, 256, 512],
            client_epochs: vec![1, 5],
            client_batch: 32,
            rounds: DEFAULT_ROUNDS,
            sample_rate: 1.0,
            canaries: 0,
        }
    }
}

/// The rounds an audit accounts ε over unless told: a short training run.
pub const DEFAULT_ROUNDS: u64 = 100;

impl AuditOptions {
    /// A grid a browser tab finishes in minutes: fewer batches and points.
    pub fn quick() -> Self {
        AuditOptions {
            batches: 2,
            noise_scales: vec![0.0, 0.01, 0.1],
            clients: vec![1, 4],
            local_epochs: vec![1, 5],
            local_batches: vec![32],
            training_epochs: vec![0, 2],
            client_rows: vec![32, 128],
            client_epochs: vec![1],
            ..AuditOptions::default()
        }
    }
}

/// The parameters of the network `run` states on `dataset`'s encoding: the canaries' dimension.
pub fn model_parameters(run: &RunOptions, dataset: &Dataset) -> usize {
    let mut sizes = vec![dataset.d()];
    sizes.extend(&run.hidden);
    sizes.push(run.head.outputs(dataset.classes.len()));
    sizes.windows(2).map(|w| w[0] * w[1] + w[1]).sum()
}

/// One setting of one study.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "study", rename_all = "camelCase")]
pub enum Point {
    BatchSize { batch: usize },
    Noise { sigma: f64 },
    Clients { clients: usize },
    Fedavg { epochs: usize, local_batch: usize },
    Training { epochs: usize },
    ClientRows { rows: usize, epochs: usize },
}

/// The studies, in the order an audit reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum Study {
    BatchSize,
    Noise,
    Clients,
    Fedavg,
    Training,
    ClientRows,
}

pub const STUDIES: [Study; 6] = [
    Study::BatchSize,
    Study::Noise,
    Study::Clients,
    Study::Fedavg,
    Study::ClientRows,
    Study::Training,
];

impl Point {
    pub fn study(&self) -> Study {
        match self {
            Point::BatchSize { .. } => Study::BatchSize,
            Point::Noise { .. } => Study::Noise,
            Point::Clients { .. } => Study::Clients,
            Point::Fedavg { .. } => Study::Fedavg,
            Point::Training { .. } => Study::Training,
            Point::ClientRows { .. } => Study::ClientRows,
        }
    }

    /// The point as a short label: "B = 32", "σ = 0.01", "K = 4", "E = 5, b = 8", "5 epochs",
    /// "n = 128, E = 5".
    pub fn label(&self) -> String {
        match *self {
            Point::BatchSize { batch } => format!("B = {batch}"),
            Point::Noise { sigma } => format!("σ = {sigma}"),
            Point::Clients { clients } => format!("K = {clients}"),
            Point::Fedavg { epochs, local_batch } => format!("E = {epochs}, b = {local_batch}"),
            Point::Training { epochs } => format!("{epochs} epoch{}", if epochs == 1 { "" } else { "s" }),
            Point::ClientRows { rows, epochs } => format!("n = {rows}, E = {epochs}"),
        }
    }

    /// The run options of this point, from the audit's.
    fn options(&self, audit: &AuditOptions) -> RunOptions {
        let mut o = RunOptions {
            batch_size: audit.reference_batch,
            protocol: ProtocolKind::Fedsgd,
            clients: 1,
            training_epochs: 0,
            clip: None,
            noise: 0.0,
            fake_gradients: None,
            ..audit.run.clone().without_local_training()
        };
        let fedavg = |o: &mut RunOptions, rows: usize, epochs: usize, local_batch: usize| {
            *o = RunOptions {
                batch_size: rows,
                ..o.clone().with_local_training_of(&audit.run)
            };
            o.protocol = ProtocolKind::Fedavg;
            o.local_epochs = epochs;
            o.local_batch = local_batch;
        };
        match *self {
            Point::BatchSize { batch } => o.batch_size = batch,
            Point::Noise { sigma } => {
                o.clip = Some(audit.clip);
                o.noise = sigma;
            }
            Point::Clients { clients } => o.clients = clients,
            Point::Fedavg { epochs, local_batch } => fedavg(&mut o, audit.reference_batch, epochs, local_batch),
            Point::ClientRows { rows, epochs } => fedavg(&mut o, rows, epochs, audit.client_batch),
            Point::Training { epochs } => o.training_epochs = epochs,
        }
        o
    }
}

/// One attack on one batch, and every study point it stands for (the reference setting appears
/// in several studies but runs once).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Cell {
    pub index: usize,
    pub attack: AttackKind,
    /// Which of the audit's batches (0-based).
    pub batch: usize,
    pub points: Vec<Point>,
    pub config: AttackConfig,
}

impl AuditOptions {
    /// The study points, in report order; the batch-size study always holds the reference batch
    /// (the other studies vary from it, and the columns' leakage is read there).
    pub fn points(&self) -> Vec<Point> {
        let mut batch_sizes = self.batch_sizes.clone();
        if !batch_sizes.is_empty() && !batch_sizes.contains(&self.reference_batch) {
            batch_sizes.push(self.reference_batch);
        }
        if batch_sizes.is_empty() {
            batch_sizes.push(self.reference_batch);
        }
        batch_sizes.sort_unstable();
        batch_sizes.dedup();
        let sorted_f = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(f64::total_cmp);
            v.dedup();
            v
        };
        let sorted = |v: &[usize]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v.dedup();
            v
        };
        let mut points: Vec<Point> = batch_sizes
            .into_iter()
            .map(|batch| Point::BatchSize { batch })
            .collect();
        points.extend(
            sorted_f(&self.noise_scales)
                .into_iter()
                .map(|sigma| Point::Noise { sigma }),
        );
        points.extend(
            sorted(&self.clients)
                .into_iter()
                .map(|clients| Point::Clients { clients }),
        );
        for epochs in sorted(&self.local_epochs) {
            // Largest local batch first: fewer local steps, the cheaper and less leaky end.
            for &local_batch in sorted(&self.local_batches).iter().rev() {
                points.push(Point::Fedavg { epochs, local_batch });
            }
        }
        for epochs in sorted(&self.client_epochs) {
            for &rows in &sorted(&self.client_rows) {
                points.push(Point::ClientRows { rows, epochs });
            }
        }
        points.extend(
            sorted(&self.training_epochs)
                .into_iter()
                .map(|epochs| Point::Training { epochs }),
        );
        points
    }

    /// Leave out the client sizes above a table's `rows` (a client cannot hold more rows than the
    /// table); returns those left out.
    pub fn fit_table(&mut self, rows: usize) -> Vec<usize> {
        let over: Vec<usize> = self.client_rows.iter().copied().filter(|&r| r > rows).collect();
        self.client_rows.retain(|&r| r <= rows);
        over
    }

    /// The attack an audit's verdict reads: TabLeak where it ran (the strongest the grid can hold),
    /// else the first named that is not a guess; none when only guessing ran.
    pub fn judged(&self) -> Option<AttackKind> {
        if self.attacks.contains(&AttackKind::Tableak) {
            return Some(AttackKind::Tableak);
        }
        self.attacks.iter().copied().find(|a| !a.is_guess())
    }

    fn validate(&self) -> Result<()> {
        let fail = |m: String| Err(Error::Config(format!("audit: {m}")));
        if self.batches == 0 || self.batches > MAX_BATCHES {
            return fail(format!("batches {} must be between 1 and {MAX_BATCHES}", self.batches));
        }
        if self.attacks.is_empty() {
            return fail("name at least one attack".into());
        }
        if self.run.seed.checked_add(self.batches as u64 - 1).is_none() {
            return fail(format!(
                "seed {} with {} batches runs past the largest seed",
                self.run.seed, self.batches
            ));
        }
        if (self.local_epochs.is_empty()) != (self.local_batches.is_empty()) {
            return fail("FedAvg's study needs both local epochs and local batch sizes".into());
        }
        if !self.client_rows.is_empty() && self.client_epochs.is_empty() {
            return fail("the client-size study needs local epochs for its client sizes".into());
        }
        if !self.client_rows.is_empty() && self.client_batch == 0 {
            return fail("the client-size study's local batch must be at least one row".into());
        }
        // The points (`points()`'s count, without building FedAvg's product) × attacks × batches.
        let distinct = |v: &[usize]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v.dedup();
            v.len()
        };
        let mut noise = self.noise_scales.clone();
        noise.sort_by(f64::total_cmp);
        noise.dedup();
        let points = (distinct(&self.batch_sizes) + 1)
            .saturating_add(noise.len())
            .saturating_add(distinct(&self.clients))
            .saturating_add(distinct(&self.local_epochs).saturating_mul(distinct(&self.local_batches)))
            .saturating_add(distinct(&self.training_epochs))
            .saturating_add(distinct(&self.client_rows).saturating_mul(distinct(&self.client_epochs)));
        let cells = points.saturating_mul(self.attacks.len()).saturating_mul(self.batches);
        if cells > MAX_CELLS {
            return fail(format!(
                "the grid has up to {cells} cells ({points} settings × {} attacks × {} batches); an audit runs at most \
                 {MAX_CELLS}",
                self.attacks.len(),
                self.batches
            ));
        }
        crate::client::accountant::check_schedule(self.sample_rate, self.rounds)
            .map_err(|e| Error::Config(format!("audit: {e}")))?;
        let clip_ok = self.clip > 0.0 && self.clip.is_finite();
        if !self.noise_scales.is_empty() && !clip_ok {
            return fail(format!("the clipping norm {} must be a positive number", self.clip));
        }
        if self.canaries > 0 {
            // Their counts, before the table gives the dimension (`cells`).
            self.canary_query(2)?;
        }
        Ok(())
    }

    /// The canaries each noise setting runs, for a network of `parameters` parameters.
    pub fn canary_query(&self, parameters: usize) -> Result<crate::client::canary::CanaryQuery> {
        let query = crate::client::canary::CanaryQuery {
            inserted: self.canaries,
            held_out: None,
            dimension: parameters,
            seed: Some(self.run.seed),
        };
        query.validate(1).map_err(|e| Error::Config(format!("audit: {e}")))?;
        Ok(query)
    }

    /// Every cell of the grid, each setting checked against the table before anything runs.
    pub fn cells(&self, dataset: &Dataset) -> Result<Vec<Cell>> {
        let cells = self.grid()?;
        if self.canaries > 0 && !self.noise_scales.is_empty() {
            let parameters = model_parameters(&self.run, dataset);
            self.canary_query(parameters)?
                .validate(self.rounds)
                .map_err(|e| Error::Config(format!("audit: {e}")))?;
        }
        for cell in &cells {
            cell.config
                .validate(dataset)
                .map_err(|e| Error::Config(format!("audit at {} ({}): {e}", cell.points[0].label(), cell.attack)))?;
        }
        Ok(cells)
    }

    /// Every cell of the grid, whatever the table (what merging shares needs).
    pub fn grid(&self) -> Result<Vec<Cell>> {
        self.validate()?;
        let mut cells: Vec<Cell> = Vec::new();
        for point in self.points() {
            let options = point.options(self);
            for &attack in &self.attacks {
                for batch in 0..self.batches {
                    let config = RunOptions {
                        attack,
                        seed: options.seed + batch as u64,
                        ..options.clone()
                    }
                    .attack_config()?;
                    match cells.iter_mut().find(|c| c.config == config) {
                        Some(cell) => cell.points.push(point),
                        None => cells.push(Cell {
                            index: cells.len(),
                            attack,
                            batch,
                            points: vec![point],
                            config,
                        }),
                    }
                }
            }
        }
        Ok(cells)
    }
}

/// Share `index` of `count` of a grid (0-based, as Slurm's array index and a Kubernetes indexed
/// Job's completion index are): the cells whose index is `index` modulo `count`, so that every
/// share gets a like mix of cheap and dear settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    pub fn holds(&self, cell: usize) -> bool {
        cell % self.count == self.index
    }
}

impl std::str::FromStr for Shard {
    type Err = String;
    /// "i/n", 0 ≤ i < n.
    fn from_str(s: &str) -> std::result::Result<Shard, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?}: expected i/n, e.g. 0/4"))?;
        let parse = |v: &str| {
            v.trim()
                .parse::<usize>()
                .map_err(|_| format!("{s:?}: {v:?} is not a whole number"))
        };
        let (index, count) = (parse(i)?, parse(n)?);
        if count == 0 || index >= count {
            return Err(format!("{s:?}: the share must be 0 to n − 1 of n ≥ 1 shares"));
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_reads_tableak_where_it_ran_else_the_first_attack_that_is_not_a_guess() {
        let judged = |attacks: &[AttackKind]| {
            AuditOptions {
                attacks: attacks.to_vec(),
                ..AuditOptions::default()
            }
            .judged()
        };
        use AttackKind::*;
        assert_eq!(judged(&[Random, Cosine, Tableak]), Some(Tableak));
        assert_eq!(judged(&[Random, Dlg, Cosine]), Some(Dlg));
        assert_eq!(judged(&[Random]), None);
    }

    #[test]
    fn shards_parse_and_split_the_grid_once() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        assert!("4/4".parse::<Shard>().is_err());
        assert!("1/0".parse::<Shard>().is_err());
        assert!("x".parse::<Shard>().is_err());
        let shards: Vec<Shard> = (0..3).map(|index| Shard { index, count: 3 }).collect();
        for cell in 0..20 {
            assert_eq!(shards.iter().filter(|s| s.holds(cell)).count(), 1);
        }
    }

    #[test]
    fn a_grid_too_large_is_refused_before_it_is_built() {
        // Found by tests/prop_audit.rs: a share file of a few kilobytes stating 300 local epochs and
        // 300 local batches kept `merge` building and deduplicating millions of cells.
        let o = AuditOptions {
            local_epochs: (1..=300).collect(),
            local_batches: (1..=300).collect(),
            ..AuditOptions::default()
        };
        let err = o.grid().unwrap_err().to_string();
        assert!(
            err.contains("the grid has up to 1350375 cells (90025 settings × 3 attacks × 5 batches)"),
            "{err}"
        );
        // The CLI's grid at the most batches is well inside.
        let most = AuditOptions {
            batches: MAX_BATCHES,
            ..AuditOptions::default()
        };
        assert!(most.grid().unwrap().len() <= MAX_CELLS);
    }

    #[test]
    fn the_reference_setting_is_one_study_point_of_each_study_and_runs_once() {
        let o = AuditOptions {
            batch_sizes: vec![128, 8],
            noise_scales: vec![],
            local_epochs: vec![],
            local_batches: vec![],
            client_rows: vec![],
            client_epochs: vec![],
            ..AuditOptions::default()
        };
        let points = o.points();
        assert_eq!(
            points[..3],
            [
                Point::BatchSize { batch: 8 },
                Point::BatchSize { batch: 32 },
                Point::BatchSize { batch: 128 }
            ]
        );
        assert!(points.contains(&Point::Clients { clients: 1 }));
        assert!(points.contains(&Point::Training { epochs: 0 }));
    }
}

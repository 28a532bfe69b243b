//! Never below what the server knows without the update. Where the update says little (heavy
//! noise, fake gradients) the ensemble's cells can score below a guess from the table's marginals,
//! and an audit would read that as safety. The server cannot score its own reconstruction, but it
//! can score the same attack on a shadow client it simulates itself: rows of the table outside
//! the batch where it holds them, else drawn from the marginals it knows (`assess::shadow_rows`),
//! the labels it uses, the network it sent and the client's declared defence. On that shadow
//! batch it learns, for each kind of column, the entropy above which the marginal guess beats the
//! ensemble's cell, keeping the ensemble's cells only where the gain is sure
//! (`gain_lower_bound`), and applies those thresholds cell by cell to the real reconstruction,
//! unless the client's reconstruction explains its update far worse than the shadow's did its
//! own (`Calibration::unlike_shadow`). The guess is the table's where the server holds its rows
//! (`assess::table_guess`: rows outside the batch chosen as a set like a batch, the report's
//! `table_baseline`), else the random baseline's own draw, so thresholds that send every cell to
//! it score that baseline exactly; on the shadow batch the chosen mix scores at least as well as
//! the guess (made for the shadow as for the client), and better only by a gain it is sure of.
//! Where the server holds the table's rows, the continuous cells the thresholds keep are then read
//! with the table's own values as their prior, at a width the shadow chooses (`assess::table_prior`),
//! and the cells that fall back in rows that keep others are imputed from the table's rows most
//! like them where the shadow gains so (`assess::imputed`).
mod summary;

pub use super::imputed::{CONTROL_DRAWS, Guess, mix};
use super::matching::Rule;
use super::scoring::Scored;
use super::scoring::score;
use super::table_prior::{ShadowCells, TableReads};
use crate::assess::update_choice::UPDATE_FIT_THRESHOLD;
use crate::attack::baselines::likeliest_value;
use crate::attack::inversion::driver::Progress;
use crate::attack::inversion::ensemble::{self, Members};
use crate::attack::inversion::setup::Setup;
use crate::config::MemberRange;
use crate::error::Result;
use crate::table::{Dataset, Value};
pub use summary::{FallbackSummary, accuracy_of};

/// Quantiles of the shadow batch's entropies tried as thresholds, besides "every cell" and "none".
const QUANTILES: usize = 10;

/// Entropy thresholds per kind of column: a cell above its kind's falls back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    pub categorical: Option<f64>,
    pub continuous: Option<f64>,
}

impl Thresholds {
    /// Which cells fall back: those with an entropy above their kind's threshold, and where the
    /// kind has one, those without an entropy: a cell the members' confidence no longer covers
    /// (`update_choice` moved it from the members' vote) is no surer than the least sure. Before,
    /// such cells never fell back: on Flower's recipe ([32, 32], Adult, trained 3 epochs, seed 3)
    /// every cell was to fall back and 121 such continuous cells, 35 % right, stayed.
    pub fn mask(&self, rules: &[Rule], entropy: &[Vec<Option<f64>>]) -> Vec<Vec<bool>> {
        entropy
            .iter()
            .map(|row| {
                let mut row = rules
                    .iter()
                    .zip(row)
                    .map(|(r, e)| {
                        let above = if r.categorical {
                            self.categorical
                        } else {
                            self.continuous
                        };
                        match (above, e) {
                            (Some(t), Some(e)) => *e > t,
                            (Some(_), None) => true,
                            (None, _) => false,
                        }
                    })
                    .collect::<Vec<bool>>();
                // A column read from a category is right where the category is: it falls back
                // with it.
                for (f, r) in rules.iter().enumerate() {
                    if let Some(by) = r.follows {
                        row[f] = row[by];
                    }
                }
                row
            })
            .collect()
    }
}

/// `mask` with the rows the update holds (`held`) left whole: such rows never fall back, on the
/// shadow batch as on the client's.
pub fn keep_held(mut mask: Vec<Vec<bool>>, held: &[bool]) -> Vec<Vec<bool>> {
    for (m, _) in mask.iter_mut().zip(held).filter(|(_, h)| **h) {
        m.fill(false);
    }
    mask
}

/// The thresholds to try for one kind: every cell (below the least entropy), the shadow
/// entropies' deciles, none.
fn candidates(rules: &[Rule], entropy: &[Vec<Option<f64>>], categorical: bool) -> Vec<Option<f64>> {
    let mut values: Vec<f64> = entropy
        .iter()
        .flat_map(|row| rules.iter().zip(row).filter(|(r, _)| r.categorical == categorical))
        .filter_map(|(_, e)| *e)
        .collect();
    if values.is_empty() {
        return vec![None];
    }
    values.sort_by(f64::total_cmp);
    // "Every cell": below the least entropy a cell of the kind can have, not only the least the
    // shadow's cells had (the client's can be lower: a trained Adult [32, 32] network, seed 1 of
    // `tests/attack.rs`' narrow-network test, kept 23 cells 43 % right that way).
    let mut out = vec![None, Some(values[0].min(least_entropy(categorical)) - 1.0)];
    for q in 1..QUANTILES {
        out.push(Some(values[q * values.len() / QUANTILES]));
    }
    out.dedup();
    out
}

/// The least entropy a cell of the kind can have (`assess::entropy`): a categorical cell's is
/// 0, a continuous one's that of members agreeing to float32's resolution.
fn least_entropy(categorical: bool) -> f64 {
    match categorical {
        true => 0.0,
        false => super::entropy::continuous(&[0.0, 0.0]).unwrap_or(0.0),
    }
}

/// How sure the shadow batch must make the server that keeping a candidate's ensemble cells beats
/// the marginal guess: the gain's one-sided lower bound at z standard errors (about 98 %). The
/// thresholds are the best of up to 121 candidates on one batch of a few hundred cells, so the
/// best gain alone is biased upwards: on Adult's [32, 32] network trained 1-20 epochs (seeds
/// 0-9) shadows whose ensemble scored from 7 points below the guess to barely above it (+0.2)
/// chose thresholds that kept cells, and the client's rows then scored up to 6.2 points below
/// guessing; with the bound, 9 of those 30 attacks below guessing became 2.
pub(crate) const LOWER_BOUND_Z: f64 = 2.0;

/// The z of `gain_lower_bound` where the ensemble's open cells, kept whole, score no better on
/// the shadow batch than the marginal guess: a mix's gain there rests only on which cells its
/// thresholds pick, and the best of `tried` candidates picked on the same batch is as likely to
/// be luck as the tail of all of them, so the bound is the one-sided z of `LOWER_BOUND_Z`'s tail
/// shared among them (Bonferroni). On Adult's [32, 32] network trained 5 and 3 epochs (FedSGD
/// seed 3, Flower's recipe seed 9; seeds 0-9 of `scripts/bench_rounds.py`), shadows whose
/// ensemble scored 1.5 and 3.1 points below the guess kept cells at 2 standard errors that gained
/// 5.8 and 6.7 points there, and the client's rows scored 0.4 and 0.2 points below guessing.
fn selection_z(tried: usize) -> f64 {
    let tail = |z: f64| 0.5 * libm::erfc(z / std::f64::consts::SQRT_2);
    let target = tail(LOWER_BOUND_Z) / tried.max(1) as f64;
    // The tail falls monotonically: bisect for the z where it meets the target.
    let (mut lo, mut hi) = (LOWER_BOUND_Z, 40.0);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        match tail(mid) > target {
            true => lo = mid,
            false => hi = mid,
        }
    }
    hi
}

/// How many times worse than the shadow's own (1 − cos) the client's reconstruction may explain
/// its update for the shadow's thresholds to speak for it (`Calibration::unlike_shadow`). Shadows
/// of the table's own rows (`assess::shadow_rows`), [32, 32], B = 32, seeds 0-9: where the
/// thresholds kept cells that then beat guessing, the client's fit was 0.20-3.35 times the
/// shadow's (Adult, trained 0-20 epochs) and 0.61-2.24 times (German Credit); where they kept
/// cells below guessing (Adult trained 5 epochs, seeds 0 and 5: 48 % and 43 % right), 10.3 and
/// 3.7 times.
const UNLIKE_SHADOW_FIT: f64 = 3.0;
/// ... and only where the client's reconstruction leaves more than this share of what the
/// marginals' guess leaves unexplained: fits near the update's rounding, or far below the
/// guess's, are explained updates, whatever their ratio (a linear regression on one row: 3.4e-6
/// against the shadow's 6e-7, every cell right; Adult [32, 32] untrained, seed 9: 0.061 against
/// 0.018, the guess's about 1, 67 % right against 64 % guessing). The two kept below guessing
/// above left 0.74 and 0.53 of the guess's.
const UNEXPLAINED: f64 = 0.25;

/// The gain in right cells of `candidate` over `base` (both scored on the same true rows), less
/// `z` standard errors of the paired per-cell difference (`LOWER_BOUND_Z`, or `selection_z`). A cell that falls back with
/// another (`Rule::follows`) is one decision with it: their differences count as one, or the
/// pair would pass for two independent cells and narrow the bound.
pub(crate) fn gain_lower_bound(rules: &[Rule], candidate: &[Vec<bool>], base: &[Vec<bool>], z: f64) -> f64 {
    let diff = |a: bool, b: bool| a as i8 as f64 - b as i8 as f64;
    let d: Vec<f64> = candidate
        .iter()
        .zip(base)
        .flat_map(|(a, b)| {
            (0..rules.len()).filter(|&f| rules[f].follows.is_none()).map(move |f| {
                let tied = (0..rules.len()).filter(|&g| rules[g].follows == Some(f));
                diff(a[f], b[f]) + tied.map(|g| diff(a[g], b[g])).sum::<f64>()
            })
        })
        .collect();
    let n = d.len().max(1) as f64;
    let mean = d.iter().sum::<f64>() / n;
    let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    mean - z * (var / n).sqrt()
}

/// The thresholds for the shadow batch (`truth`, the ensemble's `rows` with their `entropy`, the
/// marginal guess `prior`; rows its update holds, `held`, never fall back, as on the client):
/// every other cell falls back unless a candidate's gain over that is sure on the shadow batch
/// (`gain_lower_bound`), the surest kept, ties going to no fallback first; with the shadow
/// accuracies of the ensemble, the prior and the mix. A shadow batch whose update holds every
/// row tested no ensemble cell, and keeps them (`Calibration::untested`).
pub fn calibrate(
    rules: &[Rule],
    truth: &[Vec<Value>],
    rows: &[Vec<Value>],
    entropy: &[Vec<Option<f64>>],
    prior: &Guess,
    held: &[bool],
) -> (Thresholds, [f64; 3]) {
    // Thresholds are chosen against the marginals' draw (`Guess::drawn`): against the table's
    // guess no gain was sure (Adult [32, 32] trained one epoch, FedSGD and Flower's recipe, seeds
    // 0-9: all 20 fell back whole; FedSGD seed 4 70.3 %, its cells kept against the draw 77.7 %).
    let with = |guess: &Guess, t: Thresholds| {
        score(
            rules,
            truth,
            &mix(rows, guess, &keep_held(t.mask(rules, entropy), held)),
        )
    };
    let drawn = Guess::drawn(prior.draw.clone());
    let scored = |t: Thresholds| with(&drawn, t);
    // The deciles of the cells that can fall back: held rows' entropies are not tried.
    let open: Vec<Vec<Option<f64>>> = entropy
        .iter()
        .zip(held)
        .filter(|(_, h)| !**h)
        .map(|(e, _)| e.clone())
        .collect();
    let (categoricals, continuous_values) = (candidates(rules, &open, true), candidates(rules, &open, false));
    // Below every open cell's entropy: each candidate list's second (none where a kind has no
    // open cell).
    let every = Thresholds {
        categorical: categoricals.get(1).copied().flatten(),
        continuous: continuous_values.get(1).copied().flatten(),
    };
    let keep = Thresholds {
        categorical: None,
        continuous: None,
    };
    let base = scored(every);
    let kept_whole = scored(keep).accuracy.total;
    // Where the ensemble's open cells lose to the guess as a whole, a gain is the choice's alone.
    let z = match kept_whole > base.accuracy.total {
        true => LOWER_BOUND_Z,
        false => selection_z(categoricals.len() * continuous_values.len()),
    };
    // The bound, the thresholds and their accuracy on the shadow batch.
    let mut best = match held.iter().all(|&h| h) {
        true => (f64::INFINITY, keep, kept_whole),
        false => (0.0, every, base.accuracy.total),
    };
    for &categorical in &categoricals {
        for &continuous in &continuous_values {
            let t = Thresholds {
                categorical,
                continuous,
            };
            let mixed = scored(t);
            let bound = gain_lower_bound(rules, &mixed.correct, &base.correct, z);
            // Ties keep the earlier candidate: no fallback, then the deciles. A surer bound
            // alone is no gain: a candidate that scores no better on the shadow batch than the
            // best so far only has fewer cells that differ (the bound's error narrows with
            // them), and on the client it falls back cells for nothing.
            if bound > best.0 + 1e-12 && mixed.accuracy.total > best.2 + 1e-12 {
                best = (bound, t, mixed.accuracy.total);
            }
        }
    }
    // Rows whose every cell falls back then take the table's guess where it is held, and the
    // thresholds stand where their mix scores on the shadow no worse than falling back whole (the
    // same runs: cells kept on 5, 2 above the guess by up to 7.4 points, 3 below by up to 7.1).
    let (_, mut thresholds, mut chosen) = best;
    if prior.table.is_some() && !held.iter().all(|&h| h) {
        chosen = with(prior, thresholds).accuracy.total;
        let whole = with(prior, every).accuracy.total;
        if whole > chosen {
            (thresholds, chosen) = (every, whole);
        }
    }
    let ensemble = score(rules, truth, rows).accuracy.total;
    let all_prior = score(rules, truth, prior.whole()).accuracy.total;
    (thresholds, [ensemble, all_prior, chosen])
}

/// What the shadow client taught: the thresholds, and the shadow accuracies of the ensemble, the
/// marginal guess and the mix; for a regression, its labels' too; and how far the update is from
/// explained by the reconstruction and by the marginal guess (`Setup::fits`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    pub thresholds: Thresholds,
    /// The width of the table's prior on the ensemble's continuous cells, in members' spreads
    /// (`assess::table_prior`), where it served the shadow client better than none.
    pub prior_spread: Option<f64>,
    pub shadow: [f64; 3],
    pub labels: Option<LabelCalibration>,
    pub fits: Option<[f64; 2]>,
    /// How far the shadow client's update is from explained by its reconstruction (1 − cos),
    /// where the server replays the client's update.
    pub shadow_fit: Option<f64>,
    /// The L2 norms of the client's update and the shadow client's.
    pub norms: [f64; 2],
    /// Rows of the shadow batch its update did not hold (neither proved nor consistent): the
    /// ensemble's rows the thresholds were tested on; and its rows.
    pub shadow_open: usize,
    pub shadow_rows: usize,
    /// The shadow client's ensemble: as many members as the client's pooled.
    pub shadow_members: usize,
    /// Whether the shadow's rows are the table's own, outside the batch (`assess::shadow_rows`),
    /// rather than drawn from the marginals.
    pub shadow_of_table: bool,
    /// Whether the client's update holds some of its rows (`assess::rows::fall_back` sets it).
    pub holds_rows: bool,
    /// Whether the client's rows started from those its update picked among the first layer's
    /// span's rows (FedSGD's pursuit kept, `update_choice::Pursuit`; set with `holds_rows`).
    pub picked_from_span: bool,
    /// An Adam client's rows read by category (`assess::category_rows`): their gain in right
    /// cells over the marginals' guess on shadow clients, less two standard errors; they are put
    /// in only where it is above 0 (None: the reading does not hold).
    pub read_gain: Option<f64>,
    /// The cells that fall back in rows that keep others are imputed from the table's rows most
    /// like them (`assess::imputed`), where that served the shadow client better than the draw.
    pub imputed: bool,
}

impl Calibration {
    /// The reconstruction explains the update no better than the marginal guess: the attack has
    /// nothing to go on beyond the marginals, whatever the shadow client showed.
    pub fn exhausted(&self) -> bool {
        self.fits.is_some_and(|[recon, prior]| !(recon < prior))
    }

    /// The shadow client's update held every row of its batch, so no ensemble row was tested
    /// there, and the client's update holds some of its rows: the ensemble's rows left beside
    /// those are the ones it could not recover, not a sample of its work, and the shadow's
    /// thresholds say nothing of them. On Adult's [100, 100] network trained 1, 5 and 20 epochs,
    /// 15 such rows over 6 of 9 attacks had 27 % of their cells right, against 62 % guessing,
    /// and shadows whose every row was proved kept them all. Where the update holds none of the
    /// client's rows, its ensemble's rows are its whole work, as the literature measures it,
    /// and keep the thresholds (Adult [32, 32] untrained, seed 1: every shadow row proved, the
    /// client's none, its ensemble 74 % right against 62 % guessing).
    pub fn untested(&self) -> bool {
        self.shadow_open == 0 && self.holds_rows
    }

    /// The client's reconstruction explains its update more than `UNLIKE_SHADOW_FIT` times worse
    /// (1 − cos) than the shadow's explained its own, where neither update holds a row (so both
    /// fits are the ensemble's whole work): the shadow's batch was not as hard as the client's,
    /// and its thresholds do not speak for it.
    pub fn unlike_shadow(&self) -> bool {
        self.shadow_fit.is_some_and(|shadow| {
            self.weighed_against_shadow() && self.fits.is_some_and(|[recon, _]| recon > UNLIKE_SHADOW_FIT * shadow)
        })
    }

    /// The mirror of `unlike_shadow`: the client's reconstruction explains its update more than
    /// `UNLIKE_SHADOW_FIT` times better than the shadow's explained its own, where neither update
    /// holds a row, and fits it (1 − cos at most `UPDATE_FIT_THRESHOLD`, what the report calls a
    /// fit) with rows its update picked among the first layer's span's rows (`picked_from_span`).
    /// The shadow's batch was harder than the client's, and its thresholds, which weighed the
    /// ensemble's cells where it explained its update worse, do not speak for it: every cell the
    /// ensemble gives is kept. Adult [32, 32], B = 32, trained 0-20 epochs, seeds 0-4: it holds
    /// on four attacks (the client's fit 5·10⁻⁵-1.5·10⁻² against the shadow's 3-500 times that),
    /// whose thresholds had sent 32, 32, 32 and some rows to the guess: 69.9 → 83.9, 72.1 → 79.0,
    /// 70.8 → 73.4 and 83.3 → 89.3 % of cells. Where it does not, the thresholds cost 1-8 points
    /// on three attacks at ratios of 1.4-2.2 and saved 21 points at 1.04. A fit alone is no sign
    /// of rows: Adult seed 7 trained 20 epochs fitted 0.097, four times better than its shadow,
    /// with 65.6 % of cells right against the table's guess's 69.6 %; on HI [32, 32], whose batch
    /// fills every direction a row can take, so that rows that are not the batch fit it too, the
    /// ensemble's rows fitted 0.014 and 0.026 (27 and 10 times better than the shadows') with
    /// 55.2 and 65.4 % right against 69.8 %.
    pub fn shadow_harder(&self) -> bool {
        self.shadow_fit.is_some_and(|shadow| {
            self.shadow_open == self.shadow_rows
                && !self.holds_rows
                && self.picked_from_span
                && self
                    .fits
                    .is_some_and(|[recon, _]| recon <= UPDATE_FIT_THRESHOLD && shadow > UNLIKE_SHADOW_FIT * recon)
        })
    }

    /// Whether `unlike_shadow` turns on the ratio of the fits alone: neither update holds a row
    /// and the client's reconstruction leaves more than `UNEXPLAINED` of what the guess leaves.
    fn weighed_against_shadow(&self) -> bool {
        self.shadow_open == self.shadow_rows
            && !self.holds_rows
            && self.fits.is_some_and(|[recon, prior]| recon > UNEXPLAINED * prior)
    }

    /// Whether the shadow's fit is to be read with its `whole` ensemble (`ShadowRun::whole_fit`):
    /// the ratio of the fits decides, the client fits its update worse than the shadow fitted its
    /// own with as many members (else the shadow was no easier, whatever more members would
    /// fit), and the shadow ran fewer members than that.
    pub fn wants_whole_shadow_fit(&self, whole: usize) -> bool {
        let worse = matches!((self.fits, self.shadow_fit), (Some([recon, _]), Some(shadow)) if recon > shadow);
        worse && self.weighed_against_shadow() && self.shadow_members < whole
    }

    /// Which cells fall back: those above the shadow client's thresholds, and where the attack is
    /// exhausted or the shadow tested no ensemble row (`untested`), every cell of a row the
    /// update's span does not hold (`held`: the second layer's
    /// certificate or the first layer's span found it, and it fits). The fits are of the whole
    /// update, which a trained network's few rows of large residual make: one such row missed
    /// reads the rest as unexplained (Adult [100, 100] trained 5 epochs, seed 0: 31 rows right of
    /// 32 fitted at 1 − cos 1.00 against the marginals' 0.96, and five rows the span held, every
    /// cell right, fell back).
    pub fn mask(&self, rules: &[Rule], entropy: &[Vec<Option<f64>>], held: &[bool]) -> Vec<Vec<bool>> {
        let every = Thresholds {
            categorical: Some(f64::NEG_INFINITY),
            continuous: Some(f64::NEG_INFINITY),
        };
        let whole = self.exhausted() || self.untested() || self.unlike_shadow();
        let thresholds = match !whole && self.shadow_harder() {
            true => Thresholds {
                categorical: None,
                continuous: None,
            },
            false => self.thresholds,
        };
        thresholds
            .mask(rules, entropy)
            .into_iter()
            .zip(every.mask(rules, entropy))
            .zip(held)
            .map(|((calibrated, every), &held)| match whole && !held {
                true => every,
                false => calibrated,
            })
            .collect()
    }
}

/// A regression's labels on the shadow client: the share within tolerance of the labels the
/// attack reconstructed and of the table's likeliest value guessed for every row. Where the guess
/// scores higher, the labels of rows not proved are the guess.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LabelCalibration {
    pub shadow_update: f64,
    pub shadow_prior: f64,
    pub prior_value: f64,
    /// The shadow client's rows.
    pub rows: usize,
}

/// A shadow client of fewer rows does not decide a regression's labels: one row's hit or miss is
/// luck (German Credit's linear regression on one row: its label right on 5 seeds of 5, but one
/// one-row shadow missed it where the likeliest value hit, and the fallback lost it).
const MIN_LABEL_SHADOW_ROWS: usize = 4;

impl LabelCalibration {
    pub fn falls_back(&self) -> bool {
        self.rows >= MIN_LABEL_SHADOW_ROWS && self.shadow_prior > self.shadow_update
    }
}

impl Setup<'_> {
    /// Whether the attack falls back to the marginals here: it asks for it, it pools cells with an
    /// entropy, and the table's marginals are known (a simulated client). It does so wherever
    /// rows are left unproved (`Setup::fallback`), whatever the model: on a network trained for
    /// rounds, a narrow one, a defence's noise or Adam's steps, the ensemble alone can score
    /// below the marginals (issue 43: 49.5 % against 61.8 % on the Flower example's network
    /// after three epochs). Proved rows never fall back.
    pub fn wants_fallback(&self) -> bool {
        self.falls_back_on(self.dataset) && self.scenario.truth.is_some()
    }

    /// Whether the attack falls back to the marginals of `marginals` (the table, or for a
    /// received update scored against the client's rows, those rows: `received::truth`).
    pub fn falls_back_on(&self, marginals: &Dataset) -> bool {
        self.config.priors().fallback && self.inverts.relaxed && self.members > 0 && marginals.n() > 0
    }

    /// Whether the client's defence perturbs the update (noise, fake gradients): there no proof
    /// holds and the ensemble may say less than the marginals. Logistic regression's update (no
    /// hidden layer: (d + 1)·C numbers of rank at most C) says as little beyond one row, so it
    /// falls back too.
    pub fn perturbed(&self) -> bool {
        self.config
            .defence
            .is_some_and(|d| d.noise > 0.0 || d.fake_gradients.is_some())
    }

    /// The shadow client of `calibrate_fallback_on`: this attack on rows of `marginals` outside
    /// the client's batch (`shadow_rows`); and whether they are the table's own.
    pub async fn shadow_setup<'s>(&'s self, marginals: &'s Dataset) -> Result<(Setup<'s>, bool)> {
        let config = self.config;
        let (rows, of_table) = self.shadow_rows(marginals);
        let scenario = self.scenario.shadow(marginals, config, rows).await?;
        Ok((Setup::new(self.runtime, marginals, config, scenario), of_table))
    }

    /// `shadow_setup`, its rows chosen and its ensemble run again where the client's were
    /// (`client_searched`).
    async fn shadow_following<'s>(
        &'s self,
        marginals: &'s Dataset,
        client_searched: Option<bool>,
    ) -> Result<(Setup<'s>, bool)> {
        let (mut shadow, of_table) = self.shadow_setup(marginals).await?;
        if self.replays_gradient() {
            shadow.choice_follows = client_searched;
        }
        Ok((shadow, of_table))
    }

    /// Members `range` of this setup, a shadow client's (`shadow_setup`), their steps reported as
    /// phase "shadow".
    pub async fn invert_as_shadow(
        &self,
        range: MemberRange,
        progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<Members> {
        let mut relabel = |p: &Progress| {
            progress(&Progress {
                phase: "shadow".into(),
                ..p.clone()
            })
        };
        self.invert(range, &mut relabel).await
    }

    /// Whether a run split over workers inverts the shadow client's members in shares too
    /// (`run::shadow_shares`; after the batch's rounds where its stopping rule runs them, else
    /// before its members): where the attack falls back and no proof can reach every row, the
    /// calibration is certain to run (on one worker it left 7 of 8 idle).
    pub fn shadow_in_shares(&self) -> bool {
        self.wants_fallback() && !self.may_prove_batch()
    }

    /// The same attack on a shadow client, its rows drawn from `marginals` (a table of this
    /// attack's encoding), scored by the server against the rows it drew: the thresholds that
    /// serve it best, with the marginal guess drawn from the same table. `client_searched`: whether
    /// the client's update chose among its rows (`UpdateChoice::searched`). Its steps are reported
    /// as phase "shadow". With the calibration, the shadow client it ran (`ShadowRun`).
    pub async fn calibrate_fallback_on<'s>(
        &'s self,
        marginals: &'s Dataset,
        client_holds_rows: bool,
        client_searched: Option<bool>,
        progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<Option<(Calibration, ShadowRun<'s>)>> {
        let (dataset, config) = (marginals, self.config);
        let (mut shadow, shadow_of_table) = self.shadow_following(marginals, client_searched).await?;
        // The shadow runs the attack as it ran on the client: as many members as the client's
        // ensemble pooled (where its stopping rule stopped early, `assess::stopping`), so that
        // the thresholds are read off entropies of the same pooling. Members are independent: a
        // split run's shares, inverted for the whole ensemble before the rounds, give the same
        // first members.
        let whole = shadow.members;
        shadow.members = self.members.min(whole);
        let inverted = match &self.shadow_parts {
            Some(parts) => ensemble::join_leading(shadow.shape(), parts.clone())?,
            None => {
                let all = MemberRange {
                    first: 0,
                    count: shadow.members,
                };
                shadow.invert_as_shadow(all, progress).await?
            }
        };
        let recon = shadow.reconstruct(inverted.clone(), progress).await?;
        let (Some(truth), Some(entropy)) = (&shadow.scenario.truth, &recon.entropy) else {
            return Ok(None);
        };
        let prior = self.shadow_guess(dataset, &truth.rows, shadow_of_table);
        // A reshuffling client's fits are read in the orders its update chose (`Setup::fallback_on`),
        // but its shadow's are not weighed against them (`Calibration::unlike_shadow`): there the
        // ratio did not tell kept cells that gain from those that lose (Flower's recipe on
        // [32, 32], Adult trained one epoch, seeds 0 and 6: 20 and 17 times the shadow's, +4.9
        // and -0.4 points; German Credit trained one and three epochs, seeds 5 and 0: 4.2 and
        // 4.8 times, +20 and +21 points).
        let shadow_fit = match config.unreplayable(config.rows()) {
            None => Some(shadow.update_fit(&recon).await?.distance),
            Some(_) => None,
        };
        let held: Vec<bool> = recon.provenance.iter().map(|p| p.held_by_update()).collect();
        // Where the client's update holds some of its rows, the ensemble's rows left beside them
        // are weighed against the shadow's left beside its own; where it holds none, the
        // ensemble's rows are its whole work, weighed against the shadow's whole batch (on
        // German Credit's [32, 32] network trained 20 epochs, shadows whose update held most
        // rows left a few hard ones, no sure gain on those, and client rows 75-83 % right fell
        // to guessing).
        let set_aside: Vec<bool> = held.iter().map(|&h| h && client_holds_rows).collect();
        let (thresholds, mut shadow_scores) =
            calibrate(&self.rules, &truth.rows, &recon.rows, entropy, &prior, &set_aside);
        // The table's own rows read where the server holds them, as they served the shadow
        // (`assess::table_prior::TableReads`).
        let mask = keep_held(thresholds.mask(&self.rules, entropy), &set_aside);
        let batch = self.scenario.truth.as_ref().map_or(&[][..], |t| &t.indices[..]);
        let reads = match shadow_of_table {
            true => {
                let open: Vec<bool> = held.iter().map(|h| !h).collect();
                let shadow = ShadowCells {
                    truth: &truth.rows,
                    rows: &recon.rows,
                    entropy,
                    open: &open,
                    prior: &prior,
                    mask: &mask,
                };
                TableReads::chosen_on(dataset, &self.rules, batch, &shadow, shadow_scores[2])
            }
            false => TableReads::default(),
        };
        shadow_scores[2] = shadow_scores[2].max(reads.shadow_score);
        let (prior_spread, imputed) = (reads.spread, reads.imputed);
        let labels = match (&recon.values, &dataset.target, likeliest_value(dataset)) {
            (Some((values, _)), Some(target), Some(prior_value)) => {
                let assignment = score(&self.rules, &truth.rows, &recon.rows).assignment;
                let truth_values = truth.values(dataset);
                let within = |guess: &dyn Fn(usize) -> f64| {
                    let right = (0..truth_values.len())
                        .filter(|&i| (guess(i) - truth_values[i]).abs() <= target.tolerance())
                        .count();
                    right as f64 / truth_values.len().max(1) as f64
                };
                Some(LabelCalibration {
                    shadow_update: within(&|i| values[assignment[i]]),
                    shadow_prior: within(&|_| prior_value),
                    prior_value,
                    rows: truth_values.len(),
                })
            }
            _ => None,
        };
        let calibration = Calibration {
            thresholds,
            prior_spread,
            shadow: shadow_scores,
            labels,
            fits: None,
            shadow_fit,
            norms: [self.scenario.observed.norm(), shadow.scenario.observed.norm()],
            shadow_open: held.iter().filter(|&&h| !h).count(),
            shadow_rows: held.len(),
            shadow_members: shadow.members,
            shadow_of_table,
            read_gain: self.read_gain_on_shadows(marginals).await?,
            holds_rows: false,
            picked_from_span: false,
            imputed,
        };
        let run = ShadowRun {
            setup: shadow,
            members: inverted,
            whole,
        };
        Ok(Some((calibration, run)))
    }
}

/// The shadow client the calibration ran (`Setup::calibrate_fallback_on`), kept for its fit with
/// the whole ensemble: its setup (the same rows and update, its span already searched), the
/// members it pooled (the first of the whole ensemble) and how many the whole holds.
pub struct ShadowRun<'s> {
    setup: Setup<'s>,
    members: Members,
    whole: usize,
}

impl ShadowRun<'_> {
    /// The shadow client's fit (1 − cos) with its whole ensemble, which `UNLIKE_SHADOW_FIT` was
    /// measured against. The calibration runs the shadow with as many members as the client's
    /// ensemble pooled; where its stopping rule stopped early, a pooling of fewer members fits
    /// worse, and the ratio hid a shadow easier than its client (Adult [32, 32], B = 32, trained
    /// 5 epochs, seed 5: 10 members fitted 0.377 and 30 fitted 0.134 against the client's 0.594;
    /// the thresholds kept cells 45 % right, 48.0 % against 61.2 % guessing). Read only where the
    /// ratio decides (`Calibration::wants_whole_shadow_fit`). The members are seeded, so the
    /// calibration's are the whole's first: only the rest are inverted here (two thirds of the
    /// whole at B = 128).
    pub async fn whole_fit(self, progress: &mut dyn FnMut(&Progress) -> bool) -> Result<f64> {
        let ShadowRun {
            setup: mut shadow,
            members: first,
            whole,
        } = self;
        shadow.members = whole;
        let done = first.range.count;
        let inverted = match done < whole {
            true => {
                let rest = MemberRange {
                    first: done,
                    count: whole - done,
                };
                let rest = shadow.invert_as_shadow(rest, progress).await?;
                ensemble::join(shadow.shape(), vec![first, rest])?
            }
            false => first,
        };
        let recon = shadow.reconstruct(inverted, progress).await?;
        Ok(shadow.update_fit(&recon).await?.distance)
    }
}

impl FallbackSummary {
    /// What `fall_back` did with `c`; `scored`: the mixed rows scored against the truth, where a
    /// simulated or audited client has it.
    pub fn of(c: &Calibration, mask: &[Vec<bool>], scored: Option<&Scored>) -> FallbackSummary {
        FallbackSummary {
            shadow_ensemble: c.shadow[0],
            shadow_prior: c.shadow[1],
            shadow_chosen: c.shadow[2],
            categorical_above: c.thresholds.categorical,
            continuous_above: c.thresholds.continuous,
            prior_spread: c.prior_spread,
            prior_cells: mask.iter().flatten().filter(|&&m| m).count(),
            cells: mask.iter().map(Vec::len).sum(),
            prior_rows: mask.iter().filter(|row| row.iter().all(|&m| m)).count(),
            ensemble_cell_accuracy: scored.and_then(|s| accuracy_of(&s.correct, &s.assignment, mask, false)),
            prior_cell_accuracy: scored.and_then(|s| accuracy_of(&s.correct, &s.assignment, mask, true)),
            update_fit: c.fits.map(|f| f[0]),
            prior_fit: c.fits.map(|f| f[1]),
            shadow_update_fit: c.shadow_fit,
            update_norm: c.norms[0],
            shadow_update_norm: c.norms[1],
            exhausted: c.exhausted(),
            untested: c.untested(),
            unlike_shadow: c.unlike_shadow(),
            shadow_harder: c.shadow_harder(),
            shadow_of_table: c.shadow_of_table,
            read_gain: c.read_gain,
            imputed: c.imputed,
            imputed_without_update: None,
            shadow_members: c.shadow_members,
        }
    }
}

#[cfg(test)]
mod tests;

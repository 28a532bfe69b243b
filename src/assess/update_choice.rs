//! Which rows a FedAvg client's batch is, chosen by the update they simulate. The pooled rows are
//! each cell's median over the members, and where the first layer's span holds more rows than the
//! batch (rows that share most categories combine into others: `SpanRows::telling` is false) it
//! cannot say which are the batch's. The client's update can: it is a function of the rows in
//! their order (batches and labels by position) that the server simulates exactly, and the
//! attack's own objective on decoded rows (1 − cos) scores it. Starting from the pooled rows, each
//! row tries the rows its members hold (each member's row matched to it), the span's rows nearest
//! it, and itself with one cell as a member has it; rows of different local batches trade places.
//! A change is kept only where the simulated update of all the rows fits the observed one better.
//! A client that reshuffles its rows is replayed in orders the update chooses for them first
//! (`assess::epoch_orders`), where rows trade places instead. A FedSGD client's gradient is
//! replayed the same way, rows in their slots: where the span holds exactly the batch it has its
//! own answer (`assess::span_fit`); where it holds more rows than the update's rounding lets the
//! proofs tell apart, the rows whose gradients' sum comes nearest the update are picked among them
//! first (`assess::span_pursuit`), kept where they fit better than the pooled rows, and each row
//! then tries the span's nearest rows (on a narrow network, [32, 32] at B = 32, the span of
//! Adult's rows holds every batch row's categories among 461-14,702 rows). The pursuit runs
//! whether or not the pooled rows fit: where its rows fit better, the choice searches from them.
//!
//! A better fit is more cells right only where the pooled rows are nearly the batch: it runs where
//! they already reproduce the update as the report counts it (`UPDATE_FIT_THRESHOLD`, 1 − cos ≤
//! 0.05). Above it the fit misleads: on Adam clients (0.24–0.33 before) it cost 2.3–7.8 points on
//! four seeds of five and fell below guessing on two; on a momentum client attacked for 300 steps
//! (0.09–0.15) the members' whole rows alone took 91.7 % of cells to 77.8 %. Below it, on
//! momentum clients at E = 5, it gained 1.3–5.4 points (docs/results/recipes.md). This is a
//! search, not a proof: the rows it changes stay rows of the ensemble, their changed cells without
//! the members' confidence (a category at the entropy of a uniform vote, a continuous value with
//! none).
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::assess::enumerated::SpanRows;
use crate::assess::search_bounds::{MOST_PAIRS, MOST_TRIED, SWEEPS};
use crate::attack::inversion::Simulation;
use crate::attack::inversion::ensemble::Members;
use crate::attack::inversion::setup::Setup;
use crate::client::fedavg::LocalTraining;
use crate::error::Result;
use crate::table::{Dataset, Value, encode_rows};

/// The largest 1 − cos between the update the reconstruction would send and the one received
/// that is called a fit. Measured on full Adult with the client's own encoding: 0 (float32's
/// rounding) at B = 8, 3.4e-3 at B = 32 (two rows unproved), 1.4e-2 at B = 128 (73 % of cells);
/// one-hot columns the encoding calls standardised but the client fed raw: 0.18 at B = 8
/// (docs/results/pipelines.md has the rest).
pub const UPDATE_FIT_THRESHOLD: f64 = 5e-2;
/// 1 − cos at or below which the chosen rows explain the update to float32's rounding (the
/// batch's own rows fit it to 4e-9 to 8e-8 as the attack computes it: Adult [32, 32], B = 16,
/// trained 5 and 20 epochs): two fits that low differ by rounding alone, so nothing runs again to
/// fit "better" (`assess::refine`, `assess::inverted_left`, `assess::span_left`), and the rows
/// the update sees are consistent with it (`assess::seen_rows`). On the Adult
/// sample, seed 1, after the chosen rows (the batch's own) fitted −3e-9, the rerun and the rows
/// placed again took the attack to 81.9 % of cells; kept to them, 99.1 %. At 2e-5 (Adult B = 16,
/// trained 5 epochs, seed 0) the rows placed after still took the cells from 97.3 to 100 %.
pub const AT_ROUNDING: f64 = 1e-7;

/// The span's rows each row tries per sweep: those differing from it in the fewest cells.
const NEAREST: usize = 8;
/// The same on FedSGD, where they come first (`tries`).
const SPAN_NEAREST: usize = 16;
/// A change is kept where it lowers 1 − cos by more than this share: float32's rounding of the
/// simulated update moves it by less.
const BETTER: f32 = 1e-4;

/// What the search did, as the report states it (`RowDetails::chosen`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct UpdateChoice {
    /// Whether it searched: only where the pooled rows reproduce the update (`fit_before` at most
    /// `UPDATE_FIT_THRESHOLD`).
    pub searched: bool,
    /// Rows of the first layer's span it could choose from (0: none).
    pub span_rows: usize,
    /// Rows of the batch it changed.
    pub changed_rows: usize,
    /// 1 − cos of the pooled rows' simulated update against the observed one, before and after.
    pub fit_before: f64,
    pub fit_after: f64,
    /// Client updates it simulated.
    pub simulations: usize,
    /// The ensemble run again from the chosen rows (`assess::refine`; None where it did not run).
    pub rerun: Option<Rerun>,
    /// A reshuffling client: an order of each epoch for the rows, chosen by the update
    /// (`assess::epoch_orders`; not necessarily the client's); None for a client in a known order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub orders: Option<EpochOrders>,
    /// FedSGD among a crowded span's rows: the rows whose gradients' sum the update picks
    /// (`assess::span_pursuit`), tried before the rows one at a time; None where it did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub pursuit: Option<Pursuit>,
}

/// The batch picked among the span's rows by the update's sum (`assess::span_pursuit`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Pursuit {
    /// What the picks' gradients leave of the update (B·G), over its norm, as the search tracked it.
    pub residual: f64,
    /// 1 − cos of the picked rows' simulated update against the observed one.
    pub fit: f64,
    /// Whether they replaced the pooled rows: only where they fit better, within
    /// `UPDATE_FIT_THRESHOLD`, and the choice searched.
    pub kept: bool,
    /// Points of the span's rows and lines that the row test read as rows of the batch, each
    /// with its label (`assess::row_test`); None where the test did not hold (the first layer's
    /// rank uncertain, or more than one direction free).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub placed: Option<usize>,
    /// Whether the picks were among those points (their sum fitted the update better than the
    /// span's rows').
    #[serde(default)]
    pub from_placed: bool,
    /// Whether the picks were among the rows of the span of every direction the first layer's
    /// update shows above the noise its tail shows (`Setup::span_of_every_direction`): they
    /// fitted the update better than the picks among the determined span's rows.
    #[serde(default)]
    pub every_direction: bool,
    /// Whether the picks, points of the span's lines, stand where the span's search put them
    /// rather than at each line's point nearest the pooled row: they fitted the update better.
    #[serde(default)]
    pub on_lines: bool,
}

/// The pursuit's answer (`Setup::pursue_rows`): its rows in the slots, encoded, what it did, the
/// span they came from, and how many client updates it simulated to choose them.
struct PursuedRows<'s> {
    rows: Vec<Vec<Value>>,
    encoded: Vec<f32>,
    pursuit: Pursuit,
    span: &'s SpanRows,
    simulated: usize,
}

/// Orders of a reshuffling client's epochs for the reconstruction's rows, as the update chose
/// them: the layout in which the attack replays the rows best, not necessarily the client's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct EpochOrders {
    /// `order[e][j]`: the reconstruction's row the replay visits j-th in epoch e.
    pub order: Vec<Vec<usize>>,
    /// 1 − cos of the pooled rows in the orders the best member's epoch copies gave, and in the
    /// orders after rows traded places (the choice's `fit_before`).
    pub fit_proposed: f64,
    pub fit: f64,
    /// Client updates simulated for them.
    pub simulations: usize,
}

/// The ensemble run again from the rows the update chose, pooled and chosen in turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Rerun {
    /// 1 − cos of the rerun's rows (after its own choice) against the observed update; the first
    /// rows' is the choice's `fit_after`.
    pub fit: f64,
    /// Whether its rows are the report's: only where they fit better.
    pub kept: bool,
    /// A reshuffling client's: the orders the rerun's own pooling chose for its rows (which
    /// stand as the rerun's first epoch visits them, not as the first rows do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub orders: Option<EpochOrders>,
}

impl UpdateChoice {
    /// The orders of the rows the report gives (a reshuffling client's): the rerun's where its
    /// rows were kept, else the first rows'.
    pub fn orders_of_rows(&self) -> Option<&EpochOrders> {
        match &self.rerun {
            Some(r) if r.kept => r.orders.as_ref(),
            _ => self.orders.as_ref(),
        }
    }

    /// In words, for the reports' text.
    pub fn sentence(&self) -> String {
        let rerun = match &self.rerun {
            None => String::new(),
            Some(r) => format!(
                "; the ensemble run again from them fitted {:.1e}{}",
                r.fit,
                match (r.kept, &r.orders) {
                    (true, None) => " and gave the rows",
                    (true, Some(_)) => " and gave the rows, in orders its own pooling chose",
                    (false, _) => ", no better: the first rows are kept",
                }
            ),
        };
        let orders = match &self.orders {
            None => String::new(),
            Some(o) => format!(
                "an order of each epoch chosen by the update, not necessarily the client's (the members' orders \
                 fitted {:.1e}, rows trading places {:.1e}, {} client updates); ",
                o.fit_proposed, o.fit, o.simulations
            ),
        };
        let choice = match self.searched {
            false => format!(
                "the pooled rows fit the update at 1 − cos = {:.1e}, above {UPDATE_FIT_THRESHOLD}: the update chose no rows \
                 (a better fit misleads there)",
                self.fit_before
            ),
            true => format!(
                "the update chose {} of the rows (members' rows or cells{}, or rows trading places): 1 − cos {:.1e} → \
                 {:.1e}{}, {} client updates simulated",
                self.changed_rows,
                if self.span_rows > 0 { ", span rows" } else { "" },
                self.fit_before,
                self.fit_after,
                match self.fit_after <= AT_ROUNDING {
                    true => " (its float32 rounding: nothing runs again)",
                    false => "",
                },
                self.simulations
            ),
        };
        let pursuit = match &self.pursuit {
            None => String::new(),
            Some(p) => format!(
                "{}the span's rows{} whose gradients' sum comes nearest the update{}{} left {:.1e} of it and fitted {:.1e}{}; ",
                match p.placed {
                    Some(n) => format!("the row test read {n} points of the span's lines as rows of the batch; "),
                    None => String::new(),
                },
                match p.every_direction {
                    true => " (of every direction the first layer's update shows above the noise its tail shows)",
                    false => "",
                },
                if p.from_placed { " (among those points)" } else { "" },
                match p.on_lines {
                    true => " (at the points of their lines the span's search gave)",
                    false => "",
                },
                p.residual,
                p.fit,
                match p.kept {
                    true => ", and were the rows the choice started from",
                    false => ", no better than the pooled rows",
                }
            ),
        };
        orders + &pursuit + &choice + &rerun
    }
}

impl Setup<'_> {
    /// A FedAvg client's local training and the attack's copies of its rows per member, where
    /// rows laid out by position replay its update: classifying, with every cell unknown and one
    /// round; None elsewhere.
    pub(crate) fn replayable_training(&self) -> Option<(LocalTraining, usize)> {
        let Simulation::LocalTraining { training, copies } = self.simulation() else {
            return None;
        };
        self.replays_rows().then_some((training, copies))
    }

    /// Whether rows in their slots replay the client's update as the server simulates it:
    /// classifying, with every cell unknown and one round.
    fn replays_rows(&self) -> bool {
        self.dataset.target.is_none() && self.scenario.known.is_none() && self.scenario.later_rounds.is_empty()
    }

    /// A FedSGD client's update is the gradient on its rows in their slots (each slot's label),
    /// which the server simulates exactly where rows replay it (`replays_rows`).
    pub(crate) fn replays_gradient(&self) -> bool {
        matches!(self.simulation(), Simulation::Gradient) && self.replays_rows()
    }

    /// Whether FedSGD's choice may run here, and so wants the span's rows (`enumerate_span`): a
    /// replayed gradient, the choice on, and a batch that leaves some of the directions a row of
    /// the encoding can take outside the first layer's span (`SubspaceSummary::feasible`), so that
    /// the span tells rows apart.
    pub(crate) fn chooses_among_span_rows(&self) -> bool {
        self.replays_gradient()
            && self.config.priors().choice
            && self
                .subspace
                .as_ref()
                .is_some_and(|s| self.config.rows() < s.summary.feasible)
    }

    /// The client's local training where the server can simulate its update from rows in their
    /// positions: a replayable client whose order it knows (given, or one batch an epoch).
    pub(crate) fn known_order(&self) -> Option<LocalTraining> {
        let (training, _) = self.replayable_training()?;
        training.order_known(self.config.rows()).then_some(training)
    }

    /// Where the choice applies: a FedAvg client in a known (`given`) or chosen order, whose local
    /// batch trades rows (FedSGD's gradient has no order: None), or FedSGD with span rows to choose
    /// among; with the span's rows it may try. None where switched off or nothing is pooled.
    fn choice_applies<'s>(
        &self,
        given: Option<LocalTraining>,
        span: Option<&'s SpanRows>,
        empty: bool,
        gradient: bool,
    ) -> Option<(Option<usize>, Option<&'s SpanRows>)> {
        let local_batch = match given.or_else(|| self.reshuffled()) {
            Some(training) => Some(training.local_batch),
            None if gradient => None,
            None => return None,
        };
        if !self.config.priors().choice || empty {
            return None;
        }
        // A span that leaves continuous values free holds lines of rows, not rows: FedSGD's choice
        // tries each line's point nearest the row (`SpanRows::point_near`), FedAvg's only a span
        // that fixes every value (as it was measured).
        let span = span.filter(|s| (gradient || s.free.ncols() == 0) && !s.rows.is_empty());
        // FedSGD chooses among the span's rows, and only where the span says something of them:
        // where the batch fills every direction a row of the encoding can take, the span holds
        // every row the table can, and a better fit of the update was not more cells right (three
        // held-out tables, [32, 32], B = 32, seeds 0-4: 66.9 -> 66.4 %, two seeds 7 points lower).
        if gradient && !(span.is_some() && self.chooses_among_span_rows()) {
            return None;
        }
        Some((local_batch, span))
    }

    /// FedSGD among the span's rows: the rows the update's sum picks (`assess::span_pursuit`),
    /// encoded, and what the choice makes of them. They are kept where they fit the update better
    /// than the pooled rows (`first`) and as the choice asks of rows it searches from: on trained
    /// networks picks that fit worse misled it (Adult [32, 32] trained 5 epochs, seeds 0 and 4:
    /// 1 − cos 0.48 and 0.064, 62.3 -> 56.0 % and 71.9 -> 65.8 %).
    ///
    /// The pursuit runs among the span's rows and, where the first layer's update shows more
    /// directions above the noise its tail shows than it determines, among the rows of that span
    /// too (`Setup::span_of_every_direction`); picks that are points of the span's lines stand
    /// at each line's point nearest the pooled row and at the point the search gave. Of these,
    /// the rows that fit the update best are the pursuit's answer, with the span they came from.
    /// Adult [32, 32], B = 32, trained 5 epochs, seed 0: the determined span's picks at the
    /// points nearest the pooled rows fitted 0.48, at the search's points 0.076; the picks among
    /// the span of every direction 0.42 and 1.7·10⁻⁴ (69.9 → 88.4 % of cells).
    async fn pursue_rows<'s>(
        &'s self,
        span: Option<&'s SpanRows>,
        rows: &[Vec<Value>],
        fixed: &[bool],
        first: f32,
    ) -> Result<Option<PursuedRows<'s>>> {
        let spans = [(span, false), (self.span_of_every_direction(), true)];
        let mut tried: Vec<(Vec<Vec<Value>>, Pursuit, &SpanRows)> = Vec::new();
        for (span, every_direction) in spans.into_iter().filter_map(|(s, e)| Some((s?, e))) {
            let Some(picks) = self.pursue_span_rows(span, rows, fixed) else {
                continue;
            };
            let pursuit = Pursuit {
                residual: picks.residual,
                placed: picks.placed,
                from_placed: picks.from_placed,
                fit: f64::INFINITY,
                kept: false,
                every_direction,
                on_lines: false,
            };
            if let Some(on_lines) = picks.on_lines {
                tried.push((
                    on_lines,
                    Pursuit {
                        on_lines: true,
                        ..pursuit.clone()
                    },
                    span,
                ));
            }
            tried.push((picks.rows, pursuit, span));
        }
        if tried.is_empty() {
            return Ok(None);
        }
        let encoded: Vec<Vec<f32>> = tried
            .iter()
            .map(|(rows, _, _)| encode_rows(self.dataset, rows))
            .collect();
        let fits = self.projected_losses(encoded.concat(), tried.len()).await?;
        let Some((k, &fit)) = best(&fits) else {
            return Ok(None);
        };
        let (found, mut pursuit, span) = tried.swap_remove(k);
        pursuit.fit = fit as f64;
        pursuit.kept = fit < first * (1.0 - BETTER) && (fit as f64) <= UPDATE_FIT_THRESHOLD;
        Ok(Some(PursuedRows {
            rows: found,
            encoded: encoded[k].clone(),
            pursuit,
            span,
            simulated: fits.len(),
        }))
    }

    /// The pooled `rows` changed, as the module says, among their members' rows (`matched`: each
    /// pooled row's members as matched to it) and the span's; `fixed` rows (proved) stay. A
    /// reshuffling client's rows in the orders the update chose for them (`choose_orders`, from
    /// the ensemble's epoch copies in `inversion`). None where it does not apply
    /// (`choice_applies`).
    pub(crate) async fn choose_rows(
        &self,
        inversion: &Members,
        span: Option<&SpanRows>,
        matched: &[Vec<Vec<Value>>],
        rows: &mut [Vec<Value>],
        entropy: Option<&mut Vec<Vec<Option<f64>>>>,
        fixed: &[bool],
    ) -> Result<Option<UpdateChoice>> {
        let given = self.known_order();
        let gradient = self.replays_gradient();
        let Some((local_batch, span)) = self.choice_applies(given, span, rows.is_empty(), gradient) else {
            return Ok(None);
        };
        let (dataset, n, d) = (self.dataset, rows.len(), self.dataset.d());
        let mut x = encode_rows(dataset, rows);
        let chosen_orders = match given {
            Some(_) => None,
            None if gradient => None,
            // A reshuffling client's rows are replayed only in orders chosen for them.
            None => match self.choose_orders(inversion, rows, &x).await? {
                None => return Ok(None),
                some => some,
            },
        };
        let order = chosen_orders.as_ref().map(|o| o.order.clone());
        let fits =
            async |members: Vec<f32>, count: usize| self.losses_in_orders(members, count, order.as_deref()).await;
        let first = fits(x.clone(), 1).await?[0];
        let pursued = self.pursue_rows(span.filter(|_| gradient), rows, fixed, first).await?;
        let kept = pursued.as_ref().is_some_and(|p| p.pursuit.kept);
        // Rows kept from a span, each row then tries that span's nearest rows.
        let span = pursued.as_ref().filter(|_| kept).map_or(span, |p| Some(p.span));
        let mut choice = UpdateChoice {
            searched: self
                .choice_follows
                .unwrap_or(first as f64 <= UPDATE_FIT_THRESHOLD || kept),
            span_rows: span.map_or(0, |s| s.rows.len()),
            changed_rows: 0,
            fit_before: first as f64,
            fit_after: first as f64,
            simulations: 1 + pursued.as_ref().map_or(0, |p| p.simulated),
            rerun: None,
            orders: None,
            pursuit: pursued.as_ref().map(|p| p.pursuit.clone()),
        };
        if !choice.searched {
            choice.pursuit.iter_mut().for_each(|p| p.kept = false);
            choice.orders = chosen_orders;
            return Ok(Some(choice));
        }
        let before = rows.to_vec();
        // Where each row came from: a swap moves a row with its members' confidence.
        let mut origin: Vec<usize> = (0..n).collect();
        let mut fit = first;
        if let Some(p) = pursued.filter(|_| kept) {
            rows.clone_from_slice(&p.rows);
            x = p.encoded;
            fit = p.pursuit.fit as f32;
        }
        // A reshuffling client's rows have no places of their own: its orders traded them.
        let pairs = match (chosen_orders.as_ref(), local_batch) {
            (None, Some(b)) => trading_pairs(n, b, fixed),
            _ => Vec::new(),
        };
        for _ in 0..SWEEPS {
            let mut changed = false;
            for p in (0..n).filter(|&p| !fixed[p]) {
                let tried = tries(
                    self,
                    span,
                    matched.get(p).map_or(&[][..], |m| &m[..]),
                    &rows[p],
                    gradient,
                );
                if tried.is_empty() {
                    continue;
                }
                let losses = fits(with_row_at(dataset, &x, p, &tried), tried.len()).await?;
                choice.simulations += tried.len();
                if let Some((k, &loss)) = best(&losses)
                    && loss < fit * (1.0 - BETTER)
                {
                    rows[p] = tried[k].clone();
                    x[p * d..(p + 1) * d].copy_from_slice(&encode_rows(dataset, &rows[p..p + 1]));
                    fit = loss;
                    changed = true;
                }
            }
            if !pairs.is_empty() {
                let swapped = pairs.iter().flat_map(|&(a, b)| {
                    let mut m = x.clone();
                    swap_rows(&mut m, a, b, d);
                    m
                });
                let losses = fits(swapped.collect(), pairs.len()).await?;
                choice.simulations += pairs.len();
                if let Some((k, &loss)) = best(&losses)
                    && loss < fit * (1.0 - BETTER)
                {
                    let (a, b) = pairs[k];
                    rows.swap(a, b);
                    origin.swap(a, b);
                    swap_rows(&mut x, a, b, d);
                    fit = loss;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        choice.changed_rows = (0..n).filter(|&i| rows[i] != before[i]).count();
        choice.fit_after = fit as f64;
        choice.orders = chosen_orders;
        if let Some(entropy) = entropy {
            move_entropy(dataset, entropy, &origin, &before, rows);
        }
        Ok(Some(choice))
    }
}

/// The cells' entropy follows each row from where it came (`origin`: the row of `before` now at
/// each place); a cell that changed has the members' confidence no more (a category at the
/// entropy of a uniform vote, a continuous value with none).
pub(super) fn move_entropy(
    dataset: &Dataset,
    entropy: &mut Vec<Vec<Option<f64>>>,
    origin: &[usize],
    before: &[Vec<Value>],
    rows: &[Vec<Value>],
) {
    let moved: Vec<Vec<Option<f64>>> = origin.iter().map(|&o| entropy[o].clone()).collect();
    *entropy = moved;
    for (i, cells) in entropy.iter_mut().enumerate() {
        let was = &before[origin[i]];
        for (f, cell) in cells.iter_mut().enumerate().filter(|(f, _)| was[*f] != rows[i][*f]) {
            *cell = match dataset.features[f].is_categorical() {
                true => Some(1.0),
                false => None,
            };
        }
    }
}

/// The pairs of rows in different local batches of `local_batch` that may trade places (neither
/// `fixed`); none where there are more than `MOST_PAIRS`.
fn trading_pairs(n: usize, local_batch: usize, fixed: &[bool]) -> Vec<(usize, usize)> {
    let per_step = local_batch.max(1);
    let pairs: Vec<(usize, usize)> = (0..n)
        .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
        .filter(|&(a, b)| a / per_step != b / per_step && !fixed[a] && !fixed[b])
        .collect();
    if pairs.len() <= MOST_PAIRS { pairs } else { Vec::new() }
}

/// Copies of the rows `x` ([rows, d] encoded), the p-th row of each one of `tried`.
fn with_row_at(dataset: &Dataset, x: &[f32], p: usize, tried: &[Vec<Value>]) -> Vec<f32> {
    let d = dataset.d();
    tried
        .iter()
        .flat_map(|row| {
            let mut m = x.to_vec();
            m[p * d..(p + 1) * d].copy_from_slice(&encode_rows(dataset, std::slice::from_ref(row)));
            m
        })
        .collect()
}

/// Rows `a` < `b` of `x` ([rows, d]) trade places.
fn swap_rows(x: &mut [f32], a: usize, b: usize, d: usize) {
    let (head, tail) = x.split_at_mut(b * d);
    head[a * d..(a + 1) * d].swap_with_slice(&mut tail[..d]);
}

/// What a row tries: its members' rows, the span's rows nearest it, then the row with one cell as
/// members have it (the most voted first); none equal to it, at most `MOST_TRIED`. `span_first`
/// (FedSGD): the span's rows come first, `SPAN_NEAREST` of them, each line's point nearest the
/// row, its own categories' among them (the span corrects its continuous values): the members'
/// rows, 30 at B = 32, would fill `MOST_TRIED` before them, and they are rarely rows of the span.
fn tries(
    setup: &Setup<'_>,
    span: Option<&SpanRows>,
    members: &[Vec<Value>],
    row: &[Value],
    span_first: bool,
) -> Vec<Vec<Value>> {
    let dataset = setup.dataset;
    let mut out: Vec<Vec<Value>> = Vec::new();
    // A row the table's determined columns do not follow is no row of the table.
    let push = |mut r: Vec<Value>, out: &mut Vec<Vec<Value>>| {
        for d in &setup.determined {
            d.follow(&mut r);
        }
        if r != row && !out.contains(&r) && out.len() < MOST_TRIED {
            out.push(r);
        }
    };
    let members_rows = |out: &mut Vec<Vec<Value>>| {
        for m in members {
            push(m.clone(), out);
        }
    };
    if !span_first {
        members_rows(&mut out);
    }
    if let Some(span) = span {
        let mut near: Vec<(usize, usize)> = span
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| (span.differing(dataset, r, row), i))
            .filter(|&(off, _)| off > 0 || span_first)
            .collect();
        near.sort_unstable();
        let encoded = encode_rows(dataset, &[row.to_vec()]);
        let nearest = if span_first { SPAN_NEAREST } else { NEAREST };
        for &(_, i) in near.iter().take(nearest) {
            push(span.point_near(setup, i, &encoded), &mut out);
        }
    }
    if span_first {
        members_rows(&mut out);
    }
    // One cell as a member has it, by how many members have it.
    let mut cells: Vec<(usize, usize, Value)> = Vec::new();
    for f in 0..row.len() {
        let mut seen: Vec<(Value, usize)> = Vec::new();
        for m in members.iter().filter(|m| m[f] != row[f]) {
            match seen.iter_mut().find(|(v, _)| *v == m[f]) {
                Some((_, c)) => *c += 1,
                None => seen.push((m[f].clone(), 1)),
            }
        }
        cells.extend(seen.into_iter().map(|(v, c)| (c, f, v)));
    }
    cells.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, f, v) in cells {
        let mut r = row.to_vec();
        r[f] = v;
        push(r, &mut out);
    }
    out
}

/// The lowest finite loss and where it is.
pub(super) fn best(losses: &[f32]) -> Option<(usize, &f32)> {
    losses
        .iter()
        .enumerate()
        .filter(|(_, l)| l.is_finite())
        .min_by(|a, b| a.1.total_cmp(b.1))
}

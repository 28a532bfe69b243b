//! The ensemble pooled into one reconstruction: each member's rows (FedAvg's epoch copies
//! averaged), the priors' decoding where the attack composes them (rows decoded in the span,
//! rows proved from the ReLU pattern), the anchor member chosen by its fit to the update, every
//! member matched to it and the cells median-pooled with an entropy each (SPEC §5).
use std::borrow::Cow;

use crate::assess::enumerated::SpanRows;
use crate::assess::epochs::average_epochs;
use crate::assess::pooling::{ReadFrom, lower_median, pool};
use crate::assess::update_choice::{AT_ROUNDING, UpdateChoice};
use crate::assess::{entropy, matching::match_rows};
use crate::attack::inversion::ensemble::Members;
use crate::attack::inversion::setup::Setup;
use crate::attack::priors::activation_span::Unproved;
use crate::attack::priors::activation_span::certify::Certified;
use crate::attack::priors::activity::{self, ActivitySolver};
use crate::attack::priors::row_labels;
use crate::attack::registry::NotApplied;
use crate::error::Result;
use crate::report::{PriorFit, Provenance, SecondLayerSummary};
use crate::table::{Value, encode_rows};

/// Encoded rows ([n, d]) with a regression's label after each row's inputs (`targets`, [n]; empty
/// for a classifier: the rows as they are), as an inversion's dummy rows hold them.
pub(super) fn with_targets(x: Vec<f32>, targets: &[f32]) -> Vec<f32> {
    if targets.is_empty() {
        return x;
    }
    let d = x.len() / targets.len();
    x.chunks_exact(d)
        .zip(targets)
        .flat_map(|(row, &t)| row.iter().copied().chain([t]))
        .collect()
}

/// Members `order` of `v` ([members, len]), in that order; all of `v` as it is without an order
/// (or where `v` is empty: attacks without probabilities, members without certificates).
fn pick_members<'a, T: Copy>(v: &'a [T], order: Option<&[usize]>, len: usize) -> Cow<'a, [T]> {
    match order {
        Some(order) if !v.is_empty() => order
            .iter()
            .flat_map(|&m| v[m * len..(m + 1) * len].iter().copied())
            .collect(),
        _ => Cow::Borrowed(v),
    }
}

/// The members' rows as `pool_and_certify` takes them ([N, n, d] rows and probabilities, which
/// member rows the first layer's span decoded, a regression's labels) and the rows the first
/// layer's proof proved.
struct MemberRows<'a> {
    x: &'a [f32],
    probs: &'a [f32],
    in_span: &'a [bool],
    targets: &'a [f32],
    proved_rows: &'a [Vec<Value>],
    /// Whether `proved_rows` are the first layer's span enumerated (a proof of its own, which the
    /// second layer's theorem does not recheck) rather than the ReLU pattern's.
    enumerated: bool,
    /// The first layer's span's rows, where it was enumerated without a proof: candidates for the
    /// second layer's certificate, and consistent where a pooled row is one of them.
    span_rows: Option<&'a SpanRows>,
    /// The rows the update's choice tries from the span: `span_rows`, or a crowded span's
    /// (`Setup::enumerate_span`'s second answer).
    choice_span: Option<&'a SpanRows>,
}

/// What the attack produced before scoring.
pub struct Reconstruction {
    pub rows: Vec<Vec<Value>>,
    pub entropy: Option<Vec<Vec<Option<f64>>>>,
    pub loss_curve: Vec<(usize, f64)>,
    pub epoch_prior: Option<f64>,
    pub epoch_prior_fits: Vec<PriorFit>,
    /// Members' rows whose continuous values were solved in the span, of all their rows.
    pub decoded: (usize, usize),
    /// Rows proved exactly from the ReLU pattern (`attack::priors::activity`).
    pub proved: usize,
    /// The second layer's certificate (`attack::priors::activation_span`), where it applied.
    pub second_layer: Option<SecondLayerSummary>,
    /// Parts the attack composes that this batch's update ruled out, and why (the second layer's
    /// span leaving too few checks, say), beside the model's (`AttackConfig::not_applied`).
    pub not_applied: Vec<NotApplied>,
    /// How each row was obtained: proved (by either layer), consistent with the update but not
    /// proved (and why: `unproved`), or pooled from the ensemble.
    pub provenance: Vec<Provenance>,
    pub unproved: Vec<Option<Unproved>>,
    /// Rows the second layer's certificate proves only with a label (`Certified::IfLabelled`):
    /// consistent until `assess::peeled` reads each one's label off the update.
    pub pending_labels: Vec<usize>,
    /// Each row's label, read off the last layer where the rows explain it exactly
    /// (`attack::priors::row_labels`); None where they do not.
    pub row_labels: Option<Vec<usize>>,
    /// A regression's label of each row, in its units (None for a classifier), and whether it was
    /// read off the last layer exactly (`row_labels::read_values`) rather than pooled.
    pub values: Option<(Vec<f64>, bool)>,
    pub steps: Vec<usize>,
    /// The rows the client's simulated update chose (`assess::update_choice`).
    pub chosen: Option<UpdateChoice>,
}

impl Reconstruction {
    /// Whether row `i` is settled: proved, or placed by the update within half the scoring
    /// tolerance of a row of the batch (`Unproved::Imprecise`, reported consistent). The attack
    /// treats both alike (peeling takes them, no fallback touches them); only the report tells
    /// them apart, and a later fit that moves a near row keeps its claim only where the certificate
    /// holds at its new point (`assess::near_moved`).
    pub fn settled(&self, i: usize) -> bool {
        self.provenance[i] == Provenance::Proved || self.unproved[i] == Some(Unproved::Imprecise)
    }

    /// The rows held only as consistent: held by the update (`Provenance::held_by_update`) but
    /// not settled.
    pub fn held_only_as_consistent(&self) -> Vec<bool> {
        (0..self.rows.len())
            .map(|i| self.provenance[i].held_by_update() && !self.settled(i))
            .collect()
    }

    /// The rows the update cannot see that no guess was read for (`Unproved::UnseenNoGuess`):
    /// where the fallback runs, every cell of theirs falls back.
    pub fn unguessed(&self) -> Vec<bool> {
        (self.unproved.iter())
            .map(|u| *u == Some(Unproved::UnseenNoGuess))
            .collect()
    }

    /// Whether every row is settled.
    pub fn all_settled(&self) -> bool {
        (0..self.rows.len()).all(|i| self.settled(i))
    }

    /// Whether the rows the update chose explain it to its rounding (`update_choice::AT_ROUNDING`):
    /// no later step fits it better there but by rounding, so none runs.
    pub fn explains_update(&self) -> bool {
        self.chosen.as_ref().is_some_and(|c| c.fit_after <= AT_ROUNDING)
    }

    /// Whether the rows explain the update to its rounding and the update holds every one
    /// (proved, or consistent: seen by it, `assess::seen_rows`): nothing after the pooling
    /// changes them (no rerun, no rows inverted or placed again, no fallback).
    pub fn held_by_fit(&self) -> bool {
        self.explains_update() && self.provenance.iter().all(|p| p.held_by_update())
    }
}

/// Pooled rows, their cells' entropy, a regression's pooled labels, and each row's members as
/// matched to it.
type Pooled = (
    Vec<Vec<Value>>,
    Option<Vec<Vec<Option<f64>>>>,
    Vec<f32>,
    Vec<Vec<Vec<Value>>>,
);

/// Why each consistent row is not proved, in words (None for the others).
pub fn why_not_proved(unproved: &[Option<Unproved>]) -> Vec<Option<String>> {
    unproved.iter().map(|u| u.map(|u| u.why())).collect()
}

impl Setup<'_> {
    /// Match and pool the ensemble into one reconstruction (choosing the epoch prior's weight
    /// where several ran); `reconstruct` runs it again from it (`assess::refine`).
    pub(crate) async fn reconstruct_once(&self, inversion: Members) -> Result<Reconstruction> {
        let (dataset, config) = (self.dataset, self.config);
        let b = config.rows();
        // A regression's members carry each row's label after its inputs.
        let (inversion, member_targets) = self.split_targets(inversion);
        // Each member's one reconstruction of the client's rows (FedAvg: its epochs averaged).
        let (mut x, mut probs) = self.member_rows(&inversion);
        let mut in_span = match self.active_subspace().filter(|_| self.inverts.relaxed) {
            Some(span) => span.decode_members(&self.layout, &mut x, &mut probs),
            None => vec![false; x.len() / dataset.d()],
        };
        // The first layer's span enumerated (`assess::enumerated`): where it holds exactly the
        // batch every row is proved; elsewhere the members snap to the rows it holds.
        let (span_rows, crowd) = self.enumerate_span();
        let choice_span = crowd.or(span_rows);
        if let Some(span) = span_rows {
            if span.is_batch() {
                activity::adopt(&span.encoded, &self.layout, b, &mut x, &mut probs, &mut in_span);
                let proved_rows = span.proved_rows();
                let pooled = MemberRows {
                    x: &x,
                    probs: &probs,
                    in_span: &in_span,
                    targets: &member_targets,
                    proved_rows: &proved_rows,
                    enumerated: true,
                    // The rows read loosely are told apart by the span (`SpanRows::unproved`).
                    span_rows: (!span.proof).then_some(span),
                    choice_span,
                };
                let recon = self.pool_and_certify(&inversion, pooled).await?;
                return self.finish(recon, span_rows).await;
            }
            self.snap_to_span(span, &mut x, &mut probs, &mut in_span);
        }
        // The second layer's certificate alone first, where it proves: at B = 32 on Adult it proves
        // the batch after 300 steps where the first layer's proof mostly cannot, and that proof's
        // search took a second (seeds 0-3) for nothing.
        let mut second_alone = None;
        if self.second_layer_span(b).is_some_and(|span| span.proves()) {
            let pooled = MemberRows {
                x: &x,
                probs: &probs,
                in_span: &in_span,
                targets: &member_targets,
                proved_rows: &[],
                enumerated: false,
                span_rows,
                choice_span,
            };
            let recon = self.pool_and_certify(&inversion, pooled).await?;
            if recon.all_settled() {
                return self.finish(recon, span_rows).await;
            }
            second_alone = Some(recon);
        }
        let proved_rows = self.prove_rows(&mut x, &mut probs, &mut in_span);
        // Nothing proved by the first layer: pooling again would give the same rows.
        if let Some(recon) = second_alone.filter(|_| proved_rows.is_empty()) {
            return self.finish(recon, span_rows).await;
        }
        let pooled = MemberRows {
            x: &x,
            probs: &probs,
            in_span: &in_span,
            targets: &member_targets,
            proved_rows: &proved_rows,
            enumerated: false,
            span_rows,
            choice_span,
        };
        let recon = self.pool_and_certify(&inversion, pooled).await?;
        self.finish(recon, span_rows).await
    }

    /// The rows no proof reached peeled off the update (`assess::peeled`), then the span's rows
    /// left placed among those still left (`assess::span_left`), where the chosen rows do not
    /// explain the update already (`update_choice::AT_ROUNDING`); where they do, those the update
    /// sees are consistent with it (`assess::seen_rows`).
    async fn finish(&self, recon: Reconstruction, span_rows: Option<&SpanRows>) -> Result<Reconstruction> {
        let mut recon = self.peel_rest(recon);
        // Rows the update's choice found to explain the update to its rounding leave nothing
        // to place.
        if recon.explains_update() {
            let open: Vec<usize> = (0..recon.rows.len())
                .filter(|&i| recon.provenance[i] == Provenance::Ensemble)
                .collect();
            let label_of = self.labels_paired(&recon);
            let chosen = open.len();
            self.hold_seen(&mut recon, &open, &label_of, |fit| Unproved::ChosenFit { chosen, fit });
            return Ok(recon);
        }
        self.place_span_rows_left(span_rows, &mut recon).await?;
        Ok(recon)
    }

    /// The span a report says why it proved nothing: `span_rows`, or where the search refused the
    /// span, the crowded span's rows kept for the update's choice alone.
    fn span_told<'s>(&'s self, span_rows: Option<&'s SpanRows>) -> Option<&'s SpanRows> {
        match self.enumerate_span() {
            (None, crowd) => span_rows.or(crowd),
            (Some(_), _) => span_rows,
        }
    }

    /// The members' rows pooled (under each prior candidate, keeping the best fit), certified by
    /// the second layer where the first layer's proof has not proved them, and labelled.
    async fn pool_and_certify(&self, inversion: &Members, members: MemberRows<'_>) -> Result<Reconstruction> {
        let (dataset, config) = (self.dataset, self.config);
        let b = config.rows();
        let MemberRows {
            x,
            probs,
            in_span,
            targets: member_targets,
            proved_rows,
            enumerated,
            span_rows,
            choice_span,
        } = members;
        let proved = proved_rows.len();
        let decoded = (in_span.iter().filter(|&&c| c).count(), in_span.len());
        let candidates = config.prior_candidates();
        let ensemble = self.members / candidates.len();
        let (k, (mut rows, mut entropy, targets, matched), fits) =
            self.pool_best_prior(x, probs, in_span, member_targets).await?;
        let members_x = &x[k * ensemble * b * dataset.d()..(k + 1) * ensemble * b * dataset.d()];
        let first_layer: Vec<bool> = rows.iter().map(|row| proved_rows.contains(row)).collect();
        // FedAvg chooses before the second layer's certificate; FedSGD after it, among the rows no
        // proof settled (before, the choice moved rows the certificate then proved, and their
        // cells lost the members' confidence: an Adult batch of 64 on [100, 100]).
        let gradient = self.replays_gradient();
        let mut chosen = match gradient {
            true => None,
            false => {
                let entropy_of = entropy.as_mut();
                self.choose_rows(inversion, choice_span, &matched, &mut rows, entropy_of, &first_layer)
                    .await?
            }
        };
        // FedAvg's adoptions are nearness, not proof: held to the update below (`assess::adoptions`)
        // where the client's order is known (orders chosen for the rows before judge no others).
        let before_certificate = (!gradient && self.known_order().is_some()).then(|| rows.clone());
        let second = self.certify_by_second_layer(&mut rows, &mut entropy, members_x, &first_layer, span_rows);
        let (mut second_layer, mut certified, mut not_applied) = match second {
            Ok((summary, certified)) => (Some(summary), certified, Vec::new()),
            Err(why) => (None, vec![Certified::No; rows.len()], why.into_iter().collect()),
        };
        if let Some(before) = before_certificate {
            self.undo_misfit_adoptions(&before, &mut rows, &mut certified, second_layer.as_mut())
                .await?;
        }
        if gradient {
            let settled: Vec<bool> = (first_layer.iter().zip(&certified))
                .map(|(&first, c)| first || *c != Certified::No)
                .collect();
            let entropy_of = entropy.as_mut();
            chosen = self
                .choose_rows(inversion, choice_span, &matched, &mut rows, entropy_of, &settled)
                .await?;
        }
        let first_checked = match enumerated {
            true => vec![None; rows.len()],
            false => self.recheck_first_layer(&rows, &first_layer),
        };
        // A first-layer row the theorem does not hold for is neither counted proved nor certain
        // of its continuous values (as peeling's unlabelled rows).
        let rechecked: Vec<usize> = (0..rows.len()).filter(|&i| first_checked[i].is_some()).collect();
        let proved = proved.saturating_sub(rechecked.len());
        if let Some(entropy) = entropy.as_mut() {
            // A row near a batch row (half the scoring tolerance) keeps its values' confidence.
            for &i in rechecked
                .iter()
                .filter(|&&i| first_checked[i] != Some(Unproved::Imprecise))
            {
                entropy::uncertain_continuous(dataset, &mut entropy[i]);
            }
        }
        let in_first_span = |row: &Vec<Value>| span_rows.is_some_and(|s| s.telling() && s.holds(dataset, row));
        let (provenance, unproved): (Vec<Provenance>, Vec<Option<Unproved>>) = certified
            .iter()
            .zip(first_layer.iter().zip(first_checked))
            .zip(&rows)
            .map(|((&c, (&first, checked)), row)| match (c, first, checked) {
                (_, true, Some(why)) | (Certified::Fits(why) | Certified::IfLabelled(why), false, _) => {
                    (Provenance::Consistent, Some(why))
                }
                (Certified::Yes, ..) | (_, true, None) => (Provenance::Proved, None),
                (Certified::Near, false, _) => (Provenance::Consistent, Some(Unproved::Imprecise)),
                (Certified::No, false, _) if in_first_span(row) => {
                    (Provenance::Consistent, span_rows.map(|s| s.unproved(dataset, row)))
                }
                (Certified::No, false, _) => (Provenance::Ensemble, None),
            })
            .unzip();
        // Why the first layer's span proved nothing, where rows are left that no proof reached.
        if provenance.iter().any(|p| *p != Provenance::Proved) {
            not_applied.extend(self.span_told(span_rows).and_then(SpanRows::why_not));
        }
        let pending_labels: Vec<usize> = (0..rows.len())
            .filter(|&i| matches!(certified[i], Certified::IfLabelled(_)) && !first_layer[i])
            .collect();
        let (row_labels, values) = match &dataset.target {
            None => (self.labels_of_rows(&rows), None),
            Some(_) => (None, Some(self.values_of_rows(&rows, &targets).await?)),
        };
        Ok(Reconstruction {
            rows,
            entropy,
            loss_curve: inversion.loss_curve.clone(),
            epoch_prior: (candidates.len() > 1 || candidates[0] > 0.0).then_some(candidates[k]),
            epoch_prior_fits: fits,
            decoded,
            proved,
            second_layer,
            not_applied,
            provenance,
            unproved,
            pending_labels,
            row_labels,
            values,
            steps: inversion.steps.clone(),
            chosen,
        })
    }

    /// The members' rows pooled under each epoch-prior candidate's share of them, keeping the
    /// candidate whose pooled rows fit the update best: its index, its pooling, and every
    /// candidate's fit (none where there is one candidate).
    async fn pool_best_prior(
        &self,
        x: &[f32],
        probs: &[f32],
        in_span: &[bool],
        member_targets: &[f32],
    ) -> Result<(usize, Pooled, Vec<PriorFit>)> {
        let (dataset, b) = (self.dataset, self.config.rows());
        let candidates = self.config.prior_candidates();
        let ensemble = self.members / candidates.len();
        let mut fits = Vec::new();
        let mut best: Option<(f32, usize, Pooled)> = None;
        for (k, _) in candidates.iter().enumerate() {
            let span = k * ensemble * b * dataset.d()..(k + 1) * ensemble * b * dataset.d();
            // The unrelaxed baselines have no probabilities.
            let member_probs = if probs.is_empty() {
                &probs[..]
            } else {
                &probs[span.clone()]
            };
            let rows_span = k * ensemble * b..(k + 1) * ensemble * b;
            let targets = member_targets.get(rows_span.clone()).unwrap_or_default();
            let certified = if in_span.is_empty() {
                &in_span[..]
            } else {
                &in_span[rows_span]
            };
            let (rows, entropy, targets, matched) =
                self.pool(&x[span], member_probs, certified, targets, ensemble).await?;
            // Several priors: keep the one whose pooled rows fit the update best.
            let fit = if candidates.len() > 1 {
                let fit = self
                    .projected_losses(with_targets(encode_rows(dataset, &rows), &targets), 1)
                    .await?[0];
                fits.push(PriorFit {
                    lambda: candidates[k],
                    fit: fit as f64,
                });
                fit
            } else {
                0.0
            };
            if best.as_ref().is_none_or(|(f, ..)| fit < *f) {
                best = Some((fit, k, (rows, entropy, targets, matched)));
            }
        }
        let (_, k, pooled) = best.expect("at least one prior candidate");
        Ok((k, pooled, fits))
    }

    /// A regression's members ([N, rows, d + 1]) as rows of inputs and each row's label
    /// (standardised, [N·rows]); a classifier's as they are, with no labels.
    fn split_targets(&self, mut inversion: Members) -> (Members, Vec<f32>) {
        let (d, w) = (self.dataset.d(), self.row_width());
        if w == d {
            return (inversion, Vec::new());
        }
        let targets = inversion.x.chunks_exact(w).map(|row| row[d]).collect();
        inversion.x = inversion.x.chunks_exact(w).flat_map(|row| row[..d].to_vec()).collect();
        // FedAvg's copies per epoch: the first copy's labels, to which the others are matched.
        let copies = self.config.rows_per_member() / self.config.rows();
        let targets: Vec<f32> = match copies {
            1 => targets,
            _ => targets
                .chunks_exact(self.config.rows_per_member())
                .flat_map(|member| member[..self.config.rows()].to_vec())
                .collect(),
        };
        (inversion, targets)
    }

    /// A regression's label of every row (in its units), and whether it is exact. The cosine
    /// objective cannot tell the labels' residuals zᵢ − yᵢ from any multiple of them, so the
    /// ensemble's labels (`pooled`, standardised) are not read as they are. In order: read off the
    /// last layer's FedSGD gradient where the rows explain it exactly (`row_labels::read_values`);
    /// fitted to it by least squares where the rows' last-layer inputs are independent
    /// (`row_labels::fit_values`); otherwise the pooled residuals scaled by the one factor that
    /// best fits the update's size (exact for a gradient, which is linear in the residuals; a
    /// first-order fit through FedAvg's local steps).
    async fn values_of_rows(&self, rows: &[Vec<Value>], pooled: &[f32]) -> Result<(Vec<f64>, bool)> {
        let target = self.dataset.target.as_ref().expect("a regression");
        let (params, observed, model) = (&self.scenario.params, &self.scenario.observed, self.config.model());
        let in_units = |v: Vec<f64>| v.into_iter().map(|z| target.value(z)).collect();
        let x32 = encode_rows(self.dataset, rows);
        let x: Vec<f64> = x32.iter().map(|&v| v as f64).collect();
        let b = rows.len();
        if self.config.protocol == crate::config::Protocol::Fedsgd {
            if let Some(read) = row_labels::read_values(params, model, observed, &x, b) {
                return Ok((in_units(read), true));
            }
            if let Some(fit) = row_labels::fit_values(params, model, observed, &x, b) {
                return Ok((in_units(fit), false));
            }
        }
        let (_, z) = params.forward_host(&x, b, model);
        let residual: Vec<f64> = z.iter().zip(pooled).map(|(z, &y)| z - y as f64).collect();
        let round = crate::client::simulate::Round {
            protocol: self.config.protocol,
            clients: self.config.clients,
            defence: None,
            seed: 0,
            model,
        };
        let targets: Vec<f32> = z.iter().zip(&residual).map(|(z, r)| (z - r) as f32).collect();
        let unit = crate::client::simulate::simulate_round(params, &x32, &targets, &round).await?;
        let c = (unit.dot(observed) / unit.dot(&unit)).max(0.0);
        let c = if c.is_finite() { c } else { 1.0 };
        Ok((
            in_units(z.iter().zip(&residual).map(|(z, r)| z - c * r).collect()),
            false,
        ))
    }

    /// Every row's label from the last layer's gradient (`attack::priors::row_labels`) on a FedSGD update
    /// (FedAvg's sums several steps' residuals): the read is its own certificate, holding only
    /// where the rows, all of them, explain that gradient exactly with a label each; in practice
    /// where every row is proved, and on no perturbed update.
    pub(crate) fn labels_of_rows(&self, rows: &[Vec<Value>]) -> Option<Vec<usize>> {
        if rows.is_empty() || self.config.protocol != crate::config::Protocol::Fedsgd {
            return None;
        }
        let x: Vec<f64> = encode_rows(self.dataset, rows).iter().map(|&v| v as f64).collect();
        row_labels::read_labels(
            &self.scenario.params,
            self.config.model(),
            &self.scenario.observed,
            &x,
            rows.len(),
        )
    }

    /// Whether a proof can reach every row of the batch: the second layer's span proves (FedSGD,
    /// and it leaves checks), or the first layer's span has the batch's full rank (the ReLU proof,
    /// composed on FedSGD only). Both need a relaxed inversion that composes them.
    pub fn may_prove_batch(&self) -> bool {
        let b = self.config.rows();
        let first = self.config.priors().proof
            && self.inverts.relaxed
            && self.active_subspace().is_some_and(|s| s.summary.rank == b);
        first || self.second_layer_span(b).is_some_and(|s| s.proves())
    }

    /// TabLeak with the subspace prior on FedSGD: the batch's rows proved exactly from the first
    /// layer's ReLU pattern (`attack::priors::activity`), the members' rows as candidates. Every member's
    /// row nearest a proved row becomes it (and certified), so the pooled row is the proved one
    /// and the ensemble agrees on it. Returns the rows proved.
    pub fn prove_rows(&self, x: &mut [f32], probs: &mut [f32], in_span: &mut [bool]) -> Vec<Vec<Value>> {
        let b = self.config.rows();
        let Some(span) = self
            .active_subspace()
            .filter(|_| self.inverts.relaxed && self.config.priors().proof)
        else {
            return Vec::new();
        };
        let Some(v) = span.hyperplane.as_ref() else {
            return Vec::new();
        };
        let sizes = &self.scenario.params.sizes;
        let step = activity::precision_steps(self.dataset);
        let Some(solver) = ActivitySolver::new(
            self.scenario.observed.weight(0),
            &self.scenario.params.weights[0],
            &self.scenario.params.biases[0],
            v,
            (sizes[0], sizes[1], b),
            &self.layout,
            step,
        ) else {
            return Vec::new();
        };
        let proved = solver.solve(x).rows;
        if proved.is_empty() {
            return Vec::new();
        }
        activity::adopt(&proved, &self.layout, b, x, probs, in_span);
        proved
            .iter()
            .map(|row| self.dataset.decode(&row.iter().map(|&v| v as f32).collect::<Vec<_>>()))
            .collect()
    }

    /// Each member's rows of the client's batch, [N, n, d] (x and probabilities): as inverted, or
    /// for TabLeak on FedAvg its per-epoch copies matched to the first and averaged.
    fn member_rows(&self, inversion: &Members) -> (Vec<f32>, Vec<f32>) {
        let copies = self.config.rows_per_member() / self.config.rows();
        if copies == 1 {
            return (inversion.x.clone(), inversion.probs.clone());
        }
        let len = self.config.rows_per_member() * self.dataset.d();
        let (mut x, mut probs) = (Vec::new(), Vec::new());
        for m in 0..self.members {
            let span = m * len..(m + 1) * len;
            let (mx, mp) = average_epochs(
                &self.layout,
                &self.rules,
                &inversion.x[span.clone()],
                inversion.probs.get(span).unwrap_or(&[]),
                copies,
                |row| self.dataset.decode(row),
            );
            x.extend(mx);
            probs.extend(mp);
        }
        (x, probs)
    }

    /// Pool `members` members' rows ([members, n, d]) into one reconstruction: the anchor is the
    /// member whose projected rows fit the update best; every member is matched to it and the
    /// cells median-pooled, with an entropy per cell. One member is its own reconstruction.
    /// A regression's labels (`targets`, [members, n], or empty) pool by their median over the
    /// pooled members' matched rows.
    pub(super) async fn pool(
        &self,
        x: &[f32],
        probs: &[f32],
        certified: &[bool],
        targets: &[f32],
        members: usize,
    ) -> Result<Pooled> {
        let (dataset, b, d) = (self.dataset, self.config.rows(), self.dataset.d());
        let decoded: Vec<Vec<Vec<Value>>> = (0..members)
            .map(|m| {
                (0..b)
                    .map(|i| dataset.decode(&x[(m * b + i) * d..(m * b + i + 1) * d]))
                    .collect()
            })
            .collect();
        if members == 1 {
            let rows = decoded.into_iter().next().unwrap();
            let matched = rows.iter().map(|r| vec![r.clone()]).collect();
            return Ok((rows, None, targets.to_vec(), matched));
        }
        let projected: Vec<f32> = decoded.iter().flat_map(|rows| encode_rows(dataset, rows)).collect();
        let projected = with_targets(projected, targets);
        let scores = self.projected_losses(projected, members).await?;
        let anchor = (0..members).min_by(|&a, &b| scores[a].total_cmp(&scores[b])).unwrap();
        // A regression pools only the better-fitting half of its members. A row's gradient is its
        // residual zᵢ − yᵢ times its own part, so a member whose label started on the wrong side
        // of the row's output must take that residual through zero, where the row leaves the
        // update altogether; members caught there fit the update far worse (on Adult's
        // hours-per-week under linear regression at B = 1 about half of them), and a median over
        // them would pull the pooled cells off the batch.
        let kept: Option<Vec<usize>> = (!targets.is_empty()).then(|| {
            let mut order: Vec<usize> = (0..members).collect();
            order.sort_by(|&a, &c| scores[a].total_cmp(&scores[c]));
            order.truncate(members.div_ceil(2));
            order
        });
        let pick_x = |v| pick_members(v, kept.as_deref(), b * d);
        let (x, probs) = (pick_x(x), pick_x(probs));
        let targets = pick_members(targets, kept.as_deref(), b);
        let certified = pick_members(certified, kept.as_deref(), b);
        let order = kept.unwrap_or_else(|| (0..members).collect());
        let perm: Vec<Vec<usize>> = order
            .iter()
            .map(|&m| match_rows(&self.rules, &decoded[anchor], &decoded[m]))
            .collect();
        let members = order.len();
        let read_from: Vec<ReadFrom> = self.determined.iter().map(|d| ReadFrom::of(dataset, d)).collect();
        let pooled = pool(&self.layout, &read_from, &x, &probs, &certified, members, b, &perm);
        let targets = match targets.is_empty() {
            true => Vec::new(),
            false => (0..b)
                .map(|i| {
                    let mut v: Vec<f64> = (0..members).map(|m| targets[m * b + perm[m][i]] as f64).collect();
                    lower_median(&mut v) as f32
                })
                .collect(),
        };
        // Each pooled row's members, as matched to it (`assess::update_choice` tries them).
        let matched = (0..b)
            .map(|i| {
                order
                    .iter()
                    .zip(&perm)
                    .map(|(&m, p)| decoded[m][p[i]].clone())
                    .collect()
            })
            .collect();
        Ok((
            pooled.rows.iter().map(|r| dataset.decode(r)).collect(),
            Some(pooled.entropy),
            targets,
            matched,
        ))
    }
}

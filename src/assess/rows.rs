//! The assessment of an attack on a table's rows (TabLeak, the baselines): its reconstruction
//! matched to the true rows and scored, beside the random guess on the same batch; and, for a
//! received update, the reconstruction with its confidence alone.
use crate::assess::fallback::{
    AcrossShadows, Calibration, FallbackSummary, Guess, LOWER_BOUND_Z, decided, explains_no_better, mix,
};
use crate::assess::matching::Rule;
use crate::assess::reconstruct::{Reconstruction, why_not_proved};
use crate::assess::scoring::score;
use crate::assess::table_prior::ColumnValues;
use crate::assess::update_choice::EpochOrders;
use crate::attack::baselines::{random_rows, random_values};
use crate::attack::inversion::driver::Progress;
use crate::attack::inversion::ensemble::Members;
use crate::attack::inversion::setup::Setup;
use crate::attack::priors::row_labels;
use crate::config::Unreplayable;
use crate::error::{Error, Result};
use crate::report::reconstruction::{ReconstructionReport, UpdateFit};
use crate::report::shown::RowsShown;
use crate::report::{AttackDetails, Provenance, Report, RowDetails, build_report};
use crate::seed::seed_for;
use crate::table::{Dataset, Value, encode_rows};

impl Setup<'_> {
    /// Match and pool the ensemble (None: the random baseline, which inverts nothing) into one
    /// reconstruction, for `report_rows`.
    pub async fn reconstruction(
        &self,
        inverted: Option<Members>,
        progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<Reconstruction> {
        Ok(match inverted {
            None => Reconstruction {
                rows: self.random_guess(),
                entropy: None,
                loss_curve: Vec::new(),
                epoch_prior: None,
                epoch_prior_fits: Vec::new(),
                decoded: (0, 0),
                proved: 0,
                second_layer: None,
                not_applied: Vec::new(),
                provenance: vec![Provenance::Prior; self.config.rows()],
                unproved: vec![None; self.config.rows()],
                pending_labels: Vec::new(),
                row_labels: None,
                values: self.dataset.target.as_ref().map(|_| (self.random_values(), false)),
                steps: Vec::new(),
                chosen: None,
            },
            Some(inversion) => self.reconstruct(inversion, progress).await?,
        })
    }

    /// The random baseline: what an attacker knows without the update (the table's marginals),
    /// scored on the same batch, and the cells a fallback takes.
    pub(crate) fn random_guess(&self) -> Vec<Vec<Value>> {
        random_rows(self.dataset, self.config.rows(), seed_for(self.config.seed, 5))
    }

    /// A regression's labels drawn from the table's (the random guess's, and the baseline the
    /// reconstructed labels are set beside).
    fn random_values(&self) -> Vec<f64> {
        random_values(self.dataset, self.config.rows(), seed_for(self.config.seed, 15))
    }

    /// A reconstruction scored into the report.
    pub fn report_rows(
        &self,
        mut recon: Reconstruction,
        calibration: Option<Calibration>,
        seconds: f64,
    ) -> Result<Report> {
        let (dataset, config) = (self.dataset, self.config);
        let Some(truth) = &self.scenario.truth else {
            return Err(Error::Config("a received update has no truth to score against".into()));
        };
        let random_guess = self.random_guess();
        let table_guess = self.table_guess();
        // Where the server holds the table's rows (its shadow client's were), rows that fall back
        // whole take its guess from them where its own batches show that guess better than
        // the marginals' draw; else they take the draw.
        let guess = Guess {
            draw: random_guess.clone(),
            table: (self.fallback_table_guess())
                .filter(|_| calibration.is_some_and(|c| c.shadow_of_table))
                .map(<[_]>::to_vec),
        };
        // The table's prior on the ensemble's continuous cells, as the shadow client chose it.
        if let (Some(k), Some(entropy)) = (calibration.and_then(|c| c.prior_spread), recon.entropy.as_ref()) {
            let values = ColumnValues::of(dataset, &truth.indices);
            let open: Vec<bool> = recon.provenance.iter().map(|p| !p.held_by_update()).collect();
            values.read(dataset, &self.rules, &mut recon.rows, entropy, &open, k);
        }
        let mask = calibration.and_then(|c| fall_back(&mut recon, &c, &self.rules, &guess));
        // The cells that fell back, in rows that kept others, imputed where the shadow chose it.
        // With it, what the same imputation gives with no information from the update.
        let mut without_update = None;
        if let Some((_, mask)) = mask.as_ref().filter(|(c, _)| c.imputed) {
            let sample = super::imputed::Sample::of(dataset, &truth.indices, &[]);
            recon.rows = super::imputed::impute(&self.rules, &recon.rows, mask, &sample);
            without_update = Some(super::imputed::without_update(
                dataset,
                &self.rules,
                &truth.rows,
                mask,
                &guess,
                &sample,
                config.seed,
            ));
        }
        let read = self.put_rows_by_category(&mut recon, dataset, mask.as_ref().map(|(c, m)| (c, m.as_slice())));
        let scored = score(&self.rules, &truth.rows, &recon.rows);
        let fallback = mask.map(|(c, mask)| FallbackSummary {
            imputed_without_update: without_update,
            table_guess: self.table_guess_weighed().filter(|_| c.shadow_of_table),
            ..FallbackSummary::of(&c, &mask, Some(&scored))
        });
        let read_gain = fallback.as_ref().and_then(|f| f.read_gain);
        let random = score(&self.rules, &truth.rows, &random_guess);
        let settled: Vec<bool> = (0..recon.rows.len()).map(|i| recon.settled(i)).collect();
        let mut report = build_report(
            dataset,
            config,
            &self.backend,
            &truth.rows,
            &recon.rows,
            recon.entropy.as_deref(),
            &scored,
            random.accuracy,
            truth.label_accuracy,
            recon.loss_curve,
            seconds,
        );
        report.model_accuracy = self.scenario.model_accuracy;
        report.table_baseline = table_guess.map(|rows| score(&self.rules, &truth.rows, rows).accuracy.total);
        report.not_applied.extend(recon.not_applied.iter().cloned());
        report.set_provenance(&recon.provenance, &why_not_proved(&recon.unproved), &scored.assignment);
        let truth_labels: Vec<usize> = truth.indices.iter().map(|&i| dataset.labels[i]).collect();
        if let Some(labels) = &recon.row_labels {
            report.set_row_labels(&dataset.classes, labels, &scored.assignment, &truth_labels);
        }
        let shown = (self.rows_shown(&truth.rows, &truth_labels))
            .map(|shown| RowsShown::of(&shown, report.rows.iter().map(|r| &r.correct[..])));
        let labels = calibration.and_then(|c| c.labels);
        let mut prior_labels = 0;
        if let (Some(l), Some((values, _))) = (labels.filter(|l| l.falls_back()), recon.values.as_mut()) {
            for (v, settled) in values.iter_mut().zip(settled) {
                if !settled {
                    *v = l.prior_value;
                    prior_labels += 1;
                }
            }
        }
        if let Some((values, exact)) = &recon.values {
            report.set_row_values(
                dataset,
                (values, *exact),
                &scored.assignment,
                &truth.values(dataset),
                &self.random_values(),
            );
        }
        if let (Some(g), Some(l)) = (report.regression.as_mut(), labels) {
            g.prior_labels = prior_labels;
            g.shadow_update_within_tolerance = Some(l.shadow_update);
            g.shadow_prior_within_tolerance = Some(l.shadow_prior);
        }
        report.details = AttackDetails::Rows(RowDetails {
            epoch_prior: recon.epoch_prior,
            epoch_prior_fits: recon.epoch_prior_fits,
            subspace: self.summary(recon.decoded, recon.proved),
            second_layer: recon.second_layer,
            fallback,
            answered_after: None,
            ensemble: self.rounds.clone(),
            chosen: recon.chosen,
            categories_held: self.categories_held().map(|c| c.with_rows_read(read, read_gain)),
            determined: self.determined.iter().map(|d| d.described(self.dataset)).collect(),
            shown,
            cells_shown: None,
        });
        report.member_steps = recon.steps;
        Ok(report)
    }

    /// How a simulated client's reconstruction falls back to the table's marginals
    /// (`fallback_on` with the table and the random baseline's draw).
    pub async fn fallback(
        &self,
        recon: &Reconstruction,
        progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<Option<Calibration>> {
        if !self.wants_fallback() {
            return Ok(None);
        }
        self.fallback_on(recon, self.dataset, &self.random_guess(), progress)
            .await
    }

    /// What `fall_back` applies to `recon`: the shadow client's thresholds, its rows drawn from
    /// `marginals`, and how far the update is from explained by `recon` and by `guess`. None
    /// where the attack does not fall back or the update holds every row (such rows never fall
    /// back: the shadow client would have nothing to decide, an activation other than ReLU would
    /// double the attack's time for it, and the fits, alike with nothing left to guess, would
    /// call the attack exhausted). The fits are read where the server replays the client's
    /// update, a reshuffling client's in the orders its update chose for the rows (in an order
    /// not chosen, our rows and the marginals' fitted alike badly, and 93 %-right rows were
    /// thrown away), so that its report says how far the update is from explained and an
    /// attack that explains it no better than the marginals is called exhausted.
    pub async fn fallback_on(
        &self,
        recon: &Reconstruction,
        marginals: &Dataset,
        guess: &[Vec<Value>],
        progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<Option<Calibration>> {
        if !self.falls_back_on(marginals) {
            return Ok(None);
        }
        // Settled rows (proved, or near) are held too; rows held only as consistent, where the
        // update tells them from a guess (`consistent_like_draw`).
        let consistent_like_draw = self.consistent_like_draw(recon, guess);
        let every_held = recon.provenance.iter().all(|p| p.held_by_update());
        if every_held && !consistent_like_draw {
            return Ok(None);
        }
        let holds_rows = recon.provenance.iter().any(|p| p.held_by_update());
        let settles_rows = (0..recon.rows.len()).any(|i| recon.settled(i));
        let searched = recon.chosen.as_ref().map(|c| c.searched);
        let Some((c, shadow)) = self
            .calibrate_fallback_on(marginals, (holds_rows, settles_rows), searched, progress)
            .await?
        else {
            return Ok(None);
        };
        // The rows a fallback would put in: the table's guess where the server holds the table.
        let guess = match c.shadow_of_table {
            true => self.fallback_table_guess().unwrap_or(guess),
            false => guess,
        };
        // The fits count the rows this calibration holds (`Calibration::held`): where it does
        // not hold the consistent rows, the guess takes their place in the second.
        let c = Calibration {
            consistent_like_draw,
            ..c
        };
        let held = c.held(recon);
        let fits = self.client_fits(recon, &held, guess).await?;
        let picked_from_span = (recon.chosen.as_ref())
            .and_then(|c| c.pursuit.as_ref())
            .is_some_and(|p| p.kept);
        let mut c = Calibration {
            fits,
            holds_rows: held.contains(&true),
            picked_from_span,
            ..c
        };
        let first_draw = shadow.first_draw;
        if c.wants_whole_shadow_fit(self.config.members()) {
            c.shadow_fit = Some(shadow.whole_fit(progress).await?);
        }
        // A reshuffling client's thresholds weighed on more shadow batches, where they keep some
        // cell the update does not hold (else there is nothing to weigh) and its rows' fit is
        // known (both rules weigh it).
        let keeps_open = recon.entropy.as_ref().is_some_and(|e| {
            (c.mask(&self.rules, e, &held).iter().zip(&held)).any(|(row, &h)| !h && row.iter().any(|&m| !m))
        });
        if let (Some(first), Some([fit, _]), true) = (first_draw, c.fits, keeps_open) {
            let draws = self.shadow_draws(marginals, searched, c.holds_rows, c.thresholds, (first, fit), progress);
            c.across = Some(AcrossShadows::of(&draws.await?, LOWER_BOUND_Z));
        }
        Ok(Some(c))
    }

    /// `fits` where the server replays the client's update: a reshuffling client's rows in the
    /// orders its update chose for them; None where it cannot.
    pub(crate) async fn replayed_fits(
        &self,
        recon: &Reconstruction,
        held: &[bool],
        guess: &[Vec<Value>],
    ) -> Result<Option<[f64; 2]>> {
        Ok(match self.config.unreplayable(self.config.rows()) {
            None => Some(self.fits(recon, held, guess, None).await?),
            Some(Unreplayable::Reshuffled) => match chosen_orders(recon) {
                Some(orders) => Some(self.fits(recon, held, guess, Some(&orders.order)).await?),
                None => None,
            },
            Some(Unreplayable::Randomised) => None,
        })
    }

    /// `replayed_fits` of the client's own reconstruction. A reshuffling client's rows are judged
    /// in the orders its update chose for them, but the second layer's certificate adopts rows
    /// after that choice, into the slots the ensemble left whatever their labels, and in orders
    /// chosen for the rows before, rows nearly the batch can read as explaining the update no
    /// better than the guess: Flower's recipe on [100, 100], Adult trained one epoch, seed 2,
    /// 1 − cos 1.13 against the guess's 0.88, every cell sent to the table's guess (68.8 %), where
    /// the rows were 97.8 % right. Where the fits would say so (`Calibration::exhausted`), the
    /// orders are searched again for the rows as they are, each free to take a position of
    /// another label (`orders_for_rows`), and the fits taken in those: there 0.025 against 1.02.
    /// The shadow batches' fits stay in their chosen orders.
    async fn client_fits(
        &self,
        recon: &Reconstruction,
        held: &[bool],
        guess: &[Vec<Value>],
    ) -> Result<Option<[f64; 2]>> {
        // Orders are chosen for reshuffling clients only.
        let fits = self.replayed_fits(recon, held, guess).await?;
        match (fits, chosen_orders(recon)) {
            (Some(f), Some(orders)) if explains_no_better(f) => {
                let again = self.orders_for_rows(&recon.rows, orders).await?;
                Ok(Some(self.fits(recon, held, guess, Some(&again.order)).await?))
            }
            _ => Ok(fits),
        }
    }

    /// How far the update is from explained, 1 − cos: by `recon`'s rows (with the labels used),
    /// and by what falling back would leave of them: on a classifier the rows the update holds
    /// (`held`: proved, near, and consistent where the calibration holds them) with the marginal
    /// guess's rows `guess` in the other slots, so that the fits compare the rows a fallback
    /// would replace and nothing else (a regression's every row guessed, its label the likeliest
    /// value).
    async fn fits(
        &self,
        recon: &Reconstruction,
        held: &[bool],
        guess: &[Vec<Value>],
        orders: Option<&[Vec<usize>]>,
    ) -> Result<[f64; 2]> {
        let left: Vec<Vec<Value>> = (recon.rows.iter().zip(guess).zip(held))
            .map(|((row, g), &h)| if h { row } else { g }.clone())
            .collect();
        // Rows not held pair with labels as the ensemble's do.
        let provenance: Vec<Provenance> = (recon.provenance.iter().zip(held))
            .map(|(&p, &h)| if h { p } else { Provenance::Ensemble })
            .collect();
        // A reshuffling client's (a classifier's: regressions choose no orders): both in the
        // orders chosen for the rows.
        if let Some(orders) = orders {
            let x = [encode_rows(self.dataset, &recon.rows), encode_rows(self.dataset, &left)].concat();
            let fits = self.losses_in_orders(x, 2, Some(orders)).await?;
            return Ok([fits[0] as f64, fits[1].max(0.0) as f64]);
        }
        let recon_fit = self.update_fit(recon).await?.distance;
        let guessed = match &self.dataset.target {
            // A regression's guessed rows carry the label's likeliest value, its mean (standardised 0).
            Some(_) => super::reconstruct::with_targets(encode_rows(self.dataset, guess), &vec![0.0; guess.len()]),
            None => encode_rows(self.dataset, &self.paired_by_update(&left, &provenance)),
        };
        let prior_fit = self.projected_losses(guessed, 1).await?[0] as f64;
        Ok([recon_fit, prior_fit.max(0.0)])
    }

    /// A received update's reconstruction, without truth to score against.
    pub async fn assess_received(
        &self,
        inverted: Members,
        seconds: f64,
        progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<ReconstructionReport> {
        let recon = self.reconstruct(inverted, progress).await?;
        let fit = self.update_fit(&recon).await?;
        Ok(self.received_report(recon, fit, None, None, seconds))
    }

    /// How well the reconstruction's rows, with the labels used (a regression's reconstructed
    /// with them), reproduce the update: 1 − cos of their simulated update and the received one.
    pub async fn update_fit(&self, recon: &Reconstruction) -> Result<UpdateFit> {
        let targets: Vec<f32> = match (&recon.values, &self.dataset.target) {
            (Some((values, _)), Some(t)) => values.iter().map(|&v| t.standardise(v)).collect(),
            _ => Vec::new(),
        };
        let order = self.update_order(&recon.rows, &recon.provenance, recon.row_labels.as_deref());
        let rows: Vec<Vec<Value>> = order.iter().map(|&i| recon.rows[i].clone()).collect();
        let x = super::reconstruct::with_targets(encode_rows(self.dataset, &rows), &targets);
        let distance = self.projected_losses(x, 1).await?[0];
        Ok(UpdateFit::of(distance as f64))
    }

    /// The report of a received update's reconstruction (`assess_received`), with the rows read
    /// by category that the caller's fallback let in (`put_rows_by_category`); `truth`: the
    /// client's rows where they are at hand (`received::truth`), which the categories the update
    /// shows held are checked against.
    pub fn received_report(
        &self,
        recon: Reconstruction,
        fit: UpdateFit,
        fallback: Option<FallbackSummary>,
        truth: Option<&[Vec<Value>]>,
        seconds: f64,
    ) -> ReconstructionReport {
        let read = recon.provenance.iter().filter(|&&p| p == Provenance::Read).count();
        let read_gain = fallback.as_ref().and_then(|f| f.read_gain);
        let mut report = ReconstructionReport::build(
            self.dataset,
            self.config,
            &self.backend,
            &recon.rows,
            recon.entropy.as_deref(),
            &self.scenario.labels,
            recon.loss_curve,
            RowDetails {
                epoch_prior: recon.epoch_prior,
                epoch_prior_fits: recon.epoch_prior_fits,
                subspace: self.summary(recon.decoded, recon.proved),
                second_layer: recon.second_layer,
                fallback,
                answered_after: None,
                ensemble: self.rounds.clone(),
                chosen: recon.chosen,
                categories_held: self
                    .categories_held_against(truth)
                    .map(|c| c.with_rows_read(Some(read), read_gain)),
                determined: self.determined.iter().map(|d| d.described(self.dataset)).collect(),
                shown: None,
                cells_shown: None,
            },
            seconds,
        );
        report.member_steps = recon.steps;
        report.update_fit = Some(fit);
        report.not_applied.extend(recon.not_applied.iter().cloned());
        report.set_provenance(&recon.provenance, &why_not_proved(&recon.unproved));
        if let Some(labels) = &recon.row_labels {
            for (row, &l) in report.rows.iter_mut().zip(labels) {
                row.label = Some(self.dataset.classes[l].clone());
            }
        }
        if let (Some((values, exact)), Some(target)) = (&recon.values, &self.dataset.target) {
            for (row, &v) in report.rows.iter_mut().zip(values) {
                row.label = Some(target.format(v));
            }
            report.regression_labels_exact = Some(*exact);
        }
        report
    }

    /// `rows` reordered so that each row the update holds (its `provenance` proved, near or consistent)
    /// sits where the labels used give it the label the update's last layer fits it best
    /// (`row_labels::fit_labels`), on a FedSGD classifier. Such a row keeps the slot of the
    /// member row it was found from, whose label it need not have: on Adult [100, 100] trained
    /// 5 epochs (seed 0) five of eight rows of the second class sat in slots of the first. The
    /// ensemble's rows keep the labels they were fitted with.
    fn paired_by_update(&self, rows: &[Vec<Value>], provenance: &[Provenance]) -> Vec<Vec<Value>> {
        let order = self.order_by_update(rows, provenance);
        order.iter().map(|&i| rows[i].clone()).collect()
    }

    /// The order in which the update pairs each row with its label (`update_fit`'s): rows whose
    /// labels were read off (`read`) where the labels used put them (the proofs give rows in
    /// their own order), else as `paired_by_update` lays them out.
    pub(super) fn update_order(
        &self,
        rows: &[Vec<Value>],
        provenance: &[Provenance],
        read: Option<&[usize]>,
    ) -> Vec<usize> {
        // Labels read that the labels used do not hold (a row read wrong) pair nothing.
        match read.and_then(|read| pairing_with_labels(read, &self.scenario.labels)) {
            Some(order) => order,
            None => self.order_by_update(rows, provenance),
        }
    }

    /// `paired_by_update`'s order.
    fn order_by_update(&self, rows: &[Vec<Value>], provenance: &[Provenance]) -> Vec<usize> {
        let identity: Vec<usize> = (0..rows.len()).collect();
        if self.config.protocol != crate::config::Protocol::Fedsgd || self.dataset.target.is_some() {
            return identity;
        }
        let held: Vec<bool> = provenance.iter().map(|p| p.held_by_update()).collect();
        let x: Vec<f64> = encode_rows(self.dataset, rows).iter().map(|&v| v as f64).collect();
        let (params, model, labels) = (&self.scenario.params, self.config.model(), &self.scenario.labels);
        // Where the last layer cannot pair them, each row takes its slot's label; the rank of
        // what the held rows leave then pairs those (`assess::paired_labels`).
        let read = row_labels::fit_labels(params, model, &self.scenario.observed, &x, labels, &held)
            .unwrap_or_else(|| labels.clone());
        pairing_with_labels(&self.labels_by_rank(rows, &held, read), labels).unwrap_or(identity)
    }
}

/// The order that puts each row (whose labels are `read`) at a position i of label `labels[i]`;
/// None where the two do not hold the same labels.
fn pairing_with_labels(read: &[usize], labels: &[usize]) -> Option<Vec<usize>> {
    let mut used = vec![false; read.len()];
    let mut out = Vec::with_capacity(read.len());
    for &l in labels {
        let i = (0..read.len()).find(|&i| !used[i] && read[i] == l)?;
        used[i] = true;
        out.push(i);
    }
    Some(out)
}

/// The cells of `recon` that fall back by `c`, taken from `guess` (`Guess`: rows whose every cell
/// falls back the table's guess where the server holds the table, else the random baseline's own
/// draw): never a cell of a row the update holds (proved, or consistent: of the 861 consistent
/// rows in the reports of issue 43's runs, 94.8 % of cells were right; only settled rows where
/// the shadow's consistent rows scored surely below the draw, `Calibration::held`), the others by
/// `Calibration::mask`, and every cell of a row the update cannot see that no guess was read for
/// (`Reconstruction::unguessed`). Rows whose every cell fell back are the prior's. The calibration as
/// applied (`Calibration::holds_rows` set), and the mask.
pub fn fall_back(
    recon: &mut Reconstruction,
    c: &Calibration,
    rules: &[Rule],
    guess: &Guess,
) -> Option<(Calibration, Vec<Vec<bool>>)> {
    let entropy = recon.entropy.as_ref()?;
    let held = c.held(recon);
    let mut c = Calibration {
        holds_rows: held.iter().any(|&h| h),
        ..*c
    };
    let mask = decided(c.mask(rules, entropy, &held), &held, recon);
    // Imputation fills the cells that fell back in rows that kept others: with none, it did not
    // happen (every open row fell back whole, as where a reshuffling client's shadows decide).
    c.imputed &= mask.iter().any(|m| m.contains(&true) && m.contains(&false));
    recon.rows = mix(&recon.rows, guess, &mask);
    for (i, m) in mask.iter().enumerate() {
        // Not held (`Calibration::consistent_unheld`): the ensemble's, as the fallback read it,
        // no longer said to fit the update.
        if recon.provenance[i].held_by_update() && !held[i] {
            (recon.provenance[i], recon.unproved[i]) = (Provenance::Ensemble, None);
        }
        if m.iter().all(|&m| m) {
            recon.provenance[i] = Provenance::Prior;
        }
    }
    Some((c, mask))
}

/// The orders of a reshuffling client's epochs that its update chose for `recon`'s rows.
fn chosen_orders(recon: &Reconstruction) -> Option<&EpochOrders> {
    recon.chosen.as_ref().and_then(|c| c.orders_of_rows())
}

//! The second layer's certificate applied to the pooled rows (`attack::priors::activation_span`):
//! each refined towards the span and adopted where the certificate holds, the first layer's
//! proved rows held to its theorem, and the span itself, where the attack composes it.
use crate::assess::entropy;
use crate::assess::enumerated::SpanRows;
use crate::attack::baselines::random_rows;
use crate::attack::inversion::setup::Setup;
use crate::attack::priors::activation_span::certify::{Certified, certify_batch};
use crate::attack::priors::activation_span::{self, ActivationSpan, NoSpan, Regime, SpanOf, Unproved};
use crate::attack::priors::spectrum::Spectrum;
use crate::attack::registry::NotApplied;
use crate::report::SecondLayerSummary;
use crate::seed::seed_for;
use crate::table::Value;

/// Rows drawn from the marginals per row of the batch, as starts for rows the ensemble missed.
const MARGINAL_STARTS_PER_ROW: usize = 128;

impl Setup<'_> {
    /// TabLeak's pooled rows refined towards the second layer's span of activations
    /// (`attack::priors::activation_span`) and adopted where the certificate holds, the members' rows
    /// (`x`, [members, n, d]) trying for the rows still missing: the proof of rows beyond the first
    /// layer's reach (large batches, linearly dependent rows). On FedAvg the update's leading span
    /// stands in for it and rows near it are adopted, not proved (`SpanOf::Update`). A proved row's
    /// cells get the entropy of an ensemble that agrees on them. Refused where it does not apply,
    /// with what the report says where the update ruled it out (the span leaves too few checks).
    pub(super) fn certify_by_second_layer(
        &self,
        rows: &mut [Vec<Value>],
        entropy: &mut Option<Vec<Vec<Option<f64>>>>,
        x: &[f32],
        first_layer: &[bool],
        span_rows: Option<&SpanRows>,
    ) -> std::result::Result<(SecondLayerSummary, Vec<Certified>), Option<NotApplied>> {
        // Every row proved by the first layer: nothing left to certify.
        if first_layer.iter().all(|p| *p) {
            return Err(None);
        }
        let span = self.second_layer_attempt(rows.len()).ok_or(None)?.map_err(|no| {
            no.why().map(|why| NotApplied {
                part: "the second layer's certificate".into(),
                why,
            })
        })?;
        let d = self.dataset.d();
        // The first layer's span's rows first: each is a row of the batch or a combination of
        // rows the first layer cannot tell apart.
        let mut candidates: Vec<Vec<Value>> = span_rows.map(|s| s.rows.clone()).unwrap_or_default();
        candidates.extend(x.chunks_exact(d).map(|row| self.dataset.decode(row)));
        // Then rows drawn from the table's marginals (what the server knows without the update);
        // a received update comes with the encoding only, and no rows to draw from.
        if self.dataset.n() > 0 {
            let draws = rows.len() * MARGINAL_STARTS_PER_ROW;
            candidates.extend(random_rows(self.dataset, draws, seed_for(self.config.seed, 11)));
        }
        let certified = certify_batch(&span, rows, candidates, first_layer);
        if let Some(entropy) = entropy.as_mut().filter(|_| span.proves()) {
            for (cells, _) in entropy
                .iter_mut()
                .zip(&certified)
                .filter(|(_, c)| matches!(c, Certified::Yes | Certified::Near))
            {
                entropy::agreed(self.dataset, cells);
            }
        }
        let summary = SecondLayerSummary {
            rank: span.rank(),
            width: span.width(),
            certified_rows: certified.iter().filter(|c| **c == Certified::Yes).count(),
            peeled_rows: 0,
            undone_adoptions: 0,
            consistent_rows: certified
                .iter()
                .filter(|c| matches!(c, Certified::Fits(_) | Certified::Near | Certified::IfLabelled(_)))
                .count(),
            proof: span.proves(),
        };
        // Rows adopted near FedAvg's update are not proved.
        let proved = certified
            .into_iter()
            .map(|c| match c {
                Certified::Yes if !span.proves() => Certified::No,
                c => c,
            })
            .collect();
        Ok((summary, proved))
    }

    /// The first layer's proved rows held to the second layer's theorem where its span proves
    /// (`ActivationSpan::proof`): a row that another point of its ReLU cell fits as well (twins
    /// whose vectors the first layer's proof mixed) or that its live units do not check is not
    /// proved. Per row, why not (None: proved, or not the first layer's).
    pub(super) fn recheck_first_layer(&self, rows: &[Vec<Value>], first_layer: &[bool]) -> Vec<Option<Unproved>> {
        let span = match first_layer.iter().any(|&p| p) {
            true => self
                .second_layer_span(rows.len())
                .filter(|s| s.regime() == Regime::Full),
            false => None,
        };
        rows.iter()
            .zip(first_layer)
            .map(|(row, &first)| {
                span.as_ref()
                    .filter(|_| first)
                    .and_then(|s| s.proof(row, s.distance(row)).err())
            })
            .collect()
    }

    /// The second layer's span of activations where the attack composes it and it leaves checks
    /// (`ActivationSpan::new`), for a client of `rows` rows.
    pub fn second_layer_span(&self, rows: usize) -> Option<ActivationSpan<'_>> {
        self.second_layer_attempt(rows)?.ok()
    }

    /// The same, None where the attack does not compose it, and why not where the update rules it
    /// out.
    fn second_layer_attempt(&self, rows: usize) -> Option<std::result::Result<ActivationSpan<'_>, NoSpan>> {
        let params = &self.scenario.params;
        let sizes = &params.sizes;
        if !(self.inverts.relaxed && self.config.priors().second_layer) || sizes.len() < 4 {
            return None;
        }
        let of = match self.config.protocol {
            crate::config::Protocol::Fedsgd => SpanOf::Gradient { rows },
            crate::config::Protocol::Fedavg(_) => SpanOf::Update { rows },
        };
        let observed = &self.scenario.observed;
        let present = activation_span::present_categories(self.dataset, observed.weight(0), observed.bias(0));
        let span = ActivationSpan::new(
            self.dataset,
            &params.weights[0],
            &params.biases[0],
            observed.weight(1),
            present,
            of,
            (sizes[0], sizes[1], sizes[2]),
        );
        // No drop in the spectrum where the batch fills the layer is the batch's size, not noise.
        let span = span.map_err(|no| match no {
            NoSpan::NoGap => activation_span::room(self.dataset, rows, (sizes[1], sizes[2]))
                .err()
                .unwrap_or(no),
            no => no,
        });
        Some(span.map(|span| {
            let span = span.with_activation(self.config.activation);
            match self.first_layer_holds_batch(rows) {
                Some((basis, spectrum)) => span.with_first_layer(basis, spectrum),
                None => span,
            }
        }))
    }

    /// The first layer's span where it holds every row of a FedSGD batch of `rows` rows: its rank
    /// the batch's for certain, read without noise, in the encoding the certificate reads rows
    /// in (no client pipeline), with the fixed directions of the categorical blocks, and the
    /// spectrum it was read on with its rank. The certificate's refinement then moves rows within it.
    pub(super) fn first_layer_holds_batch(&self, rows: usize) -> Option<(nalgebra::DMatrix<f64>, (Spectrum, usize))> {
        let span = self.subspace.as_ref().filter(|_| self.first_layer_read_exactly())?;
        let holds =
            span.summary.off.is_none() && span.spectrum.rank() == crate::attack::priors::spectrum::Rank::Certain(rows);
        holds.then(|| (span.rows_basis(&self.layout), (span.spectrum.clone(), span.rank())))
    }

    /// Whether the first layer's span is read from a FedSGD update without noise, in the
    /// encoding the certificate reads rows in (no client pipeline): where it is, the span of
    /// any rows of the batch (all of them, or those left once some are peeled off) holds them
    /// wherever its rank is theirs for certain (the whole batch's span may leave no direction
    /// out, `Subspace`'s `off`, and the rows left's still do).
    pub(super) fn first_layer_read_exactly(&self) -> bool {
        self.subspace.as_ref().is_some_and(|span| {
            matches!(self.config.protocol, crate::config::Protocol::Fedsgd)
                && self.dataset.pipeline.is_none()
                && span.exact
        })
    }
}

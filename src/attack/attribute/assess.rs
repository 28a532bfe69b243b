//! The attribute attack's assessment: the sensitive column guessed per row from the members'
//! mean probabilities, scored row by row (the rows are the client's own, not matched), against the
//! baselines of an attacker without the update.
use super::settings::AttributeSettings;
use super::{AttributeReport, SoftmaxRegression};
use crate::assess::entropy::categorical_soft;
use crate::assess::scoring::{Accuracy, score_aligned};
use crate::attack::inversion::ensemble::Members;
use crate::attack::inversion::setup::Setup;
use crate::error::{Error, Result};
use crate::report::{AttackDetails, Report, build_report};
use crate::seed::seed_for;
use crate::table::Value;

impl Setup<'_> {
    /// The attribute attack's report: the sensitive column guessed per row from the members' mean
    /// probabilities, scored row by row (the rows are the client's own, not matched), against the
    /// baselines of an attacker without the update (`attack::attribute`). With unknown membership
    /// the attack ran on the rows the server took as the client's; a client row it missed gets the
    /// public classifier's guess.
    pub fn assess_attribute(&self, settings: &AttributeSettings, inverted: Members, seconds: f64) -> Result<Report> {
        let (dataset, config) = (self.dataset, self.config);
        let Some(truth) = &self.scenario.truth else {
            return Err(Error::Config("the attribute attack needs the client's rows".into()));
        };
        let column = &settings.column;
        let fi = dataset
            .features
            .iter()
            .position(|f| &f.name == column)
            .expect("validated");
        let feature = &dataset.features[fi];
        let (block, k) = ((feature.offset, feature.width()), feature.width());
        let d = dataset.d();
        let value = |v: Value| match v {
            Value::Cat(c) => c as usize,
            Value::Num(_) => unreachable!("the sensitive column is categorical"),
        };
        let truth_values: Vec<usize> = truth.rows.iter().map(|r| value(r[fi])).collect();

        // What the server has without the update.
        let public = super::public_split(dataset.n(), &truth.indices, seed_for(config.seed, 8));
        let Public {
            marginal,
            prior,
            classified,
            public_classifier,
        } = self.public_baselines(&public, fi, &truth.indices, &truth_values);

        // The attack's mean probabilities per client row: from the attack row that is it, or
        // none (uniform) where the server did not take the row as the client's.
        let attacked = super::mean_probs(&inverted.probs, self.members, self.scenario.attack_rows.len(), d, block);
        let means: Vec<Option<&Vec<f64>>> = truth
            .indices
            .iter()
            .map(|t| self.scenario.attack_rows.binary_search(t).ok().map(|p| &attacked[p]))
            .collect();
        let guesses: Vec<usize> = means
            .iter()
            .zip(&classified)
            .map(|(m, &c)| m.map_or(c, |p| super::argmax(p)))
            .collect();
        let uniform_probs = vec![1.0 / k as f64; k];
        let combined_means: Vec<Vec<f64>> = means.iter().map(|m| m.unwrap_or(&uniform_probs).clone()).collect();
        let with_public_prior = super::accuracy(&super::combine(&combined_means, &prior), &truth_values);
        let reconstructed: Vec<Vec<Value>> = truth
            .rows
            .iter()
            .zip(&guesses)
            .map(|(r, &g)| {
                let mut r = r.clone();
                r[fi] = Value::Cat(g as u32);
                r
            })
            .collect();
        // Only the sensitive cells were reconstructed: only they carry an entropy (none where
        // the attack did not reach the row).
        let entropy: Vec<Vec<Option<f64>>> = means
            .iter()
            .map(|m| {
                (0..dataset.features.len())
                    .map(|j| m.filter(|_| j == fi).map(|p| categorical_soft(&[&p[..]])))
                    .collect()
            })
            .collect();
        let acc = super::accuracy(&guesses, &truth_values);

        let uniform = 1.0 / k as f64;
        let scored = score_aligned(&self.rules, &truth.rows, &reconstructed);
        let random = Accuracy {
            total: uniform,
            categorical: Some(uniform),
            continuous: None,
            per_feature: (0..dataset.features.len())
                .map(|j| if j == fi { uniform } else { 1.0 })
                .collect(),
            exact_rows: uniform,
        };
        let mut report = build_report(
            dataset,
            config,
            &self.backend,
            &truth.rows,
            &reconstructed,
            Some(&entropy),
            &scored,
            random,
            truth.label_accuracy,
            inverted.loss_curve,
            seconds,
        );
        // The attack's accuracy is the sensitive column's: every other cell was given.
        report.accuracy.total = acc;
        report.accuracy.categorical = Some(acc);
        report.accuracy.continuous = None;
        report.accuracy.exact_rows = acc;
        report.gain_over_random = acc - uniform;
        report.member_steps = inverted.steps;
        report.details = AttackDetails::Attribute(AttributeReport {
            column: column.clone(),
            values: k,
            l2: settings.l2,
            accuracy: acc,
            random: uniform,
            marginal,
            public_classifier,
            public_rows: public.len(),
            with_public_prior,
            membership: self.scenario.membership.clone(),
        });
        Ok(report)
    }
}

/// What an attacker of the sensitive column has without the update.
struct Public {
    /// Accuracy of the public split's most frequent value.
    marginal: f64,
    /// The public classifier's probabilities per client row, its guesses and their accuracy.
    prior: Vec<Vec<f64>>,
    classified: Vec<usize>,
    public_classifier: f64,
}

impl Setup<'_> {
    /// The baselines from the public split: its most frequent value of column `fi`, and a
    /// classifier trained on it from the other columns and the label.
    fn public_baselines(&self, public: &[usize], fi: usize, client: &[usize], truth_values: &[usize]) -> Public {
        let dataset = self.dataset;
        let feature = &dataset.features[fi];
        let (block, k) = ((feature.offset, feature.width()), feature.width());
        let value = |v: Value| match v {
            Value::Cat(c) => c as usize,
            Value::Num(_) => unreachable!("the sensitive column is categorical"),
        };
        let rows = client.len();
        let public_values: Vec<usize> = public.iter().map(|&i| value(dataset.rows[i][fi])).collect();
        let marginal = super::accuracy(&vec![super::most_frequent(&public_values, k); rows], truth_values);
        let features_of = |i: usize| -> Vec<f64> {
            let mut x: Vec<f64> = dataset
                .encode(&dataset.rows[i])
                .into_iter()
                .enumerate()
                .filter(|(j, _)| !(block.0..block.0 + block.1).contains(j))
                .map(|(_, v)| v)
                .collect();
            x.extend((0..dataset.classes.len()).map(|c| (dataset.labels[i] == c) as u8 as f64));
            x
        };
        let classifier = SoftmaxRegression::train(
            &public.iter().map(|&i| features_of(i)).collect::<Vec<_>>(),
            &public_values,
            k,
        );
        let prior: Vec<Vec<f64>> = client.iter().map(|&i| classifier.probs(&features_of(i))).collect();
        let classified: Vec<usize> = prior.iter().map(|p| super::argmax(p)).collect();
        let public_classifier = super::accuracy(&classified, truth_values);
        Public {
            marginal,
            prior,
            classified,
            public_classifier,
        }
    }
}

//! CAFE end to end: the vertical rounds simulated on the rows the seed draws, the rows recovered
//! from them (`super`), scored row by row (the server knows each row's index).
use super::CafeReport;
use super::settings::CafeSettings;
use crate::assess::matching::Rule;
use crate::assess::scoring::score_aligned;
use crate::attack::baselines::random_rows;
use crate::attack::inversion::driver::Progress;
use crate::client::network::Params;
use crate::client::vertical;
use crate::config::AttackConfig;
use crate::error::{Error, Result};
use crate::report::{AttackDetails, Report, build_report};
use crate::runtime::Runtime;
use crate::seed::seed_for;
use crate::table::draw_batch;
use crate::table::{Dataset, Value};

/// CAFE (`attack::cafe`): the vertical rounds simulated on `cafe.rows` rows drawn by the seed, the
/// rows recovered from them, scored row by row (the server knows each row's index).
pub fn run(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    c: &CafeSettings,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Report> {
    let start = web_time::Instant::now();
    let (n, k, d) = (c.rows, config.batch_size, dataset.d());
    let indices = draw_batch(dataset, n, config.seed);
    let truth: Vec<Vec<Value>> = indices.iter().map(|&i| dataset.rows[i].clone()).collect();
    let labels: Vec<usize> = indices.iter().map(|&i| dataset.labels[i]).collect();
    let params = Params::init(&config.layer_sizes(dataset), seed_for(config.seed, 2));
    let h = params.sizes[1];
    let x: Vec<f64> = truth.iter().flat_map(|r| dataset.encode(r)).collect();
    let deltas = vertical::first_layer_deltas(&params, &x, &labels);
    let mut rounds = vertical::simulate(&x, &deltas, n, d, h, k, c.rounds, seed_for(config.seed, 10));
    // Each party's encoded columns: its features' blocks, contiguous.
    let columns: Vec<(usize, usize)> = vertical::party_columns(dataset.features.len(), c.parties)
        .into_iter()
        .map(|(first, count)| {
            let fs = &dataset.features[first..first + count];
            (fs[0].offset, fs.iter().map(|f| f.width()).sum())
        })
        .collect();
    let mut training = (None, None);
    if let Some(draws) = c.fake_gradients {
        vertical::fake_rounds(&mut rounds, &columns, h, draws, seed_for(config.seed, 11));
        // What the countermeasure costs the model: the same training with true and fake gradients.
        let train = |fake| {
            vertical::train_rounds(
                &params,
                &x,
                &labels,
                k,
                c.rounds,
                super::TRAINING_LR,
                fake,
                seed_for(config.seed, 12),
            )
        };
        training = (Some(train(None)), Some(train(Some((&columns[..], draws)))));
    }
    let phase = |step: usize| Progress {
        phase: "cafe".into(),
        step,
        of: 3,
        loss: None,
        elapsed: start.elapsed().as_secs_f64(),
    };
    if !progress(&phase(1)) {
        return Err(Error::Cancelled);
    }
    let v = super::recover_deltas(&rounds, n, h);
    if !progress(&phase(2)) {
        return Err(Error::Cancelled);
    }
    let xs = super::recover_inputs(&rounds, &v, n, d, h);
    progress(&phase(3));
    let relative = |a: &[f64], b: &[f64]| {
        let num: f64 = a.iter().zip(b).map(|(p, q)| (p - q).powi(2)).sum();
        let den: f64 = b.iter().map(|q| q * q).sum();
        (num / den.max(1e-300)).sqrt()
    };
    // Step III: the relaxation's projection of each recovered row.
    let rows: Vec<Vec<Value>> = xs
        .chunks_exact(d)
        .map(|r| dataset.decode(&r.iter().map(|&v| v as f32).collect::<Vec<_>>()))
        .collect();
    let rules = Rule::of(&dataset.features);
    let scored = score_aligned(&rules, &truth, &rows);
    let random = score_aligned(&rules, &truth, &random_rows(dataset, n, seed_for(config.seed, 5)));
    let mut report = build_report(
        dataset,
        config,
        &runtime.info,
        &truth,
        &rows,
        None,
        &scored,
        random.accuracy,
        1.0,
        Vec::new(),
        start.elapsed().as_secs_f64(),
    );
    report.details = AttackDetails::Cafe(CafeReport {
        parties: c.parties,
        rows: n,
        rounds: c.rounds,
        batch: k,
        covered: super::covered(&rounds, n).iter().filter(|&&s| s).count(),
        step1_error: relative(&v, &deltas),
        step2_error: relative(&xs, &x),
        fake_gradients: c.fake_gradients,
        training_loss: training.0,
        training_loss_fake: training.1,
    });
    Ok(report)
}

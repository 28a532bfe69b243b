//! Assessment: match ensemble members, pool them, measure confidence, score against the truth.
mod adoptions;
mod assignment;
mod category_rows;
pub mod cells_shown;
pub mod entropy;
mod enumerated;
pub mod epoch_orders;
pub mod epochs;
pub mod fallback;
mod held_once;
mod imputed;
mod inverted_left;
pub mod matching;
mod misfits;
mod near_moved;
mod paired_labels;
mod peeled;
mod peeled_search;
mod polish;
pub mod pooling;
pub(crate) mod pursuits;
pub mod reconstruct;
mod refine;
mod row_test;
pub mod rows;
pub mod scoring;
pub mod search_bounds;
mod second_layer;
mod seen_rows;
mod shadow_rows;
mod span_fit;
mod span_left;
mod span_placed;
mod span_pursuit;
pub(crate) mod span_rows;
pub mod stopping;
pub mod table_guess;
pub mod table_prior;
mod unseen_rows;
pub mod update_choice;

/// A setup of the received FedSGD update that `rows`, each with its label, send on `setup`'s
/// network (the update is their gradients' mean; the labels the server is given, sorted).
#[cfg(test)]
pub(crate) fn setup_sending<'a>(
    setup: &crate::attack::inversion::setup::Setup<'a>,
    rows: &[Vec<crate::table::Value>],
    labels: &[usize],
) -> crate::attack::inversion::setup::Setup<'a> {
    let mut sum: Vec<f64> = Vec::new();
    for (row, &label) in rows.iter().zip(labels) {
        let g = setup.row_gradient(row, label);
        sum.resize(g.len(), 0.0);
        sum.iter_mut().zip(&g).for_each(|(s, g)| *s += g);
    }
    let mut sorted = labels.to_vec();
    sorted.sort();
    let update = setup.update_of(&sum, 1.0 / rows.len() as f64);
    let scenario = crate::scenario::Scenario::of_update(setup.scenario.params.clone(), update, sorted);
    crate::attack::inversion::setup::Setup::new(setup.runtime, setup.dataset, setup.config, scenario)
}

/// `rows` as a reconstruction of `setup`'s update, every row consistent with the update (an
/// unplaced row) and each with its label in `labels`.
#[cfg(test)]
pub(crate) fn consistent_rows(
    setup: &crate::attack::inversion::setup::Setup,
    rows: &[Vec<crate::table::Value>],
    labels: &[usize],
) -> reconstruct::Reconstruction {
    use crate::attack::priors::activation_span::Unproved;
    let no_progress = &mut |_: &crate::attack::inversion::driver::Progress| true;
    let mut recon = pollster::block_on(setup.reconstruction(None, no_progress)).unwrap();
    recon.rows = rows.to_vec();
    recon.provenance = vec![crate::report::Provenance::Consistent; rows.len()];
    recon.unproved = vec![Some(Unproved::Unplaced); rows.len()];
    recon.row_labels = Some(labels.to_vec());
    recon
}

/// `f` on a setup of the Adult sample's batch that `config` draws (the tests' common start).
#[cfg(test)]
pub(crate) fn with_sample_setup<T>(
    config: crate::config::AttackConfig,
    f: impl FnOnce(&crate::attack::inversion::setup::Setup) -> T,
) -> T {
    let data = crate::table::adult_sample();
    let scenario = pollster::block_on(crate::scenario::Scenario::of_rows(&data, &config)).unwrap();
    let runtime = crate::runtime::Runtime::cpu();
    f(&crate::attack::inversion::setup::Setup::new(
        &runtime, &data, &config, scenario,
    ))
}

/// `f` on the Adult sample's batch of 16 on a [32, 32] network trained 20 epochs (seed 3), with
/// the batch's rows, the labels its update gives them, and each table row's squared gradient
/// norm with its own label: where the tests of rows a trained network's update pins or does not
/// pin find a row it is sure of, or unsure of.
#[cfg(test)]
pub(crate) fn with_trained_sample_batch<T>(
    f: impl FnOnce(&crate::attack::inversion::setup::Setup, Vec<Vec<crate::table::Value>>, Vec<usize>, Vec<f64>) -> T,
) -> T {
    let config = crate::config::AttackConfig {
        batch_size: 16,
        hidden: vec![32, 32],
        training_epochs: 20,
        seed: 3,
        ..Default::default()
    };
    with_sample_setup(config, |setup| {
        let data = setup.dataset;
        let rows = setup.scenario.truth.as_ref().unwrap().rows.clone();
        let labels = setup
            .labels_of_rows(&rows)
            .expect("the batch's own rows explain its update");
        let norms = (0..data.n())
            .map(|k| {
                setup
                    .row_gradient(&data.rows[k], data.labels[k])
                    .iter()
                    .map(|v| v * v)
                    .sum()
            })
            .collect();
        f(setup, rows, labels, norms)
    })
}

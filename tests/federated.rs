//! The federated settings on real data with fixed seeds: FedAvg's TabLeak against its baselines,
//! and each defence pulling TabLeak toward guessing by the amount it should.
mod common;

use common::{adult, run_options};
use leakscope::client::fedavg::LocalOrder;
use leakscope::options::ProtocolKind;
use leakscope::table::Dataset;
use leakscope::{AttackKind, Report, RunOptions, Runtime, run_attack};

/// Mean accuracy and mean random baseline over seeds 0 and 1.
fn over_two_batches(data: &Dataset, options: RunOptions) -> (f64, f64) {
    let (acc, random, _) = with_guessing(data, options);
    (acc, random)
}

/// `over_two_batches` with the mean of what the server guesses without the update: per batch the
/// better of the random baseline and the table's guess, which an attack whose every cell falls
/// back scores where the server holds the table.
fn with_guessing(data: &Dataset, options: RunOptions) -> (f64, f64, f64) {
    let reports: Vec<Report> = (0..2)
        .map(|seed| {
            run_options(
                data,
                &RunOptions {
                    seed,
                    ..options.clone()
                },
            )
        })
        .collect();
    let acc = reports.iter().map(|r| r.accuracy.total).sum::<f64>() / 2.0;
    let random = reports.iter().map(|r| r.random_baseline).sum::<f64>() / 2.0;
    let guess = |r: &Report| r.table_baseline.map_or(r.random_baseline, |t| t.max(r.random_baseline));
    (acc, random, reports.iter().map(guess).sum::<f64>() / 2.0)
}

/// FedAvg, 32 client rows, one local epoch in batches of 16 at lr 0.01 (the reference's client):
/// TabLeak (15 members, 1500 steps) beats the Cosine baseline and guessing on the same batches.
#[test]
fn fedavg_tableak_beats_cosine_and_guessing() {
    let data = adult();
    let fedavg = RunOptions {
        protocol: ProtocolKind::Fedavg,
        batch_size: 32,
        local_batch: 16,
        local_epochs: 1,
        client_lr: 0.01,
        ..RunOptions::default()
    };
    let (tableak, random) = over_two_batches(&data, fedavg.clone());
    let (cosine, _) = over_two_batches(
        &data,
        RunOptions {
            attack: AttackKind::Cosine,
            ..fedavg
        },
    );
    eprintln!("FedAvg E=1 b=16: TabLeak {tableak:.3}, Cosine {cosine:.3}, random {random:.3}");
    assert!(tableak >= 0.80, "TabLeak {tableak}");
    assert!(tableak >= cosine + 0.1, "TabLeak {tableak} vs Cosine {cosine}");
    assert!(tableak >= random + 0.15, "TabLeak {tableak} vs random {random}");
}

/// Adult batches of 8: TabLeak recovers nearly everything undefended; clipping to 1 with noise
/// σ = 0.01 costs it a fair part, σ = 0.1 leaves it guessing; CAFE's fake gradients cost it less.
/// Averaging 4 clients (secure aggregation: 32 rows in one update) no longer protects at all: the
/// averaged gradient is one of 32 rows, and the first layer's ReLU pattern proves them
/// (`attack::priors::activity`; with the span prior alone it recovered 92.4 % of these two batches).
#[test]
fn defences_pull_tableak_toward_guessing() {
    let data = adult();
    let base = RunOptions {
        batch_size: 8,
        ..RunOptions::default()
    };
    let (open, random) = over_two_batches(&data, base.clone());
    let noisy = |noise| {
        with_guessing(
            &data,
            RunOptions {
                clip: Some(1.0),
                noise,
                ..base.clone()
            },
        )
    };
    let ((some_noise, _, _), (much_noise, _, guessing)) = (noisy(0.01), noisy(0.1));
    let (four, random_of_32) = over_two_batches(
        &data,
        RunOptions {
            clients: 4,
            ..base.clone()
        },
    );
    let (fake, _) = over_two_batches(
        &data,
        RunOptions {
            fake_gradients: Some(4),
            ..base
        },
    );
    eprintln!(
        "B=8: open {open:.3}, σ 0.01 {some_noise:.3}, σ 0.1 {much_noise:.3}, K=4 {four:.3} (random {random_of_32:.3}), \
         fake gradients {fake:.3}, random {random:.3}, guessing under σ 0.1 {guessing:.3}"
    );
    assert!(open >= 0.95, "undefended {open}");
    // Under σ = 0.1 every cell falls back to the table's guess (the server holds the table).
    assert!(
        much_noise <= guessing + 0.05,
        "σ = 0.1: {much_noise} vs guessing {guessing}"
    );
    assert!(
        some_noise <= open - 0.1 && some_noise >= random + 0.1,
        "σ = 0.01: {some_noise}"
    );
    assert!(
        four >= 0.9 && four >= random_of_32 + 0.25,
        "4 clients: {four} vs random {random_of_32}"
    );
    assert!(fake <= open - 0.1 && fake >= random + 0.1, "fake gradients: {fake}");
}

/// Clipping to 1 with noise σ = 0.1 on Adult batches of 32 (seeds 0-1): the ensemble alone scores
/// below the random guess; a shadow client the server simulates (rows of the table outside the
/// batch, the same defence) shows it, and the uncertain cells fall back to the table's guess, so the
/// attack scores at least the random baseline. Undefended, nothing falls back.
#[test]
fn under_heavy_noise_the_attack_falls_back_to_the_marginals() {
    let data = adult();
    let noisy = RunOptions {
        batch_size: 32,
        clip: Some(1.0),
        noise: 0.1,
        ..RunOptions::default()
    };
    let runs = |options: &RunOptions| -> Vec<Report> {
        (0..2)
            .map(|seed| {
                run_options(
                    &data,
                    &RunOptions {
                        seed,
                        ..options.clone()
                    },
                )
            })
            .collect()
    };
    let mean = |rs: &[Report], f: &dyn Fn(&Report) -> f64| rs.iter().map(f).sum::<f64>() / rs.len() as f64;
    let with = runs(&noisy);
    let without = runs(&RunOptions {
        prior_fallback: false,
        ..noisy.clone()
    });
    let (acc, random) = (mean(&with, &|r| r.accuracy.total), mean(&with, &|r| r.random_baseline));
    let alone = mean(&without, &|r| r.accuracy.total);
    eprintln!("σ 0.1, B=32: with the fallback {acc:.3}, ensemble alone {alone:.3}, random {random:.3}");
    for r in &with {
        let f = r
            .row_details()
            .and_then(|d| d.fallback.clone())
            .expect("a perturbing defence calibrates a fallback");
        eprintln!("  {f:?}");
        // The mix keeps the ensemble's cells only where their gain on the shadow batch is sure.
        assert!(f.shadow_chosen >= f.shadow_prior, "{f:?}");
        assert!(f.prior_cells > f.cells / 2, "most cells fall back: {f:?}");
        let prior_rows = r
            .rows
            .iter()
            .filter(|row| row.provenance == Some(leakscope::report::Provenance::Prior))
            .count();
        assert_eq!(prior_rows, f.prior_rows, "rows wholly from the marginals are marked so");
    }
    assert!(alone < random, "the ensemble alone {alone} vs random {random}");
    assert!(acc >= random - 0.01, "with the fallback {acc} vs random {random}");
    assert!(acc >= alone + 0.1, "with the fallback {acc} vs alone {alone}");
    let open = run_options(
        &data,
        &RunOptions {
            batch_size: 8,
            ..RunOptions::default()
        },
    );
    assert!(open.row_details().unwrap().fallback.is_none());
}

/// A client that reshuffles its rows (Flower's quickstart recipe: lr 0.05, momentum 0.9, local
/// batches of 8, on a [32, 32] network trained one epoch first): the server replays its update
/// only in orders it chooses, so the fallback weighs the reconstruction's rows in the orders the
/// update chose for them (the same replay as the choice's last fit) against the marginals' guess
/// in the same orders, and the report says how far the update is from explained. Before, such a
/// client had no fits, and its report could not say it. The shadow's fit is not weighed against
/// it (`Calibration::unlike_shadow`: measured, the ratio did not tell gains from losses there);
/// where its thresholds keep a cell, they are weighed on more shadow batches, each with rows and
/// orders of its own (`assess::fallback::draws`).
#[test]
fn a_reshuffling_clients_fallback_weighs_its_rows_in_the_orders_its_update_chose() {
    let data = adult();
    let options = RunOptions {
        protocol: ProtocolKind::Fedavg,
        batch_size: 32,
        local_batch: 8,
        local_epochs: 1,
        client_lr: 0.05,
        momentum: 0.9,
        local_order: LocalOrder::Shuffled,
        hidden: vec![32, 32],
        training_epochs: 1,
        ensemble: Some(4),
        iterations: 300,
        ..RunOptions::default()
    };
    let (mut imputed, mut weighed) = (Vec::new(), Vec::new());
    for seed in 0..2 {
        let report = run_options(
            &data,
            &RunOptions {
                seed,
                ..options.clone()
            },
        );
        let details = report.row_details().unwrap();
        let choice = details
            .chosen
            .clone()
            .expect("a reshuffling client's orders are chosen");
        assert!(choice.orders_of_rows().is_some(), "{choice:?}");
        let f = details
            .fallback
            .clone()
            .expect("a trained network leaves rows to the fallback");
        eprintln!("seed {seed}: {f:?}\n  {choice:?}");
        let last = match &choice.rerun {
            Some(r) if r.kept => r.fit,
            _ => choice.fit_after,
        };
        let (fit, prior) = (
            f.update_fit.expect("the rows' fit"),
            f.prior_fit.expect("the guess's fit"),
        );
        assert!((fit - last).abs() <= 1e-6, "{fit} against the choice's {last}");
        assert!(fit < prior, "{fit} against the guess's {prior}");
        assert!(f.shadow_update_fit.is_none() && !f.unlike_shadow, "{f:?}");
        // Cells fell back on both batches (123 and 101 of 448): the report says how far the
        // update is from explained.
        let text = leakscope::report::text::render_text(&report, 0);
        let rows = match f.shadow_of_table {
            true => "the table's guess",
            false => "rows drawn from the marginals",
        };
        let said = format!("the reconstruction explains the update to 1 − cos {fit:.3} ({rows}: {prior:.3})");
        assert!(f.prior_cells > 0 && text.contains(&said), "{f:?}\n{text}");
        // Where the shadow showed it gains, the cells that fell back in rows that kept others were
        // imputed from the table's rows like them (`assess::imputed`), and the report says so.
        let imputed_said = text.contains("imputed from the table's rows most like them");
        assert_eq!(f.imputed, imputed_said, "{text}");
        // ...and what the same imputation gives with nothing from the update, where it imputed.
        let control_said = text.contains("the same imputation around kept cells drawn from the marginals");
        assert_eq!(f.imputed_without_update.is_some(), f.imputed, "{f:?}");
        assert_eq!(control_said, f.imputed, "{text}");
        // What the server's table alone guesses, beside the marginals' draw.
        let t = report.table_baseline.expect("a simulated client of a table");
        assert!((0.0..=1.0).contains(&t), "{t}");
        assert!(
            text.contains("the table's guess, rows of it chosen without the update"),
            "{text}"
        );
        assert!(report.accuracy.total >= report.random_accuracy.total, "seed {seed}");
        // Where every cell fell back, to the table's guess here (the shadow's rows were the
        // table's), the attack scores that guess exactly (seed 0: the shadow's ensemble 65.8 %,
        // the guess 69.6 %).
        imputed.push(f.imputed);
        // Where the thresholds keep a cell, they were weighed on more shadow batches, each with
        // rows and orders of its own (`assess::fallback::draws`), and the report says so; where
        // those sent every cell back, the report says why.
        weighed.push(f.gain_across_shadows.is_some());
        if let Some(gain) = f.gain_across_shadows {
            let n = f.shadow_batches;
            let all = leakscope::assess::fallback::SHADOW_DRAWS as usize;
            let bound = f.gain_bound_across_shadows.unwrap();
            let (fit, worst) = (f.update_fit.unwrap(), f.worst_shadow_fit.expect("each batch's fit"));
            assert!((1..=all).contains(&n) && bound <= gain, "{f:?}");
            let batches = if n == 1 {
                "1 shadow batch".to_string()
            } else {
                format!("{n} shadow batches")
            };
            assert!(
                text.contains(&format!("the thresholds were weighed on {batches}")),
                "{text}"
            );
            // Fewer than all only where the last explained its update no better than the client.
            assert!(n == all || worst >= fit, "{f:?}");
            let worse = fit > worst;
            assert_eq!(f.unsure_across_shadows, bound <= 0.0 && worse, "{f:?}");
            if f.unsure_across_shadows || f.unlike_every_shadow {
                assert_eq!(f.prior_cells, f.cells, "{f:?}");
                let why = match f.unlike_every_shadow {
                    true => "this client's orders fell worse than any shadow batch's",
                    false => "was not sure across them",
                };
                assert!(text.contains(why), "{text}");
            }
        } else {
            assert!(f.gain_across_shadows.is_none() && !f.unsure_across_shadows, "{f:?}");
        }
        if f.prior_cells == f.cells {
            // The table's guess, which beat the marginals' draw on the server's batches.
            assert!(f.shadow_of_table && !f.imputed, "{f:?}");
            assert!(f.table_guess.is_some_and(|w| w.taken), "{f:?}");
            assert_eq!(report.accuracy.total, t, "seed {seed}");
        }
    }
    assert!(imputed.contains(&true), "{imputed:?}");
    assert!(weighed.contains(&true), "{weighed:?}");
}

/// An attack's stages (the early answer's steps, the full run, a shadow client's run) reach its
/// caller as one count of steps over all of them that never goes back.
#[test]
fn progress_never_goes_back_across_an_attacks_stages() {
    let data = adult();
    for options in [
        // The shadow client runs after the attack.
        RunOptions {
            batch_size: 8,
            ensemble: Some(4),
            iterations: 200,
            clip: Some(1.0),
            noise: 0.1,
            ..RunOptions::default()
        },
        // The early answer's 300 steps come first.
        RunOptions {
            batch_size: 8,
            ensemble: Some(4),
            iterations: 600,
            ..RunOptions::default()
        },
    ] {
        let config = options.attack_config().unwrap();
        let mut seen: Vec<(String, usize, usize)> = Vec::new();
        let report = pollster::block_on(run_attack(&Runtime::cpu(), &data, &config, &mut |p| {
            seen.push((p.phase.clone(), p.step, p.of));
            true
        }))
        .unwrap();
        let details = report.row_details().unwrap();
        assert!(
            details.fallback.is_some() || details.answered_after.is_some(),
            "{details:?}"
        );
        // Every stage's steps counted together: more than the configured steps, one total.
        let total = seen[0].2;
        assert!(total > config.iterations, "{seen:?}");
        assert!(seen.iter().all(|&(_, s, of)| of == total && s <= of), "{seen:?}");
        assert!(
            seen.windows(2).all(|w| w[1].1 >= w[0].1),
            "progress went back: {seen:?}"
        );
    }
}

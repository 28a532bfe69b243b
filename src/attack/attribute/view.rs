//! What the server of the attribute attack sees: the client's rows but one column (or, with
//! unknown membership, candidates among which it infers the client's), their labels in order, and
//! every round it observed.
use super::settings::{AttributeSettings, Membership};
use crate::attack::attribute::membership;
use crate::attack::priors::known::KnownCells;
use crate::client::simulate::{Round, simulate_round};
use crate::config::AttackConfig;
use crate::error::Result;
use crate::scenario::{Client, Scenario};
use crate::seed::seed_for;
use crate::table::encode_rows;
use crate::table::{Dataset, Value};

pub async fn scenario(dataset: &Dataset, config: &AttackConfig, settings: &AttributeSettings) -> Result<Scenario> {
    let client = Client::simulate(dataset, config).await?;
    // The rows it attacks: the client's, or with unknown membership those of the candidates the
    // server takes for the client's (`attack::attribute::membership`).
    let (attack_rows, membership) = match settings.membership {
        Membership::Unknown => {
            let (rows, report) = membership::infer(
                dataset,
                &client.params,
                &client.observed,
                &client.batch,
                &settings.column,
                seed_for(config.seed, 9),
                config.model(),
                config.update_source(&client.params),
            );
            (rows, Some(report))
        }
        Membership::Known => (client.batch.clone(), None),
    };
    // It knows each of its rows' labels, in their order, and every cell but the sensitive one.
    let labels: Vec<usize> = attack_rows.iter().map(|&i| dataset.labels[i]).collect();
    let unknown: Vec<(usize, usize)> = dataset
        .features
        .iter()
        .filter(|f| f.name == settings.column)
        .map(|f| (f.offset, f.width()))
        .collect();
    let rows: Vec<Vec<Value>> = attack_rows.iter().map(|&i| dataset.rows[i].clone()).collect();
    let known = KnownCells::all_but(&encode_rows(dataset, &rows), dataset.d(), &unknown);
    // Further rounds: the client trains from the model its last update left (the server applies
    // it), and sends again.
    let client_x = encode_rows(dataset, &client.rows);
    let (mut model, mut update) = (client.params.clone(), client.observed.clone());
    let mut later_rounds = Vec::new();
    for r in 1..settings.rounds {
        model = model.minus(&update);
        let round = Round {
            seed: seed_for(config.seed, 20 + r as u64),
            ..client.round
        };
        let targets = client.round.model.head.targets(&client.labels, dataset.classes.len());
        update = simulate_round(&model, &client_x, &targets, &round).await?;
        later_rounds.push((model.clone(), update.clone()));
    }
    Ok(Scenario {
        truth: Some(client.truth(&labels, dataset.classes.len())),
        labels,
        model_accuracy: client.model_accuracy,
        params: client.params,
        observed: client.observed,
        attack_rows,
        membership,
        known: Some(known),
        later_rounds,
    })
}

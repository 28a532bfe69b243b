//! A received update scored against the rows it was computed on, which the caller holds: a client
//! auditing its own update before it leaves (the Python package's Flower Mod, `attack-update
//! --truth`). The attack is the one a server runs on the update (`attack_received`); the rows are
//! read as the encoding reads them, matched and scored as a simulated attack's are, beside the
//! random guess drawn from those same rows' marginals.
use serde::{Deserialize, Serialize};

use super::ReceivedUpdate;
use super::recipe::{RecipeCheck, check_recipe, check_recipe_in_orders, orders_of_truth};
use crate::assess::cells_shown::KnownOrders;
use crate::assess::fallback::FallbackSummary;
use crate::assess::rows::fall_back;
use crate::assess::scoring::{Accuracy, score};
use crate::attack::baselines::random_rows;
use crate::attack::inversion::driver::Progress;
use crate::config::AttackConfig;
use crate::error::{Error, Result};
use crate::report::Provenance;
use crate::report::reconstruction::ReconstructionReport;
use crate::run::invert_in_dataset_terms;
use crate::runtime::Runtime;
use crate::seed::seed_for;
use crate::table::cell::is_missing;
use crate::table::number::parse_number;
use crate::table::{Dataset, FeatureKind, RawTable, Value};

/// What the server would recover from the update, against the client's own rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredUpdate {
    /// The server's reconstruction, as `attack_received` reports it.
    pub reconstruction: ReconstructionReport,
    /// The reconstruction matched to the true rows (Hungarian) and scored.
    pub accuracy: Accuracy,
    /// Total accuracy of rows drawn from the true rows' marginals: what a server guesses without
    /// the update.
    pub random_baseline: f64,
    pub gain_over_random: f64,
    /// Rows the attack proved (by the first layer's ReLU pattern or the second layer's span):
    /// each is one of the client's rows, certified without the truth.
    pub rows_proved: usize,
    /// Rows that fit the update without a proof (`Provenance::Consistent`: near-twins, dead
    /// units), counted apart from the proved ones.
    #[serde(default)]
    pub rows_consistent: usize,
    pub rows: usize,
    /// Whether the recipe the attack was told reproduces the update on these rows: where it does
    /// not, `accuracy` is not what the server would reconstruct.
    pub recipe_check: RecipeCheck,
}

/// The rows of a CSV as `encoding` reads them (its features by name, its categories, numbers in
/// the file's decimal mark), with their labels: the encoding's dataset holding these rows. A row
/// with a missing cell among the features or the label is left out, as the table reader does.
pub fn truth_rows(encoding: &Dataset, raw: &RawTable) -> Result<Dataset> {
    let column = |name: &str| {
        raw.headers.iter().position(|h| h == name).ok_or_else(|| {
            Error::Config(format!(
                "the client's rows have no column {name:?}, which the encoding has"
            ))
        })
    };
    let label = column(&encoding.label)?;
    let at: Vec<usize> = encoding
        .features
        .iter()
        .map(|f| column(&f.name))
        .collect::<Result<_>>()?;
    let mut own = Dataset {
        rows: Vec::new(),
        labels: Vec::new(),
        values: Vec::new(),
        ..encoding.clone()
    };
    for (row, line) in raw.rows.iter().zip(&raw.lines) {
        if at.iter().chain([&label]).any(|&j| is_missing(&row[j])) {
            continue;
        }
        let values = encoding
            .features
            .iter()
            .zip(&at)
            .map(|(f, &j)| {
                let cell = row[j].as_str();
                let value = match &f.kind {
                    FeatureKind::Categorical { categories } => {
                        categories.iter().position(|c| c == cell).map(|c| Value::Cat(c as u32))
                    }
                    FeatureKind::Continuous { .. } => parse_number(cell, raw.dialect.decimal_comma).map(Value::Num),
                };
                value.ok_or_else(|| {
                    Error::Config(format!(
                        "line {line}: {:?} is {cell:?}, which the encoding cannot read ({})",
                        f.name,
                        match f.kind {
                            FeatureKind::Categorical { .. } => "not one of its categories",
                            FeatureKind::Continuous { .. } => "not a number",
                        }
                    ))
                })
            })
            .collect::<Result<Vec<Value>>>()?;
        let cell = row[label].as_str();
        let unreadable = || {
            Error::Config(format!(
                "line {line}: the label {:?} is {cell:?}, which the encoding cannot read",
                encoding.label
            ))
        };
        match &encoding.target {
            Some(_) => {
                own.values
                    .push(parse_number(cell, raw.dialect.decimal_comma).ok_or_else(unreadable)?);
                own.labels.push(0);
            }
            None => own
                .labels
                .push(encoding.classes.iter().position(|c| c == cell).ok_or_else(unreadable)?),
        }
        own.rows.push(values);
    }
    Ok(own)
}

/// Attack a received update as the server would (`attack_received`) and score the reconstruction
/// against `truth`, the rows the update was computed on (`truth_rows`), in their order.
pub async fn attack_received_against(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    received: &ReceivedUpdate,
    truth: &Dataset,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<ScoredUpdate> {
    let start = web_time::Instant::now();
    if truth.n() != config.rows() {
        return Err(Error::Config(format!(
            "the client's table has {} complete rows but the update was computed on {}: give the rows the \
             update was computed on",
            truth.n(),
            config.rows()
        )));
    }
    let in_terms = super::pipeline::in_dataset_terms(dataset, config, received)?;
    let mut recipe_check = check_recipe(config, &in_terms, truth).await?;
    let (setup, inverted) = invert_in_dataset_terms(runtime, dataset, config, &in_terms, progress).await?;
    // The report's rows are formatted text: score the pooled rows themselves, reconstructed once.
    let mut recon = setup.reconstruct(inverted, progress).await?;
    // A reshuffling client's recipe, checkable now in the orders the update chose; where the
    // replay in them confirms it, they are the client's, and what its update shows is checked in
    // them.
    let mut confirmed_orders = None;
    if let Some(orders) = recon.chosen.as_ref().and_then(|c| c.orders_of_rows())
        && let Some(check) = check_recipe_in_orders(config, &in_terms, truth, &recon.rows, &orders.order).await?
    {
        if check.matches == Some(true) {
            confirmed_orders = Some(orders_of_truth(truth, &recon.rows, &orders.order));
        }
        recipe_check = check;
    }
    let fit = setup.update_fit(&recon).await?;
    let rules = setup.rules.clone();
    let guess = random_rows(truth, truth.n(), seed_for(config.seed, 5));
    // Where rows are left unproved, the server falls back to the marginals cell by cell as a
    // simulated attack does (`assess::fallback`): a shadow client of rows drawn from the same
    // marginals the random baseline draws from, trained by the stated recipe on the network the
    // server sent, says which of the ensemble's cells a guess beats. The figure is then never
    // far below guessing because the attack ran out of strength (issue 43).
    let fallback = match setup.fallback_on(&recon, truth, &guess, progress).await? {
        Some(c) => fall_back(
            &mut recon,
            &c,
            &rules,
            &crate::assess::fallback::Guess::drawn(guess.clone()),
        ),
        None => None,
    };
    setup.put_rows_by_category(&mut recon, truth, fallback.as_ref().map(|(c, m)| (c, m.as_slice())));
    let scored = score(&rules, &truth.rows, &recon.rows);
    let fallback = fallback.map(|(c, mask)| FallbackSummary::of(&c, &mask, Some(&scored)));
    let accuracy = scored.accuracy;
    let random_baseline = score(&rules, &truth.rows, &guess).accuracy.total;
    let count = |p: Provenance| recon.provenance.iter().filter(|&&q| q == p).count();
    let (rows_proved, rows_consistent) = (count(Provenance::Proved), count(Provenance::Consistent));
    let targets = truth.targets(&(0..truth.n()).collect::<Vec<_>>(), config.model().head);
    let orders = confirmed_orders.as_deref().map(KnownOrders::Given);
    let cells_shown = (setup.cells_shown(&truth.rows, &targets, orders).await?)
        .map(|moves| moves.summary(scored.correct.iter().map(|c| &c[..])));
    let seconds = start.elapsed().as_secs_f64();
    let mut reconstruction = setup.received_report(recon, fit, fallback, Some(&truth.rows), seconds);
    reconstruction.details.cells_shown = cells_shown;
    Ok(ScoredUpdate {
        reconstruction,
        gain_over_random: accuracy.total - random_baseline,
        accuracy,
        random_baseline,
        rows_proved,
        rows_consistent,
        rows: truth.n(),
        recipe_check,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{Encoding, parse_csv};

    fn encoding() -> Dataset {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/pytorch-update/encoding.json");
        let enc: Encoding = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        enc.into_dataset().unwrap()
    }

    const HEADER: &str = "age,workclass,fnlwgt,education,education-num,marital-status,occupation,relationship,race,sex,capital-gain,capital-loss,hours-per-week,native-country,salary";

    fn read(body: &str) -> Result<Dataset> {
        truth_rows(
            &encoding(),
            &parse_csv(format!("{HEADER}\n{body}").as_bytes(), 1 << 20).unwrap(),
        )
    }

    #[test]
    fn rows_are_read_in_the_encodings_terms_and_incomplete_ones_left_out() {
        let own = read(
            "39,State-gov,77516,Bachelors,13,Never-married,Adm-clerical,Not-in-family,White,Male,2174,0,40,United-States,<=50K\n\
             50,?,83311,Bachelors,13,Married-civ-spouse,Exec-managerial,Husband,White,Male,0,0,13,United-States,<=50K\n\
             38,Private,215646,HS-grad,9,Divorced,Handlers-cleaners,Not-in-family,White,Male,0,0,40,United-States,>50K\n",
        )
        .unwrap();
        assert_eq!(own.n(), 2, "the row with a missing cell is left out");
        assert_eq!(own.labels, [0, 1]);
        let enc = encoding();
        assert_eq!(own.features, enc.features);
        assert_eq!(own.rows[0][0], Value::Num(39.0));
        assert_eq!(own.format(1, own.rows[1][1]), "Private");
    }

    #[test]
    fn a_cell_the_encoding_cannot_read_is_named_with_its_line() {
        let e = read("39,Astronaut,77516,Bachelors,13,Never-married,Adm-clerical,Not-in-family,White,Male,2174,0,40,United-States,<=50K\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 2") && e.contains("\"workclass\" is \"Astronaut\""),
            "{e}"
        );
        let e = read("39,Private,77516,Bachelors,13,Never-married,Adm-clerical,Not-in-family,White,Male,2174,0,40,United-States,maybe\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("the label \"salary\" is \"maybe\""), "{e}");
        let e = truth_rows(&encoding(), &parse_csv(b"age,salary\n1,<=50K\n", 1 << 20).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("no column \"workclass\""), "{e}");
    }
}

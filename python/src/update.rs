//! Updates received from elsewhere: attacked as a server would (`attack_update`, the npm
//! package's `attackUpdate`), and a client's own round audited against its rows within a time
//! budget (`audit_round`, the Flower Mod's one call).
use pyo3::prelude::*;
use serde_json::{Value as Json, json};

use leakscope::client::simulate::{Round, simulate_round};
use leakscope::config::AttackConfig;
use leakscope::options::{ProtocolKind, RunOptions};
use leakscope::received::ReceivedUpdate;
use leakscope::received::truth::{attack_received_against, truth_rows};
use leakscope::table::{Dataset, Encoding, StatedModel};
use leakscope::{Error, Runtime, attack_received};

use crate::progress::Reporter;
use crate::{LeakscopeError, engine_error, from_json, read_csv, to_json};

/// The encoding, the update read, and the attack's options: the caller's, with the batch size and
/// labels only where given (else the file's) and the model checked against the weights, as
/// `leakscope attack-update` and the npm package's `attackUpdate` take them.
fn prepare(
    encoding: &str,
    update: &[u8],
    weights: Option<&[u8]>,
    options: &str,
) -> PyResult<(Dataset, ReceivedUpdate, RunOptions)> {
    let encoding: Encoding = from_json("not an encoding", encoding)?;
    let model = encoding.model.clone();
    let dataset = encoding.into_dataset().map_err(engine_error)?;
    let received = ReceivedUpdate::from_files(update, weights).map_err(engine_error)?;
    let given: Json = from_json("options", options)?;
    let o: RunOptions = from_json("options", options)?;
    let rows = given.get("batchSize").map(|_| o.batch_size);
    let labels = given.get("labels").map(|_| o.labels);
    let caller = StatedModel {
        hidden: given.get("hidden").map(|_| o.hidden.clone()),
        activation: given.get("activation").map(|_| o.activation),
        head: given.get("head").map(|_| o.head),
    };
    let stated = StatedModel::merged(model.as_ref(), caller).map_err(engine_error)?;
    if given.get("label").is_some() && o.label != dataset.label {
        return Err(LeakscopeError::new_err(format!(
            "the encoding's label is {:?}, not {:?}: leave label out",
            dataset.label, o.label
        )));
    }
    let o = received
        .attack_options(&dataset, o, rows, labels, &stated)
        .map_err(engine_error)?;
    Ok((dataset, received, o))
}

/// Attack an update that came from elsewhere: the reconstruction and its confidence, and, where
/// the caller gives the rows it was computed on (`truth`, a CSV), their accuracy.
#[pyfunction]
#[pyo3(signature = (encoding, update, weights, options, truth=None, progress=None))]
pub fn attack_update(
    py: Python<'_>,
    encoding: &str,
    update: &[u8],
    weights: Option<&[u8]>,
    options: &str,
    truth: Option<&[u8]>,
    progress: Option<PyObject>,
) -> PyResult<String> {
    let (dataset, received, o) = prepare(encoding, update, weights, options)?;
    let config = o.attack_config().map_err(engine_error)?;
    let truth = truth
        .map(|csv| truth_rows(&dataset, &read_csv(csv)?).map_err(engine_error))
        .transpose()?;
    let mut reporter = Reporter::new(progress);
    let rt = Runtime::cpu();
    let mut on = |p: &leakscope::attack::Progress| reporter.report(p);
    Ok(match truth {
        None => {
            let r =
                py.allow_threads(|| pollster::block_on(attack_received(&rt, &dataset, &config, &received, &mut on)));
            to_json(&reporter.finish(r)?)
        }
        Some(truth) => {
            let r = py.allow_threads(|| {
                pollster::block_on(attack_received_against(
                    &rt, &dataset, &config, &received, &truth, &mut on,
                ))
            });
            to_json(&reporter.finish(r)?)
        }
    })
}

/// A client's round audited against its rows (`truth`, the rows the update was computed on, in
/// order): {attacked: "round" | "first local batch", budget: why the round was not attacked
/// whole (null where it was), scored: the scored attack}. Where the attack's projected time
/// passes `max_seconds`, it is stopped and the round's first local batch is attacked instead:
/// the gradient of the first `localBatch` rows at the weights the server sent, which the engine
/// computes as the client's first local step does.
#[pyfunction]
#[pyo3(signature = (encoding, update, weights, options, truth, max_seconds=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn audit_round(
    py: Python<'_>,
    encoding: &str,
    update: &[u8],
    weights: Option<&[u8]>,
    options: &str,
    truth: &[u8],
    max_seconds: Option<f64>,
    progress: Option<PyObject>,
) -> PyResult<String> {
    let (dataset, received, o) = prepare(encoding, update, weights, options)?;
    let config = o.attack_config().map_err(engine_error)?;
    let truth = truth_rows(&dataset, &read_csv(truth)?).map_err(engine_error)?;
    let mut reporter = Reporter::new(progress);
    let rt = Runtime::cpu();
    let mut over: Option<String> = None;
    let result = py.allow_threads(|| {
        let mut on = |p: &leakscope::attack::Progress| {
            if let Some(why) = max_seconds.and_then(|limit| over_budget(p, limit)) {
                over = Some(why);
                return false;
            }
            reporter.report(p)
        };
        pollster::block_on(attack_received_against(
            &rt, &dataset, &config, &received, &truth, &mut on,
        ))
    });
    let why = match (result, over) {
        (Err(Error::Cancelled), Some(why)) => why,
        (result, _) => {
            let scored = reporter.finish(result)?;
            return Ok(json!({"attacked": "round", "budget": null, "scored": scored}).to_string());
        }
    };
    let b = o.local_batch.min(truth.n());
    if b == truth.n() {
        let why = format!("{why}; its first local batch is the whole round, so nothing was attacked");
        return Ok(json!({"attacked": "nothing", "budget": why, "scored": null}).to_string());
    }
    let (first, own) = first_batch(&received, &truth, &config, b)
        .map_err(engine_error)
        .map(|(update, own)| (update, own))?;
    let o = RunOptions {
        batch_size: b,
        protocol: ProtocolKind::Fedsgd,
        ..o
    };
    let config = o.attack_config().map_err(engine_error)?;
    let mut on = |p: &leakscope::attack::Progress| reporter.report(p);
    let result =
        py.allow_threads(|| pollster::block_on(attack_received_against(&rt, &dataset, &config, &first, &own, &mut on)));
    let scored = reporter.finish(result)?;
    Ok(
        json!({"attacked": "first local batch", "budget": why, "scored": serde_json::to_value(&scored).unwrap()})
            .to_string(),
    )
}

/// Why an attack reporting `p` will not finish within `limit` seconds (None: it may): it has run
/// past the limit, or its pace so far says it will.
fn over_budget(p: &leakscope::attack::Progress, limit: f64) -> Option<String> {
    let projected = match p.step {
        0 => p.elapsed,
        s => p.elapsed / s as f64 * p.of.max(s) as f64,
    };
    (projected > limit).then(|| {
        format!(
            "the round's attack would take about {projected:.0} s (after {} of {} steps in {:.1} s), over max_seconds = {limit}",
            p.step, p.of, p.elapsed
        )
    })
}

/// The update of the first `b` rows alone at the weights the server sent (one FedSGD step of the
/// client's model), with those rows.
fn first_batch(
    received: &ReceivedUpdate,
    truth: &Dataset,
    config: &AttackConfig,
    b: usize,
) -> leakscope::Result<(ReceivedUpdate, Dataset)> {
    if !received.embeddings.is_empty() {
        return Err(leakscope::Error::Config(
            "the first local batch's gradient is not simulated for a network with embedding tables".into(),
        ));
    }
    let idx: Vec<usize> = (0..b).collect();
    // In the client's own inputs, as the network the server sent takes them.
    let x: Vec<f32> = idx
        .iter()
        .flat_map(|&i| truth.encode_for_client(&truth.rows[i]))
        .map(|v| v as f32)
        .collect();
    let model = config.model();
    let targets = truth.targets(&idx, model.head);
    let update = pollster::block_on(simulate_round(&received.params, &x, &targets, &Round::fedsgd(model)))?;
    let own = Dataset {
        rows: truth.rows[..b].to_vec(),
        labels: truth.labels[..b].to_vec(),
        values: truth.values.get(..b).map(<[f64]>::to_vec).unwrap_or_default(),
        ..truth.clone()
    };
    let labels = truth
        .target
        .is_none()
        .then(|| own.labels.iter().map(|&l| truth.classes[l].clone()).collect());
    let first = ReceivedUpdate {
        params: received.params.clone(),
        update,
        embeddings: received.embeddings.clone(),
        rows: Some(b),
        labels,
    };
    Ok((first, own))
}

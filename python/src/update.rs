//! Updates received from elsewhere: attacked as a server would (`attack_update`, the npm
//! package's `attackUpdate`), and a client's own round audited against its rows within a budget
//! of work (`audit_round`, the Flower Mod's one call).
use pyo3::prelude::*;
use serde_json::Value as Json;

use leakscope::options::RunOptions;
use leakscope::received::ReceivedUpdate;
use leakscope::received::round::{self, RoundBudget};
use leakscope::received::truth::{attack_received_against, truth_rows};
use leakscope::table::{Dataset, Encoding, StatedModel};
use leakscope::{Runtime, attack_received};

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
/// order), within `budget_gflop` of the engine's counted work (`leakscope::received::round`):
/// {scored: the round's attack scored, or null where its work passed the budget; work; budget_gflop;
/// skipped: why the round was not attacked; first_batch: where the round was over budget and
/// `first_batch` is set, the first local batch's gradient attacked apart, with what its figure
/// bounds}. The decision is made from the problem's sizes before anything runs.
#[pyfunction]
#[pyo3(signature = (encoding, update, weights, options, truth, budget_gflop=None, first_batch=true, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn audit_round(
    py: Python<'_>,
    encoding: &str,
    update: &[u8],
    weights: Option<&[u8]>,
    options: &str,
    truth: &[u8],
    budget_gflop: Option<f64>,
    first_batch: bool,
    progress: Option<PyObject>,
) -> PyResult<String> {
    if let Some(b) = budget_gflop.filter(|b| !(b.is_finite() && *b >= 0.0)) {
        return Err(LeakscopeError::new_err(format!(
            "budget_gflop is {b}: give a number of GFLOP, 0 or more (or None for no budget)"
        )));
    }
    let (dataset, received, o) = prepare(encoding, update, weights, options)?;
    let config = o.attack_config().map_err(engine_error)?;
    let truth = truth_rows(&dataset, &read_csv(truth)?).map_err(engine_error)?;
    let mut reporter = Reporter::new(progress);
    let rt = Runtime::cpu();
    let budget = RoundBudget {
        gflop: budget_gflop,
        first_batch,
    };
    let result = py.allow_threads(|| {
        let mut on = |p: &leakscope::attack::Progress| reporter.report(p);
        pollster::block_on(round::audit_round(
            &rt, &dataset, &config, &received, &truth, budget, &mut on,
        ))
    });
    Ok(to_json(&reporter.finish(result)?))
}

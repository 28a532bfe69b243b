//! leakscope._native: the engine for Python, as thin as the npm package's layer (src/wasm). Every
//! call takes and gives JSON text: options as the npm package names them (camelCase; unknown ones
//! refused by the engine), reports as the CLI's --json writes them. The Python package
//! (python/leakscope) turns tables, arrays and keyword arguments into these and back. Long calls
//! release the GIL and report progress to a callback that may cancel them (`progress`).
mod canary;
mod progress;
mod update;

use pyo3::create_exception;
use pyo3::prelude::*;
use serde::de::DeserializeOwned;

use leakscope::audit::{self as engine_audit, AuditOptions, AuditReport};
use leakscope::options::RunOptions;
use leakscope::table::{Dataset, Encoding, MAX_CSV_BYTES, RawTable, parse_csv, summarize};
use leakscope::{Runtime, run_attack};
use progress::Reporter;

create_exception!(_native, LeakscopeError, pyo3::exceptions::PyValueError);
create_exception!(_native, Cancelled, LeakscopeError);

pub(crate) fn engine_error(e: impl std::fmt::Display) -> PyErr {
    LeakscopeError::new_err(e.to_string())
}

pub(crate) fn from_json<T: DeserializeOwned>(what: &str, json: &str) -> PyResult<T> {
    serde_json::from_str(json).map_err(|e| LeakscopeError::new_err(format!("{what}: {e}")))
}

pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("the engine's types serialise")
}

pub(crate) fn read_csv(csv: &[u8]) -> PyResult<RawTable> {
    parse_csv(csv, MAX_CSV_BYTES).map_err(engine_error)
}

fn dataset(csv: &[u8], o: &RunOptions) -> PyResult<Dataset> {
    Dataset::from_raw(&read_csv(csv)?, &o.dataset_options()).map_err(engine_error)
}

/// Columns, inferred kinds, label candidates and rows with missing values.
#[pyfunction]
fn inspect(csv: &[u8]) -> PyResult<String> {
    Ok(to_json(&summarize(&read_csv(csv)?)))
}

/// The options a run gets for every one it leaves out.
#[pyfunction]
fn defaults() -> String {
    to_json(&RunOptions::default())
}

/// The attacks this engine offers, with their settings, defaults and limits.
#[pyfunction]
fn attacks() -> String {
    to_json(&leakscope::attack::describe_attacks())
}

/// The audit's default grid, or the quick one the page runs.
#[pyfunction]
fn audit_defaults(quick: bool) -> String {
    to_json(&if quick {
        AuditOptions::quick()
    } else {
        AuditOptions::default()
    })
}

/// ε over rounds with client sampling (RDP), from {noiseMultiplier, sampleRate, rounds, delta}.
#[pyfunction]
fn privacy(query: &str) -> PyResult<String> {
    let query: leakscope::client::accountant::PrivacyQuery = from_json("privacy", query)?;
    Ok(to_json(&query.account().map_err(engine_error)?))
}

/// The table's encoding (what turns a row into the network's input), as `leakscope encoding`
/// writes it.
#[pyfunction]
fn encoding(csv: &[u8], options: &str) -> PyResult<String> {
    let o: RunOptions = from_json("options", options)?;
    Ok(to_json(&Encoding::of(&dataset(csv, &o)?)))
}

/// The table's complete rows under an encoding, as the network's inputs: (X row-major, d, y, y is
/// a regression's) with y the class indices or a regression's standardised labels.
#[pyfunction]
fn encode(csv: &[u8], encoding: &str) -> PyResult<(Vec<f32>, usize, Vec<f64>, bool)> {
    let encoding: Encoding = from_json("not an encoding", encoding)?;
    let dataset = encoding.into_dataset().map_err(engine_error)?;
    let own = leakscope::received::truth::truth_rows(&dataset, &read_csv(csv)?).map_err(engine_error)?;
    if dataset.pipeline.as_ref().is_some_and(|p| p.embeds()) {
        return Err(LeakscopeError::new_err(
            "the encoding embeds a column (coding \"embedding\"): its inputs are rows of the network's own \
             embedding table, which the encoding does not hold; feed the client's nn.Embedding the category's \
             index in the encoding's categories",
        ));
    }
    // The client's own inputs: its pipeline's where the encoding states one.
    let x = own
        .rows
        .iter()
        .flat_map(|r| own.encode_for_client(r))
        .map(|v| v as f32)
        .collect();
    let d = own.pipeline.as_ref().map_or(own.d(), |p| p.d());
    Ok(match &own.target {
        Some(t) => (
            x,
            d,
            own.values.iter().map(|&v| t.standardise(v) as f64).collect(),
            true,
        ),
        None => (x, d, own.labels.iter().map(|&l| l as f64).collect(), false),
    })
}

/// One attack on a batch drawn from the table: the report.
#[pyfunction]
#[pyo3(signature = (csv, options, progress=None))]
fn attack(py: Python<'_>, csv: &[u8], options: &str, progress: Option<PyObject>) -> PyResult<String> {
    let o: RunOptions = from_json("options", options)?;
    let config = o.attack_config().map_err(engine_error)?;
    let dataset = dataset(csv, &o)?;
    let mut reporter = Reporter::new(progress);
    let result = py.allow_threads(|| {
        pollster::block_on(run_attack(&Runtime::cpu(), &dataset, &config, &mut |p| {
            reporter.report(p)
        }))
    });
    Ok(to_json(&reporter.finish(result)?))
}

/// The table's exposure over a grid of settings: the audit report (summary, verdict, table).
#[pyfunction]
#[pyo3(signature = (csv, options, progress=None))]
fn audit(py: Python<'_>, csv: &[u8], options: &str, progress: Option<PyObject>) -> PyResult<String> {
    let mut o: AuditOptions = from_json("options", options)?;
    let dataset = dataset(csv, &o.run)?;
    // Client sizes above the table's rows are left out (the report's options say which ran).
    o.fit_table(dataset.n());
    let cells = o.cells(&dataset).map_err(engine_error)?;
    let mut reporter = Reporter::new(progress);
    let count = cells.len();
    let result = py.allow_threads(|| {
        let runtime = Runtime::cpu();
        let mut results = Vec::new();
        for (i, cell) in cells.iter().enumerate() {
            // Each cell's steps, its phase naming the cell among all.
            let mut on = |p: &leakscope::attack::Progress| {
                let phase = format!("cell {} of {count}: {}", i + 1, p.phase);
                reporter.report(&leakscope::attack::Progress { phase, ..p.clone() })
            };
            results.push(pollster::block_on(engine_audit::run_cell(
                &runtime, &dataset, cell, &mut on,
            ))?);
        }
        engine_audit::summarise(&o, engine_audit::TableInfo::of(&dataset, &o.run), &cells, results)
    });
    Ok(to_json(&AuditReport::of(reporter.finish(result)?)))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("LeakscopeError", m.py().get_type::<LeakscopeError>())?;
    m.add("Cancelled", m.py().get_type::<Cancelled>())?;
    m.add("MAX_CSV_BYTES", MAX_CSV_BYTES)?;
    m.add_function(wrap_pyfunction!(inspect, m)?)?;
    m.add_function(wrap_pyfunction!(defaults, m)?)?;
    m.add_function(wrap_pyfunction!(attacks, m)?)?;
    m.add_function(wrap_pyfunction!(audit_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(privacy, m)?)?;
    m.add_function(wrap_pyfunction!(encoding, m)?)?;
    m.add_function(wrap_pyfunction!(encode, m)?)?;
    m.add_function(wrap_pyfunction!(attack, m)?)?;
    m.add_function(wrap_pyfunction!(audit, m)?)?;
    m.add_function(wrap_pyfunction!(update::attack_update, m)?)?;
    m.add_class::<canary::CanaryRun>()?;
    m.add_function(wrap_pyfunction!(update::audit_round, m)?)?;
    Ok(())
}

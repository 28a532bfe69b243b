//! Canaries inserted into a real run's aggregates (`leakscope.flower_canaries` feeds it a Flower
//! server's rounds): the engine's `client::canary::CanaryRun`, its vectors passed as bytes of
//! little-endian float64 so a model of millions of parameters crosses without a Python float each.
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::{engine_error, from_json, to_json};
use leakscope::client::canary;

fn floats(bytes: &[u8]) -> PyResult<Vec<f64>> {
    if bytes.len() % 8 != 0 {
        return Err(engine_error(format!(
            "the aggregate is {} bytes, not a whole number of float64 values",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect())
}

/// CanaryRun(query, sample_rate): `query` the canaries as JSON ({inserted, dimension, heldOut?,
/// seed?}).
#[pyclass(module = "leakscope._native")]
pub struct CanaryRun {
    run: canary::CanaryRun,
}

#[pymethods]
impl CanaryRun {
    #[new]
    fn new(query: &str, sample_rate: f64) -> PyResult<Self> {
        let query: canary::CanaryQuery = from_json("canaries", query)?;
        Ok(CanaryRun {
            run: canary::CanaryRun::new(&query, sample_rate).map_err(engine_error)?,
        })
    }

    /// The aggregate with this round's canaries added at `scale` each, and how many joined.
    fn insert<'py>(&mut self, py: Python<'py>, aggregate: &[u8], scale: f64) -> PyResult<(Bound<'py, PyBytes>, usize)> {
        let mut v = floats(aggregate)?;
        let joined = py
            .allow_threads(|| self.run.insert(&mut v, scale))
            .map_err(engine_error)?;
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        Ok((PyBytes::new(py, &bytes), joined))
    }

    /// Reads one round's aggregate as the server sees it.
    fn observe(&mut self, py: Python<'_>, aggregate: &[u8]) -> PyResult<()> {
        let v = floats(aggregate)?;
        py.allow_threads(|| self.run.observe(&v)).map_err(engine_error)
    }

    #[getter]
    fn rounds(&self) -> u64 {
        self.run.rounds()
    }

    /// Both threat models' estimates so far, as JSON.
    fn estimate(&self, delta: f64, mechanism: &str) -> PyResult<String> {
        Ok(to_json(&self.run.estimate(delta, mechanism).map_err(engine_error)?))
    }
}

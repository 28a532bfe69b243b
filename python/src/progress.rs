//! The engine's progress reports handed to a Python callback, with the GIL taken only for the
//! call: Ctrl-C (a pending signal) and a callback that returns False cancel the run at its next
//! report, and the run then raises what stopped it.
use pyo3::prelude::*;
use pyo3::types::PyDict;

use leakscope::attack::Progress;

use crate::{Cancelled, engine_error};

pub struct Reporter {
    callback: Option<PyObject>,
    /// Why the run was stopped from Python: a KeyboardInterrupt, the callback's own exception, or
    /// a Cancelled naming the callback.
    stopped: Option<PyErr>,
}

impl Reporter {
    pub fn new(callback: Option<PyObject>) -> Reporter {
        Reporter {
            callback,
            stopped: None,
        }
    }

    /// One report: false cancels the run.
    pub fn report(&mut self, p: &Progress) -> bool {
        Python::with_gil(|py| match self.call(py, p) {
            Ok(go_on) => go_on,
            Err(e) => {
                self.stopped = Some(e);
                false
            }
        })
    }

    fn call(&self, py: Python<'_>, p: &Progress) -> PyResult<bool> {
        py.check_signals()?;
        let Some(callback) = &self.callback else {
            return Ok(true);
        };
        let d = PyDict::new(py);
        d.set_item("phase", &p.phase)?;
        d.set_item("step", p.step)?;
        d.set_item("of", p.of)?;
        d.set_item("loss", p.loss)?;
        d.set_item("elapsed", p.elapsed)?;
        let answer = callback.call1(py, (d,))?;
        // Only an explicit False cancels: a callback that returns nothing lets the run go on.
        if answer.bind(py).is_instance_of::<pyo3::types::PyBool>() && !answer.extract::<bool>(py)? {
            return Err(Cancelled::new_err("cancelled: the progress callback returned False"));
        }
        Ok(true)
    }

    /// The run's result as Python sees it: an engine error as LeakscopeError, a cancelled run as
    /// what cancelled it.
    pub fn finish<T>(self, result: leakscope::Result<T>) -> PyResult<T> {
        match (result, self.stopped) {
            (Ok(v), _) => Ok(v),
            (Err(leakscope::Error::Cancelled), Some(why)) => Err(why),
            (Err(e), _) => Err(engine_error(e)),
        }
    }
}

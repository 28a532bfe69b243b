//! A table loaded once. JS loads the CSV into a worker's engine and refers to it by this handle,
//! so a run, its plan, its probes and an audit's cells never send or parse the bytes again.
use std::cell::RefCell;

use wasm_bindgen::prelude::*;

use super::value::{js_error, to_js};
use crate::options::RunOptions;
use crate::table::{Dataset, MAX_CSV_BYTES, RawTable, parse_csv, summarize};

#[wasm_bindgen]
pub struct Table {
    raw: RawTable,
    bytes: usize,
    /// The last reading of the table, keyed by the options that decide it (label, kinds, columns
    /// left out): a page asks about one reading several times (plan, probes, run).
    read: RefCell<Option<(String, Dataset)>>,
}

#[wasm_bindgen]
impl Table {
    /// Read a CSV (at most the engine's `maxCsvBytes`); a malformed one is refused with the line
    /// and what is wrong there.
    #[wasm_bindgen(constructor)]
    pub fn new(csv: &[u8]) -> Result<Table, JsError> {
        Ok(Table {
            raw: parse_csv(csv, MAX_CSV_BYTES).map_err(js_error)?,
            bytes: csv.len(),
            read: RefCell::new(None),
        })
    }

    /// Columns, inferred kinds, label candidates and rows with missing values.
    pub fn inspect(&self) -> Result<JsValue, JsError> {
        to_js(&summarize(&self.raw))
    }

    /// The CSV's size in bytes (the plan counts it in each worker's memory).
    #[wasm_bindgen(getter)]
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Table {
    /// The table read with `o`'s reading options (the label, kinds and columns left out).
    pub(super) fn dataset(&self, o: &RunOptions) -> Result<Dataset, JsError> {
        let reading = o.dataset_options();
        let key = format!("{reading:?}");
        if let Some((k, d)) = self.read.borrow().as_ref()
            && *k == key
        {
            return Ok(d.clone());
        }
        let dataset = Dataset::from_raw(&self.raw, &reading).map_err(js_error)?;
        *self.read.borrow_mut() = Some((key, dataset.clone()));
        Ok(dataset)
    }
}

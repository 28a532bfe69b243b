//! An audit's pieces for a page: the plan of its grid, one cell at a time on this engine (the
//! page's workers each take the next), and the report from every cell's result.
use wasm_bindgen::prelude::*;

use super::engine::Engine;
use super::members::reporter;
use super::table::Table;
use super::value::{js_error, to_js};
use crate::audit::{self, AuditReport, CellResult};

#[wasm_bindgen]
impl Engine {
    /// How an audit runs over up to `workers` workers: its cells (dearest first, each with its
    /// share of the work) and how many workers take part. Fails, before anything runs, on a
    /// setting the table cannot take.
    #[wasm_bindgen(js_name = auditPlan)]
    pub fn audit_plan(&self, table: &Table, options: JsValue, workers: usize) -> Result<JsValue, JsError> {
        let (dataset, options) = self.prepare_audit(table, options)?;
        let cells = options.cells(&dataset).map_err(js_error)?;
        let workers = workers.clamp(1, crate::plan::MAX_WORKERS);
        to_js(&audit::pool::plan(&cells, workers))
    }

    /// Run cell `index` of an audit: on WebGPU when this engine was asked for it, else on the CPU
    /// (an audit's cells are many small attacks that the page's workers run side by side).
    #[wasm_bindgen(js_name = runAuditCell)]
    pub async fn run_audit_cell(
        &self,
        table: &Table,
        options: JsValue,
        index: usize,
        on_progress: Option<js_sys::Function>,
        signal: Option<web_sys::AbortSignal>,
    ) -> Result<JsValue, JsError> {
        let (dataset, options) = self.prepare_audit(table, options)?;
        let cells = options.cells(&dataset).map_err(js_error)?;
        let cell = cells
            .get(index)
            .ok_or_else(|| JsError::new(&format!("the audit has {} cells, not a cell {index}", cells.len())))?;
        let runtime = self.asked_runtime();
        self.warmed_for(runtime).await;
        let mut progress = reporter(on_progress, signal);
        let result: CellResult = audit::run_cell(runtime, &dataset, cell, &mut progress)
            .await
            .map_err(js_error)?;
        to_js(&result)
    }

    /// The audit from every cell's result: its summary, verdict, Markdown table and plots.
    #[wasm_bindgen(js_name = auditReport)]
    pub fn audit_report(&self, table: &Table, options: JsValue, results: JsValue) -> Result<JsValue, JsError> {
        let (dataset, options) = self.prepare_audit(table, options)?;
        let results: Vec<CellResult> = serde_wasm_bindgen::from_value(results).map_err(js_error)?;
        let cells = options.cells(&dataset).map_err(js_error)?;
        let summary = audit::summarise(&options, audit::TableInfo::of(&dataset, &options.run), &cells, results)
            .map_err(js_error)?;
        to_js(&AuditReport::of(summary))
    }
}

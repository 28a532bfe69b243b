//! The JavaScript boundary (wasm32 only): an engine object with schema inspection and the attack,
//! plain serialisable results, progress callbacks and cancellation. `js/index.js` wraps it in the
//! package's public API; nothing here holds logic of its own.
use serde::Deserialize;
use wasm_bindgen::prelude::*;

use crate::attack::Optimiser;
use crate::table::{ColumnKind, DEFAULT_MAX_BYTES, Dataset, DatasetOptions, parse_csv, summarize};
use crate::{AttackConfig, AttackKind, BackendChoice, LabelMode, Runtime, run_attack};

/// What `run` accepts from JavaScript (camelCase), with the CLI's defaults.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct RunOptions {
    label: String,
    /// Column name → "categorical" | "continuous".
    kinds: std::collections::BTreeMap<String, ColumnKind>,
    ignore: Vec<String>,
    attack: AttackKind,
    batch_size: usize,
    ensemble: usize,
    iterations: usize,
    seed: u64,
    labels: LabelMode,
    hidden: Vec<usize>,
    lr: Option<f64>,
    report_every: usize,
}

impl Default for RunOptions {
    fn default() -> Self {
        let c = AttackConfig::default();
        RunOptions {
            label: String::new(),
            kinds: Default::default(),
            ignore: Vec::new(),
            attack: c.attack,
            batch_size: c.batch_size,
            ensemble: c.ensemble,
            iterations: c.iterations,
            seed: c.seed,
            labels: c.labels,
            hidden: c.hidden,
            lr: None,
            report_every: c.report_every,
        }
    }
}

fn js_error(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

fn to_js<T: serde::Serialize>(value: &T) -> Result<JsValue, JsError> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(js_error)
}

#[wasm_bindgen]
pub struct Engine {
    runtime: Runtime,
}

#[wasm_bindgen]
impl Engine {
    /// `backend`: "auto" (WebGPU when an adapter is granted, else CPU), "webgpu" or "cpu".
    pub async fn create(backend: String) -> Result<Engine, JsError> {
        let runtime = match backend.as_str() {
            "cpu" => Runtime::cpu(),
            "webgpu" => Runtime::select(BackendChoice::Wgpu).await.map_err(js_error)?,
            // A software WebGPU adapter is hundreds of times slower than the CPU kernel: auto skips it.
            "auto" => match crate::runtime::web_gpu::adapter().await {
                Some(a) if !a.fallback => Runtime::select(BackendChoice::Wgpu).await.unwrap_or_else(|_| Runtime::cpu()),
                Some(a) => Runtime::cpu().noting(&format!("skipped {}", a.describe())),
                None => Runtime::cpu().noting("no WebGPU adapter"),
            },
            other => {
                return Err(JsError::new(&format!(
                    "unknown backend {other:?}: use auto, webgpu or cpu"
                )));
            }
        };
        Ok(Engine { runtime })
    }

    /// The backend and adapter that really run.
    #[wasm_bindgen(getter)]
    pub fn backend(&self) -> String {
        self.runtime.backend.clone()
    }

    /// Columns, inferred kinds, label candidates and rows with missing values of a CSV.
    pub fn inspect(&self, csv: &[u8]) -> Result<JsValue, JsError> {
        let raw = parse_csv(csv, DEFAULT_MAX_BYTES).map_err(js_error)?;
        to_js(&summarize(&raw))
    }

    /// Run one attack. `on_progress` receives {phase, step, of, loss, elapsed}; an aborted `signal`
    /// cancels at the next progress report (the run yields to the event loop at each, so an abort
    /// from a timer or a message is seen).
    pub async fn run(
        &self,
        csv: &[u8],
        options: JsValue,
        on_progress: Option<js_sys::Function>,
        signal: Option<web_sys::AbortSignal>,
    ) -> Result<JsValue, JsError> {
        let o: RunOptions = serde_wasm_bindgen::from_value(options).map_err(js_error)?;
        let raw = parse_csv(csv, DEFAULT_MAX_BYTES).map_err(js_error)?;
        let dataset_options = DatasetOptions {
            label: o.label.clone(),
            kinds: o.kinds.into_iter().collect(),
            ignore: o.ignore,
        };
        let dataset = Dataset::from_raw(&raw, &dataset_options).map_err(js_error)?;
        let config = AttackConfig {
            attack: o.attack,
            batch_size: o.batch_size,
            ensemble: o.ensemble,
            iterations: o.iterations,
            seed: o.seed,
            labels: o.labels,
            hidden: o.hidden,
            defence: None,
            optimiser: o.lr.map(|lr| Optimiser {
                lr,
                ..o.attack.default_optimiser()
            }),
            report_every: o.report_every,
        };
        let mut progress = |p: &crate::attack::Progress| {
            if let (Some(f), Ok(value)) = (&on_progress, to_js(p)) {
                let _ = f.call1(&JsValue::NULL, &value);
            }
            !signal.as_ref().is_some_and(|s| s.aborted())
        };
        let report = run_attack(&self.runtime, &dataset, &config, &mut progress)
            .await
            .map_err(js_error)?;
        to_js(&report)
    }
}

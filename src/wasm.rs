//! The JavaScript boundary (wasm32 only): an engine object with schema inspection and the attack,
//! plain serialisable results, progress callbacks and cancellation. `js/index.js` wraps it in the
//! package's public API; nothing here holds logic of its own.
use serde::Deserialize;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

use crate::attack::Optimiser;
use crate::table::{ColumnKind, DEFAULT_MAX_BYTES, Dataset, DatasetOptions, parse_csv, summarize};
use crate::{
    AttackConfig, AttackKind, BackendChoice, LabelMode, MemberRange, Members, Runtime, assess_members, run_attack,
};

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
                Some(a) if !a.fallback => Runtime::select(BackendChoice::Wgpu)
                    .await
                    .unwrap_or_else(|_| Runtime::cpu()),
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
        let (dataset, config) = prepare(csv, options)?;
        let mut progress = reporter(on_progress, signal);
        let report = run_attack(&self.runtime, &dataset, &config, &mut progress)
            .await
            .map_err(js_error)?;
        to_js(&report)
    }

    /// Invert members `first .. first + count` of the ensemble only: one worker's share when a page
    /// splits the ensemble over several (wasm runs one thread per worker). Resolves to
    /// {range, x, probs, loss_curve} for `assess`.
    #[wasm_bindgen(js_name = invertMembers)]
    pub async fn invert_members(
        &self,
        csv: &[u8],
        options: JsValue,
        first: usize,
        count: usize,
        on_progress: Option<js_sys::Function>,
        signal: Option<web_sys::AbortSignal>,
    ) -> Result<JsValue, JsError> {
        let (dataset, config) = prepare(csv, options)?;
        let mut progress = reporter(on_progress, signal);
        let range = MemberRange { first, count };
        let members = crate::invert_members(&self.runtime, &dataset, &config, range, &mut progress)
            .await
            .map_err(js_error)?;
        members_to_js(&members)
    }

    /// The report of an ensemble inverted in shares (`invertMembers`), given the wall time measured.
    pub async fn assess(&self, csv: &[u8], options: JsValue, parts: JsValue, seconds: f64) -> Result<JsValue, JsError> {
        let (dataset, config) = prepare(csv, options)?;
        let parts = js_sys::Array::from(&parts)
            .iter()
            .map(|p| members_from_js(&p))
            .collect::<Result<Vec<_>, _>>()?;
        let report = assess_members(&self.runtime, &dataset, &config, parts, seconds)
            .await
            .map_err(js_error)?;
        to_js(&report)
    }
}

/// The table and the attack's settings from a CSV and the caller's options.
fn prepare(csv: &[u8], options: JsValue) -> Result<(Dataset, AttackConfig), JsError> {
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
    Ok((dataset, config))
}

// The members' rows cross the boundary as Float32Arrays: serde-wasm-bindgen builds a JS array one
// number at a time (measured: 14 s for 12,000 floats in Node), a typed array is one copy.
fn members_to_js(m: &Members) -> Result<JsValue, JsError> {
    let out = js_sys::Object::new();
    let set = |key: &str, value: &JsValue| js_sys::Reflect::set(&out, &key.into(), value).map(|_| ());
    set("range", &to_js(&m.range)?).map_err(|_| JsError::new("could not build the members object"))?;
    set("x", &js_sys::Float32Array::from(&m.x[..]).into()).map_err(|_| JsError::new("could not build x"))?;
    set("probs", &js_sys::Float32Array::from(&m.probs[..]).into())
        .map_err(|_| JsError::new("could not build probs"))?;
    set("loss_curve", &to_js(&m.loss_curve)?).map_err(|_| JsError::new("could not build loss_curve"))?;
    Ok(out.into())
}

fn members_from_js(value: &JsValue) -> Result<Members, JsError> {
    let get = |key: &str| js_sys::Reflect::get(value, &key.into()).unwrap_or(JsValue::UNDEFINED);
    let floats = |key: &str| {
        get(key)
            .dyn_into::<js_sys::Float32Array>()
            .map(|a| a.to_vec())
            .map_err(|_| JsError::new(&format!("members.{key} must be a Float32Array")))
    };
    Ok(Members {
        range: serde_wasm_bindgen::from_value(get("range")).map_err(js_error)?,
        x: floats("x")?,
        probs: floats("probs")?,
        loss_curve: serde_wasm_bindgen::from_value(get("loss_curve")).map_err(js_error)?,
    })
}

/// Progress to a JS callback; false (cancel) once the signal is aborted.
fn reporter(
    on_progress: Option<js_sys::Function>,
    signal: Option<web_sys::AbortSignal>,
) -> impl FnMut(&crate::attack::Progress) -> bool {
    move |p| {
        if let (Some(f), Ok(value)) = (&on_progress, to_js(p)) {
            let _ = f.call1(&JsValue::NULL, &value);
        }
        !signal.as_ref().is_some_and(|s| s.aborted())
    }
}

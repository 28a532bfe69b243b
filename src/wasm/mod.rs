//! The JavaScript boundary (wasm32 only). `Table` is a CSV loaded once (JS holds it by handle),
//! `Engine` runs attacks and audits on a table and hands out the pieces a page needs to split an
//! ensemble over workers and to let `auto` choose a backend by measurement. `js/` wraps them and
//! carries their decisions out; every default, threshold and decision is made here or deeper in
//! the crate.
mod audits;
mod engine;
mod members;
mod table;
mod value;

pub use engine::Engine;
pub use table::Table;
use value::{config_to_js, js_error, options_from_js, to_js};

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

use crate::audit::{self, AuditOptions, AuditPlan, RunningCell};
use crate::config::MemberRange;
use crate::options::RunOptions;
use crate::plan;
use crate::plan::limits::Limits;

unsafe extern "C" {
    /// The module's static constructors (CubeCL's and pliron's `inventory` registrations), which
    /// wasm-ld synthesises.
    fn __wasm_call_ctors();
}

/// Runs once, as the module is instantiated. It runs the static constructors itself: a module that
/// never names `__wasm_call_ctors` is taken by wasm-ld for a "command", and each of its exports
/// runs every constructor again first, wasm-bindgen's `__externref_table_alloc` too, which runs for
/// every JavaScript value that enters the module. Measured in the page (V8's profiler,
/// SwiftShader, B = 2): issuing a WebGPU step took 74 ms, most of it there, and 1.9 ms after
/// (docs/results/webgpu.md).
///
/// Rust panics reach JavaScript as a `RuntimeError: unreachable`: record the message where the
/// package's JS finds it (`globalThis.__leakscopePanic`) and on the console, so the error a caller
/// sees says what went wrong.
#[wasm_bindgen(start)]
pub fn start() {
    // SAFETY: called once, before any other export (wasm-bindgen calls the start function as the
    // module is instantiated); the constructors only register items with `inventory`.
    unsafe { __wasm_call_ctors() };
    std::panic::set_hook(Box::new(|info| {
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        let message = match info.location() {
            Some(at) => format!("{payload} (at {}:{})", at.file(), at.line()),
            None => payload,
        };
        let _ = js_sys::Reflect::set(&js_sys::global(), &"__leakscopePanic".into(), &message.clone().into());
        web_sys_console_error(&message);
    }));
}

fn web_sys_console_error(message: &str) {
    let console = js_sys::Reflect::get(&js_sys::global(), &"console".into()).ok();
    if let Some(error) = console
        .as_ref()
        .and_then(|c| js_sys::Reflect::get(c, &"error".into()).ok())
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
    {
        let _ = error.call1(
            console.as_ref().unwrap(),
            &format!("leakscope panicked: {message}").into(),
        );
    }
}

/// Panics on purpose, so that the tests can check a panic's message reaches the caller.
#[wasm_bindgen(js_name = __panicForTests)]
pub fn panic_for_tests(message: String) {
    panic!("{message}");
}

#[wasm_bindgen]
pub fn limits() -> Result<JsValue, JsError> {
    config_to_js(&Limits::of_this_engine())
}

/// The engine's default options ({attack, batchSize, ensemble, iterations, seed, labels, …}): what
/// a run gets for every option it leaves out, and what a page's form starts from.
#[wasm_bindgen]
pub fn defaults() -> Result<JsValue, JsError> {
    config_to_js(&RunOptions::default())
}

/// The attacks this engine offers (`attack::describe`): each one's name, label, protocols and
/// settings with their defaults and limits; a page builds its form from them.
#[wasm_bindgen]
pub fn attacks() -> Result<JsValue, JsError> {
    config_to_js(&crate::attack::describe_attacks())
}

/// The audit's default grid (`leakscope audit`'s) and the smaller one a browser tab finishes in
/// minutes (the page's).
#[wasm_bindgen(js_name = auditDefaults)]
pub fn audit_defaults(quick: bool) -> Result<JsValue, JsError> {
    config_to_js(&if quick {
        AuditOptions::quick()
    } else {
        AuditOptions::default()
    })
}

/// ε over rounds of clipped, noised updates with client sampling (`client::accountant`), from
/// {noiseMultiplier, sampleRate, rounds, delta}, and with {canaries} the ε canaries measure
/// (`client::canary`).
#[wasm_bindgen]
pub fn privacy(query: JsValue) -> Result<JsValue, JsError> {
    let query: crate::client::accountant::PrivacyQuery = options_from_js(query)?;
    to_js(&query.account().map_err(js_error)?)
}

/// An audit's progress from its plan, the cells done and those running ({index, step}).
#[wasm_bindgen(js_name = auditProgress)]
pub fn audit_progress(plan: JsValue, done: Vec<usize>, running: JsValue) -> Result<JsValue, JsError> {
    let plan: AuditPlan = serde_wasm_bindgen::from_value(plan).map_err(js_error)?;
    let running: Vec<RunningCell> = serde_wasm_bindgen::from_value(running).map_err(js_error)?;
    to_js(&audit::pool::progress(&plan, &done, &running))
}

/// The progress of a split run from its shares' latest reports (null until all have reported).
#[wasm_bindgen(js_name = combineProgress)]
pub fn combine_progress(latest: JsValue, shares: JsValue) -> Result<JsValue, JsError> {
    let latest: Vec<Option<crate::attack::Progress>> = serde_wasm_bindgen::from_value(latest).map_err(js_error)?;
    let shares: Vec<MemberRange> = serde_wasm_bindgen::from_value(shares).map_err(js_error)?;
    to_js(&plan::combine_progress(&latest, &shares))
}

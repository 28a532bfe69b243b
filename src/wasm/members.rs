//! What crosses the boundary beside JSON: an ensemble's share as typed arrays, and progress
//! reports to a JS callback that also carries the cancel back.
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

use super::value::{js_error, to_js};
use crate::attack::inversion::ensemble::Members;

// The members' rows cross the boundary as Float32Arrays: serde-wasm-bindgen builds a JS array one
// number at a time (measured: 14 s for 12,000 floats in Node), a typed array is one copy.
pub(super) fn members_to_js(m: &Members) -> Result<JsValue, JsError> {
    let out = js_sys::Object::new();
    let set = |key: &str, value: &JsValue| js_sys::Reflect::set(&out, &key.into(), value).map(|_| ());
    set("range", &to_js(&m.range)?).map_err(|_| JsError::new("could not build the members object"))?;
    set("x", &js_sys::Float32Array::from(&m.x[..]).into()).map_err(|_| JsError::new("could not build x"))?;
    set("probs", &js_sys::Float32Array::from(&m.probs[..]).into())
        .map_err(|_| JsError::new("could not build probs"))?;
    set("loss_curve", &to_js(&m.loss_curve)?).map_err(|_| JsError::new("could not build loss_curve"))?;
    set("steps", &to_js(&m.steps)?).map_err(|_| JsError::new("could not build steps"))?;
    Ok(out.into())
}

pub(super) fn members_from_js(value: &JsValue) -> Result<Members, JsError> {
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
        steps: serde_wasm_bindgen::from_value(get("steps")).map_err(js_error)?,
    })
}

/// A list of shares from JS (`members_from_js` each).
pub(super) fn members_list_from_js(list: &JsValue) -> Result<Vec<Members>, JsError> {
    js_sys::Array::from(list).iter().map(|p| members_from_js(&p)).collect()
}

/// Progress to a JS callback; false (cancel) once the signal is aborted.
pub(super) fn reporter(
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

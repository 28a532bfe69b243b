//! Values to JavaScript: errors as `JsError`s with their message, data as plain JSON-compatible
//! objects (maps become objects, not `Map`s). Options from JavaScript go through JSON, so a key the
//! engine does not know is an error that names it (serde-wasm-bindgen reads only the fields a
//! struct declares and would drop a misspelt `batchsize` without a word).
use wasm_bindgen::prelude::*;

pub(super) fn js_error(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

/// Configuration (defaults, limits, the attacks, the audit's grids: finite numbers only) as one
/// JSON text parsed by the JavaScript engine. An object built field by field crosses into
/// JavaScript once per field: at a worker's start, before its glue is warm, that took a third of
/// a second on the page's way to ready; one parse takes milliseconds.
pub(super) fn config_to_js<T: serde::Serialize>(value: &T) -> Result<JsValue, JsError> {
    let text = serde_json::to_string(value).map_err(js_error)?;
    js_sys::JSON::parse(&text).map_err(|_| JsError::new("the engine wrote JSON JavaScript could not parse"))
}

pub(super) fn to_js<T: serde::Serialize>(value: &T) -> Result<JsValue, JsError> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(js_error)
}

/// A caller's options object, read strictly: unknown keys are refused by the type's
/// `deny_unknown_fields`, `undefined` values count as left out.
pub(super) fn options_from_js<T: serde::de::DeserializeOwned>(value: JsValue) -> Result<T, JsError> {
    if value.is_undefined() || value.is_null() {
        return serde_json::from_str("{}").map_err(js_error);
    }
    let text =
        js_sys::JSON::stringify(&value).map_err(|_| JsError::new("options must be a plain object of JSON values"))?;
    let text = String::from(text);
    serde_json::from_str(&text).map_err(|e| {
        // serde_json appends "at line 1 column N" of a text the caller never wrote.
        let message = e.to_string();
        let message = message.split(" at line ").next().unwrap_or(&message).to_string();
        JsError::new(&format!("bad options: {message}"))
    })
}

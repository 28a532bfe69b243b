//! Values to JavaScript: errors as `JsError`s with their message, data as plain JSON-compatible
//! objects (maps become objects, not `Map`s).
use wasm_bindgen::prelude::*;

pub(super) fn js_error(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

pub(super) fn to_js<T: serde::Serialize>(value: &T) -> Result<JsValue, JsError> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(js_error)
}

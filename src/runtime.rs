//! Devices and readback. Readback is async everywhere because browsers allow nothing else;
//! native callers block on it (pollster).
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// burn's flex CPU backend.
    Cpu,
    /// burn's wgpu backend (Vulkan/Metal/DX12 natively, WebGPU in a browser).
    Wgpu,
}

/// A device and a human-readable name of what really runs.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub device: Device,
    pub kind: BackendChoice,
    pub backend: String,
}

impl Runtime {
    pub fn cpu() -> Runtime {
        Runtime {
            device: Device::flex(),
            kind: BackendChoice::Cpu,
            backend: "cpu (fused kernel, gemm + burn flex)".into(),
        }
    }

    #[cfg(feature = "wgpu")]
    pub async fn wgpu() -> Result<Runtime> {
        let device = Device::wgpu_options()
            .init_async()
            .await
            .map_err(|e| Error::Device(format!("no WebGPU/wgpu adapter could be initialised: {e}")))?;
        // Browsers hide the adapter from wgpu's info; ask WebGPU itself what it granted.
        #[cfg(target_arch = "wasm32")]
        let name = web_gpu::adapter()
            .await
            .map_or_else(|| "unknown adapter".into(), |a| a.describe());
        #[cfg(not(target_arch = "wasm32"))]
        let name = device
            .identity()
            .map_or_else(|| "unknown adapter".to_string(), |i| i.name);
        Ok(Runtime {
            device,
            kind: BackendChoice::Wgpu,
            backend: format!("wgpu ({name})"),
        })
    }

    /// Add why this backend was chosen to its name, e.g. "cpu (…); no WebGPU adapter".
    pub fn noting(mut self, why: &str) -> Runtime {
        self.backend = format!("{}; {why}", self.backend);
        self
    }

    pub async fn select(choice: BackendChoice) -> Result<Runtime> {
        match choice {
            BackendChoice::Cpu => Ok(Runtime::cpu()),
            #[cfg(feature = "wgpu")]
            BackendChoice::Wgpu => Runtime::wgpu().await,
            #[cfg(not(feature = "wgpu"))]
            BackendChoice::Wgpu => Err(Error::Device("this build has no wgpu backend".into())),
        }
    }
}

/// What the page's WebGPU grants, read through plain JS reflection (web-sys's WebGPU types are unstable).
#[cfg(target_arch = "wasm32")]
pub mod web_gpu {
    use js_sys::{Function, Promise, Reflect};
    use wasm_bindgen::{JsCast, JsValue};
    use wasm_bindgen_futures::JsFuture;

    pub struct WebAdapter {
        pub vendor: String,
        pub architecture: String,
        pub description: String,
        /// A software adapter (SwiftShader and the like): correct, but far slower than the CPU backend.
        pub fallback: bool,
    }

    impl WebAdapter {
        pub fn describe(&self) -> String {
            let parts: Vec<&str> = [&self.vendor, &self.architecture, &self.description]
                .into_iter()
                .map(String::as_str)
                .filter(|s| !s.is_empty())
                .collect();
            let name = if parts.is_empty() {
                "WebGPU adapter".to_string()
            } else {
                format!("WebGPU: {}", parts.join(" "))
            };
            if self.fallback {
                format!("{name}, software fallback")
            } else {
                name
            }
        }
    }

    fn get(target: &JsValue, key: &str) -> Option<JsValue> {
        Reflect::get(target, &key.into())
            .ok()
            .filter(|v| !v.is_undefined() && !v.is_null())
    }

    /// `navigator.gpu.requestAdapter()` in a window or a worker; None where WebGPU gives nothing.
    pub async fn adapter() -> Option<WebAdapter> {
        let gpu = get(&get(&js_sys::global(), "navigator")?, "gpu")?;
        let request: Function = get(&gpu, "requestAdapter")?.dyn_into().ok()?;
        let promise: Promise = request.call0(&gpu).ok()?.dyn_into().ok()?;
        let adapter = JsFuture::from(promise)
            .await
            .ok()
            .filter(|a| !a.is_null() && !a.is_undefined())?;
        let info = get(&adapter, "info");
        let text = |key: &str| {
            info.as_ref()
                .and_then(|i| get(i, key))
                .and_then(|v| v.as_string())
                .unwrap_or_default()
        };
        let flag = |target: Option<&JsValue>| {
            target
                .and_then(|t| get(t, "isFallbackAdapter"))
                .and_then(|v| v.as_bool())
        };
        let fallback = flag(info.as_ref()).or_else(|| flag(Some(&adapter))).unwrap_or(false)
            || text("architecture").eq_ignore_ascii_case("swiftshader");
        Some(WebAdapter {
            vendor: text("vendor"),
            architecture: text("architecture"),
            description: text("description"),
            fallback,
        })
    }
}

/// Read any float tensor back to the host as f32.
pub async fn read_f32<const D: usize>(t: Tensor<D>) -> Result<Vec<f32>> {
    let data = t
        .into_data_async()
        .await
        .map_err(|e| Error::Device(format!("readback failed: {e:?}")))?;
    data.try_to_vec::<f32>()
        .map_err(|e| Error::Device(format!("readback gave unexpected data: {e:?}")))
}

/// Let the host's event loop run (wasm: one macrotask via setTimeout(0)), so that a cancel request
/// or a UI update posted meanwhile is seen. Natively there is nothing to yield to.
pub async fn yield_to_host() {
    #[cfg(target_arch = "wasm32")]
    {
        use wasm_bindgen::JsCast;
        let promise = js_sys::Promise::new(&mut |resolve, _reject| {
            let global = js_sys::global();
            if let Ok(set_timeout) = js_sys::Reflect::get(&global, &"setTimeout".into())
                && let Some(set_timeout) = set_timeout.dyn_ref::<js_sys::Function>()
            {
                let _ = set_timeout.call2(&global, &resolve, &0.into());
            } else {
                let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
            }
        });
        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    }
}

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
        let name = device
            .identity()
            .map_or_else(|| "unknown adapter".to_string(), |i| i.name);
        Ok(Runtime {
            device,
            kind: BackendChoice::Wgpu,
            backend: format!("wgpu ({name})"),
        })
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

//! Devices, what runs on them, and readback. Readback is async everywhere because browsers allow nothing else;
//! native callers block on it (pollster).
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::error::{Error, Result};

/// Where an attack runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// The CPU: the fused kernel, or burn's flex backend for the definition.
    Cpu,
    /// burn's wgpu backend: Vulkan/Metal/DX12 natively, WebGPU in a browser.
    Wgpu,
    /// burn's CUDA backend (cargo feature `cuda`).
    Cuda,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Wgpu => "wgpu",
            BackendKind::Cuda => "cuda",
        }
    }
}

/// What computes the inversion's steps on that backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "kebab-case")]
pub enum StepEngine {
    /// The definition itself, as burn tensor ops (`attack::inversion`).
    Definition,
    /// The fused CPU kernel (`attack::accel::cpu`).
    CpuKernel,
    /// The CubeCL kernels for GPUs (`attack::accel::cube`).
    CubeKernels,
}

impl StepEngine {
    pub fn describe(self) -> &'static str {
        match self {
            StepEngine::Definition => "burn tensor ops",
            StepEngine::CpuKernel => "fused kernel",
            StepEngine::CubeKernels => "CubeCL kernels",
        }
    }
}

/// A measured rate of the attack's steps on one backend, for the problem at hand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct MeasuredRate {
    pub kind: BackendKind,
    pub adapter: Option<String>,
    /// Steps of the whole ensemble per second (on the CPU: with the ensemble split over `workers`).
    pub steps_per_second: f64,
    /// Steps timed (after one warm-up step).
    pub steps: usize,
    pub workers: usize,
    /// Why this backend could not be timed (its device failed), when it could not.
    pub error: Option<String>,
}

/// The backend that really ran, and why: what the page's badge, the report and the CLI show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct BackendInfo {
    pub kind: BackendKind,
    pub engine: StepEngine,
    /// The device or adapter, as the driver or the browser names it.
    pub adapter: Option<String>,
    /// A software adapter (SwiftShader, lavapipe, …): correct, far slower than a GPU.
    pub software: bool,
    /// Why this backend runs rather than another, when there was a choice (auto) or a fallback.
    pub fallback_reason: Option<String>,
    /// Workers the ensemble was split over (browsers; 1 natively, where threads share one process).
    pub workers: usize,
    /// CPU threads per worker.
    pub threads: usize,
    /// What `auto` measured before choosing (empty when nothing was timed).
    pub rates: Vec<MeasuredRate>,
    /// One line for people, e.g. "wgpu (CubeCL kernels; WebGPU: nvidia ampere)".
    pub label: String,
}

impl BackendInfo {
    pub fn new(kind: BackendKind, engine: StepEngine, adapter: Option<String>, software: bool) -> BackendInfo {
        let mut info = BackendInfo {
            kind,
            engine,
            adapter,
            software,
            fallback_reason: None,
            workers: 1,
            threads: cpu_threads(),
            rates: Vec::new(),
            label: String::new(),
        };
        info.relabel();
        info
    }

    fn relabel(&mut self) {
        let mut inner = vec![self.engine.describe().to_string()];
        if self.kind == BackendKind::Cpu {
            inner.push(match (self.workers, self.threads) {
                (1, 1) => "1 thread".to_string(),
                (1, t) => format!("{t} threads"),
                (w, _) => format!("ensemble split over {w} workers"),
            });
        }
        if let Some(a) = &self.adapter {
            inner.push(if self.software {
                format!("{a}, software")
            } else {
                a.clone()
            });
        }
        self.label = format!("{} ({})", self.kind.name(), inner.join("; "));
        if let Some(r) = &self.fallback_reason {
            self.label = format!("{}; {r}", self.label);
        }
    }

    pub fn with_reason(mut self, reason: impl Into<String>) -> BackendInfo {
        self.fallback_reason = Some(reason.into());
        self.relabel();
        self
    }

    pub fn with_engine(mut self, engine: StepEngine) -> BackendInfo {
        self.engine = engine;
        self.relabel();
        self
    }

    pub fn with_workers(mut self, workers: usize) -> BackendInfo {
        self.workers = workers.max(1);
        self.relabel();
        self
    }

    pub fn with_rates(mut self, rates: Vec<MeasuredRate>) -> BackendInfo {
        self.rates = rates;
        self
    }
}

/// What an engine runs on: the backend(s) it holds, and for `auto` the candidates it times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct EngineInfo {
    /// "cpu", "webgpu" or "auto".
    pub choice: String,
    /// The backends this engine can run on, the CPU last.
    pub candidates: Vec<BackendInfo>,
    /// Why a candidate is missing (no WebGPU adapter, its device failed to start).
    pub fallback_reason: Option<String>,
    /// One line for people.
    pub label: String,
}

/// Threads the CPU kernel runs its member groups on.
pub fn cpu_threads() -> usize {
    #[cfg(feature = "rayon")]
    return rayon::current_num_threads().max(1);
    #[cfg(not(feature = "rayon"))]
    1
}

/// When the losses are read back. `Every` reads at the first step, every n-th and the last: the
/// CPU's reads are free, and tests compare loss curves step for step. `Timed` (GPUs) starts at n
/// and widens the interval until reports are at least `MIN_REPORT_SECONDS` apart, so a browser
/// whose `mapAsync` takes 100 ms never leaves the device waiting on it; the read is pipelined one
/// report behind, so a report's cost is its copy, not its latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cadence {
    Every(usize),
    Timed(usize),
    /// After step n, after step n + 2 and at the last: timing a few steps after a warm-up
    /// (`plan`'s probes), with an early look so a slow backend can be cut short.
    Probe(usize),
}

/// What an inversion asks of the engine that steps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    /// The client's local training (FedAvg) unrolled in every step.
    pub local_training: bool,
    /// Cells the server knows, pinned (`attack::priors::known`).
    pub known_cells: bool,
    /// Rounds whose losses are summed.
    pub rounds: usize,
    /// A model the fused CPU kernel and the GPU kernels are not written for (an activation other
    /// than ReLU, no hidden layer, or a regression, whose label is an unknown of each row): the
    /// definition runs.
    pub beyond_kernels: bool,
    /// A sigmoid head (one logit under BCE): the fused CPU kernel runs it, the GPU kernels do not.
    pub sigmoid_head: bool,
}

/// A device and what runs on it.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub device: Device,
    pub info: BackendInfo,
    /// Read the losses back at exactly every `report_every` steps, even on a GPU.
    fixed_cadence: bool,
}

impl Runtime {
    /// The CPU with the fused kernel.
    pub fn cpu() -> Runtime {
        Runtime {
            device: Device::flex(),
            info: BackendInfo::new(BackendKind::Cpu, StepEngine::CpuKernel, None, false),
            fixed_cadence: false,
        }
    }

    pub fn kind(&self) -> BackendKind {
        self.info.kind
    }

    pub fn engine(&self) -> StepEngine {
        self.info.engine
    }

    /// What runs the steps of an inversion that needs `needs`: this runtime's accelerator where it
    /// takes them, the definition otherwise. The GPU kernels do one FedSGD round without known
    /// cells; the CPU kernel adds FedAvg and known cells; several rounds only the definition sums.
    pub fn engine_for(&self, needs: &Needs) -> StepEngine {
        match self.engine() {
            _ if needs.rounds > 1 || needs.beyond_kernels => StepEngine::Definition,
            StepEngine::CubeKernels if needs.local_training || needs.known_cells || needs.sigmoid_head => {
                StepEngine::Definition
            }
            engine => engine,
        }
    }

    /// The same device running the definition itself (burn tensor ops) instead of an accelerator:
    /// what tests hold the accelerators to, and a way to time the definition.
    pub fn definition(mut self) -> Runtime {
        self.info.engine = StepEngine::Definition;
        self.info.relabel();
        self
    }

    /// The same runtime reading the losses back at exactly every `report_every` steps, so that two
    /// engines' loss curves can be compared step for step.
    pub fn fixed_cadence(mut self) -> Runtime {
        self.fixed_cadence = true;
        self
    }

    /// How often this runtime reads the losses back: on the CPU at every `report_every` steps,
    /// on a GPU as often as that but no more than a readback's cost allows (`Cadence::Timed`).
    pub fn cadence(&self, report_every: usize) -> Cadence {
        match self.info.kind {
            _ if self.fixed_cadence => Cadence::Every(report_every),
            BackendKind::Cpu => Cadence::Every(report_every),
            BackendKind::Wgpu | BackendKind::Cuda => Cadence::Timed(report_every),
        }
    }

    #[cfg(feature = "wgpu")]
    pub async fn wgpu() -> Result<Runtime> {
        let device = wgpu_device().await?;
        // Browsers hide the adapter from wgpu's info; ask WebGPU itself what it granted.
        #[cfg(target_arch = "wasm32")]
        let (name, software) = web_gpu::adapter()
            .await
            .map_or_else(|| ("WebGPU adapter".to_string(), false), |a| (a.describe(), a.fallback));
        #[cfg(not(target_arch = "wasm32"))]
        let (name, software) = device.identity().map_or_else(
            || ("unknown adapter".to_string(), false),
            |i| {
                let software = is_software(&i.name);
                (i.name, software)
            },
        );
        Ok(Runtime {
            device,
            info: BackendInfo::new(BackendKind::Wgpu, StepEngine::CubeKernels, Some(name), software),
            fixed_cadence: false,
        })
    }

    #[cfg(feature = "cuda")]
    pub async fn cuda() -> Result<Runtime> {
        let device = Device::cuda(0);
        // Opening the device loads the driver; cubecl panics where there is none or no GPU.
        let identity =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| device.identity())).map_err(|panic| {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                Error::Device(format!(
                    "no CUDA device could be opened (an NVIDIA GPU and its driver are needed): {why}"
                ))
            })?;
        let name = identity.map_or_else(|| "CUDA device".to_string(), |i| i.name);
        Ok(Runtime {
            device,
            info: BackendInfo::new(BackendKind::Cuda, StepEngine::CubeKernels, Some(name), false),
            fixed_cadence: false,
        })
    }

    pub async fn select(kind: BackendKind) -> Result<Runtime> {
        match kind {
            BackendKind::Cpu => Ok(Runtime::cpu()),
            #[cfg(feature = "wgpu")]
            BackendKind::Wgpu => Runtime::wgpu().await,
            #[cfg(not(feature = "wgpu"))]
            BackendKind::Wgpu => Err(Error::Device("this build has no wgpu backend".into())),
            #[cfg(feature = "cuda")]
            BackendKind::Cuda => Runtime::cuda().await,
            #[cfg(not(feature = "cuda"))]
            BackendKind::Cuda => Err(Error::Device(
                "this build has no CUDA backend: build with `--features cuda`".into(),
            )),
        }
    }
}

/// The process's wgpu device: initialised once (wgpu registers it for good), shared after that.
#[cfg(feature = "wgpu")]
// Natively the lock is held across the initialisation on purpose: two threads asking at once must
// not both register the device.
#[allow(clippy::await_holding_lock)]
async fn wgpu_device() -> Result<Device> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        static DEVICE: std::sync::Mutex<Option<Device>> = std::sync::Mutex::new(None);
        let mut slot = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(device) = slot.as_ref() {
            return Ok(device.clone());
        }
        let device = init_wgpu().await?;
        *slot = Some(device.clone());
        Ok(device)
    }
    #[cfg(target_arch = "wasm32")]
    {
        thread_local! {
            static DEVICE: std::cell::RefCell<Option<Device>> = const { std::cell::RefCell::new(None) };
        }
        if let Some(device) = DEVICE.with(|d| d.borrow().clone()) {
            return Ok(device);
        }
        let device = init_wgpu().await?;
        DEVICE.with(|d| *d.borrow_mut() = Some(device.clone()));
        Ok(device)
    }
}

#[cfg(feature = "wgpu")]
async fn init_wgpu() -> Result<Device> {
    Device::wgpu_options()
        .tasks_max(WGPU_TASKS_PER_SUBMIT)
        .init_async()
        .await
        .map_err(|e| Error::Device(format!("no WebGPU/wgpu adapter could be initialised: {e}")))
}

/// Kernel launches wgpu gathers into one submission (its default is 32): a step is 17 launches,
/// so this submits every few steps rather than twice a step.
#[cfg(feature = "wgpu")]
const WGPU_TASKS_PER_SUBMIT: usize = 128;

/// Adapters that run compute shaders on the CPU.
#[cfg(not(target_arch = "wasm32"))]
fn is_software(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["llvmpipe", "lavapipe", "swiftshader", "software"]
        .iter()
        .any(|s| n.contains(s))
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
            // Whether it is a software adapter is said by BackendInfo.software.
            if parts.is_empty() {
                "WebGPU adapter".to_string()
            } else {
                format!("WebGPU: {}", parts.join(" "))
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

/// Run `f` and count the GPU kernel launches it issues (every launch of the process, by cubecl's
/// launch observer: burn's own kernels and the attack's). For benchmarks and tests; not re-entrant.
#[cfg(all(not(target_arch = "wasm32"), any(feature = "wgpu", feature = "cuda")))]
pub fn count_launches<T>(f: impl FnOnce() -> T) -> (usize, T) {
    use burn::cubecl::logging::{LaunchObservation, LaunchObserver};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Count(AtomicUsize);
    impl LaunchObserver for Count {
        fn launched(&self, _kernel: &'static str) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let count = Arc::new(Count(AtomicUsize::new(0)));
    let guard = LaunchObservation::new(count.clone());
    let out = f();
    drop(guard);
    (count.0.load(Ordering::Relaxed), out)
}

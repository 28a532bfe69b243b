//! The engine object: one per worker, holding its backends and the decisions `auto` measured.
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::members::{members_list_from_js, members_to_js, reporter};
use super::table::Table;
use super::value::{js_error, options_from_js, to_js};
use crate::audit::AuditOptions;
use crate::config::{AttackConfig, MemberRange};
use crate::options::RunOptions;
use crate::plan::{self, Decision, Decisions, Probe, ProblemKey, RunPlan};
use crate::run::time_steps;
use crate::runtime::{BackendInfo, BackendKind, EngineInfo, MeasuredRate, Runtime};
use crate::table::Dataset;
use crate::{assess_early, assess_members, assess_round, early_answer, ensemble_rounds, run_attack};

/// What an engine was asked to use.
#[derive(Clone, Copy, PartialEq)]
enum Choice {
    Cpu,
    WebGpu,
    Auto,
}

#[wasm_bindgen]
pub struct Engine {
    cpu: Runtime,
    gpu: Option<Runtime>,
    choice: Choice,
    /// Why `auto` has no GPU candidate.
    no_gpu: Option<String>,
    decisions: RefCell<Decisions>,
    /// The GPU's kernels compiling since `create` (`warm_up::warm_up`): closed once they are.
    warm: Option<async_channel::Receiver<()>>,
    /// The warm-up's seconds, once it succeeded.
    warm_seconds: Rc<Cell<Option<f64>>>,
    /// The CPU engine's code run once after `create` (`warm_up::warm_up_cpu`): closed once it
    /// is over, done or cut short.
    cpu_warm: Option<async_channel::Receiver<()>>,
    /// Cleared by the first computation asked of the engine, which cuts the CPU warm-up short.
    cpu_wanted: Rc<Cell<bool>>,
}

/// The shadow client's shares from JS: null or undefined where there are none.
fn shadow_from_js(shadow: &JsValue) -> Result<Option<Vec<crate::attack::inversion::ensemble::Members>>, JsError> {
    if shadow.is_null() || shadow.is_undefined() {
        return Ok(None);
    }
    members_list_from_js(shadow).map(Some)
}

/// The warm-ups an engine runs in the background as it starts, while its page loads a table, one
/// after the other: the GPU's kernels compiled (`warm_up::warm_up`; a run on the GPU waits for
/// them instead of compiling them itself), then, where `cpu` is given, the CPU engine's code run
/// once (`warm_up::warm_up_cpu`) after `create` has answered, unless some computation was asked
/// of the engine by then. Receivers closed once each is over, and the GPU's seconds.
#[allow(clippy::type_complexity)]
fn start_warm_ups(
    gpu: Option<&Runtime>,
    cpu: Option<(&Runtime, Rc<Cell<bool>>)>,
) -> (
    Option<async_channel::Receiver<()>>,
    Option<async_channel::Receiver<()>>,
    Rc<Cell<Option<f64>>>,
) {
    let seconds = Rc::new(Cell::new(None));
    let (gpu_done, gpu_warm) = async_channel::bounded::<()>(1);
    let (cpu_done, cpu_warm) = async_channel::bounded::<()>(1);
    let (gpu, cpu) = (gpu.cloned(), cpu.map(|(rt, wanted)| (rt.clone(), wanted)));
    let (has_gpu, has_cpu) = (gpu.is_some(), cpu.is_some());
    let record = seconds.clone();
    wasm_bindgen_futures::spawn_local(async move {
        if let Some(gpu) = gpu {
            // A failure here is the GPU's and shows again, with its reason, in the run that uses it.
            record.set(crate::warm_up::warm_up(&gpu).await.ok());
        }
        drop(gpu_done);
        if let Some((cpu, wanted)) = cpu {
            // One turn of the host's event loop first, so that `create`'s answer goes out at once.
            crate::runtime::yield_to_host().await;
            if wanted.get() {
                crate::warm_up::warm_up_cpu(&cpu, &|| wanted.get()).await;
            }
        }
        drop(cpu_done);
    });
    (has_gpu.then_some(gpu_warm), has_cpu.then_some(cpu_warm), seconds)
}

#[wasm_bindgen]
impl Engine {
    /// `backend`: "auto" (times WebGPU and the CPU on each new problem and runs on the faster),
    /// "webgpu" or "cpu".
    ///
    /// `warm`: run the CPU engine's code once in the background after starting, so that the
    /// browser has optimised it before the first real run (`warm_up::warm_up_cpu`; a computation
    /// asked meanwhile cuts it short). Helper workers, which only invert, start without it.
    pub async fn create(backend: String, warm: bool) -> Result<Engine, JsError> {
        let choice = match backend.as_str() {
            "cpu" => Choice::Cpu,
            "webgpu" => Choice::WebGpu,
            "auto" => Choice::Auto,
            other => {
                return Err(JsError::new(&format!(
                    "unknown backend {other:?}: use auto, webgpu or cpu"
                )));
            }
        };
        let (gpu, no_gpu) = match choice {
            Choice::Cpu => (None, None),
            Choice::WebGpu => (Some(Runtime::select(BackendKind::Wgpu).await.map_err(js_error)?), None),
            Choice::Auto => match crate::runtime::web_gpu::adapter().await {
                None => (None, Some("no WebGPU adapter".to_string())),
                Some(_) => match Runtime::select(BackendKind::Wgpu).await {
                    Ok(rt) => (Some(rt), None),
                    Err(e) => (None, Some(format!("WebGPU did not start: {e}"))),
                },
            },
        };
        let cpu = Runtime::cpu();
        let cpu_wanted = Rc::new(Cell::new(warm));
        let (warm, cpu_warm, warm_seconds) = start_warm_ups(gpu.as_ref(), warm.then(|| (&cpu, cpu_wanted.clone())));
        Ok(Engine {
            cpu,
            gpu,
            choice,
            no_gpu,
            decisions: RefCell::new(Decisions::default()),
            warm,
            warm_seconds,
            cpu_warm,
            cpu_wanted,
        })
    }

    /// Resolves once the engine's warm-ups are over (the GPU's kernels compiled, the CPU engine's
    /// code run once: at once where there are none), to the seconds the GPU's took, or null where
    /// there is no GPU or it failed.
    #[wasm_bindgen(js_name = warmUp)]
    pub async fn warm_up(&self) -> Option<f64> {
        self.warmed().await;
        if let Some(cpu) = &self.cpu_warm {
            let _ = cpu.recv().await;
        }
        self.warm_seconds.get()
    }

    /// What this engine runs on ({choice, candidates, fallback_reason, label}).
    #[wasm_bindgen(getter)]
    pub fn backend(&self) -> Result<JsValue, JsError> {
        to_js(&self.info())
    }

    /// How a page runs this attack with `workers` CPU workers available: the backend (or the
    /// measurements `auto` still has to take), the shares of a split CPU run, helpers needed.
    pub fn plan(&self, table: &Table, options: JsValue, workers: usize) -> Result<JsValue, JsError> {
        let (dataset, config) = self.prepare(table, options)?;
        to_js(&self.plan_for(&dataset, &config, workers, table.bytes()))
    }

    /// Time a few steps of this attack on "webgpu" (the whole ensemble) or "cpu" (members
    /// `first .. first + count`, one worker's share): {kind, adapter, steps_per_second, …}.
    #[allow(clippy::too_many_arguments)]
    pub async fn probe(
        &self,
        table: &Table,
        options: JsValue,
        backend: String,
        first: usize,
        count: usize,
        workers: usize,
        on_progress: Option<js_sys::Function>,
        signal: Option<web_sys::AbortSignal>,
    ) -> Result<JsValue, JsError> {
        let (dataset, config) = self.prepare(table, options)?;
        let runtime = match backend.as_str() {
            "cpu" => &self.cpu,
            _ => self
                .gpu
                .as_ref()
                .ok_or_else(|| JsError::new("this engine has no WebGPU backend to time"))?,
        };
        self.warmed_for(runtime).await;
        let mut progress = reporter(on_progress, signal);
        let timed = time_steps(
            runtime,
            &dataset,
            &config,
            MemberRange { first, count },
            plan::PROBE_WARMUP_STEPS,
            plan::probe_steps(runtime.kind()),
            &mut progress,
        )
        .await;
        // A GPU that fails while being timed is a measurement too: `decide` then takes the CPU and
        // says why. A cancel, or a CPU failure, is the caller's error.
        let mut rate = match timed {
            Ok(rate) => rate,
            Err(e) if runtime.kind() != BackendKind::Cpu && e != crate::Error::Cancelled => MeasuredRate {
                kind: runtime.kind(),
                adapter: runtime.info.adapter.clone(),
                steps_per_second: 0.0,
                steps: 0,
                workers: 1,
                error: Some(e.to_string()),
            },
            Err(e) => return Err(js_error(e)),
        };
        if runtime.kind() == BackendKind::Cpu {
            rate.workers = workers.max(1);
        }
        to_js(&rate)
    }

    /// Choose between the measured rates (`probe`'s results) and remember the choice for this
    /// problem: {kind, reason, rates}.
    pub fn decide(&self, table: &Table, options: JsValue, rates: JsValue, workers: usize) -> Result<JsValue, JsError> {
        let (dataset, config) = self.prepare(table, options)?;
        let rates: Vec<MeasuredRate> = serde_wasm_bindgen::from_value(rates).map_err(js_error)?;
        let decision = plan::decide(rates).ok_or_else(|| JsError::new("no backend gave a usable measurement"))?;
        self.decisions
            .borrow_mut()
            .insert(self.key(&dataset, &config, workers), decision.clone());
        to_js(&decision)
    }

    /// Run one attack on this engine's backend (for `auto`, the one its measurement chose).
    /// `on_progress` receives {phase, step, of, loss, elapsed}; an aborted `signal` cancels at the
    /// next progress report (the run yields to the event loop at each, so an abort is seen).
    pub async fn run(
        &self,
        table: &Table,
        options: JsValue,
        workers: usize,
        on_progress: Option<js_sys::Function>,
        signal: Option<web_sys::AbortSignal>,
    ) -> Result<JsValue, JsError> {
        let (dataset, config) = self.prepare(table, options)?;
        let runtime = self.runtime_for(&dataset, &config, workers)?;
        self.warmed_for(&runtime).await;
        let mut progress = reporter(on_progress, signal);
        let report = run_attack(&runtime, &dataset, &config, &mut progress)
            .await
            .map_err(js_error)?;
        to_js(&report)
    }

    /// Attack an update that came from elsewhere (`received`): the table's encoding (the JSON
    /// `leakscope encoding` writes), the update (safetensors, numpy archive, or a
    /// leakscope-update/1 JSON that carries the weights too) and the network the server sent
    /// (absent for JSON). `options` are a run's (attack, protocol, members, steps); `batchSize`
    /// and `labels` only where the caller gives them, else the file's, as `leakscope
    /// attack-update` does. Runs on this engine's CPU, or its GPU when it was created on WebGPU.
    #[wasm_bindgen(js_name = attackUpdate)]
    #[allow(clippy::too_many_arguments)]
    pub async fn attack_update(
        &self,
        encoding: String,
        update: Vec<u8>,
        weights: Option<Vec<u8>>,
        options: JsValue,
        on_progress: Option<js_sys::Function>,
        signal: Option<web_sys::AbortSignal>,
    ) -> Result<JsValue, JsError> {
        let encoding: crate::table::Encoding =
            serde_json::from_str(&encoding).map_err(|e| JsError::new(&format!("not an encoding ({e})")))?;
        let model = encoding.model.clone();
        let dataset = encoding.into_dataset().map_err(js_error)?;
        let received = crate::received::ReceivedUpdate::from_files(&update, weights.as_deref()).map_err(js_error)?;
        // Which of the batch size and the labels the caller gave: the rest come from the file.
        let given: serde_json::Value = options_from_js(options.clone())?;
        let o: RunOptions = options_from_js(options)?;
        let rows = given.get("batchSize").map(|_| o.batch_size);
        let labels = given.get("labels").map(|_| o.labels);
        // The model as the caller states it, merged with the encoding's statement.
        let caller = crate::table::StatedModel {
            hidden: given.get("hidden").map(|_| o.hidden.clone()),
            activation: given.get("activation").map(|_| o.activation),
            head: given.get("head").map(|_| o.head),
        };
        let stated = crate::table::StatedModel::merged(model.as_ref(), caller).map_err(js_error)?;
        if given.get("label").is_some() && o.label != dataset.label {
            return Err(JsError::new(&format!(
                "the encoding's label is {:?}, not {:?}: leave label out",
                dataset.label, o.label
            )));
        }
        let o = received
            .attack_options(&dataset, o, rows, labels, &stated)
            .map_err(js_error)?;
        let config = o.attack_config().map_err(js_error)?;
        let runtime = self.annotated(self.asked_runtime().clone(), &dataset, &config, 1);
        self.warmed_for(&runtime).await;
        let mut progress = reporter(on_progress, signal);
        let report = crate::attack_received(&runtime, &dataset, &config, &received, &mut progress)
            .await
            .map_err(js_error)?;
        to_js(&report)
    }

    /// Invert members `first .. first + count` of the ensemble on the CPU: one worker's share.
    /// Resolves to {range, x, probs, loss_curve, steps} for `assess`.
    #[wasm_bindgen(js_name = invertMembers)]
    pub async fn invert_members(
        &self,
        table: &Table,
        options: JsValue,
        first: usize,
        count: usize,
        on_progress: Option<js_sys::Function>,
        signal: Option<web_sys::AbortSignal>,
    ) -> Result<JsValue, JsError> {
        self.quiet().await;
        let (dataset, config) = self.prepare(table, options)?;
        let mut progress = reporter(on_progress, signal);
        let range = MemberRange { first, count };
        let members = crate::invert_members(&self.cpu, &dataset, &config, range, &mut progress)
            .await
            .map_err(js_error)?;
        members_to_js(&members)
    }

    /// Where a split run inverts the shadow client's members in shares: a list of {first,
    /// count} shares for up to `workers` workers, or null (the worker that joins calibrates, if
    /// the attack does). `members`: as many as the client's ensemble pooled (`settledMembers`),
    /// or null or undefined for the whole ensemble (asked before the batch's own).
    #[wasm_bindgen(js_name = shadowShares)]
    pub async fn shadow_shares(
        &self,
        table: &Table,
        options: JsValue,
        workers: usize,
        members: Option<usize>,
    ) -> Result<JsValue, JsError> {
        self.quiet().await;
        let (dataset, config) = self.prepare(table, options)?;
        let shares = crate::shadow_shares(&self.cpu, &dataset, &config, workers, members)
            .await
            .map_err(js_error)?;
        to_js(&shares)
    }

    /// Where the ensemble runs by its stopping rule (`ensembleRounds`): the members it pools once
    /// the rounds inverted so far (every share of them) settle it, or null where the next round
    /// is due.
    #[wasm_bindgen(js_name = settledMembers)]
    pub async fn settled_members(&self, table: &Table, options: JsValue, parts: JsValue) -> Result<JsValue, JsError> {
        self.quiet().await;
        let (dataset, config, parts, runtime) = self.joining(table, options, parts, 1)?;
        let members = crate::settled_members(&runtime, &dataset, &config, parts)
            .await
            .map_err(js_error)?;
        to_js(&members)
    }

    /// Invert members `first .. first + count` of the shadow client's ensemble on the CPU: one
    /// worker's share (`shadowShares`). Resolves as `invertMembers` does.
    #[wasm_bindgen(js_name = invertShadow)]
    pub async fn invert_shadow(
        &self,
        table: &Table,
        options: JsValue,
        first: usize,
        count: usize,
        on_progress: Option<js_sys::Function>,
        signal: Option<web_sys::AbortSignal>,
    ) -> Result<JsValue, JsError> {
        self.quiet().await;
        let (dataset, config) = self.prepare(table, options)?;
        let mut progress = reporter(on_progress, signal);
        let range = MemberRange { first, count };
        let members = crate::invert_shadow(&self.cpu, &dataset, &config, range, &mut progress)
            .await
            .map_err(js_error)?;
        members_to_js(&members)
    }

    /// Where a split run may answer early: {steps, planned, stages} (its shares first run `steps`
    /// steps, stage after stage, each a list of {first, count} shares for up to `workers` workers;
    /// `planned` counts the steps of both stages for progress), or null.
    #[wasm_bindgen(js_name = earlyAnswer)]
    pub async fn early_answer(&self, table: &Table, options: JsValue, workers: usize) -> Result<JsValue, JsError> {
        self.quiet().await;
        let (dataset, config) = self.prepare(table, options)?;
        let early = early_answer(&self.cpu, &dataset, &config, workers)
            .await
            .map_err(js_error)?;
        to_js(&early)
    }

    /// The report of the early answer's stages inverted so far (every share of them), where every
    /// row is then proved; null where not (the next stage runs, or the shares run in full).
    /// `options` are the run's own.
    #[wasm_bindgen(js_name = assessEarly)]
    pub async fn assess_early(
        &self,
        table: &Table,
        options: JsValue,
        parts: JsValue,
        seconds: f64,
        workers: usize,
    ) -> Result<JsValue, JsError> {
        self.quiet().await;
        let (dataset, config, parts, runtime) = self.joining(table, options, parts, workers)?;
        let report = assess_early(&runtime, &dataset, &config, parts, seconds, workers)
            .await
            .map_err(js_error)?;
        to_js(&report)
    }

    /// Where a split run's ensemble runs by its stopping rule: its rounds, each a list of
    /// {first, count} shares for up to `workers` workers, in order; null where it runs whole.
    #[wasm_bindgen(js_name = ensembleRounds)]
    pub async fn ensemble_rounds(&self, table: &Table, options: JsValue, workers: usize) -> Result<JsValue, JsError> {
        self.quiet().await;
        let (dataset, config) = self.prepare(table, options)?;
        let rounds = ensemble_rounds(&self.cpu, &dataset, &config, workers)
            .await
            .map_err(js_error)?;
        to_js(&rounds)
    }

    /// The report of the rounds inverted so far (every share of them, `invertMembers`) where the
    /// stopping rule stops there; null where the next round is due. `shadow`: the shadow
    /// client's shares (`invertShadow`) where `shadowShares` asked for them, else null.
    #[wasm_bindgen(js_name = assessRound)]
    pub async fn assess_round(
        &self,
        table: &Table,
        options: JsValue,
        parts: JsValue,
        seconds: f64,
        workers: usize,
        shadow: JsValue,
    ) -> Result<JsValue, JsError> {
        self.quiet().await;
        let (dataset, config, parts, runtime) = self.joining(table, options, parts, workers)?;
        let shadow = shadow_from_js(&shadow)?;
        let report = assess_round(&runtime, &dataset, &config, parts, shadow, seconds, workers)
            .await
            .map_err(js_error)?;
        to_js(&report)
    }

    /// The report of an ensemble inverted in shares (`invertMembers`) over `workers` workers,
    /// given the wall time measured; `shadow` as `assessRound` takes it.
    pub async fn assess(
        &self,
        table: &Table,
        options: JsValue,
        parts: JsValue,
        seconds: f64,
        workers: usize,
        shadow: JsValue,
    ) -> Result<JsValue, JsError> {
        self.quiet().await;
        let (dataset, config, parts, runtime) = self.joining(table, options, parts, workers)?;
        let shadow = shadow_from_js(&shadow)?;
        let report = assess_members(&runtime, &dataset, &config, parts, shadow, seconds)
            .await
            .map_err(js_error)?;
        to_js(&report)
    }
}

impl Engine {
    /// Wait for the warm-up `create` started, where it still runs.
    async fn warmed(&self) {
        if let Some(warm) = &self.warm {
            // Closed, and so an error, once the warm-up is over.
            let _ = warm.recv().await;
        }
    }

    /// Wait for the warm-up where `runtime` is the GPU it compiles for, and cut the CPU's short.
    pub(super) async fn warmed_for(&self, runtime: &Runtime) {
        if runtime.kind() != BackendKind::Cpu {
            self.warmed().await;
        }
        self.quiet().await;
    }

    /// Cut the CPU warm-up short (at its next progress report) and wait for it to end: every
    /// computation asked of the engine starts so, and never shares the worker's thread with it.
    async fn quiet(&self) {
        self.cpu_wanted.set(false);
        if let Some(cpu) = &self.cpu_warm {
            let _ = cpu.recv().await;
        }
    }

    fn info(&self) -> EngineInfo {
        let mut candidates: Vec<BackendInfo> = self.gpu.iter().map(|g| g.info.clone()).collect();
        if self.choice != Choice::WebGpu {
            candidates.push(self.cpu.info.clone());
        }
        let (choice, label) = match self.choice {
            Choice::Cpu => ("cpu", self.cpu.info.label.clone()),
            Choice::WebGpu => ("webgpu", candidates[0].label.clone()),
            Choice::Auto if candidates.len() > 1 => (
                "auto",
                format!(
                    "auto: {} or {}, timed on each new problem",
                    candidates[0].label, candidates[1].label
                ),
            ),
            Choice::Auto => (
                "auto",
                format!(
                    "{}; {}",
                    self.cpu.info.label,
                    self.no_gpu.as_deref().unwrap_or("no WebGPU")
                ),
            ),
        };
        EngineInfo {
            choice: choice.into(),
            candidates,
            fallback_reason: self.no_gpu.clone(),
            label,
        }
    }

    fn key(&self, dataset: &Dataset, config: &AttackConfig, workers: usize) -> ProblemKey {
        ProblemKey::of(
            self.gpu.as_ref().and_then(|g| g.info.adapter.clone()),
            dataset,
            config,
            workers,
        )
    }

    fn plan_for(&self, dataset: &Dataset, config: &AttackConfig, workers: usize, csv_bytes: usize) -> RunPlan {
        let cpu_plan = |kind| {
            let shares = plan::shares(config, workers, csv_bytes);
            let helpers = if shares.len() > 1 { shares.len() } else { 0 };
            RunPlan {
                kind,
                probe: None,
                shares,
                helpers,
            }
        };
        let gpu_plan = RunPlan {
            kind: Some(BackendKind::Wgpu),
            probe: None,
            shares: Vec::new(),
            helpers: 0,
        };
        match (self.choice, &self.gpu) {
            (Choice::WebGpu, _) => gpu_plan,
            (Choice::Cpu, _) | (Choice::Auto, None) => cpu_plan(Some(BackendKind::Cpu)),
            (Choice::Auto, Some(_)) if config.members() == 0 => cpu_plan(Some(BackendKind::Cpu)),
            (Choice::Auto, Some(_)) => match self.decisions.borrow().get(&self.key(dataset, config, workers)) {
                Some(d) if d.kind == BackendKind::Cpu => cpu_plan(Some(BackendKind::Cpu)),
                Some(_) => gpu_plan,
                None => {
                    let mut undecided = cpu_plan(None);
                    undecided.probe = Some(Probe {
                        warmup: plan::PROBE_WARMUP_STEPS,
                        steps: plan::PROBE_STEPS,
                        gpu_steps: plan::PROBE_GPU_STEPS,
                        whole: MemberRange {
                            first: 0,
                            count: config.members(),
                        },
                        cpu_share: undecided.shares[0],
                    });
                    undecided
                }
            },
        }
    }

    /// The GPU where this engine was created on WebGPU, else the CPU: what a received update's
    /// attack and an audit's cells run on (no measurement chooses for them).
    pub(super) fn asked_runtime(&self) -> &Runtime {
        match (self.choice, &self.gpu) {
            (Choice::WebGpu, Some(gpu)) => gpu,
            _ => &self.cpu,
        }
    }

    /// The runtime a whole (unsplit) run uses, its info saying why.
    fn runtime_for(&self, dataset: &Dataset, config: &AttackConfig, workers: usize) -> Result<Runtime, JsError> {
        let decided = self
            .decisions
            .borrow()
            .get(&self.key(dataset, config, workers))
            .cloned();
        let runtime = match (self.choice, &self.gpu, &decided) {
            (Choice::WebGpu, Some(gpu), _) => gpu.clone(),
            (Choice::Auto, Some(gpu), Some(d)) if d.kind != BackendKind::Cpu => gpu.clone(),
            (Choice::WebGpu, None, _) => return Err(JsError::new("this engine has no WebGPU backend")),
            _ => self.cpu.clone(),
        };
        Ok(self.annotated(runtime, dataset, config, workers))
    }

    /// A runtime's info with the split and the reason it was chosen.
    fn annotated(&self, mut runtime: Runtime, dataset: &Dataset, config: &AttackConfig, workers: usize) -> Runtime {
        let decided: Option<Decision> = self
            .decisions
            .borrow()
            .get(&self.key(dataset, config, workers))
            .cloned();
        let mut info = runtime.info.clone();
        if runtime.kind() == BackendKind::Cpu && self.choice != Choice::Cpu {
            if let Some(why) = &self.no_gpu {
                info = info.with_reason(why.clone());
            }
        }
        if let Some(d) = decided.filter(|_| self.choice == Choice::Auto) {
            info = info.with_reason(d.reason).with_rates(d.rates);
        }
        runtime.info = info;
        runtime
    }

    /// The table read as the caller's options say, and the attack's settings from them.
    /// What joining an ensemble's shares takes: the table and options read, the shares from JS,
    /// and the CPU runtime annotated with the workers that ran them.
    fn joining(
        &self,
        table: &Table,
        options: JsValue,
        parts: JsValue,
        workers: usize,
    ) -> Result<
        (
            Dataset,
            AttackConfig,
            Vec<crate::attack::inversion::ensemble::Members>,
            Runtime,
        ),
        JsError,
    > {
        let (dataset, config) = self.prepare(table, options)?;
        let parts = members_list_from_js(&parts)?;
        let runtime = self.annotated(self.cpu.clone(), &dataset, &config, workers);
        Ok((dataset, config, parts, runtime))
    }

    fn prepare(&self, table: &Table, options: JsValue) -> Result<(Dataset, AttackConfig), JsError> {
        let o: RunOptions = options_from_js(options)?;
        let config = o.attack_config().map_err(js_error)?;
        Ok((table.dataset(&o)?, config))
    }

    /// The table and an audit's grid (options left out take the audit's defaults).
    pub(super) fn prepare_audit(&self, table: &Table, options: JsValue) -> Result<(Dataset, AuditOptions), JsError> {
        let mut o: AuditOptions = options_from_js(options)?;
        let dataset = table.dataset(&o.run)?;
        // Client sizes above the table's rows are left out (the report's options say which ran).
        o.fit_table(dataset.n());
        Ok((dataset, o))
    }
}

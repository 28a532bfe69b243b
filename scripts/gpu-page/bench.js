// leakscope bench harness: the page's engine (leakscope/js/remote.js, as www/app.js starts it) timed on
// WebGPU and on the CPU, one JSON result POSTed to /result (partial results to /partial after each run,
// progress lines to /log), so a headless browser needs no remote debugging.
//
// URL options (all optional):
//   probe=1            only the WebGPU adapter (requestAdapter + info), then post and stop
//   variant=NAME       recorded in the result (which browser flags run.sh used)
//   csv=PATH           default sample/adult-sample.csv (the page's copy of data/adult-sample.csv)
//   label=salary  batches=32,8,128  seed=0  iterations=1500
//   trace=1            count the engine's WebGPU calls (bench-worker.js: gpu-trace.js before the worker); 0: the
//                      package's own worker
//   backends=webgpu,cpu,auto    which engines run, in this order
//   webgpuSteps=20,60  the two short WebGPU runs whose difference gives the rate per step (as
//                      scripts/bench-browser.mjs; 5,15 on a software adapter unless given); 0 skips them
//   fullBudget=90      s: the full WebGPU run (iterations steps) runs if its extrapolated time is under this
//   cpuBatches=32,8    the CPU engine's batches (default: batches), so that WebGPU's may repeat without
//                      repeating the CPU's long runs
//   cpuWorkers=1,max   worker counts of the CPU engine (max = min(cores, 8), as the bench)
//   shortCpu=128:300   batch:steps — the CPU engine at that batch runs that many steps with every worker count
//                      (their ratio), and the full run only with the most workers (fullCpu=0: not even then)
//   runTimeout=120     s: one run is aborted after this
//   deadline=210       s after start: no run starts after this, a running one is aborted 15 s later (run.sh
//                      passes BENCH_TIMEOUT - 30 and ends the browser at BENCH_TIMEOUT)
// The engine's module is imported after the adapter probe, so a probe reports even if the page is broken.
let LeakscopeWorker = null;
let compileEngine = null;

const T0 = performance.now();
const q = new URLSearchParams(location.search);
const num = (k, d) => (q.has(k) && q.get(k) !== '' ? Number(q.get(k)) : d);
const list = (k, d) => (q.get(k) ?? d).split(',').map((s) => s.trim()).filter(Boolean);
const cores = navigator.hardwareConcurrency || 1;
const cfg = {
  probe: q.get('probe') === '1',
  variant: q.get('variant') ?? '',
  csv: q.get('csv') ?? 'sample/adult-sample.csv',
  label: q.get('label') ?? 'salary',
  batches: list('batches', '32,8,128').map(Number),
  cpuBatches: list('cpuBatches', q.get('batches') ?? '32,8,128').map(Number),
  trace: q.get('trace') !== '0',
  seed: num('seed', 0),
  iterations: num('iterations', 1500),
  backends: list('backends', 'webgpu,cpu,auto'),
  webgpuSteps: list('webgpuSteps', '20,60').map(Number),
  fullBudget: num('fullBudget', 90),
  cpuWorkers: [...new Set(list('cpuWorkers', '1,max').map((w) => (w === 'max' ? Math.min(cores, 8) : Number(w))))],
  shortCpu: Object.fromEntries(list('shortCpu', '').map((p) => p.split(':').map(Number))),
  fullCpu: q.get('fullCpu') !== '0',
  runTimeout: num('runTimeout', 120),
  deadline: num('deadline', 210),
};

const elapsed = () => (performance.now() - T0) / 1000;
const statusEl = document.getElementById('status');
const result = {
  harness: 'leakscope-bench/1',
  variant: cfg.variant,
  started_at: new Date().toISOString(),
  url: location.href,
  user_agent: navigator.userAgent,
  hardware_concurrency: cores,
  device_memory_gb: navigator.deviceMemory ?? null,
  config: cfg,
  adapter: null,
  engines: {},
  runs: [],
  webgpu_extrapolated: [],
  skipped: [],
  errors: [],
  finished: false,
};

// ---- reporting -------------------------------------------------------------------------------------
let logChain = Promise.resolve();
function log(line) {
  const text = `[${elapsed().toFixed(2)}s] ${line}`;
  statusEl.textContent += `\n${text}`;
  // One request after another, so the lines arrive in order.
  logChain = logChain.then(() => fetch('/log', { method: 'POST', body: text }).catch(() => {}));
  return logChain;
}
const describe = (e) => (e && (e.stack || e.message)) ? `${e.name ?? 'Error'}: ${e.message}` : String(e);
async function post(route) {
  result.elapsed_s = elapsed();
  await logChain;
  try {
    await fetch(route, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(result) });
  } catch (e) {
    statusEl.textContent += `\npost ${route} failed: ${describe(e)}`;
  }
}
addEventListener('error', (e) => { result.errors.push(`window.onerror: ${e.message} at ${e.filename}:${e.lineno}`); log(`window error: ${e.message}`); });
addEventListener('unhandledrejection', (e) => { result.errors.push(`unhandledrejection: ${describe(e.reason)}`); log(`unhandled rejection: ${describe(e.reason)}`); });

function withTimeout(promise, seconds, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, fail) => { timer = setTimeout(() => fail(new Error(`${what}: no answer after ${seconds} s`)), seconds * 1000); }),
  ]).finally(() => clearTimeout(timer));
}

// ---- the WebGPU call counter (gpu-trace.js, in every worker bench-worker.js starts) -------------------
const traceChannel = new BroadcastChannel('leakscope-gpu-trace');
function traceReset() {
  traceChannel.postMessage('reset');
}
/** Every worker's counters since the last reset, summed (the answers that come within 300 ms). */
async function traceGet() {
  const answers = [];
  const listen = ({ data }) => data?.counts && answers.push(data);
  traceChannel.addEventListener('message', listen);
  traceChannel.postMessage('get');
  await new Promise((r) => setTimeout(r, 300));
  traceChannel.removeEventListener('message', listen);
  const sum = { counts: {}, ms: {}, workers: answers.length, events: [] };
  for (const a of answers) {
    for (const [k, v] of Object.entries(a.counts)) sum.counts[k] = (sum.counts[k] ?? 0) + v;
    for (const [k, v] of Object.entries(a.times)) sum.ms[k] = Math.round(((sum.ms[k] ?? 0) + v) * 100) / 100;
    if (a.events.length > sum.events.length) sum.events = a.events;
  }
  return sum;
}

// ---- the adapter -------------------------------------------------------------------------------------
const SOFTWARE = /swiftshader|llvmpipe|lavapipe|softpipe|software|microsoft basic/i;
async function adapterInfo(options) {
  const out = { options, navigator_gpu: 'gpu' in navigator, found: false };
  if (!('gpu' in navigator)) return { ...out, error: 'navigator.gpu is undefined (WebGPU not exposed: flags, or not a secure context)' };
  try {
    // A GPU process that keeps failing never answers: 20 s in a probe (run.sh gives it 30).
    const adapter = await withTimeout(navigator.gpu.requestAdapter(options), cfg.probe ? 20 : 30, 'requestAdapter');
    if (!adapter) return { ...out, error: 'requestAdapter() resolved to null (no adapter)' };
    out.found = true;
    let info = adapter.info;
    if (!info && adapter.requestAdapterInfo) info = await adapter.requestAdapterInfo();
    out.info = info
      ? Object.fromEntries(['vendor', 'architecture', 'device', 'description', 'subgroupMinSize', 'subgroupMaxSize', 'isFallbackAdapter']
        .filter((k) => info[k] !== undefined).map((k) => [k, info[k]]))
      : null;
    out.isFallbackAdapter = Boolean(info?.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false);
    out.software = out.isFallbackAdapter || SOFTWARE.test(JSON.stringify(out.info ?? {}));
    out.features = [...adapter.features].sort();
    out.limits = {};
    for (const k of ['maxBufferSize', 'maxStorageBufferBindingSize', 'maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup',
      'maxComputeWorkgroupSizeX', 'maxComputeWorkgroupsPerDimension', 'maxStorageBuffersPerShaderStage']) out.limits[k] = adapter.limits[k];
    // A device, to see that one can be made (the engine's worker makes its own).
    try {
      const device = await withTimeout(adapter.requestDevice(), 30, 'requestDevice');
      out.device_ok = true;
      device.destroy();
    } catch (e) {
      out.device_ok = false;
      out.device_error = describe(e);
    }
  } catch (e) {
    out.error = describe(e);
  }
  return out;
}

// ---- one engine, one run -----------------------------------------------------------------------------
let modulePromise = null;
let csvText = null;

async function makeEngine(backend, workers) {
  const key = `${backend}${backend === 'webgpu' ? '' : `-w${workers}`}`;
  const t = performance.now();
  try {
    const workerUrl = cfg.trace ? new URL('bench-worker.js', document.baseURI) : undefined;
    const engine = await withTimeout(LeakscopeWorker.create({ backend, workers, module: modulePromise, workerUrl }), 120, `create ${key}`);
    const createMs = performance.now() - t;
    // The GPU's kernels compile from create on (an engine that has warmUp): when that ended.
    const warm = typeof engine.warmUp === 'function'
      ? engine.warmUp().then((seconds) => ({ engine_s: seconds, ready_ms: performance.now() - t }), (e) => ({ error: describe(e) }))
      : Promise.resolve(null);
    const t2 = performance.now();
    const table = await withTimeout(engine.loadTable(csvText), 60, `loadTable ${key}`);
    const loadMs = performance.now() - t2;
    result.engines[key] = { backend, workers: engine.workers, create_ms: createMs, load_table_ms: loadMs, info: engine.backend };
    warm.then((w) => { result.engines[key].warm_up = w; });
    await log(`engine ${key} ready in ${createMs.toFixed(0)} ms (+ table ${loadMs.toFixed(0)} ms): ${engine.backend?.label}`);
    return { engine, table, key, warm };
  } catch (e) {
    result.engines[key] = { backend, workers, error: describe(e), create_ms: performance.now() - t };
    result.errors.push(`engine ${key}: ${describe(e)}`);
    await log(`engine ${key} FAILED: ${describe(e)}`);
    return null;
  }
}

async function runOne(made, { batch, iterations, tag }) {
  const row = { tag, engine: made.key, batch, iterations, seed: cfg.seed, label: cfg.label, ok: false };
  if (elapsed() > cfg.deadline) {
    row.skipped = `past the deadline (${cfg.deadline} s)`;
    result.skipped.push(`${tag}: ${row.skipped}`);
    await log(`skip ${tag}: ${row.skipped}`);
    return row;
  }
  const controller = new AbortController();
  // run.sh ends the browser at deadline + 30 s: abort by deadline + 15 s so the result is still posted
  const remaining = Math.max(5, Math.min(cfg.runTimeout, cfg.deadline + 15 - elapsed()));
  const timer = setTimeout(() => controller.abort(), remaining * 1000);
  let lastLog = 0;
  let last = null;
  await log(`run ${tag}: B=${batch}, ${iterations} steps, seed ${cfg.seed} (timeout ${remaining.toFixed(0)} s)`);
  if (cfg.trace) traceReset();
  const started = performance.now();
  let firstStepMs = null;
  try {
    const report = await made.table.run(
      { label: cfg.label, batchSize: batch, iterations, seed: cfg.seed },
      {
        signal: controller.signal,
        onProgress: (p) => {
          last = p;
          const now = performance.now();
          if (firstStepMs === null && p.step >= 1 && p.loss != null && !p.phase.startsWith('time')) firstStepMs = now - started;
          if (now - lastLog > 2000) {
            lastLog = now;
            log(`  ${tag}: ${p.phase} ${p.step}/${p.of}${p.loss == null ? '' : ` loss ${p.loss.toExponential(2)}`} ${p.elapsed.toFixed(1)} s`);
          }
        },
      },
    );
    const wallMs = performance.now() - started;
    const b = report.backend;
    Object.assign(row, {
      ok: true,
      wall_ms: wallMs,
      report_seconds: report.seconds,
      // as scripts/bench-browser.mjs: time over the iterations asked for
      ms_per_step: (1000 * report.seconds) / iterations,
      steps_per_ms: iterations / (1000 * report.seconds),
      wall_ms_per_step: wallMs / iterations,
      answered_after: report.details?.answered_after ?? null,
      member_steps_max: report.member_steps?.length ? Math.max(...report.member_steps) : null,
      members: report.member_steps?.length ?? null,
      accuracy_total: report.accuracy?.total ?? null,
      label_accuracy: report.label_accuracy ?? null,
      random_baseline: report.random_baseline ?? null,
      backend_kind: b?.kind,
      backend_engine: b?.engine,
      backend_label: b?.label,
      backend_adapter: b?.adapter ?? null,
      backend_software: b?.software ?? null,
      backend_workers: b?.workers ?? null,
      backend_threads: b?.threads ?? null,
      backend_fallback_reason: b?.fallback_reason ?? null,
      backend_rates: b?.rates ?? [],
      warnings: report.warnings ?? [],
      // from the run's start to the first step's losses, as the caller sees them
      first_step_ms: firstStepMs,
      // where the engine's inversions spent their time (engines that report it)
      timing: report.timing ?? null,
    });
    if (cfg.trace) row.webgpu_calls = await traceGet();
    if (row.answered_after) row.ms_per_step_run = (1000 * report.seconds) / row.answered_after;
    await log(`done ${tag}: ${wallMs.toFixed(0)} ms wall, ${report.seconds.toFixed(3)} s engine, ${row.ms_per_step.toFixed(3)} ms/step, `
      + `accuracy ${(100 * (row.accuracy_total ?? NaN)).toFixed(1)} %, answered after ${row.answered_after ?? '-'}; ${b?.label}`);
  } catch (e) {
    row.wall_ms = performance.now() - started;
    row.error = describe(e);
    row.last_progress = last;
    result.errors.push(`${tag}: ${row.error}`);
    await log(`FAILED ${tag} after ${row.wall_ms.toFixed(0)} ms: ${row.error}${last ? ` (last: ${last.phase} ${last.step}/${last.of})` : ''}`);
  } finally {
    clearTimeout(timer);
  }
  result.runs.push(row);
  await post('/partial');
  return row;
}

// ---- the plan ----------------------------------------------------------------------------------------
async function benchWebgpu() {
  const made = await makeEngine('webgpu', undefined);
  if (!made) return;
  for (const batch of cfg.batches) {
    const [short, long] = cfg.webgpuSteps;
    let estimate = null;
    if (short > 0 && long > short) {
      const s = await runOne(made, { batch, iterations: short, tag: `webgpu B=${batch} ${short} steps` });
      const l = await runOne(made, { batch, iterations: long, tag: `webgpu B=${batch} ${long} steps` });
      if (s.ok && l.ok) {
        const rate = (l.report_seconds - s.report_seconds) / (long - short);
        const setup = Math.max(0, s.report_seconds - rate * short);
        estimate = setup + rate * cfg.iterations;
        result.webgpu_extrapolated.push({ batch, short, long, ms_per_step: 1000 * rate, steps_per_ms: rate > 0 ? 1 / (1000 * rate) : null, setup_s: setup, full_estimate_s: estimate, iterations: cfg.iterations, backend_label: l.backend_label });
        await log(`webgpu B=${batch}: ${(1000 * rate).toFixed(3)} ms/step, setup ${setup.toFixed(2)} s, ${cfg.iterations} steps ≈ ${estimate.toFixed(1)} s`);
      }
    }
    if (estimate === null || estimate <= cfg.fullBudget) {
      await runOne(made, { batch, iterations: cfg.iterations, tag: `webgpu B=${batch} ${cfg.iterations} steps` });
    } else {
      const why = `full WebGPU run at B=${batch} skipped: extrapolated ${estimate.toFixed(0)} s > fullBudget ${cfg.fullBudget} s`;
      result.skipped.push(why);
      await log(why);
    }
  }
  made.engine.terminate();
}

async function benchEngine(backend, workers) {
  const made = await makeEngine(backend, workers);
  if (!made) return;
  for (const batch of backend === 'cpu' ? cfg.cpuBatches : cfg.batches) {
    const short = backend === 'cpu' ? cfg.shortCpu[batch] : undefined;
    if (short) {
      await runOne(made, { batch, iterations: short, tag: `${made.key} B=${batch} ${short} steps` });
      if (workers < Math.max(...cfg.cpuWorkers) || !cfg.fullCpu) continue;
    }
    await runOne(made, { batch, iterations: cfg.iterations, tag: `${made.key} B=${batch} ${cfg.iterations} steps` });
  }
  made.engine.terminate();
}

async function main() {
  await log(`bench start: variant ${cfg.variant || '-'}, ${navigator.userAgent}, ${cores} cores`);
  result.adapter = await adapterInfo(undefined);
  const a = result.adapter;
  await log(`adapter: ${a.found ? JSON.stringify(a.info) + (a.software ? ' (SOFTWARE/fallback)' : ' (hardware)') + ` device_ok=${a.device_ok}` : `none: ${a.error}`}`);
  if (a.found) {
    const hp = await adapterInfo({ powerPreference: 'high-performance' });
    result.adapter_high_performance = { found: hp.found, info: hp.info, software: hp.software, error: hp.error };
  }
  if (cfg.probe) return;
  if (a.software && !q.has('webgpuSteps')) {
    cfg.webgpuSteps = [5, 15]; // SwiftShader: ~0.5-1.5 s a step at B = 32; keep the time for the CPU runs
    await log('software adapter: WebGPU rate from 5- and 15-step runs');
  }

  ({ LeakscopeWorker, compileEngine } = await import('./leakscope/js/remote.js'));
  const t = performance.now();
  modulePromise = compileEngine(new URL('leakscope/pkg/leakscope_bg.wasm', document.baseURI));
  modulePromise.catch(() => {});
  const response = await fetch(cfg.csv);
  if (!response.ok) throw new Error(`${cfg.csv}: HTTP ${response.status}`);
  csvText = await response.text();
  await modulePromise;
  result.compile_ms = performance.now() - t;
  await log(`module compiled and ${cfg.csv} read (${csvText.length} B) in ${result.compile_ms.toFixed(0)} ms`);

  for (const backend of cfg.backends) {
    if (elapsed() > cfg.deadline) { result.skipped.push(`${backend}: past the deadline`); continue; }
    if (backend === 'webgpu') await benchWebgpu();
    else if (backend === 'cpu') for (const w of cfg.cpuWorkers) await benchEngine('cpu', w);
    else if (backend === 'auto') await benchEngine('auto', Math.min(cores, 8));
    else result.skipped.push(`unknown backend ${backend}`);
  }
}

try {
  await main();
} catch (e) {
  result.errors.push(`main: ${describe(e)}`);
  await log(`main FAILED: ${describe(e)}`);
}
result.finished = true;
await log(`bench finished in ${elapsed().toFixed(1)} s; posting the result`);
await post('/result');
statusEl.textContent += '\nposted';

// leakscope: the WebAssembly engine behind a small async API (types in index.d.ts, generated ones in
// types.d.ts). Works in browsers (module scripts and module workers) and in Node (CPU backend).
// Every default, threshold and decision comes from the engine; this file moves bytes and calls.
import init, { Engine, attacks, auditDefaults, auditProgress, combineProgress, defaults, limits, __panicForTests } from '../pkg/leakscope.js';

const isNode = typeof process !== 'undefined' && process.versions != null && process.versions.node != null;
let ready;
let compiled;

// Compile once; a WebAssembly.Module can be posted to other workers, which then share its machine code
// (and its optimised tier) instead of each compiling the module again.
async function compile() {
  const url = new URL('../pkg/leakscope_bg.wasm', import.meta.url);
  if (isNode) return WebAssembly.compile(await (await import('node:fs/promises')).readFile(url));
  if (WebAssembly.compileStreaming) {
    try {
      return await WebAssembly.compileStreaming(fetch(url));
    } catch {
      // Served without the application/wasm type: compile from the bytes instead.
    }
  }
  return WebAssembly.compile(await (await fetch(url)).arrayBuffer());
}

function load(module) {
  ready ??= (async () => {
    compiled = module ?? (await compile());
    await init({ module_or_path: compiled });
  })();
  return ready;
}

async function toBytes(csv) {
  if (typeof csv === 'string') return new TextEncoder().encode(csv);
  if (csv instanceof Uint8Array) return csv;
  if (csv instanceof ArrayBuffer) return new Uint8Array(csv);
  if (csv && typeof csv.arrayBuffer === 'function') return new Uint8Array(await csv.arrayBuffer());
  throw new TypeError('csv must be a string, Uint8Array, ArrayBuffer, Blob or File');
}

/**
 * A Rust panic traps WebAssembly with a bare "unreachable": give the error the panic's message (the
 * engine's panic hook leaves it in `globalThis.__leakscopePanic`). The name stays RuntimeError: the
 * instance is unusable afterwards, and callers that own a worker replace it.
 */
async function guarded(task) {
  try {
    return await task();
  } catch (error) {
    if (error instanceof WebAssembly.RuntimeError) {
      const message = globalThis.__leakscopePanic;
      globalThis.__leakscopePanic = undefined;
      const wrapped = new Error(message ? `the engine panicked: ${message}` : `the engine crashed: ${error.message}`);
      wrapped.name = 'RuntimeError';
      wrapped.cause = error;
      throw wrapped;
    }
    throw error;
  }
}

async function cancellable(signal, task) {
  signal?.throwIfAborted();
  try {
    return await guarded(task);
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw error;
  }
}

/**
 * One attack as the engine plans it: time the candidates if `auto` has not yet measured this problem,
 * then run on the chosen backend, the ensemble split over `runShare` (one call per share, each on its
 * own worker) when the plan splits it. Used by `Leakscope.run` (no split) and by the package's worker.
 */
export async function runPlanned(engine, bytes, options, { onProgress, signal, workers = 1, runShare = null } = {}) {
  const e = engine.raw;
  const progress = onProgress ?? undefined;
  let plan = e.plan(bytes, options, workers);
  if (plan.probe) {
    const { whole, cpu_share: share } = plan.probe;
    const rates = [
      await cancellable(signal, () => e.probe(bytes, options, 'webgpu', whole.first, whole.count, workers, progress, signal)),
      await cancellable(signal, () => e.probe(bytes, options, 'cpu', share.first, share.count, workers, progress, signal)),
    ];
    e.decide(bytes, options, rates, workers);
    plan = e.plan(bytes, options, workers);
  }
  if (plan.kind !== 'cpu' || plan.shares.length < 2 || !runShare) {
    return cancellable(signal, () => e.run(bytes, options, workers, progress, signal));
  }
  const started = performance.now();
  const latest = plan.shares.map(() => null);
  const parts = await Promise.all(
    plan.shares.map((range, i) =>
      runShare(range, (p) => {
        latest[i] = p;
        const joined = combineProgress(latest, plan.shares);
        if (joined) onProgress?.(joined);
      }),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  return guarded(() => e.assess(bytes, options, parts, seconds, plan.shares.length));
}

/**
 * An audit: the engine plans its grid (cells dearest first); this engine and `runRemote`'s runners
 * (one per other worker) each take the next cell until none is left; the engine joins the results
 * into the report. One runner failing stops the others. Used by `Leakscope.audit` (this engine
 * alone) and by the package's worker (with its helpers).
 */
export async function runAudit(engine, bytes, options, { onProgress, signal, workers = 1, runRemote = [] } = {}) {
  const e = engine.raw;
  const plan = await guarded(() => e.auditPlan(bytes, options, workers));
  const stop = new AbortController();
  const abort = () => stop.abort(signal.reason);
  signal?.addEventListener('abort', abort, { once: true });
  const queue = plan.cells.map((c) => c.index);
  const done = [];
  const running = new Map();
  const results = [];
  const report = () =>
    onProgress?.(auditProgress(plan, done, [...running].map(([index, step]) => ({ index, step }))));
  const local = (index, onStep) =>
    cancellable(stop.signal, () => e.runAuditCell(bytes, options, index, (p) => onStep(p.step), stop.signal));
  const runners = [local, ...runRemote].slice(0, plan.workers);
  try {
    report();
    await Promise.all(
      runners.map(async (run) => {
        while (queue.length && !stop.signal.aborted) {
          const index = queue.shift();
          running.set(index, 0);
          try {
            results.push(
              await run(index, (step) => {
                if (running.has(index)) running.set(index, step);
                report();
              }, stop.signal),
            );
          } catch (error) {
            stop.abort(error);
            throw error;
          }
          running.delete(index);
          done.push(index);
          report();
        }
      }),
    );
    if (signal?.aborted) throw signal.reason;
  } finally {
    signal?.removeEventListener('abort', abort);
  }
  return guarded(() => e.auditReport(bytes, options, results));
}

export class Leakscope {
  #engine;

  constructor(engine) {
    this.#engine = engine;
  }

  /**
   * Start the engine: backend 'auto' (times WebGPU and the CPU on each new problem and runs on the
   * faster), 'webgpu' or 'cpu'. `module`: an already compiled WebAssembly.Module of this package.
   */
  static async create({ backend = 'auto', module } = {}) {
    await load(module);
    return new Leakscope(await guarded(() => Engine.create(backend)));
  }

  /** The compiled WebAssembly module (after `create`), to hand to engines in other workers. */
  static get wasmModule() {
    return compiled;
  }

  /** The underlying wasm-bindgen object, for `runPlanned` and the worker. */
  get raw() {
    return this.#engine;
  }

  /** What this engine runs on: {choice, candidates, fallback_reason, label}. */
  get backend() {
    return this.#engine.backend;
  }

  /** The engine's limits (`Limits` in types.d.ts): {maxCsvBytes, maxWorkers, maxLabelClasses}. */
  get limits() {
    return limits();
  }

  /** The options a run gets for every one it leaves out. */
  get defaults() {
    return defaults();
  }

  /** The attacks this engine offers (`AttackInfo` in types.d.ts): name, label, summary, the
   * protocols each takes and its own settings with their defaults and limits. */
  get attacks() {
    return attacks();
  }

  /** The audit's default grid; `quick`: the smaller one the page runs. */
  static auditDefaults(quick = false) {
    return auditDefaults(quick);
  }

  /**
   * Audit the table over a grid of federated settings (AuditOptions; left-out fields take the
   * defaults): every cell on this engine, one after another. Resolves to {audit, markdown, svgs}.
   */
  async audit(csv, options, { onProgress, signal } = {}) {
    signal?.throwIfAborted();
    return runAudit(this, await toBytes(csv), options, { onProgress, signal });
  }

  /** How an audit would run over `workers` workers: its cells, each with its share of the work. */
  async auditPlan(csv, options, workers = 1) {
    const bytes = await toBytes(csv);
    return guarded(() => this.#engine.auditPlan(bytes, options, workers));
  }

  /** Run one cell of an audit (as a worker of a split audit does); resolves to its CellResult. */
  async runAuditCell(csv, options, index, { onProgress, signal } = {}) {
    const bytes = await toBytes(csv);
    return cancellable(signal, () => this.#engine.runAuditCell(bytes, options, index, onProgress ?? undefined, signal ?? undefined));
  }

  /** The audit report from every cell's result. */
  async auditReport(csv, options, results) {
    const bytes = await toBytes(csv);
    return guarded(() => this.#engine.auditReport(bytes, options, results));
  }

  /** Columns, inferred kinds, label candidates and rows with missing values, before running. */
  async inspect(csv) {
    const bytes = await toBytes(csv);
    return guarded(() => this.#engine.inspect(bytes));
  }

  /** Run one attack on a batch drawn from the table; resolves to a plain report object. */
  async run(csv, options, { onProgress, signal } = {}) {
    signal?.throwIfAborted();
    return runPlanned(this, await toBytes(csv), options, { onProgress, signal });
  }

  /** How a page with `workers` workers would run this attack (see RunPlan). */
  async plan(csv, options, workers = 1) {
    const bytes = await toBytes(csv);
    return guarded(() => this.#engine.plan(bytes, options, workers));
  }

  /**
   * Building blocks for splitting one ensemble over several engines (as `LeakscopeWorker` does over
   * workers): invert members `first .. first + count` only; `assess` joins the shares into the report.
   */
  async invertMembers(csv, options, { first, count }, { onProgress, signal } = {}) {
    const bytes = await toBytes(csv);
    return cancellable(signal, () => this.#engine.invertMembers(bytes, options, first, count, onProgress ?? undefined, signal ?? undefined));
  }

  /** The report of an ensemble inverted in shares over `workers` workers; `seconds`: wall time measured. */
  async assess(csv, options, parts, seconds, workers = parts.length) {
    const bytes = await toBytes(csv);
    return guarded(() => this.#engine.assess(bytes, options, parts, seconds, workers));
  }

  /** The joined progress of a split run from each share's latest report (null until all reported). */
  static combineProgress(latest, shares) {
    return combineProgress(latest, shares);
  }
}

export { toBytes };

/** Test hook: make the engine panic with `message` (checks that a panic's message reaches callers). */
export async function panicForTests(message) {
  await load();
  return guarded(() => __panicForTests(message));
}

// The same API as `Leakscope`, with the engine in module Web Workers so the calling thread never blocks.
// Loads no WebAssembly itself: import it from a page's main thread.
//
// One worker coordinates each run; when the engine's plan splits a TabLeak ensemble over the CPU
// (WebAssembly runs one thread per worker), helper workers invert its shares, connected to the
// coordinator by MessagePorts. This file only starts, connects and replaces workers.
const CANCEL_GRACE_MS = 3000;

function workerError({ name, message }) {
  if (name === 'AbortError') return new DOMException(message, 'AbortError');
  const error = new Error(message);
  error.name = name;
  return error;
}

function checkCsv(csv) {
  // Blobs and Files are passed by reference (the worker reads them); strings and bytes are copied.
  const ok =
    typeof csv === 'string' ||
    csv instanceof ArrayBuffer ||
    ArrayBuffer.isView(csv) ||
    (typeof Blob !== 'undefined' && csv instanceof Blob);
  if (!ok) throw new TypeError('csv must be a string, Uint8Array, ArrayBuffer, Blob or File');
  return csv;
}

/** One module worker running one engine, with request ids, progress and cancellation. */
class EngineWorker {
  #worker = null;
  #url;
  #backendChoice;
  #nextId = 1;
  #pending = new Map();
  #onRestart;
  info = null;

  /** The compiled WebAssembly module, shared with the workers started after the first. */
  module = null;

  constructor(url, backendChoice, module = null, onRestart = () => {}) {
    this.#url = url;
    this.#backendChoice = backendChoice;
    this.module = module;
    this.#onRestart = onRestart;
  }

  async start() {
    this.#worker = new Worker(this.#url, { type: 'module' });
    this.#worker.addEventListener('message', ({ data }) => this.#receive(data));
    this.#worker.addEventListener('error', (event) => {
      event.preventDefault?.();
      this.#failAll(new Error(`the engine's worker failed: ${event.message || 'it could not be loaded'}`));
    });
    this.info = await this.#send({
      type: 'create',
      backend: this.#backendChoice,
      module: this.module ?? undefined,
      shareModule: !this.module,
    }).promise;
    this.module ??= this.info.module ?? null;
    return this;
  }

  #receive({ id, type, value, error }) {
    const pending = this.#pending.get(id);
    if (!pending) return;
    if (type === 'progress') {
      pending.onProgress?.(value);
      return;
    }
    this.#pending.delete(id);
    if (type === 'result') {
      pending.resolve(value);
      return;
    }
    pending.reject(workerError(error));
    // A trap inside WebAssembly (a panic, an allocation failure, a lost GPU device) leaves that
    // instance unusable: replace the worker so the next call starts clean.
    if (error.name === 'RuntimeError') this.#restart(workerError(error));
  }

  #failAll(error) {
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }

  #send(message, onProgress, transfer = []) {
    const id = this.#nextId++;
    const promise = new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onProgress });
      this.#worker.postMessage({ id, ...message }, transfer);
    });
    return { id, promise };
  }

  call(message) {
    return this.#send(message).promise;
  }

  post(message, transfer) {
    this.#worker.postMessage(message, transfer);
  }

  /**
   * A long task. Aborting `signal` cancels at the engine's next progress report; a worker that does
   * not answer within a few seconds is replaced by a fresh one.
   */
  async task(message, { onProgress, signal } = {}) {
    signal?.throwIfAborted();
    const { id, promise } = this.#send(message, onProgress);
    if (!signal) return promise;
    const onAbort = () => {
      this.#worker.postMessage({ type: 'cancel', target: id });
      const timer = setTimeout(() => this.#restart(signal.reason), CANCEL_GRACE_MS);
      promise.finally(() => clearTimeout(timer)).catch(() => {});
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await promise;
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw error;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  // A worker stuck in a long GPU submission cannot see the cancel message: end it and start anew.
  #restart(reason) {
    this.#worker.terminate();
    this.#failAll(reason);
    this.#onRestart();
    this.start().catch(() => {});
  }

  terminate() {
    this.#worker?.terminate();
    this.#failAll(new Error('the engine was terminated'));
  }
}

export class LeakscopeWorker {
  #main;
  #url;
  #workers;
  #helpers = [];

  constructor(url, workers) {
    this.#url = url;
    this.#workers = workers;
  }

  /**
   * Start the engine in a module worker. `backend`: 'auto' | 'webgpu' | 'cpu'. `workers`: how many
   * CPU workers may split a TabLeak ensemble (default: the logical cores; the engine caps it).
   * `workerUrl` defaults to the package's own worker entry.
   */
  static async create({ backend = 'auto', workers, workerUrl = new URL('./worker.js', import.meta.url) } = {}) {
    const cores = typeof navigator !== 'undefined' ? navigator.hardwareConcurrency || 1 : 1;
    const engine = new LeakscopeWorker(workerUrl, Math.max(1, Math.floor(workers ?? cores)));
    // When the coordinator is replaced (a crash, a cancel it did not answer), its helpers go too.
    engine.#main = await new EngineWorker(workerUrl, backend, null, () => engine.#dropHelpers()).start();
    return engine;
  }

  /** What the engine runs on: {choice, candidates, fallback_reason, label}. */
  get backend() {
    return this.#main.info.backend;
  }

  /** The engine's limits (`Limits` in types.d.ts): {maxCsvBytes, maxWorkers, maxLabelClasses}. */
  get limits() {
    return this.#main.info.limits;
  }

  /** The options a run gets for every one it leaves out. */
  get defaults() {
    return this.#main.info.defaults;
  }

  /** The attacks the engine offers (`AttackInfo` in types.d.ts), with their settings. */
  get attacks() {
    return this.#main.info.attacks;
  }

  /** The audit's default grids: {quick (the page's), full (the CLI's)}. */
  get auditDefaults() {
    return this.#main.info.auditDefaults;
  }

  /** CPU workers a run may split its ensemble over (the engine caps it at `limits.maxWorkers`). */
  get workers() {
    return this.#workers;
  }

  async inspect(csv) {
    return this.#main.call({ type: 'inspect', csv: checkCsv(csv) });
  }

  /**
   * Run one attack. Aborting `signal` cancels at the next progress report; a worker that does not
   * answer within 3 s is replaced, so the caller always recovers.
   */
  async run(csv, options, { onProgress, signal } = {}) {
    signal?.throwIfAborted();
    checkCsv(csv);
    const workers = this.#workers;
    const plan = await this.#main.call({ type: 'plan', csv, options, workers });
    await this.#connectHelpers(plan.helpers);
    return this.#main.task({ type: 'run', csv, options, workers }, { onProgress, signal });
  }

  /**
   * Audit the table over a grid of settings, its cells run side by side on the workers (the engine
   * plans how many take part). Progress: AuditProgress; cancel as for `run`. Resolves to
   * {audit, markdown, svgs}.
   */
  async audit(csv, options, { onProgress, signal } = {}) {
    signal?.throwIfAborted();
    checkCsv(csv);
    const plan = await this.auditPlan(csv, options);
    await this.#connectHelpers(plan.workers - 1);
    return this.#main.task({ type: 'audit', csv, options, workers: plan.workers }, { onProgress, signal });
  }

  /** How an audit would run on these workers: its cells, each with its share of the work. */
  async auditPlan(csv, options) {
    return this.#main.call({ type: 'auditPlan', csv: checkCsv(csv), options, workers: this.#workers });
  }

  async #connectHelpers(count) {
    while (this.#helpers.length < count) {
      const index = this.#helpers.length;
      const helper = new EngineWorker(this.#url, 'cpu', this.#main.module);
      this.#helpers.push(helper);
      try {
        await helper.start();
      } catch (error) {
        this.#helpers.pop();
        throw error;
      }
      const { port1, port2 } = new MessageChannel();
      helper.post({ type: 'connect', port: port2 }, [port2]);
      this.#main.post({ type: 'helper', index, port: port1 }, [port1]);
    }
  }

  #dropHelpers() {
    for (const helper of this.#helpers) helper.terminate();
    this.#helpers = [];
  }

  /** Stop the workers; the object is unusable afterwards. */
  terminate() {
    this.#main.terminate();
    this.#dropHelpers();
  }
}

// The same API as `Leakscope`, with the engine in module Web Workers so the calling thread never blocks.
// Loads no WebAssembly itself: import it from a page's main thread.
//
// WebAssembly runs one thread per worker, so on the CPU backend a TabLeak ensemble is split over
// several workers (its members are independent until they are matched and pooled): each inverts a
// share, then one worker joins the shares into the report, the same report one worker would give.
const CANCEL_GRACE_MS = 3000;
const MAX_WORKERS = 8;
// Every worker parses the whole table: past this size only one does.
const SPLIT_MAX_BYTES = 16 * 1024 * 1024;

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

function sizeOf(csv) {
  return typeof csv === 'string' ? csv.length : (csv.size ?? csv.byteLength ?? 0);
}

/** One module worker running one engine, with request ids, progress and cancellation. */
class EngineWorker {
  #worker = null;
  #url;
  #backendChoice;
  #nextId = 1;
  #pending = new Map();
  backend = null;

  /** The compiled WebAssembly module, shared with the workers started after the first. */
  module = null;

  constructor(url, backendChoice, module = null) {
    this.#url = url;
    this.#backendChoice = backendChoice;
    this.module = module;
  }

  async start() {
    this.#worker = new Worker(this.#url, { type: 'module' });
    this.#worker.addEventListener('message', ({ data }) => this.#receive(data));
    this.#worker.addEventListener('error', (event) => {
      event.preventDefault?.();
      this.#failAll(new Error(`the engine's worker failed: ${event.message || 'it could not be loaded'}`));
    });
    const created = await this.#send({
      type: 'create',
      backend: this.#backendChoice,
      module: this.module ?? undefined,
      shareModule: !this.module,
    }).promise;
    this.backend = created.backend;
    this.module ??= created.module ?? null;
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
    // A trap inside WebAssembly (a Rust panic, an allocation failure, a lost GPU device) leaves that
    // instance unusable: replace the worker so the next call starts clean.
    if (error.name === 'RuntimeError') this.#restart(workerError(error));
  }

  #failAll(error) {
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }

  #send(message, onProgress) {
    const id = this.#nextId++;
    const promise = new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onProgress });
      this.#worker.postMessage({ id, ...message });
    });
    return { id, promise };
  }

  call(message) {
    return this.#send(message).promise;
  }

  /**
   * A long task ('run' or 'invert'). Aborting `signal` cancels at the engine's next progress report;
   * a worker that does not answer within a few seconds is replaced by a fresh one.
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
    this.start().catch(() => {});
  }

  terminate() {
    this.#worker?.terminate();
    this.#failAll(new Error('the engine was terminated'));
  }
}

function shares(members, workers) {
  const k = Math.min(members, workers);
  return Array.from({ length: k }, (_, i) => {
    const first = Math.floor((i * members) / k);
    return { first, count: Math.floor(((i + 1) * members) / k) - first };
  });
}

export class LeakscopeWorker {
  #main;
  #url;
  #workers;
  #helpers = null;

  constructor(main, url, workers) {
    this.#main = main;
    this.#url = url;
    this.#workers = workers;
  }

  /**
   * Start the engine in a module worker. `backend`: 'auto' | 'webgpu' | 'cpu'. `workers`: how many
   * workers may split a TabLeak ensemble on the CPU backend (default: the logical cores, at most 8).
   * `workerUrl` defaults to the package's own worker entry.
   */
  static async create({ backend = 'auto', workers, workerUrl = new URL('./worker.js', import.meta.url) } = {}) {
    const cores = typeof navigator !== 'undefined' ? navigator.hardwareConcurrency || 1 : 1;
    const count = Math.max(1, Math.min(MAX_WORKERS, Math.floor(workers ?? cores)));
    const main = await new EngineWorker(workerUrl, backend).start();
    return new LeakscopeWorker(main, workerUrl, count);
  }

  /** The backend and adapter that really run, e.g. "cpu (…); no WebGPU adapter". */
  get backend() {
    return this.#main.backend;
  }

  /** How many workers a run on this engine uses at most. */
  get workers() {
    return this.#main.backend.startsWith('cpu') ? this.#workers : 1;
  }

  async inspect(csv) {
    return this.#main.call({ type: 'inspect', csv: checkCsv(csv) });
  }

  /**
   * Run one attack. Aborting `signal` cancels at the next progress report; a worker that does not
   * answer within 3 s is replaced, so the caller always recovers. Progress reports the slowest share.
   */
  async run(csv, options, { onProgress, signal } = {}) {
    signal?.throwIfAborted();
    checkCsv(csv);
    const members = options.ensemble ?? 30;
    const split = (options.attack ?? 'tableak') === 'tableak' && members > 1 && sizeOf(csv) <= SPLIT_MAX_BYTES;
    const plan = split ? shares(members, this.workers) : [];
    if (plan.length < 2) return this.#main.task({ type: 'run', csv, options }, { onProgress, signal });

    const started = performance.now();
    const engines = [this.#main, ...(await this.#startHelpers(plan.length - 1))];
    // Cancelling one share (or one failing) stops them all.
    const stop = new AbortController();
    const onAbort = () => stop.abort(signal.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const latest = plan.map(() => null);
    let reported = 0;
    const progress = (i, p) => {
      latest[i] = p;
      if (!onProgress || latest.some((q) => q === null)) return;
      const step = Math.min(...latest.map((q) => q.step));
      if (step <= reported) return;
      reported = step;
      const loss = latest.every((q) => q.loss !== null)
        ? latest.reduce((sum, q, j) => sum + q.loss * plan[j].count, 0) / members
        : null;
      onProgress({ phase: p.phase, step, of: p.of, loss, elapsed: (performance.now() - started) / 1000 });
    };
    try {
      const parts = await Promise.all(
        plan.map((range, i) =>
          engines[i]
            .task({ type: 'invert', csv, options, range }, { onProgress: (p) => progress(i, p), signal: stop.signal })
            .catch((error) => {
              stop.abort(error);
              throw error;
            }),
        ),
      );
      const seconds = (performance.now() - started) / 1000;
      return await this.#main.call({ type: 'assess', csv, options, parts, seconds });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw stop.signal.reason instanceof Error ? stop.signal.reason : error;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  async #startHelpers(count) {
    this.#helpers ??= [];
    while (this.#helpers.length < count) {
      const helper = new EngineWorker(this.#url, 'cpu', this.#main.module).start();
      // One that fails to start is dropped, so the next run tries a fresh one.
      helper.catch(() => {
        this.#helpers = this.#helpers.filter((h) => h !== helper);
      });
      this.#helpers.push(helper);
    }
    return Promise.all(this.#helpers.slice(0, count));
  }

  /** Stop the workers; the object is unusable afterwards. */
  terminate() {
    this.#main.terminate();
    for (const helper of this.#helpers ?? []) helper.then((h) => h.terminate(), () => {});
  }
}

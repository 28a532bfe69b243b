// The same API as `Leakscope`, with the engine in module Web Workers so the calling thread never blocks.
// Runs no WebAssembly itself: import it from a page's main thread. It may compile the module there
// (`compileEngine`), started as the page loads, so that the download and compilation overlap the
// rest of the page's loading and the worker's start; the workers then only instantiate it.
//
//   const engine = await LeakscopeWorker.create({ backend: 'auto', module: compileEngine() });
//   const table = await engine.loadTable(file);      // the File goes to the worker once
//   const report = await table.run(options, { onProgress, signal });
//
// One worker coordinates each run; when the engine's plan splits a TabLeak ensemble over the CPU
// (WebAssembly runs one thread per worker), helper workers invert its shares, connected to the
// coordinator by MessagePorts. This file only starts, connects and replaces workers.
import { compileModule } from './compile.js';
import { RpcClient } from './rpc.js';
import { Tasks } from './tasks.js';

const CANCEL_GRACE_MS = 3000;

/**
 * Compile the package's WebAssembly module (`url` defaults to the package's own), as it streams in.
 * Hand the promise to `LeakscopeWorker.create({ module })`; compiling needs no worker.
 */
export const compileEngine = compileModule;

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

/** One module worker running one engine, replaced when it crashes or does not answer a cancel. */
class EngineWorker {
  #worker = null;
  #rpc = null;
  #url;
  #backendChoice;
  #warm;
  #onRestart;
  #terminated = false;
  info = null;
  /** Counts the workers started: a table loaded into an earlier one is loaded again. */
  generation = 0;

  /** The compiled WebAssembly module (a promise of it until started), shared with later workers. */
  module = null;

  constructor(url, backendChoice, module = null, onRestart = () => {}, warm = true) {
    this.#url = url;
    this.#backendChoice = backendChoice;
    this.#warm = warm;
    this.module = module;
    this.#onRestart = onRestart;
  }

  async start() {
    this.generation += 1;
    this.#worker = new Worker(this.#url, { type: 'module' });
    // A trap inside WebAssembly (a panic, an allocation failure, a lost GPU device) leaves that
    // instance unusable: replace the worker so the next call starts clean.
    this.#rpc = new RpcClient(this.#worker, {
      onError: (error) => error.name === 'RuntimeError' && this.#restart(error),
    });
    this.#worker.addEventListener('error', (event) => {
      event.preventDefault?.();
      this.#rpc.failAll(new Error(`the engine's worker failed: ${event.message || 'it could not be loaded'}`));
    });
    // The worker loads its scripts while a module compiled on the caller's thread finishes.
    let module;
    try {
      module = (await this.module) ?? null;
    } catch (error) {
      this.#worker.terminate();
      throw error;
    }
    this.info = await this.#rpc.request('create', {
      backend: this.#backendChoice,
      module: module ?? undefined,
      shareModule: !module,
      warm: this.#warm,
    });
    this.module = module ?? this.info.module ?? null;
    return this;
  }

  /**
   * A request. Aborting `signal` cancels at the engine's next progress report; a worker that does
   * not answer within a few seconds is replaced by a fresh one.
   */
  request(type, payload, { onProgress, signal, transfer } = {}) {
    if (this.#terminated) return Promise.reject(new Error('the engine was terminated'));
    return this.#rpc.request(type, payload, {
      onProgress,
      signal,
      transfer,
      onAbort: (promise) => {
        const timer = setTimeout(() => this.#restart(signal.reason), CANCEL_GRACE_MS);
        promise.finally(() => clearTimeout(timer)).catch(() => {});
      },
    });
  }

  // A worker stuck in a long GPU submission cannot see the cancel message: end it and start anew.
  #restart(reason) {
    this.#worker.terminate();
    this.#rpc.failAll(reason);
    this.#onRestart();
    this.start().catch(() => {});
  }

  terminate() {
    this.#terminated = true;
    this.#worker?.terminate();
    this.#rpc?.failAll(new Error('the engine was terminated'));
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
   * CPU workers may split a TabLeak ensemble or an audit (default: the logical cores; the engine
   * caps it). `workerUrl` defaults to the package's own worker entry. `module`: the engine's
   * WebAssembly.Module, or a promise of it (`compileEngine()`), compiled on this thread; without
   * it the first worker fetches and compiles the module itself.
   */
  static async create({ backend = 'auto', workers, workerUrl = new URL('./worker.js', import.meta.url), module, warm = true } = {}) {
    const cores = typeof navigator !== 'undefined' ? navigator.hardwareConcurrency || 1 : 1;
    const engine = new LeakscopeWorker(workerUrl, Math.max(1, Math.floor(workers ?? cores)));
    // When the coordinator is replaced (a crash, a cancel it did not answer), its helpers go too.
    engine.#main = await new EngineWorker(workerUrl, backend, module ?? null, () => engine.#dropHelpers(), warm).start();
    return engine;
  }

  /** What the engine runs on: {choice, candidates, fallback_reason, label}. */
  get backend() {
    return this.#main.info.backend;
  }

  /**
   * Resolves once the engine's warm-ups are over in its worker (`create` starts them: the GPU's
   * kernels, which a GPU run waits for, then the CPU engine's code run once, which a run cuts
   * short): the seconds the GPU's took, or null without a GPU.
   */
  warmUp() {
    return this.#main.request('warmUp');
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

  /** Attack an update a real client sent, in the engine's worker (see `Leakscope.attackUpdate`). */
  async attackUpdate(files, options = {}, { onProgress, signal } = {}) {
    return this.#main.request('attackUpdate', { files, options }, { onProgress, signal });
  }

  /** Send a CSV (string, bytes, Blob or File: a File is read in the worker) to the engine once. */
  async loadTable(csv) {
    const table = new RemoteTable(this.#main, checkCsv(csv), (count) => this.#connectHelpers(count), this.#workers);
    await table.handle();
    return table;
  }

  async #connectHelpers(count) {
    while (this.#helpers.length < count) {
      const index = this.#helpers.length;
      // Helpers only invert shares: no warm-up to cut short when their first share comes.
      const helper = new EngineWorker(this.#url, 'cpu', this.#main.module, undefined, false);
      this.#helpers.push(helper);
      try {
        await helper.start();
      } catch (error) {
        this.#helpers.pop();
        throw error;
      }
      const { port1, port2 } = new MessageChannel();
      await helper.request('connect', { port: port2 }, { transfer: [port2] });
      await this.#main.request('helper', { index, port: port1 }, { transfer: [port1] });
    }
  }

  #dropHelpers() {
    for (const helper of this.#helpers) helper.terminate();
    this.#helpers = [];
  }

  /** Stop the workers; the object and its tables are unusable afterwards. */
  terminate() {
    this.#main.terminate();
    this.#dropHelpers();
  }
}

/** A table loaded into the engine's worker, referred to by its handle there. */
class RemoteTable {
  #main;
  #csv;
  #connectHelpers;
  #workers;
  #tasks = new Tasks();
  #loaded = null;
  #freed = false;
  bytes = 0;

  constructor(main, csv, connectHelpers, workers) {
    this.#main = main;
    this.#csv = csv;
    this.#connectHelpers = connectHelpers;
    this.#workers = workers;
  }

  /** The table's handle in the current worker: loaded again after the worker was replaced. */
  async handle() {
    if (this.#freed) throw new Error('the table was freed');
    const generation = this.#main.generation;
    if (this.#loaded?.generation !== generation) {
      const loading = this.#main.request('load', { csv: this.#csv }).then(({ handle, bytes }) => {
        this.bytes = bytes;
        return handle;
      });
      this.#loaded = { generation, loading };
      loading.catch(() => {
        if (this.#loaded?.loading === loading) this.#loaded = null;
      });
    }
    return this.#loaded.loading;
  }

  async #call(type, payload, control) {
    return this.#main.request(type, { table: await this.handle(), ...payload }, control);
  }

  /** Columns, inferred kinds, label candidates and rows with missing values. */
  inspect() {
    return this.#call('inspect', {});
  }

  /** How this engine's workers would run this attack (see RunPlan). */
  plan(options) {
    return this.#call('plan', { options, workers: this.#workers });
  }

  /**
   * Run one attack. Aborting `signal` (or `cancel()`) stops it at the next progress report; a
   * worker that does not answer within 3 s is replaced, so the caller always recovers.
   */
  run(options, { onProgress, signal } = {}) {
    return this.#tasks.run(signal, async (mine) => {
      const plan = await this.plan(options);
      await this.#connectHelpers(plan.helpers);
      return this.#call('run', { options, workers: this.#workers }, { onProgress, signal: mine });
    });
  }

  /** How an audit would run on these workers: its cells, dearest first, each with its share of the work. */
  auditPlan(options) {
    return this.#call('auditPlan', { options, workers: this.#workers });
  }

  /**
   * Audit the table over a grid of settings, its cells run side by side on the workers (the engine
   * plans how many take part). Progress: AuditProgress; cancel as for `run`. Resolves to
   * {audit, markdown, svgs}.
   */
  audit(options, { onProgress, signal } = {}) {
    return this.#tasks.run(signal, async (mine) => {
      const plan = await this.auditPlan(options);
      await this.#connectHelpers(plan.workers - 1);
      return this.#call('audit', { options, workers: plan.workers }, { onProgress, signal: mine });
    });
  }

  /** Stop every run and audit on this table. */
  cancel() {
    this.#tasks.cancel();
  }

  /** Drop the table from the worker (after cancelling what runs on it). */
  async free() {
    if (this.#freed) return;
    this.#tasks.cancel('cancelled: the table was freed');
    await this.#tasks.settled();
    const loaded = this.#loaded;
    this.#freed = true;
    if (loaded?.generation === this.#main.generation) {
      await this.#main.request('drop', { table: await loaded.loading }).catch(() => {});
    }
  }
}

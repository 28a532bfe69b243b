// leakscope: the WebAssembly engine behind a small async API (types in index.d.ts, generated ones in
// types.d.ts). Works in browsers (module scripts and module workers) and in Node (CPU backend).
//
//   const engine = await Leakscope.create({ backend: 'cpu' });
//   const table = await engine.loadTable(csv);     // read once, then referred to
//   const report = await table.run({ label: 'income' }, { onProgress, signal });
//
// `leakscope/remote` gives the same API with the engine in module Web Workers.
import {
  RAW,
  attackUpdate,
  attacks,
  auditDefaults,
  createEngine,
  defaults,
  guarded,
  limits,
  loadTable,
  privacy,
  runAudit,
  runPlanned,
  wasmModule,
} from './internal.js';
import { Tasks } from './tasks.js';

export class Leakscope {
  #engine;

  constructor(engine) {
    this.#engine = engine;
  }

  /**
   * Start the engine: backend 'auto' (times WebGPU and the CPU on each new problem and runs on the
   * faster), 'webgpu' or 'cpu'. `module`: an already compiled WebAssembly.Module of this package.
   * `warm` (default true): run the CPU engine's code once in the background after starting, so
   * that the JavaScript engine has optimised it before the first run (a run asked meanwhile cuts
   * it short).
   */
  static async create({ backend = 'auto', module, warm = true } = {}) {
    return new Leakscope(await createEngine(backend, module, warm));
  }

  /** The compiled WebAssembly module (after `create`), to hand to engines in other workers. */
  static get wasmModule() {
    return wasmModule();
  }

  get [RAW]() {
    return this.#engine;
  }

  /** What this engine runs on: {choice, candidates, fallback_reason, label}. */
  get backend() {
    return this.#engine.backend;
  }

  /**
   * Resolves once the engine's warm-ups are over: `create` starts compiling the GPU's kernels in
   * the background (a run on the GPU waits for it), then runs the CPU engine's code once (a run cuts
   * that short). Resolves to the seconds the GPU's took, or null without a GPU.
   */
  warmUp() {
    return guarded(() => this.#engine.warmUp());
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

  /** The audit's default grid (after `create`); `quick`: the smaller one the page runs. */
  static auditDefaults(quick = false) {
    return auditDefaults(quick);
  }

  /**
   * ε over `rounds` rounds of updates clipped and noised with multiplier `noiseMultiplier`, each
   * client sampled at `sampleRate` (RDP accounting, as Opacus), with ε per round and against the
   * server, which knows whom it sampled (`PrivacyAnswer` in types.d.ts); with `canaries`
   * ({inserted, dimension, heldOut?, seed?}) also the ε that many random canaries measure on the
   * Gaussian mechanism (synchronous: their work is bounded by the engine's limit). After `create`;
   * throws on a bad setting.
   */
  static privacy(query) {
    return privacy(query);
  }

  /**
   * Attack an update a real client sent (no table needed): {encoding, update, weights?} as files
   * (string, bytes, Blob or File; safetensors, numpy .npz or leakscope-update/1 JSON). `options`
   * are a run's; `batchSize` and `labels` only where the files do not say them. Resolves to a
   * report without accuracy (there is no ground truth).
   */
  async attackUpdate(files, options = {}, { onProgress, signal } = {}) {
    return attackUpdate(this.#engine, files, options, { onProgress, signal });
  }

  /** Read a CSV (string, bytes, Blob or File) once; runs and audits then refer to the table. */
  async loadTable(csv) {
    return new LeakscopeTable(this, await loadTable(csv));
  }
}

/** A table loaded into an engine: inspect it, plan, run and audit attacks on it, cancel them. */
export class LeakscopeTable {
  #engine;
  #table;
  #tasks = new Tasks();

  constructor(engine, table) {
    this.#engine = engine;
    this.#table = table;
  }

  get [RAW]() {
    return { engine: this.#engine[RAW], table: this.#live() };
  }

  #live() {
    if (!this.#table) throw new Error('the table was freed');
    return this.#table;
  }

  /** The CSV's size in bytes. */
  get bytes() {
    return this.#live().bytes;
  }

  /** Columns, inferred kinds, label candidates and rows with missing values. */
  async inspect() {
    return guarded(() => this.#live().inspect());
  }

  /** How a page with `workers` workers would run this attack (see RunPlan). */
  async plan(options, workers = 1) {
    return guarded(() => this.#engine[RAW].plan(this.#live(), options, workers));
  }

  /** Run one attack on a batch drawn from the table; resolves to a plain report object. */
  async run(options, { onProgress, signal } = {}) {
    const { engine, table } = this[RAW];
    return this.#tasks.run(signal, (mine) => runPlanned(engine, table, options, { onProgress, signal: mine }));
  }

  /** How an audit would run over `workers` workers: its cells, each with its share of the work. */
  async auditPlan(options, workers = 1) {
    return guarded(() => this.#engine[RAW].auditPlan(this.#live(), options, workers));
  }

  /**
   * Audit the table over a grid of federated settings (AuditOptions; left-out fields take the
   * defaults): every cell on this engine, one after another. Resolves to {audit, markdown, svgs}.
   */
  async audit(options, { onProgress, signal } = {}) {
    const { engine, table } = this[RAW];
    return this.#tasks.run(signal, (mine) => runAudit(engine, table, options, { onProgress, signal: mine }));
  }

  /** Stop every run and audit on this table (each rejects with an AbortError at its next step). */
  cancel() {
    this.#tasks.cancel();
  }

  /** Give the table's memory back (after cancelling what runs on it); the object is unusable afterwards. */
  async free() {
    const table = this.#table;
    this.#table = null;
    this.#tasks.cancel('cancelled: the table was freed');
    await this.#tasks.settled();
    table?.free();
  }
}

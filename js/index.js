// leakscope: the WebAssembly engine behind a small async API (types in index.d.ts).
// Works in browsers (module scripts and module workers) and in Node (CPU backend).
import init, { Engine } from '../pkg/leakscope.js';

const isNode = typeof process !== 'undefined' && process.versions != null && process.versions.node != null;
let ready;
let compiled;

// Compile once; a WebAssembly.Module can be posted to other workers, which then share its machine code
// (and its optimised tier) instead of each compiling the 28 MB module again.
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

export class Leakscope {
  #engine;

  constructor(engine) {
    this.#engine = engine;
  }

  /**
   * Start the engine: backend 'auto' (WebGPU when a hardware adapter is granted, else CPU), 'webgpu' or
   * 'cpu'. `module`: an already compiled WebAssembly.Module of this package (see `wasmModule`).
   */
  static async create({ backend = 'auto', module } = {}) {
    await load(module);
    return new Leakscope(await Engine.create(backend));
  }

  /** The compiled WebAssembly module (after `create`), to hand to engines in other workers. */
  static get wasmModule() {
    return compiled;
  }

  /** The backend and adapter that really run, e.g. "cpu (fused kernel, gemm + burn flex)". */
  get backend() {
    return this.#engine.backend;
  }

  /** Columns, inferred kinds, label candidates and rows with missing values, before running. */
  async inspect(csv) {
    return this.#engine.inspect(await toBytes(csv));
  }

  /** Run one attack on a batch drawn from the table; resolves to a plain report object. */
  async run(csv, options, { onProgress, signal } = {}) {
    return cancellable(signal, async () =>
      this.#engine.run(await toBytes(csv), options, onProgress ?? undefined, signal ?? undefined),
    );
  }

  /**
   * Building blocks for splitting one ensemble over several engines (as `LeakscopeWorker` does over
   * workers): invert members `first .. first + count` only; `assess` joins the shares into the report.
   */
  async invertMembers(csv, options, { first, count }, { onProgress, signal } = {}) {
    return cancellable(signal, async () =>
      this.#engine.invertMembers(await toBytes(csv), options, first, count, onProgress ?? undefined, signal ?? undefined),
    );
  }

  /** The report of an ensemble inverted in shares; `seconds` is the wall time the caller measured. */
  async assess(csv, options, parts, seconds) {
    return this.#engine.assess(await toBytes(csv), options, parts, seconds);
  }
}

async function cancellable(signal, task) {
  signal?.throwIfAborted();
  try {
    return await task();
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw error;
  }
}

// leakscope: the WebAssembly engine behind a small async API (types in index.d.ts).
// Works in browsers (module scripts and module workers) and in Node (CPU backend).
import init, { Engine } from '../pkg/leakscope.js';

let ready;
function load() {
  if (!ready) {
    const wasm = new URL('../pkg/leakscope_bg.wasm', import.meta.url);
    const isNode = typeof process !== 'undefined' && process.versions != null && process.versions.node != null;
    ready = isNode
      ? import('node:fs/promises').then((fs) => fs.readFile(wasm)).then((bytes) => init({ module_or_path: bytes }))
      : init({ module_or_path: wasm });
  }
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

  /** Start the engine: backend 'auto' (WebGPU when an adapter is granted, else CPU), 'webgpu' or 'cpu'. */
  static async create({ backend = 'auto' } = {}) {
    await load();
    return new Leakscope(await Engine.create(backend));
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
    signal?.throwIfAborted();
    try {
      return await this.#engine.run(await toBytes(csv), options, onProgress ?? undefined, signal ?? undefined);
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw error;
    }
  }
}

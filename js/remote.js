// The same API as `Leakscope`, with the engine in a module Web Worker so the calling thread never blocks.
// Loads no WebAssembly itself: import it from a page's main thread.
const CANCEL_GRACE_MS = 3000;

function workerError({ name, message }) {
  if (name === 'AbortError') return new DOMException(message, 'AbortError');
  const error = new Error(message);
  error.name = name;
  return error;
}

async function transferable(csv) {
  // Blobs and Files are passed by reference (the worker reads them); strings and bytes are copied.
  if (typeof csv === 'string' || csv instanceof ArrayBuffer || ArrayBuffer.isView(csv)) return csv;
  if (typeof Blob !== 'undefined' && csv instanceof Blob) return csv;
  throw new TypeError('csv must be a string, Uint8Array, ArrayBuffer, Blob or File');
}

export class LeakscopeWorker {
  #worker = null;
  #url;
  #backendChoice;
  #backend = null;
  #nextId = 1;
  #pending = new Map();

  constructor(url, backendChoice) {
    this.#url = url;
    this.#backendChoice = backendChoice;
  }

  /**
   * Start the engine in a module worker. `backend`: 'auto' | 'webgpu' | 'cpu'.
   * `workerUrl` defaults to the package's own worker entry.
   */
  static async create({ backend = 'auto', workerUrl = new URL('./worker.js', import.meta.url) } = {}) {
    const remote = new LeakscopeWorker(workerUrl, backend);
    await remote.#start();
    return remote;
  }

  /** The backend and adapter that really run. */
  get backend() {
    return this.#backend;
  }

  async #start() {
    this.#worker = new Worker(this.#url, { type: 'module' });
    this.#worker.addEventListener('message', ({ data }) => this.#receive(data));
    this.#worker.addEventListener('error', (event) => {
      event.preventDefault?.();
      this.#failAll(new Error(`the engine's worker failed: ${event.message || 'it could not be loaded'}`));
    });
    const { backend } = await this.#call({ type: 'create', backend: this.#backendChoice });
    this.#backend = backend;
  }

  #receive({ id, type, value, error }) {
    const pending = this.#pending.get(id);
    if (!pending) return;
    if (type === 'progress') {
      pending.onProgress?.(value);
      return;
    }
    this.#pending.delete(id);
    if (type === 'result') pending.resolve(value);
    else pending.reject(workerError(error));
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

  #call(message) {
    return this.#send(message).promise;
  }

  async inspect(csv) {
    return this.#call({ type: 'inspect', csv: await transferable(csv) });
  }

  /**
   * Run one attack in the worker. Aborting `signal` cancels at the engine's next progress report; if the
   * worker does not answer within a few seconds it is replaced by a fresh one, so the caller always recovers.
   */
  async run(csv, options, { onProgress, signal } = {}) {
    signal?.throwIfAborted();
    const { id, promise: result } = this.#send({ type: 'run', csv: await transferable(csv), options }, onProgress);
    if (!signal) return result;
    const onAbort = () => {
      this.#worker.postMessage({ type: 'cancel', target: id });
      const timer = setTimeout(() => this.#restart(signal.reason), CANCEL_GRACE_MS);
      result.finally(() => clearTimeout(timer)).catch(() => {});
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await result;
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
    this.#start().catch(() => {});
  }

  /** Stop the worker; the object is unusable afterwards. */
  terminate() {
    this.#worker?.terminate();
    this.#failAll(new Error('the engine was terminated'));
  }
}

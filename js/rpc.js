// Requests with progress and cancellation over anything that posts messages: a Worker seen from the
// page, a worker's own global scope, or a MessagePort between two workers. remote.js (page → worker)
// and worker.js (the worker's side, and coordinator → helper) both speak it.
//
// Request:  { id, type, ...payload }           Cancel: { type: 'cancel', target: id }
// Replies:  { id, type: 'progress', value } … then { id, type: 'result', value } or { id, type: 'error', error }

/** An error as it crosses a message boundary (Errors do not survive structured cloning with their name). */
export function describeError(error) {
  return { name: error?.name ?? 'Error', message: error?.message ?? String(error) };
}

/** The error a request fails with on the calling side: aborts stay AbortErrors. */
export function reviveError({ name, message }) {
  if (name === 'AbortError') return new DOMException(message, 'AbortError');
  const error = new Error(message);
  error.name = name;
  return error;
}

function listen(endpoint, handler) {
  endpoint.addEventListener('message', ({ data }) => handler(data));
  // A MessagePort delivers to addEventListener only once started (a worker's scope needs no start).
  endpoint.start?.();
}

/** The calling side: `request` sends one and resolves to its result, with progress and cancellation. */
export class RpcClient {
  #endpoint;
  #next = 1;
  #pending = new Map();
  #onError;

  /** `onError(error, described)`: called for every failed request (remote.js replaces crashed workers). */
  constructor(endpoint, { onError } = {}) {
    this.#endpoint = endpoint;
    this.#onError = onError;
    listen(endpoint, (data) => this.#receive(data));
  }

  #receive({ id, type, value, error }) {
    const pending = this.#pending.get(id);
    if (!pending) return;
    if (type === 'progress') return pending.onProgress?.(value);
    this.#pending.delete(id);
    if (type === 'result') return pending.resolve(value);
    const revived = reviveError(error);
    pending.reject(revived);
    this.#onError?.(revived);
  }

  /**
   * Send `{ type, ...payload }`. Aborting `signal` sends a cancel; the promise then rejects with the
   * signal's reason once the other side stops (or at once, with `settleOnAbort`). `onAbort(id)` runs
   * after the cancel is sent (remote.js starts its grace timer there).
   */
  request(type, payload = {}, { onProgress, signal, transfer = [], onAbort } = {}) {
    signal?.throwIfAborted();
    const id = this.#next++;
    const promise = new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onProgress });
      this.#endpoint.postMessage({ id, type, ...payload }, transfer);
    });
    if (!signal) return promise;
    const abort = () => {
      this.#endpoint.postMessage({ type: 'cancel', target: id });
      onAbort?.(promise);
    };
    signal.addEventListener('abort', abort, { once: true });
    return promise.then(
      (value) => {
        signal.removeEventListener('abort', abort);
        return value;
      },
      (error) => {
        signal.removeEventListener('abort', abort);
        throw signal.aborted ? signal.reason : error;
      },
    );
  }

  /** Fail every request still waiting (the other side is gone). */
  failAll(error) {
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }
}

/**
 * The answering side: `handlers[type](payload, { signal, progress })` returns the result (or a
 * promise of it); a handler's `transfer(value)` names buffers to move instead of copying. A cancel
 * aborts that request's signal. Messages of types not in `handlers` are an error reply.
 */
export function serve(endpoint, handlers, { transfer = () => [] } = {}) {
  const running = new Map();
  listen(endpoint, async ({ id, type, ...payload }) => {
    if (type === 'cancel') return running.get(payload.target)?.abort();
    const controller = new AbortController();
    running.set(id, controller);
    try {
      const handler = handlers[type];
      if (!handler) throw new Error(`unknown request type ${JSON.stringify(type)}`);
      const value = await handler(payload, {
        signal: controller.signal,
        progress: (p) => endpoint.postMessage({ id, type: 'progress', value: p }),
      });
      endpoint.postMessage({ id, type: 'result', value }, transfer(type, value));
    } catch (error) {
      endpoint.postMessage({ id, type: 'error', error: describeError(error) });
    } finally {
      running.delete(id);
    }
  });
}

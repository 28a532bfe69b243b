// The ready-made module worker: `new Worker(new URL('leakscope/worker', import.meta.url), { type: 'module' })`,
// or let `LeakscopeWorker` (./remote.js) start it. The engine runs here, off the page's thread; the file is
// read here too, so a large CSV never freezes the tab.
//
// One worker coordinates a run (plans it, times the backends for `auto`, runs it or splits its
// ensemble); helper workers, connected to it by MessagePorts, each invert one share on the CPU.
//
// Messages in:  { id, type: 'create', backend, module?, shareModule? } | { id, type: 'inspect', csv }
//               | { id, type: 'plan', csv, options, workers } | { id, type: 'run', csv, options, workers }
//               | { id, type: 'auditPlan', csv, options, workers } | { id, type: 'audit', csv, options, workers }
//               | { type: 'helper', index, port } (coordinator) | { type: 'connect', port } (helper)
//               | { type: 'cancel', target: id }
// Messages out: { id, type: 'progress', value } | { id, type: 'result', value } | { id, type: 'error', error }
// On a helper's port: { id, type: 'invert', csv, options, range } | { id, type: 'auditCell', csv, options,
// index } and 'cancel' in; the same replies out.
import { Leakscope, runAudit, runPlanned, toBytes } from './index.js';

// Messages after 'create' wait for it, so a caller may send them at once.
let engine = null;
const running = new Map();
const helpers = [];

function describe(error) {
  return { name: error?.name ?? 'Error', message: error?.message ?? String(error) };
}

function revive({ name, message }) {
  if (name === 'AbortError') return new DOMException(message, 'AbortError');
  const error = new Error(message);
  error.name = name;
  return error;
}

function started() {
  if (!engine) throw new Error('the engine is not started: send create first');
  return engine;
}

/** A helper worker seen through its port: tasks with progress and cancellation. */
class Helper {
  #port;
  #next = 1;
  #pending = new Map();

  constructor(port) {
    this.#port = port;
    port.onmessage = ({ data: { id, type, value, error } }) => {
      const pending = this.#pending.get(id);
      if (!pending) return;
      if (type === 'progress') return pending.onProgress?.(value);
      this.#pending.delete(id);
      if (type === 'result') pending.resolve(value);
      else pending.reject(revive(error));
    };
  }

  task(message, { onProgress, signal }) {
    signal?.throwIfAborted();
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onProgress });
      signal?.addEventListener('abort', () => this.#port.postMessage({ type: 'cancel', target: id }), { once: true });
      this.#port.postMessage({ id, ...message });
    });
  }
}

async function coordinate(id, { csv, options, workers }) {
  const controller = new AbortController();
  running.set(id, controller);
  const { signal } = controller;
  try {
    const ready = await started();
    const bytes = await toBytes(csv);
    // One share failing stops the others; each share goes to the next helper.
    let next = 0;
    return await runPlanned(ready, bytes, options, {
      signal,
      workers,
      onProgress: (value) => self.postMessage({ id, type: 'progress', value }),
      runShare: (range, onProgress) => {
        const helper = helpers[next++];
        if (!helper) return Promise.reject(new Error('the run needs more helper workers than are connected'));
        return helper.task({ type: 'invert', csv, options, range }, { onProgress, signal }).catch((error) => {
          controller.abort(error);
          throw error;
        });
      },
    });
  } finally {
    running.delete(id);
  }
}

/** An audit: this worker and each connected helper take the next cell until none is left. */
async function audit(id, { csv, options, workers }) {
  const controller = new AbortController();
  running.set(id, controller);
  try {
    const ready = await started();
    const bytes = await toBytes(csv);
    const runRemote = helpers.slice(0, Math.max(0, workers - 1)).map(
      (helper) => (index, onStep, signal) =>
        helper.task({ type: 'auditCell', csv, options, index }, { onProgress: (p) => onStep(p.step), signal }),
    );
    return await runAudit(ready, bytes, options, {
      signal: controller.signal,
      workers,
      runRemote,
      onProgress: (value) => self.postMessage({ id, type: 'progress', value }),
    });
  } finally {
    running.delete(id);
  }
}

async function handle({ id, type, ...message }) {
  switch (type) {
    case 'create': {
      engine = Leakscope.create({ backend: message.backend, module: message.module });
      const ready = await engine;
      const reply = {
        backend: ready.backend,
        limits: ready.limits,
        defaults: ready.defaults,
        attacks: ready.attacks,
        auditDefaults: { quick: Leakscope.auditDefaults(true), full: Leakscope.auditDefaults(false) },
      };
      return message.shareModule ? { ...reply, module: Leakscope.wasmModule } : reply;
    }
    case 'inspect':
      return (await started()).inspect(message.csv);
    case 'plan':
      return (await started()).plan(message.csv, message.options, message.workers);
    case 'run':
      return coordinate(id, message);
    case 'auditPlan':
      return (await started()).auditPlan(message.csv, message.options, message.workers);
    case 'audit':
      return audit(id, message);
    default:
      throw new Error(`unknown message type ${JSON.stringify(type)}`);
  }
}

/** Serve invert tasks on a port from the coordinator. */
function serveHelper(port) {
  const mine = new Map();
  port.onmessage = async ({ data: { id, type, ...message } }) => {
    if (type === 'cancel') return mine.get(message.target)?.abort();
    const controller = new AbortController();
    mine.set(id, controller);
    try {
      const control = {
        signal: controller.signal,
        onProgress: (p) => port.postMessage({ id, type: 'progress', value: p }),
      };
      const engine = await started();
      if (type === 'auditCell') {
        port.postMessage({ id, type: 'result', value: await engine.runAuditCell(message.csv, message.options, message.index, control) });
        return;
      }
      const value = await engine.invertMembers(message.csv, message.options, message.range, control);
      port.postMessage({ id, type: 'result', value }, [value.x.buffer, value.probs.buffer]);
    } catch (error) {
      port.postMessage({ id, type: 'error', error: describe(error) });
    } finally {
      mine.delete(id);
    }
  };
}

self.addEventListener('message', async ({ data }) => {
  if (data?.type === 'cancel') {
    running.get(data.target)?.abort();
    return;
  }
  if (data?.type === 'helper') {
    helpers[data.index] = new Helper(data.port);
    return;
  }
  if (data?.type === 'connect') {
    serveHelper(data.port);
    return;
  }
  try {
    self.postMessage({ id: data.id, type: 'result', value: await handle(data) });
  } catch (error) {
    self.postMessage({ id: data.id, type: 'error', error: describe(error) });
  }
});

// The ready-made module worker: `new Worker(new URL('leakscope/worker', import.meta.url), { type: 'module' })`,
// or let `LeakscopeWorker` (./remote.js) start it. The engine runs here, off the page's thread; the file is
// read here too, so a large CSV never freezes the tab.
//
// Messages in:  { id, type: 'create', backend, module?, shareModule? } | { id, type: 'inspect', csv } | { id, type: 'run', csv, options }
//               | { id, type: 'invert', csv, options, range } | { id, type: 'assess', csv, options, parts, seconds }
//               | { type: 'cancel', target: id }
// Messages out: { id, type: 'progress', value } | { id, type: 'result', value } | { id, type: 'error', error }
import { Leakscope } from './index.js';

// Messages after 'create' wait for it, so a caller may send them at once.
let engine = null;
const running = new Map();

function describe(error) {
  return { name: error?.name ?? 'Error', message: error?.message ?? String(error) };
}

function started() {
  if (!engine) throw new Error('the engine is not started: send create first');
  return engine;
}

async function handle({ id, type, ...message }) {
  switch (type) {
    case 'create': {
      engine = Leakscope.create({ backend: message.backend, module: message.module });
      const { backend } = await engine;
      return message.shareModule ? { backend, module: Leakscope.wasmModule } : { backend };
    }
    case 'inspect':
      return (await started()).inspect(message.csv);
    case 'run':
    case 'invert': {
      const controller = new AbortController();
      running.set(id, controller);
      try {
        const ready = await started();
        const control = {
          onProgress: (value) => self.postMessage({ id, type: 'progress', value }),
          signal: controller.signal,
        };
        return await (type === 'run'
          ? ready.run(message.csv, message.options, control)
          : ready.invertMembers(message.csv, message.options, message.range, control));
      } finally {
        running.delete(id);
      }
    }
    case 'assess':
      return (await started()).assess(message.csv, message.options, message.parts, message.seconds);
    default:
      throw new Error(`unknown message type ${JSON.stringify(type)}`);
  }
}

self.addEventListener('message', async ({ data }) => {
  if (data?.type === 'cancel') {
    running.get(data.target)?.abort();
    return;
  }
  try {
    self.postMessage({ id: data.id, type: 'result', value: await handle(data) });
  } catch (error) {
    self.postMessage({ id: data.id, type: 'error', error: describe(error) });
  }
});

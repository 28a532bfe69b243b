// The ready-made module worker: `new Worker(new URL('leakscope/worker', import.meta.url), { type: 'module' })`,
// or let `LeakscopeWorker` (./remote.js) start it. The engine runs here, off the page's thread; a
// table is read here too (a File is read in this worker), so a large CSV never freezes the tab.
//
// One worker coordinates (plans a run, times the backends for `auto`, runs it or splits its
// ensemble, runs an audit's cells); helper workers, connected to it by MessagePorts, invert shares
// and run cells on the CPU. Every request goes through rpc.js (ids, progress, cancel).
//
// From the page:   create {backend, module?, shareModule?, warm?} · load {csv} → {handle, bytes}
//                  · inspect/plan/run/auditPlan/audit {table: handle, options, workers} · drop {table}
//                  · attackUpdate {files: {encoding, update, weights?}, options}
//                  · helper {index, port} (a helper's port, transferred) · connect {port} (to a helper)
// On a helper's port: load {handle, csv} · invert / invertShadow {table, options, range} · auditCell {table, options, index}
import {
  attackUpdate,
  attacks,
  auditDefaults,
  createEngine,
  defaults,
  invertMembers,
  invertShadow,
  limits,
  loadTable,
  runAudit,
  runAuditCell,
  runPlanned,
  toBytes,
  wasmModule,
} from './internal.js';
import { RpcClient, serve } from './rpc.js';

// Requests after 'create' wait for it, so a caller may send them at once.
let engine = null;
// Tables by handle: the wasm table, its bytes (for helpers) and the helpers that hold it.
const tables = new Map();
let nextHandle = 1;
const helpers = [];

function started() {
  if (!engine) throw new Error('the engine is not started: send create first');
  return engine;
}

function tableOf(handle) {
  const entry = tables.get(handle);
  if (!entry) throw new Error(`no table ${handle} is loaded in this worker (it was dropped, or the worker restarted)`);
  return entry;
}

/** Helper `index`, holding table `handle` (sent to it once, on first use). */
async function helperWith(index, handle) {
  const helper = helpers[index];
  if (!helper) throw new Error('the run needs more helper workers than are connected');
  const entry = tableOf(handle);
  if (!entry.helpers.has(index)) {
    entry.helpers.set(index, helper.request('load', { handle, csv: entry.bytes }));
  }
  await entry.helpers.get(index);
  return helper;
}

async function create({ backend, module, shareModule, warm = true }) {
  engine = createEngine(backend, module, warm);
  const ready = await engine;
  const reply = {
    backend: ready.backend,
    limits: limits(),
    defaults: defaults(),
    attacks: attacks(),
    auditDefaults: { quick: auditDefaults(true), full: auditDefaults(false) },
  };
  return shareModule ? { ...reply, module: wasmModule() } : reply;
}

async function load({ csv, handle }) {
  await started();
  const bytes = await toBytes(csv);
  const table = await loadTable(bytes);
  const mine = handle ?? nextHandle++;
  tables.set(mine, { table, bytes, helpers: new Map() });
  return { handle: mine, bytes: table.bytes };
}

function drop({ table }) {
  tables.get(table)?.table.free();
  tables.delete(table);
  return null;
}

/** A run: planned here, its ensemble's shares (when the plan splits it) on the helpers. */
async function run({ table: handle, options, workers }, { signal, progress }) {
  const ready = await started();
  const { table } = tableOf(handle);
  const stop = new AbortController();
  signal.addEventListener('abort', () => stop.abort(signal.reason), { once: true });
  return runPlanned(ready, table, options, {
    signal: stop.signal,
    workers,
    onProgress: progress,
    // One share failing stops the others; a stage's share `index` goes to helper `index`, so every
    // stage and round of the run reuses the same helpers.
    runShare: async (range, onProgress, shareOptions = options, index = 0, request = 'invert') => {
      try {
        const helper = await helperWith(index, handle);
        return await helper.request(request, { table: handle, options: shareOptions, range }, { onProgress, signal: stop.signal });
      } catch (error) {
        stop.abort(error);
        throw error;
      }
    },
  });
}

/** An audit: this worker and each connected helper take the next cell until none is left. */
async function audit({ table: handle, options, workers }, { signal, progress }) {
  const ready = await started();
  const { table } = tableOf(handle);
  const runRemote = helpers.slice(0, Math.max(0, workers - 1)).map((_, i) => async (index, onStep, cellSignal) => {
    const helper = await helperWith(i, handle);
    return helper.request('auditCell', { table: handle, options, index }, { onProgress: (p) => onStep(p.step, p.of), signal: cellSignal });
  });
  return runAudit(ready, table, options, { signal, workers, runRemote, onProgress: progress });
}

serve(self, {
  create,
  load,
  drop,
  warmUp: async () => (await started()).warmUp(),
  inspect: async ({ table }) => (await started(), tableOf(table).table.inspect()),
  plan: async ({ table, options, workers }) => (await started()).plan(tableOf(table).table, options, workers),
  auditPlan: async ({ table, options, workers }) => (await started()).auditPlan(tableOf(table).table, options, workers),
  run,
  audit,
  attackUpdate: async ({ files, options }, { signal, progress }) =>
    attackUpdate(await started(), files, options, { onProgress: progress, signal }),
  // The coordinator's side of a helper.
  helper: ({ index, port }) => {
    helpers[index] = new RpcClient(port);
    return null;
  },
  // A helper's side: serve the coordinator's requests on the port.
  connect: ({ port }) => {
    serve(
      port,
      {
        load,
        invert: async ({ table, options, range }, control) =>
          invertMembers(await started(), tableOf(table).table, options, range, { signal: control.signal, onProgress: control.progress }),
        invertShadow: async ({ table, options, range }, control) =>
          invertShadow(await started(), tableOf(table).table, options, range, { signal: control.signal, onProgress: control.progress }),
        auditCell: async ({ table, options, index }, control) =>
          runAuditCell(await started(), tableOf(table).table, options, index, { signal: control.signal, onProgress: control.progress }),
      },
      // The members' rows move to the coordinator instead of being copied.
      { transfer: (type, value) => (type === 'invert' || type === 'invertShadow' ? [value.x.buffer, value.probs.buffer] : []) },
    );
    return null;
  },
});

// The WebAssembly engine and the share-level pieces the package's own worker splits work with. Not
// a stable API: the public one is `Leakscope` and its tables (./index.js). Every default, threshold
// and decision comes from the engine; this file moves bytes and calls.
import init, {
  Engine,
  Table,
  attacks,
  auditDefaults as engineAuditDefaults,
  auditProgress,
  combineProgress,
  defaults,
  limits,
  privacy as enginePrivacy,
  __panicForTests,
} from '../pkg/leakscope.js';
import { compileModule } from './compile.js';

let ready;
let compiled;
let initialised = false;

function load(module) {
  ready ??= (async () => {
    compiled = module ?? (await compileModule());
    await init({ module_or_path: compiled });
    initialised = true;
  })();
  return ready;
}

export async function toBytes(csv) {
  if (typeof csv === 'string') return new TextEncoder().encode(csv);
  if (csv instanceof Uint8Array) return csv;
  if (csv instanceof ArrayBuffer) return new Uint8Array(csv);
  if (ArrayBuffer.isView(csv)) return new Uint8Array(csv.buffer, csv.byteOffset, csv.byteLength);
  if (csv && typeof csv.arrayBuffer === 'function') return new Uint8Array(await csv.arrayBuffer());
  throw new TypeError('csv must be a string, Uint8Array, ArrayBuffer, Blob or File');
}

/**
 * A Rust panic traps WebAssembly with a bare "unreachable": give the error the panic's message (the
 * engine's panic hook leaves it in `globalThis.__leakscopePanic`). The name stays RuntimeError: the
 * instance is unusable afterwards, and callers that own a worker replace it.
 */
export async function guarded(task) {
  try {
    return await task();
  } catch (error) {
    if (error instanceof WebAssembly.RuntimeError) {
      const message = globalThis.__leakscopePanic;
      globalThis.__leakscopePanic = undefined;
      const wrapped = new Error(message ? `the engine panicked: ${message}` : `the engine crashed: ${error.message}`);
      wrapped.name = 'RuntimeError';
      wrapped.cause = error;
      throw wrapped;
    }
    throw error;
  }
}

async function cancellable(signal, task) {
  signal?.throwIfAborted();
  try {
    return await guarded(task);
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw error;
  }
}

/** The wasm objects behind a public engine or table (not reachable from the public entry). */
export const RAW = Symbol('leakscope.raw');

/** Start the engine: compile (or take `module`) once per thread, then an engine on `backend`. */
/**
 * Start an engine. `warm`: run the CPU engine's code once in the background, so that the browser
 * has optimised it before the first run (a run asked meanwhile cuts it short); helper workers,
 * which only invert, start without it.
 */
export async function createEngine(backend, module, warm = true) {
  await load(module);
  return guarded(() => Engine.create(backend, warm));
}

/** The compiled WebAssembly module (after an engine started), to hand to engines in other workers. */
export const wasmModule = () => compiled;

/** A CSV read into the engine's memory once; `free()` gives the memory back. */
export async function loadTable(csv) {
  const bytes = await toBytes(csv);
  return guarded(() => new Table(bytes));
}

// The engine's synchronous answers that need no table, reachable as statics of `Leakscope`: they
// need the module, so say so instead of failing inside the bindings.
function afterCreate(name, call) {
  return (...args) => {
    if (!initialised) throw new Error(`leakscope: await Leakscope.create() before calling Leakscope.${name}`);
    return call(...args);
  };
}
export const auditDefaults = afterCreate('auditDefaults', engineAuditDefaults);
export const privacy = afterCreate('privacy', enginePrivacy);

export { attacks, combineProgress, defaults, limits };

/**
 * Attack an update that came from elsewhere: `encoding` (the JSON `leakscope encoding` writes),
 * `update` and, unless the update is a leakscope-update/1 JSON, `weights` (safetensors or numpy
 * .npz; each a string, bytes, Blob or File). The engine reads the formats and fills the options
 * the files decide (rows, hidden widths, labels).
 */
export async function attackUpdate(engine, { encoding, update, weights } = {}, options = {}, { onProgress, signal } = {}) {
  if (encoding == null || update == null) throw new TypeError('attackUpdate needs {encoding, update} (and weights, unless the update is JSON)');
  const text = typeof encoding === 'string' ? encoding : new TextDecoder().decode(await toBytes(encoding));
  const updateBytes = await toBytes(update);
  const weightBytes = weights == null ? undefined : await toBytes(weights);
  return cancellable(signal, () => engine.attackUpdate(text, updateBytes, weightBytes, options, onProgress ?? undefined, signal));
}

/**
 * One attack as the engine plans it: time the candidates if `auto` has not yet measured this problem,
 * then run on the chosen backend, the ensemble split over `runShare` (one call per share, with its
 * index within its stage, which names its worker, the options of the stage it runs and the request:
 * 'invert', or 'invertShadow' for the shadow client's members) when the plan splits it. `engine` and
 * `table` are the wasm objects.
 */
export async function runPlanned(engine, table, options, { onProgress, signal, workers = 1, runShare = null } = {}) {
  const progress = onProgress ?? undefined;
  let plan = engine.plan(table, options, workers);
  if (plan.probe) {
    const { whole, cpu_share: share } = plan.probe;
    const rates = [
      await cancellable(signal, () => engine.probe(table, options, 'webgpu', whole.first, whole.count, workers, progress, signal)),
      await cancellable(signal, () => engine.probe(table, options, 'cpu', share.first, share.count, workers, progress, signal)),
    ];
    engine.decide(table, options, rates, workers);
    plan = engine.plan(table, options, workers);
  }
  if (plan.kind !== 'cpu' || plan.shares.length < 2 || !runShare) {
    return cancellable(signal, () => engine.run(table, options, workers, progress, signal));
  }
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  // The engine may answer once the batch is proved: the shares first run its few steps, and the
  // engine says whether they proved every row. Progress counts the steps of both stages.
  const early = await cancellable(signal, () => engine.earlyAnswer(table, options, plan.shares.length));
  // `ranges` run on the workers, each share's progress mapped by `place` into the whole run's.
  const shares = (ranges, stageOptions, place, request = 'invert') => {
    const latest = ranges.map(() => null);
    return Promise.all(
      ranges.map((range, i) =>
        runShare(range, (p) => {
          latest[i] = p;
          const joined = combineProgress(latest, ranges);
          if (joined) onProgress?.(place(joined));
        }, stageOptions, i, request),
      ),
    );
  };
  const after = (before) => (p) => (early ? { ...p, step: before + p.step, of: early.planned } : p);
  if (early) {
    // Stage after stage (the first members, then the rest), until they prove every row.
    const most = early.stages.flat().reduce((n, r) => n + r.count, 0);
    const quick = [];
    for (const stage of early.stages) {
      const first = stage[0].first;
      const count = stage.reduce((n, r) => n + r.count, 0);
      const place = (p) => ({ ...p, step: Math.floor((first * early.steps + p.step * count) / most), of: early.planned });
      quick.push(...(await shares(stage, { ...options, iterations: early.steps }, place)));
      // A cancel that came while the stage's shares finished still cancels.
      const answer = await cancellable(signal, () => engine.assessEarly(table, options, quick, elapsed(), plan.shares.length));
      if (answer) return answer;
    }
  }
  // Where the attack will calibrate its fallback on a shadow client (no proof can reach every row),
  // the shadow's members run split over the workers too, as many as the batch's ensemble pools:
  // after the rounds where its stopping rule runs them (the count is known once they settle),
  // else first, the whole ensemble. Progress counts both halves.
  const shadowPlanned = await cancellable(signal, () => engine.shadowShares(table, options, plan.shares.length));
  const rounds = await cancellable(signal, () => engine.ensembleRounds(table, options, plan.shares.length));
  if (rounds) {
    const most = rounds.flat().reduce((n, r) => n + r.count, 0);
    const halves = (q) => (shadowPlanned ? { ...q, of: 2 * q.of } : q);
    const parts = [];
    for (const round of rounds) {
      const first = round[0].first;
      const count = round.reduce((n, r) => n + r.count, 0);
      const place = (p) => halves({ ...p, step: Math.floor((first * p.of + p.step * count) / most) });
      parts.push(...(await shares(round, options, place)));
      let shadow = null;
      if (shadowPlanned) {
        const members = await cancellable(signal, () => engine.settledMembers(table, options, parts));
        if (members == null) continue;
        const ranges = await cancellable(signal, () => engine.shadowShares(table, options, plan.shares.length, members));
        shadow = await shares(ranges, options, (p) => ({ ...p, phase: 'shadow', step: p.of + p.step, of: 2 * p.of }), 'invertShadow');
      }
      const answer = await cancellable(signal, () => engine.assessRound(table, options, parts, elapsed(), plan.shares.length, shadow));
      if (answer) return answer;
    }
    throw new Error('the ensemble ran every round without a report');
  }
  let shadow = null;
  let before = 0;
  if (shadowPlanned) {
    shadow = await shares(shadowPlanned, options, (p) => {
      before = p.of;
      return { ...p, phase: 'shadow', of: 2 * p.of };
    }, 'invertShadow');
  }
  // The batch's own steps come after the shadow's: each stage's mapping, then the shadow's half.
  const report = (place) => (shadow ? (p) => {
    const q = place(p);
    return { ...q, step: before + q.step, of: before + q.of };
  } : place);
  const parts = await shares(plan.shares, options, report(after(early ? early.steps : 0)));
  return guarded(() => engine.assess(table, options, parts, elapsed(), plan.shares.length, shadow));
}

/**
 * An audit: the engine plans its grid (cells dearest first); this engine and `runRemote`'s runners
 * (one per other worker) each take the next cell until none is left; the engine joins the results
 * into the report. One runner failing stops the others.
 */
export async function runAudit(engine, table, options, { onProgress, signal, workers = 1, runRemote = [] } = {}) {
  const plan = await guarded(() => engine.auditPlan(table, options, workers));
  const stop = new AbortController();
  const abort = () => stop.abort(signal.reason);
  signal?.addEventListener('abort', abort, { once: true });
  const queue = plan.cells.map((c) => c.index);
  const done = [];
  const running = new Map();
  const results = [];
  const report = () =>
    onProgress?.(auditProgress(plan, done, [...running].map(([index, [step, of]]) => ({ index, step, of }))));
  const local = (index, onStep) =>
    cancellable(stop.signal, () => engine.runAuditCell(table, options, index, (p) => onStep(p.step, p.of), stop.signal));
  const runners = [local, ...runRemote].slice(0, plan.workers);
  try {
    report();
    await Promise.all(
      runners.map(async (run) => {
        while (queue.length && !stop.signal.aborted) {
          const index = queue.shift();
          running.set(index, [0, undefined]);
          try {
            results.push(
              await run(index, (step, of) => {
                if (running.has(index)) running.set(index, [step, of]);
                report();
              }, stop.signal),
            );
          } catch (error) {
            stop.abort(error);
            throw error;
          }
          running.delete(index);
          done.push(index);
          report();
        }
      }),
    );
    if (signal?.aborted) throw signal.reason;
  } finally {
    signal?.removeEventListener('abort', abort);
  }
  return guarded(() => engine.auditReport(table, options, results));
}

/** Invert members `range.first .. + range.count` only: one worker's share of a split ensemble. */
export function invertMembers(engine, table, options, { first, count }, { onProgress, signal } = {}) {
  return cancellable(signal, () => engine.invertMembers(table, options, first, count, onProgress ?? undefined, signal ?? undefined));
}

/** Invert members `range` of the shadow client's ensemble (the engine's `shadowShares`): one worker's share. */
export function invertShadow(engine, table, options, { first, count }, { onProgress, signal } = {}) {
  return cancellable(signal, () => engine.invertShadow(table, options, first, count, onProgress ?? undefined, signal ?? undefined));
}

/**
 * The report of an ensemble inverted in shares over `workers` workers; `seconds`: wall time measured;
 * `shadow`: the shadow client's shares, where the engine's `shadowShares` asked for them.
 */
export function assess(engine, table, options, parts, seconds, workers = parts.length, shadow = null) {
  return guarded(() => engine.assess(table, options, parts, seconds, workers, shadow));
}

/** Run cell `index` of an audit (as a worker of a split audit does); resolves to its CellResult. */
export function runAuditCell(engine, table, options, index, { onProgress, signal } = {}) {
  return cancellable(signal, () => engine.runAuditCell(table, options, index, onProgress ?? undefined, signal ?? undefined));
}

/** Test hook: make the engine panic with `message` (checks that a panic's message reaches callers). */
export async function panicForTests(message) {
  await load();
  return guarded(() => __panicForTests(message));
}

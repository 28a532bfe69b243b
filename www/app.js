// The page's controller: file in, schema, settings, a run in the engine's worker, results out.
// The engine (./leakscope/, copied from the npm package by scripts/build-wasm.sh) does all the work.
import { LeakscopeWorker } from './leakscope/js/remote.js';
import { LossChart } from './chart.js';
import { bytes, renderBuckets, renderCells, renderLegend, renderSchema, renderSummary } from './render.js';
import { downloadCsv, downloadJson } from './export.js';

const DEMO = {
  url: 'sample/adult-sample.csv',
  name: 'adult-sample.csv',
  label: 'salary',
  settings: { attack: 'tableak', batchSize: 8, ensemble: 30, iterations: 1500, labels: 'known', seed: 0 },
};

const $ = (id) => document.getElementById(id);
const ui = {
  backendChoice: $('backend-choice'),
  backend: $('backend'),
  dropzone: $('dropzone'),
  file: $('file'),
  demo: $('demo'),
  fileInfo: $('file-info'),
  error: $('error'),
  schemaSection: $('schema-section'),
  schemaSummary: $('schema-summary'),
  schemaBody: document.querySelector('#schema tbody'),
  settingsSection: $('settings-section'),
  settings: $('settings'),
  run: $('run'),
  runStatus: $('run-status'),
  progressBox: $('progress-box'),
  progress: $('progress'),
  progressText: $('progress-text'),
  results: $('results'),
  summary: $('summary'),
  resultsInfo: $('results-info'),
  buckets: $('buckets'),
  legend: $('legend'),
  layout: $('layout'),
  cells: $('cells'),
};

const chart = new LossChart($('loss-curve'));
// ?backend=auto|webgpu|cpu picks the engine; ?workers=N caps the workers a CPU run splits over.
const params = new URLSearchParams(location.search);
const query = {
  backend: params.get('backend'),
  workers: params.has('workers') ? Math.max(1, Number.parseInt(params.get('workers'), 10) || 1) : undefined,
};
const state = {
  engine: null,
  engineReady: null,
  file: null,
  fileName: '',
  schema: null,
  label: null,
  kinds: {},
  ignore: new Set(),
  running: null,
  report: null,
};

function showError(message) {
  ui.error.textContent = message;
  ui.error.hidden = !message;
}

function describe(error) {
  return error?.message ?? String(error);
}

// ---- engine ---------------------------------------------------------------------------------------

let generation = 0;

function startEngine(choice) {
  const mine = ++generation;
  state.engine?.terminate();
  state.engine = null;
  ui.backend.textContent = 'starting…';
  ui.backend.className = 'badge';
  document.body.dataset.engine = 'starting';
  state.engineReady = LeakscopeWorker.create({ backend: choice, workers: query.workers }).then(
    (engine) => {
      // A newer choice was made while this one started: it is not wanted any more.
      if (mine !== generation) {
        engine.terminate();
        return state.engineReady;
      }
      state.engine = engine;
      // The form starts from the engine's defaults (once: later engines keep what the user set).
      if (mine === 1) writeSettings(pick(engine.defaults, ['attack', 'batchSize', 'ensemble', 'iterations', 'labels', 'seed']));
      showBackend(engine.backend.label, engine.backend.candidates[0]?.kind);
      // The largest file the engine reads (the table is held in the tab's memory as text).
      $('max-size').textContent = bytes(engine.limits.maxCsvBytes);
      document.body.dataset.engine = 'ready';
      return engine;
    },
    (error) => {
      if (mine !== generation) return state.engineReady;
      ui.backend.textContent = 'unavailable';
      ui.backend.className = 'badge failed';
      document.body.dataset.engine = 'failed';
      showError(`The ${choice} engine could not start: ${describe(error)}. Choose another engine above.`);
      throw error;
    },
  );
  state.engineReady.catch(() => {});
}

const pick = (object, keys) => Object.fromEntries(keys.map((k) => [k, object[k]]));

function showBackend(label, kind) {
  ui.backend.textContent = label;
  ui.backend.className = `badge ${kind === 'cpu' ? 'cpu' : 'gpu'}`;
}

ui.backendChoice.addEventListener('change', () => {
  state.running?.abort();
  showError('');
  startEngine(ui.backendChoice.value);
});

// ---- file and schema ------------------------------------------------------------------------------

// Each finished load (read or refused) bumps data-loads on <body>: tests and scripts wait on it.
function loaded(ok) {
  document.body.dataset.loads = String(Number(document.body.dataset.loads ?? 0) + 1);
  return ok;
}

async function loadFile(file, name, preferredLabel = null) {
  showError('');
  ui.results.hidden = true;
  ui.schemaSection.hidden = true;
  ui.settingsSection.hidden = true;
  ui.progressBox.hidden = true;
  ui.runStatus.textContent = '';
  state.file = null;
  state.report = null;
  try {
    const engine = await state.engineReady;
    const limit = engine.limits.maxCsvBytes;
    if (file.size > limit) {
      ui.fileInfo.textContent = '';
      showError(
        `${name} is ${bytes(file.size)}; this page handles files up to ${bytes(limit)}, because the whole table ` +
          'is held in the tab’s memory. Use a sample of the rows, or the command-line tool (leakscope attack --csv …).',
      );
      return loaded(false);
    }
    ui.fileInfo.textContent = `Reading ${name} (${bytes(file.size)})…`;
    const schema = await engine.inspect(file);
    state.file = file;
    state.fileName = name;
    state.schema = schema;
    state.kinds = {};
    state.ignore = new Set();
    const names = schema.columns.map((c) => c.name);
    state.label = names.includes(preferredLabel) ? preferredLabel : (schema.label_candidates[0] ?? names.at(-1));
    ui.fileInfo.textContent = `${name}: ${bytes(file.size)}, ${schema.rows} rows, ${schema.columns.length} columns.`;
    drawSchema();
    ui.schemaSection.hidden = false;
    ui.settingsSection.hidden = false;
    return loaded(true);
  } catch (error) {
    ui.fileInfo.textContent = '';
    showError(`${name} could not be read: ${describe(error)}`);
    return loaded(false);
  }
}

function drawSchema() {
  const s = state.schema;
  const missing = s.rows_with_missing
    ? `${s.rows_with_missing} rows have a missing value and will be dropped.`
    : 'No missing values.';
  const candidates = s.label_candidates.length
    ? `Likely labels: ${s.label_candidates.slice(0, 5).join(', ')}.`
    : 'No column looks like a label (2–20 distinct values): choose one.';
  ui.schemaSummary.textContent = `${s.rows} rows. ${missing} ${candidates} The label is what the model predicts; switch a column’s kind if it was guessed wrong.`;
  renderSchema(ui.schemaBody, s, state, (change) => {
    if (change.label) {
      state.label = change.label;
      state.ignore.delete(change.label);
    }
    if (change.kind) {
      const [name, kind] = change.kind;
      const inferred = s.columns.find((c) => c.name === name).kind;
      if (kind === inferred) delete state.kinds[name];
      else state.kinds[name] = kind;
    }
    if (change.use) {
      const [name, use] = change.use;
      if (use) state.ignore.delete(name);
      else state.ignore.add(name);
    }
    drawSchema();
  });
}

ui.file.addEventListener('change', () => {
  const file = ui.file.files[0];
  if (file) loadFile(file, file.name);
  ui.file.value = '';
});

for (const type of ['dragenter', 'dragover']) {
  ui.dropzone.addEventListener(type, (e) => {
    e.preventDefault();
    ui.dropzone.classList.add('over');
  });
}
for (const type of ['dragleave', 'drop']) {
  ui.dropzone.addEventListener(type, () => ui.dropzone.classList.remove('over'));
}
ui.dropzone.addEventListener('drop', (e) => {
  e.preventDefault();
  const file = e.dataTransfer.files[0];
  if (file) loadFile(file, file.name);
});
// A file dropped outside the zone must not make the browser navigate away from the page.
window.addEventListener('dragover', (e) => e.preventDefault());
window.addEventListener('drop', (e) => e.preventDefault());

// ---- running --------------------------------------------------------------------------------------

function readSettings() {
  const f = new FormData(ui.settings);
  const int = (name) => Number.parseInt(f.get(name), 10);
  return {
    attack: f.get('attack'),
    batchSize: int('batchSize'),
    ensemble: int('ensemble'),
    iterations: int('iterations'),
    labels: f.get('labels'),
    seed: int('seed'),
  };
}

function writeSettings(values) {
  for (const [name, value] of Object.entries(values)) ui.settings.elements[name].value = String(value);
}

function setRunning(running) {
  ui.run.textContent = running ? 'Cancel' : 'Run attack';
  ui.run.classList.toggle('cancel', running);
  document.body.dataset.state = running ? 'running' : 'idle';
  for (const control of [ui.file, ui.demo, ui.backendChoice, ...ui.settings.elements, ...ui.schemaBody.querySelectorAll('input, select')]) {
    control.disabled = running || (control.classList.contains('use') && control.closest('tr').classList.contains('is-label'));
  }
}

async function run() {
  if (!state.file) return;
  const settings = readSettings();
  for (const [name, value] of Object.entries(settings)) {
    if (typeof value === 'number' && !(Number.isInteger(value) && value >= 0)) {
      showError(`${name} must be a whole number`);
      return;
    }
  }
  showError('');
  const options = { label: state.label, kinds: { ...state.kinds }, ignore: [...state.ignore], ...settings };
  const controller = new AbortController();
  state.running = controller;
  setRunning(true);
  ui.results.hidden = true;
  ui.progressBox.hidden = false;
  ui.progress.value = 0;
  ui.progressText.textContent = 'starting…';
  ui.runStatus.textContent = '';
  chart.reset(settings.attack === 'random' ? 1 : settings.iterations);
  let last = null;
  try {
    const engine = await state.engineReady;
    const report = await engine.run(state.file, options, {
      signal: controller.signal,
      onProgress: (p) => {
        last = p;
        ui.progress.value = p.of ? p.step / p.of : 0;
        const loss = p.loss === null ? '' : `, loss ${p.loss.toExponential(2)}`;
        if (p.phase === 'invert') {
          ui.progressText.textContent = `step ${p.step} of ${p.of}${loss}, ${p.elapsed.toFixed(1)} s`;
          chart.add(p.step, p.loss);
        } else {
          // auto times the backends on a few steps first ("time wgpu", "time cpu").
          ui.progressText.textContent = `${p.phase.replace('time', 'timing')}: step ${p.step}`;
        }
      },
    });
    state.report = report;
    showBackend(report.backend.label, report.backend.kind);
    ui.progress.value = 1;
    ui.runStatus.textContent = `Done in ${report.seconds.toFixed(1)} s.`;
    showResults(report);
  } catch (error) {
    if (error?.name === 'AbortError') {
      ui.runStatus.textContent = `Cancelled${last ? ` at step ${last.step} of ${last.of}` : ''}; nothing was kept.`;
    } else if (error?.name === 'RuntimeError') {
      showError(`The engine crashed (${describe(error)}); it has been restarted. Try again, or choose another engine above.`);
    } else {
      showError(`The attack could not run: ${describe(error)}`);
    }
  } finally {
    state.running = null;
    setRunning(false);
    // Each settled run bumps data-runs on <body>: tests and scripts wait on it (it cannot be missed,
    // unlike a state that may flip back before anyone looks).
    document.body.dataset.runs = String(Number(document.body.dataset.runs ?? 0) + 1);
  }
}

function showResults(report) {
  renderSummary(ui.summary, ui.resultsInfo, report);
  renderBuckets(ui.buckets, report);
  renderLegend(ui.legend, report);
  renderCells(ui.cells, report, ui.layout.value);
  ui.results.hidden = false;
  document.body.dataset.results = 'shown';
  ui.results.scrollIntoView({ behavior: 'smooth', block: 'start' });
}

ui.layout.addEventListener('change', () => state.report && renderCells(ui.cells, state.report, ui.layout.value));

ui.run.addEventListener('click', () => {
  if (state.running) state.running.abort();
  else run();
});

ui.demo.addEventListener('click', async () => {
  showError('');
  ui.fileInfo.textContent = 'Loading the demo sample…';
  try {
    const response = await fetch(DEMO.url);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const blob = await response.blob();
    if (await loadFile(blob, `${DEMO.name} (Adult census sample, UCI, CC BY 4.0)`, DEMO.label)) {
      writeSettings(DEMO.settings);
      await run();
    }
  } catch (error) {
    ui.fileInfo.textContent = '';
    showError(`The demo sample could not be loaded: ${describe(error)}`);
  }
});

$('download-json').addEventListener('click', () => state.report && downloadJson(state.report, state.fileName));
$('download-csv').addEventListener('click', () => state.report && downloadCsv(state.report, state.fileName));

if (query.backend && [...ui.backendChoice.options].some((o) => o.value === query.backend)) ui.backendChoice.value = query.backend;
startEngine(ui.backendChoice.value);

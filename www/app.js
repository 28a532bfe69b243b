// The page's controller: file in, schema, settings, a run in the engine's worker, results out.
// The engine (./leakscope/, copied from the npm package by scripts/build-wasm.sh) does all the work.
import { LeakscopeWorker, compileEngine } from './leakscope/js/remote.js';
import { LossChart } from './chart.js';
import { bytes, el, renderBuckets, renderCells, renderLegend, renderSchema, renderSummary } from './render.js';
import { renderAudit } from './audit.js';
import { setupReceived } from './received.js';
import { downloadAudit, downloadCsv, downloadJson } from './export.js';

const DEMO = {
  url: 'sample/adult-sample.csv',
  name: 'adult-sample.csv',
  label: 'salary',
  // The engine's default attack and settings on a batch of 8 rows: seconds in a tab.
  batchSize: 8,
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
  schemaReadAs: $('schema-read-as'),
  schemaWarnings: $('schema-warnings'),
  schemaBody: document.querySelector('#schema tbody'),
  settingsSection: $('settings-section'),
  settings: $('settings'),
  run: $('run'),
  audit: $('audit'),
  auditSettings: $('audit-settings'),
  auditResults: $('audit-results'),
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
  // The file loaded into the current engine: {engine, table}; loaded again when the engine changes.
  loaded: null,
  fileName: '',
  schema: null,
  label: null,
  kinds: {},
  ignore: new Set(),
  include: new Set(),
  running: null,
  report: null,
  audit: null,
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
// The engine's module downloads and compiles here while the worker starts (index.html preloads
// it), and every engine started later reuses it.
const engineModule = compileEngine(new URL('leakscope/pkg/leakscope_bg.wasm', document.baseURI));
engineModule.catch(() => {}); // a failure reaches the engine's start, which shows it

function startEngine(choice) {
  const mine = ++generation;
  state.engine?.terminate();
  state.engine = null;
  ui.backend.textContent = 'starting…';
  ui.backend.className = 'badge';
  document.body.dataset.engine = 'starting';
  state.engineReady = LeakscopeWorker.create({ backend: choice, workers: query.workers, module: engineModule }).then(
    (engine) => {
      // A newer choice was made while this one started: it is not wanted any more.
      if (mine !== generation) {
        engine.terminate();
        return state.engineReady;
      }
      state.engine = engine;
      // The form starts from the engine's attacks and defaults (once: later engines keep what the
      // user set).
      if (mine === 1) {
        offerAttacks(engine.attacks);
        writeSettings(pick(engine.defaults, [...SETTINGS, ...FEDERATION, ...RECIPE]));
        attackChanged();
        writeAuditSettings(engine.auditDefaults.quick);
      }
      showBackend(engine.backend.label, engine.backend.candidates[0]?.kind);
      // The largest file the engine reads (the table is held in the tab's memory as text).
      $('max-size').textContent = bytes(engine.limits.maxCsvBytes);
      document.body.dataset.engine = 'ready';
      // The engine warms up in its worker while the user picks a table (a run cuts it short):
      // marked for tests and benchmarks, which wait for it as a user would.
      engine.warmUp().then(
        () => mine === generation && (document.body.dataset.warm = 'done'),
        () => {},
      );
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
  ui.auditResults.hidden = true;
  ui.schemaSection.hidden = true;
  ui.settingsSection.hidden = true;
  ui.progressBox.hidden = true;
  ui.runStatus.textContent = '';
  state.file = null;
  state.loaded?.table.free();
  state.loaded = null;
  state.report = null;
  state.audit = null;
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
    const table = await engine.loadTable(file);
    const schema = await table.inspect();
    state.file = file;
    state.loaded = { engine, table };
    state.fileName = name;
    state.schema = schema;
    state.kinds = {};
    state.ignore = new Set();
    state.include = new Set();
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

// The file as a table of the current engine: another engine (the backend was changed) reads it anew.
async function loadedTable() {
  const engine = await state.engineReady;
  if (state.loaded?.engine !== engine) state.loaded = { engine, table: await engine.loadTable(state.file) };
  return state.loaded.table;
}

// How the table is read, as the engine's RunOptions take it: the same for a run and an audit.
function tableOptions() {
  return { label: state.label, kinds: { ...state.kinds }, ignore: [...state.ignore], include: [...state.include] };
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
  // How the engine read the file, and every decision it took on its own: shown, never silent.
  const leftOut = s.columns.some((c) => c.treatment === 'identifier' || c.treatment === 'index');
  ui.schemaReadAs.textContent = `Read as ${s.read_as}.${leftOut ? ' Columns left out by default are unticked under “use”: tick one to put it back.' : ''}`;
  ui.schemaWarnings.replaceChildren(...s.warnings.map((w) => el('li', { text: w })));
  ui.schemaWarnings.hidden = s.warnings.length === 0;
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
      const [name, use, leftOut] = change.use;
      if (leftOut) {
        if (use) state.include.add(name);
        else {
          state.include.delete(name);
          delete state.kinds[name];
        }
      } else if (use) state.ignore.delete(name);
      else state.ignore.add(name);
    }
    drawSchema();
  });
  drawSensitive();
}

// A column setting's choice (the attribute attack's sensitive column): the table's categorical
// columns other than the label.
function drawSensitive() {
  const s = state.schema;
  const select = ui.settings.querySelector('#attack-settings select[data-input="column"]');
  if (!s || !select) return;
  const before = select.value;
  const used = (c) => (c.treatment === 'used' ? !state.ignore.has(c.name) : state.include.has(c.name));
  const names = s.columns
    .filter((c) => c.name !== state.label && used(c) && (state.kinds[c.name] ?? c.kind) === 'categorical')
    .map((c) => c.name);
  select.replaceChildren(...names.map((n) => el('option', { value: n, text: n })));
  if (names.includes(before)) select.value = before;
}

// The attack choice, from the engine's description of the attacks it offers.
function offerAttacks(attacks) {
  state.attacks = new Map(attacks.map((a) => [a.name, a]));
  ui.settings.elements.attack.replaceChildren(
    ...attacks.map((a) => el('option', { value: a.name, text: a.label, title: a.summary })),
  );
}

// The engine's default of one of an attack's own settings, as a form hint: "30 (FedAvg 15)".
function settingHint(attack, option) {
  const input = attack?.settings.find((s) => s.option === option)?.input;
  return input ? wholeHint(input) : 'not used';
}

function wholeHint(input) {
  if (input.kind !== 'whole') return '';
  return input.default === input.defaultFedavg ? String(input.default) : `${input.default} (FedAvg ${input.defaultFedavg})`;
}

// The chosen attack's form: its summary, its own settings as the engine describes them (with the
// value a page starts from), its ensemble's default, and the protocol it faces unless told
// otherwise.
function attackChanged() {
  const chosen = state.attacks?.get(ui.settings.elements.attack.value);
  $('attack-hint').textContent = chosen?.summary ?? '';
  // Blank: the attack's own ensemble, as the engine describes it.
  ui.settings.elements.ensemble.placeholder = settingHint(chosen, 'ensemble');
  const own = (chosen?.settings ?? []).filter((s) => s.option !== 'ensemble');
  $('attack-settings').replaceChildren(...own.map(settingControl));
  drawSensitive();
  if (chosen) {
    ui.settings.elements.protocol.value = chosen.protocols[0];
    // An attack that faces local training by default shows it.
    if (chosen.protocols[0] === 'fedavg') $('federation').open = true;
  }
}

// One setting's control: a number, a choice, a column of the table or a switch.
function settingControl(s) {
  const attrs = { name: s.option, title: s.hint, 'data-input': s.input.kind };
  let control;
  switch (s.input.kind) {
    case 'whole':
      control = el('input', { ...attrs, type: 'number', min: s.input.min, max: s.input.max, placeholder: wholeHint(s.input), value: s.input.quick ?? s.input.default });
      break;
    case 'choice':
      control = el('select', attrs, ...s.input.values.map((v) => el('option', { value: v, text: v })));
      control.value = s.input.default;
      break;
    case 'column':
      control = el('select', attrs);
      break;
    default:
      control = el('input', { ...attrs, type: 'checkbox', checked: s.input.default });
  }
  return el('label', { 'data-setting': s.option }, `${s.label[0].toUpperCase()}${s.label.slice(1)} `, control);
}
ui.settings.elements.attack.addEventListener('change', attackChanged);

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

const SETTINGS = ['attack', 'batchSize', 'ensemble', 'iterations', 'labels', 'seed'];
const FEDERATION = ['protocol', 'localEpochs', 'localBatch', 'clientLr', 'clients', 'clip', 'noise', 'trainingEpochs'];
const WHOLE = ['batchSize', 'ensemble', 'iterations', 'seed', 'localEpochs', 'localBatch', 'clients', 'trainingEpochs'];
// FedAvg's client beyond its epochs, batch and lr: its optimiser (torch.optim's settings) and the
// order of its rows, as the engine's options name them.
const RECIPE = ['optimizer', 'momentum', 'nesterov', 'weightDecay', 'betas', 'adamEps', 'localOrder'];

// The form's values as the engine's options; a blank optional number (the clip norm) is left out.
function readSettings() {
  const f = new FormData(ui.settings);
  const out = {};
  for (const name of [...SETTINGS, ...FEDERATION]) {
    const raw = String(f.get(name) ?? '').trim();
    if (name === 'attack' || name === 'labels' || name === 'protocol') out[name] = raw;
    else if (raw === '') {
      // Blank: no clipping, or the attack's own ensemble.
      if (name !== 'clip' && name !== 'ensemble') throw new Error(`${label(ui.settings, name)} needs a value`);
    } else {
      const value = Number(raw);
      if (!Number.isFinite(value) || value < 0 || (WHOLE.includes(name) && !Number.isInteger(value))) {
        throw new Error(`${label(ui.settings, name)} must be a ${WHOLE.includes(name) ? 'whole number' : 'number'} ≥ 0, not “${raw}”`);
      }
      out[name] = value;
    }
  }
  const kind = String(f.get('activation') ?? 'relu');
  out.activation = kind === 'leaky_relu' ? { kind, slope: Number(f.get('leakySlope')) } : { kind };
  out.head = String(f.get('head') ?? 'softmax');
  out.task = String(f.get('task') ?? 'classification');
  // The engine refuses the client's optimiser and row order on FedSGD (one gradient, no local
  // training): they go with FedAvg only.
  if (out.protocol === 'fedavg') Object.assign(out, readRecipe(f));
  // The chosen attack's own settings, read as the engine describes them; blank: its default.
  for (const s of state.attacks?.get(out.attack)?.settings ?? []) {
    if (s.option === 'ensemble') continue;
    const raw = String(f.get(s.option) ?? '').trim();
    if (s.input.kind === 'flag') out[s.option] = f.get(s.option) !== null;
    else if (s.input.kind === 'column') {
      if (!raw) throw new Error(`choose the ${s.label}: ${s.hint}`);
      out[s.option] = raw;
    } else if (s.input.kind === 'choice') out[s.option] = raw;
    else if (raw !== '') out[s.option] = wholeNumber(s.option, raw);
  }
  return out;
}

// FedAvg's recipe from the form: the optimiser with the settings it takes (momentum and Nesterov
// SGD's, which the engine refuses beside Adam; betas and ε Adam's and AdamW's), its weight decay and
// the rows' order.
function readRecipe(f) {
  const number = (name, ok, what) => {
    const raw = String(f.get(name) ?? '').trim();
    if (raw === '') throw new Error(`${label(ui.settings, name)} needs a value`);
    const value = Number(raw);
    if (!Number.isFinite(value) || !ok(value)) throw new Error(`${label(ui.settings, name)} must be ${what}, not “${raw}”`);
    return value;
  };
  const optimizer = String(f.get('optimizer') ?? 'sgd');
  const out = { optimizer, weightDecay: number('weightDecay', (v) => v >= 0, 'a number ≥ 0') };
  if (optimizer === 'sgd') {
    out.momentum = number('momentum', (v) => v >= 0 && v < 1, 'a number in [0, 1)');
    out.nesterov = f.get('nesterov') !== null;
    if (out.nesterov && out.momentum === 0) throw new Error('Nesterov needs a momentum > 0 (as torch.optim.SGD)');
  } else {
    const raw = String(f.get('betas') ?? '').trim();
    const parts = raw.split(',').map((v) => v.trim());
    const betas = parts.map(Number);
    if (parts.length !== 2 || parts.includes('') || !betas.every((b) => Number.isFinite(b) && b >= 0 && b < 1)) {
      throw new Error(`${label(ui.settings, 'betas')} must be two numbers in [0, 1) separated by a comma (as 0.9, 0.999), not “${raw}”`);
    }
    out.betas = betas;
    out.adamEps = number('adamEps', (v) => v > 0, 'a number > 0');
  }
  out.localOrder = String(f.get('localOrder') ?? 'given');
  return out;
}

function wholeNumber(name, raw) {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${label(ui.settings, name)} must be a whole number ≥ 1, not “${raw}”`);
  return value;
}

function label(form, name) {
  return form.elements[name].closest('label').firstChild.textContent.trim();
}

// Values as the engine writes them into the form: a switch is ticked or not, a list (Adam's betas)
// comma-separated, a blank for null; one the engine does not give keeps the form's own.
function writeSettings(values) {
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined) continue;
    const control = ui.settings.elements[name];
    if (control.type === 'checkbox') control.checked = Boolean(value);
    else control.value = value === null ? '' : Array.isArray(value) ? value.join(', ') : String(value);
  }
}

const AUDIT_LISTS = ['batchSizes', 'noiseScales', 'clients', 'localEpochs', 'localBatches', 'trainingEpochs', 'clientRows', 'clientEpochs'];

function writeAuditSettings(o) {
  const f = ui.auditSettings.elements;
  for (const name of ['batches', 'referenceBatch', 'clip', 'rounds', 'sampleRate', 'clientBatch']) f[name].value = String(o[name]);
  f.canaries.value = String(o.canaries ?? 0);
  for (const name of AUDIT_LISTS) f[name].value = o[name].join(', ');
}

// The audit grid from its form; the table's reading and the attack's steps from the attack form.
function readAudit(settings) {
  const f = new FormData(ui.auditSettings);
  const number = (name) => {
    const raw = String(f.get(name)).trim();
    const value = Number(raw);
    if (raw === '' || !Number.isFinite(value) || value <= 0) throw new Error(`${label(ui.auditSettings, name)} must be a positive number, not “${raw}”`);
    return value;
  };
  // A whole number, 0 allowed (the engine says what else it refuses).
  const count = (name) => {
    const raw = String(f.get(name)).trim();
    const value = raw === '' ? 0 : Number(raw);
    if (!Number.isInteger(value) || value < 0) throw new Error(`${label(ui.auditSettings, name)} must be a whole number, not “${raw}”`);
    return value;
  };
  const list = (name) =>
    String(f.get(name))
      .split(',')
      .map((v) => v.trim())
      .filter((v) => v !== '')
      .map((v) => {
        const value = Number(v);
        if (!Number.isFinite(value) || value < 0) throw new Error(`${label(ui.auditSettings, name)}: “${v}” is not a number`);
        return value;
      });
  const lists = Object.fromEntries(AUDIT_LISTS.map((name) => [name, list(name)]));
  // The FedAvg studies' clients train as the form states (its lr, optimiser and rows' order),
  // whichever protocol the form's own run takes.
  const fedavg =
    (lists.localEpochs.length > 0 && lists.localBatches.length > 0) || (lists.clientRows.length > 0 && lists.clientEpochs.length > 0);
  return {
    run: {
      ...tableOptions(),
      ...pick(settings, ['ensemble', 'iterations', 'labels', 'seed', 'clientLr']),
      ...(fedavg ? readRecipe(new FormData(ui.settings)) : {}),
    },
    batches: number('batches'),
    referenceBatch: number('referenceBatch'),
    clip: number('clip'),
    rounds: number('rounds'),
    sampleRate: number('sampleRate'),
    clientBatch: number('clientBatch'),
    canaries: count('canaries'),
    ...lists,
  };
}

// While a run or an audit goes, its button cancels it and every other control waits.
function setRunning(running, button = ui.run) {
  ui.run.textContent = running && button === ui.run ? 'Cancel' : 'Run attack';
  ui.audit.textContent = running && button === ui.audit ? 'Cancel audit' : 'Audit this table';
  button.classList.toggle('cancel', running);
  document.body.dataset.state = running ? 'running' : 'idle';
  const other = button === ui.run ? ui.audit : ui.run;
  const controls = [ui.file, ui.demo, ui.backendChoice, other, ...ui.settings.elements, ...ui.auditSettings.elements, ...ui.schemaBody.querySelectorAll('input, select')];
  for (const control of controls) {
    control.disabled = running || (control.classList.contains('use') && control.closest('tr').classList.contains('is-label'));
  }
}

function startProgress(button, curve) {
  showError('');
  const controller = new AbortController();
  state.running = controller;
  setRunning(true, button);
  ui.results.hidden = true;
  ui.auditResults.hidden = true;
  ui.progressBox.hidden = false;
  ui.progress.value = 0;
  ui.progressText.textContent = 'starting…';
  ui.runStatus.textContent = '';
  $('loss-curve').hidden = !curve;
  return controller;
}

function failed(error, what, last) {
  if (error?.name === 'AbortError') {
    ui.runStatus.textContent = `Cancelled${last ? ` ${last}` : ''}; nothing was kept.`;
  } else if (error?.name === 'RuntimeError') {
    showError(`The engine crashed (${describe(error)}); it has been restarted. Try again, or choose another engine above.`);
  } else {
    showError(`The ${what} could not run: ${describe(error)}`);
  }
}

function finished(counter) {
  state.running = null;
  setRunning(false, counter === 'audits' ? ui.audit : ui.run);
  // Each settled run bumps data-runs (an audit data-audits) on <body>: tests and scripts wait on it
  // (it cannot be missed, unlike a state that may flip back before anyone looks).
  document.body.dataset[counter] = String(Number(document.body.dataset[counter] ?? 0) + 1);
}

async function run() {
  if (!state.file) return;
  let settings;
  try {
    settings = readSettings();
  } catch (error) {
    showError(describe(error));
    return;
  }
  const options = { ...tableOptions(), ...settings };
  const controller = startProgress(ui.run, true);
  // An attack that inverts nothing has no steps to chart.
  chart.reset(state.attacks?.get(settings.attack)?.inverts === false ? 1 : settings.iterations);
  let last = null;
  try {
    const table = await loadedTable();
    const report = await table.run(options, {
      signal: controller.signal,
      onProgress: (p) => {
        last = p;
        ui.progress.value = p.of ? p.step / p.of : 0;
        const loss = p.loss === null ? '' : `, loss ${p.loss.toExponential(2)}`;
        if (p.phase === 'invert') {
          ui.progressText.textContent = `step ${p.step} of ${p.of}${loss}, ${p.elapsed.toFixed(1)} s`;
          chart.add(p.step, p.loss);
        } else {
          // auto times the backends on a few steps first ("time wgpu", "time cpu"); FedAvg's
          // λ candidates and training first have phases of their own.
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
    failed(error, 'attack', last && `at step ${last.step} of ${last.of}`);
  } finally {
    finished('runs');
  }
}

async function audit() {
  if (!state.file) return;
  let options;
  try {
    options = readAudit(readSettings());
  } catch (error) {
    showError(describe(error));
    return;
  }
  const controller = startProgress(ui.audit, false);
  const started = performance.now();
  let last = null;
  try {
    const table = await loadedTable();
    const report = await table.audit(options, {
      signal: controller.signal,
      onProgress: (p) => {
        last = p;
        ui.progress.value = p.fraction;
        const seconds = ((performance.now() - started) / 1000).toFixed(0);
        ui.progressText.textContent = `${p.done} of ${p.cells} cells done, ${seconds} s${p.current ? `; running ${p.current}` : ''}`;
      },
    });
    state.audit = report;
    ui.progress.value = 1;
    ui.runStatus.textContent = `Audit done: ${report.audit.cells.length} cells in ${((performance.now() - started) / 1000).toFixed(1)} s.`;
    renderAudit(report, {
      verdict: $('verdict'),
      info: $('audit-info'),
      plots: $('audit-plots'),
      table: $('audit-table'),
      features: $('audit-features'),
    }, state.attacks);
    ui.auditResults.hidden = false;
    document.body.dataset.audit = 'shown';
    ui.auditResults.scrollIntoView({ behavior: 'smooth', block: 'start' });
  } catch (error) {
    failed(error, 'audit', last && `after ${last.done} of ${last.cells} cells`);
  } finally {
    finished('audits');
  }
}

function showResults(report) {
  renderSummary(ui.summary, ui.resultsInfo, report, state.attacks?.get(report.attack));
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

ui.audit.addEventListener('click', () => {
  if (state.running) state.running.abort();
  else audit();
});

ui.demo.addEventListener('click', async () => {
  showError('');
  ui.fileInfo.textContent = 'Loading the demo sample…';
  try {
    const response = await fetch(DEMO.url);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const blob = await response.blob();
    if (await loadFile(blob, `${DEMO.name} (Adult census sample, UCI, CC BY 4.0)`, DEMO.label)) {
      writeSettings({ ...pick(state.engine.defaults, SETTINGS), batchSize: DEMO.batchSize });
      attackChanged();
      await run();
    }
  } catch (error) {
    ui.fileInfo.textContent = '';
    showError(`The demo sample could not be loaded: ${describe(error)}`);
  }
});

$('download-json').addEventListener('click', () => state.report && downloadJson(state.report, state.fileName));
setupReceived(() => state.engineReady, downloadJson);
$('download-audit').addEventListener('click', () => state.audit && downloadAudit(state.audit.audit, state.fileName));
$('download-csv').addEventListener('click', () => state.report && downloadCsv(state.report, state.fileName));

if (query.backend && [...ui.backendChoice.options].some((o) => o.value === query.backend)) ui.backendChoice.value = query.backend;
startEngine(ui.backendChoice.value);

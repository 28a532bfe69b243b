#!/usr/bin/env node
// One seeded attack timed three ways, printed as one table: in the page on the CPU backend (one worker, and
// the ensemble split over one worker per core), in the page on WebGPU (SwiftShader in headless Chromium),
// and natively (the CLI, 1 and all threads).
//   node scripts/bench-browser.mjs [--batch-size 32] [--ensemble N] [--iterations 1500] [--seed 0]
//                                  [--webgpu-steps 20,60] [--csv data/adult-sample.csv] [--label salary]
//                                  [--protocol fedavg --local-epochs E --local-batch b --client-lr 0.01]
//                                  [--skip native,cpu,webgpu,auto] [--page-workers 1,2] [--www www/]
// The ensemble defaults to the engine's (30 members for FedSGD, 15 for FedAvg).
// A software GPU is too slow to run 1500 steps here: WebGPU runs two short attacks and the difference of
// their times gives the rate per step without the one-off shader compilation, extrapolated to --iterations.
// A last row runs `auto` (WebGPU on SwiftShader present): what it measured and chose.
// Needs scripts/build-wasm.sh (the page) and a native build (scripts/leakscope).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { startServer } from './serve.mjs';
import { CHROMIUM, chromiumArgs } from '../tests/browser/chromium.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values: a } = parseArgs({
  options: {
    csv: { type: 'string', default: join(root, 'data', 'adult-sample.csv') },
    label: { type: 'string', default: 'salary' },
    'batch-size': { type: 'string', default: '32' },
    ensemble: { type: 'string', default: '' },
    protocol: { type: 'string', default: 'fedsgd' },
    'local-epochs': { type: 'string', default: '1' },
    'local-batch': { type: 'string', default: '32' },
    'client-lr': { type: 'string', default: '0.01' },
    iterations: { type: 'string', default: '1500' },
    seed: { type: 'string', default: '0' },
    'webgpu-steps': { type: 'string', default: '20,60' },
    skip: { type: 'string', default: '' },
    // The page's CPU runs: with 1 worker and with one per core (at most 8), or the counts given.
    'page-workers': { type: 'string', default: '' },
    // Another build of the page (a copy of www/), to compare builds.
    www: { type: 'string', default: join(root, 'www') },
    // Click Run only once the engine's warm-up is over (a page that marks it: body[data-warm]).
    'wait-warm-up': { type: 'boolean', default: false },
  },
});
const fedavg = a.protocol === 'fedavg';
const base = {
  batchSize: +a['batch-size'],
  ...(a.ensemble ? { ensemble: +a.ensemble } : {}),
  iterations: +a.iterations,
  seed: +a.seed,
  ...(fedavg ? { protocol: 'fedavg', localEpochs: +a['local-epochs'], localBatch: +a['local-batch'], clientLr: +a['client-lr'] } : {}),
};
const skip = new Set(a.skip.split(',').filter(Boolean));
const rows = [];

async function inPage({ webgpu, backend, iterations, workers = '' }) {
  const server = await startServer({ root: a.www, port: 0 });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: chromiumArgs({ webgpu }) });
  try {
    const context = await browser.newContext({ acceptDownloads: true });
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${server.address().port}/?backend=${backend}&workers=${workers}`);
    await page.waitForFunction(() => document.body.dataset.engine === 'ready', null, { timeout: 120_000 });
    // As a user picking a file would, the run waits for the engine's warm-up (where the page has one).
    if (a['wait-warm-up']) await page.waitForFunction(() => document.body.dataset.warm === 'done', null, { timeout: 120_000 });
    await page.setInputFiles('#file', a.csv);
    await page.waitForFunction(() => !document.querySelector('#settings-section').hidden);
    await page.locator(`#schema input[name=label][value="${a.label}"]`).check();
    const settings = { ...base, iterations };
    if (fedavg) await page.click('#federation summary');
    for (const [name, value] of Object.entries(settings)) {
      const control = page.locator(`#settings [name=${name}]`);
      if ((await control.evaluate((e) => e.tagName)) === 'SELECT') await control.selectOption(String(value));
      else await control.fill(String(value));
    }
    const started = Date.now();
    await page.click('#run');
    await page.waitForFunction(() => Number(document.body.dataset.runs ?? 0) > 0, null, { timeout: 0 });
    const wall = (Date.now() - started) / 1000;
    const error = await page.locator('#error').isVisible();
    if (error) throw new Error(await page.textContent('#error'));
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download-json')]);
    const report = JSON.parse(readFileSync(await download.path(), 'utf8'));
    return { report, wall };
  } finally {
    await browser.close();
    server.close();
  }
}

function native(threads) {
  const out = join(mkdtempSync(join(tmpdir(), 'leakscope-bench-')), 'report.json');
  const args = ['attack', '--csv', a.csv, '--label', a.label, '--batch-size', a['batch-size'],
    '--iterations', a.iterations, '--seed', a.seed, '--json', out, '--quiet'];
  if (a.ensemble) args.push('--ensemble', a.ensemble);
  if (fedavg) args.push('--protocol', 'fedavg', '--local-epochs', a['local-epochs'], '--local-batch', a['local-batch'], '--client-lr', a['client-lr']);
  const started = Date.now();
  execFileSync(join(root, 'scripts', 'leakscope'), args, { env: { ...process.env, RAYON_NUM_THREADS: String(threads) }, stdio: ['ignore', 'ignore', 'inherit'] });
  return { report: JSON.parse(readFileSync(out, 'utf8')), wall: (Date.now() - started) / 1000 };
}

const fmt = (s) => (s >= 100 ? s.toFixed(0) : s.toFixed(1));
const perStep = (seconds, steps) => `${((1000 * seconds) / steps).toFixed(1)}`;

if (!skip.has('native')) {
  for (const threads of [...new Set([1, cpus().length])]) {
    const { report, wall } = native(threads);
    rows.push([`native CLI, CPU kernel, ${threads} thread${threads > 1 ? 's' : ''}`, report.backend.label, fmt(report.seconds), perStep(report.seconds, base.iterations), (100 * report.accuracy.total).toFixed(1), `${fmt(wall)} wall`]);
  }
}
if (!skip.has('cpu')) {
  const counts = a['page-workers'] ? a['page-workers'].split(',').map(Number) : [1, Math.min(cpus().length, 8)];
  for (const workers of [...new Set(counts)]) {
    const { report, wall } = await inPage({ webgpu: false, backend: 'cpu', iterations: base.iterations, workers });
    const where = `page, CPU backend (wasm), ${workers} worker${workers > 1 ? 's' : ''}`;
    rows.push([where, report.backend.label, fmt(report.seconds), perStep(report.seconds, base.iterations), (100 * report.accuracy.total).toFixed(1), `${fmt(wall)} wall`]);
  }
}
if (!skip.has('webgpu')) {
  const [short, long] = a['webgpu-steps'].split(',').map(Number);
  const s = await inPage({ webgpu: true, backend: 'webgpu', iterations: short });
  const l = await inPage({ webgpu: true, backend: 'webgpu', iterations: long });
  const rate = (l.report.seconds - s.report.seconds) / (long - short);
  const setup = Math.max(0, s.report.seconds - rate * short);
  const full = setup + rate * base.iterations;
  rows.push([`page, WebGPU (${short} and ${long} steps run, extrapolated)`, l.report.backend.label, `≈ ${fmt(full)}`, perStep(rate, 1), '—', `${fmt(setup)} s one-off setup`]);
}

if (!skip.has('auto')) {
  const { report, wall } = await inPage({ webgpu: true, backend: 'auto', iterations: base.iterations, workers: Math.min(cpus().length, 8) });
  const rates = report.backend.rates.map((r) => `${r.kind} ${r.steps_per_second.toFixed(1)} steps/s`).join(', ');
  rows.push(['page, auto (SwiftShader and CPU timed)', report.backend.label, fmt(report.seconds), perStep(report.seconds, base.iterations), (100 * report.accuracy.total).toFixed(1), `${fmt(wall)} wall; measured ${rates}`]);
}

const header = ['where', 'backend that ran', `s per attack (${base.iterations} steps)`, 'ms/step', 'accuracy %', 'note'];
const setting = fedavg ? `FedAvg n=${base.batchSize} E=${base.localEpochs} b=${base.localBatch} lr ${base.clientLr}` : `B=${base.batchSize}`;
console.log(`\n${setting}, N=${base.ensemble ?? 'default'}, ${base.iterations} steps, seed ${base.seed}, ${a.csv.split('/').pop()} (label ${a.label}); ${cpus().length} cores\n`);
console.log(`| ${header.join(' | ')} |`);
console.log(`|${header.map(() => '---').join('|')}|`);
for (const r of rows) console.log(`| ${r.join(' | ')} |`);

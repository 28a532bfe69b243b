#!/usr/bin/env node
// How long reading a large CSV takes, natively (`leakscope inspect`) and in the page (dropped file →
// schema shown), with peak memory: the process's max RSS natively, the whole Chromium process tree's
// RSS sampled every 50 ms in the page. Prints one table.
//   node scripts/bench-reading.mjs [--mb 95] [--runs 3] [--www www] [--cli path/to/leakscope]
// The file repeats data/adult-sample.csv's rows up to --mb megabytes (the page takes at most 100 MB).
// --www and --cli let two builds be compared in one run (say, a checkout of the previous commit).
// Needs scripts/build-wasm.sh (the page) and a native build (scripts/leakscope).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { startServer } from './serve.mjs';
import { CHROMIUM, chromiumArgs } from '../tests/browser/chromium.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values: a } = parseArgs({
  options: {
    mb: { type: 'string', default: '95' },
    runs: { type: 'string', default: '3' },
    www: { type: 'string', default: join(root, 'www') },
    cli: { type: 'string', default: '' },
  },
});

const adult = readFileSync(join(root, 'data', 'adult-sample.csv'), 'utf8');
const [header, ...body] = adult.trimEnd().split('\n');
const chunk = body.join('\n');
const copies = Math.max(1, Math.floor((Number(a.mb) * 1e6) / (chunk.length + 1)));
const file = join(mkdtempSync(join(tmpdir(), 'leakscope-read-')), 'large.csv');
writeFileSync(file, `${header}\n${Array(copies).fill(chunk).join('\n')}\n`);
const size = readFileSync(file).length;
const rows = copies * body.length;

const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const table = [];

// Natively: wall time and max RSS of `leakscope inspect`, from GNU time.
const cli = a.cli || null;
for (let i = 0, walls = [], rss = []; i < Number(a.runs); i++) {
  const command = cli ? [cli] : [join(root, 'scripts', 'leakscope')];
  const run = spawnSync('/usr/bin/time', ['-f', '%e %M', ...command, 'inspect', '--csv', file], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, RAYON_NUM_THREADS: '1' },
  });
  if (run.status !== 0) throw new Error(`leakscope inspect failed: ${run.stderr}`);
  const [wall, kib] = run.stderr.toString().trim().split('\n').at(-1).split(' ').map(Number);
  walls.push(wall);
  rss.push(kib / 1024);
  if (i === Number(a.runs) - 1) table.push(['native `leakscope inspect`', median(walls).toFixed(2), Math.max(...rss).toFixed(0)]);
}

// The resident memory of this process's descendants (playwright starts Chromium as a child), in MiB.
function treeRss(pid = process.pid) {
  const children = new Map();
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const ppid = Number(readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(p)]);
    } catch {}
  }
  let kib = 0;
  for (const stack = [...(children.get(pid) ?? [])]; stack.length; ) {
    const p = stack.pop();
    try {
      kib += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0);
    } catch {}
    stack.push(...(children.get(p) ?? []));
  }
  return kib / 1024;
}

const www = resolve(a.www);
if (!existsSync(join(www, 'leakscope'))) throw new Error(`${www} has no built page: run scripts/build-wasm.sh`);
const server = await startServer({ root: www, port: 0 });
const walls = [];
const peaks = [];
try {
  for (let i = 0; i < Number(a.runs); i++) {
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: chromiumArgs({ webgpu: false }) });
    try {
      const page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${server.address().port}/`);
      await page.waitForFunction(() => document.body.dataset.engine === 'ready', null, { timeout: 120_000 });
      const idle = treeRss();
      let peak = idle;
      const sampler = setInterval(() => (peak = Math.max(peak, treeRss())), 50);
      const started = Date.now();
      await page.setInputFiles('#file', file);
      await page.waitForFunction(() => Number(document.body.dataset.loads ?? 0) > 0, null, { timeout: 600_000 });
      walls.push((Date.now() - started) / 1000);
      clearInterval(sampler);
      peaks.push(peak - idle);
      const info = await page.textContent('#file-info');
      if (!info.includes(`${rows} rows`)) throw new Error(`the page read: ${info} ${await page.textContent('#error')}`);
    } finally {
      await browser.close();
    }
  }
} finally {
  server.close();
}
table.push(['page (file chosen → schema shown)', median(walls).toFixed(2), `+${Math.max(...peaks).toFixed(0)} over the idle page`]);

console.log(`\n${(size / 1e6).toFixed(1)} MB, ${rows} rows (data/adult-sample.csv repeated); median of ${a.runs} runs\n`);
console.log('| where | seconds | peak memory MiB |');
console.log('|---|---|---|');
for (const r of table) console.log(`| ${r.join(' | ')} |`);

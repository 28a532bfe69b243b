#!/usr/bin/env node
// How long the page takes from opening to an engine ready to run (document.body.dataset.engine),
// in headless Chromium, each load in a fresh browser (no compiled code cached), and the module's
// size. Several builds of the page are timed in one run, interleaved, so they compare as ratios:
//   node scripts/bench-ready.mjs [--loads 7] [--backend auto|cpu|webgpu] [--webgpu] [www ...]
// The default page is www/ (after scripts/build-wasm.sh).
import { readFileSync, statSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { startServer } from './serve.mjs';
import { CHROMIUM, chromiumArgs } from '../tests/browser/chromium.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values: a, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    loads: { type: 'string', default: '7' },
    backend: { type: 'string', default: 'auto' },
    webgpu: { type: 'boolean', default: false },
  },
});
const pages = (positionals.length ? positionals : [join(root, 'www')]).map((p) => resolve(p));
const loads = +a.loads;

async function timeToReady(www) {
  const server = await startServer({ root: www, port: 0 });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: chromiumArgs({ webgpu: a.webgpu }) });
  try {
    const page = await (await browser.newContext()).newPage();
    const started = performance.now();
    await page.goto(`http://127.0.0.1:${server.address().port}/?backend=${a.backend}`);
    await page.waitForFunction(() => ['ready', 'failed'].includes(document.body.dataset.engine), null, {
      timeout: 120_000,
      polling: 10,
    });
    const ms = performance.now() - started;
    if ((await page.evaluate(() => document.body.dataset.engine)) !== 'ready') throw new Error(`${www}: the engine failed`);
    return ms;
  } finally {
    await browser.close();
    server.close();
  }
}

const times = pages.map(() => []);
for (let i = 0; i < loads; i++) {
  for (const [k, www] of pages.entries()) times[k].push(await timeToReady(www));
}
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const mib = (n) => `${(n / 2 ** 20).toFixed(2)} MiB`;
console.log(`\nopen → engine ready, backend=${a.backend}${a.webgpu ? ' (WebGPU on)' : ''}, ${loads} loads each, fresh browser per load\n`);
console.log('| page | module raw | module gzipped | median ready | min | max | vs first |');
console.log('|---|---|---|---|---|---|---|');
const first = median(times[0]);
for (const [k, www] of pages.entries()) {
  const wasm = join(www, 'leakscope', 'pkg', 'leakscope_bg.wasm');
  const raw = statSync(wasm).size;
  const gz = gzipSync(readFileSync(wasm), { level: 9 }).length;
  const m = median(times[k]);
  const f = (x) => `${(x / 1000).toFixed(2)} s`;
  console.log(`| ${www} | ${mib(raw)} | ${mib(gz)} | ${f(m)} | ${f(Math.min(...times[k]))} | ${f(Math.max(...times[k]))} | ${(m / first).toFixed(2)} |`);
}

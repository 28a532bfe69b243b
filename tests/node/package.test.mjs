// The npm package as a developer gets it: `npm pack`, `npm install` of the tarball into a throwaway
// project, then import 'leakscope' there and run a small seeded attack in Node (CPU backend).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

function installPackedPackage() {
  const dir = mkdtempSync(join(tmpdir(), 'leakscope-pack-'));
  const tarball = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: root })
    .toString()
    .trim()
    .split('\n')
    .pop();
  const project = join(dir, 'project');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'throwaway', private: true, type: 'module' }));
  execFileSync('npm', ['install', '--silent', '--no-audit', '--no-fund', join(dir, tarball)], { cwd: project });
  copyFileSync(join(root, 'data', 'german-credit.csv'), join(project, 'german.csv'));
  return project;
}

function runIn(project, source) {
  writeFileSync(join(project, 'script.mjs'), source);
  return JSON.parse(execFileSync('node', ['script.mjs'], { cwd: project, maxBuffer: 64 << 20 }).toString());
}

const project = installPackedPackage();

test('the installed package inspects a CSV and runs a seeded attack well above the random baseline', () => {
  const out = runIn(
    project,
    `
    import { readFileSync } from 'node:fs';
    import { Leakscope } from 'leakscope';
    const csv = readFileSync('german.csv');
    const engine = await Leakscope.create({ backend: 'cpu' });
    const table = await engine.loadTable(csv);
    const schema = await table.inspect();
    const steps = [];
    const report = await table.run({ label: 'credit_risk', batchSize: 8, ensemble: 8, iterations: 300, seed: 1 },
      { onProgress: (p) => steps.push(p.step) });
    console.log(JSON.stringify({ backend: engine.backend, defaults: engine.defaults, bytes: table.bytes, schema, steps, report }));
    `,
  );
  assert.equal(out.backend.choice, 'cpu');
  // ensemble null: the protocol's own (30 members for FedSGD, 15 for FedAvg).
  assert.deepEqual([out.defaults.batchSize, out.defaults.ensemble, out.defaults.iterations, out.defaults.attack], [32, null, 1500, 'tableak']);
  assert.match(out.backend.label, /^cpu \(fused kernel/);
  assert.equal(out.bytes, readFileSync(join(project, 'german.csv')).length);
  assert.equal(out.schema.rows, 1000);
  assert.equal(out.schema.columns.length, 21);
  assert.equal(out.schema.label_candidates[0], 'credit_risk');
  assert.deepEqual(out.steps.slice(0, 2), [1, 25]);
  assert.equal(out.steps.at(-1), 300);
  const r = out.report;
  assert.equal(r.rows.length, 8);
  assert.equal(r.backend.kind, 'cpu');
  assert.equal(r.backend.engine, 'cpu-kernel');
  assert.ok(r.accuracy.total >= r.random_baseline + 0.15, `accuracy ${r.accuracy.total} vs random ${r.random_baseline}`);
  assert.ok(r.accuracy.total >= 0.7, `accuracy ${r.accuracy.total}`);
});

test('the installed package runs attribute reconstruction of one column after FedAvg, against its baselines', () => {
  const out = runIn(
    project,
    `
    import { readFileSync } from 'node:fs';
    import { Leakscope } from 'leakscope';
    const csv = readFileSync('german.csv');
    const engine = await Leakscope.create({ backend: 'cpu' });
    const table = await engine.loadTable(csv);
    const report = await table.run({ label: 'credit_risk', attack: 'attribute', sensitive: 'housing', protocol: 'fedavg',
      batchSize: 50, localBatch: 8, iterations: 400, seed: 3 });
    let missing = null;
    try { await table.run({ label: 'credit_risk', attack: 'attribute', protocol: 'fedavg' }); } catch (e) { missing = e.message; }
    let continuous = null;
    try { await table.run({ label: 'credit_risk', attack: 'attribute', sensitive: 'age', protocol: 'fedavg' }); } catch (e) { continuous = e.message; }
    console.log(JSON.stringify({ report, missing, continuous }));
    `,
  );
  const r = out.report;
  assert.equal(r.attack, 'attribute');
  assert.equal(r.format, 'leakscope-report/2');
  assert.equal(r.details.kind, 'attribute');
  assert.equal(r.config.attack.ensemble, 5);
  assert.equal(r.details.column, 'housing');
  assert.equal(r.details.values, 3);
  assert.equal(r.accuracy.total, r.details.accuracy);
  assert.ok(r.details.accuracy >= 0.8 && r.details.accuracy > r.details.public_classifier,
    `housing ${r.details.accuracy} vs public classifier ${r.details.public_classifier}`);
  assert.match(out.missing, /needs the sensitive column/);
  assert.match(out.continuous, /"age" is continuous/);
});

test('the installed package runs CAFE on vertically split rows and its fake-gradients countermeasure', () => {
  const out = runIn(
    project,
    `
    import { readFileSync } from 'node:fs';
    import { Leakscope } from 'leakscope';
    const csv = readFileSync('german.csv');
    const engine = await Leakscope.create({ backend: 'cpu' });
    const table = await engine.loadTable(csv);
    const base = { label: 'credit_risk', attack: 'cafe', cafeRows: 100, rounds: 200, parties: 2, batchSize: 10, seed: 1 };
    const clean = await table.run(base);
    const fake = await table.run({ ...base, fakeGradients: 10 });
    console.log(JSON.stringify({ clean, fake }));
    `,
  );
  assert.equal(out.clean.attack, 'cafe');
  assert.equal(out.clean.accuracy.total, 1);
  assert.equal(out.clean.rows.length, 100);
  assert.ok(out.clean.details.step1_error < 1e-4, JSON.stringify(out.clean.details));
  assert.equal(out.fake.details.fake_gradients, 10);
  assert.ok(out.fake.details.step2_error > 1e-2 && out.fake.accuracy.total < 1, JSON.stringify(out.fake.details));
  assert.ok(out.fake.details.training_loss > 0 && out.fake.details.training_loss_fake > 0);
});

test('the installed package audits a table over a small grid: FedAvg, noise with ε, progress to the end, plots', () => {
  const out = runIn(
    project,
    `
    import { readFileSync } from 'node:fs';
    import { Leakscope } from 'leakscope';
    const csv = readFileSync('german.csv');
    const engine = await Leakscope.create({ backend: 'cpu' });
    const table = await engine.loadTable(csv);
    const options = {
      run: { label: 'credit_risk', ensemble: 4, iterations: 200, seed: 1 },
      attacks: ['tableak', 'random'], batches: 2, referenceBatch: 8, batchSizes: [8], noiseScales: [4], clip: 1,
      clients: [], localEpochs: [1], localBatches: [4], trainingEpochs: [], rounds: 16, canaries: 300,
    };
    const plan = await table.auditPlan(options, 3);
    const fractions = [];
    const report = await table.audit(options, { onProgress: (p) => fractions.push([p.done, p.fraction]) });
    let refused = null;
    try { await table.audit({ ...options, batches: 0 }); } catch (e) { refused = e.message; }
    console.log(JSON.stringify({ defaults: Leakscope.auditDefaults(false), plan, fractions, report, refused }));
    `,
  );
  assert.deepEqual(out.defaults.batchSizes, [8, 32, 128]);
  // Three settings × two attacks × two batches, dearest first (FedAvg's TabLeak before a random guess).
  assert.equal(out.plan.cells.length, 12);
  assert.equal(out.plan.workers, 3);
  assert.match(out.plan.cells[0].label, /TabLeak/);
  assert.match(out.plan.cells.at(-1).label, /Random/);
  assert.deepEqual(out.fractions.at(-1), [12, 1]);
  assert.ok(out.fractions.every(([, f], i) => i === 0 || f >= out.fractions[i - 1][1]), 'progress never goes back');
  const { audit, svgs, markdown } = out.report;
  const row = (study, attack) => audit.rows.find((r) => r.point.study === study && r.attack === attack);
  for (const study of ['batchSize', 'fedavg']) {
    const t = row(study, 'tableak');
    assert.ok(t.accuracy.mean >= t.random.mean + 0.1, `${study}: TabLeak ${t.accuracy.mean} vs random ${t.random.mean}`);
  }
  assert.ok(row('noise', 'tableak').accuracy.mean < row('batchSize', 'tableak').accuracy.mean, 'noise costs the attacker');
  assert.ok(row('noise', 'tableak').epsilon > 0 && row('batchSize', 'tableak').epsilon === null);
  // 300 canaries through 16 rounds at σ = 4: one release at σ = 1 (analytic ε 4.38), which their
  // 95 % interval covers; the accountant's RDP bound sits above.
  const canaries = row('noise', 'tableak').canaries;
  const [lo, hi] = canaries.every_round.interval;
  assert.ok(lo <= 4.38 && 4.38 <= hi && canaries.every_round.null_holds, JSON.stringify(canaries));
  assert.ok(row('noise', 'tableak').overRounds.epsilon > lo, 'the bound is not below what the canaries measure');
  assert.equal(row('batchSize', 'tableak').canaries, null);
  assert.deepEqual(svgs.map((s) => s.name), ['batch-size', 'noise', 'fedavg', 'features']);
  assert.ok(svgs.every((s) => s.svg.startsWith('<svg')));
  assert.match(markdown, /^\| setting \| attack \|/);
  assert.ok(audit.verdict.sentences.length >= 2);
  assert.match(out.refused, /batches 0 must be between 1 and 100/);
});

test('the installed package accounts ε over rounds as Opacus does, and refuses a schedule it cannot account', () => {
  const fixture = JSON.parse(readFileSync(join(root, 'tests', 'fixtures', 'rdp_epsilon.json'), 'utf8'));
  const cases = fixture.cases.filter((c) => c.rounds === 1000 && c.delta === 1e-5).slice(0, 5);
  const out = runIn(
    project,
    `
    import { Leakscope } from 'leakscope';
    let early = null;
    try { Leakscope.privacy({ noiseMultiplier: 1, rounds: 10 }); } catch (e) { early = e.message; }
    await Leakscope.create({ backend: 'cpu' });
    const cases = ${JSON.stringify(cases)};
    const got = cases.map((c) => Leakscope.privacy({ noiseMultiplier: c.noise_multiplier, sampleRate: c.sample_rate, rounds: c.rounds }));
    const everyRound = Leakscope.privacy({ noiseMultiplier: 1, rounds: 10, delta: 1e-6 });
    const canaries = Leakscope.privacy({ noiseMultiplier: 2, rounds: 1, canaries: { inserted: 200, heldOut: 300, dimension: 20000, seed: 4 } });
    const refused = [];
    for (const query of [{ noiseMultiplier: 1, sampleRate: 0, rounds: 10 }, { noiseMultiplier: 1, rounds: 0 }, { noiseMultiplier: 1, rounds: 10, epochs: 3 }]) {
      try { Leakscope.privacy(query); refused.push(null); } catch (e) { refused.push(e.message); }
    }
    console.log(JSON.stringify({ early, got, everyRound, canaries, refused }));
    `,
  );
  assert.equal(out.early, 'leakscope: await Leakscope.create() before calling Leakscope.privacy');
  assert.equal(out.got.length, cases.length);
  out.got.forEach((g, i) => {
    const c = cases[i];
    assert.ok(Math.abs(g.epsilon - c.epsilon) <= 1e-6 * c.epsilon, `z ${c.noise_multiplier} q ${c.sample_rate}: ${g.epsilon} vs Opacus ${c.epsilon}`);
    assert.ok(g.per_round > 0 && g.per_round <= g.epsilon && g.epsilon_against_server >= g.epsilon);
  });
  assert.equal(out.everyRound.sample_rate, 1);
  assert.equal(out.everyRound.delta, 1e-6);
  assert.equal(out.everyRound.releases_seen, 10);
  assert.equal(out.everyRound.canaries, null);
  // 200 canaries through the Gaussian mechanism at σ = 2 stand μ = 1/√(σ² + k/d) ≈ 0.499 apart,
  // read to within 4 standard errors.
  const c = out.canaries.canaries;
  assert.deepEqual([c.canaries, c.held_out, c.dimension], [200, 300, 20000]);
  assert.ok(Math.abs(c.final_model.mu - 0.499) <= 4 / Math.sqrt(200), JSON.stringify(c.final_model));
  assert.ok(c.final_model.interval[0] < c.final_model.epsilon && c.final_model.epsilon < c.final_model.interval[1]);
  assert.ok(c.final_model.null_holds);
  assert.match(out.refused[0], /sampling rate must be in \(0, 1\], not 0/);
  assert.match(out.refused[1], /rounds must be between 1 and/);
  assert.match(out.refused[2], /unknown field `epochs`/);
});

test('the installed package attacks an update a PyTorch client wrote, from every format, the same', () => {
  const fixtures = join(root, 'tests', 'data', 'pytorch-update');
  for (const f of ['encoding.json', 'weights.safetensors', 'update.safetensors', 'update.json', 'weights.npz', 'update.npz', 'weights-arrays.npz', 'update-arrays.npz']) {
    copyFileSync(join(fixtures, f), join(project, f));
  }
  for (const dir of ['sigmoid-head', 'gelu', 'regression']) {
    mkdirSync(join(project, dir), { recursive: true });
    for (const f of ['weights.npz', 'update.npz']) copyFileSync(join(fixtures, dir, f), join(project, dir, f));
  }
  mkdirSync(join(project, 'embedding'), { recursive: true });
  for (const f of ['encoding.json', 'weights.safetensors', 'update.safetensors']) copyFileSync(join(fixtures, 'embedding', f), join(project, 'embedding', f));
  copyFileSync(join(fixtures, 'regression', 'encoding.json'), join(project, 'regression', 'encoding.json'));
  const out = runIn(
    project,
    `
    import { readFileSync } from 'node:fs';
    import { Leakscope } from 'leakscope';
    const file = (f) => readFileSync(f);
    const engine = await Leakscope.create({ backend: 'cpu' });
    const encoding = readFileSync('encoding.json', 'utf8');
    const options = { ensemble: 2, iterations: 40 };
    const steps = [];
    const st = await engine.attackUpdate({ encoding, weights: file('weights.safetensors'), update: file('update.safetensors') }, options,
      { onProgress: (p) => steps.push(p.step) });
    const npz = await engine.attackUpdate({ encoding, weights: file('weights.npz'), update: file('update.npz') }, options);
    const json = await engine.attackUpdate({ encoding, update: new Blob([file('update.json')]) }, options);
    const arrays = await engine.attackUpdate({ encoding, weights: file('weights-arrays.npz'), update: file('update-arrays.npz') }, { ...options, batchSize: 8 });
    // One logit under BCE: the head is read off the weights.
    const sigmoid = await engine.attackUpdate({ encoding, weights: file('sigmoid-head/weights.npz'), update: file('sigmoid-head/update.npz') }, options);
    // The encoding may state the model: the activation the weights cannot show.
    const stated = JSON.stringify({ ...JSON.parse(encoding), model: { hidden: [32, 32], activation: { kind: 'gelu' } } });
    const gelu = await engine.attackUpdate({ encoding: stated, weights: file('gelu/weights.npz'), update: file('gelu/update.npz') }, options);
    // A regression's encoding (its label a number): one linear output; each row's label reconstructed.
    const regression = await engine.attackUpdate({ encoding: readFileSync('regression/encoding.json', 'utf8'), weights: file('regression/weights.npz'), update: file('regression/update.npz') }, {});
    // A client's own pipeline: an embedding per categorical column (scripts/export_embedding.py).
    const embedding = await engine.attackUpdate({ encoding: readFileSync('embedding/encoding.json', 'utf8'), weights: file('embedding/weights.safetensors'), update: file('embedding/update.safetensors') }, {});
    const refused = [];
    for (const [files, opts] of [
      [{ encoding, weights: file('weights-arrays.npz'), update: file('update-arrays.npz') }, options],
      [{ encoding, update: file('update.npz') }, options],
      [{ encoding, weights: file('weights.npz'), update: file('update.npz') }, { ...options, batchSize: 4 }],
      [{ encoding: '{}', weights: file('weights.npz'), update: file('update.npz') }, options],
      [{ encoding, weights: file('weights.npz'), update: file('update.npz') }, { ...options, label: 'sex' }],
      [{ encoding, weights: file('weights.npz'), update: file('update.npz') }, { ...options, hidden: [100, 100] }],
      [{ encoding, weights: file('weights.npz'), update: file('update.npz') }, { ...options, head: 'sigmoid' }],
      [{ encoding: stated, weights: file('gelu/weights.npz'), update: file('gelu/update.npz') }, { ...options, activation: { kind: 'tanh' } }],
    ]) {
      try { await engine.attackUpdate(files, opts); refused.push(null); } catch (e) { refused.push(e.message); }
    }
    console.log(JSON.stringify({ st, npz, json, arrays, sigmoid, gelu, regression, embedding, steps, refused }));
    `,
  );
  const rows = (r) => JSON.stringify(r.rows.map((row) => row.cells));
  assert.equal(out.st.rows.length, 8);
  assert.equal(out.st.accuracy ?? null, null, 'no ground truth for a received update');
  assert.equal(rows(out.npz), rows(out.st));
  assert.equal(rows(out.json), rows(out.st));
  assert.deepEqual(out.npz.labels, out.st.labels);
  assert.equal(out.arrays.config.labels, 'restored');
  assert.equal(out.st.config.labels, 'known');
  assert.deepEqual([...out.arrays.labels].sort(), [...out.st.labels].sort(), 'restored labels: the same counts');
  assert.ok(out.steps.length > 0);
  assert.match(out.refused[0], /does not say how many rows it was computed on: give the batch size/);
  assert.match(out.refused[1], /numpy archive, which holds the update only/);
  assert.match(out.refused[2], /batch size is given as 4 but the update says it was computed on 8 rows/);
  assert.match(out.refused[3], /not an encoding/);
  assert.match(out.refused[4], /the encoding's label is "salary", not "sex"/);
  assert.match(out.refused[5], /the model is stated with hidden layers \[100, 100\] but the weights have hidden layers \[32, 32\]/);
  assert.match(out.refused[6], /the model is stated with a sigmoid head \(1 output for a 2-class label\) but the weights' last layer has 2 outputs/);
  assert.equal(out.sigmoid.config.head, 'sigmoid');
  assert.match(out.refused[7], /the encoding states the model's activation as gelu but the options say tanh: leave one out/);
  assert.equal(out.gelu.config.activation.kind, 'gelu');
  assert.equal(out.sigmoid.rows.length, 8);
  assert.equal(out.regression.config.head, 'linear');
  assert.equal(out.regression.regression_labels_exact, true);
  assert.deepEqual(out.regression.labels, []);
  // hours-per-week of the eight table rows the export used (rows 44-51), in some order.
  assert.deepEqual(out.regression.rows.map((r) => r.label).sort(), ['40', '40', '40', '40', '45', '60', '60', '70']);
  // Read in its own terms, every row of the embedding client is proved and the rows send its update back.
  assert.deepEqual(out.embedding.provenance.map((g) => [g.provenance, g.rows]), [['proved', 8]]);
  assert.equal(out.embedding.update_fit.fits, true);
});

test('an AbortSignal cancels a run, from the callback or from a timer, and bad input is a readable error', () => {
  const out = runIn(
    project,
    `
    import { readFileSync } from 'node:fs';
    import { Leakscope } from 'leakscope';
    const csv = readFileSync('german.csv');
    const engine = await Leakscope.create({ backend: 'cpu' });
    const table = await engine.loadTable(csv);
    const controller = new AbortController();
    let cancelled = null, ragged = null, label = null, seen = 0;
    try {
      await table.run({ label: 'credit_risk', batchSize: 4, ensemble: 2, iterations: 1000, reportEvery: 10 },
        { onProgress: (p) => { seen = p.step; if (p.step >= 20) controller.abort(); }, signal: controller.signal });
    } catch (e) { cancelled = e.name; }
    // Aborted from a timer, not from inside the callback: the run must yield for it to be seen.
    const timed = new AbortController();
    setTimeout(() => timed.abort(), 200);
    let timedOut = null, lastStep = 0;
    try {
      // earlyStop off: the run cannot answer early, so the timer is what ends it.
      await table.run({ label: 'credit_risk', batchSize: 8, ensemble: 8, iterations: 100000, reportEvery: 10, earlyStop: false },
        { onProgress: (p) => { lastStep = p.step; }, signal: timed.signal });
    } catch (e) { timedOut = e.name; }
    // table.cancel() stops every run and audit on the table, without a signal of the caller's.
    let both = [], tableSteps = 0;
    const opts = { label: 'credit_risk', batchSize: 4, ensemble: 2, iterations: 100000, reportEvery: 10, earlyStop: false };
    const a = table.run(opts, { onProgress: (p) => { tableSteps = p.step; if (p.step >= 30) table.cancel(); } });
    const b = table.audit({ run: opts, attacks: ['tableak'], batches: 1, batchSizes: [4], noiseScales: [], clients: [],
      localEpochs: [], localBatches: [], trainingEpochs: [] });
    for (const p of [a, b]) { try { await p; both.push('finished'); } catch (e) { both.push(e.name); } }
    // The table still runs after a cancel; a freed table refuses.
    const after = await table.run({ label: 'credit_risk', batchSize: 4, ensemble: 2, iterations: 20 });
    await table.free();
    let freed = null;
    try { await table.run({ label: 'credit_risk' }); } catch (e) { freed = e.message; }
    try { await engine.loadTable('a,b\\n1,2\\n3\\n'); } catch (e) { ragged = e.message; }
    const other = await engine.loadTable(csv);
    try { await other.run({ label: 'nope' }); } catch (e) { label = e.message; }
    // A misspelt option is named, not dropped for its default.
    let misspelt = null, auditKey = null;
    try { await other.run({ label: 'credit_risk', batchsize: 8 }); } catch (e) { misspelt = e.message; }
    try { await other.audit({ run: { label: 'credit_risk' }, noiseScale: [0.1] }); } catch (e) { auditKey = e.message; }
    console.log(JSON.stringify({ cancelled, seen, timedOut, lastStep, both, tableSteps, after: after.rows.length, freed, ragged, label, misspelt, auditKey }));
    `,
  );
  assert.equal(out.cancelled, 'AbortError');
  assert.equal(out.seen, 20);
  assert.equal(out.timedOut, 'AbortError');
  assert.ok(out.lastStep > 0 && out.lastStep < 100000, `stopped at step ${out.lastStep}`);
  assert.deepEqual(out.both, ['AbortError', 'AbortError']);
  assert.ok(out.tableSteps >= 30 && out.tableSteps < 100000, `cancelled at step ${out.tableSteps}`);
  assert.equal(out.after, 4);
  assert.equal(out.freed, 'the table was freed');
  assert.equal(out.ragged, 'line 3 has 1 fields but the header has 2');
  assert.match(out.label, /no column is named "nope"/);
  assert.match(out.misspelt, /^bad options: unknown field `batchsize`, expected one of .*`batchSize`/);
  assert.match(out.auditKey, /^bad options: unknown field `noiseScale`, expected one of .*`noiseScales`/);
});

test('the CPU warm-up an engine starts changes no report, run after it, during it or without it', () => {
  const out = runIn(
    project,
    `
    import { readFileSync } from 'node:fs';
    import { Leakscope } from 'leakscope';
    const csv = readFileSync('german.csv');
    const options = { label: 'credit_risk', batchSize: 8, seed: 5, iterations: 100 };
    const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
    async function report(warm, before) {
      const engine = await Leakscope.create({ backend: 'cpu', warm });
      await before(engine);
      const table = await engine.loadTable(csv);
      const r = await table.run(options);
      return { accuracy: r.accuracy.total, rows: r.rows };
    }
    const out = {
      // warmUp() resolves once the warm-up is over: the run comes after the whole of it.
      after: await report(true, (engine) => engine.warmUp()),
      // One turn of the event loop: the warm-up has started, and the run cuts it short.
      during: await report(true, tick),
      // At once: the run is asked before the warm-up starts, which then does not.
      before: await report(true, async () => {}),
      none: await report(false, async () => {}),
    };
    console.log(JSON.stringify(out));
    `,
  );
  assert.ok(out.none.accuracy > 0.5, `accuracy ${out.none.accuracy}`);
  for (const when of ['after', 'during', 'before']) assert.deepEqual(out[when], out.none, when);
});

test('a panic inside the engine reaches the caller with its message, not "unreachable"', () => {
  const out = runIn(
    project,
    `
    import { panicForTests } from 'leakscope/internal';
    let error = null;
    try { await panicForTests('a test panic, on purpose'); } catch (e) { error = { name: e.name, message: e.message }; }
    console.log(JSON.stringify({ error }));
    `,
  );
  assert.equal(out.error.name, 'RuntimeError');
  assert.match(out.error.message, /^the engine panicked: .*a test panic, on purpose/);
});

test('shares of the wrong shape handed to assess are a readable error', () => {
  const out = runIn(
    project,
    `
    import { readFileSync } from 'node:fs';
    import { Leakscope } from 'leakscope';
    import { RAW, assess, invertMembers } from 'leakscope/internal';
    const csv = readFileSync('german.csv');
    const engine = await Leakscope.create({ backend: 'cpu' });
    const { engine: e, table: t } = (await engine.loadTable(csv))[RAW];
    const options = { label: 'credit_risk', batchSize: 4, ensemble: 2, iterations: 5 };
    const part = await invertMembers(e, t, options, { first: 0, count: 2 });
    let error = null;
    try { await assess(e, t, options, [{ ...part, probs: part.probs.slice(0, 10) }], 1); } catch (err) { error = err.message; }
    const report = await assess(e, t, options, [part], 1);
    console.log(JSON.stringify({ error, rows: report.rows.length }));
    `,
  );
  assert.match(out.error, /invalid setting: members 0\.\.2 hold \d+ values and 10 probabilities/);
  assert.equal(out.rows, 4);
});

test('the type declarations compile against a typed use of the package (tsc --strict)', () => {
  writeFileSync(
    join(project, 'use.ts'),
    `
    import { Leakscope, type LeakscopeTable, type Table, type AuditReport, type Report, type ReconstructionReport, type RunOptions, type Progress } from 'leakscope';
    import { LeakscopeWorker, compileEngine } from 'leakscope/remote';
    async function main(csv: Uint8Array): Promise<number> {
      const engine = await Leakscope.create({ backend: 'auto' });
      const local: LeakscopeTable = await engine.loadTable(csv);
      const options: RunOptions = { label: 'credit_risk', batchSize: 8, attack: 'tableak', labels: 'restored' };
      const seen: Progress[] = [];
      const report: Report = await local.run(options, { onProgress: (p) => seen.push(p) });
      const worker = await LeakscopeWorker.create({ backend: 'cpu', workers: 2, module: compileEngine() });
      const remote: Table = await worker.loadTable(csv);
      const columns: number = (await remote.inspect()).columns.length + remote.bytes;
      const limit: number = worker.limits.maxCsvBytes + columns;
      const kind: 'cpu' | 'wgpu' | 'cuda' = report.backend.kind;
      const confident = report.rows.flatMap((r) => r.confidence).filter((c) => c === 'high').length;
      const edge: number | null = report.entropy_buckets[0].from;
      const audit: AuditReport = await remote.audit({ run: options, batches: 2, noiseScales: [0, 0.1] }, {
        onProgress: (p) => seen.push({ phase: p.current, step: p.done, of: p.cells, loss: null, elapsed: p.fraction }),
      });
      const verdict: string = audit.audit.verdict.sentences[0];
      const received: ReconstructionReport = await engine.attackUpdate({ encoding: '{}', update: csv, weights: new Blob(['{}']) }, { ensemble: 2 });
      const remoteReceived: ReconstructionReport = await worker.attackUpdate({ encoding: csv, update: csv }, { batchSize: 8 }, { signal: new AbortController().signal });
      const quick: number = received.rows.length + remoteReceived.rows.length + worker.auditDefaults.quick.batches + Leakscope.auditDefaults(true).referenceBatch
        + Leakscope.privacy({ noiseMultiplier: 1, sampleRate: 0.01, rounds: 100 }).epsilon;
      remote.cancel();
      await local.free();
      return report.accuracy.total + limit + confident + (edge ?? 0) + kind.length + seen.length + verdict.length + quick;
    }
    void main;
    `,
  );
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', lib: ['es2022', 'dom'], skipLibCheck: false }, files: ['use.ts'] }),
  );
  const tsc = join(root, 'node_modules', '.bin', 'tsc');
  execFileSync(tsc, ['-p', project], { stdio: 'inherit' });
});

test("the README's JavaScript runs as written against the installed package", () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const snippets = [...readme.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  assert.ok(snippets.length >= 1, 'the README shows the npm package in a ```js block');
  // The README's snippet reads the sample from beside the script.
  copyFileSync(join(root, 'data', 'adult-sample.csv'), join(project, 'adult-sample.csv'));
  for (const snippet of snippets) {
    writeFileSync(join(project, 'readme.mjs'), snippet);
    const out = execFileSync('node', ['readme.mjs'], { cwd: project, maxBuffer: 64 << 20 }).toString();
    // It prints progress, then the accuracy, the random baseline and how the rows were obtained.
    assert.match(out, / \d+ of \d+\n/, out);
    assert.match(out, /proved/, out);
  }
});

test('the package exports the worker entry and its client, with type declarations and both licences', () => {
  const out = runIn(
    project,
    `
    import { readFileSync, existsSync } from 'node:fs';
    import { fileURLToPath } from 'node:url';
    const worker = fileURLToPath(import.meta.resolve('leakscope/worker'));
    const { LeakscopeWorker } = await import('leakscope/remote');
    const pkg = JSON.parse(readFileSync('node_modules/leakscope/package.json', 'utf8'));
    console.log(JSON.stringify({
      worker: readFileSync(worker, 'utf8').includes('serve(self'),
      remote: Object.keys(await import('leakscope/remote')),
      remoteCreate: typeof LeakscopeWorker.create,
      public: Object.keys(await import('leakscope')).sort(),
      types: ['.', './remote', './internal'].map((e) => existsSync('node_modules/leakscope/' + pkg.exports[e].types)),
      licences: ['LICENSE-MIT', 'LICENSE-APACHE'].map((f) => readFileSync('node_modules/leakscope/' + f, 'utf8').split('\\n').find((l) => l.trim()).trim()),
    }));
    `,
  );
  // The public surface is an engine and its tables; share-level pieces live in leakscope/internal.
  assert.deepEqual(out, {
    worker: true,
    remote: ['LeakscopeWorker', 'compileEngine'],
    remoteCreate: 'function',
    public: ['Leakscope', 'LeakscopeTable'],
    types: [true, true, true],
    licences: ['MIT License', 'Apache License'],
  });
});

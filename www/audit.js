// The audit's results in the page: the engine's verdict, its plots and its summary tables. Every
// number and sentence comes from the engine's AuditReport; this file only places them.
import { el, pct } from './render.js';

const pm = (m) => (m ? `${(100 * m.mean).toFixed(1)} ± ${(100 * m.std).toFixed(1)}` : '—');

function pointLabel(p) {
  switch (p.study) {
    case 'batchSize':
      return `B = ${p.batch}`;
    case 'noise':
      return `σ = ${p.sigma}`;
    case 'clients':
      return `K = ${p.clients}`;
    case 'fedavg':
      return `E = ${p.epochs}, b = ${p.local_batch}`;
    case 'clientRows':
      return `n = ${p.rows}, E = ${p.epochs}`;
    default:
      return `${p.epochs} epoch${p.epochs === 1 ? '' : 's'}`;
  }
}

function epsilon(e) {
  if (e === null || e === undefined) return '—';
  if (!Number.isFinite(e)) return '∞';
  return e >= 1000 ? e.toExponential(2) : e.toPrecision(3);
}

// A canary estimate (the engine's CanaryEstimate): "≈ ε (low–high)", or "≥ ε" where the canaries
// separate completely and ε is a floor.
function measured(c) {
  if (!c) return '—';
  if (c.unbounded) return '∞ (no noise)';
  const [lo, hi] = c.interval;
  return c.beyond_range || hi === null ? `≥ ${epsilon(c.epsilon)}` : `≈ ${epsilon(c.epsilon)} (${epsilon(lo)}–${epsilon(hi)})`;
}

/** `attacks`: the engine's description of its attacks by name (for their labels). */
export function renderAudit(report, targets, attacks) {
  const { audit, svgs } = report;
  const label = (name) => attacks?.get(name)?.label ?? name;
  targets.verdict.replaceChildren(...audit.verdict.sentences.map((s) => el('li', { text: s })));
  const backends = [...new Set(audit.cells.map((c) => c.backend))];
  targets.info.textContent =
    `${audit.cells.length} attacks on ${audit.table.rows} rows (label ${audit.table.label}), ` +
    `${audit.options.batches} batch${audit.options.batches === 1 ? '' : 'es'} per setting, ` +
    `${audit.seconds.toFixed(0)} s of compute on ${backends.join('; ')}. ` +
    (audit.judged ? `The verdict reads ${label(audit.judged)}, the strongest attack in the grid.` : 'Only guessing ran.');
  // The plots are the engine's SVG, shown as images: nothing in them can run as script.
  targets.plots.replaceChildren(
    ...svgs.map(({ name, svg }) =>
      el('img', {
        class: 'plot',
        'data-plot': name,
        alt: `audit plot: ${name}`,
        src: `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`,
      }),
    ),
  );
  const head = (...names) => el('thead', {}, el('tr', {}, names.map((n) => el('th', { text: n }))));
  targets.table.replaceChildren(
    head(
      'setting',
      'attack',
      'accuracy %',
      'categorical %',
      'continuous %',
      'random %',
      "guessing % (the better of random and the table's guess)",
      'ε (one release)',
      `ε over ${audit.options.rounds} rounds, q = ${audit.options.sampleRate}`,
      'ε against the server',
      audit.options.canaries ? `ε ${audit.options.canaries} canaries measure (95 %)` : 'ε canaries measure (none run)',
      'model accuracy',
      'cells the update shows',
    ),
    el(
      'tbody',
      {},
      audit.rows.map((r) =>
        el(
          'tr',
          { class: r.attack === audit.judged ? 'judged' : '', 'data-attack': r.attack },
          el('td', { text: pointLabel(r.point) }),
          el('td', { text: label(r.attack) }),
          el('td', { class: 'num', text: pm(r.accuracy) }),
          el('td', { class: 'num', text: pm(r.categorical) }),
          el('td', { class: 'num', text: pm(r.continuous) }),
          el('td', { class: 'num', text: (100 * r.random.mean).toFixed(1) }),
          el('td', { class: 'num', 'data-guessing': '', text: (100 * r.guessing.mean).toFixed(1) }),
          el('td', { class: 'num', text: epsilon(r.epsilon) }),
          el('td', { class: 'num', 'data-epsilon': 'rounds', text: epsilon(r.overRounds?.epsilon) }),
          el('td', { class: 'num', 'data-epsilon': 'server', text: epsilon(r.overRounds?.epsilon_against_server) }),
          el('td', { class: 'num', 'data-epsilon': 'canaries', text: measured(r.canaries?.every_round) }),
          el('td', { class: 'num', text: pct(r.modelAccuracy) }),
          el('td', { class: 'num', 'data-shown': '', text: pct(r.cellsShown) }),
        ),
      ),
    ),
  );
  targets.features.replaceChildren(
    head('column', 'kind', 'recovered', 'guessing', 'gain (points)', 'mean entropy'),
    el(
      'tbody',
      {},
      audit.features.map((f) =>
        el(
          'tr',
          {},
          el('td', { text: f.feature.name }),
          el('td', { text: f.feature.kind }),
          el('td', { class: 'num', text: pct(f.accuracy) }),
          el('td', { class: 'num', text: pct(f.random) }),
          el('td', { class: 'num', text: `${f.gain >= 0 ? '+' : ''}${(100 * f.gain).toFixed(1)}` }),
          el('td', { class: 'num', text: f.entropy === null ? '—' : f.entropy.toFixed(2) }),
        ),
      ),
    ),
  );
}

// DOM building for the page. Cell values come from the user's file: they only ever go into textContent.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (value === true) node.setAttribute(key, '');
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

export const pct = (v) => (v === null || v === undefined ? '—' : `${(100 * v).toFixed(1)}%`);

export function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(0)} KB`;
  return `${(n / (1 << 20)).toFixed(1)} MB`;
}

/** The schema table: a label choice, a use toggle and a kind switch per column. */
export function renderSchema(tbody, schema, state, onChange) {
  tbody.replaceChildren(
    ...schema.columns.map((c) => {
      const isLabel = state.label === c.name;
      const kind = state.kinds[c.name] ?? c.kind;
      // The engine leaves identifiers, pandas' index and empty columns out by default (its
      // treatment); a user puts one back with `include`, or leaves a used one out with `ignore`.
      const leftOut = c.treatment !== 'used';
      const used = leftOut ? state.include.has(c.name) || c.name in state.kinds : !state.ignore.has(c.name);
      return el(
        'tr',
        {
          class: isLabel ? 'is-label' : used ? '' : 'is-ignored',
          'data-column': c.name,
          'data-treatment': c.treatment,
        },
        el(
          'td',
          {},
          el('input', {
            type: 'radio',
            name: 'label',
            value: c.name,
            'aria-label': `use ${c.name} as the label`,
            checked: isLabel,
            disabled: c.treatment === 'empty',
            onchange: () => onChange({ label: c.name }),
          }),
        ),
        el(
          'td',
          {},
          el('input', {
            type: 'checkbox',
            class: 'use',
            'aria-label': `attack column ${c.name}`,
            checked: used && !isLabel,
            disabled: isLabel || c.treatment === 'empty',
            onchange: (e) => onChange({ use: [c.name, e.target.checked, leftOut] }),
          }),
        ),
        el('td', { class: 'name', text: c.name }),
        el(
          'td',
          {},
          el(
            'select',
            { class: 'kind', 'aria-label': `kind of ${c.name}`, onchange: (e) => onChange({ kind: [c.name, e.target.value] }) },
            el('option', { value: 'categorical', selected: kind === 'categorical', text: 'categorical' }),
            el('option', { value: 'continuous', selected: kind === 'continuous', text: 'continuous' }),
          ),
        ),
        el('td', { class: 'num', text: c.distinct }),
        el('td', { class: 'num', text: c.missing }),
        el('td', { class: 'examples', text: c.examples.join(', ') }),
        el('td', { class: 'notes', text: c.notes.join(' ') }),
      );
    }),
  );
}

// What the server guesses without the update: the better of the marginals' draw and, where it
// holds the table, the table's guess (which an attack that learnt nothing scores: its fallback).
const guessing = (report) => Math.max(report.random_baseline, report.table_baseline ?? 0);

// What each provenance says of a row (the engine's Provenance::words).
export const PROVENANCE = {
  proved: 'proved',
  consistent: 'consistent with the update, not proved',
  read: 'categories read from the update, not proved',
  ensemble: 'from the ensemble',
  prior: 'guessed without the update',
};

// The reconstructed row's header: the server's row, and how it was obtained.
export function serverHead(row) {
  const p = row.provenance;
  const title = p ? `${PROVENANCE[p]}${row.why_not_proved ? `: ${row.why_not_proved}` : ''}` : undefined;
  return el('th', { scope: 'row', class: p ? `prov-${p}` : '', title, text: p === 'proved' ? 'server ✓' : p === 'consistent' ? 'server ≈' : 'server' });
}

function reconstructedCell(report, row, f) {
  const entropy = row.entropy[f];
  // The engine reads each cell's entropy on its confidence levels (report.confidence_levels).
  const level = row.confidence[f];
  const right = row.correct[f];
  const title = [
    right ? 'recovered' : `wrong: the true value is ${row.truth[f]}`,
    entropy === null ? 'no ensemble, no confidence' : `${level} confidence (entropy ${entropy.toFixed(3)})`,
  ].join('; ');
  return el('td', { class: `conf-${level} ${right ? 'right' : 'wrong'}`, title, text: row.reconstructed[f] });
}

function featureHead(report, ...lead) {
  return el('thead', {}, el('tr', {}, ...lead.map((t) => el('th', { text: t })), ...report.features.map((f) => el('th', { text: f.name, title: f.kind }))));
}

// Row by row: each true row directly above the reconstructed row matched to it, one scroll for both.
function pairedTable(report) {
  const body = el(
    'tbody',
    {},
    report.rows.map((row, i) => [
      el('tr', { class: 'truth' }, el('td', { class: 'num', rowspan: 2, text: i + 1 }), el('th', { scope: 'row', text: 'yours' }), row.truth.map((v) => el('td', { text: v }))),
      el('tr', { class: 'reconstructed' }, serverHead(row), row.truth.map((_, f) => reconstructedCell(report, row, f))),
    ]),
  );
  return el('div', { class: 'scroll' }, el('table', { class: 'cells paired' }, featureHead(report, '#', ''), body));
}

// The two tables next to each other; scrolling one sideways scrolls the other.
function sideBySide(report) {
  const table = (cls, cells) =>
    el('table', { class: `cells ${cls}` }, featureHead(report, '#'), el('tbody', {}, report.rows.map((row, i) => el('tr', { class: cls === 'truth-table' ? 'truth' : 'reconstructed' }, el('td', { class: 'num', text: i + 1 }), cells(row)))));
  const left = el('div', { class: 'scroll' }, table('truth-table', (row) => row.truth.map((v) => el('td', { text: v }))));
  const right = el('div', { class: 'scroll' }, table('reconstruction-table', (row) => row.truth.map((_, f) => reconstructedCell(report, row, f))));
  const sync = (from, to) => from.addEventListener('scroll', () => { to.scrollLeft = from.scrollLeft; });
  sync(left, right);
  sync(right, left);
  return el('div', { class: 'side-by-side' }, el('div', { class: 'pane' }, el('h3', { text: 'Your batch' }), left), el('div', { class: 'pane' }, el('h3', { text: 'The server’s reconstruction' }), right));
}

/** The true batch beside the reconstruction, row by matched row; reconstructed cells coloured by confidence. */
export function renderCells(box, report, layout) {
  box.replaceChildren(layout === 'side' ? sideBySide(report) : pairedTable(report));
}

export function renderLegend(legend, report) {
  const hasEnsemble = report.rows.some((r) => r.entropy.some((e) => e !== null));
  // The engine's levels: entropy below the first is high confidence, below the second medium.
  const { categorical: cat, continuous: cont } = report.confidence_levels;
  const band = (i) => `entropy below ${cat[i]} (categorical) or ${cont[i]} (continuous)`;
  legend.replaceChildren(
    el('span', { class: 'swatch conf-high', text: 'high confidence', title: band(0) }),
    el('span', { class: 'swatch conf-medium', text: 'medium', title: band(1) }),
    el('span', { class: 'swatch conf-low', text: 'low', title: 'the rest' }),
    el('span', { class: 'swatch wrong', text: 'struck out: wrong' }),
    el('span', { class: 'info', text: 'server ✓: proved a row of your batch; server ≈: consistent with the update, not proved (hover for why)' }),
    ...(hasEnsemble ? [] : [el('span', { class: 'info', text: '(this attack has no ensemble, so no confidence)' })]),
  );
}

/** Accuracy of the cells in each confidence band: what makes the attacker's confidence trustworthy. */
export function renderBuckets(box, report) {
  const bands = report.entropy_buckets.filter((b) => b.cells > 0);
  if (bands.length === 0) {
    box.replaceChildren();
    return;
  }
  const rows = bands.map((b) =>
    el(
      'tr',
      {},
      el('td', { text: b.kind }),
      // A null edge is unbounded.
      el('td', { text: `${b.from ?? '−∞'} … ${b.to ?? '∞'}` }),
      el('td', { class: 'num', text: b.cells }),
      el('td', { class: 'num', text: pct(b.accuracy) }),
    ),
  );
  box.replaceChildren(
    el(
      'table',
      { class: 'buckets' },
      el('caption', { text: 'Accuracy by the attacker’s confidence (entropy band)' }),
      el('thead', {}, el('tr', {}, el('th', { text: 'kind' }), el('th', { text: 'entropy' }), el('th', { text: 'cells' }), el('th', { text: 'right' }))),
      el('tbody', {}, rows),
    ),
  );
}


const epsilon = (e) => (!Number.isFinite(e) ? '∞' : e >= 1000 ? e.toExponential(2) : e.toPrecision(3));

// `attack`: the engine's description of the attack that ran (its label, whether it inverts).
export function renderSummary(box, info, report, attack) {
  const a = report.accuracy;
  const r = report.random_accuracy;
  const card = (name, value, detail, cls = '') =>
    el('div', { class: `card ${cls}`, 'data-metric': name }, el('div', { class: 'value', text: value }), el('div', { class: 'name', text: name }), el('div', { class: 'detail', text: detail }));
  const c = report.config;
  // What the attack alone reports, by what it reconstructs (report.details.kind).
  const d = report.details;
  const attr = d.kind === 'attribute' ? d : null;
  const cf = d.kind === 'cafe' ? d : null;
  if (attr) {
    // The attribute attack: one column, scored row by row, against what the server has without
    // the update.
    box.replaceChildren(
      card(`${attr.column} recovered`, pct(attr.accuracy), `of ${report.rows.length} rows (${attr.l2 ? 'L2' : 'cosine'} matching)`, attr.accuracy > Math.max(attr.public_classifier, attr.marginal) ? 'leak' : ''),
      card('with the public prior', pct(attr.with_public_prior), 'the attack × the public classifier', attr.with_public_prior > Math.max(attr.public_classifier, attr.marginal) ? 'leak' : ''),
      card('public classifier', pct(attr.public_classifier), `trained on ${attr.public_rows} public rows`),
      card('most frequent value', pct(attr.marginal), 'of the public rows'),
      card('uniform guess', pct(attr.random), `1 of ${attr.values} values`),
      ...(attr.membership
        ? [card('client rows told apart', pct(attr.membership.accuracy), `of ${attr.membership.candidates} candidates, by ${attr.membership.method}`)]
        : []),
      ...report.confident_quarter.map((q) =>
        card(`surest quarter of ${attr.column}`, pct(q.quarter_accuracy), `${q.quarter_cells} of ${q.cells} rows; all: ${pct(q.accuracy)}`, q.quarter_accuracy > q.accuracy ? 'leak' : ''),
      ),
    );
  } else if (cf) {
    // CAFE: every shared row, aligned by its index; how well each step recovered.
    box.replaceChildren(
      card('cells recovered', pct(a.total), `random guessing: ${pct(report.random_baseline)}${report.table_baseline != null ? `; the table's guess, no update: ${pct(report.table_baseline)}` : ''}`, a.total > guessing(report) ? 'leak' : ''),
      card('rows fully recovered', `${Math.round(a.exact_rows * report.rows.length)} / ${report.rows.length}`, 'every cell right'),
      card('rounds', String(cf.rounds), `of ${cf.batch} indices; ${cf.covered} of ${cf.rows} rows sampled`),
      card('step I error', cf.step1_error.toExponential(1), '∇U per row, relative'),
      card('step II error', cf.step2_error.toExponential(1), 'first-layer inputs, relative'),
      ...(cf.fake_gradients === null ? [] : [card('training loss', cf.training_loss_fake.toFixed(3), `with fake gradients; ${cf.training_loss.toFixed(3)} without`)]),
    );
  } else box.replaceChildren(
    card('overall accuracy', pct(a.total), `random guessing: ${pct(report.random_baseline)}${report.table_baseline != null ? `; the table's guess, no update: ${pct(report.table_baseline)}` : ''}`, a.total > guessing(report) ? 'leak' : ''),
    card('categorical', pct(a.categorical), `random: ${pct(r.categorical)}`),
    card('continuous', pct(a.continuous), `random: ${pct(r.continuous)} (within tolerance)`),
    card('rows fully recovered', `${Math.round(a.exact_rows * report.rows.length)} / ${report.rows.length}`, 'every cell right'),
    report.regression
      ? card(`label ${report.regression.label}`, pct(report.regression.within_tolerance), `within ±${report.regression.tolerance.toFixed(2)}, reconstructed with each row; drawn from the table: ${pct(report.regression.random_within_tolerance)}`, report.regression.within_tolerance > report.regression.random_within_tolerance ? 'leak' : '')
      : card('labels', c.labels === 'known' ? 'known' : pct(report.label_accuracy), c.labels === 'known' ? 'given to the server' : 'restored from the update'),
    // The attacker's surest quarter of cells (lowest ensemble entropy) per kind: it can leak even
    // where the whole batch looks safe (the paper's Table 4).
    ...report.confident_quarter.map((q) =>
      card(`surest quarter, ${q.kind}`, pct(q.quarter_accuracy), `${q.quarter_cells} of ${q.cells} cells; all: ${pct(q.accuracy)}`, q.quarter_accuracy > q.accuracy ? 'leak' : ''),
    ),
  );
  const steps = attack?.inverts === false ? '' : `, ${c.iterations} steps`;
  const setting = [];
  if (c.protocol.kind === 'fedavg') {
    const prior = d.kind !== 'rows' || d.epoch_prior === null ? '' : `, epoch prior λ = ${d.epoch_prior}`;
    const o = c.protocol.optimizer;
    const optimiser =
      o.kind === 'sgd'
        ? `SGD${o.momentum ? `, momentum ${o.momentum}${o.nesterov ? ' (Nesterov)' : ''}` : ''}`
        : `${o.kind === 'adam' ? 'Adam' : 'AdamW'}, betas ${o.betas.join(', ')}`;
    const decay = o.weight_decay ? `, weight decay ${o.weight_decay}` : '';
    const order = c.protocol.order === 'shuffled' ? ', rows reshuffled every epoch' : '';
    setting.push(`FedAvg: ${c.protocol.epochs} local epoch${c.protocol.epochs === 1 ? '' : 's'} in batches of ${c.protocol.local_batch}, ${optimiser}${decay}, lr ${c.protocol.lr}${order}${prior}`);
  }
  if (c.clients > 1) setting.push(`${c.clients} clients averaged (${c.clients * c.batch_size} rows in the update)`);
  if (c.defence) {
    const d = c.defence;
    if (d.clip !== null) setting.push(`clipped to ${d.clip}`);
    if (d.noise > 0) setting.push(`noise σ = ${d.noise}`);
    if (d.fake_gradients !== null) setting.push(`fake gradients (${d.fake_gradients})`);
    // ε is null in JSON when unbounded: no clipping, or clipping without noise.
    if (report.privacy) {
      const e = report.privacy.epsilon;
      setting.push(e === null ? `no privacy guarantee (${d.clip === null ? 'not clipped' : 'no noise'})` : `ε = ${epsilon(e)} at δ = ${report.privacy.delta} for this one release`);
    }
  }
  if (c.training_epochs > 0) setting.push(`after ${c.training_epochs} epochs of training (model accuracy ${pct(report.model_accuracy)})`);
  const span = d.kind === 'rows' ? d.subspace : null;
  if (span) {
    setting.push(span.weight > 0
      ? `first-layer span prior: rows kept in a span of ${span.rank} of ${span.feasible} directions (weight ${span.weight}), ${span.decoded_rows} of ${span.rows} member rows decoded exactly in it; ${span.proved_rows} of the batch's rows proved exactly from the first layer's ReLU pattern`
      : `first-layer span prior off: ${span.off}`);
  }
  const second = d.kind === 'rows' ? d.second_layer : null;
  if (second) {
    setting.push(second.proof
      ? `${second.certified_rows} of the batch's rows proved from the second layer (its gradient spans the rows' activations: rank ${second.rank} of ${second.width})` +
        (second.peeled_rows ? `, and ${second.peeled_rows} more once the proved rows were peeled off the update` : "")
      : `${second.certified_rows} of the client's rows taken near the second layer's update (the span of its ${second.rank} leading directions; near, not proved)` +
        (second.undone_adoptions ? `; ${second.undone_adoptions} more put back as they were, since with them the rows no longer reproduced the update` : ""));
  }
  if (report.provenance?.length) {
    setting.push(`rows ${report.provenance.map((g) => `${g.rows} ${PROVENANCE[g.provenance]} (${(100 * g.accuracy).toFixed(1)} % right)`).join(', ')}`);
    for (const r of report.provenance.flatMap((g) => g.reasons ?? [])) setting.push(`not proved (${r.rows} row${r.rows === 1 ? '' : 's'}): ${r.why}`);
  }
  for (const n of report.not_applied ?? []) setting.push(`${n.part} not applied: ${n.why}`);
  if (report.regression) {
    const g = report.regression;
    const how = report.attack === 'random' ? 'drawn from the table' : g.read_off_update ? 'read off the update, which the rows explain exactly' : 'estimated from the update with the reconstructed rows';
    setting.push(`each row's ${g.label} ${how}: ${report.rows.map((r) => `${r.label} (true ${r.truth_label})`).join(', ')}; mean error ${g.mean_absolute_error.toFixed(2)}`);
    if (g.shadow_update_within_tolerance != null) {
      setting.push(`on a shadow client the update's labels scored ${pct(g.shadow_update_within_tolerance)} and the table's likeliest value ${pct(g.shadow_prior_within_tolerance)}: ${g.prior_labels ? `${g.prior_labels} rows not proved take the likeliest value` : "every label is the update's"}`);
    }
  } else if (report.rows.length && report.rows.every((row) => row.label != null)) {
    const right = report.config.labels === 'restored' ? ` (${(100 * report.label_accuracy).toFixed(1)} % right)` : '';
    setting.push(`each row's label read off the update, which the rows explain exactly${right}`);
  }
  if (d.kind === 'rows' && d.answered_after != null) {
    const settled = (report.provenance ?? []).some((g) => g.provenance !== 'proved') ? 'proved or consistent with the update (each such row says why it is not proved)' : 'proved';
    setting.push(`every row ${settled} after ${d.answered_after} steps, so the attack answered then`);
  }
  if (d.kind === 'rows' && d.ensemble) {
    const e = d.ensemble;
    const rounds = e.rounds.map((r) => `${r.members} members: ${(100 * r.changed).toFixed(1)} %`).join(', ');
    setting.push(`ensemble: ${e.members} of up to ${e.most} members, by its stopping rule: ${e.rule}${rounds ? ` (cells changed among those called sure or fairly sure, per round: ${rounds})` : ''}`);
  }
  const held = d.kind === 'rows' ? d.categories_held : null;
  if (held) {
    const check = held.misread == null ? '' : held.misread === 0 ? '; against your rows every category is read right' : `; against your rows ${held.misread === 1 ? '1 category is' : `${held.misread} categories are`} read wrongly: ${held.missed ?? 0} held by a row but not shown, ${held.misread - (held.missed ?? 0)} shown but held by none`;
    const gain = (g) => `${g >= 0 ? '+' : ''}${(100 * g).toFixed(1)} points over the marginals, less two standard errors`;
    const read = held.rows_read
      ? `; ${held.rows_read} rows' every category read by the first-layer units its rarer categories reach (not proved; their continuous cells the marginals'${held.read_gain != null ? `; on shadow clients they gained ${gain(held.read_gain)}` : ''})`
      : held.read_gain != null && held.read_gain <= 0
        ? `; rows read by the first-layer units their rarer categories reach were not put in: on shadow clients they gained no sure ground (${gain(held.read_gain)})`
        : '';
    setting.push(`the update shows which categories the rows hold: ${held.held} of the encoding's ${held.categories} (Adam leaves a category no row holds as the first layer's bias update, negated); one it does not show is held by no row, or only by rows whose first-layer gradient is too small for the update to show (a row whose label the network nearly predicts, or is sure of)${check}${read}`);
  }
  // What the update shows of the batch, checked against the client's rows: beside the figure,
  // whether the attack or the update ran out.
  const rowsShown = d.kind === 'rows' ? d.shown : null;
  if (rowsShown) {
    setting.push(rowsShown.shown === rowsShown.rows
      ? "the update shows every row of the batch (each one's gradient stands clear of its float32 rounding)"
      : `the update shows ${rowsShown.shown} of the batch's ${rowsShown.rows} rows: the others' gradients lie below its float32 rounding, so no attack on this update can tell them from rows the network is as sure of`);
  }
  const cellsShown = d.kind === 'rows' ? d.cells_shown : null;
  if (cellsShown) {
    const hidden = cellsShown.tested - cellsShown.shown;
    const by = cellsShown.least_shown != null ? ` by ${cellsShown.least_shown.toExponential(1)} of its norm or more` : '';
    const drawn = cellsShown.drawn ? ` (a random draw of the batch's ${cellsShown.cells}, the check's time limit)` : '';
    setting.push(`the update shows ${cellsShown.shown} of the ${cellsShown.tested} cells moved${drawn}, each on its own (each cell of your rows moved just past its scoring tolerance, or to another category, moves the client's replayed update${by}${cellsShown.own_orders ? ", replayed in the orders the client drew, which the server is not told" : ''}): ${hidden ? `the other ${hidden} move it by less, so no attack on this update can pin them down` : "what the attack misses there is its own limit, not the update's"}`);
  }
  for (const r of d.kind === 'rows' ? d.determined ?? [] : []) {
    setting.push(`${r.column} read from ${r.by}: every row of the table with the same ${r.by} has the same ${r.column} (${r.categories} categories), so the attack takes it from the ${r.by} it recovers`);
  }
  const fallback = d.kind === 'rows' ? d.fallback : null;
  if (fallback) {
    const p = (v) => (v == null ? '–' : `${(100 * v).toFixed(1)} %`);
    // Where the server holds the table's rows, cells fall back to its guess from them where its
    // own batches show that guess beating the marginals' draw, else to the draw (the engine's
    // report::text says the same).
    const weighed = fallback.table_guess;
    const toTable = fallback.shadow_of_table && (weighed == null || weighed.taken);
    const [to, guess, rows] = toTable
      ? ["the table's guess (rows of the table outside this batch, chosen without the update) where a whole row falls back, else to the marginals' draw", "the table's guess", "the table's guess"]
      : ["the table's marginals", "the marginals' guess", 'rows drawn from the marginals'];
    setting.push(`${fallback.prior_cells} of ${fallback.cells} cells fell back to ${to} (${fallback.prior_rows} whole rows), as a shadow client the server simulated chose (attacked as this one was${fallback.shadow_members ? `, ${fallback.shadow_members} member${fallback.shadow_members === 1 ? '' : 's'}` : ''}; its rows ${fallback.shadow_of_table ? "the table's own outside this batch, each of the label the server gave its slot" : 'drawn from the marginals'}, its update's norm ${fallback.shadow_update_norm.toFixed(3)} against this one's ${fallback.update_norm.toFixed(3)}): there the ensemble alone scored ${p(fallback.shadow_ensemble)}, ${guess} ${p(fallback.shadow_prior)}, the mix ${p(fallback.shadow_chosen)}, a gain kept only where it is sure${fallback.prior_spread != null ? `; the ensemble's continuous cells were read with the table's own values as their prior (each moved to the value the table makes likeliest within ${fallback.prior_spread} of the members' spread), which the shadow client showed to gain` : ''}${fallback.imputed ? "; the cells that fell back in rows that kept others were imputed from the table's rows most like them on the cells kept, not left to the guess, which the shadow client showed to gain" + (fallback.imputed_without_update != null ? ` (the same imputation around kept cells drawn from the marginals, with nothing from the update, scores ${p(fallback.imputed_without_update)}: up to that, the gain over guessing is the table's, not the update's)` : '') : ''}${fallback.consistent_unheld ? `; the rows its update held only as consistent scored surely below ${guess} there, so this update's consistent rows were not held either: they fell back as the ensemble's rows do` : ''}${fallback.consistent_like_draw ? "; the marginals' draw in the place of the rows this update held only as consistent reproduces it to its float32 rounding: the update does not tell them from a guess, so they fell back as the ensemble's rows do" : ''}${fallback.untested && !fallback.exhausted && fallback.prior_cells ? '; its update held every row of its batch, so no row the ensemble gave was tested there, and every cell of the rows this update does not hold is the guess' : ''}${fallback.unlike_shadow && !fallback.exhausted && fallback.prior_cells ? `; its reconstruction explained its update to 1 − cos ${fallback.shadow_update_fit.toFixed(3)}, this one explains this update only to ${fallback.update_fit.toFixed(3)}, so its thresholds do not speak for this batch and every cell of the rows the update does not hold is the guess` : ''}${fallback.shadow_harder ? `; its reconstruction explained its update only to 1 − cos ${fallback.shadow_update_fit.toExponential(1)}, this one explains this update to ${fallback.update_fit.toExponential(1)}, so its thresholds do not speak for this batch and every cell the ensemble gives is kept` : ''}`);
    // The table's guess not taken: it scored below the draw on more than 1 in 20 of the
    // server's batches (`GuessWeighed::taken`).
    if (fallback.shadow_of_table && weighed != null && !toTable) {
      const sgn = (v) => `${v >= 0 ? '+' : ''}${(100 * v).toFixed(1)}`;
      setting.push(`the table's guess was not taken: on ${weighed.batches} batches the server simulated from its rows it scored below the marginals' draw on ${weighed.below} (more than one in twenty; ${sgn(weighed.gain)} points on the mean), so rows that fell back whole took the draw, the guessing this report is set beside`);
    }
    // A reshuffling client's thresholds weighed on several shadow batches (`assess::fallback::draws`).
    if (fallback.gain_across_shadows != null && fallback.gain_bound_across_shadows != null) {
      const pts = (v) => `${v >= 0 ? '+' : ''}${(100 * v).toFixed(1)}`;
      const worst = fallback.worst_shadow_fit != null ? `, the worst fit among them 1 − cos ${fallback.worst_shadow_fit.toFixed(3)}` : '';
      const batches = fallback.shadow_batches === 1 ? '1 shadow batch' : `${fallback.shadow_batches} shadow batches`;
      // Fewer than the engine's most: they stopped at one that explained its update no better.
      const stopped = fallback.shadow_batches_stopped ? "; they stopped at one whose reconstruction explained its update no better than this one's" : '';
      setting.push(`this client reshuffles its rows, and its update turns on the orders it drew as much as on its rows: the thresholds were weighed on ${batches}, each with rows and orders of its own (their mix against ${guess}: ${pts(fallback.gain_across_shadows)} points on average, ${pts(fallback.gain_bound_across_shadows)} less two standard errors of their spread${worst})${stopped}`);
      if (fallback.unlike_every_shadow && !fallback.exhausted && fallback.update_fit != null && fallback.worst_shadow_fit != null) {
        setting.push(`this client's orders fell worse than any shadow batch's: its reconstruction explains its update only to 1 − cos ${fallback.update_fit.toFixed(3)}, the worst shadow's its own to ${fallback.worst_shadow_fit.toFixed(3)}, so their thresholds do not speak for it and every cell of the rows the update does not hold is ${guess}`);
      } else if (fallback.unsure_across_shadows && !fallback.exhausted) {
        setting.push(`this client's reconstruction explains its update worse than every shadow batch did its own, and the thresholds' gain over ${guess} was not sure across them, so every cell of the rows the update does not hold is ${guess}`);
      }
    }
    // How far the update is from explained, as the text report says it (`report::text`).
    if (fallback.update_fit != null && fallback.prior_fit != null && (fallback.exhausted || fallback.prior_cells)) {
      const fits = `1 − cos ${fallback.update_fit.toFixed(3)} against ${rows}' ${fallback.prior_fit.toFixed(3)}`;
      setting.push(fallback.exhausted
        ? `the attack ran out of strength, not necessarily your rows their exposure: its reconstruction explains the update no better than ${rows} (${fits}), so every cell of the rows the update's span does not hold is ${guess}`
        : `where cells fell back, the attack, not necessarily your client, ran out of strength: the reconstruction explains the update to ${fits}`);
    }
  }
  if (report.member_steps.length) {
    const ms = report.member_steps;
    const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
    setting.push(`members stopped after ${Math.min(...ms)}–${Math.max(...ms)} steps (mean ${Math.round(mean)} of ${c.iterations})`);
  }
  // Where the inversions' time went (a run in one worker reports it): on a GPU the thread only
  // issues the steps and waits for the device at a readback; on the CPU it computes them.
  const t = report.timing;
  const timing = t?.steps
    ? ` Its ${t.steps} steps: ${t.issue_seconds.toFixed(2)} s issuing them on the engine's thread, ${t.wait_seconds.toFixed(2)} s waiting for ${t.readbacks} readbacks.`
    : '';
  info.textContent =
    (setting.length ? `${setting.join('; ')}. ` : '') +
    (cf
      ? `CAFE on ${cf.rows} rows shared by ${cf.parties} parties, ${cf.rounds} rounds of ${c.batch_size} indices (seed ${c.seed}) `
      : `${attack?.label ?? report.attack} on a batch of ${c.batch_size} rows (${c.attack.ensemble ? `ensemble ${c.attack.ensemble}` : 'one run'}${steps}, seed ${c.seed}) `) +
    `drawn from ${report.table_rows} rows${report.dropped_rows ? ` (${report.dropped_rows} with missing values dropped)` : ''}; ` +
    `${report.seconds.toFixed(1)} s on ${report.backend.label}.` +
    timing +
    (report.warnings.length ? ` Warnings: ${report.warnings.join('; ')}` : '');
}

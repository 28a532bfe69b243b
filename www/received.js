// "Already have a client's update? Attack it": the files a real client's round leaves, read in this
// tab and attacked by the engine's worker (`LeakscopeWorker.attackUpdate`). The engine reads the
// formats and fills what the files decide (rows, network, labels); this module only moves files and
// shows the reconstruction, each cell coloured by the attacker's confidence (no truth to compare).
import { el, PROVENANCE, serverHead } from './render.js';

const $ = (id) => document.getElementById(id);

// A number from one of the section's inputs, named by its label where it is refused.
function number(id, ok, what) {
  const input = $(id);
  const raw = input.value.trim();
  const value = Number(raw);
  if (raw === '' || !Number.isFinite(value) || !ok(value)) {
    throw new Error(`${input.closest('label').firstChild.textContent.trim()} must be ${what}, not “${raw}”`);
  }
  return value;
}

function options() {
  const o = { protocol: $('received-protocol').value };
  const rows = $('received-rows').value.trim();
  if (rows) o.batchSize = Number(rows);
  // The client's local training as it ran: the engine refuses it on FedSGD, and momentum beside Adam
  // (Adam's betas and ε are torch.optim's defaults).
  if (o.protocol === 'fedavg') {
    o.localEpochs = Number($('received-epochs').value);
    o.localBatch = Number($('received-batch').value);
    o.clientLr = number('received-lr', (v) => v > 0, 'a number > 0');
    o.optimizer = $('received-optimizer').value;
    if (o.optimizer === 'sgd') o.momentum = number('received-momentum', (v) => v >= 0 && v < 1, 'a number in [0, 1)');
    o.weightDecay = number('received-weight-decay', (v) => v >= 0, 'a number ≥ 0');
    o.localOrder = $('received-order').value;
  }
  return o;
}

function render(report) {
  const c = report.config;
  const counts = report.confidence_counts.map((k) => `${k.kind}: ${k.high} high, ${k.medium} medium, ${k.low} low`).join('; ');
  $('received-info').textContent =
    `${report.rows.length} rows reconstructed from the update (no ground truth, so no accuracy); labels ` +
    `${c.labels === 'known' ? 'from the file' : 'restored from the update'}: ${report.labels.join(', ')}. ` +
    `Cells by the attacker's confidence: ${counts}. ` +
    (report.provenance ?? []).map((g) => `${g.rows} row${g.rows === 1 ? '' : 's'} ${PROVENANCE[g.provenance]}${g.reasons.length ? ` (${g.reasons.map((r) => `${r.rows}: ${r.why}`).join('; ')})` : ''}. `).join('') +
    (report.not_applied ?? []).map((n) => `${n.part[0].toUpperCase()}${n.part.slice(1)} not applied: ${n.why}. `).join('') +
    (report.update_fit ? `${report.update_fit.says[0].toUpperCase()}${report.update_fit.says.slice(1)}. ` : '') +
    `${report.backend.label}, ${report.seconds.toFixed(1)} s.`;
  // Each row's own label, where the rows explain the update's last layer exactly.
  const labelled = report.rows.length > 0 && report.rows.every((row) => row.label != null);
  const labelHead = labelled ? [el('th', { text: 'label', title: "read off the update's last layer, row by row" })] : [];
  const head = el('thead', {}, el('tr', {}, el('th', { text: '#' }), el('th', { text: '' }), ...labelHead, ...report.features.map((f) => el('th', { text: f.name, title: f.kind }))));
  const body = el(
    'tbody',
    {},
    report.rows.map((row, i) =>
      el(
        'tr',
        { class: 'reconstructed' },
        el('td', { class: 'num', text: i + 1 }),
        serverHead(row),
        labelled ? el('td', { class: 'label', text: row.label }) : [],
        row.cells.map((v, f) => {
          const entropy = row.entropy[f];
          const title = entropy === null ? 'no ensemble, no confidence' : `${row.confidence[f]} confidence (entropy ${entropy.toFixed(3)})`;
          return el('td', { class: `conf-${row.confidence[f]}`, title, text: v });
        }),
      ),
    ),
  );
  $('received-cells').replaceChildren(el('div', { class: 'scroll' }, el('table', { class: 'cells' }, head, body)));
  $('received-results').hidden = false;
}

/** Wire the section to the page's engine (`engine()` gives the started LeakscopeWorker). */
export function setupReceived(engine, download) {
  let controller = null;
  let report = null;
  const error = (message) => {
    $('received-error').textContent = message;
    $('received-error').hidden = !message;
  };
  $('received-run').addEventListener('click', async () => {
    const [encoding, weights, update] = ['received-encoding', 'received-weights', 'received-update'].map((id) => $(id).files[0]);
    error('');
    if (!encoding || !update) {
      error('Choose the encoding and the update (and the network the server sent, unless the update is a leakscope-update/1 JSON).');
      return;
    }
    let o;
    try {
      o = options();
    } catch (e) {
      error(e.message);
      return;
    }
    const worker = await engine();
    controller = new AbortController();
    $('received-run').disabled = true;
    $('received-cancel').hidden = false;
    $('received-results').hidden = true;
    $('received-status').textContent = 'reading the files…';
    document.body.dataset.received = 'running';
    try {
      report = await worker.attackUpdate({ encoding, update, weights }, o, {
        signal: controller.signal,
        onProgress: (p) => { $('received-status').textContent = `${p.phase}: step ${p.step} of ${p.of}`; },
      });
      render(report);
      $('received-status').textContent = '';
      document.body.dataset.received = 'done';
    } catch (e) {
      $('received-status').textContent = '';
      if (e?.name === 'AbortError') $('received-status').textContent = 'Cancelled; nothing was kept.';
      else error(`The update could not be attacked: ${e?.message ?? e}`);
      document.body.dataset.received = 'failed';
    } finally {
      controller = null;
      $('received-run').disabled = false;
      $('received-cancel').hidden = true;
    }
  });
  $('received-cancel').addEventListener('click', () => controller?.abort(new DOMException('cancelled', 'AbortError')));
  $('received-download').addEventListener('click', () => report && download(report, $('received-update').files[0]?.name ?? 'update'));
}

// Downloads of a report, made in the page (a blob: URL), never sent anywhere.

function save(text, type, name) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

function stem(fileName) {
  return (fileName.split(' ')[0] || 'table').replace(/\.[^.]*$/, '');
}

export function downloadJson(report, fileName) {
  save(JSON.stringify(report, null, 2), 'application/json', `leakscope-${stem(fileName)}-${report.attack}.json`);
}

export function downloadAudit(audit, fileName) {
  save(JSON.stringify(audit, null, 2), 'application/json', `leakscope-${stem(fileName)}-audit.json`);
}

// RFC 4180 quoting: a field with a comma, quote or line break is quoted, quotes doubled.
function field(value) {
  const s = value === null || value === undefined ? '' : String(value);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** One line per cell: where it is, the true and the reconstructed value, right or not, and the confidence. */
export function cellsCsv(report) {
  const lines = [['row', 'column', 'kind', 'true', 'reconstructed', 'correct', 'entropy', 'confidence'].join(',')];
  report.rows.forEach((row, i) => {
    report.features.forEach((f, j) => {
      const e = row.entropy[j];
      lines.push(
        [i + 1, f.name, f.kind, row.truth[j], row.reconstructed[j], row.correct[j], e ?? '', row.confidence[j]]
          .map(field)
          .join(','),
      );
    });
  });
  return `${lines.join('\r\n')}\r\n`;
}

export function downloadCsv(report, fileName) {
  save(cellsCsv(report), 'text/csv', `leakscope-${stem(fileName)}-${report.attack}-cells.csv`);
}

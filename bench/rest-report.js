'use strict';
/** bench/run.js's report: the results table (hub, baseline, ratio, target, result) and its notes. */
const os = require('node:os');

function fmt(v, unit) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return '-';
  if (unit === 'req/s') return Math.round(v).toLocaleString('en-US');
  if (unit === 'MB') return v.toFixed(1);
  return v < 10 ? v.toFixed(3) : v.toFixed(1);
}

/** The table bench/run.js prints: one row per result, then each row's details and a load note. */
function reportTable(results) {
  const head = ['#', 'Metric', 'Unit', 'Hub', 'Baseline', 'Hub/base', 'Target', 'Result'];
  const rows = results.map((r) => [
    r.id,
    r.metric,
    r.unit,
    fmt(r.hub, r.unit),
    fmt(r.baseline, r.unit),
    Number.isFinite(r.ratio) ? `${r.ratio.toFixed(2)}x` : '-',
    r.target,
    r.result,
  ]);
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const right = new Set([3, 4, 5]);
  const line = (cells) => cells.map((c, i) => (right.has(i) ? String(c).padStart(w[i]) : String(c).padEnd(w[i]))).join('  ');
  const out = [];
  out.push('', 'SpeakerHub REST bench (baseline = bare node:http server in the same run)');
  out.push(line(head), w.map((n) => '-'.repeat(n)).join('  '));
  for (const r of rows) out.push(line(r));
  out.push('');
  out.push('  Hub/base for throughput is the median of the per-pair ratios of interleaved slices; for the others hub / baseline.');
  if (results.some((r) => r.result === 'MISS*'))
    out.push('  MISS* = the bare baseline misses this absolute target too, in this run, on this machine.');
  for (const r of results) if (r.detail) out.push(`  ${r.id} ${r.metric}: ${r.detail}`);
  const busy = results.filter((r) => r.load && r.load.otherCores > 0.25);
  if (busy.length) {
    out.push(
      '',
      `  NOTE: other processes used up to ${Math.max(...busy.map((r) => r.load.otherCores)).toFixed(2)} of the ${os.cpus().length} CPU cores during the runs;`,
    );
    out.push('  absolute figures are lower and noisier than on an idle machine (the interleaved ratios much less so).');
  }
  return `${out.join('\n')}\n`;
}

module.exports = { reportTable };

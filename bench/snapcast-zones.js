#!/usr/bin/env node
'use strict';
/**
 * Snapcast zones benchmark (issue 27; chained in npm run bench, needs dist/ from npm run build
 * and snapserver, snapclient, ffmpeg). A hub in this process, a real snapserver declaring a
 * pool of 3 hub-fed streams, 6 real snapclients on loopback (stdout captures, read-stamped).
 * Figures, each beside a baseline from the same run (one zone of 2 clients started alone):
 *
 *  1. start latency per zone: REST request sent → both of the zone's snapclients output its
 *     tone, p50/p95, for 3 zones of 2 clients started at once by 3 sessions. Goal: p95 within
 *     2× the baseline's.
 *  2. in-zone skew: the two clients' output instants of the tone's onset, p95. Goal: within the
 *     baseline's + 5 ms.
 *
 * The measuring code is test/drivers/snapcast/zone-latency.ts (with test/party/stamped-capture.ts),
 * compiled here to .bench-build/ by bench/tsconfig.snapcast-zones.json.
 * Exit code 0 whatever the figures say; 1 if anything failed.
 */
const { spawnSync } = require('node:child_process');
const { join } = require('node:path');

const ROUNDS = Number(process.env.BENCH_SNAPCAST_ZONES_ROUNDS || 5);
const root = join(__dirname, '..');
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};
const fmt = (x) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');

async function main() {
  let failed = false;
  try {
    const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', join(__dirname, 'tsconfig.snapcast-zones.json')], {
      cwd: root,
      stdio: 'inherit',
    });
    if (tsc.status !== 0) throw new Error('tsc -p bench/tsconfig.snapcast-zones.json failed');
    const { measureSnapcastZones } = require(join(root, '.bench-build', 'test', 'drivers', 'snapcast', 'zone-latency.js'));
    const r = await measureSnapcastZones({ rounds: ROUNDS });
    const lat = (xs) => xs.map((x) => x.latencyMs);
    const skew = (xs) => xs.map((x) => x.skewMs);
    const [a50, a95, t50, t95] = [pct(lat(r.alone), 50), pct(lat(r.alone), 95), pct(lat(r.together), 50), pct(lat(r.together), 95)];
    const [as95, ts95] = [pct(skew(r.alone), 95), pct(skew(r.together), 95)];
    const rows = [
      [`1. start latency, one zone of ${r.perZone} alone [baseline]`, `p50 ${fmt(a50)} ms, p95 ${fmt(a95)} ms`, ''],
      [
        `1. start latency per zone, ${r.zones} zones at once`,
        `p50 ${fmt(t50)} ms, p95 ${fmt(t95)} ms (${fmt(t95 / a95)}× baseline)`,
        t95 <= 2 * a95 ? 'PASS' : 'MISS',
      ],
      [`2. in-zone skew, one zone alone [baseline]`, `p95 ${fmt(as95)} ms`, ''],
      [`2. in-zone skew, ${r.zones} zones at once`, `p95 ${fmt(ts95)} ms`, ts95 <= as95 + 5 ? 'PASS' : 'MISS'],
    ];
    console.log(
      `\nSnapcast zones (real snapserver + ${r.zones * r.perZone} snapclients, ${r.rounds} rounds; ${r.zones} zones × ${r.perZone} clients)`,
    );
    for (const [name, value, verdict] of rows) console.log(`  ${name.padEnd(58)} ${value.padEnd(44)} ${verdict}`);
  } catch (e) {
    failed = true;
    console.error('snapcast zones bench failed:', e);
  }
  process.exit(failed ? 1 : 0);
}

main();

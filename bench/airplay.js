#!/usr/bin/env node
'use strict';
/**
 * AirPlay benchmark (part of `npm run bench`): three real shairport-sync receivers, each in its
 * own network namespace, play one party play from the hub's RAOP sender.
 *  - start skew: spread of the first pulse across the receivers, over several plays
 *    (goal p50 < 5 ms, worst < 10 ms);
 *  - drift: change of the receivers' offsets between the first pulse and one 60 s later (goal < 2 ms);
 *  - announce: play() of an announcement (an overlay) on one receiver while two play on, to
 *    its first audible output written, next to the latency it plays at
 *    (airplay.announcementLatencyMs). shairport-sync's stdout back end writes up to 1 s ahead
 *    of playing, so this is not when it is heard: bench/first-sound.js times that.
 * Timing comes from when each receiver's captured bytes arrive (see test/drivers/airplay/skew.ts).
 * Needs root (network namespaces) and shairport-sync, avahi-daemon, dbus (scripts/install-test-deps.sh).
 */
const { join } = require('node:path');

const fmt = (n, d = 1) => (n === undefined || n === null || Number.isNaN(n) ? 'n/a' : Number(n).toFixed(d));
const p50 = (xs) => {
  if (!xs.length) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
};

async function main() {
  const { measureAirPlaySync } = require(join(__dirname, '..', '.bench-build', 'test', 'drivers', 'airplay', 'skew.js'));
  const r = await measureAirPlaySync({ rounds: Number(process.env.AIRPLAY_ROUNDS ?? 5), seconds: 62 });
  const all = [...r.startSkewMs];
  console.log('AirPlay (3 shairport-sync receivers, one party play)');
  console.log(`  start skew   p50 ${fmt(p50(all))} ms  worst ${fmt(Math.max(...all))} ms  (${all.length} plays; goal p50 < 5, worst < 10)`);
  console.log(
    `  pulse skew over ${r.seconds} s  p50 ${fmt(p50(r.pulseSkewMs))} ms  worst ${fmt(Math.max(...r.pulseSkewMs))} ms  (${r.pulseSkewMs.length} pulses)`,
  );
  console.log(`  drift after ${r.seconds} s  ${fmt(r.driftMs, 2)} ms  (goal < 2)`);
  console.log(
    `  announce on one receiver (others play on): first audio written after p50 ${fmt(p50(r.announceMs), 0)} ms, worst ${fmt(Math.max(...r.announceMs), 0)} ms` +
      ` (it plays at the announcement latency, ${r.latencyMs} ms; the back end writes ahead, so heard later: bench/first-sound.js)`,
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

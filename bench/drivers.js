#!/usr/bin/env node
'use strict';
/**
 * Real-speaker benchmarks (part of `npm run bench`), each against a baseline from the same run:
 *  - UPnP party-mode start skew across 3 gmediarender renderers on a private namespace LAN:
 *    spread of the renderers' first media GET and of their PLAYING events (target < 10 ms);
 *    control round trips through the hub vs the raw SOAP call (ratio).
 *  - Snapcast inter-client offset on a marker signal across 3 snapclients (target < 0.5 ms).
 *  - Snapcast reconnect after an 8 s snapserver outage: how long after the snapclients the hub
 *    has them Active again (the clients' own reconnect is the baseline).
 *  - Virtual speakers' download memory: RSS of a child hub after a party play of a 300 MiB
 *    file against its idle RSS (target: growth < 100 MiB; it once held the whole file per speaker).
 * The measuring code lives with the tests that build these labs (test/drivers/upnp/skew.ts,
 * test/drivers/snapcast/offset.ts); `tsc -p tsconfig.bench.json` compiles it to .bench-build/.
 * Needs root (network namespaces) and the Debian programs scripts/install-test-deps.sh installs.
 */
const { join } = require('node:path');

const build = join(__dirname, '..', '.bench-build', 'test', 'drivers');
const fmt = (n, d = 1) => (n === undefined || n === null || Number.isNaN(n) ? 'n/a' : Number(n).toFixed(d));

async function upnp() {
  const { measureUpnpSkew } = require(join(build, 'upnp', 'skew.js'));
  const r = await measureUpnpSkew({ rounds: 5 });
  return r;
}

async function snapcast() {
  const { measureSnapcastOffset } = require(join(build, 'snapcast', 'offset.js'));
  return measureSnapcastOffset({});
}

async function snapcastReconnect() {
  const { measureSnapcastReconnect } = require(join(build, 'snapcast', 'reconnect.js'));
  return measureSnapcastReconnect({ outageMs: 8000 });
}

async function virtualDownloads() {
  const { measureDownloadRss } = require(join(build, 'virtual', 'rss.js'));
  return measureDownloadRss({});
}

async function main() {
  const results = {};
  let failed = false;
  for (const [name, run] of [
    ['upnp', upnp],
    ['snapcast', snapcast],
    ['snapcastReconnect', snapcastReconnect],
    ['virtual', virtualDownloads],
  ]) {
    const t0 = Date.now();
    process.stderr.write(`[drivers] ${name} …\n`);
    try {
      results[name] = await run();
    } catch (e) {
      failed = true;
      results[name] = { error: String((e && e.stack) || e) };
    }
    process.stderr.write(`[drivers] ${name} done in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  }
  print(results);
  process.stdout.write(`${JSON.stringify({ bench: 'speakerhub-drivers', results })}\n`);
  process.exit(failed ? 1 : 0);
}

function print(results) {
  const lines = ['', 'SpeakerHub driver bench'];
  const u = results.upnp;
  if (u && !u.error) lines.push(...upnpLines(u));
  else lines.push(`  UPnP: failed: ${u && u.error}`);
  const s = results.snapcast;
  if (s && !s.error) lines.push(...snapcastLines(s));
  else lines.push(`  Snapcast: failed: ${s && s.error}`);
  const sr = results.snapcastReconnect;
  if (sr && !sr.error) {
    lines.push(
      `  Snapcast reconnect after a ${fmt(sr.outageMs / 1000, 0)} s snapserver outage (default backoff, ${sr.retries.length} retries):`,
      `    ${'hub back after the clients'.padEnd(30)} ${fmt(sr.hubBackMs - sr.clientsBackMs, 0)} ms (clients ${fmt(sr.clientsBackMs, 0)} ms, hub ${fmt(sr.hubBackMs, 0)} ms after the restart)   target < 2000 ms  ${sr.hubBackMs - sr.clientsBackMs < 2000 ? 'PASS' : 'MISS'}`,
    );
  } else lines.push(`  Snapcast reconnect: failed: ${sr && sr.error}`);
  const v = results.virtual;
  if (v && !v.error) lines.push(...virtualLines(v));
  else lines.push(`  Virtual downloads: failed: ${v && v.error}`);
  process.stdout.write(`${lines.join('\n')}\n\n`);
}

function upnpLines(u) {
  const out = [`  UPnP (${u.renderers.length} gmediarender renderers, party mode, ${u.rounds} rounds; ms from the request):`];
  for (const [p, label] of [
    [u.firstGet, 'first media GET spread'],
    [u.playing, 'PLAYING spread'],
  ]) {
    out.push(
      `    ${label.padEnd(30)} median ${fmt(p.spreadMs)} ms, worst ${fmt(p.maxSpreadMs)} ms   target < 10 ms  ${p.spreadMs < 10 ? 'PASS' : 'MISS'}`,
    );
  }
  const { setVolume, play } = u.control;
  out.push(
    `    ${'SetVolume round trip'.padEnd(30)} hub ${fmt(setVolume.hubMs, 2)} ms vs raw SOAP ${fmt(setVolume.rawMs, 2)} ms   ratio ${fmt(setVolume.ratio, 2)}`,
  );
  out.push(
    `    ${'Play (until position moves)'.padEnd(30)} hub ${fmt(play.hubMs, 0)} ms vs raw SOAP ${fmt(play.rawConfirmedMs, 0)} ms   ratio ${fmt(play.confirmedRatio, 2)}`,
  );
  out.push(
    `    ${'Play (commands only, raw)'.padEnd(30)} raw Stop+SetAVTransportURI+Play ${fmt(play.rawMs, 1)} ms (the hub also waits for the position to move)`,
  );
  return out;
}

function snapcastLines(s) {
  return [
    `  Snapcast (3 snapclients, party mode, ${s.markers.length} markers):`,
    `    ${'inter-client offset'.padEnd(30)} worst ${fmt(s.spreadMs, 3)} ms, median ${fmt(s.medianSpreadMs, 3)} ms (timing noise ${fmt(s.timingNoiseMs, 3)} ms)   target < 0.5 ms  ${s.spreadMs < 0.5 ? 'PASS' : 'MISS'}`,
    `    method: ${s.method}`,
  ];
}

function virtualLines(v) {
  const MiB = 1024 * 1024;
  const growth = v.growthBytes / MiB;
  return [
    `  Virtual speakers (${v.speakers}, party play of a ${fmt(v.fileBytes / MiB, 0)} MiB file, ${v.requests} download):`,
    `    ${'RSS growth'.padEnd(30)} ${fmt(growth)} MiB (idle ${fmt(v.idleRss / MiB)} MiB -> ${fmt(v.afterRss / MiB)} MiB, ratio ${fmt(v.afterRss / v.idleRss, 2)})   target < 100 MiB  ${growth < 100 ? 'PASS' : 'MISS'}`,
  ];
}

main().catch((e) => {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
});

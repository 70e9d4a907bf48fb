'use strict';
/**
 * Zones benchmark (chained in npm run bench; needs dist/ from npm run build). A hub in this
 * process with 30 virtual speakers (they really download what they play, over loopback), REST
 * over HTTP. Figures, each beside a baseline from the same run:
 *
 *  1. start latency per zone: request sent → every speaker of the zone playing, p50/p95, for
 *     10 zones of 3 speakers started at once by 10 sessions, against one playback of 3
 *     speakers started alone (the baseline). Goal: the 10-zone p95 within 3× the baseline's
 *     (10 concurrent plays share one event loop) and under 250 ms.
 *  2. in-zone skew: the spread of the moments a zone's speakers started playing, p95, 10 zones
 *     at once against one playback. Goal: within the baseline's + 5 ms.
 *  3. memory per zone: heap used (after a full GC) with 10 zones playing minus with none, / 10.
 *     Goal: < 256 KB a zone.
 *
 * Exit code 0 whatever the figures say; 1 if anything failed.
 */
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const v8 = require('node:v8');
const vm = require('node:vm');

const ROUNDS = Number(process.env.BENCH_ZONES_ROUNDS || 15);
const ZONES = 10;
const PER_ZONE = 3;
const TOKEN = 'bench-token-0123456789abcdefghij';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};
const fmt = (x) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');

async function main() {
  const { createHub } = require('../dist/index.js');
  const { createLogger } = require('../dist/logger.js');
  const dataDir = mkdtempSync(join(tmpdir(), 'speakerhub-bench-zones-'));
  const hub = createHub(
    {
      dataDir,
      server: { host: '127.0.0.1', port: 0, token: TOKEN },
      speakers: { virtual: { count: ZONES * PER_ZONE } },
      log: { level: 'silent' },
    },
    { logger: createLogger({ level: 'silent' }) },
  );
  await hub.start();
  let failed = false;
  try {
    const get = async (op, params = {}) => {
      const res = await fetch(`${hub.url}/api/v1/${op}?${new URLSearchParams(params)}`, { headers: { Authorization: `Bearer ${TOKEN}` } });
      return res.json();
    };
    const sessions = [];
    for (let i = 0; i < ZONES; i++) sessions.push((await get('init_session')).SessionToken);
    const speakers = hub.driver('virtual').speakers();
    const media = (await get('media_list', { SessionToken: sessions[0] })).MediaList;
    const music = [...media].sort((a, b) => b.Duration - a.Duration)[0].PersistentID;
    /** When each speaker last started playing (performance.now()). */
    const startedAt = new Map();
    for (const s of speakers) s.on('state', (st) => st === 'playing' && startedAt.set(s.id, performance.now()));
    const zoneOf = (z) => speakers.slice(z * PER_ZONE, (z + 1) * PER_ZONE);

    /** Starts zone z from session z; resolves with its start latency and skew once all its speakers play. */
    async function startZone(z) {
      const members = zoneOf(z);
      for (const s of members) startedAt.delete(s.id);
      const t0 = performance.now();
      const r = await get('play_hub_media_selected_speakers', {
        SessionToken: sessions[z],
        PersistentID: music,
        DeviceIDList: members.map((s) => s.id).join(','),
      });
      if (r.Result !== 'true') throw new Error(`zone ${z}: ${JSON.stringify(r)}`);
      for (;;) {
        const times = members.map((s) => startedAt.get(s.id));
        if (times.every((t) => t !== undefined && t >= t0)) return { ms: Math.max(...times) - t0, skew: Math.max(...times) - Math.min(...times) };
        if (performance.now() - t0 > 10_000) throw new Error(`zone ${z}: not every speaker played within 10 s`);
        await new Promise((res) => setTimeout(res, 1));
      }
    }
    const stopAll = async () => {
      await get('stop_play', { SessionToken: (await get('init_session')).SessionToken });
    };

    // 1 + 2, the baseline: one playback alone.
    const alone = [];
    for (let i = 0; i < ROUNDS; i++) {
      alone.push(await startZone(0));
      await stopAll();
    }
    // 10 zones started at once, each by its own session.
    const together = [];
    let zonesSeen = 0;
    for (let i = 0; i < ROUNDS; i++) {
      together.push(...(await Promise.all([...Array(ZONES).keys()].map(startZone))));
      zonesSeen = Math.max(zonesSeen, hub.core.playback.list().length);
      await stopAll();
    }
    if (zonesSeen !== ZONES) throw new Error(`expected ${ZONES} zones at once, saw ${zonesSeen}`);

    // 3. Memory per zone.
    gc();
    const idle = process.memoryUsage().heapUsed;
    await Promise.all([...Array(ZONES).keys()].map(startZone));
    gc();
    const busy = process.memoryUsage().heapUsed;
    await stopAll();
    const perZoneKb = (busy - idle) / ZONES / 1024;

    const a95 = pct(
      alone.map((x) => x.ms),
      95,
    );
    const t95 = pct(
      together.map((x) => x.ms),
      95,
    );
    const as95 = pct(
      alone.map((x) => x.skew),
      95,
    );
    const ts95 = pct(
      together.map((x) => x.skew),
      95,
    );
    const rows = [
      [
        `1. start latency, one playback of ${PER_ZONE} [baseline]`,
        `p50 ${fmt(
          pct(
            alone.map((x) => x.ms),
            50,
          ),
        )} ms, p95 ${fmt(a95)} ms`,
        '',
      ],
      [
        `1. start latency per zone, ${ZONES} zones at once`,
        `p50 ${fmt(
          pct(
            together.map((x) => x.ms),
            50,
          ),
        )} ms, p95 ${fmt(t95)} ms (${fmt(t95 / a95)}× baseline)`,
        t95 <= 3 * a95 && t95 < 250 ? 'PASS' : 'MISS',
      ],
      [`2. in-zone skew, one playback [baseline]`, `p95 ${fmt(as95)} ms`, ''],
      [`2. in-zone skew, ${ZONES} zones at once`, `p95 ${fmt(ts95)} ms`, ts95 <= as95 + 5 ? 'PASS' : 'MISS'],
      [`3. memory per zone (heap, ${ZONES} zones playing vs none)`, `${fmt(perZoneKb)} KB`, perZoneKb < 256 ? 'PASS' : 'MISS'],
    ];
    console.log(`\nZones (virtual speakers, ${ROUNDS} rounds; ${ZONES} zones × ${PER_ZONE} speakers)`);
    for (const [name, value, verdict] of rows) console.log(`  ${name.padEnd(58)} ${value.padEnd(44)} ${verdict}`);
  } catch (e) {
    failed = true;
    console.error('zones bench failed:', e);
  } finally {
    await hub.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}

main();

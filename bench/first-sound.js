#!/usr/bin/env node
'use strict';
/**
 * Time to first sound (issue 30; chained in npm run bench, also `npm run bench:first-sound`;
 * needs dist/ from npm run build, espeak-ng, and per family its peer: gmediarender (+ root for
 * network namespaces), snapserver/snapclient, squeezelite, mpd, shairport-sync/avahi/dbus (+ root);
 * a family whose peer is missing is skipped with a note).
 *
 * Per family, one real speaker and a hub with that driver (bench/first-sound-peers.js). For
 * each case, N runs (BENCH_FIRST_SOUND_N, default 10), interleaved so the machine's load weighs
 * on all alike:
 *  - hub, cached TTS: REST `announce` of one repeated text (its clip rendered by a warm-up run);
 *  - hub, uncached TTS: `announce` of a new text each time (synthesis on the path);
 *  - floor: the same speaker told to play the hub's clip of the cached text (copied to a plain
 *    HTTP server) by its own protocol, without the hub where the protocol allows it.
 * Each run: t0 = the instant the request is sent (monotonic clock); t1 = the first sample of the
 * speaker's captured output at or above ONSET after it (no music plays, so everything before
 * is digital silence). How each capture maps bytes to time, and its error, is in
 * bench/first-sound-capture.js. The virtual family has no audio: its timing model ends at the
 * speaker's first fetch of the clip.
 * Goal: hub p95 − floor p95 ≤ 150 ms. Exit code 0 whatever the figures say; 1 if a family failed.
 */
const { mkdtempSync, readdirSync, rmSync, statSync } = require('node:fs');
const { cpus, loadavg, tmpdir } = require('node:os');
const { join } = require('node:path');
const { monoMs } = require('./first-sound-capture');
const { FAMILIES, compileHarnesses, until, sleep } = require('./first-sound-peers');

const N = Number(process.env.BENCH_FIRST_SOUND_N || 10);
const ONLY = (process.env.BENCH_FIRST_SOUND_FAMILIES || '').split(',').filter(Boolean);
const GOAL_MS = 150;
/** 16-bit level of "audible": far above digital silence, far below speech at volume 50. */
const ONSET = 300;
const VOLUME = '50';
const CACHED_TEXT = 'Someone is at the front door';

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};
const fmt = (x) => (Number.isFinite(x) ? x.toFixed(0) : 'n/a');

/** The newest audio file the hub wrote under its data folder: the clip of the announcement just made. */
function newestClip(dir) {
  let best;
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.wav$/i.test(e.name)) {
        const m = statSync(p).mtimeMs;
        if (!best || m > best.m) best = { p, m };
      }
    }
  };
  walk(dir);
  if (!best) throw new Error(`no WAV under ${dir}`);
  return best.p;
}

/** Request → first audible sample, ms; then waits for the play to end and the output to fall quiet. */
async function once(f, send, end) {
  await until(() => f.capture.quiet(ONSET), 15_000, 'the speaker quiet before the run');
  const mark = f.capture.mark();
  const t0 = monoMs();
  const r = await send();
  let t1;
  await until(() => (t1 = f.capture.onset(mark, ONSET)) !== undefined, 20_000, 'the first audible sample');
  await end(r);
  return t1 - t0;
}

async function announce(f, text) {
  return once(
    f,
    async () => {
      const r = await f.op('announce', { Text: text, DeviceIDList: f.deviceId, Volume: VOLUME });
      if (!r.AnnouncementID) throw new Error(`announce failed: ${JSON.stringify(r)}`);
      return r;
    },
    async (r) => {
      let st;
      await until(
        async () => ['done', 'failed'].includes((st = await f.op('announcement_status', { AnnouncementID: r.AnnouncementID })).State),
        30_000,
        'the announcement done',
      );
      if (st.State === 'failed') throw new Error(`announcement failed: ${JSON.stringify(st)}`);
    },
  );
}

async function measureFamily(name, dir) {
  const f = await FAMILIES[name](dir);
  try {
    await f.op('set_volume_device', { DeviceID: f.deviceId, Volume: VOLUME });
    // Warm-up: renders the cached text's clip (and warms the TTS engine); that clip is the floor's.
    await announce(f, CACHED_TEXT);
    const clip = newestClip(f.dataDir);
    const url = f.clipUrl(clip);
    const floorRun = () =>
      once(
        f,
        () => f.floor.play(url),
        async () => {
          await sleep(300);
          await until(() => f.capture.quiet(ONSET), 30_000, 'the clip played out');
          await f.floor.stop();
        },
      );
    await floorRun(); // the floor's own warm-up (decoder, connections)
    const stamp = Date.now().toString(36);
    const r = { floor: [], cached: [], uncached: [] };
    for (let i = 0; i < N; i++) {
      r.floor.push(await floorRun());
      r.cached.push(await announce(f, CACHED_TEXT));
      r.uncached.push(await announce(f, `Parcel ${i} delivered ${stamp}`));
      process.stderr.write(
        `[first-sound] ${name} ${i + 1}/${N}: floor ${fmt(r.floor[i])}, cached ${fmt(r.cached[i])}, uncached ${fmt(r.uncached[i])} ms\n`,
      );
    }
    return { label: f.label, floorHow: f.floor.how, ...r };
  } finally {
    await f.close();
  }
}

async function main() {
  compileHarnesses();
  const results = {};
  let failed = false;
  for (const name of Object.keys(FAMILIES)) {
    if (ONLY.length && !ONLY.includes(name)) continue;
    const dir = mkdtempSync(join(tmpdir(), `speakerhub-bench-first-sound-${name}-`));
    const t = Date.now();
    process.stderr.write(`[first-sound] ${name} …\n`);
    try {
      results[name] = await measureFamily(name, dir);
    } catch (e) {
      if (e && e.skip) results[name] = { skipped: e.skip };
      else {
        failed = true;
        results[name] = { error: String((e && e.stack) || e) };
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    process.stderr.write(`[first-sound] ${name} done in ${((Date.now() - t) / 1000).toFixed(0)} s\n`);
  }
  print(results);
  process.stdout.write(`${JSON.stringify({ bench: 'speakerhub-first-sound', n: N, results })}\n`);
  process.exit(failed ? 1 : 0);
}

function print(results) {
  const load = loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');
  const out = [
    '',
    `Time to first sound: request sent → first audible sample at the speaker's output (${N} runs per case; load average ${load} on ${cpus().length} cores)`,
    '| Family | Case | Floor p50 / p95 ms | Hub p50 / p95 ms | Hub − floor p95 ms | Goal ≤ 150 ms |',
    '|---|---|---|---|---|---|',
  ];
  const notes = [];
  for (const [name, r] of Object.entries(results)) {
    if (r.skipped || r.error) {
      out.push(`| ${name} | ${r.skipped ? `skipped: ${r.skipped}` : 'failed (see below)'} | | | | |`);
      if (r.error) notes.push(`${name} failed: ${r.error}`);
      continue;
    }
    notes.push(`${name}: ${r.label}; floor: ${r.floorHow}`);
    const f50 = pct(r.floor, 50);
    const f95 = pct(r.floor, 95);
    for (const c of ['cached', 'uncached']) {
      const h95 = pct(r[c], 95);
      const d = h95 - f95;
      out.push(
        `| ${name} | ${c} TTS | ${fmt(f50)} / ${fmt(f95)} | ${fmt(pct(r[c], 50))} / ${fmt(h95)} | ${fmt(d)} | ${d <= GOAL_MS ? 'PASS' : 'MISS'} |`,
      );
    }
  }
  process.stdout.write(`${[...out, '', ...notes].join('\n')}\n\n`);
}

main().catch((e) => {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
});

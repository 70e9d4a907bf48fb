#!/usr/bin/env node
'use strict';
/**
 * Snapcast ducking, window by window (issue 30; needs dist/ from npm run build and snapserver,
 * snapclient, ffmpeg). Real snapserver and snapclients on loopback, a hub in this process,
 * CPU burners beside it (BENCH_DUCK_LOAD, default 1 busy process) for a loaded machine.
 *
 *  1. Baseline, same run: what a snapclient misses when its group changes streams, both
 *     streams carrying the same PCM written at the same moments (SWITCH_MOVES moves); and
 *     when it plays a snapserver meta stream over the two whose second source starts and
 *     stops (the alternative to moving groups that issue 30 asked to measure).
 *  2. BENCH_DUCK_RUNS (default 10) ducked announcements of a zone (mixed in place), each clip
 *     rendered at the request: 50 ms windows without the music per client (goal: 0).
 *  3. As many on one client of two sharing the music: windows without the music on the
 *     announced client (compare: two stream changes of the baseline) and on the other (goal:
 *     0, and 0 windows off its level by more than 0.5 dB).
 *  4. Client streams (snapcast.clientStreams, issue 30): one zone on three clients, one on the
 *     zone's stream and two on client streams of their own; as many ducked announcements on
 *     one of them in turn (mixed in place on its stream): windows without the music on the
 *     announced client (goal: 0), windows missing or off by more than 0.5 dB on the other two
 *     (goal: 0), and the inter-client offset (clicks in the music) after the start and after
 *     the runs.
 * Each run also gives the hub's longest event-loop delay and snapserver's re-syncs.
 * BENCH_DUCK_ONLY=client-streams runs part 4 alone.
 *
 * The measuring code is test/drivers/snapcast/duck-gaps.ts and switch-gap.ts, compiled here to
 * .bench-build/ by bench/tsconfig.snapcast-duck-gaps.json. Exit code 0 whatever the figures
 * say; 1 if anything failed.
 */
const { spawn, spawnSync } = require('node:child_process');
const { join } = require('node:path');

const RUNS = Number(process.env.BENCH_DUCK_RUNS || 10);
const LOAD = Number(process.env.BENCH_DUCK_LOAD ?? 1);
const SWITCH_MOVES = 6;
/** BENCH_DUCK_ONLY=client-streams: part 4 alone. */
const ONLY = process.env.BENCH_DUCK_ONLY;
const root = join(__dirname, '..');
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const max = (xs) => (xs.length ? Math.max(...xs) : NaN);

async function main() {
  let failed = false;
  const burners = [];
  try {
    const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', join(__dirname, 'tsconfig.snapcast-duck-gaps.json')], {
      cwd: root,
      stdio: 'inherit',
    });
    if (tsc.status !== 0) throw new Error('tsc -p bench/tsconfig.snapcast-duck-gaps.json failed');
    const build = join(root, '.bench-build', 'test', 'drivers', 'snapcast');
    const { measureDuckGaps } = require(join(build, 'duck-gaps.js'));
    const { measureSwitchGapLab, measureMetaSwitchLab } = require(join(build, 'switch-gap.js'));
    for (let i = 0; i < LOAD; i++) burners.push(spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
    if (ONLY === 'client-streams') {
      await clientStreams();
      return;
    }

    const sw = await measureSwitchGapLab(SWITCH_MOVES);
    console.log(`\nSnapcast stream change (baseline), ${SWITCH_MOVES} moves, streams fed in step:`);
    console.log(`  windows (50 ms) without the music per move: ${sw.moved.join(' ')}; on the client that stayed: ${sw.stayed}`);
    const meta = await measureMetaSwitchLab(SWITCH_MOVES / 2);
    console.log(`Snapcast meta stream over the two (meta:///second/first), the second's feed started and stopped ${SWITCH_MOVES / 2} times:`);
    console.log(
      `  windows without the music as the meta takes the second: ${meta.in.join(' ')}; as it goes back: ${meta.out.join(' ')}; on the client of the first: ${meta.stayed}`,
    );

    const kinds = [...Array(RUNS).fill('zone'), ...Array(RUNS).fill('shared')];
    const runs = await measureDuckGaps(kinds, (r, i) => process.stdout.write(`  run ${i + 1}/${kinds.length}: ${JSON.stringify(r)}\n`));
    const zone = runs.filter((r) => r.kind === 'zone');
    const shared = runs.filter((r) => r.kind === 'shared');
    console.log(`\nSnapcast ducked announcements, ${RUNS} runs each, ${LOAD} CPU burner(s) beside the hub:`);
    console.log(
      `  zone (in place): windows without the music, both clients, all runs: ${sum(zone.flatMap((r) => r.missing))} (runs with any: ${zone.filter((r) => sum(r.missing) > 0).length}); event-loop max ${max(zone.map((r) => r.loopMaxMs))} ms; re-syncs ${sum(zone.map((r) => r.resyncs))}`,
    );
    console.log(
      `  shared, announced client: windows without the music per run: ${shared.map((r) => r.missing[0]).join(' ')} (baseline: two stream changes, ${2 * Math.round(sum(sw.moved) / sw.moved.length)})`,
    );
    console.log(
      `  shared, other client: windows missing ${sum(shared.map((r) => r.missing[1]))}, off by > 0.5 dB ${sum(shared.map((r) => r.off[1]))} over all runs; event-loop max ${max(shared.map((r) => r.loopMaxMs))} ms; re-syncs ${sum(shared.map((r) => r.resyncs))}`,
    );

    await clientStreams();
  } catch (e) {
    failed = true;
    console.error('snapcast duck gaps benchmark failed:', e);
  } finally {
    for (const b of burners) b.kill('SIGKILL');
  }
  process.exit(failed ? 1 : 0);
}

/** Part 4: client streams, RUNS ducked announcements on one client of three in turn, offsets after the start and after the runs. */
async function clientStreams() {
  const { ClientStreamsLab } = require(join(root, '.bench-build', 'test', 'drivers', 'snapcast', 'client-streams.js'));
  const lab = new ClientStreamsLab();
  try {
    await lab.start(RUNS);
    const from = lab.sizes();
    const play = await lab.op('play_hub_media_selected_speakers', { PersistentID: lab.pids.Music, DeviceIDList: lab.ids.join(',') });
    if (play.Result !== 'true') throw new Error(`play failed: ${JSON.stringify(play)}`);
    await lab.musicHeard([1, 2, 3], from, 4);
    const streams = await lab.streams();
    const offsets = async () => {
      const at = lab.sizes().map((b) => b - 2 * 192000);
      await lab.outputFor(3);
      return [lab.offset(1, 2, at), lab.offset(1, 3, at)].map((o) => o.maxAbsMs);
    };
    const start = await offsets();
    const runs = [];
    for (let i = 0; i < RUNS; i++) {
      const r = await lab.duck([(i % 3) + 1]);
      process.stdout.write(`  client-stream run ${i + 1}/${RUNS}: ${JSON.stringify(r)}\n`);
      runs.push(r);
    }
    const end = await offsets();
    const others = runs.flatMap((r) => [0, 1, 2].filter((n) => !r.announced.includes(n + 1)).map((n) => ({ r, n })));
    console.log(
      `\nSnapcast client streams (${streams.join(', ')}), ${RUNS} ducked announcements on one client of three in turn, ${LOAD} CPU burner(s):`,
    );
    console.log(`  announced client: windows without the music per run: ${runs.map((r) => r.missing[r.announced[0] - 1]).join(' ')}`);
    console.log(
      `  other clients: windows missing ${sum(others.map(({ r, n }) => r.missing[n]))}, off by > 0.5 dB ${sum(others.map(({ r, n }) => r.off[n]))}, largest deviation ${max(others.map(({ r, n }) => r.maxDevDb[n]))} dB; windows set aside (every client dipped at once, snapserver re-synced) ${sum(runs.map((r) => r.excused))}`,
    );
    console.log(
      `  event-loop max ${max(runs.map((r) => r.loopMaxMs))} ms; re-syncs ${sum(runs.map((r) => r.resyncs))}; snapclient playout corrections ${sum(runs.flatMap((r) => r.corrections))}`,
    );
    console.log(
      `  inter-client offset (largest |ms|, clients 2 and 3 against 1): after the start ${start.join(', ')}; after the runs ${end.join(', ')}`,
    );
  } finally {
    await lab.close();
  }
}

main();

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
 * Each run also gives the hub's longest event-loop delay and snapserver's re-syncs.
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
  } catch (e) {
    failed = true;
    console.error('snapcast duck gaps benchmark failed:', e);
  } finally {
    for (const b of burners) b.kill('SIGKILL');
  }
  process.exit(failed ? 1 : 0);
}

main();

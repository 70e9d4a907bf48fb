import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { snapcastDeviceId } from '../../../src/drivers/snapcast';
import { captureFrom, leftChannel, toneAmplitude } from '../../helpers/audio';
import { eventually } from '../../helpers/wait';
import { fileSize, SAMPLE_FORMAT, SnapcastEnv } from './harness';
import { duckedAnnouncement, startSnapcastHub, toneWav, type SnapcastHub } from './hub';

/**
 * Ducked announcements window by window (issue 30), for test/drivers/snapcast/duck-gaps.lab.test.ts
 * (a few runs) and bench/snapcast-duck-gaps.js (many): a real snapserver declaring an
 * announcement stream, two real snapclients writing what they play to files, a hub in this
 * process playing a 440 Hz tone on both. Each run announces a new clip (so the hub renders and
 * normalises it then, as a new text would be), ducked 20 dB: on both clients (the zone: mixed
 * in place) or on client 1 alone (shared music: client 1 moves to the announcement stream).
 * Per client, in 50 ms windows from the request to 2 s after the end: windows where the music
 * is missing (under the duck level less 6 dB) and, for a client not announced, windows whose
 * music level is off by more than 0.5 dB. The hub's event-loop delay over the run
 * (monitorEventLoopDelay) and snapserver's re-syncs say what a missing window came from.
 */
const ANNOUNCE_STREAM = 'Announce';
const MUSIC_HZ = 440;
const SPEECH_HZ = 1000;
const CHIME_HZ = 660;
const LEVEL_DB = -20;
const WINDOW = SAMPLE_FORMAT.rate / 20;

export type DuckKind = 'zone' | 'shared';

export interface DuckGapRun {
  kind: DuckKind;
  /** Per client (1, 2): windows without the music. */
  missing: [number, number];
  /** Per client: windows whose music is more than 0.5 dB off its level before (only counted on a client not announced). */
  off: [number, number];
  /** Windows looked at per client. */
  windows: [number, number];
  /** The hub's longest event-loop delay over the run, ms. */
  loopMaxMs: number;
  /** The process' longest garbage-collection pause over the run, ms. */
  gcMaxMs: number;
  /** snapserver re-syncs of a stream over the run (its source read late). */
  resyncs: number;
}

/** Per 50 ms window from byte `from`: the music's amplitude (left channel, Goertzel). */
function musicWindows(file: string, from: number): number[] {
  const s = leftChannel(captureFrom(file, from, SAMPLE_FORMAT.bytesPerFrame), SAMPLE_FORMAT.bytesPerFrame);
  const out: number[] = [];
  for (let i = 0; i + WINDOW <= s.length; i += WINDOW) out.push(toneAmplitude(s, SAMPLE_FORMAT.rate, MUSIC_HZ, i, WINDOW));
  return out;
}

/**
 * A full garbage collection of this process now. The hub shares its process (and event loop)
 * with the test, whose captures and analyses leave tens of MB of garbage, and in a long jest run
 * with every earlier suite's heap: one mark-compact of that took 249 ms at a run's start in CI,
 * longer than the feed's lead, and snapserver re-synced. Collected before each run, what is left
 * for the run is the hub's own work (its GC pauses still count: gcMaxMs says how long they were).
 */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const db = (x: number) => 20 * Math.log10(x);

/** Runs `kinds` in order on one lab; `onRun` sees each run's figures as they come. */
export async function measureDuckGaps(kinds: DuckKind[], onRun?: (r: DuckGapRun, i: number) => void): Promise<DuckGapRun[]> {
  const env = await SnapcastEnv.create('speakerhub-duck-gaps-', 'tcp', [ANNOUNCE_STREAM]);
  let t: SnapcastHub | undefined;
  const loop = monitorEventLoopDelay({ resolution: 5 });
  try {
    await env.startServer();
    for (const n of [1, 2]) await env.startClient(n);
    await env.clientsConnected(env.clients.map((c) => c.hostId));
    const media: Record<string, Buffer> = {
      'music.wav': toneWav(Math.max(60, kinds.length * 12), MUSIC_HZ, 'Music'),
      'chime.wav': toneWav(0.5, CHIME_HZ, 'Chime'),
    };
    // A clip of its own per run (a new length: a new content hash), so each is rendered at the request.
    kinds.forEach((_, i) => (media[`speech-${i}.wav`] = toneWav(2 + i * 0.01, SPEECH_HZ, `Speech ${i}`)));
    t = await startSnapcastHub(env.address, media, { announceStream: ANNOUNCE_STREAM });
    const hub = t;
    const ids = env.clients.map((c) => snapcastDeviceId(env.address, c.hostId));
    const pids: Record<string, string> = {};
    for (const m of (await hub.op('media_list')).MediaList) pids[m.Title] = m.PersistentID;
    await eventually(async () => (await hub.op('device_list')).DeviceList.filter((d: any) => d.Active).length === 2, 10_000, 'both clients');
    await hub.op('set_volume', { Volume: '20' });
    const files = env.clients.map((c) => c.file);
    const second = SAMPLE_FORMAT.rate * SAMPLE_FORMAT.bytesPerFrame;
    const resyncs = () => env.serverResyncs();

    const play = await hub.op('play_hub_media_selected_speakers', { PersistentID: pids.Music, DeviceIDList: ids.join(',') });
    if (play.Result !== 'true') throw new Error(`play failed: ${JSON.stringify(play)}`);
    const start = files.map(fileSize);
    await eventually(() => files.every((f, i) => musicWindows(f, start[i]).filter((x) => x > 1000).length >= 20), 15_000, 'the music on both');

    const runs: DuckGapRun[] = [];
    for (const [i, kind] of kinds.entries()) {
      const from = files.map(fileSize);
      const resyncsBefore = resyncs();
      collectGarbage();
      let gcMaxMs = 0;
      const gcs = new PerformanceObserver((list) => {
        for (const e of list.getEntries()) gcMaxMs = Math.max(gcMaxMs, e.duration);
      });
      gcs.observe({ entryTypes: ['gc'] });
      loop.reset();
      loop.enable();
      await duckedAnnouncement(hub, pids[`Speech ${i}`], pids.Chime, kind === 'zone' ? ids : [ids[0]], LEVEL_DB);
      // Back in its group (shared music) and 2 s of music after.
      const after = files.map(fileSize);
      await eventually(() => files.every((f, n) => fileSize(f) - after[n] > 2.5 * second), 15_000, 'music after');
      loop.disable();
      gcs.disconnect();
      const w = files.map((f, n) => musicWindows(f, from[n]).slice(0, -2));
      // The level before: the half second each client wrote before the request.
      const before = files.map((f, n) => median(musicWindows(f, from[n] - second / 2).slice(0, 10)));
      const floor = before.map((b) => b * 10 ** ((LEVEL_DB - 6) / 20));
      const announced = (n: number) => kind === 'zone' || n === 0;
      const r: DuckGapRun = {
        kind,
        missing: [0, 1].map((n) => w[n].filter((x) => x < (announced(n) ? floor[n] : before[n] / 2)).length) as [number, number],
        off: [0, 1].map((n) => (announced(n) ? 0 : w[n].filter((x) => Math.abs(db(x / before[n])) > 0.5).length)) as [number, number],
        windows: [w[0].length, w[1].length],
        loopMaxMs: Math.round(loop.max / 1e5) / 10,
        gcMaxMs: Math.round(gcMaxMs * 10) / 10,
        resyncs: resyncs() - resyncsBefore,
      };
      runs.push(r);
      onRun?.(r, i);
    }
    return runs;
  } finally {
    loop.disable();
    // SNAPCAST_TEST_LOGS=<prefix>: the hub's, snapserver's and the clients' logs kept for a look.
    const keep = process.env.SNAPCAST_TEST_LOGS;
    if (keep) {
      writeFileSync(`${keep}.hub`, t?.logs.join('') ?? '');
      for (const f of ['snapserver.log', 'client-1.log', 'client-2.log']) copyFileSync(join(env.dir, f), `${keep}.${f}`);
    }
    await t?.close();
    await env.close();
  }
}

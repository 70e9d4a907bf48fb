import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { snapcastDeviceId } from '../../../src/drivers/snapcast';
import { FEED_LEAD_MS } from '../../../src/drivers/snapcast/feeder';
import { encodeWav } from '../../../src/audio/wav';
import { leftChannel, sine, toneAmplitude } from '../../helpers/audio';
import { eventually } from '../../helpers/wait';
import { groupOf, HUB_STREAM, SAMPLE_FORMAT, SnapcastEnv } from './harness';
import { duckedAnnouncement, startSnapcastHub, toneWav, type SnapcastHub } from './hub';
import { BLOCK_FRAMES, StampedCapture } from '../../party/stamped-capture';

/**
 * Client streams (issue 30) on real snapclients, for test/drivers/snapcast/client-streams.lab.test.ts
 * and bench/snapcast-duck-gaps.js: a snapserver declaring an announcement stream and three
 * client streams, three snapclients writing what they play to stdout (read here, every read
 * stamped with the monotonic clock), a hub in this process playing one zone on all three: one
 * client stays on the zone's stream, the other two get a client stream each, fed in step.
 *
 * The music is a 440 Hz tone with a click (8 samples near full scale, far above the tone) every
 * second: the click's play-out instant on each client (offset.ts's method: the write instant of
 * its 50 ms block pinned by the read stamps, plus its place in the block) gives the offset
 * between clients on different streams; the 50 ms windows of the tone say what a ducked
 * announcement did to each (duck-gaps.ts's measures).
 */
export const ANNOUNCE_STREAM = 'Announce';
export const CLIENT_STREAMS = ['Client1', 'Client2', 'Client3'];
const MUSIC_HZ = 440;
const SPEECH_HZ = 1000;
const CHIME_HZ = 660;
const LEVEL_DB = -20;
const WINDOW = SAMPLE_FORMAT.rate / 20;
const CLICK = 28000;
/** A sample above this is a click: the tone never goes past 12000 (both arrive 3 dB lower: ~8500 and ~19800). */
const CLICK_THRESHOLD = 14000;
const BYTES_PER_SECOND = SAMPLE_FORMAT.rate * SAMPLE_FORMAT.bytesPerFrame;

/** Music with a click every second, at the stream's own rate (nothing resampled, the click stays one sample sharp). */
function clickedMusic(seconds: number): Buffer {
  const s = sine(seconds, MUSIC_HZ, SAMPLE_FORMAT.rate);
  for (let t = 1; t < seconds; t++) for (let i = 0; i < 8; i++) s[t * SAMPLE_FORMAT.rate + i] = CLICK;
  return encodeWav(s, SAMPLE_FORMAT.rate, { title: 'Music', artist: 'Snapcast Test', album: 'Snapcast Test' });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const db = (x: number) => 20 * Math.log10(x);

/** Per 50 ms window of `pcm`: the amplitude of `hz` (left channel). */
function windows(pcm: Buffer, hz: number): number[] {
  const s = leftChannel(pcm, SAMPLE_FORMAT.bytesPerFrame);
  const out: number[] = [];
  for (let i = 0; i + WINDOW <= s.length; i += WINDOW) out.push(toneAmplitude(s, SAMPLE_FORMAT.rate, hz, i, WINDOW));
  return out;
}

export interface DuckRun {
  /** Clients announced (1-based). */
  announced: number[];
  /** Per client: 50 ms windows without the music (an announced one: under the duck level less 6 dB; another: under half its level). */
  missing: number[];
  /** Per client not announced: windows whose music is more than 0.5 dB off its level before (0 for an announced one). */
  off: number[];
  /** Per client not announced: the largest deviation of a window from its level before, dB. */
  maxDevDb: number[];
  /** Per client: windows in which the voice is heard. */
  voice: number[];
  /** Windows looked at per client. */
  windows: number[];
  /** Windows set aside on every client: all of them dipped at once while the hub was on time (snapserver re-synced, or the machine stalled). */
  excused: number;
  /** The hub's longest event-loop delay over the run, ms. */
  loopMaxMs: number;
  /** snapserver re-syncs over the run. */
  resyncs: number;
  /** Per client: the times its snapclient corrected its own playout over the run (SnapcastEnv.clientCorrections). */
  corrections: number[];
}

export interface SyncOffset {
  /** Client pair (1-based). */
  clients: [number, number];
  /** Per click heard by both: the second's play-out instant minus the first's, ms. */
  offsetsMs: number[];
  /** The largest |offset|, ms. */
  maxAbsMs: number;
}

/** The lab: start() once, then the measures in any order, close() at the end. */
export class ClientStreamsLab {
  env!: SnapcastEnv;
  hub?: SnapcastHub;
  captures: StampedCapture[] = [];
  ids: string[] = [];
  pids: Record<string, string> = {};
  private readonly loop = monitorEventLoopDelay({ resolution: 5 });
  private announcements = 0;

  /** `clientStreams` false: the hub is told no client streams (the old behaviour), though snapserver declares them. */
  async start(runs: number, codec: 'pcm' | 'flac' = 'pcm'): Promise<void> {
    this.env = await SnapcastEnv.create('speakerhub-client-streams-', 'tcp', [ANNOUNCE_STREAM, ...CLIENT_STREAMS]);
    // Every stream's codec (docs/drivers/snapcast.md: pcm keeps a late joiner exact; flac holds a block back).
    const conf = join(this.env.dir, 'snapserver.conf');
    writeFileSync(conf, readFileSync(conf, 'utf8').replace('[stream]\n', `[stream]\ncodec = ${codec}\n`));
    await this.env.startServer();
    for (const n of [1, 2, 3]) {
      const c = await this.env.startClient(n, { output: 'stdout' });
      this.captures.push(new StampedCapture(c.proc!.stdout!));
    }
    await this.env.clientsConnected(this.env.clients.map((c) => c.hostId));
    const media: Record<string, Buffer> = { 'music.wav': clickedMusic(60 + runs * 10), 'chime.wav': toneWav(0.5, CHIME_HZ, 'Chime') };
    // A clip of its own per announcement (a new length: a new content hash), rendered at the request as a new text would be.
    for (let i = 0; i < runs; i++) media[`speech-${i}.wav`] = toneWav(2 + i * 0.01, SPEECH_HZ, `Speech ${i}`);
    this.hub = await startSnapcastHub(this.env.address, media, { announceStream: ANNOUNCE_STREAM, clientStreams: CLIENT_STREAMS });
    const hub = this.hub;
    this.ids = this.env.clients.map((c) => snapcastDeviceId(this.env.address, c.hostId));
    for (const m of (await hub.op('media_list')).MediaList) this.pids[m.Title] = m.PersistentID;
    await eventually(async () => (await hub.op('device_list')).DeviceList.filter((d: any) => d.Active).length === 3, 10_000, 'three clients');
  }

  op(name: string, params: Record<string, string> = {}): Promise<any> {
    return this.hub!.op(name, params);
  }

  sizes(): number[] {
    return this.captures.map((c) => c.size);
  }

  /** Resolves once each of `clients` (1-based) has played `seconds` of the music since `from`. */
  async musicHeard(clients: number[], from: number[], seconds: number): Promise<void> {
    await eventually(
      () =>
        clients.every((n) => {
          const c = this.captures[n - 1];
          return windows(c.pcm(from[n - 1]), MUSIC_HZ).filter((x) => x > 3000).length >= seconds * 20;
        }),
      20_000,
      () => `the music on clients ${clients.join(', ')}`,
      200,
    );
  }

  /** Resolves once every client has written `seconds` more of output since `from`. */
  async outputFor(seconds: number, from = this.sizes(), clients = [1, 2, 3]): Promise<void> {
    await eventually(() => clients.every((n) => this.captures[n - 1].size - from[n - 1] > seconds * BYTES_PER_SECOND), 20_000, 'output', 50);
  }

  /** Per client (client order): the playout corrections its snapclient has logged so far (SnapcastEnv.clientCorrections). */
  corrections(): number[] {
    return this.env.clients.map((_, i) => this.env.clientCorrections(i + 1));
  }

  /** The snapserver stream of each client's group (client order). */
  async streams(): Promise<string[]> {
    const s = await this.env.status();
    return this.env.clients.map((c) => groupOf(s, c.hostId).stream_id as string);
  }

  /** Whether each client sits alone in its group. */
  async alone(): Promise<boolean[]> {
    const s = await this.env.status();
    return this.env.clients.map((c) => groupOf(s, c.hostId).clients.length === 1);
  }

  /** The click play-out instants (monotonic ms, StampedCapture.outputMs) in client n's output since byte `from`. */
  private clicks(n: number, from: number): number[] {
    const c = this.captures[n - 1];
    const pcm = c.pcm(from);
    const base = Math.floor(from / SAMPLE_FORMAT.bytesPerFrame);
    const out: number[] = [];
    const frames = Math.floor(pcm.length / SAMPLE_FORMAT.bytesPerFrame);
    for (let f = 0; f < frames; f++) {
      if (pcm.readInt16LE(f * SAMPLE_FORMAT.bytesPerFrame) <= CLICK_THRESHOLD) continue;
      const abs = base + f;
      // Blocks written near the end of the capture have few reads after them yet.
      if ((Math.floor(abs / BLOCK_FRAMES) + 26) * BLOCK_FRAMES > c.frames) break;
      const t = c.outputMs(abs);
      if (t === undefined) break;
      out.push(t);
      f += SAMPLE_FORMAT.rate / 2;
    }
    return out;
  }

  /** Play-out offset of client b against client a over the clicks both played since `from` (byte offsets per client). */
  offset(a: number, b: number, from: number[]): SyncOffset {
    const ta = this.clicks(a, from[a - 1]);
    const tb = this.clicks(b, from[b - 1]);
    const offsetsMs: number[] = [];
    for (const x of ta) {
      // The same click on b: within half a second (they are a second apart).
      const y = tb.find((v) => Math.abs(v - x) < 500);
      if (y !== undefined) offsetsMs.push(Math.round((y - x) * 100) / 100);
    }
    return { clients: [a, b], offsetsMs, maxAbsMs: offsetsMs.length ? Math.max(...offsetsMs.map(Math.abs)) : NaN };
  }

  /** One ducked announcement on `announced` (1-based), measured window by window on every client. */
  async duck(announced: number[]): Promise<DuckRun> {
    const i = this.announcements++;
    const from = this.sizes();
    const resyncs = () => this.env.serverResyncs();
    const resyncsBefore = resyncs();
    const correctionsBefore = this.corrections();
    this.loop.reset();
    this.loop.enable();
    await duckedAnnouncement(
      this,
      this.pids[`Speech ${i}`],
      this.pids.Chime,
      announced.map((n) => this.ids[n - 1]),
      LEVEL_DB,
    );
    // 2 s of music after it.
    await this.outputFor(2.5);
    this.loop.disable();
    const loopMaxMs = Math.round(this.loop.max / 1e5) / 10;
    const n = resyncs() - resyncsBefore;
    const corrected = this.corrections().map((x, c) => x - correctionsBefore[c]);
    const w: number[][] = [];
    const floor: number[] = [];
    const before: number[] = [];
    for (const c of [1, 2, 3]) {
      const cap = this.captures[c - 1];
      w.push(windows(cap.pcm(from[c - 1]), MUSIC_HZ).slice(0, -2));
      before.push(median(windows(cap.pcm(from[c - 1] - BYTES_PER_SECOND / 2, from[c - 1]), MUSIC_HZ)));
      floor.push(announced.includes(c) ? before[c - 1] * 10 ** ((LEVEL_DB - 6) / 20) : before[c - 1] / 2);
    }
    // snapserver re-syncing every stream at once (it read late: a starved machine) makes every
    // client dip at the same moment, whatever stream it is on (a one-window dip of 3-11 dB on
    // all three at once was also seen with no re-sync logged); while the hub's event loop never
    // stalled as long as the PCM it keeps ahead, those windows are not the hub's, and are set
    // aside (counted in `excused`). What the hub could do to one stream shows on its client alone.
    const hubOnTime = loopMaxMs < FEED_LEAD_MS;
    const len = Math.min(...w.map((x) => x.length));
    const dipAt = (c: number, j: number) => {
      const around = w[c].slice(Math.max(0, j - 3), j + 4);
      return w[c][j] < median(around) * 10 ** (-0.5 / 20);
    };
    const dip = (c: number, j: number) => [j - 1, j, j + 1].some((k) => k >= 0 && k < len && dipAt(c, k));
    const excusedAt = (j: number) => hubOnTime && [0, 1, 2].every((c) => dip(c, j));
    const run: DuckRun = {
      announced,
      missing: [],
      off: [],
      maxDevDb: [],
      voice: [],
      windows: [],
      excused: 0,
      loopMaxMs,
      resyncs: n,
      corrections: corrected,
    };
    for (let j = 0; j < len; j++) if (excusedAt(j)) run.excused++;
    for (const c of [0, 1, 2]) {
      const isAnnounced = announced.includes(c + 1);
      const kept = w[c].filter((_, j) => !excusedAt(j));
      const dev = (x: number) => Math.abs(db(x / before[c]));
      run.missing.push(kept.filter((x) => x < floor[c]).length);
      run.off.push(isAnnounced ? 0 : kept.filter((x) => dev(x) > 0.5).length);
      run.maxDevDb.push(isAnnounced ? 0 : Math.round(Math.max(...kept.map(dev)) * 100) / 100);
      run.voice.push(windows(this.captures[c].pcm(from[c]), SPEECH_HZ).filter((x) => x > 1000).length);
      run.windows.push(w[c].length);
    }
    return run;
  }

  /** Keeps the hub's, snapserver's and the clients' logs (SNAPCAST_TEST_LOGS=<prefix>) and stops everything. */
  async close(): Promise<void> {
    this.loop.disable();
    const keep = process.env.SNAPCAST_TEST_LOGS;
    if (keep && this.env) {
      writeFileSync(`${keep}.hub`, this.hub?.logs.join('') ?? '');
      for (const f of ['snapserver.log', 'client-1.log', 'client-2.log', 'client-3.log']) copyFileSync(join(this.env.dir, f), `${keep}.${f}`);
    }
    await this.hub?.close();
    await this.env?.close();
  }
}

export { HUB_STREAM };

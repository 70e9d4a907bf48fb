/**
 * Zones on real squeezelite players (issue 27): two sessions play two zones at once, each a
 * sync group of its own. Every zone plays its own tone, so each player's capture says which
 * zone it hears (Goertzel), and a window where its tone is low is a gap.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createHub, type SpeakerHub } from '../../../src/hub';
import { createLogger } from '../../../src/logger';
import { encodeWav } from '../../../src/audio/wav';
import { labSuite } from '../../helpers/labs';
import { fileSize, firstLoud, freePort, RATE, samples, squeezeliteInstalled, SqueezelitePlayer, toneWav } from './harness';
import { lowWindows, steppedTone, strongest, lowRms } from '../../helpers/audio';
import { eventually } from '../../helpers/wait';

const TOKEN = 'squeezebox-zones-token-0123456789';
const A_HZ = 440;
const B_HZ = 660;
const B_NEXT_HZ = 990;
const TONES = [A_HZ, B_HZ, B_NEXT_HZ];
/** The tones peak at 12000; at volume 50 a player outputs about 8500 (ffmpeg's mono → stereo centre mix). */
const HEARD = 3000;
/** The stepped media: 400 Hz in its first second, 100 Hz higher every second after. */
const STEP_HZ = (t: number) => 400 + 100 * Math.floor(t);
const STEPS = Array.from({ length: 10 }, (_, i) => STEP_HZ(i));

const describeIf = labSuite('the Squeezebox lab', squeezeliteInstalled());

jest.setTimeout(60_000);

describeIf('Squeezebox zones: one sync group per zone, on real squeezelite players', () => {
  let players: SqueezelitePlayer[] = [];
  let hub: SpeakerHub;
  let dataDir: string;
  let base: string;
  const ids: string[] = [];
  const pids: Record<string, string> = {};
  const logs: string[] = [];

  const get = async (path: string): Promise<any> => (await fetch(`${base}${path}`, { headers: { Authorization: `Bearer ${TOKEN}` } })).json();
  const newSession = async (): Promise<string> => (await get('/api/v1/init_session')).SessionToken;
  const op = (session: string, name: string, params: Record<string, string> = {}): Promise<any> =>
    get(`/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`);

  /** Which of `freqs` the player plays most in its last 0.3 s, and how loud. */
  function hearing(p: SqueezelitePlayer, freqs: number[]): { hz: number; amplitude: number } {
    const size = fileSize(p.out);
    return strongest(samples(p.out, Math.max(0, size - Math.round(RATE * 0.3) * 8)), RATE, freqs);
  }
  async function expectHears(p: SqueezelitePlayer, hz: number, freqs = TONES): Promise<void> {
    await eventually(
      () => {
        const h = hearing(p, freqs);
        return h.hz === hz && h.amplitude > HEARD;
      },
      15_000,
      () => `${p.name} hearing ${hz} Hz (hears ${JSON.stringify(hearing(p, freqs))})\n${p.stderr.slice(-1000)}`,
    );
  }

  beforeAll(async () => {
    const port = await freePort();
    dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-squeezebox-zones-'));
    const mediaDir = join(dataDir, 'music');
    await mkdir(mediaDir);
    await writeFile(join(mediaDir, 'a.wav'), toneWav(40, A_HZ, 'Zone A'));
    await writeFile(join(mediaDir, 'b.wav'), toneWav(40, B_HZ, 'Zone B'));
    await writeFile(join(mediaDir, 'b-next.wav'), toneWav(40, B_NEXT_HZ, 'Zone B Next'));
    await writeFile(
      join(mediaDir, 'steps.wav'),
      encodeWav(steppedTone(20, STEP_HZ), 44100, { title: 'Steps', artist: 'Squeezebox Test', album: 'Zones' }),
    );
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
        dataDir,
        drivers: ['squeezebox'],
        speakers: { virtual: { count: 0 } },
        server: { host: '127.0.0.1', port: 0, token: TOKEN },
        media: { samples: false, folders: [mediaDir] },
        log: { level: 'debug' },
        squeezebox: { port, host: '127.0.0.1', discovery: false },
      } as any,
      { logger },
    );
    await hub.start();
    base = hub.url!;
    const admin = await newSession();
    for (const m of (await op(admin, 'media_list')).MediaList) pids[m.Title] = m.PersistentID;
    // MACs of their own (not 00:04:20, which squeezelite ignores): DeviceIDs apart from the other suite's.
    players = await Promise.all(
      ['Zone A One', 'Zone A Two', 'Zone B'].map((name, i) => SqueezelitePlayer.create(name, `02:00:00:5c:00:0${i + 1}`, port)),
    );
    for (const p of players) await p.start();
    await eventually(
      async () => (await op(admin, 'device_list')).DeviceList.filter((d: any) => d.Active).length === 3,
      15_000,
      'three active players',
    );
    const list = (await op(admin, 'device_list')).DeviceList;
    for (const p of players) ids.push(list.find((d: any) => d.MacAddress === p.mac.toUpperCase()).DeviceID);
    for (const id of ids) expect((await op(admin, 'set_volume_device', { DeviceID: id, Volume: '50' })).Result).toBe('true');
  }, 60_000);

  afterAll(async () => {
    if (process.env.SQUEEZEBOX_TEST_LOGS) await writeFile(process.env.SQUEEZEBOX_TEST_LOGS, logs.join(''));
    await hub?.stop();
    await Promise.all(players.map((p) => p.destroy()));
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  let sessionA = '';
  let sessionB = '';

  test('two sessions play two zones: A on two players in sync, B on the third; each player hears its own zone', async () => {
    [sessionA, sessionB] = [await newSession(), await newSession()];
    const from = players.map((p) => fileSize(p.out));
    expect(
      (await op(sessionA, 'play_hub_media_selected_speakers', { PersistentID: pids['Zone A'], DeviceIDList: `${ids[0]},${ids[1]}` })).Result,
    ).toBe('true');
    expect((await op(sessionB, 'play_hub_media_selected_speakers', { PersistentID: pids['Zone B'], DeviceIDList: ids[2] })).Result).toBe('true');
    await expectHears(players[0], A_HZ);
    await expectHears(players[1], A_HZ);
    await expectHears(players[2], B_HZ);
    // Zone A's two players started together: the tone's onset heard at about the same time.
    const onset = [0, 1].map((i) => players[i].heardAt(firstLoud(players[i].out, from[i], 2000)));
    console.log(`squeezebox zone A start skew ${Math.abs(onset[0] - onset[1]).toFixed(1)} ms`);
    expect(Math.abs(onset[0] - onset[1])).toBeLessThan(150);
    const list = (await op(sessionA, 'playback_list')).PlaybackList;
    expect(list.map((p: any) => [[...p.DeviceIDList].sort(), p.PlaybackState])).toEqual([
      [[ids[0], ids[1]].sort(), 'PlayerStatePlaying'],
      [[ids[2]], 'PlayerStatePlaying'],
    ]);
  });

  test('a stop and a new play in zone B leave zone A playing without a gap', async () => {
    const mark = [0, 1].map((i) => fileSize(players[i].out));
    expect((await op(sessionB, 'stop_play')).Result).toBe('true');
    await eventually(() => hearing(players[2], TONES).amplitude < 200, 10_000, 'zone B silent');
    expect((await op(sessionB, 'play_hub_media_selected_speakers', { PersistentID: pids['Zone B Next'], DeviceIDList: ids[2] })).Result).toBe('true');
    await expectHears(players[2], B_NEXT_HZ);
    expect((await op(sessionA, 'playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    // At least 2 s of zone A's capture since the mark, the stop and the new play within it.
    await eventually(() => [0, 1].every((i) => fileSize(players[i].out) - mark[i] > RATE * 8 * 2), 5000, 'two seconds of zone A');
    // Every 50 ms of zone A's players meanwhile (the pacer writes silence when a player gives nothing) holds A's tone, and only it.
    for (const i of [0, 1]) {
      const s = samples(players[i].out, mark[i]);
      expect(lowWindows(s, RATE, A_HZ, HEARD)).toEqual([]);
      for (const other of [B_HZ, B_NEXT_HZ]) expect(strongest(s, RATE, [other]).amplitude).toBeLessThan(200);
    }
    const list = (await op(sessionA, 'playback_list')).PlaybackList;
    expect(list.map((p: any) => [...p.DeviceIDList].sort())).toEqual([[ids[0], ids[1]].sort(), [ids[2]]]);
  });

  test('the same media started in another zone a moment later is a group of its own: it starts from the beginning', async () => {
    // Before zones, a start of the same URL near a group's position joined that group (at its
    // position, seconds in); a zone of its own starts at 0, whose pitch is the first step's.
    expect((await op(sessionB, 'stop_play')).Result).toBe('true');
    await eventually(() => hearing(players[2], TONES).amplitude < 200, 10_000, 'zone B silent');
    const fromB = fileSize(players[2].out);
    expect(
      (await op(sessionA, 'play_hub_media_selected_speakers', { PersistentID: pids['Steps'], DeviceIDList: `${ids[0]},${ids[1]}` })).Result,
    ).toBe('true');
    expect((await op(sessionB, 'play_hub_media_selected_speakers', { PersistentID: pids['Steps'], DeviceIDList: ids[2] })).Result).toBe('true');
    let onset = -1;
    await eventually(
      () => {
        onset = firstLoud(players[2].out, fromB, 3000);
        return onset >= 0 && fileSize(players[2].out) - onset > RATE * 8 * 0.5;
      },
      15_000,
      'zone B playing the steps',
    );
    // 100 ms into what it played first (clear of the onset), 200 ms long.
    const s = samples(players[2].out, onset);
    const first = strongest(s, RATE, STEPS, Math.round(RATE * 0.1), Math.round(RATE * 0.2));
    expect(first.hz).toBe(STEPS[0]);
    expect((await op(sessionA, 'playback_list')).PlaybackList).toHaveLength(2);
    // A stop in zone A leaves zone B's group playing on.
    const markB = fileSize(players[2].out);
    expect((await op(sessionA, 'stop_play')).Result).toBe('true');
    await eventually(() => hearing(players[0], STEPS).amplitude < 200 && hearing(players[1], STEPS).amplitude < 200, 10_000, 'zone A silent');
    await eventually(() => fileSize(players[2].out) - markB > RATE * 8 * 1.5, 5000, 'more of zone B');
    const b = samples(players[2].out, markB);
    const gaps = b.length ? lowRms(b, RATE, 1500) : [0];
    expect(gaps).toEqual([]);
    expect((await op(sessionB, 'playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    await op(sessionB, 'stop_play');
  });
});

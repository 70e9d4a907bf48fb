/**
 * Zones on two real mpd servers (issue 27): each MPD is a speaker of its own, so two sessions
 * play two zones, one MPD each, and a stop and a new play in one leave the other playing. Each
 * zone plays its own tone: the captures (the pipe output, paced by ffmpeg -re) say which zone
 * an MPD plays (Goertzel), and a window where its tone is low, or a capture that grew slower
 * than the clock, is a gap.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createHub, type SpeakerHub } from '../../../src/hub';
import { createLogger } from '../../../src/logger';
import { labSuite } from '../../helpers/labs';
import { lowWindows, strongest, watchGrowth } from '../../helpers/audio';
import { fileSize, MpdLab, mpdInstalled, mpdStatus, RATE, toneWav } from './harness';
import { eventually } from '../../helpers/wait';

const TOKEN = 'mpd-zones-token-0123456789abcdef';
const A_HZ = 440;
const B_HZ = 660;
const B_NEXT_HZ = 990;
const TONES = [A_HZ, B_HZ, B_NEXT_HZ];
/** s16le stereo. */
const FRAME = 4;
/** The tones peak at 12000; at setvol 100 the capture has about that. */
const HEARD = 4000;

/** Left-channel samples of the capture from byte `from`. */
function left(file: string, from: number): Int16Array {
  const start = from - (from % FRAME);
  const size = fileSize(file);
  const len = Math.max(0, size - start - ((size - start) % FRAME));
  const buf = Buffer.alloc(len);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, buf, 0, len, start);
  } finally {
    closeSync(fd);
  }
  const out = new Int16Array(len / FRAME);
  for (let i = 0; i < out.length; i++) out[i] = buf.readInt16LE(i * FRAME);
  return out;
}

const describeIf = labSuite('the MPD lab', mpdInstalled());

jest.setTimeout(60_000);

describeIf('MPD zones: two real mpd servers, one zone each', () => {
  let labs: MpdLab[] = [];
  let hub: SpeakerHub;
  let dataDir: string;
  let base: string;
  const ids: string[] = [];
  const pids: Record<string, string> = {};

  const get = async (path: string): Promise<any> => (await fetch(`${base}${path}`, { headers: { Authorization: `Bearer ${TOKEN}` } })).json();
  const newSession = async (): Promise<string> => (await get('/api/v1/init_session')).SessionToken;
  const op = (session: string, name: string, params: Record<string, string> = {}): Promise<any> =>
    get(`/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`);

  /** Which of the tones the MPD's last 0.3 s of capture holds most, and how loud. */
  function hearing(lab: MpdLab): { hz: number; amplitude: number } {
    return strongest(left(lab.out, Math.max(0, fileSize(lab.out) - Math.round(RATE * 0.3) * FRAME)), RATE, TONES);
  }
  async function expectHears(lab: MpdLab, hz: number): Promise<void> {
    await eventually(
      () => {
        const h = hearing(lab);
        return h.hz === hz && h.amplitude > HEARD;
      },
      15_000,
      () => `${lab.out} holding ${hz} Hz (holds ${JSON.stringify(hearing(lab))})`,
    );
  }

  beforeAll(async () => {
    labs = await Promise.all([MpdLab.create({}), MpdLab.create({})]);
    await Promise.all(labs.map((l) => l.start()));
    dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-mpd-zones-'));
    const mediaDir = join(dataDir, 'music');
    await mkdir(mediaDir);
    await writeFile(join(mediaDir, 'a.wav'), toneWav(40, A_HZ, 'Zone A'));
    await writeFile(join(mediaDir, 'b.wav'), toneWav(40, B_HZ, 'Zone B'));
    await writeFile(join(mediaDir, 'b-next.wav'), toneWav(40, B_NEXT_HZ, 'Zone B Next'));
    hub = createHub(
      {
        dataDir,
        speakers: { virtual: { count: 0 } },
        server: { host: '127.0.0.1', port: 0, token: TOKEN },
        media: { samples: false, folders: [mediaDir] },
        log: { level: 'debug' },
        mpd: {
          servers: labs.map((l, i) => ({ host: '127.0.0.1', port: l.port, name: `Zone MPD ${i + 1}` })),
          // MPD's stop waits for its pipe output (ffmpeg -re, paced) to close: over a second on a busy machine.
          requestTimeoutMs: 5000,
        },
      } as any,
      { logger: createLogger({ level: 'warn', stream: new Writable({ write: (_c, _e, cb) => cb() }) }) },
    );
    await hub.start();
    base = hub.url!;
    const admin = await newSession();
    for (const m of (await op(admin, 'media_list')).MediaList) pids[m.Title] = m.PersistentID;
    await eventually(async () => (await op(admin, 'device_list')).DeviceList.filter((d: any) => d.Active).length === 2, 10_000, 'two active MPDs');
    const list = (await op(admin, 'device_list')).DeviceList;
    for (const i of [0, 1]) ids.push(list.find((d: any) => d.DeviceName === `Zone MPD ${i + 1}`).DeviceID);
    for (const id of ids) expect((await op(admin, 'set_volume_device', { DeviceID: id, Volume: '50' })).Result).toBe('true');
  }, 60_000);

  afterAll(async () => {
    await hub?.stop();
    await Promise.all(labs.map((l) => l.destroy()));
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  test('two sessions play two zones, one MPD each: each plays its own tone, playback_list shows both', async () => {
    const [sessionA, sessionB] = [await newSession(), await newSession()];
    expect((await op(sessionA, 'play_hub_media_selected_speakers', { PersistentID: pids['Zone A'], DeviceIDList: ids[0] })).Result).toBe('true');
    expect((await op(sessionB, 'play_hub_media_selected_speakers', { PersistentID: pids['Zone B'], DeviceIDList: ids[1] })).Result).toBe('true');
    await expectHears(labs[0], A_HZ);
    await expectHears(labs[1], B_HZ);
    const list = (await op(sessionA, 'playback_list')).PlaybackList;
    expect(list.map((p: any) => [p.DeviceIDList, p.PlaybackState])).toEqual([
      [[ids[0]], 'PlayerStatePlaying'],
      [[ids[1]], 'PlayerStatePlaying'],
    ]);
    expect(list[0].PlaybackID).not.toBe(list[1].PlaybackID);

    // Zone B stops and plays something new; zone A's MPD meanwhile.
    const mark = fileSize(labs[0].out);
    const markedAt = Date.now();
    const growth = watchGrowth(() => fileSize(labs[0].out));
    expect((await op(sessionB, 'stop_play')).Result).toBe('true');
    await eventually(async () => (await mpdStatus(labs[1].port)).state === 'stop', 10_000, "zone B's MPD stopped");
    expect((await op(sessionB, 'play_hub_media_selected_speakers', { PersistentID: pids['Zone B Next'], DeviceIDList: ids[1] })).Result).toBe('true');
    await expectHears(labs[1], B_NEXT_HZ);
    // Two seconds of zone A's capture at least, the stop and the new play within them.
    await eventually(() => fileSize(labs[0].out) - mark > RATE * FRAME * 2, 5000, 'two seconds more of zone A');
    const grownMs = ((fileSize(labs[0].out) - mark) / FRAME / RATE) * 1000;
    const wallMs = Date.now() - markedAt;
    const stall = growth.stop();
    const s = left(labs[0].out, mark);
    console.log(
      `mpd zone A meanwhile: longest stall ${stall.longestStallMs.toFixed(0)} ms, capture ${(wallMs - grownMs).toFixed(0)} ms behind the clock`,
    );
    // A paused or restarted MPD writes no silence into its capture: the file stops growing, and
    // falls behind the clock. Playing on, ffmpeg -re writes every ~0.1 s (stalls of 40–110 ms
    // here); a 1 s pause of zone A showed as a 650 ms stall, 645 ms behind (the pipe's 0.37 s
    // drains first, and a new ffmpeg starts with a 0.5 s burst, -readrate_initial_burst).
    expect(stall.longestStallMs).toBeLessThan(300);
    expect(wallMs - grownMs).toBeLessThan(300);
    expect(lowWindows(s, RATE, A_HZ, HEARD)).toEqual([]);
    for (const other of [B_HZ, B_NEXT_HZ]) expect(strongest(s, RATE, [other]).amplitude).toBeLessThan(200);
    expect((await op(sessionA, 'playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    expect((await op(sessionA, 'playback_list')).PlaybackList.map((p: any) => p.DeviceIDList)).toEqual([[ids[0]], [ids[1]]]);
    await op(sessionA, 'stop_play');
    await op(sessionB, 'stop_play');
  });
});

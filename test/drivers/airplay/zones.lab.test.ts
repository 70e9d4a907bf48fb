/**
 * Zones on real shairport-sync receivers (issue 27): two sessions play two zones at once, and
 * the AirPlay driver makes one RAOP stream per zone. Every zone plays its own tone, so each
 * receiver's capture says which zone it hears (Goertzel, test/helpers/audio.ts),
 * and a window where its tone is low is a gap.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { AirPlayDriver } from '../../../src/drivers/airplay/driver';
import { encodeWav } from '../../../src/audio/wav';
import { labSuite } from '../../helpers/labs';
import { startHub, type TestHub } from '../../helpers/hub';
import { lowWindows, steppedTone, strongest, watchGrowth, lowRms } from '../../helpers/audio';
import { ReceiverLab, canRunReceivers, until, type Receiver } from './harness';

const describeIf = labSuite(
  'the AirPlay lab',
  canRunReceivers() ? undefined : 'shairport-sync, avahi-daemon, dbus-daemon, ffmpeg or root (for namespaces) is missing',
);

jest.setTimeout(60_000);

const RATE = 44100;
/** s16le stereo: what a receiver writes per second. */
const BYTES_PER_S = RATE * 4;
// Multiples of 20 Hz: a whole number of cycles in every 50 ms window, so a window's level is exact;
// none a step of the stepped media (multiples of 100), so a zone's old tone is never taken for a step.
const A_HZ = 460;
const B_HZ = 740;
const B_NEXT_HZ = 1060;
const TONES = [A_HZ, B_HZ, B_NEXT_HZ];
/**
 * The tones peak at 12000; at volume 50 (0 dB on the lab's receivers) they come out at about
 * 8500 (the mono media spread over two channels, −3 dB): a 50 ms window below half of that
 * lost at least about half its tone.
 */
const HEARD = 4000;
/** The stepped media: 400 Hz in its first second, 100 Hz higher every second after. */
const STEP_HZ = (t: number) => 400 + 100 * Math.floor(t);
const STEPS = Array.from({ length: 10 }, (_, i) => STEP_HZ(i));

/** The left channel of the capture from byte `from` on (frame aligned): the tone helpers take mono samples. */
function left(pcm: Buffer, from = 0): Int16Array {
  const start = from - (from % 4);
  const n = Math.floor((pcm.length - start) / 4);
  const s = new Int16Array(Math.max(0, n));
  for (let i = 0; i < n; i++) s[i] = pcm.readInt16LE(start + i * 4);
  return s;
}

/** Byte offset of the first sample louder than `threshold` at or after `from`, or -1. */
function firstLoud(pcm: Buffer, from: number, threshold = 3000): number {
  for (let i = from - (from % 4); i + 1 < pcm.length; i += 4) if (Math.abs(pcm.readInt16LE(i)) > threshold) return i;
  return -1;
}

describeIf('AirPlay zones: one RAOP stream per zone, on real shairport-sync receivers', () => {
  let lab: ReceiverLab;
  let t: TestHub;
  let rx: Receiver[];
  const ids: string[] = [];
  const pids: Record<string, string> = {};
  let sessionA = '';
  let sessionB = '';

  const newSession = async (): Promise<string> => (await t.get('/api/v1/init_session')).body.SessionToken;
  const op = async (session: string, name: string, params: Record<string, string> = {}): Promise<any> =>
    (await t.get(`/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`)).body;
  const zones = async (): Promise<string[][]> => (await t.op('playback_list')).PlaybackList.map((p: any) => [...p.DeviceIDList].sort());

  /** Which tone receiver i plays most in its last 0.3 s written after byte `from` (none yet: amplitude -1). */
  function hearing(i: number, from: number, freqs = TONES): { hz: number; amplitude: number } {
    const pcm = lab.captured(rx[i]);
    const tail = Math.round(RATE * 0.3) * 4;
    if (pcm.length - from < tail) return { hz: 0, amplitude: -1 };
    return strongest(left(pcm, pcm.length - tail), RATE, freqs);
  }
  async function expectHears(i: number, hz: number, from: number): Promise<void> {
    await until(`${rx[i].name} hearing ${hz} Hz`, () => {
      const h = hearing(i, from);
      return h.hz === hz && h.amplitude > HEARD;
    }).catch((e) => {
      throw new Error(`${e.message} (hears ${JSON.stringify(hearing(i, from))})\n${rx[i].log().slice(-1500)}`);
    });
  }
  /** The stream each of the given speakers is a member of (the driver's own record). */
  const streamsOf = (...i: number[]) => {
    const driver = t.hub.driver<AirPlayDriver>('airplay')!;
    return i.map((k) => driver.speakers().find((s) => s.id === ids[k])?.stream);
  };

  beforeAll(async () => {
    lab = new ReceiverLab();
    rx = [];
    for (const name of ['Zone A One', 'Zone A Two', 'Zone B']) rx.push(await lab.add({ name }));
    const music = join(lab.dir, 'music');
    mkdirSync(music);
    const tags = (title: string) => ({ title, artist: 'AirPlay Test', album: 'Zones' });
    const tone = (hz: number) => steppedTone(40, () => hz);
    writeFileSync(join(music, 'a.wav'), encodeWav(tone(A_HZ), RATE, tags('Zone A')));
    writeFileSync(join(music, 'b.wav'), encodeWav(tone(B_HZ), RATE, tags('Zone B')));
    writeFileSync(join(music, 'b-next.wav'), encodeWav(tone(B_NEXT_HZ), RATE, tags('Zone B Next')));
    writeFileSync(join(music, 'steps.wav'), encodeWav(steppedTone(20, STEP_HZ), RATE, tags('Steps')));
    t = await startHub({
      media: { samples: false, folders: [music] },
      airplay: { receivers: rx.map((r) => ({ host: r.host, port: r.port, name: r.name })) },
    } as never);
    await until(
      'three available AirPlay speakers',
      async () => ((await t.op('device_list')).DeviceList ?? []).filter((d: any) => d.Active).length === 3,
    );
    const list = (await t.op('device_list')).DeviceList;
    for (const r of rx) ids.push(list.find((d: any) => d.DeviceName === r.name).DeviceID);
    for (const m of (await t.op('media_list')).MediaList) pids[m.Title] = m.PersistentID;
    for (const id of ids) expect((await t.op('set_volume_device', { DeviceID: id, Volume: '50' })).Result).toBe('true');
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    lab?.close();
  });

  test('two sessions play two zones: A on two receivers on one stream, B on the third; each receiver hears its own zone', async () => {
    [sessionA, sessionB] = [await newSession(), await newSession()];
    const from = rx.map((r) => lab.capturedBytes(r));
    const arrivals = [0, 1].map((i) => watchArrivals(() => lab.capturedBytes(rx[i])));
    expect(
      (await op(sessionA, 'play_hub_media_selected_speakers', { PersistentID: pids['Zone A'], DeviceIDList: `${ids[0]},${ids[1]}` })).Result,
    ).toBe('true');
    expect((await op(sessionB, 'play_hub_media_selected_speakers', { PersistentID: pids['Zone B'], DeviceIDList: ids[2] })).Result).toBe('true');
    await expectHears(0, A_HZ, from[0]);
    await expectHears(1, A_HZ, from[1]);
    await expectHears(2, B_HZ, from[2]);
    // Zone A in sync: the tone's onset reached both captures at about the same time (the stdout
    // back end has no clock: a receiver writes a frame when it plays it, see skew.ts).
    const onsets = [0, 1].map((i) => arrivals[i].stop().timeOf(firstLoud(lab.captured(rx[i]), from[i])));
    const skew = Math.abs(onsets[0] - onsets[1]);
    console.log(`airplay zones: zone A start skew ${skew.toFixed(1)} ms`);
    expect(skew).toBeLessThan(100);
    console.log(`airplay zones: levels ${rx.map((_, i) => Math.round(hearing(i, from[i]).amplitude)).join(', ')}`);
    // Zone A in sync: both receivers are members of one RAOP stream (one RTP timeline), B of another.
    const [a1, a2, b] = streamsOf(0, 1, 2);
    expect(a1).toBeDefined();
    expect(a2).toBe(a1);
    expect(b).toBeDefined();
    expect(b).not.toBe(a1);
    const list = (await t.op('playback_list')).PlaybackList;
    expect(list.map((p: any) => [[...p.DeviceIDList].sort(), p.PlaybackState])).toEqual([
      [[ids[0], ids[1]].sort(), 'PlayerStatePlaying'],
      [[ids[2]], 'PlayerStatePlaying'],
    ]);
  });

  test('a stop and a new play in zone B leave zone A playing without a gap', async () => {
    const mark = [0, 1].map((i) => lab.capturedBytes(rx[i]));
    const markedAt = Date.now();
    // A stall in what zone A's receivers are sent shows as their capture not growing.
    const growth = [0, 1].map((i) => watchGrowth(() => lab.capturedBytes(rx[i])));
    expect((await op(sessionB, 'stop_play')).Result).toBe('true');
    await until('zone B stopped', async () => (await zones()).length === 1);
    const fromB = lab.capturedBytes(rx[2]);
    expect((await op(sessionB, 'play_hub_media_selected_speakers', { PersistentID: pids['Zone B Next'], DeviceIDList: ids[2] })).Result).toBe('true');
    await expectHears(2, B_NEXT_HZ, fromB);
    expect((await op(sessionA, 'playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    // A receiver writes what the hub sent a latency (2 s) earlier: zone A's capture is looked at
    // until it holds everything sent up to B's new tone being heard, and half a second more.
    const needed = ((Date.now() - markedAt) / 1000 + 2.5) * BYTES_PER_S;
    await until('zone A captured past the new play in B', () => [0, 1].every((i) => lab.capturedBytes(rx[i]) - mark[i] > needed), 15_000);
    const stalls = growth.map((g) => g.stop());
    console.log(`airplay zones: zone A longest capture stall ${stalls.map((s) => Math.round(s.longestStallMs)).join(', ')} ms`);
    // Every 50 ms of zone A's receivers meanwhile holds A's tone, and only it.
    for (const i of [0, 1]) {
      const s = left(lab.captured(rx[i]), mark[i]);
      console.log(
        `airplay zones: zone A receiver ${i + 1} level ${Math.round(strongest(s, RATE, [A_HZ]).amplitude)} over ${(s.length / RATE).toFixed(1)} s`,
      );
      expect(lowWindows(s, RATE, A_HZ, HEARD).map((w) => w.atMs)).toEqual([]);
      for (const other of [B_HZ, B_NEXT_HZ]) expect(strongest(s, RATE, [other]).amplitude).toBeLessThan(200);
      expect(stalls[i].shrank).toBe(false);
      expect(stalls[i].longestStallMs).toBeLessThan(1000);
    }
    expect(await zones()).toEqual([[ids[0], ids[1]].sort(), [ids[2]]]);
    const [a1, a2, b] = streamsOf(0, 1, 2);
    expect(a2).toBe(a1);
    expect(b).not.toBe(a1);
  });

  test('the same media started in zone B a second after zone A is a stream of its own: it starts from the beginning', async () => {
    // Were streams matched by URL and position, B's start (same URL, about A's position) would
    // join A's RAOP stream and be heard seconds into the media; a stream of its own starts at 0,
    // whose pitch is the first step's.
    expect((await op(sessionB, 'stop_play')).Result).toBe('true');
    await until('zone B stopped', async () => (await zones()).length === 1);
    const fromA = lab.capturedBytes(rx[0]);
    expect(
      (await op(sessionA, 'play_hub_media_selected_speakers', { PersistentID: pids['Steps'], DeviceIDList: `${ids[0]},${ids[1]}` })).Result,
    ).toBe('true');
    // A second into A's steps (its second step heard), B starts the same media.
    await until('zone A past its first second', () => {
      const h = hearing(0, fromA, STEPS);
      return h.hz >= STEPS[1] && h.amplitude > HEARD;
    });
    const fromB = lab.capturedBytes(rx[2]);
    expect((await op(sessionB, 'play_hub_media_selected_speakers', { PersistentID: pids['Steps'], DeviceIDList: ids[2] })).Result).toBe('true');
    let onset = -1;
    await until('zone B playing the steps', () => {
      const pcm = lab.captured(rx[2]);
      onset = firstLoud(pcm, fromB);
      return onset >= 0 && pcm.length - onset > 0.5 * BYTES_PER_S;
    });
    // 100 ms into what it played first (clear of the onset), 200 ms long.
    const first = strongest(left(lab.captured(rx[2]), onset), RATE, STEPS, Math.round(RATE * 0.1), Math.round(RATE * 0.2));
    expect(first.hz).toBe(STEPS[0]);
    const [a1, a2, b] = streamsOf(0, 1, 2);
    expect(a2).toBe(a1);
    expect(b).not.toBe(a1);
    expect(await zones()).toEqual([[ids[0], ids[1]].sort(), [ids[2]]]);

    // A stop in zone A leaves zone B's stream playing on.
    const markB = lab.capturedBytes(rx[2]);
    expect((await op(sessionA, 'stop_play')).Result).toBe('true');
    await until('zone A stopped', async () => (await zones()).length === 1);
    await until('more of zone B', () => lab.capturedBytes(rx[2]) - markB > 1.5 * BYTES_PER_S, 10_000);
    expect(lowRms(left(lab.captured(rx[2]), markB), RATE, 1500)).toEqual([]);
    expect((await op(sessionB, 'playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    await op(sessionB, 'stop_play');
  });
});

/**
 * When the bytes of a capture arrived (polled every ms, as skew.ts does): timeOf(offset) is the
 * time the frame at byte `offset` was written, one frame every 1/44100 s within a chunk.
 */
function watchArrivals(size: () => number): { stop(): { timeOf(offset: number): number } } {
  const log = [{ t: performance.now(), size: size() }];
  const timer = setInterval(() => {
    const now = size();
    if (now !== log[log.length - 1].size) log.push({ t: performance.now(), size: now });
  }, 1);
  timer.unref(); // a test that fails before stop() must not keep jest alive
  return {
    stop() {
      clearInterval(timer);
      return {
        timeOf(offset: number) {
          for (let i = 1; i < log.length; i++) if (log[i].size > offset) return log[i].t + (offset - log[i - 1].size) / (BYTES_PER_S / 1000);
          return NaN;
        },
      };
    },
  };
}

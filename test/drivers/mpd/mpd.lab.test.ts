import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createHub, type SpeakerHub } from '../../../src/hub';
import { createLogger } from '../../../src/logger';
import { labSuite } from '../../helpers/labs';
import { fakeServer, fileSize, frequency, loudness, mpc, MpdLab, mpdInstalled, mpdStatus, queue, toneWav } from './harness';
import { eventually } from '../../helpers/wait';

const TOKEN = 'mpd-test-token-0123456789abcdef';
/** The test tones peak at 12000 (RMS ~8500 at full volume); silence is below this. */
const AUDIBLE = 1500;

const describeIf = labSuite('the MPD lab', mpdInstalled());

describeIf('MPD driver against two real mpd instances', () => {
  let a: MpdLab;
  let b: MpdLab;
  let garbage: Awaited<ReturnType<typeof fakeServer>>;
  let hang: Awaited<ReturnType<typeof fakeServer>>;
  let hub: SpeakerHub;
  let dataDir: string;
  let base: string;
  let session: string;
  const logs: string[] = [];
  const pids: Record<string, string> = {};
  let idA = '';
  let idB = '';

  const op = async (name: string, params: Record<string, string> = {}): Promise<any> =>
    (
      await fetch(`${base}/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`, {
        headers: { Authorization: `Bearer ${TOKEN}` },
      })
    ).json();
  const device = async (id: string) => (await op('device_list')).DeviceList.find((d: any) => d.DeviceID === id);
  /** Waits for audio of about `hz` in a capture written after byte `from`. */
  async function expectTone(lab: MpdLab, from: number, hz: number, timeoutMs = 10_000): Promise<void> {
    await eventually(
      () => loudness(lab.out, from) > AUDIBLE && fileSize(lab.out) - from > 44100 * 4 && Math.abs(frequency(lab.out) - hz) < hz * 0.05,
      timeoutMs,
      `a ${hz} Hz tone in ${lab.out} (last ${frequency(lab.out).toFixed(0)} Hz, level ${loudness(lab.out, from).toFixed(0)})`,
    );
  }

  beforeAll(async () => {
    const music = { 'user-1.wav': toneWav(60, 330, 'User One'), 'user-2.wav': toneWav(60, 550, 'User Two') };
    [a, b] = await Promise.all([MpdLab.create(music), MpdLab.create(music)]);
    await Promise.all([a.start(), b.start()]);
    garbage = await fakeServer('garbage');
    hang = await fakeServer('hang');

    dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-mpd-hub-'));
    const mediaDir = join(dataDir, 'music');
    await mkdir(mediaDir);
    await writeFile(join(mediaDir, 'hub-tone.wav'), toneWav(40, 880, 'Hub Tone'));
    await writeFile(join(mediaDir, 'chime.wav'), toneWav(4, 660, 'Chime'));
    const logger = createLogger({
      level: 'debug',
      stream: new Writable({
        write(chunk, _enc, cb) {
          logs.push(String(chunk));
          cb();
        },
      }),
    });
    hub = createHub(
      {
        dataDir,
        speakers: { virtual: { count: 0 } },
        server: { host: '127.0.0.1', port: 0, token: TOKEN },
        media: { samples: false, folders: [mediaDir] },
        log: { level: 'debug' },
        mpd: {
          servers: [
            { host: '127.0.0.1', port: a.port, name: 'Kitchen MPD' },
            `127.0.0.1:${b.port}`,
            `127.0.0.1:${garbage.port}`,
            `127.0.0.1:${hang.port}`,
          ],
          reconnectMinMs: 100,
          reconnectMaxMs: 1000,
          // MPD's stop waits for its pipe output (ffmpeg -re, paced) to close: over a second on a busy machine.
          requestTimeoutMs: 5000,
        },
      } as any,
      { logger },
    );
    await hub.start();
    base = hub.url!;
    session = (await (await fetch(`${base}/api/v1/init_session`, { headers: { Authorization: `Bearer ${TOKEN}` } })).json()).SessionToken;
    for (const m of (await op('media_list')).MediaList) pids[m.Title] = m.PersistentID;
  }, 60_000);

  afterAll(async () => {
    await hub?.stop();
    await Promise.all([a?.destroy(), b?.destroy(), garbage?.close(), hang?.close()]);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  test('each MPD is a speaker named from config (else MPD <host>) with ModelName from the greeting', async () => {
    await eventually(async () => (await op('device_list')).DeviceList.filter((d: any) => d.Active).length === 2, 10_000, 'two active MPDs');
    const list = (await op('device_list')).DeviceList;
    expect(list).toHaveLength(4);
    const kitchen = list.find((d: any) => d.DeviceName === 'Kitchen MPD');
    const other = list.find((d: any) => d.Active && d.DeviceName === 'MPD 127.0.0.1');
    expect(kitchen).toMatchObject({ Active: true, ModelName: expect.stringMatching(/^MPD \d+\.\d+(\.\d+)?$/) });
    expect(other).toMatchObject({ Active: true, ModelName: expect.stringMatching(/^MPD \d+\.\d+(\.\d+)?$/) });
    idA = kitchen.DeviceID;
    idB = other.DeviceID;
    expect(idA).toMatch(/^\d{14}$/);
    expect(idA).not.toBe(idB);
  });

  test('a peer that answers garbage or hangs is refused/timed out with a clear log line; the others are unaffected', async () => {
    await eventually(() => logs.some((l) => l.includes('not an MPD greeting')), 10_000, 'garbage log line');
    await eventually(() => logs.some((l) => l.includes('no MPD greeting within')), 20_000, 'hang log line');
    const inactive = (await op('device_list')).DeviceList.filter((d: any) => !d.Active);
    expect(inactive).toHaveLength(2);
    expect((await device(idA)).Active).toBe(true);
  });

  test('hub media plays on the MPD (captured audio), the user queue is kept, and the hub entry is removed on stop', async () => {
    await mpc(a.port, 'clear', 'add "user-1.wav"', 'add "user-2.wav"', 'setvol 100');
    const from = fileSize(a.out);
    expect((await op('play_hub_media_selected_speakers', { PersistentID: pids['Hub Tone'], DeviceIDList: idA })).Result).toBe('true');
    await expectTone(a, from, 880);
    expect((await op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    const q = await queue(a.port);
    expect(q.slice(0, 2)).toEqual(['user-1.wav', 'user-2.wav']);
    expect(q).toHaveLength(3);
    expect(q[2]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    // position from MPD's status elapsed, moving on
    const p1 = Number((await op('playback_status')).TimeElapsed);
    await eventually(async () => Number((await op('playback_status')).TimeElapsed) > p1, 5000, 'TimeElapsed moving');
  });

  test("a pause and resume from the MPD's own app (another connection) show in playback_status, its events and IsPlaying", async () => {
    // idle 'player' → status → the speaker's ownPlayState → the playback engine (latency: bench/mpd.js).
    const states: string[] = [];
    const onState = (e: { state: string }) => states.push(e.state);
    hub.core.events.on('playbackState', onState);
    try {
      expect((await device(idA)).IsPlaying).toBe(true);
      expect((await op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
      await mpc(a.port, 'pause 1');
      await eventually(async () => (await op('playback_status')).PlaybackState === 'PlayerStatePaused', 3000, 'playback_status Paused');
      expect((await device(idA)).IsPlaying).toBe(false);
      expect(states).toContain('PlayerStatePaused');
      // TimeElapsed stays where the MPD stopped (its own elapsed), no longer moving.
      const mpdAt = Math.floor(Number((await mpdStatus(a.port)).elapsed));
      const t = Number((await op('playback_status')).TimeElapsed);
      expect(Math.abs(t - mpdAt)).toBeLessThanOrEqual(1);
      // Proving that something does not move takes time passing: 1.5 s, over a whole-second tick.
      await new Promise((r) => setTimeout(r, 1500));
      expect(Number((await op('playback_status')).TimeElapsed)).toBe(t);
      await mpc(a.port, 'pause 0');
      await eventually(async () => (await op('playback_status')).PlaybackState === 'PlayerStatePlaying', 3000, 'playback_status Playing again');
      expect((await device(idA)).IsPlaying).toBe(true);
      await eventually(async () => Number((await op('playback_status')).TimeElapsed) > t, 5000, 'TimeElapsed moving again');
      // The hub's own pause/resume is not mistaken for the app's: one Paused, one Playing each.
      expect((await op('pause_play')).Result).toBe('true');
      expect((await op('playback_status')).PlaybackState).toBe('PlayerStatePaused');
      expect((await op('resume_hub_media_selected_speakers', { PersistentID: pids['Hub Tone'], DeviceIDList: idA })).Result).toBe('true');
      await eventually(async () => (await device(idA)).IsPlaying === true, 3000, 'playing after resume_play');
      expect((await op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
      expect(logs.filter((l) => l.includes("from the speaker's own app")).length).toBe(2);
      // Back to back, the status read the pause wakes lands after the resume: still the hub's own.
      for (let i = 0; i < 8; i++) {
        expect((await op('pause_play')).Result).toBe('true');
        expect((await op('resume_hub_media_selected_speakers', { PersistentID: pids['Hub Tone'], DeviceIDList: idA })).Result).toBe('true');
      }
      await eventually(async () => (await mpdStatus(a.port)).state === 'play', 3000, 'MPD playing after the pauses');
      await eventually(async () => (await device(idA)).IsPlaying === true, 3000, 'playing after the pauses');
      expect(logs.filter((l) => l.includes("from the speaker's own app")).length).toBe(2);
    } finally {
      hub.core.events.off('playbackState', onState);
    }
  });

  test('volume 0–50 maps onto setvol 0–100 both ways', async () => {
    expect((await op('set_volume_device', { DeviceID: idA, Volume: '20' })).Result).toBe('true');
    expect((await mpdStatus(a.port)).volume).toBe('40');
    await mpc(a.port, 'setvol 70');
    await eventually(async () => (await op('get_volume_device', { DeviceID: idA })).Volume === '35', 3000, 'volume 35 from the app');
    await mpc(a.port, 'setvol 100');
  });

  test('stop: the queue is back to the user entries', async () => {
    await op('stop_play');
    await eventually(async () => (await mpdStatus(a.port)).state === 'stop', 15_000, 'mpd stopped');
    await eventually(async () => (await queue(a.port)).length === 2, 15_000, 'hub entry removed').catch(() => undefined);
    expect(await queue(a.port)).toEqual(['user-1.wav', 'user-2.wav']);
  });

  test('web media (MPD fetches the URL itself) and TTS play on the MPD; pause_play and resume act on its player', async () => {
    const tone = toneWav(20, 440, 'Web Tone');
    // MPD's decoders seek (Range requests) while probing a WAV: a web server without ranges garbles it.
    const web = createServer((req, res) => {
      if (req.url?.startsWith('/missing')) return void res.writeHead(404).end('not found');
      const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
      const start = m ? Number(m[1]) : 0;
      const end = m && m[2] ? Math.min(Number(m[2]), tone.length - 1) : tone.length - 1;
      const headers = { 'Content-Type': 'audio/wav', 'Accept-Ranges': 'bytes', 'Content-Length': end - start + 1 };
      if (m) res.writeHead(206, { ...headers, 'Content-Range': `bytes ${start}-${end}/${tone.length}` });
      else res.writeHead(200, headers);
      res.end(tone.subarray(start, end + 1));
    });
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(web.address() as AddressInfo).port}/web-tone.wav`;
      let from = fileSize(a.out);
      expect(await op('play_web_media_selected_speakers', { MediaUrl: url, DeviceIDList: idA })).toEqual({ Result: 'true' });
      await expectTone(a, from, 440);
      expect((await queue(a.port)).slice(0, 2)).toEqual(['user-1.wav', 'user-2.wav']);

      // A URL MPD cannot play (a 404) is a failed play with MPD's reason (issue 31 item 2), not
      // "playing" followed by a stop; the web tone it played goes on (nothing is lost).
      const missing = `http://127.0.0.1:${(web.address() as AddressInfo).port}/missing.mp3`;
      const failed = await op('play_web_media_selected_speakers', { MediaUrl: missing, DeviceIDList: idA });
      expect(failed).toMatchObject({ Result: 'false', ErrorCode: 'PlaybackFailed' });
      expect(failed.ErrorMessage).toMatch(/404/);
      from = fileSize(a.out);
      await expectTone(a, from, 440);
      expect((await op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
      expect((await queue(a.port)).filter((e: string) => e.includes('missing'))).toEqual([]);

      from = fileSize(a.out);
      expect((await op('play_tts_selected_speakers', { Text: 'Dinner is ready.', DeviceIDList: idA })).Result).toBe('true');
      await eventually(() => loudness(a.out, from) > AUDIBLE, 15_000, 'speech in the capture');
      await eventually(async () => (await op('playback_status')).PlaybackState === 'PlayerStateStopped', 20_000, 'TTS ended');
      await eventually(async () => (await queue(a.port)).length === 2, 15_000, 'TTS entry removed');

      await op('play_hub_media_selected_speakers', { PersistentID: pids['Hub Tone'], DeviceIDList: idA });
      await eventually(async () => (await mpdStatus(a.port)).state === 'play', 5000, 'playing');
      expect((await op('pause_play')).Result).toBe('true');
      await eventually(async () => (await mpdStatus(a.port)).state !== 'play', 5000, 'MPD paused by pause_play');
      expect((await op('resume_hub_media_selected_speakers', { PersistentID: pids['Hub Tone'], DeviceIDList: idA })).Result).toBe('true');
      from = fileSize(a.out);
      await expectTone(a, from, 880);
      await op('stop_play');
      await eventually(async () => (await queue(a.port)).length === 2, 15_000, 'hub entry removed');
    } finally {
      await new Promise((r) => web.close(r));
    }
  });

  test("an announcement puts back the MPD's queue, song, position, state, volume and options", async () => {
    await mpc(b.port, 'clear', 'add "user-1.wav"', 'add "user-2.wav"', 'repeat 1', 'random 0', 'consume 0', 'single 0', 'setvol 60', 'play 1');
    await mpc(b.port, 'seek 1 5');
    let from = fileSize(b.out);
    await expectTone(b, from, 550);
    const before = await mpdStatus(b.port);
    const t0 = Date.now();
    const e0 = Number(before.elapsed);
    from = fileSize(b.out);
    const ann = await op('announce', { PersistentID: pids['Chime'], DeviceIDList: idB, Volume: '40' });
    expect(ann.AnnouncementID).toBeDefined();
    await expectTone(b, from, 660);
    await eventually(
      async () => (await op('announcement_status', { AnnouncementID: ann.AnnouncementID })).State === 'done',
      20_000,
      'announcement done',
    );
    from = fileSize(b.out);
    await expectTone(b, from, 550);
    const after = await mpdStatus(b.port);
    expect(await queue(b.port)).toEqual(['user-1.wav', 'user-2.wav']);
    expect(after).toMatchObject({ state: 'play', song: '1', volume: '60', repeat: '1', random: '0', single: '0', consume: '0' });
    const expected = e0 + (Date.now() - t0) / 1000;
    expect(Math.abs(Number(after.elapsed) - expected)).toBeLessThan(2);
    await mpc(b.port, 'stop');
  });

  test('an MPD killed mid-play is reported inactive, the other plays on, and comes back by itself', async () => {
    await mpc(a.port, 'setvol 100');
    await mpc(b.port, 'setvol 100');
    const fromA = fileSize(a.out);
    const fromB = fileSize(b.out);
    await op('play_hub_media_selected_speakers', { PersistentID: pids['Hub Tone'], DeviceIDList: `${idA},${idB}` });
    await expectTone(a, fromA, 880);
    await expectTone(b, fromB, 880);
    await a.kill();
    await eventually(async () => (await device(idA)).Active === false, 5000, 'A inactive');
    const mark = fileSize(b.out);
    await eventually(() => fileSize(b.out) - mark > 44100 * 4 && loudness(b.out, mark) > AUDIBLE, 5000, 'B plays on');
    expect((await device(idB)).Active).toBe(true);
    await a.start();
    await eventually(async () => (await device(idA)).Active === true, 10_000, 'A back');
    expect(logs.some((l) => l.includes('connection to') && l.includes('lost'))).toBe(true);
  });
});

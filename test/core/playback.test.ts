import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { statSync } from 'node:fs';
import { ManualClock } from '../../src/core/clock';
import type { PlaybackSnapshot } from '../../src/core/events';
import { encodeWav } from '../../src/audio/wav';
import { startHub, type TestHub, virtualOf } from '../helpers/hub';
import { eventually } from '../helpers/wait';

/** A real web server on loopback serving a 10 s WAV, counting requests per path. */
async function webServer(): Promise<{ url: (path: string) => string; hits: Map<string, number>; close: () => Promise<void> }> {
  const rate = 8000;
  const samples = new Int16Array(rate * 10).map((_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)));
  const wav = encodeWav(samples, rate, { title: 'Web Tone', artist: 'Test', album: 'Web' });
  const hits = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path.startsWith('/missing')) {
      res.writeHead(404).end('not here');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': wav.length }).end(wav);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (p) => `http://127.0.0.1:${port}${p}`,
    hits,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

describe('playback', () => {
  const clock = new ManualClock();
  let t: TestHub;
  let web: Awaited<ReturnType<typeof webServer>>;
  let ids: string[];
  let pid: string;
  let duration: number;
  const states: PlaybackSnapshot[] = [];

  const status = () => t.op('playback_status');
  const playing = async () => (await t.op('device_list')).DeviceList.filter((d: any) => d.IsPlaying).map((d: any) => d.DeviceID);
  const speaker = (i: number) => virtualOf(t.hub).speaker(i);

  beforeAll(async () => {
    web = await webServer();
    t = await startHub({ speakers: { virtual: { count: 3 } } }, { clock });
    ids = virtualOf(t.hub)
      .speakers()
      .map((s) => s.id);
    const media = (await t.op('media_list')).MediaList;
    pid = media[0].PersistentID;
    duration = media[0].Duration;
    t.hub.core.events.on('playbackState', (s) => states.push(s));
  });
  afterAll(async () => {
    await t.close();
    await web.close();
  });
  beforeEach(async () => {
    await t.op('stop_play');
    for (const s of virtualOf(t.hub).speakers()) s.reappear();
    for (const id of ids) await t.op('remove_device_from_session', { DeviceID: id });
    states.length = 0;
  });

  test('before any playback: Stopped, TimeElapsed "-1", not playing', async () => {
    expect(await status()).toEqual({ PlaybackState: 'PlayerStateStopped', TimeElapsed: '-1' });
    expect(await t.op('is_playing')).toEqual({ IsPlaying: 'false' });
  });

  test('a session-target play with no speaker selected fails and changes nothing', async () => {
    for (const [op, p] of [
      ['play_hub_media', { PersistentID: pid }],
      ['play_web_media', { MediaUrl: web.url('/a.wav') }],
      ['play_tts', { Text: 'hello' }],
    ] as const) {
      expect(await t.op(op, p)).toMatchObject({ Result: 'false', ErrorCode: 'NoSpeakerSelected' });
    }
    expect(await status()).toEqual({ PlaybackState: 'PlayerStateStopped', TimeElapsed: '-1' });
  });

  test('hub media on the session: plays on the selected speakers only, pauses, resumes, ends by itself', async () => {
    await t.op('add_device_to_session', { DeviceID: ids[0] });
    await t.op('add_device_to_session', { DeviceID: ids[2] });
    expect(await t.op('play_hub_media', { PersistentID: pid })).toEqual({ Result: 'true' });
    expect(await status()).toEqual({ PlaybackState: 'PlayerStatePlaying', TimeElapsed: '0' });
    expect((await playing()).sort()).toEqual([ids[0], ids[2]].sort());
    // The speaker really fetched the whole file from the hub's media server, by an opaque URL.
    const fetch = speaker(0).fetches.at(-1)!;
    const item = t.hub.library.get(pid)!;
    expect(fetch.bytes).toBe(statSync(item.file).size);
    expect(fetch.url).not.toContain(item.file);
    expect(fetch.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/media\/[A-Za-z0-9_-]{22}\//);

    clock.advance(5_000);
    expect(await status()).toEqual({ PlaybackState: 'PlayerStatePlaying', TimeElapsed: '5' });
    expect(await t.op('pause_play')).toEqual({ Result: 'true' });
    expect(await status()).toEqual({ PlaybackState: 'PlayerStatePaused', TimeElapsed: '5' });
    expect(await t.op('is_playing')).toEqual({ IsPlaying: 'false' });
    clock.advance(60_000);
    expect(await status()).toEqual({ PlaybackState: 'PlayerStatePaused', TimeElapsed: '5' });

    expect(await t.op('resume_hub_media', { PersistentID: '1234' })).toMatchObject({ Result: 'false', ErrorCode: 'NotResumable' });
    expect(await t.op('resume_hub_media', { PersistentID: pid })).toEqual({ Result: 'true' });
    clock.advance(2_000);
    expect(await status()).toEqual({ PlaybackState: 'PlayerStatePlaying', TimeElapsed: '7' });

    clock.advance((duration - 7) * 1000 + 1000);
    await eventually(async () => (await status()).PlaybackState === 'PlayerStateStopped', 2000, 'end of media');
    expect(await status()).toEqual({ PlaybackState: 'PlayerStateStopped', TimeElapsed: '-1' });
    expect(await playing()).toEqual([]);
    expect(states.at(-1)).toMatchObject({ state: 'PlayerStateStopped', reason: 'ended' });
    // A stopped playback cannot resume.
    expect(await t.op('resume_hub_media', { PersistentID: pid })).toMatchObject({ ErrorCode: 'NotResumable' });
  });

  test('resume onto another target: paused speakers resume, new ones start at the paused position, others stop', async () => {
    expect(await t.op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: `${ids[0]},${ids[1]}` })).toEqual({ Result: 'true' });
    clock.advance(3_000);
    await t.op('pause_play');
    expect(await t.op('resume_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: `${ids[1]},${ids[2]}` })).toEqual({ Result: 'true' });
    expect((await playing()).sort()).toEqual([ids[1], ids[2]].sort());
    expect(speaker(0).state).toBe('stopped');
    expect(Math.round(speaker(2).position()!)).toBe(3);
    expect(await status()).toEqual({ PlaybackState: 'PlayerStatePlaying', TimeElapsed: '3' });
    await t.op('pause_play');
    expect(await t.op('resume_hub_media_party_mode', { PersistentID: pid })).toEqual({ Result: 'true' });
    expect((await playing()).sort()).toEqual([...ids].sort());
  });

  test('web media plays on every speaker in party mode; pause stops it for good', async () => {
    expect(await t.op('play_web_media_party_mode', { MediaUrl: web.url('/party.wav') })).toEqual({ Result: 'true' });
    // One download serves every virtual speaker of the play (issue 7, item 6); each one got the audio.
    expect(web.hits.get('/party.wav')).toBe(1);
    for (const i of [0, 1, 2])
      expect(speaker(i).fetches.at(-1)).toMatchObject({ url: web.url('/party.wav'), contentType: 'audio/wav', duration: 10 });
    expect((await playing()).sort()).toEqual([...ids].sort());
    clock.advance(2_000);
    expect(await status()).toEqual({ PlaybackState: 'PlayerStatePlaying', TimeElapsed: '2' });
    expect(await t.op('pause_play')).toEqual({ Result: 'true' });
    expect(await status()).toEqual({ PlaybackState: 'PlayerStateStopped', TimeElapsed: '-1' });
    expect(await playing()).toEqual([]);
    expect(await t.op('resume_hub_media_party_mode', { PersistentID: pid })).toMatchObject({ ErrorCode: 'NotResumable' });
  });

  test('TTS on selected speakers: synthesized, served, played on those only; pause stops it', async () => {
    expect(await t.op('play_tts_selected_speakers', { Text: 'The laundry is done', DeviceIDList: ids[1] })).toEqual({ Result: 'true' });
    expect(await playing()).toEqual([ids[1]]);
    const f = speaker(1).fetches.at(-1)!;
    expect(f.contentType).toBe('audio/wav');
    expect(f.duration).toBeGreaterThan(0.5);
    expect(await t.op('pause_play')).toEqual({ Result: 'true' });
    expect(await status()).toEqual({ PlaybackState: 'PlayerStateStopped', TimeElapsed: '-1' });
    expect(await t.op('pause_play')).toMatchObject({ Result: 'false', ErrorCode: 'NotPlaying' });
    // stop_play succeeds when nothing plays.
    expect(await t.op('stop_play')).toEqual({ Result: 'true' });
  });

  test('Priority: equal or higher interrupts (old becomes Stopped), lower is refused', async () => {
    await t.op('play_hub_media_party_mode', { PersistentID: pid, Priority: '50' });
    expect(await t.op('play_tts_party_mode', { Text: 'low', Priority: '10' })).toMatchObject({ Result: 'false', ErrorCode: 'PriorityTooLow' });
    expect(t.hub.core.playback.latestSnapshot()).toMatchObject({ kind: 'hub', priority: 50 });
    states.length = 0;
    expect(await t.op('play_tts_party_mode', { Text: 'same', Priority: '50' })).toEqual({ Result: 'true' });
    expect(states.map((s) => [s.state, s.reason ?? s.kind])).toEqual([
      ['PlayerStateStopped', 'interrupted'],
      ['PlayerStatePlaying', 'tts'],
    ]);
    // The default priority is 100: it interrupts 50; 99 is refused by 100.
    expect(await t.op('play_hub_media_party_mode', { PersistentID: pid })).toEqual({ Result: 'true' });
    expect(await t.op('play_tts_party_mode', { Text: 'nope', Priority: '99' })).toMatchObject({ ErrorCode: 'PriorityTooLow' });
    // A paused playback does not block anything.
    await t.op('pause_play');
    expect(await t.op('play_tts_party_mode', { Text: 'over a pause', Priority: '1' })).toEqual({ Result: 'true' });
  });

  test('DeviceIDList: unknown IDs are refused; unavailable ones are skipped', async () => {
    expect(await t.op('play_web_media_selected_speakers', { MediaUrl: web.url('/x.wav'), DeviceIDList: `${ids[0]},12345678901234` })).toMatchObject({
      ErrorCode: 'DeviceNotFound',
      Parameter: 'DeviceIDList',
    });
    expect(await status()).toMatchObject({ PlaybackState: 'PlayerStateStopped' });
    speaker(0).vanish();
    expect(await t.op('play_web_media_selected_speakers', { MediaUrl: web.url('/x.wav'), DeviceIDList: `${ids[0]},${ids[1]}` })).toEqual({
      Result: 'true',
    });
    expect(await playing()).toEqual([ids[1]]);
    expect(await t.op('play_web_media_selected_speakers', { MediaUrl: web.url('/x.wav'), DeviceIDList: ids[0] })).toMatchObject({
      ErrorCode: 'NoSpeakerAvailable',
    });
  });

  test('adding a speaker while playing makes it play; removing one stops only that one', async () => {
    await t.op('add_device_to_session', { DeviceID: ids[0] });
    await t.op('play_web_media', { MediaUrl: web.url('/join.wav') });
    clock.advance(4_000);
    expect(await t.op('add_device_to_session', { DeviceID: ids[1] })).toEqual({ Result: 'true' });
    expect((await playing()).sort()).toEqual([ids[0], ids[1]].sort());
    expect(Math.round(speaker(1).position()!)).toBe(4);
    expect(await t.op('remove_device_from_session', { DeviceID: ids[0] })).toEqual({ Result: 'true' });
    expect(await playing()).toEqual([ids[1]]);
    expect(await status()).toMatchObject({ PlaybackState: 'PlayerStatePlaying' });
    expect(await t.op('set_party_mode')).toEqual({ Result: 'true' });
    expect((await playing()).sort()).toEqual([...ids].sort());
    for (const id of ids) await t.op('remove_device_from_session', { DeviceID: id });
    expect(await status()).toEqual({ PlaybackState: 'PlayerStateStopped', TimeElapsed: '-1' });
  });

  test('a speaker vanishing mid-play drops out; the others play on; when all are gone playback stops', async () => {
    const events: string[] = [];
    const on = (e: { reason: string; device: { DeviceID: string } }) => events.push(`${e.reason}:${e.device.DeviceID}`);
    t.hub.core.events.on('device', on);
    await t.op('play_web_media_party_mode', { MediaUrl: web.url('/vanish.wav') });
    speaker(1).vanish();
    expect((await playing()).sort()).toEqual([ids[0], ids[2]].sort());
    expect(await status()).toMatchObject({ PlaybackState: 'PlayerStatePlaying' });
    expect((await t.op('device_info', { DeviceID: ids[1] })).Active).toBe(false);
    expect(events).toEqual(expect.arrayContaining([`DeviceError:${ids[1]}`, `DeviceUnavailable:${ids[1]}`]));
    speaker(0).vanish();
    speaker(2).vanish();
    expect(await status()).toEqual({ PlaybackState: 'PlayerStateStopped', TimeElapsed: '-1' });
    expect(states.at(-1)).toMatchObject({ state: 'PlayerStateStopped', reason: 'error' });
    speaker(1).reappear();
    expect(events).toContain(`DeviceAvailable:${ids[1]}`);
    expect(await t.op('play_web_media_party_mode', { MediaUrl: web.url('/back.wav') })).toEqual({ Result: 'true' });
    expect(await playing()).toEqual([ids[1]]);
    t.hub.core.events.off('device', on);
  });

  test('speaker faults: one failing speaker does not fail the play; all failing is PlaybackFailed, and what played goes on', async () => {
    speaker(0).failNextPlay('amplifier on fire');
    expect(await t.op('play_web_media_party_mode', { MediaUrl: web.url('/f.wav') })).toEqual({ Result: 'true' });
    expect((await playing()).sort()).toEqual([ids[1], ids[2]].sort());
    for (let i = 0; i < 3; i++) speaker(i).failNextPlay();
    const r = await t.op('play_web_media_party_mode', { MediaUrl: web.url('/g.wav') });
    expect(r).toMatchObject({ Result: 'false', ErrorCode: 'PlaybackFailed' });
    expect(r.ErrorMessage).toContain('injected speaker fault');
    // Nothing is lost to a play that started nowhere: the speakers that played f.wav play it again (a web stream, from its start).
    expect(await status()).toEqual({ PlaybackState: 'PlayerStatePlaying', TimeElapsed: '0' });
    expect((await playing()).sort()).toEqual([ids[1], ids[2]].sort());
    expect([1, 2].map((i) => speaker(i).fetches.at(-1)!.url)).toEqual([web.url('/f.wav'), web.url('/f.wav')]);
  });

  test('web media that cannot be fetched fails with PlaybackFailed, one message whatever the cause (no port oracle); the cause is logged at debug', async () => {
    const r = await t.op('play_web_media_party_mode', { MediaUrl: web.url('/missing.mp3') });
    expect(r).toMatchObject({ Result: 'false', ErrorCode: 'PlaybackFailed' });
    const unreachable = await t.op('play_web_media_party_mode', { MediaUrl: 'http://127.0.0.1:1/nothing.mp3' });
    expect(unreachable).toMatchObject({ Result: 'false', ErrorCode: 'PlaybackFailed' });
    // An open port answering 404 and a closed port read the same to the client.
    expect(unreachable.ErrorMessage).toBe(r.ErrorMessage);
    expect(r.ErrorMessage).toContain('the media URL could not be fetched or does not serve audio');
    expect(r.ErrorMessage).not.toMatch(/404|HTTP|ECONNREFUSED|fetch failed/);
    const causes = t.logs
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'media fetch failed')
      .map((l) => l.cause);
    expect(causes).toContain('HTTP 404');
    expect(causes.some((c: string) => /ECONNREFUSED|fetch failed/.test(c))).toBe(true);
  });

  test('unknown PersistentID is MediaNotFound; an over-long Text is TextTooLong', async () => {
    expect(await t.op('play_hub_media_party_mode', { PersistentID: '42' })).toMatchObject({ ErrorCode: 'MediaNotFound', Parameter: 'PersistentID' });
    expect(await t.op('play_tts_party_mode', { Text: 'x'.repeat(1001) })).toMatchObject({ ErrorCode: 'TextTooLong' });
  });
});

describe('playback time in real time', () => {
  let t: TestHub;
  beforeAll(async () => {
    t = await startHub({ speakers: { virtual: { count: 1 } } });
  });
  afterAll(() => t.close());

  test('TimeElapsed advances with the wall clock and playbackTime events tick each second', async () => {
    const ticks: number[] = [];
    t.hub.core.events.on('playbackTime', (e) => ticks.push(e.timeElapsed));
    const pid = (await t.op('media_list')).MediaList[0].PersistentID;
    expect(await t.op('play_hub_media_party_mode', { PersistentID: pid })).toEqual({ Result: 'true' });
    // A positive signal (the second tick), not a sleep; no upper bound on time (a loaded machine may be late).
    await eventually(() => ticks.includes(2), 10_000, 'the playbackTime tick at 2 s');
    const s = await t.op('playback_status');
    expect(s.PlaybackState).toBe('PlayerStatePlaying');
    expect(Number(s.TimeElapsed)).toBeGreaterThanOrEqual(2);
    expect(ticks.slice(0, 2)).toEqual([1, 2]);
    await t.op('stop_play');
  });
});

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ManualClock } from '../../src/core/clock';
import { encodeWav } from '../../src/audio/wav';
import { startHub, type TestHub, virtualOf } from '../helpers/hub';
import { eventually } from '../helpers/wait';

/**
 * play_web_media's StartAt (beyond the spec): a web file starts that far in, on the speakers and
 * in the playback's TimeElapsed; the DLNA renderers resume a paused URL with it. Bad values get
 * InvalidParameter naming StartAt.
 */

const clock = new ManualClock();
let t: TestHub;
let server: Server;
let url: string;

beforeAll(async () => {
  const rate = 8000;
  const wav = encodeWav(new Int16Array(rate * 30), rate, { title: 'Thirty', artist: 'Test', album: 'Web' });
  server = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': wav.length }).end(wav));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/thirty.wav`;
  t = await startHub({ speakers: { virtual: { count: 2 } } }, { clock });
});
afterAll(async () => {
  await t.close();
  await new Promise((r) => server.close(r));
});

test('StartAt starts a web file that far in: the speaker plays from there, TimeElapsed counts from there', async () => {
  const [id] = virtualOf(t.hub)
    .speakers()
    .map((s) => s.id);
  expect(await t.op('play_web_media_selected_speakers', { MediaUrl: url, DeviceIDList: id, StartAt: '12' })).toEqual({ Result: 'true' });
  const speaker = virtualOf(t.hub).speaker(0);
  await eventually(() => speaker.state === 'playing', 10_000, 'the speaker playing');
  expect(speaker.position()).toBe(12);
  expect(await t.op('playback_status', { DeviceID: id })).toEqual({ PlaybackState: 'PlayerStatePlaying', TimeElapsed: '12' });
  clock.advance(3000);
  expect(speaker.position()).toBe(15);
  expect((await t.op('playback_status', { DeviceID: id })).TimeElapsed).toBe('15');
  // Without it, from the start (as the spec's play_web_media).
  expect(await t.op('play_web_media_party_mode', { MediaUrl: url })).toEqual({ Result: 'true' });
  await eventually(() => speaker.position() === 0, 10_000, 'the party play from the start');
  await t.op('stop_play');
});

test.each(['-1', 'soon', '86401', '1.5'])('StartAt %s is refused with InvalidParameter', async (bad) => {
  const r = await t.op('play_web_media_party_mode', { MediaUrl: url, StartAt: bad });
  expect(r).toMatchObject({ Result: 'false', ErrorCode: 'InvalidParameter', Parameter: 'StartAt' });
});

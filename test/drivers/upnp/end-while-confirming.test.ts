/**
 * A short clip that ends while its start is still being confirmed (an announcement of one
 * sentence on a renderer whose position moves in whole seconds): the renderer's STOPPED event
 * comes before the play has a session, so it used to start no look, and the end was seen by
 * the first regular poll a second later (bench/announce-upnp.js: the music came back 1 s late
 * in some rounds). Now the session's first poll goes at once. A loopback AVTransport endpoint
 * answers from a script; the clock is a ManualClock, so "at once" is "with no clock time passed".
 */
import { ManualClock } from '../../../src/core/clock';
import type { SpeakerPlayState, StopReason } from '../../../src/drivers/driver';
import { UpnpConfigSchema } from '../../../src/drivers/upnp/config';
import { RendererTransport } from '../../../src/drivers/upnp/renderer-transport';
import { createLogger } from '../../../src/logger';
import { eventually } from '../../helpers/wait';
import { avtEndpoint, type AvtAnswer, type AvtEndpoint } from './avt-endpoint';

/** What the renderer answers now; the test moves it on. */
const renderer: { state: string; rel: string; positionReads: number; hold?: Promise<void> } = { state: 'STOPPED', rel: '0:00:00', positionReads: 0 };
let endpoint: AvtEndpoint;

beforeAll(async () => {
  endpoint = await avtEndpoint(async (action): Promise<AvtAnswer> => {
    if (action === 'GetTransportInfo') return { fields: { CurrentTransportState: renderer.state, CurrentTransportStatus: 'OK', CurrentSpeed: '1' } };
    if (action === 'GetPositionInfo') {
      renderer.positionReads++;
      await renderer.hold;
      return { fields: { Track: '1', TrackDuration: '0:00:01', RelTime: renderer.rel, AbsTime: renderer.rel, TrackURI: 'http://h/clip.wav' } };
    }
    if (action === 'Play') renderer.state = 'PLAYING';
    if (action === 'Stop') renderer.state = 'STOPPED';
    return {};
  });
});

afterAll(() => endpoint.close());

test('the end event of a clip still being confirmed is looked at as soon as the play is confirmed', async () => {
  const clock = new ManualClock();
  const log = createLogger({ level: 'silent' });
  const config = UpnpConfigSchema.parse({});
  const { control } = endpoint;
  const states: { state: SpeakerPlayState; reason?: StopReason }[] = [];
  let current: SpeakerPlayState = 'stopped';
  const transport = new RendererTransport({
    control,
    config,
    clock,
    log,
    host: {
      isAvailable: () => true,
      currentState: () => current,
      address: () => '127.0.0.1',
      setState: (state, reason) => {
        current = state;
        states.push({ state, reason });
      },
      assertAvailable: () => undefined,
    },
  });
  const ticket = await transport.load({ url: 'http://h/clip.wav', duration: 1 });
  await transport.start(ticket);
  let confirmed = false;
  const confirm = transport.confirm(ticket).then(() => (confirmed = true));
  // The first position read (0 s) is in: the position moves to 1 s, and the clip ends with it —
  // the renderer's STOPPED event arrives while the confirmation still runs.
  await eventually(() => renderer.positionReads >= 1, 2000, 'the first position read');
  renderer.rel = '0:00:01';
  let answer!: () => void;
  renderer.hold = new Promise((r) => (answer = r));
  transport.onEvent({ TransportState: 'PLAYING' });
  clock.advance(200);
  // The second read (1 s: the position moved) is at the renderer, its answer held back: the
  // clip ends and its event arrives before the confirmation has its answer.
  await eventually(() => renderer.positionReads >= 2, 2000, 'the second position read');
  renderer.state = 'STOPPED';
  transport.onEvent({ TransportState: 'STOPPED' });
  expect(confirmed).toBe(false);
  answer();
  await confirm;
  expect(confirmed).toBe(true);
  expect(states).toEqual([{ state: 'playing', reason: undefined }]);
  // No clock time passes: only a look scheduled at once can see the end.
  clock.advance(0);
  await eventually(() => current === 'stopped', 2000, 'the end reported with no clock time passed');
  expect(states[states.length - 1]).toEqual({ state: 'stopped', reason: 'ended' });
  transport.close();
});

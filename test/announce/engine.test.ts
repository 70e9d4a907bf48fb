/**
 * Playback engine fixes that came with the overlay model, each over HTTP with virtual speakers:
 * set_party_mode includes every selected speaker, one Stopped at the end of a track, a final
 * state at shutdown, stop_play reaches speakers no playback holds, a stronger play cancels a
 * start in progress, and speakers that come back rejoin a party play.
 */
import { ManualClock } from '../../src/core/clock';
import type { PlaybackSnapshot } from '../../src/core/events';
import { TEST_TOKEN, startHub, type TestHub, virtualOf } from '../helpers/hub';
import { eventually } from '../helpers/wait';
import { webServer } from './web-server';

describe('playback engine', () => {
  const clock = new ManualClock();
  let t: TestHub;
  let web: Awaited<ReturnType<typeof webServer>>;
  let ids: string[];
  let pid: string;
  let duration: number;
  const states: PlaybackSnapshot[] = [];
  const speaker = (i: number) => virtualOf(t.hub).speaker(i);

  beforeAll(async () => {
    web = await webServer('Web');
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
    await t?.close();
    await web?.close();
  });
  afterEach(() => {
    // An illegal state transition (a scheduling bug) is logged, never thrown into a driver: none may happen.
    expect(t.logs.filter((l) => l.includes('announcement scheduling fault'))).toEqual([]);
  });
  beforeEach(async () => {
    await t.op('stop_play');
    for (const s of virtualOf(t.hub).speakers()) s.reappear();
    for (const id of ids) await t.op('remove_device_from_session', { DeviceID: id });
    states.length = 0;
  });

  test('set_party_mode makes a speaker play that was selected but left out of a DeviceIDList play', async () => {
    await t.op('add_device_to_session', { DeviceID: ids[0] });
    expect(await t.op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: ids[1] })).toEqual({ Result: 'true' });
    expect(speaker(0).state).toBe('stopped');
    expect(await t.op('set_party_mode')).toEqual({ Result: 'true' });
    for (const i of [0, 1, 2]) expect(speaker(i).state).toBe('playing');
  });

  test('at the end of a track: one Stopped, no Playing events with a shrinking device list', async () => {
    await t.op('play_hub_media_party_mode', { PersistentID: pid });
    states.length = 0;
    clock.advance(duration * 1000 + 1000);
    await eventually(() => states.some((s) => s.state === 'PlayerStateStopped'), 5000, 'Stopped');
    expect(states.map((s) => [s.state, s.deviceIds.length, s.reason])).toEqual([['PlayerStateStopped', 0, 'ended']]);
  });

  test('stop_play stops a speaker that plays although no playback holds it (another app, a crashed hub)', async () => {
    await speaker(2).play({ url: web.url('/other.wav') });
    expect((await t.op('device_info', { DeviceID: ids[2] })).IsPlaying).toBe(true);
    expect(await t.op('stop_play')).toEqual({ Result: 'true' });
    expect(speaker(2).state).toBe('stopped');
  });

  test('a play with at least the priority of a play still starting cancels that start at once', async () => {
    await t.op('add_device_to_session', { DeviceID: ids[0] });
    const stuck = t.op('play_web_media', { MediaUrl: web.url('/hang.mp3'), Priority: '100' });
    await eventually(() => (t.hub.core.playback as any).starter.startingOn(new Set([ids[0]])), 5000, 'play starting');
    // A lower one waits its turn; an equal one goes ahead.
    expect(await t.op('play_hub_media', { PersistentID: pid, Priority: '100' })).toEqual({ Result: 'true' });
    // Cancelled, not timed out: the URL never answers.
    expect(await stuck).toMatchObject({
      Result: 'false',
      ErrorCode: 'PlaybackFailed',
      ErrorMessage: expect.stringContaining('stopped before it started'),
    });
    expect(speaker(0).state).toBe('playing');
    expect(await t.op('playback_status')).toMatchObject({ PlaybackState: 'PlayerStatePlaying' });
  });

  test('a speaker that comes back while a party play runs joins it at the current position', async () => {
    await t.op('play_hub_media_party_mode', { PersistentID: pid });
    clock.advance(1000);
    speaker(1).vanish();
    clock.advance(1000);
    speaker(1).reappear();
    await eventually(() => speaker(1).state === 'playing', 5000, 'rejoined');
    expect(speaker(1).position()).toBeCloseTo(2, 0);
    expect((await t.op('device_list')).DeviceList.filter((d: any) => d.IsPlaying)).toHaveLength(3);
  });
});

test('hub shutdown during playback sends a final Stopped state to event stream clients', async () => {
  const t = await startHub({ speakers: { virtual: { count: 2 } } });
  const res = await fetch(`${t.base}/api/v1/events`, { headers: { Authorization: `Bearer ${TEST_TOKEN}` } });
  const reader = res.body!.getReader();
  let text = '';
  const pump = (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return;
      text += Buffer.from(value!).toString();
    }
  })();
  const pidOf = (await t.op('media_list')).MediaList[0].PersistentID;
  await t.op('play_hub_media_party_mode', { PersistentID: pidOf });
  await eventually(() => text.includes('PlayerStatePlaying'), 5000, 'Playing event');
  await t.close();
  await pump;
  const last = text
    .trim()
    .split('\n\n')
    .filter((b) => b.startsWith('event: playbackState'))
    .at(-1)!;
  expect(JSON.parse(last.split('\ndata: ')[1])).toMatchObject({ state: 'PlayerStateStopped', reason: 'shutdown' });
});

/**
 * Zones end to end over HTTP with virtual speakers (which really download what they play):
 * several playbacks at once, each session's transport operations on its own playback, per
 * speaker priority, the playback list, and announcements that leave other zones alone.
 * Time is a ManualClock, so nothing ends unless a test moves it.
 */
import { ManualClock } from '../../src/core/clock';
import type { PlaybackSnapshot } from '../../src/core/events';
import { TEST_TOKEN, startHub, type TestHub, virtualOf } from '../helpers/hub';
import { webServer } from '../announce/web-server';
import { eventually } from '../helpers/wait';

describe('zones (virtual speakers)', () => {
  const clock = new ManualClock();
  let t: TestHub;
  let web: Awaited<ReturnType<typeof webServer>>;
  let ids: string[];
  let pid: string;
  const states: PlaybackSnapshot[] = [];
  const speaker = (i: number) => virtualOf(t.hub).speaker(i);
  /** What speaker i plays now: the URL it last downloaded while it plays, else its state. */
  const playing = (i: number) => (speaker(i).state === 'playing' ? speaker(i).fetches.at(-1)?.url : speaker(i).state);
  const fetchCount = (i: number) => speaker(i).fetches.length;

  /** A client of its own: init_session, then operations in that session. */
  async function client() {
    const session = (await t.get('/api/v1/init_session')).body.SessionToken as string;
    return {
      session,
      op: async (name: string, params: Record<string, string> = {}) =>
        (await t.get(`/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`)).body,
    };
  }

  beforeAll(async () => {
    web = await webServer('Zone Music');
    t = await startHub({ speakers: { virtual: { count: 4 } } }, { clock });
    ids = virtualOf(t.hub)
      .speakers()
      .map((s) => s.id);
    pid = (await t.op('media_list')).MediaList[0].PersistentID;
    t.hub.core.events.on('playbackState', (s) => states.push(s));
  });
  afterAll(async () => {
    await t?.close();
    await web?.close();
  });
  afterEach(async () => {
    // A client with no speakers of its own: stop_play means every playback.
    await (await client()).op('stop_play');
    await eventually(() => t.hub.core.playback.list().length === 0, 5000, 'every zone stopped');
  });

  test('two sessions play two rooms at once; each pauses, reads and stops its own', async () => {
    const kitchen = await client();
    const office = await client();
    expect(await kitchen.op('add_device_to_session', { DeviceID: ids[0] })).toEqual({ Result: 'true' });
    expect(await office.op('add_device_to_session', { DeviceID: ids[1] })).toEqual({ Result: 'true' });
    expect(await kitchen.op('play_hub_media', { PersistentID: pid })).toEqual({ Result: 'true' });
    expect(await office.op('play_web_media', { MediaUrl: web.url('/office.wav') })).toEqual({ Result: 'true' });
    // Both rooms play their own thing: the kitchen was not stopped by the office's play.
    expect(speaker(0).state).toBe('playing');
    expect(playing(0)).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    expect(playing(1)).toBe(web.url('/office.wav'));
    expect([2, 3].map(playing)).toEqual(['stopped', 'stopped']);
    // Each session sees its own playback session and its own playback.
    expect(await kitchen.op('session_status')).toMatchObject({ SelectedDeviceIDList: ids[0], PlayingDeviceIDList: ids[0], MediaKind: 'hub' });
    expect(await office.op('session_status')).toMatchObject({ SelectedDeviceIDList: ids[1], PlayingDeviceIDList: ids[1], MediaKind: 'web' });
    const list = (await t.op('playback_list')).PlaybackList;
    expect(list.map((p: any) => [p.DeviceIDList, p.MediaKind, p.PlaybackState])).toEqual([
      [[ids[0]], 'hub', 'PlayerStatePlaying'],
      [[ids[1]], 'web', 'PlayerStatePlaying'],
    ]);
    expect(list[0].StartedBy).not.toBe(list[1].StartedBy);
    expect(list[0].StartedBy).toMatch(/^s-/);
    expect(JSON.stringify(list)).not.toContain(kitchen.session);
    // device_info names the zone each speaker is in (beyond the spec), and none for an idle one.
    expect((await t.op('device_info', { DeviceID: ids[0] })).PlaybackID).toBe(list[0].PlaybackID);
    expect((await t.op('device_info', { DeviceID: ids[1] })).PlaybackID).toBe(list[1].PlaybackID);
    expect(await t.op('device_info', { DeviceID: ids[2] })).not.toHaveProperty('PlaybackID');

    // pause_play in the kitchen pauses the kitchen only.
    expect(await kitchen.op('pause_play')).toEqual({ Result: 'true' });
    expect(speaker(0).state).toBe('paused');
    expect(playing(1)).toBe(web.url('/office.wav'));
    expect(await kitchen.op('playback_status')).toMatchObject({ PlaybackState: 'PlayerStatePaused' });
    expect(await office.op('playback_status')).toMatchObject({ PlaybackState: 'PlayerStatePlaying' });
    expect(await office.op('is_playing')).toEqual({ IsPlaying: 'true' });
    expect(await kitchen.op('is_playing')).toEqual({ IsPlaying: 'false' });

    // stop_play in the office stops the office only; the kitchen stays paused and resumes.
    expect(await office.op('stop_play')).toEqual({ Result: 'true' });
    expect(speaker(1).state).toBe('stopped');
    expect(speaker(0).state).toBe('paused');
    expect(await office.op('playback_status')).toEqual({ PlaybackState: 'PlayerStateStopped', TimeElapsed: '-1' });
    expect(await kitchen.op('resume_hub_media', { PersistentID: pid })).toEqual({ Result: 'true' });
    expect(speaker(0).state).toBe('playing');
  });

  test('a play on some speakers of a zone takes them out of it; the zone plays on on the others, not restarted', async () => {
    const party = await client();
    const den = await client();
    expect(await party.op('play_web_media_party_mode', { MediaUrl: web.url('/party.wav') })).toEqual({ Result: 'true' });
    expect(ids.map((_, i) => playing(i))).toEqual(ids.map(() => web.url('/party.wav')));
    const fetched = [0, 1, 2].map(fetchCount);
    states.length = 0;
    expect(await den.op('play_web_media_selected_speakers', { MediaUrl: web.url('/den.wav'), DeviceIDList: ids[3] })).toEqual({ Result: 'true' });
    expect(playing(3)).toBe(web.url('/den.wav'));
    // The party goes on on speakers 0-2, without a new download (no restart).
    expect([0, 1, 2].map(playing)).toEqual([0, 1, 2].map(() => web.url('/party.wav')));
    expect([0, 1, 2].map(fetchCount)).toEqual(fetched);
    // Events: the party shrank (still playing), the den started; no Stopped.
    expect(states.map((s) => [s.state, s.deviceIds.length])).toEqual([
      ['PlayerStatePlaying', 3],
      ['PlayerStatePlaying', 1],
    ]);
    expect(states[0].playbackId).not.toBe(states[1].playbackId);
    // The party's client still reads its (smaller) playback.
    expect(await party.op('session_status')).toMatchObject({ PlayingDeviceIDList: ids.slice(0, 3).join(',') });
    // A control naming a speaker acts on that speaker's zone only.
    expect(await t.op('pause_play', { DeviceID: ids[3] })).toEqual({ Result: 'true' });
    expect(speaker(3).state).toBe('stopped'); // web media cannot pause: it stops
    expect([0, 1, 2].map(playing)).toEqual([0, 1, 2].map(() => web.url('/party.wav')));
    const partyId = (await t.op('playback_list')).PlaybackList[0].PlaybackID;
    expect(await t.op('playback_status', { PlaybackID: partyId })).toMatchObject({ PlaybackState: 'PlayerStatePlaying' });
    expect(await t.op('stop_play', { PlaybackID: partyId })).toEqual({ Result: 'true' });
    expect([0, 1, 2].map(playing)).toEqual(['stopped', 'stopped', 'stopped']);
    expect(await t.op('playback_status', { PlaybackID: partyId })).toEqual({ PlaybackState: 'PlayerStateStopped', TimeElapsed: '-1' });
  });

  test('a client with no speakers of its own reads the latest playback, as on the original hub', async () => {
    const a = await client();
    await a.op('play_web_media_selected_speakers', { MediaUrl: web.url('/a.wav'), DeviceIDList: ids[0] });
    const b = await client();
    await b.op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: ids[1] });
    const watcher = await client();
    expect(await watcher.op('session_status')).toMatchObject({ PlayingDeviceIDList: ids[1], MediaKind: 'hub' });
    // Its stop_play is the original hub's: everything stops.
    expect(await watcher.op('stop_play')).toEqual({ Result: 'true' });
    expect([0, 1].map(playing)).toEqual(['stopped', 'stopped']);
  });

  test('Priority arbitrates per speaker', async () => {
    const a = await client();
    const b = await client();
    expect(await a.op('play_web_media_selected_speakers', { MediaUrl: web.url('/high.wav'), DeviceIDList: ids[0], Priority: '200' })).toEqual({
      Result: 'true',
    });
    // Another speaker: no conflict.
    expect(await b.op('play_web_media_selected_speakers', { MediaUrl: web.url('/low.wav'), DeviceIDList: ids[1], Priority: '100' })).toEqual({
      Result: 'true',
    });
    // The high-priority speaker: refused, and nothing changed.
    expect(await b.op('play_web_media_selected_speakers', { MediaUrl: web.url('/low.wav'), DeviceIDList: `${ids[0]},${ids[2]}` })).toMatchObject({
      Result: 'false',
      ErrorCode: 'PriorityTooLow',
    });
    expect([0, 1, 2].map(playing)).toEqual([web.url('/high.wav'), web.url('/low.wav'), 'stopped']);
  });

  test('an announcement in one zone leaves the other zones alone and gives its speaker back to its own zone', async () => {
    const a = await client();
    const b = await client();
    await a.op('play_web_media_selected_speakers', { MediaUrl: web.url('/zone-a.wav'), DeviceIDList: `${ids[0]},${ids[1]}` });
    await b.op('play_web_media_selected_speakers', { MediaUrl: web.url('/zone-b.wav'), DeviceIDList: ids[2] });
    const before = [0, 1, 2].map(fetchCount);
    const r = await t.op('announce', { Text: 'Door', DeviceIDList: ids[0] });
    expect(r).toMatchObject({ Result: 'true' });
    await eventually(() => speaker(0).state === 'playing' && playing(0) !== web.url('/zone-a.wav'), 10_000, 'the announcement plays');
    // The zone's other speaker and the other zone play on, untouched.
    expect([1, 2].map(playing)).toEqual([web.url('/zone-a.wav'), web.url('/zone-b.wav')]);
    // Played out: speaker 0 goes back to zone A (not to zone B).
    await eventually(
      async () => {
        clock.advance(500);
        return (await t.op('announcement_status', { AnnouncementID: r.AnnouncementID })).State === 'done';
      },
      20_000,
      'announcement done',
    );
    await eventually(() => playing(0) === web.url('/zone-a.wav'), 10_000, 'speaker 0 back in zone A');
    expect([1, 2].map(fetchCount)).toEqual(before.slice(1));
    expect([1, 2].map(playing)).toEqual([web.url('/zone-a.wav'), web.url('/zone-b.wav')]);
    const list = (await t.op('playback_list')).PlaybackList;
    expect(list.map((p: any) => p.DeviceIDList.sort())).toEqual([[ids[0], ids[1]].sort(), [ids[2]]]);
  });

  test('add_device_to_session joins the session\u2019s own zone; remove leaves another zone\u2019s speaker alone', async () => {
    const a = await client();
    const b = await client();
    await a.op('add_device_to_session', { DeviceID: ids[0] });
    await a.op('play_web_media', { MediaUrl: web.url('/a.wav') });
    await b.op('play_web_media_selected_speakers', { MediaUrl: web.url('/b.wav'), DeviceIDList: ids[2] });
    // Speaker 1 joins a's zone, not b's (which started later).
    await a.op('add_device_to_session', { DeviceID: ids[1] });
    expect([0, 1, 2].map(playing)).toEqual([web.url('/a.wav'), web.url('/a.wav'), web.url('/b.wav')]);
    // b removing speaker 0 (not in b's zone) changes nothing.
    expect(await b.op('remove_device_from_session', { DeviceID: ids[0] })).toEqual({ Result: 'true' });
    expect(playing(0)).toBe(web.url('/a.wav'));
    // close_session forgets the session's playback session.
    expect(await a.op('close_session')).toEqual({ Result: 'true' });
    expect((await a.op('session_status')).ErrorCode).toBe('SessionNotFound');
  });

  test('a play that starts on none of its speakers (a 404) gives each back to the zone it played: nothing is lost', async () => {
    const kitchen = await client();
    for (const i of [0, 1]) expect(await kitchen.op('add_device_to_session', { DeviceID: ids[i] })).toEqual({ Result: 'true' });
    expect(await kitchen.op('play_hub_media', { PersistentID: pid })).toEqual({ Result: 'true' });
    const office = await client();
    expect(await office.op('add_device_to_session', { DeviceID: ids[2] })).toEqual({ Result: 'true' });
    expect(await office.op('play_web_media', { MediaUrl: web.url('/office.wav') })).toEqual({ Result: 'true' });
    clock.advance(3000);
    const before = (await t.op('playback_list')).PlaybackList.map((p: any) => [p.PlaybackID, [...p.DeviceIDList].sort()]);
    const seen = states.length;
    const music = playing(0);
    const fetched = [0, 2].map(fetchCount);
    // One speaker of a two-speaker zone, and the only speaker of another: both plays fail.
    for (const [c, i] of [
      [kitchen, 0],
      [office, 2],
    ] as const) {
      const r = await c.op('play_web_media_selected_speakers', { MediaUrl: web.url('/missing.mp3'), DeviceIDList: ids[i] });
      expect(r).toMatchObject({ Result: 'false', ErrorCode: 'PlaybackFailed' });
    }
    // Both zones live on with the same ids and members; each speaker plays its zone's media again, in place.
    expect((await t.op('playback_list')).PlaybackList.map((p: any) => [p.PlaybackID, [...p.DeviceIDList].sort()])).toEqual(before);
    expect(playing(0)).toBe(music);
    expect(playing(2)).toBe(web.url('/office.wav'));
    expect([0, 2].map(fetchCount)).toEqual([fetched[0] + 1, fetched[1] + 1]);
    expect(speaker(0).position()).toBeCloseTo(speaker(1).position()!, 1);
    expect(states.slice(seen).filter((x) => x.state === 'PlayerStateStopped')).toEqual([]);
  });

  test('a web stream given back after an announcement starts again from its start, and its status counts from there', async () => {
    const office = await client();
    expect(await office.op('add_device_to_session', { DeviceID: ids[3] })).toEqual({ Result: 'true' });
    expect(await office.op('play_web_media', { MediaUrl: web.url('/radio') })).toEqual({ Result: 'true' });
    clock.advance(6000);
    expect(Number((await office.op('playback_status')).TimeElapsed)).toBe(6);
    const a = await t.op('announce', { Text: 'Back to the radio', DeviceIDList: ids[3] });
    // The speaker's own fetch of the announcement (its state moves before the speaker plays): then time may pass.
    await eventually(() => speaker(3).state === 'playing' && playing(3) !== web.url('/radio'), 15_000, 'announcing on the speaker');
    clock.advance(10_000);
    await eventually(async () => (await t.op('announcement_status', { AnnouncementID: a.AnnouncementID })).State === 'done', 15_000, 'done');
    expect(playing(3)).toBe(web.url('/radio'));
    expect(speaker(3).position()).toBeLessThan(1);
    expect(Number((await office.op('playback_status')).TimeElapsed)).toBeLessThan(1);
  });

  test('bad zone parameters get clear errors', async () => {
    const bad = await t.get(`/api/v1/stop_play?SessionToken=${t.session}&PlaybackID=nope`, { Authorization: `Bearer ${TEST_TOKEN}` });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ ErrorCode: 'InvalidParameter', Parameter: 'PlaybackID' });
    expect(await t.op('pause_play', { PlaybackID: 'pb-424242' })).toMatchObject({ Result: 'false', ErrorCode: 'NotPlaying' });
    expect(await t.op('pause_play', { DeviceID: '99' })).toMatchObject({ Result: 'false', ErrorCode: 'DeviceNotFound' });
  });
});

/**
 * Overlays a driver plays over the music (SpeakerDriver.overlay), end to end over HTTP with
 * virtual speakers that mix (speakers.virtual.mix; they really download what they play): a
 * ducked announcement leaves its speakers in their zone — same playback, no state change, the
 * music neither refetched nor moved — and ends by the driver's handle. Interrupting ones, a
 * cut-in, stop_play and a play during the overlay keep their meaning. Time is a ManualClock.
 */
import { ManualClock } from '../../src/core/clock';
import type { PlaybackSnapshot } from '../../src/core/events';
import { startHub, type TestHub, virtualOf } from '../helpers/hub';
import { eventually } from '../helpers/wait';

describe('announcements mixed over the music by the driver (virtual speakers that mix)', () => {
  const clock = new ManualClock();
  let t: TestHub;
  let ids: string[];
  let pid: string;
  let other: string;
  const states: PlaybackSnapshot[] = [];
  const speaker = (i: number) => virtualOf(t.hub).speaker(i);
  const music = (i: number) => speaker(i).fetches.filter((f) => !f.overlay);
  const overlays = (i: number) => speaker(i).fetches.filter((f) => f.overlay);
  const status = (id: string) => t.op('announcement_status', { AnnouncementID: id });
  const untilState = (id: string, state: string) => eventually(async () => (await status(id)).State === state, 15_000, `announcement ${id} ${state}`);
  const zones = async () => ((await t.op('playback_list')).PlaybackList as any[]).map((p) => [p.PlaybackID, [...p.DeviceIDList].sort()]);

  beforeAll(async () => {
    t = await startHub({ speakers: { virtual: { count: 3, mix: true } } }, { clock });
    ids = virtualOf(t.hub)
      .speakers()
      .map((s) => s.id);
    const media = [...(await t.op('media_list')).MediaList].sort((a: any, b: any) => b.Duration - a.Duration);
    pid = media[0].PersistentID;
    other = media[1].PersistentID;
    t.hub.core.events.on('playbackState', (s) => states.push(s));
  });
  afterAll(async () => {
    await t?.close();
  });
  afterEach(async () => {
    await t.op('stop_play');
    await eventually(() => t.hub.core.playback.list().length === 0, 5000, 'every zone stopped');
  });

  /** Speakers 0 and 1 in one zone playing the long sample, 2 s in. */
  async function zoneOfTwo(): Promise<string> {
    expect(await t.op('add_device_to_session', { DeviceID: ids[0] })).toEqual({ Result: 'true' });
    expect(await t.op('add_device_to_session', { DeviceID: ids[1] })).toEqual({ Result: 'true' });
    expect(await t.op('play_hub_media', { PersistentID: pid })).toEqual({ Result: 'true' });
    clock.advance(2000);
    const list = await zones();
    expect(list).toHaveLength(1);
    return list[0][0] as string;
  }

  test('duck on one speaker of a zone: Mode duck, the speaker stays in its zone, the music never stops or restarts; done by the driver', async () => {
    const zone = await zoneOfTwo();
    const before = await zones();
    const fetched = music(0).length;
    const seen = states.length;
    await speaker(0).setVolume(18);
    const r = await t.op('announce', { Text: 'The bread is ready', DeviceIDList: ids[0], Mode: 'duck', Volume: '40' });
    expect(r).toMatchObject({ Result: 'true' });
    await eventually(async () => (await status(r.AnnouncementID)).State === 'playing', 15_000, 'announcement playing');
    const s = await status(r.AnnouncementID);
    expect(s.Mode).toBe('duck');
    expect(s).not.toHaveProperty('ModeReason');
    // The driver fetched the voice as an overlay; the music went on: same zone, no new fetch, still playing.
    await eventually(() => overlays(0).length > 0, 15_000, 'the voice fetched as an overlay');
    expect(await zones()).toEqual(before);
    expect(speaker(0).state).toBe('playing');
    expect(music(0).length).toBe(fetched);
    // Ducking leaves the speaker's own level alone (the voice's level is the driver's).
    expect(speaker(0).volume).toBe(18);
    clock.advance(15_000);
    await untilState(r.AnnouncementID, 'done');
    // Nothing rejoined: the speaker never left. The zone kept its members, its id, its position.
    expect(await zones()).toEqual(before);
    expect(music(0).length).toBe(fetched);
    expect(speaker(0).state).toBe('playing');
    expect(speaker(0).position()).toBeCloseTo(speaker(1).position()!, 3);
    expect(states.slice(seen).filter((x) => x.playbackId === zone && x.state !== 'PlayerStatePlaying')).toEqual([]);
  });

  test('duck on an idle speaker has no music to mix into: it plays on its own and is stopped after', async () => {
    await zoneOfTwo();
    const r = await t.op('announce', { Text: 'Nobody listens here', DeviceIDList: ids[2], Mode: 'duck' });
    await eventually(() => speaker(2).state === 'playing', 15_000, 'announcement on the idle speaker');
    expect(music(2).length).toBeGreaterThan(0);
    expect((await status(r.AnnouncementID)).Mode).toBe('duck');
    clock.advance(15_000);
    await untilState(r.AnnouncementID, 'done');
    await eventually(() => speaker(2).state === 'stopped', 5000, 'idle speaker stopped again');
    expect(speaker(0).state).toBe('playing');
  });

  test('a higher Priority interrupting announcement cuts in on a ducked one: it takes the speaker, which rejoins its zone after', async () => {
    const zone = await zoneOfTwo();
    const ducked = await t.op('announce', { Text: 'Soft news', DeviceIDList: ids[0], Mode: 'duck' });
    expect(ducked).toMatchObject({ Result: 'true' });
    await eventually(async () => (await status(ducked.AnnouncementID)).State === 'playing', 15_000, 'ducked playing');
    const fetched = music(0).length;
    const urgent = await t.op('announce', { Text: 'Smoke in the kitchen', DeviceIDList: ids[0], Priority: '200' });
    await eventually(async () => (await status(urgent.AnnouncementID)).State === 'playing', 15_000, 'urgent playing');
    expect(await status(ducked.AnnouncementID)).toMatchObject({ ReasonCode: 'interrupted' });
    // Interrupt: the speaker plays the announcement itself (a fetch of its own), the zone holds it as an idle member (set aside).
    await eventually(() => music(0).length === fetched + 1, 15_000, 'the urgent announcement fetched as a play of its own');
    clock.advance(15_000);
    await untilState(urgent.AnnouncementID, 'done');
    await untilState(ducked.AnnouncementID, 'done');
    // Given back: the music is fetched again, in sync with the other member, in the same zone.
    expect(music(0).length).toBe(fetched + 2);
    expect(music(0).at(-1)!.url).toBe(music(1).at(-1)!.url);
    expect(speaker(0).position()).toBeCloseTo(speaker(1).position()!, 0);
    expect((await zones()).map((z) => z[0])).toEqual([zone]);
  });

  test('stop_play during a ducked announcement ends it and stops the zone (stop means silence)', async () => {
    await zoneOfTwo();
    const r = await t.op('announce', { Text: 'Stop me', DeviceIDList: ids[0], Mode: 'duck' });
    await eventually(async () => (await status(r.AnnouncementID)).State === 'playing', 15_000, 'playing');
    expect(await t.op('stop_play')).toEqual({ Result: 'true' });
    await eventually(async () => ['done', 'failed'].includes((await status(r.AnnouncementID)).State), 5000, 'announcement over');
    expect([speaker(0).state, speaker(1).state]).toEqual(['stopped', 'stopped']);
  });

  test('a play on the ducked speaker meanwhile takes it out of its zone and starts on it when the announcement is over', async () => {
    await zoneOfTwo();
    const r = await t.op('announce', { Text: 'Wait for me', DeviceIDList: ids[0], Mode: 'duck' });
    await eventually(async () => (await status(r.AnnouncementID)).State === 'playing', 15_000, 'playing');
    const c = (await t.get('/api/v1/init_session')).body.SessionToken as string;
    const op = async (name: string, p: Record<string, string> = {}) =>
      (await t.get(`/api/v1/${name}?${new URLSearchParams({ SessionToken: c, ...p })}`)).body;
    expect(await op('add_device_to_session', { DeviceID: ids[0] })).toEqual({ Result: 'true' });
    expect(await op('play_hub_media', { PersistentID: other })).toEqual({ Result: 'true' });
    const list = await zones();
    expect(list.map((z) => z[1])).toEqual([[ids[1]], [ids[0]]]);
    const fetched = music(0).length;
    clock.advance(15_000);
    await untilState(r.AnnouncementID, 'done');
    await eventually(() => music(0).length === fetched + 1, 5000, 'the new play started on the speaker');
    expect(music(0).at(-1)!.url).not.toBe(music(1).at(-1)!.url);
  });
});

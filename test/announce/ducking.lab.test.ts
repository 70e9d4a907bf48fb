/**
 * announce Mode=duck where the hub does not produce the speaker's audio (virtual speakers
 * fetch a URL themselves, like UPnP renderers and MPD): the announcement interrupts, exactly
 * as Mode=interrupt does, and announcement_status says so and why (never silently).
 */
import { ManualClock } from '../../src/core/clock';
import { startHub, type TestHub, virtualOf } from '../helpers/hub';
import { eventually } from '../helpers/wait';

describe('announce Mode=duck on speakers that cannot mix', () => {
  const clock = new ManualClock();
  let t: TestHub;
  let ids: string[];
  let pid: string;
  const speaker = (i: number) => virtualOf(t.hub).speaker(i);
  const status = (id: string) => t.op('announcement_status', { AnnouncementID: id });
  const untilState = (id: string, state: string) => eventually(async () => (await status(id)).State === state, 15_000, `announcement ${id} ${state}`);

  beforeAll(async () => {
    t = await startHub({ speakers: { virtual: { count: 2 } } }, { clock });
    ids = virtualOf(t.hub)
      .speakers()
      .map((s) => s.id);
    const media = (await t.op('media_list')).MediaList;
    pid = [...media].sort((a: { Duration: number }, b: { Duration: number }) => b.Duration - a.Duration)[0].PersistentID;
  });
  afterAll(async () => {
    await t?.close();
  });

  test('duck falls back to interrupt: Mode "interrupt" with a ModeReason naming the speaker and its driver; the music stops there and rejoins', async () => {
    await speaker(0).setVolume(20);
    expect(await t.op('play_hub_media_party_mode', { PersistentID: pid })).toEqual({ Result: 'true' });
    const music = speaker(0).fetches.at(-1)!.url;
    clock.advance(2000);
    const mark = speaker(0).fetches.at(-1);
    const r = await t.op('announce', {
      Text: 'Ducking here is not possible',
      DeviceIDList: ids[0],
      Mode: 'duck',
      DuckLevel: '-20',
      FadeMs: '300',
      Volume: '35',
    });
    expect(r).toMatchObject({ Result: 'true' });
    await eventually(() => speaker(0).state === 'playing' && speaker(0).fetches.at(-1) !== mark, 15_000, 'announcement playing');
    const s = await status(r.AnnouncementID);
    expect(s).toMatchObject({ State: 'playing', Mode: 'interrupt' });
    expect(s.ModeReason).toContain(speaker(0).info().name);
    expect(s.ModeReason).toContain('(virtual)');
    // Interrupt, exactly: the announcement replaced the music on that speaker, at its own volume; the other plays on.
    expect(speaker(0).fetches.at(-1)!.url).not.toBe(music);
    expect(speaker(0).volume).toBe(35);
    expect(speaker(1).fetches.at(-1)!.url).toBe(music);
    clock.advance(8000);
    await untilState(r.AnnouncementID, 'done');
    expect(await status(r.AnnouncementID)).toMatchObject({ State: 'done', Mode: 'interrupt', ModeReason: s.ModeReason });
    expect(speaker(0).fetches.at(-1)!.url).toBe(music);
    expect(speaker(0).volume).toBe(20);
    expect(speaker(0).position()).toBeCloseTo(speaker(1).position()!, 0);
    await t.op('stop_play');
  });

  test('without Mode (or Mode=interrupt) the status reads Mode "interrupt" with no ModeReason', async () => {
    for (const params of [{}, { Mode: 'INTERRUPT' }] as Record<string, string>[]) {
      const since = speaker(1).fetches.at(-1);
      const r = await t.op('announce', { Text: 'Plain', DeviceIDList: ids[1], ...params });
      const s = await status(r.AnnouncementID);
      expect(s.Mode).toBe('interrupt');
      expect(s).not.toHaveProperty('ModeReason');
      // The speaker's own play, not the state (it reads playing while the speaker is still being taken): time passes after it.
      await eventually(() => speaker(1).state === 'playing' && speaker(1).fetches.at(-1) !== since, 15_000, 'the speaker playing the announcement');
      clock.advance(8000);
      await untilState(r.AnnouncementID, 'done');
    }
  });
});

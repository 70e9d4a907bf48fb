import { ManualClock } from '../../src/core/clock';
import { startHub, type TestHub, virtualOf } from '../helpers/hub';

/**
 * The engine following a speaker's own pause (driver event ownPlayState, as the MPD driver
 * emits for a pause from the MPD's app; test/drivers/mpd has it against a real mpd). Virtual speakers
 * stand in: paused the way their own app would, then the event a driver sends for it.
 */
describe("playback follows a speaker's own pause and resume", () => {
  const clock = new ManualClock();
  let t: TestHub;
  let ids: string[];
  let pid: string;

  const speaker = (i: number) => virtualOf(t.hub).speaker(i);
  const state = async () => (await t.op('playback_status')).PlaybackState;
  /** What a driver does when its speaker is paused/resumed by its own means. */
  async function own(i: number, to: 'paused' | 'playing'): Promise<void> {
    await (to === 'paused' ? speaker(i).pause() : speaker(i).resume());
    speaker(i).emit('ownPlayState', to);
    // The engine acts in its queue of state changes: one round trip settles it.
    await t.op('playback_status');
  }

  beforeAll(async () => {
    t = await startHub({ speakers: { virtual: { count: 2 } } }, { clock });
    ids = virtualOf(t.hub)
      .speakers()
      .map((s) => s.id);
    pid = (await t.op('media_list')).MediaList[0].PersistentID;
  });
  afterAll(() => t.close());
  afterEach(() => t.op('stop_play'));

  test('one speaker: Paused with TimeElapsed held, Playing again when it resumes by itself', async () => {
    expect((await t.op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: ids[0] })).Result).toBe('true');
    clock.advance(3000);
    await own(0, 'paused');
    expect(await state()).toBe('PlayerStatePaused');
    const held = (await t.op('playback_status')).TimeElapsed;
    clock.advance(5000);
    expect((await t.op('playback_status')).TimeElapsed).toBe(held);
    await own(0, 'playing');
    expect(await state()).toBe('PlayerStatePlaying');
    clock.advance(2000);
    expect(Number((await t.op('playback_status')).TimeElapsed)).toBeGreaterThan(Number(held));
    // resume_play after an own pause acts as after the hub's pause.
    await own(0, 'paused');
    expect((await t.op('resume_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: ids[0] })).Result).toBe('true');
    expect(await state()).toBe('PlayerStatePlaying');
  });

  test('two speakers: one paused by itself leaves the playback Playing; both paused make it Paused', async () => {
    expect((await t.op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: ids.join(',') })).Result).toBe('true');
    await own(0, 'paused');
    expect(await state()).toBe('PlayerStatePlaying');
    await own(1, 'paused');
    expect(await state()).toBe('PlayerStatePaused');
    await own(1, 'playing');
    expect(await state()).toBe('PlayerStatePlaying');
  });

  test("the hub's own pause is not mistaken for the speaker's (no event from the driver)", async () => {
    expect((await t.op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: ids[0] })).Result).toBe('true');
    expect((await t.op('pause_play')).Result).toBe('true');
    expect(await state()).toBe('PlayerStatePaused');
    // A speaker not in the playback reporting its own state changes nothing.
    speaker(1).emit('ownPlayState', 'playing');
    expect(await state()).toBe('PlayerStatePaused');
  });
});

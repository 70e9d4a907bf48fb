/**
 * An announcement louder than the music never plays the music at its level (issue 31 item 9,
 * issue 30: AirPlay receivers played a burst of the music up to 40 dB above its level just
 * before the voice): the speaker is silenced before its volume goes up. Virtual speakers report
 * every volume and play-state change; the timeline shows what was audible at which level.
 */
import { ManualClock } from '../../src/core/clock';
import { type TestHub, virtualOf } from '../helpers/hub';
import { useVirtualHub } from '../helpers/virtual-suite';
import { eventually } from '../helpers/wait';

describe('an announcement louder than the music', () => {
  const clock = new ManualClock();
  let t: TestHub;
  let ids: string[];
  const speaker = (i: number) => virtualOf(t.hub).speaker(i);

  useVirtualHub({ clock }, (h) => ({ t, ids } = h));

  test('the music is silent before the level goes up, and comes back at its own level after', async () => {
    const pid = (await t.op('media_list')).MediaList[0].PersistentID;
    await speaker(0).setVolume(8);
    expect(await t.op('play_hub_media_party_mode', { PersistentID: pid })).toEqual({ Result: 'true' });
    const music = speaker(0).fetches.at(-1)!.url;
    clock.advance(2000);
    /** What speaker 0 sounded at each volume change: the URL it played, or silence. */
    const timeline: { volume: number; sounding: string }[] = [];
    const sounding = () => (speaker(0).state === 'playing' ? speaker(0).fetches.at(-1)!.url : 'silence');
    const onVolume = (v: number) => timeline.push({ volume: v, sounding: sounding() });
    speaker(0).on('volume', onVolume);
    const r = await t.op('announce', { Text: 'Louder than the music', DeviceIDList: ids[0], Volume: '40' });
    await eventually(async () => (await t.op('announcement_status', { AnnouncementID: r.AnnouncementID })).State === 'playing', 15_000, 'playing');
    clock.advance(10_000);
    await eventually(async () => (await t.op('announcement_status', { AnnouncementID: r.AnnouncementID })).State === 'done', 15_000, 'done');
    speaker(0).off('volume', onVolume);
    // Up to 40 while silent (never while the music sounds), back to 8 before the music returns.
    expect(timeline).toEqual([
      { volume: 40, sounding: 'silence' },
      { volume: 8, sounding: expect.not.stringMatching(music) },
    ]);
    expect(sounding()).toBe(music);
    expect(speaker(0).volume).toBe(8);
    await t.op('stop_play');
  });
});

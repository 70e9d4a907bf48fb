import { describeAirPlayLab as describeIf, hubWithReceivers, musicDir, toneFile } from './lab-hub';
import { virtualOf, type TestHub } from '../../helpers/hub';
import { ReceiverLab, analyse, audible, until, type Receiver } from './harness';

jest.setTimeout(120_000);

/**
 * A party play across speaker families: a real shairport-sync receiver and two virtual
 * speakers on one hub (`drivers: virtual` plus `airplay.receivers`) play the same media
 * together, and stop_play stops all of them.
 */
describeIf('a mixed party play: AirPlay + virtual speakers', () => {
  let lab: ReceiverLab;
  let t: TestHub;
  let rx: Receiver;
  let toneId = '';

  beforeAll(async () => {
    lab = new ReceiverLab();
    rx = await lab.add({ name: 'Patio' });
    const music = musicDir(lab);
    toneFile(music, 'long-tone.wav', 1000, 30, 'Long Tone');
    // The receiver and both virtual speakers available.
    const hub = await hubWithReceivers([rx], music, { active: 3, extra: { drivers: ['virtual'], speakers: { virtual: { count: 2 } } } });
    t = hub.t;
    toneId = hub.media['Long Tone'];
  });

  afterAll(async () => {
    await t?.close();
    lab?.close();
  });

  test('one party play reaches the receiver (its audio) and the virtual speakers (their fetch); stop_play stops all', async () => {
    const from = lab.capturedBytes(rx);
    const fetchesBefore = virtualOf(t.hub)
      .speakers()
      .map((s) => s.fetches.length);
    expect((await t.op('play_hub_media_party_mode', { PersistentID: toneId })).Result).toBe('true');
    await until('a second of the tone on the receiver', () => audible(lab.captured(rx).subarray(from)).length > 176400, 30_000);
    const heard = analyse(audible(lab.captured(rx).subarray(from)), [1000, 440]);
    expect(heard.power[1000]).toBeGreaterThan(10 * heard.power[440]);
    const virtual = virtualOf(t.hub).speakers();
    virtual.forEach((s, i) => {
      expect(s.fetches.length).toBeGreaterThan(fetchesBefore[i]);
      expect(s.state).toBe('playing');
    });
    const status = await t.op('playback_status');
    expect(status.PlaybackState).toBe('PlayerStatePlaying');
    expect((await t.op('stop_play')).Result).toBe('true');
    await until(
      'all stopped',
      async () => (await t.op('playback_status')).PlaybackState === 'PlayerStateStopped' && virtual.every((s) => s.state === 'stopped'),
    );
    const list = (await t.op('device_list')).DeviceList as { IsPlaying: boolean }[];
    expect(list.every((d) => d.IsPlaying === false)).toBe(true);
  });
});

import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { labSuite } from '../../helpers/labs';
import { startHub, virtualOf, type TestHub } from '../../helpers/hub';
import { ReceiverLab, analyse, audible, canRunReceivers, until, type Receiver } from './harness';

const describeIf = labSuite(
  'the AirPlay lab',
  canRunReceivers() ? undefined : 'shairport-sync, avahi-daemon, dbus-daemon, ffmpeg or root (for namespaces) is missing',
);

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
    const music = join(lab.dir, 'music');
    mkdirSync(music);
    execFileSync('ffmpeg', [
      '-loglevel',
      'error',
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=1000:duration=30',
      '-af',
      'volume=4',
      '-ac',
      '2',
      '-ar',
      '44100',
      '-metadata',
      'title=Long Tone',
      join(music, 'long-tone.wav'),
    ]);
    t = await startHub({
      media: { samples: false, folders: [music] },
      drivers: ['virtual'],
      speakers: { virtual: { count: 2 } },
      airplay: { receivers: [{ host: rx.host, port: rx.port, name: rx.name }] },
    });
    await until('the receiver and both virtual speakers available', async () => {
      const list = (await t.op('device_list')).DeviceList ?? [];
      return list.filter((d: any) => d.Active === true).length === 3;
    });
    toneId = (await t.op('media_list')).MediaList.find((m: any) => m.Title === 'Long Tone').PersistentID;
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

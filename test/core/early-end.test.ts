/**
 * A speaker whose media ends while other speakers of the same start are still starting. The
 * engine and the announcements follow a start's speakers once every one of them has settled, so
 * an end in between used to reach no one: the playback went on listing that speaker as playing
 * and never finished, and an announcement on it never completed. Seen with MPD, which reports a
 * short clip its output took whole as over within ms, beside a family that starts slower.
 *
 * Here: a virtual speaker (it really downloads what it plays; its end comes from the test's
 * clock) beside a speaker of the test's own driver whose start waits until the test lets it go.
 */
import { EventEmitter } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodeWav } from '../../src/audio/wav';
import { ManualClock } from '../../src/core/clock';
import type { PlaybackSnapshot } from '../../src/core/events';
import { BaseSpeaker } from '../../src/drivers/base-speaker';
import { digitId, type DriverEvents, type SpeakerDriver } from '../../src/drivers/driver';
import { startHub, virtualOf, type TestHub } from '../helpers/hub';
import { eventually } from '../helpers/wait';

/** A speaker whose play resolves when the test says so, and ends when the test says so. */
class GatedSpeaker extends BaseSpeaker {
  private gate?: () => void;
  get starting(): boolean {
    return this.gate !== undefined;
  }
  async play(): Promise<void> {
    await new Promise<void>((resolve) => (this.gate = resolve));
    this.setPlayState('playing');
  }
  release(): void {
    const g = this.gate;
    this.gate = undefined;
    g?.();
  }
  end(): void {
    this.setPlayState('stopped', 'ended');
  }
  async pause(): Promise<void> {
    this.setPlayState('paused');
  }
  async resume(): Promise<void> {
    this.setPlayState('playing');
  }
  async stop(): Promise<void> {
    this.release();
    this.setPlayState('stopped', 'stopped');
  }
  position(): number {
    return 0;
  }
  async setVolume(v: number): Promise<void> {
    this.setReportedVolume(v);
  }
}

class GatedDriver extends EventEmitter<DriverEvents> implements SpeakerDriver {
  readonly name = 'gated';
  readonly speaker = new GatedSpeaker(digitId('gated:1'), 'gated', {
    name: 'Slow Starter',
    groupName: 'Gated',
    groupId: digitId('gated-group', 10),
    modelName: 'Gated',
    version: '1',
    role: 21,
    macAddress: '02:00:00:00:00:01',
    ipAddress: '127.0.0.1',
    port: 0,
    wifiSignalStrength: -40,
  });
  async start(): Promise<void> {
    this.emit('speakerAdded', this.speaker);
  }
  async stop(): Promise<void> {
    await this.speaker.stop();
  }
  speakers() {
    return [this.speaker];
  }
}

describe('an end while the rest of the start is still starting', () => {
  const clock = new ManualClock();
  const wav = encodeWav(new Int16Array(8000), 8000, { title: 'Short', artist: '', album: '' }); // 1 s
  const server = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': wav.length }).end(wav));
  const gated = new GatedDriver();
  const slow = gated.speaker;
  let t: TestHub;
  let url: string;
  const virtual = () => virtualOf(t.hub).speaker(0);

  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/short.wav`;
    t = await startHub({ media: { samples: false }, speakers: { virtual: { count: 1 } } }, { clock, drivers: [gated] });
  });
  afterAll(async () => {
    slow.release();
    await t.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  /** The virtual speaker plays the start's media out (1 s) while the slow one is still starting; then the slow one starts. */
  async function virtualEndsFirst(): Promise<void> {
    await eventually(() => (virtual().state === 'playing' && slow.starting) || undefined, 10_000, 'the virtual speaker playing, the other starting');
    clock.advance(1500);
    expect(virtual().state).toBe('stopped');
    slow.release();
  }

  test('a playback ends when its last speaker does, counting the one that ended while the others started', async () => {
    for (const id of [virtual().id, slow.id]) expect((await t.op('add_device_to_session', { DeviceID: id })).Result).toBe('true');
    const states: PlaybackSnapshot[] = [];
    const onState = (s: PlaybackSnapshot) => states.push(s);
    t.hub.core.events.on('playbackState', onState);
    const played = t.op('play_web_media', { MediaUrl: url });
    await virtualEndsFirst();
    expect((await played).Result).toBe('true');
    expect(slow.state).toBe('playing');
    slow.end();
    await eventually(
      () => states.at(-1)?.state === 'PlayerStateStopped' || undefined,
      10_000,
      () => `the playback over; last: ${JSON.stringify(states.at(-1))}`,
    );
    t.hub.core.events.off('playbackState', onState);
    expect(await t.op('playback_status')).toEqual({ PlaybackState: 'PlayerStateStopped', TimeElapsed: '-1' });
  });

  test('an announcement is done once the slow speaker is, counting the one whose clip ended first', async () => {
    const r = await t.op('announce', { MediaUrl: url, DeviceIDList: `${virtual().id},${slow.id}` });
    expect(r.Result).toBe('true');
    await virtualEndsFirst();
    await eventually(() => slow.state === 'playing' || undefined, 10_000, 'the slow speaker playing');
    slow.end();
    await eventually(
      async () => ((await t.op('announcement_status', { AnnouncementID: r.AnnouncementID })).State === 'done' ? true : undefined),
      10_000,
      'the announcement done',
    );
  });
});

import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { AirPlayConfigSchema } from '../../../src/drivers/airplay/config';
import { AirPlayDriver } from '../../../src/drivers/airplay/driver';
import { createLogger } from '../../../src/logger';
import { labSuite } from '../../helpers/labs';
import { ReceiverLab, analyse, audible, canRunReceivers, until, type Receiver } from './harness';

const describeIf = labSuite(
  'the AirPlay lab',
  canRunReceivers() ? undefined : 'shairport-sync, avahi-daemon, dbus-daemon, ffmpeg or root (for namespaces) is missing',
);

jest.setTimeout(120_000);

describeIf('AirPlay driver against real shairport-sync receivers', () => {
  let lab: ReceiverLab;
  let driver: AirPlayDriver;
  let rx: Receiver;
  const logs: string[] = [];

  function tone(freq: number, seconds: number): string {
    const file = join(lab.dir, `tone-${freq}-${seconds}.wav`);
    execFileSync('ffmpeg', [
      '-loglevel',
      'error',
      '-y',
      '-f',
      'lavfi',
      '-i',
      `sine=frequency=${freq}:duration=${seconds}`,
      '-ac',
      '2',
      '-ar',
      '44100',
      file,
    ]);
    return file;
  }

  beforeAll(async () => {
    lab = new ReceiverLab();
    rx = await lab.add({ name: 'Kitchen' });
    const logger = createLogger({
      level: 'debug',
      stream: new Writable({
        write(c, _e, cb) {
          logs.push(String(c));
          cb();
        },
      }),
    });
    driver = new AirPlayDriver({ config: AirPlayConfigSchema.parse({ receivers: [{ host: rx.host, port: rx.port }] }), logger, version: 'test' });
    await driver.start();
  });

  function driverFor(receivers: { host: string; port: number; password?: string }[]): AirPlayDriver {
    const logger = createLogger({ level: 'silent' });
    return new AirPlayDriver({ config: AirPlayConfigSchema.parse({ receivers }), logger, version: 'test' });
  }

  afterAll(async () => {
    await driver?.stop();
    lab?.close();
  });

  test('plays a file end to end: the receiver outputs the tone, then the play ends', async () => {
    const s = driver.speakers()[0];
    expect(s.available).toBe(true);
    await s.setVolume(50);
    const t0 = Date.now();
    const sizes: string[] = [];
    const iv = setInterval(() => sizes.push(`${Date.now() - t0}:${lab.capturedBytes(rx)}:${audible(lab.captured(rx)).length}`), 250);
    await s.play({ url: tone(1000, 3) });
    expect(s.state).toBe('playing');
    await until('the play to end', () => s.state === 'stopped', 20_000);
    sizes.push('ended');
    await new Promise((r) => setTimeout(r, 2500));
    clearInterval(iv);
    if (process.env.AP_DEBUG)
      console.log(
        sizes.join(' '),
        logs.filter((l) => l.includes('finished')),
      );
    if (process.env.AP_DEBUG) console.log(rx.log().slice(-1500));
    const a = audible(lab.captured(rx));
    const { rms, power } = analyse(a, [1000, 440]);
    // 3 s of a full-scale-ish tone, give or take the receiver's fade.
    expect(a.length / 176400).toBeGreaterThan(2.5);
    // ffmpeg's sine is 1/8 full scale (RMS 0.088); at volume 50 (0 dB) the receiver passes it at about that.
    expect(rms).toBeGreaterThan(0.05);
    expect(power[1000]).toBeGreaterThan(10 * power[440]);
  });

  /**
   * Issue 30: an announcement plays at announcementLatencyMs, music at latencyMs. shairport-sync
   * writes a session's lead-in silence, from its first packet to the instant the media's first
   * frame is due, then the audio: the silence before the first audible sample is the latency
   * it plays at, give or take the silent packets sent ahead of the media. The whole 1 s clip is
   * there: shairport-sync plays the first 9 packets of a session as silence (they must be the
   * hub's silent ones), and one whose timing reference came too late drops the first 0.5 s.
   *
   * Both figures are sample positions in the receiver's output stream (bytes / 176.4: 44.1 kHz,
   * 16-bit stereo), not wall time. How much silence shairport-sync writes before the first media
   * frame follows from the latency the sender sets and the packets' RTP timestamps, so load on the
   * machine does not move it: a late receiver writes the same samples later, not more or fewer.
   * That is why the bounds can be this tight (a lead-in window under 200 ms wide, the clip to ±5 ms)
   * on a busy CI host.
   */
  test('an announcement plays at announcementLatencyMs (500), music at latencyMs (2000): the lead-in says so, and no frame is dropped', async () => {
    const s = driver.speakers()[0];
    await s.setVolume(50);
    const clip = tone(660, 1);
    /** Plays `media`, answers the lead-in (ms) and how much of the 1 s clip was heard (ms). */
    const leadIn = async (media: { url: string; overlay?: boolean }) => {
      // Idle: nothing written for half a second, so the next byte is the new session's first.
      let size = -1;
      await until('the receiver idle', () => {
        const now = lab.capturedBytes(rx);
        const idle = now === size;
        size = now;
        return idle;
      });
      await s.play(media);
      await until('the play to end', () => s.state === 'stopped', 20_000);
      await until('the clip written', () => audible(lab.captured(rx).subarray(size)).length > 0);
      const pcm = lab.captured(rx).subarray(size);
      let first = 0;
      while (first + 1 < pcm.length && Math.abs(pcm.readInt16LE(first)) <= 200) first += 4;
      return { leadMs: first / 176.4, heardMs: audible(pcm).length / 176.4 };
    };
    const speech = await leadIn({ url: clip, overlay: true });
    const music = await leadIn({ url: clip });
    console.log(JSON.stringify({ speech, music }));
    // Sample counts, not clock readings (see above): the lead-in runs from the first packet (a silent one, due up to 80 ms before the media) to the media's first frame.
    expect(speech.leadMs).toBeGreaterThan(400);
    expect(speech.leadMs).toBeLessThan(590);
    expect(music.leadMs).toBeGreaterThan(1900);
    expect(music.leadMs).toBeLessThan(2090);
    for (const r of [speech, music]) expect(Math.abs(r.heardMs - 1000)).toBeLessThan(5);
  });

  test('a receiver with a password: the wrong one is refused with AirPlayAuthFailed, the right one plays', async () => {
    const locked = await lab.add({ name: 'Locked', password: 'opensesame' });
    const wrong = driverFor([{ host: locked.host, port: locked.port, password: 'nope' }]);
    const right = driverFor([{ host: locked.host, port: locked.port, password: 'opensesame' }]);
    await wrong.start();
    await right.start();
    try {
      await expect(wrong.speakers()[0].play({ url: tone(440, 2) })).rejects.toMatchObject({ code: 'AirPlayAuthFailed' });
      const s = right.speakers()[0];
      await s.setVolume(50);
      const from = lab.capturedBytes(locked);
      await s.play({ url: tone(440, 2) });
      await until('the tone on the locked receiver', () => audible(lab.captured(locked).subarray(from)).length > 176400);
      expect(analyse(audible(lab.captured(locked).subarray(from)), [440, 1000]).power[440]).toBeGreaterThan(0.01);
    } finally {
      await wrong.stop();
      await right.stop();
    }
  });

  test('a receiver busy with another sender that may not be interrupted refuses with AirPlayBusy', async () => {
    const busy = await lab.add({ name: 'Busy', interruptible: false });
    const phone = driverFor([{ host: busy.host, port: busy.port }]);
    const hub = driverFor([{ host: busy.host, port: busy.port }]);
    await phone.start();
    await hub.start();
    try {
      await phone.speakers()[0].play({ url: tone(440, 20) });
      await expect(hub.speakers()[0].play({ url: tone(1000, 2) })).rejects.toMatchObject({ code: 'AirPlayBusy' });
    } finally {
      await phone.stop();
      await hub.stop();
    }
  });
});

import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { AirPlayConfigSchema } from '../../../src/drivers/airplay/config';
import { AirPlayDriver } from '../../../src/drivers/airplay/driver';
import { createLogger } from '../../../src/logger';
import { ReceiverLab, until, type Receiver } from './harness';

/**
 * Start skew and drift between three shairport-sync receivers playing one party play, from
 * their captured audio. The stdout back end has no clock of its own, so each receiver's capture
 * is timed by when its bytes arrive (polled every ms): a chunk written at t holds frames heard
 * from t on, one frame every 1/44100 s. Every receiver runs the same back end on the same
 * machine, so the constant write-ahead cancels out between receivers.
 */
export interface AirPlaySyncResult {
  startSkewMs: number[];
  pulseSkewMs: number[];
  driftMs?: number;
  seconds: number;
  /** From play() of an announcement on one receiver (while the others play on) to its first audible output written, ms. */
  announceMs: number[];
  /** The RTP latency that announcement plays at (airplay.announcementLatencyMs). */
  latencyMs: number;
}

const PULSE_EVERY = 5;

interface Arrival {
  t: number;
  size: number;
}

function onsets(pcm: Buffer, threshold = 3000, gapFrames = 22050): number[] {
  const out: number[] = [];
  let last = -Infinity;
  for (let f = 0; f * 4 + 1 < pcm.length; f++) {
    if (Math.abs(pcm.readInt16LE(f * 4)) > threshold) {
      if (f - last > gapFrames) out.push(f * 4);
      last = f;
    }
  }
  return out;
}

function timeOf(offset: number, log: Arrival[]): number | undefined {
  for (let i = 1; i < log.length; i++) {
    if (log[i].size > offset) return log[i].t + (offset - log[i - 1].size) / 176.4;
  }
  return undefined;
}

async function playAndTime(lab: ReceiverLab, driver: AirPlayDriver, rx: Receiver[], file: string): Promise<number[][]> {
  const from = rx.map((r) => lab.capturedBytes(r));
  const logs: Arrival[][] = rx.map((_, i) => [{ t: performance.now(), size: from[i] }]);
  const timer = setInterval(() => {
    const t = performance.now();
    rx.forEach((r, i) => {
      const size = lab.capturedBytes(r);
      if (size !== logs[i][logs[i].length - 1].size) logs[i].push({ t, size });
    });
  }, 1);
  try {
    const speakers = driver.speakers();
    await driver.playGroup(speakers, { url: file });
    await until('the play to end', () => speakers.every((s) => s.state === 'stopped'), 120_000);
    await new Promise((r) => setTimeout(r, 1500));
  } finally {
    clearInterval(timer);
  }
  return rx.map((r, i) => {
    const pcm = lab.captured(r).subarray(from[i]);
    return onsets(pcm)
      .map((o) => timeOf(from[i] + o, logs[i]))
      .filter((t): t is number => t !== undefined);
  });
}

const spread = (xs: number[]) => Math.max(...xs) - Math.min(...xs);

export async function measureAirPlaySync(options: { rounds?: number; seconds?: number } = {}): Promise<AirPlaySyncResult> {
  const rounds = options.rounds ?? 3;
  const seconds = options.seconds ?? 62;
  const lab = new ReceiverLab();
  let driver: AirPlayDriver | undefined;
  try {
    const rx = [await lab.add(), await lab.add(), await lab.add()];
    driver = new AirPlayDriver({
      config: AirPlayConfigSchema.parse({ receivers: rx.map((r) => ({ host: r.host, port: r.port })) }),
      logger: createLogger({ level: 'silent' }),
      version: 'bench',
    });
    await driver.start();
    for (const s of driver.speakers()) await s.setVolume(50);
    const pulses = (secs: number) => {
      const file = join(lab.dir, `pulses-${secs}.wav`);
      execFileSync('ffmpeg', [
        '-loglevel',
        'error',
        '-y',
        '-f',
        'lavfi',
        '-i',
        `aevalsrc='if(lt(mod(t\\,${PULSE_EVERY})\\,0.3)\\,0.5*sin(2*PI*1000*t)\\,0)':s=44100:d=${secs}`,
        '-ac',
        '2',
        file,
      ]);
      return file;
    };
    const startSkewMs: number[] = [];
    const pulseSkewMs: number[] = [];
    const short = pulses(3);
    for (let i = 0; i < rounds; i++) {
      const times = await playAndTime(lab, driver, rx, short);
      if (times.every((t) => t.length)) startSkewMs.push(spread(times.map((t) => t[0])));
    }
    const long = await playAndTime(lab, driver, rx, pulses(seconds));
    const n = Math.min(...long.map((t) => t.length));
    for (let k = 0; k < n; k++) pulseSkewMs.push(spread(long.map((t) => t[k])));
    // Drift: how much each receiver's offset from the first moved between the first and last pulse.
    let driftMs: number | undefined;
    if (n > 1) {
      driftMs = Math.max(...long.slice(1).map((t) => Math.abs(t[n - 1] - long[0][n - 1] - (t[0] - long[0][0]))));
    }
    // Announce latency: one receiver leaves the running play for a tone of its own.
    const announceMs: number[] = [];
    const bell = join(lab.dir, 'bell.wav');
    execFileSync('ffmpeg', [
      '-loglevel',
      'error',
      '-y',
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=440:duration=1',
      '-af',
      'volume=4',
      '-ac',
      '2',
      '-ar',
      '44100',
      bell,
    ]);
    for (let i = 0; i < rounds; i++) {
      const [a, b, c] = driver.speakers();
      await driver.playGroup([a, b], { url: pulses(20) });
      const from = lab.capturedBytes(rx[2]);
      const t0 = performance.now();
      await c.play({ url: bell, overlay: true });
      let at: number | undefined;
      await until(
        'the announcement heard',
        () => {
          const pcm = lab.captured(rx[2]).subarray(from);
          if (onsets(pcm, 3000).length) at = performance.now();
          return at !== undefined;
        },
        20_000,
      );
      announceMs.push(at! - t0);
      await Promise.all([a.stop(), b.stop(), c.stop()]);
    }
    return { startSkewMs, pulseSkewMs, driftMs, seconds, announceMs, latencyMs: driver.announcementLatencyMs };
  } finally {
    await driver?.stop();
    lab.close();
  }
}

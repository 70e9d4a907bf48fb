/**
 * The driver conformance suite (suite.ts) against the MPD driver, in the MPD lab: a real mpd on
 * loopback (test/drivers/mpd/harness.ts) whose pipe output is captured at real time. A vanishing speaker
 * is a killed mpd; it returns when mpd is started again (the driver reconnects).
 */
import { systemClock } from '../../../src/core/clock';
import { MpdConfigSchema } from '../../../src/drivers/mpd/config';
import { MpdDriver } from '../../../src/drivers/mpd/driver';
import { createLogger } from '../../../src/logger';
import { labSuite } from '../../helpers/labs';
import { fileSize, loudness, MpdLab, mpdInstalled } from '../mpd/harness';
import { startConformanceMedia } from './media';
import { driverConformance, type ConformanceLab } from './suite';
import { eventually } from '../../helpers/wait';

/** Loudest 50 ms RMS that counts as the tone being heard (the tones are ~8500 at full volume). */
const AUDIBLE = 1000;

driverConformance(
  'mpd',
  async (): Promise<ConformanceLab> => {
    const mpd = await MpdLab.create({});
    await mpd.start();
    const media = await startConformanceMedia();
    const driver = new MpdDriver({
      config: MpdConfigSchema.parse({ servers: [`127.0.0.1:${mpd.port}`], reconnectMinMs: 100, reconnectMaxMs: 500 }),
      clock: systemClock,
      logger: createLogger({ level: 'silent' }),
    });
    await driver.start();
    await eventually(() => driver.speakers().some((s) => s.available), 10_000, 'the mpd speaker');
    return {
      driver,
      speakers: driver.speakers(),
      media,
      slowness: 2,
      vanish: () => mpd.kill(),
      reappear: () => mpd.start(),
      audio: () => ({ mark: () => fileSize(mpd.out), heardSince: (from) => loudness(mpd.out, from) > AUDIBLE }),
      async close() {
        await driver.stop();
        await media.close();
        await mpd.destroy();
      },
    };
  },
  { describe: labSuite('the MPD lab', mpdInstalled()) },
);

/**
 * The driver conformance suite (suite.ts) against the AirPlay driver, in the AirPlay lab: two
 * real shairport-sync receivers, each in its own network namespace (test/drivers/airplay/harness.ts),
 * whose output is captured. The driver fetches and encodes the media itself, so the media server
 * stays on loopback. A vanishing speaker is a killed receiver; it returns when restarted.
 */
import { AirPlayConfigSchema } from '../../../src/drivers/airplay/config';
import { AirPlayDriver } from '../../../src/drivers/airplay/driver';
import type { Speaker } from '../../../src/drivers/driver';
import { createLogger } from '../../../src/logger';
import { labSuite } from '../../helpers/labs';
import { analyse, audible, canRunReceivers, ReceiverLab } from '../airplay/harness';
import { startConformanceMedia } from './media';
import { driverConformance, type ConformanceLab } from './suite';
import { eventually } from '../../helpers/wait';

driverConformance(
  'airplay',
  async (): Promise<ConformanceLab> => {
    const lab = new ReceiverLab();
    const receivers = [await lab.add({ name: 'Conformance 1' }), await lab.add({ name: 'Conformance 2' })];
    const media = await startConformanceMedia();
    const driver = new AirPlayDriver({
      config: AirPlayConfigSchema.parse({ receivers: receivers.map((r) => ({ host: r.host, port: r.port })) }),
      logger: createLogger({ level: 'silent' }),
      version: 'conformance',
    });
    await driver.start();
    await eventually(() => driver.speakers().filter((s) => s.available).length === 2, 15_000, 'two AirPlay receivers');
    const receiverOf = (s: Speaker) => receivers.find((r) => r.host === s.info().ipAddress)!;
    const speakers = receivers.map((r) => driver.speakers().find((s) => s.info().ipAddress === r.host)!);
    return {
      driver,
      speakers,
      media,
      slowness: 3,
      vanish: async (s) => lab.kill(receiverOf(s)),
      reappear: (s) => lab.startReceiver(receiverOf(s)),
      audio: (s) => {
        const r = receiverOf(s);
        return {
          mark: () => lab.capturedBytes(r),
          // Half a second of the tone (s16le stereo 44.1 kHz) that is more than noise.
          heardSince: (from) => {
            const a = audible(lab.captured(r).subarray(from - (from % 4)));
            return a.length > 88200 && analyse(a, []).rms > 0.01;
          },
        };
      },
      async close() {
        await driver.stop();
        await media.close();
        lab.close();
      },
    };
  },
  {
    describe: labSuite(
      'the AirPlay lab',
      canRunReceivers() ? undefined : 'shairport-sync, avahi-daemon, dbus-daemon, ffmpeg or root (for namespaces) is missing',
    ),
  },
);

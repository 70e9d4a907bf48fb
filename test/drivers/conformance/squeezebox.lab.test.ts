/**
 * The driver conformance suite (suite.ts) against the Squeezebox driver, in the Squeezebox lab:
 * two real squeezelite players on loopback (test/drivers/squeezebox/harness.ts) whose output is captured
 * at real time. A vanishing speaker is a killed squeezelite; it returns when started again.
 */
import { SqueezeboxConfigSchema } from '../../../src/drivers/squeezebox/config';
import { SqueezeboxDriver } from '../../../src/drivers/squeezebox/driver';
import type { Speaker } from '../../../src/drivers/driver';
import { createLogger } from '../../../src/logger';
import { labSuite } from '../../helpers/labs';
import { freePort } from '../../helpers/net';
import { fileSize, loudness, SqueezelitePlayer, squeezeliteInstalled } from '../squeezebox/harness';
import { startConformanceMedia } from './media';
import { driverConformance, type ConformanceLab } from './suite';
import { eventually } from '../../helpers/wait';

/** Loudest 50 ms RMS that counts as the tone being heard (the tones are ~8500 at full volume). */
const AUDIBLE = 1000;

driverConformance(
  'squeezebox',
  async (): Promise<ConformanceLab> => {
    const port = await freePort();
    const media = await startConformanceMedia();
    const driver = new SqueezeboxDriver({
      config: SqueezeboxConfigSchema.parse({ port, host: '127.0.0.1', discovery: false, heloTimeoutMs: 1000, maxConnections: 20 }),
      logger: createLogger({ level: 'silent' }),
    });
    await driver.start();
    const players = await Promise.all(
      ['Conformance 1', 'Conformance 2'].map((n, i) => SqueezelitePlayer.create(n, `02:00:00:5c:00:0${i + 1}`, port)),
    );
    for (const p of players) await p.start();
    await eventually(() => driver.speakers().filter((s) => s.available).length === 2, 15_000, 'two squeezelite players');
    const mac = (s: Speaker) => s.info().macAddress.toLowerCase();
    const playerOf = (s: Speaker) => players.find((p) => p.mac === mac(s))!;
    const speakers = players.map((p) => driver.speakers().find((s) => mac(s) === p.mac)!);
    return {
      driver,
      speakers,
      media,
      slowness: 2,
      vanish: (s) => playerOf(s).kill(),
      reappear: (s) => playerOf(s).start(),
      audio: (s) => {
        const out = playerOf(s).out;
        return { mark: () => fileSize(out), heardSince: (from) => loudness(out, from) > AUDIBLE };
      },
      async close() {
        await driver.stop();
        await media.close();
        await Promise.all(players.map((p) => p.destroy()));
      },
    };
  },
  { describe: labSuite('the Squeezebox lab', squeezeliteInstalled()) },
);

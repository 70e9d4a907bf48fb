/**
 * The driver conformance suite (suite.ts) against the UPnP driver, in the UPnP lab: a real
 * gmediarender in a network namespace of a private LAN (test/drivers/upnp/lab.ts), recording what it
 * plays. The driver runs in this process on the LAN's root address, with the renderer as a
 * static renderer (no multicast from a test). A vanishing speaker is a crashed (SIGKILLed)
 * gmediarender; it returns when started again.
 */
import { readFileSync } from 'node:fs';
import { systemClock } from '../../../src/core/clock';
import { UpnpDriver } from '../../../src/drivers/upnp';
import { UpnpConfigSchema } from '../../../src/drivers/upnp/config';
import { createLogger } from '../../../src/logger';
import { LAB_NETWORKS } from '../../helpers/lab-networks';
import { labSuite } from '../../helpers/labs';
import { labUnavailableReason, UpnpLab } from '../upnp/lab';
import { startConformanceMedia } from './media';
import { driverConformance, type ConformanceLab } from './suite';
import { eventually } from '../../helpers/wait';

/** A sample (16-bit) louder than this counts as the tone (the tones peak at 12000). */
const AUDIBLE = 3000;

function bytesOf(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch {
    return Buffer.alloc(0);
  }
}

/** Whether the recording (16-bit WAV data) has a tenth of a second of loud samples after byte `from`. */
function loudSince(file: string, from: number): boolean {
  const b = bytesOf(file);
  let loud = 0;
  for (let i = from + (from % 2); i + 1 < b.length; i += 2) if (Math.abs(b.readInt16LE(i)) > AUDIBLE) loud++;
  return loud > 2205;
}

driverConformance(
  'upnp',
  async (): Promise<ConformanceLab> => {
    const lab = await UpnpLab.start({
      ...LAB_NETWORKS.conformanceUpnp,
      renderers: [{ host: 'r1', friendlyName: 'Conformance 1', record: true }],
    });
    const renderer = lab.renderer('r1');
    const media = await startConformanceMedia(lab.lan.root.address);
    const driver = new UpnpDriver({
      config: UpnpConfigSchema.parse({
        ssdp: false,
        renderers: [renderer.location],
        recheckIntervalSeconds: 1,
        requestTimeoutMs: 2000,
        playTimeoutSeconds: 6,
        stallSeconds: 6,
      }),
      address: lab.lan.root.address,
      clock: systemClock,
      logger: createLogger({ level: 'silent' }),
    });
    await driver.start();
    await eventually(() => driver.speakers().some((s) => s.id === renderer.deviceId && s.available), 15_000, 'the renderer as a speaker');
    return {
      driver,
      speakers: driver.speakers().filter((s) => s.id === renderer.deviceId),
      media,
      slowness: 3,
      vanish: () => renderer.kill('SIGKILL'),
      reappear: () => renderer.start(),
      audio: () => ({ mark: () => bytesOf(renderer.recording!).length, heardSince: (from) => loudSince(renderer.recording!, from) }),
      async close() {
        await driver.stop();
        await media.close();
        await lab.stop();
      },
    };
  },
  { describe: labSuite('the UPnP lab', labUnavailableReason()) },
);

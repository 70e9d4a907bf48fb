/**
 * The driver conformance suite (suite.ts) against the virtual driver, in the fast tier: plain
 * speakers (the core's fallback for announcements) and mixing ones (speakers.virtual.mix, the
 * driver's own overlay()). The hub's real clock, a real HTTP server for the media.
 */
import { systemClock } from '../../../src/core/clock';
import { VirtualDriver } from '../../../src/drivers/virtual/virtual-driver';
import type { VirtualSpeaker } from '../../../src/drivers/virtual/virtual-speaker';
import { startConformanceMedia } from './media';
import { driverConformance, type ConformanceLab } from './suite';

for (const mix of [false, true]) {
  driverConformance(`virtual${mix ? ' (mix)' : ''}`, async (): Promise<ConformanceLab> => {
    const media = await startConformanceMedia();
    const driver = new VirtualDriver({ count: 2, clock: systemClock, version: 'conformance', mix });
    await driver.start();
    return {
      driver,
      speakers: driver.speakers(),
      media,
      vanish: async (s) => (s as VirtualSpeaker).vanish(),
      reappear: async (s) => (s as VirtualSpeaker).reappear(),
      async close() {
        await driver.stop();
        await media.close();
      },
    };
  });
}

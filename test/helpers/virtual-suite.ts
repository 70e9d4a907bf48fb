/**
 * The set-up many announcement and playback suites share: one real hub with virtual speakers
 * (they really download what they play and report every volume and play-state change), on the
 * suite's ManualClock so a test moves playback time itself. Registers the suite's hooks: the hub
 * started before all (its speakers' ids read, handed to `ready`), closed after all.
 */
import type { ManualClock } from '../../src/core/clock';
import type { HubConfigInput } from '../../src/hub-config';
import { startHub, type TestHub, virtualOf } from './hub';

export interface VirtualHub {
  t: TestHub;
  /** The virtual speakers' DeviceIDs, in the driver's order (speaker(i) is ids[i]). */
  ids: string[];
}

export function useVirtualHub(options: { clock: ManualClock; count?: number; config?: HubConfigInput }, ready: (hub: VirtualHub) => void): void {
  let t: TestHub | undefined;
  beforeAll(async () => {
    t = await startHub({ ...options.config, speakers: { virtual: { count: options.count ?? 2 } } }, { clock: options.clock });
    const ids = virtualOf(t.hub)
      .speakers()
      .map((s) => s.id);
    ready({ t, ids });
  });
  afterAll(async () => {
    await t?.close();
  });
}

/**
 * What a suite on the UPnP lab with its three default renderers sets up, in one place (the
 * driver's suite and the announcement one each had it): the suite's describe, and its hooks.
 * Kept apart from lab.ts, which bench/ compiles and which must not reach for jest's hooks.
 */
import { labSuite } from '../../helpers/labs';
import { eventually } from '../../helpers/wait';
import { labUnavailableReason, UpnpLab, type HubProcess, type LabOptions, type Renderer } from './lab';

/** describe for a UPnP lab suite: where the lab cannot run here it fails with the reason (labSuite). */
export function upnpLabSuite(): jest.Describe {
  return labSuite('the UPnP lab (gmediarender in network namespaces)', labUnavailableReason());
}

export interface DiscoveredLab {
  lab: UpnpLab;
  hub: HubProcess;
  renderers: Renderer[];
  /** The hub's media ids by title (MEDIA). */
  ids: Record<string, string>;
}

/**
 * Registers the suite's hooks. Before all: the lab started, the hub waited for until it lists
 * every renderer, its media ids read, and all of it handed to `ready`. After each test: the
 * hub's play stopped, so no test starts on another's playback. After all: the lab stopped
 * (its namespaces and processes gone), also when starting it failed half-way.
 */
export function useDiscoveredLab(options: LabOptions, ready: (lab: DiscoveredLab) => void): void {
  let lab: UpnpLab | undefined;
  beforeAll(async () => {
    const started = await UpnpLab.start(options);
    lab = started;
    const { hub, renderers } = started;
    const count = String(renderers.length);
    await eventually(async () => (await hub.op('device_count')).DeviceCount === count, 15_000, `${count} renderers discovered`);
    ready({ lab: started, hub, renderers, ids: await started.mediaIds() });
  }, 120_000);
  afterAll(async () => {
    await lab?.stop();
  }, 30_000);
  afterEach(async () => {
    await lab?.hub.op('stop_play');
  });
}

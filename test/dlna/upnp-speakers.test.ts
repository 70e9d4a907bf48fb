import { execFileSync } from 'node:child_process';
import { DlnaLab, eventually, labUnavailableReason, type LabHub } from './lab';
import { LAN_IFNAME } from '../upnp/lan';
import { upnpDeviceId } from '../../src/drivers/upnp/info';
import { upnpDeviceId as dlnaUpnpDeviceId } from '../../src/dlna/extension';

/**
 * A speaker that is itself a UPnP renderer (the upnp driver's: here a real gmediarender) is not
 * published again by default, and is with dlna.publishUpnpSpeakers; a hub running the upnp
 * driver and --dlna together never takes its own renderers for speakers.
 */

const reason =
  labUnavailableReason() ??
  (() => {
    try {
      execFileSync('sh', ['-c', 'command -v gmediarender'], { stdio: 'ignore' });
      return undefined;
    } catch {
      return 'gmediarender is not installed (scripts/install-test-deps.sh installs it)';
    }
  })();
const d = reason && process.env.SPEAKERHUB_SKIP_LABS === '1' ? describe.skip : describe;
jest.setTimeout(120_000);

const DEN_UUID = '5eaca4e2-0b1d-4c3e-9a7f-0000000000d1';

test("the extension's UPnP DeviceID rule is the upnp driver's", () => {
  for (const udn of [`uuid:${DEN_UUID}`, 'uuid:ABCDEF01-0000-1111-2222-333344445555', ' uuid:x '])
    expect(dlnaUpnpDeviceId(udn)).toBe(upnpDeviceId(udn));
});

d('DLNA and speakers that are UPnP renderers', () => {
  let lab: DlnaLab;

  beforeAll(async () => {
    if (reason) throw new Error(`the DLNA lab cannot run: ${reason} (SPEAKERHUB_SKIP_LABS=1 skips it)`);
    lab = await DlnaLab.start(['r1']);
    const den = lab.lan.spawn('r1', 'gmediarender', ['-f', 'Den', '-u', DEN_UUID, '-I', LAN_IFNAME, '-p', '49494', '--gstout-audiopipe', 'fakesink']);
    let out = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`gmediarender did not start: ${out}`)), 15000);
      const onData = (b: Buffer) => {
        out += b.toString();
        if (out.includes('Ready for rendering')) {
          clearTimeout(timer);
          resolve();
        }
      };
      den.stdout?.on('data', onData);
      den.stderr?.on('data', onData);
    });
  });

  afterAll(async () => {
    await lab?.stop();
  });

  const names = async (hub: LabHub) => ((await hub.op('device_list')).DeviceList as { DeviceName: string }[]).map((x) => x.DeviceName).sort();

  test('by default the UPnP speaker is left out, and the hub does not find its own renderers', async () => {
    const hub = await lab.startHubA(['Kitchen'], { drivers: ['virtual', 'upnp'] });
    try {
      await eventually(async () => (await names(hub)).includes('Den'), 20000, 'the hub finding Den');
      // Several search rounds (searchIntervalSeconds 5): its own renderers never became speakers.
      await new Promise((r) => setTimeout(r, 6000));
      expect(await names(hub)).toEqual(['Den', 'Kitchen']);
      const published = (await hub.currentRenderers()).map((r) => r.name).sort();
      expect(published).toEqual(['All speakers', 'Kitchen', 'Kitchen (announcements)']);
    } finally {
      await hub.stop();
    }
  });

  test('dlna.publishUpnpSpeakers publishes it too', async () => {
    const hub = await lab.startHubA(['Kitchen'], { drivers: ['virtual', 'upnp'], dlna: { publishUpnpSpeakers: true }, host: 'hubb', port: 8092 });
    try {
      await eventually(async () => (await names(hub)).includes('Den'), 20000, 'the hub finding Den');
      await eventually(async () => (await hub.currentRenderers()).some((r) => r.name === 'Den'), 10000, 'Den published');
      expect((await hub.currentRenderers()).map((r) => r.name).sort()).toEqual([
        'All speakers',
        'Den',
        'Den (announcements)',
        'Kitchen',
        'Kitchen (announcements)',
      ]);
    } finally {
      await hub.stop();
    }
  });
});

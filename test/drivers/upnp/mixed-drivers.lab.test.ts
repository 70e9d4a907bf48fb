import { startHub, type TestHub } from '../../helpers/hub';
import { FakeRenderer } from './fake-renderer';

describe('one hub, several drivers', () => {
  const renderer = new FakeRenderer();
  let t: TestHub;

  beforeAll(async () => {
    await renderer.start();
    // A static renderer on loopback: no SSDP, so nothing is multicast from this namespace.
    t = await startHub({
      drivers: ['virtual', 'upnp'],
      speakers: { virtual: { count: 2 } },
      upnp: { ssdp: false, renderers: [renderer.location] },
    });
  });
  afterAll(async () => {
    await t.close();
    await renderer.stop();
  });

  test('virtual and UPnP speakers are listed together with distinct DeviceIDs and are each controllable', async () => {
    for (let i = 0; i < 100 && (await t.op('device_count')).DeviceCount !== '3'; i++) await new Promise((r) => setTimeout(r, 20));
    const { DeviceList } = await t.op('device_list');
    expect(DeviceList.map((d: { ModelName: string }) => d.ModelName).sort()).toEqual([
      'FakeRender',
      'SpeakerHub Virtual Speaker',
      'SpeakerHub Virtual Speaker',
    ]);
    const ids = DeviceList.map((d: { DeviceID: string }) => d.DeviceID);
    expect(new Set(ids).size).toBe(3);
    for (const id of ids) expect(id).toMatch(/^\d{14}$/);
    const upnp = DeviceList.find((d: { ModelName: string }) => d.ModelName === 'FakeRender');
    expect(await t.op('set_volume_device', { DeviceID: upnp.DeviceID, Volume: '15' })).toEqual({ Result: 'true' });
    expect(renderer.volumeSets).toEqual([30]);
    expect(await t.op('set_volume', { Volume: '25' })).toEqual({ Result: 'true' });
    expect(renderer.volumeSets).toEqual([30, 50]);
    expect(await t.op('get_volume')).toEqual({ Volume: '25' });
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHub, type SpeakerHub } from '../../src/hub';
import { EXAMPLE } from '../../src/operations/table';
import { startHub, TEST_TOKEN, type TestHub, virtualOf } from '../helpers/hub';

describe('devices', () => {
  let t: TestHub;
  beforeAll(async () => {
    t = await startHub({ speakers: { virtual: { count: 3, names: ['Kitchen'] } } });
  });
  afterAll(() => t.close());
  afterEach(() =>
    virtualOf(t.hub)
      .speakers()
      .forEach((s) => s.reappear()),
  );

  test('device_count and device_list have the exact wire types of compatibility.md', async () => {
    expect(await t.op('device_count')).toEqual({ DeviceCount: '3' });
    const { DeviceList } = await t.op('device_list');
    expect(DeviceList).toHaveLength(3);
    for (const d of DeviceList) {
      expect(Object.keys(d).sort()).toEqual(
        [
          'Active',
          'DeviceID',
          'DeviceName',
          'GroupID',
          'GroupName',
          'IPAddress',
          'IsPlaying',
          'MacAddress',
          'ModelName',
          'Port',
          'Role',
          'Version',
          'Volume',
          'WifiSignalStrength',
        ].sort(),
      );
      expect(d.DeviceID).toMatch(/^\d{14}$/);
      expect(d.GroupID).toMatch(/^\d+$/);
      for (const k of ['DeviceName', 'GroupName', 'ModelName', 'Version', 'MacAddress', 'IPAddress']) expect(typeof d[k]).toBe('string');
      for (const k of ['Role', 'Port', 'Volume', 'WifiSignalStrength']) expect(Number.isInteger(d[k])).toBe(true);
      expect(d.WifiSignalStrength).toBeLessThan(0);
      expect(d.Active).toBe(true);
      expect(d.IsPlaying).toBe(false);
    }
    expect(DeviceList[0].DeviceName).toBe('Kitchen');
    expect(DeviceList[1].DeviceName).toBe('Virtual Speaker 2');
    expect(new Set(DeviceList.map((d: any) => d.DeviceID)).size).toBe(3);
  });

  test('device_info returns the bare device object; unknown IDs are DeviceNotFound', async () => {
    const { DeviceList } = await t.op('device_list');
    expect(await t.op('device_info', { DeviceID: DeviceList[2].DeviceID })).toEqual(DeviceList[2]);
    expect(await t.op('device_info', { DeviceID: '99999999999999' })).toMatchObject({
      Result: 'false',
      ErrorCode: 'DeviceNotFound',
      Parameter: 'DeviceID',
    });
  });

  test('DeviceIDs (and the hub UUID) are stable across a real restart: the hub stopped, a new one started on the same data folder', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'speakerhub-restart-'));
    const config = {
      dataDir,
      speakers: { virtual: { count: 3 } },
      media: { samples: false },
      server: { host: '127.0.0.1', port: 0, token: TEST_TOKEN },
      log: { level: 'silent' as const },
    };
    const read = async (hub: SpeakerHub) => {
      const get = async (path: string) =>
        (await fetch(hub.url + path, { headers: { Authorization: `Bearer ${TEST_TOKEN}` } })).json() as Promise<any>;
      const init = await get('/api/v1/init_session');
      const list = (await get(`/api/v1/device_list?SessionToken=${init.SessionToken}`)).DeviceList;
      return { uuid: init.HKWHubUUID as string, ids: list.map((d: any) => d.DeviceID) as string[] };
    };
    try {
      const first = createHub(config);
      await first.start();
      const before = await read(first);
      await first.stop();
      const second = createHub(config);
      await second.start();
      try {
        const after = await read(second);
        expect(before.ids).toHaveLength(3);
        expect(after).toEqual(before);
        // Another install (the test hub's own data folder) has the same IDs, which the docs' examples use.
        expect((await t.op('device_list')).DeviceList.map((d: any) => d.DeviceID)).toEqual(before.ids);
        expect(before.ids.slice(0, 2)).toEqual([EXAMPLE.deviceId, EXAMPLE.otherDeviceId]);
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('a vanished speaker stays listed with Active false and cannot be added to the session', async () => {
    const s = virtualOf(t.hub).speaker(1);
    s.vanish();
    const info = await t.op('device_info', { DeviceID: s.id });
    expect(info.Active).toBe(false);
    expect(await t.op('device_count')).toEqual({ DeviceCount: '3' });
    expect(await t.op('add_device_to_session', { DeviceID: s.id })).toMatchObject({ Result: 'false', ErrorCode: 'DeviceUnavailable' });
    s.reappear();
    expect((await t.op('device_info', { DeviceID: s.id })).Active).toBe(true);
    expect(await t.op('add_device_to_session', { DeviceID: s.id })).toEqual({ Result: 'true' });
    expect(await t.op('remove_device_from_session', { DeviceID: s.id })).toEqual({ Result: 'true' });
  });

  test('a speaker renamed on the device shows the new name', async () => {
    const s = virtualOf(t.hub).speaker(2);
    s.update({ name: 'Patio' });
    expect((await t.op('device_info', { DeviceID: s.id })).DeviceName).toBe('Patio');
  });
});

describe('volume', () => {
  let t: TestHub;
  beforeAll(async () => {
    t = await startHub({ speakers: { virtual: { count: 3, volume: 20 } } });
  });
  afterAll(() => t.close());
  afterEach(() =>
    virtualOf(t.hub)
      .speakers()
      .forEach((s) => s.reappear()),
  );
  const ids = () =>
    virtualOf(t.hub)
      .speakers()
      .map((s) => s.id);

  test('get_volume is the average of the available speakers, as a string', async () => {
    expect(await t.op('get_volume')).toEqual({ Volume: '20' });
    expect(await t.op('set_volume', { Volume: '30' })).toEqual({ Result: 'true' });
    for (const id of ids()) expect(await t.op('get_volume_device', { DeviceID: id })).toEqual({ Volume: '30' });
    expect((await t.op('device_list')).DeviceList.map((d: any) => d.Volume)).toEqual([30, 30, 30]);
    expect(await t.op('set_volume_device', { DeviceID: ids()[0], Volume: '11' })).toEqual({ Result: 'true' });
    // (11 + 30 + 30) / 3 = 23.67 → 24
    expect(await t.op('get_volume')).toEqual({ Volume: '24' });
  });

  test('the average rounds half up and ignores unavailable speakers', async () => {
    const [a, b, c] = ids();
    await t.op('set_volume_device', { DeviceID: a, Volume: '20' });
    await t.op('set_volume_device', { DeviceID: b, Volume: '21' });
    await t.op('set_volume_device', { DeviceID: c, Volume: '50' });
    virtualOf(t.hub).speaker(2).vanish();
    expect(await t.op('get_volume')).toEqual({ Volume: '21' }); // 20.5 → 21
    // The vanished speaker still answers its last volume but cannot be set.
    expect(await t.op('get_volume_device', { DeviceID: c })).toEqual({ Volume: '50' });
    expect(await t.op('set_volume_device', { DeviceID: c, Volume: '10' })).toMatchObject({ Result: 'false', ErrorCode: 'DeviceUnavailable' });
    // set_volume changes the available ones only.
    expect(await t.op('set_volume', { Volume: '0' })).toEqual({ Result: 'true' });
    expect(await t.op('get_volume_device', { DeviceID: a })).toEqual({ Volume: '0' });
    expect(await t.op('get_volume_device', { DeviceID: c })).toEqual({ Volume: '50' });
  });

  test('with no speaker available there is no volume to read or set', async () => {
    virtualOf(t.hub)
      .speakers()
      .forEach((s) => s.vanish());
    expect(await t.op('get_volume')).toMatchObject({ Result: 'false', ErrorCode: 'NoSpeakerAvailable' });
    expect(await t.op('set_volume', { Volume: '5' })).toMatchObject({ Result: 'false', ErrorCode: 'NoSpeakerAvailable' });
  });

  test('bounds: 0 and 50 are accepted, 51 and -1 are not', async () => {
    expect(await t.op('set_volume', { Volume: '50' })).toEqual({ Result: 'true' });
    expect(await t.op('get_volume')).toEqual({ Volume: '50' });
    expect(await t.op('set_volume', { Volume: '0' })).toEqual({ Result: 'true' });
    for (const bad of ['51', '-1', '2.5', 'loud', '']) {
      expect(await t.op('set_volume', { Volume: bad })).toMatchObject({ Result: 'false', ErrorCode: 'InvalidParameter', Parameter: 'Volume' });
    }
    expect(await t.op('get_volume')).toEqual({ Volume: '0' });
  });

  test('volume changes are core events', async () => {
    const seen: { deviceId: string; volume: number }[] = [];
    const on = (e: { deviceId: string; volume: number }) => seen.push(e);
    t.hub.core.events.on('volume', on);
    await t.op('set_volume_device', { DeviceID: ids()[1], Volume: '33' });
    t.hub.core.events.off('volume', on);
    expect(seen).toEqual([{ deviceId: ids()[1], volume: 33 }]);
  });
});

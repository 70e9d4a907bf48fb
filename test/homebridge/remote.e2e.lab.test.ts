import { startHub, TEST_TOKEN, type TestHub, virtualOf } from '../helpers/hub';
import {
  Controller,
  HAP,
  installHomebridgeDeps,
  removePluginDir,
  startHomebridge,
  until,
  VERSIONS,
  type ControllerAccessory,
  type HomebridgeRun,
  accessoryNamed,
  tearDown,
} from './helpers';
import { longMediaFolder } from './rest';

// The plugin against a hub running elsewhere (here: in the test process, so the test can make
// its virtual speakers vanish, come back and change names), following its SSE event stream.

jest.setTimeout(30_000);
beforeAll(() => installHomebridgeDeps(), 10 * 60_000);
afterAll(() => removePluginDir());

const NAMES = ['Desk', 'Porch', 'Garage'];

describe.each(VERSIONS)('remote hub in $label', ({ major }) => {
  let hub: TestHub;
  let run: HomebridgeRun;
  let ctrl: Controller;
  let accessories: ControllerAccessory[];
  let media: string;
  const platformFor = (h: TestHub) => ({
    platform: 'SpeakerHub',
    hub: { mode: 'remote', url: h.base, token: TEST_TOKEN },
    speakers: [{ name: 'Garage', service: 'fan' }],
    removeAfterHours: 0,
  });
  const byName = (n: string) => accessoryNamed(accessories, n);
  const speaker = (name: string) =>
    virtualOf(hub.hub)
      .speakers()
      .find((s) => s.info().name === name)!;

  beforeAll(async () => {
    media = await longMediaFolder();
    hub = await startHub({ speakers: { virtual: { count: 3, names: NAMES } }, media: { samples: false, folders: [media] } });
    run = await startHomebridge({ major, platform: platformFor(hub) });
    await run.waitFor(/Following the hub's events/);
    ctrl = await Controller.pair(run);
    await until(async () => (accessories = await ctrl.accessories()).length === 1 + NAMES.length, 'the accessories');
  });

  afterAll(() => tearDown({ ctrl, run, hub, media }));

  test('lists the remote speakers; the per-speaker service setting applies', () => {
    expect(byName('Desk').serviceType).toBe(HAP.services.lightbulb);
    expect(byName('Porch').serviceType).toBe(HAP.services.lightbulb);
    expect(byName('Garage').serviceType).toBe(HAP.services.fan);
    expect(byName('Garage').iid[HAP.RotationSpeed]).toBeDefined();
  });

  test('a volume set over REST reaches the controller as an event (through the hub SSE stream)', async () => {
    const g = byName('Garage');
    const key = `${g.aid}.${g.iid[HAP.RotationSpeed]}`;
    const seen = await ctrl.subscribe([key]);
    expect((await hub.op('set_volume_device', { DeviceID: speaker('Garage').id, Volume: '9' })).Result).toBe('true');
    await until(() => (seen.get(key) ?? []).includes(18), 'a RotationSpeed event of 18');
  });

  test('a speaker vanishing sets StatusFault (and "No Response" on reads); coming back clears it', async () => {
    const p = byName('Porch');
    const key = `${p.aid}.${p.iid[HAP.StatusFault]}`;
    const seen = await ctrl.subscribe([key]);
    speaker('Porch').vanish();
    await until(() => (seen.get(key) ?? []).includes(1), 'a StatusFault event of 1');
    expect((await ctrl.read(p.aid, p.iid[HAP.StatusFault])).value).toBe(1);
    expect((await ctrl.read(p.aid, p.iid[HAP.On])).status).toBe(-70402);
    await expect(ctrl.write(p.aid, p.iid[HAP.Brightness], 50)).rejects.toMatchObject({ status: -70402 });
    speaker('Porch').reappear();
    await until(() => (seen.get(key) ?? []).includes(0), 'a StatusFault event of 0');
    expect((await ctrl.read(p.aid, p.iid[HAP.StatusFault])).value).toBe(0);
  });

  test('a renamed speaker renames its accessory', async () => {
    const desk = speaker('Desk');
    desk.update({ name: 'Office Desk!' });
    await until(async () => (accessories = await ctrl.accessories()).some((a) => a.name === 'Office Desk'), 'the new name');
    desk.update({ name: 'Desk' });
    await until(async () => (accessories = await ctrl.accessories()).some((a) => a.name === 'Desk'), 'the old name again');
  });

  test('a restart restores the accessories; a speaker the hub no longer lists is removed', async () => {
    const before = new Map(accessories.map((a) => [a.name, a.aid]));
    ctrl.close();
    await run.stop();
    await hub.close();
    hub = await startHub({ speakers: { virtual: { count: 2, names: NAMES.slice(0, 2) } }, media: { samples: false, folders: [media] } });
    run = await startHomebridge({ major, platform: platformFor(hub), storage: run.storage, port: run.port, username: run.username });
    await run.waitFor(/Removed accessory "Garage"/);
    ctrl = Controller.reuse(run, ctrl.pairing);
    accessories = await ctrl.accessories();
    expect(
      accessories
        .filter((a) => a.aid !== 1)
        .map((a) => a.name)
        .sort(),
    ).toEqual(['Desk', 'Porch']);
    expect(byName('Desk').aid).toBe(before.get('Desk'));
    expect(byName('Porch').aid).toBe(before.get('Porch'));
  });
});

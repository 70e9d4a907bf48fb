import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  Controller,
  HAP,
  freePort,
  installHomebridgeDeps,
  removePluginDir,
  startHomebridge,
  until,
  VERSIONS,
  type ControllerAccessory,
  type HomebridgeRun,
  accessoryNamed,
  embeddedPlatform,
  startEmbedded,
  tearDown,
} from './helpers';
import { longMediaFolder, Rest } from './rest';

// Real Homebridge processes (1.x on Node 20, 2.x on Node 24) with the plugin loaded by -P and
// its hub embedded (virtual speakers, REST server on loopback so the test can watch the hub),
// driven by a paired HomeKit controller (hap-controller) over HAP on loopback.

const TOKEN = 'hb-test-token-0123456789abcdef';
const NAMES = ['Kitchen', 'Living Room', 'Bath'];

jest.setTimeout(30_000);
beforeAll(() => installHomebridgeDeps(), 10 * 60_000);
afterAll(() => removePluginDir());

describe.each(VERSIONS)('embedded hub in $label', ({ major }) => {
  let run: HomebridgeRun;
  let ctrl: Controller;
  let rest: Rest;
  let media: string;
  let accessories: ControllerAccessory[];
  let platform: Record<string, unknown>;
  const byName = (n: string) => accessoryNamed(accessories, n);

  beforeAll(async () => {
    media = await longMediaFolder();
    const restPort = await freePort();
    platform = embeddedPlatform(
      { names: NAMES, media, restPort, token: TOKEN },
      { announcements: [{ name: 'Dinner', text: 'Dinner is ready', speakers: ['Kitchen'] }], partySwitch: true },
    );
    ({ run, ctrl, accessories } = await startEmbedded(major, platform, 1 + NAMES.length + 2));
    rest = new Rest(`http://127.0.0.1:${restPort}`, TOKEN);
  });

  afterAll(() => tearDown({ ctrl, run, media }));

  test('lists one accessory per speaker with its name, plus the announcement and party switches', () => {
    for (const n of NAMES) {
      expect(byName(n).serviceType).toBe(HAP.services.lightbulb);
      expect(byName(n).iid[HAP.Brightness]).toBeDefined();
      expect(byName(n).iid[HAP.StatusFault]).toBeDefined();
    }
    expect(byName('Dinner').serviceType).toBe(HAP.services.switch);
    expect(byName('Party Mode').serviceType).toBe(HAP.services.switch);
    // Homebridge and HAP-NodeJS warn about plugins that break HAP's rules (names, characteristics, slow handlers).
    expect(run.output.filter((l) => /WARNING|generated a warning|slow to respond|unhandled|deprecated/i.test(l))).toEqual([]);
  });

  test("the embedded hub keeps its files in Homebridge's storage path", async () => {
    expect(await readdir(join(run.storage, 'speakerhub'))).toEqual(expect.arrayContaining(['hub-uuid']));
  });

  test('writing Brightness sets the hub volume (percent = 2 × volume)', async () => {
    const k = byName('Kitchen');
    await ctrl.write(k.aid, k.iid[HAP.Brightness], 62);
    const id = await rest.idOf('Kitchen');
    expect((await rest.op('get_volume_device', { DeviceID: id })).Volume).toBe('31');
    expect((await ctrl.read(k.aid, k.iid[HAP.Brightness])).value).toBe(62);
  });

  test('a volume set over REST arrives at the controller as an event', async () => {
    const lr = byName('Living Room');
    const key = `${lr.aid}.${lr.iid[HAP.Brightness]}`;
    const seen = await ctrl.subscribe([key]);
    const r = await rest.op('set_volume_device', { DeviceID: await rest.idOf('Living Room'), Volume: '17' });
    expect(r.Result).toBe('true');
    await until(() => (seen.get(key) ?? []).includes(34), 'a Brightness event of 34');
  });

  test('On false/true takes one speaker out of a shared playback and back, the other plays on', async () => {
    const [kitchen, living] = [await rest.idOf('Kitchen'), await rest.idOf('Living Room')];
    const pid = (await rest.op('media_list')).MediaList[0].PersistentID;
    expect((await rest.op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: `${kitchen},${living}` })).Result).toBe('true');
    const k = byName('Kitchen');
    await until(async () => await ctrl.isOn(k.aid, k.iid[HAP.On]), 'Kitchen On');
    await ctrl.write(k.aid, k.iid[HAP.On], false);
    let devices = await rest.devices();
    expect(devices.find((d) => d.DeviceID === kitchen)!.IsPlaying).toBe(false);
    expect(devices.find((d) => d.DeviceID === living)!.IsPlaying).toBe(true);
    await ctrl.write(k.aid, k.iid[HAP.On], true);
    devices = await rest.devices();
    expect(devices.find((d) => d.DeviceID === kitchen)!.IsPlaying).toBe(true);
    expect(devices.find((d) => d.DeviceID === living)!.IsPlaying).toBe(true);
    await rest.op('stop_play');
  });

  test('On false pauses a speaker playing alone; On true resumes it where it was', async () => {
    const bath = await rest.idOf('Bath');
    const pid = (await rest.op('media_list')).MediaList[0].PersistentID;
    expect((await rest.op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: bath })).Result).toBe('true');
    const b = byName('Bath');
    await until(async () => await ctrl.isOn(b.aid, b.iid[HAP.On]), 'Bath On');
    await until(async () => Number((await rest.op('playback_status')).TimeElapsed) >= 1, 'a second of playback');
    await ctrl.write(b.aid, b.iid[HAP.On], false);
    const paused = await rest.op('playback_status');
    expect(paused.PlaybackState).toBe('PlayerStatePaused');
    await ctrl.write(b.aid, b.iid[HAP.On], true);
    const resumed = await rest.op('playback_status');
    expect(resumed.PlaybackState).toBe('PlayerStatePlaying');
    expect(Number(resumed.TimeElapsed)).toBeGreaterThanOrEqual(Number(paused.TimeElapsed));
    expect(await ctrl.isOn(b.aid, b.iid[HAP.On])).toBe(true);
    await rest.op('stop_play');
    await until(async () => !(await ctrl.isOn(b.aid, b.iid[HAP.On])), 'Bath Off after stop_play');
  });

  test('the Party Mode switch plays on every available speaker; off stops', async () => {
    const party = byName('Party Mode');
    await ctrl.write(party.aid, party.iid[HAP.On], true);
    await until(async () => (await rest.devices()).every((d) => d.IsPlaying), 'every speaker playing');
    await until(async () => ctrl.isOn(party.aid, party.iid[HAP.On]), 'Party Mode reading on');
    await ctrl.write(party.aid, party.iid[HAP.On], false);
    expect((await rest.op('playback_status')).PlaybackState).toBe('PlayerStateStopped');
    expect((await rest.devices()).some((d) => d.IsPlaying)).toBe(false);
  });

  test('an announcement switch announces on its speakers and turns itself off (needs the announce operation)', async () => {
    const sw = byName('Dinner');
    const key = `${sw.aid}.${sw.iid[HAP.On]}`;
    const seen = await ctrl.subscribe([key]);
    await ctrl.write(sw.aid, sw.iid[HAP.On], true);
    const m = await run.waitFor(/Announcement "Dinner" started \(AnnouncementID (\S+)\)/);
    const status = await rest.op('announcement_status', { AnnouncementID: m[1] });
    expect(['queued', 'playing', 'done']).toContain(status.State);
    await until(() => (seen.get(key) ?? []).some((v) => v === false || v === 0), 'the switch turning itself off');
  });

  test('a Homebridge restart restores the same accessories (same aid, name, service)', async () => {
    const before = accessories.map((a) => ({ aid: a.aid, name: a.name, type: a.serviceType })).sort((x, y) => x.aid - y.aid);
    ctrl.close();
    await run.stop();
    run = await startHomebridge({ major, platform, storage: run.storage, port: run.port, username: run.username });
    await run.waitFor(/SpeakerHub hub running in Homebridge/);
    ctrl = Controller.reuse(run, ctrl.pairing);
    const after = (await ctrl.accessories()).map((a) => ({ aid: a.aid, name: a.name, type: a.serviceType })).sort((x, y) => x.aid - y.aid);
    expect(after).toEqual(before);
    // And they work: the restored Kitchen accessory controls the (restarted) hub.
    accessories = await ctrl.accessories();
    const k = byName('Kitchen');
    await until(async () => (await ctrl.read(k.aid, k.iid[HAP.StatusFault])).value === 0, 'Kitchen reachable again');
    await ctrl.write(k.aid, k.iid[HAP.Brightness], 40);
    expect((await rest.op('get_volume_device', { DeviceID: await rest.idOf('Kitchen') })).Volume).toBe('20');
  });
});

import { EventEmitter } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { startHub, TEST_TOKEN, type TestHub, virtualOf } from '../helpers/hub';
import { homekitName } from '../../src/homebridge/names';
import { percentToVolume, volumeToPercent } from '../../src/homebridge/volume-map';
import { SpeakerHubPlatform } from '../../src/homebridge/platform';
import type { API, PlatformConfig } from '../../src/homebridge/homebridge-api';
import { CACHE, Controller, freePort, HAP, installHomebridgeDeps, until, type ControllerAccessory, type HomebridgeRun } from './helpers';

// Fast cases in-process: the platform on real hap-nodejs (the one Homebridge 1 runs on) and
// Homebridge's own PlatformAccessory, published on loopback and driven by hap-controller;
// only Homebridge's process and config loading are left out.

jest.setTimeout(30_000);
beforeAll(() => installHomebridgeDeps(), 10 * 60_000);

class MiniHomebridge {
  readonly hap: any = require(join(CACHE, 'hb1/node_modules/homebridge/node_modules/hap-nodejs'));
  readonly bridge: any;
  readonly events = new EventEmitter();
  readonly lines: string[] = [];
  registered = 0;
  port = 0;
  readonly username = '0E:44:55:66:77:88';
  readonly api: API;
  readonly log = {
    info: (m: string) => this.lines.push(`info ${m}`),
    warn: (m: string) => this.lines.push(`warn ${m}`),
    error: (m: string) => this.lines.push(`error ${m}`),
    debug: (m: string) => this.lines.push(`debug ${m}`),
  };

  constructor(readonly storage: string) {
    const { PlatformAccessory } = require(join(CACHE, 'hb1/node_modules/homebridge/lib/platformAccessory'));
    // hap-nodejs keeps one storage path per process: the first mini Homebridge sets it.
    try {
      this.hap.HAPStorage.setCustomStoragePath(storage);
    } catch {
      /* already set by an earlier test of this file */
    }
    this.bridge = new this.hap.Bridge('Mini', this.hap.uuid.generate(`mini:${storage}`));
    this.api = {
      version: 2.7,
      serverVersion: 'mini',
      hap: this.hap,
      platformAccessory: PlatformAccessory,
      user: { storagePath: () => storage },
      registerPlatform: () => undefined,
      registerPlatformAccessories: (_p: string, _n: string, accs: any[]) => {
        this.registered += accs.length;
        for (const a of accs) this.bridge.addBridgedAccessory(a._associatedHAPAccessory);
      },
      unregisterPlatformAccessories: (_p: string, _n: string, accs: any[]) => {
        for (const a of accs) this.bridge.removeBridgedAccessory(a._associatedHAPAccessory);
      },
      updatePlatformAccessories: () => undefined,
      on: (e: string, f: () => void) => this.events.on(e, f),
    } as unknown as API;
  }

  async publish(): Promise<HomebridgeRun> {
    const listening = new Promise<number>((r) => this.bridge.once('listening', r));
    this.bridge.publish({
      username: this.username,
      pincode: '031-45-154',
      port: 0,
      category: this.hap.Categories.BRIDGE,
      bind: ['lo'],
      advertiser: 'ciao',
    });
    this.port = await listening;
    return { username: this.username, port: this.port } as HomebridgeRun;
  }

  async close(): Promise<void> {
    this.events.emit('shutdown');
    await this.bridge.unpublish();
    this.bridge.destroy();
  }
}

describe('the platform on real hap-nodejs, remote hub in this process', () => {
  let hub: TestHub;
  let hb: MiniHomebridge;
  let ctrl: Controller;
  let accessories: ControllerAccessory[];
  let storage: string;
  let hubPort: number;
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => unhandled.push(e);
  const byName = (n: string) => accessories.find((a) => a.name === n)!;

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    storage = await mkdtemp(join(tmpdir(), 'speakerhub-mini-hb-'));
    hubPort = await freePort();
    hub = await startHub({ server: { port: hubPort }, speakers: { virtual: { count: 3, names: ['Desk', 'Porch', 'Garage'] } } });
    hb = new MiniHomebridge(storage);
    const config: PlatformConfig = {
      platform: 'SpeakerHub',
      hub: { mode: 'remote', url: hub.base, token: TEST_TOKEN },
      speakers: [
        { name: 'Porch', service: 'speaker' },
        { name: 'Garage', service: 'switch' },
      ],
    };
    new SpeakerHubPlatform(hb.log, config, hb.api);
    const run = await hb.publish();
    hb.events.emit('didFinishLaunching');
    await until(() => hb.registered === 3, 'three accessories');
    ctrl = await Controller.pair(run);
    accessories = await ctrl.accessories();
  });

  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    ctrl?.close();
    await hb?.close();
    await hub?.close();
    await rm(storage, { recursive: true, force: true });
  });

  test('per-speaker services: speaker (Mute + Volume) and switch (On only)', () => {
    expect(byName('Porch').serviceType).toBe(HAP.services.speaker);
    expect(byName('Porch').iid[HAP.Volume]).toBeDefined();
    expect(byName('Garage').serviceType).toBe(HAP.services.switch);
    expect(byName('Garage').iid[HAP.Brightness]).toBeUndefined();
    expect(byName('Desk').serviceType).toBe(HAP.services.lightbulb);
  });

  test("Mute is the speaker's own mute (set_mute_device): its level stays; unmuting reads back false", async () => {
    const p = byName('Porch');
    const id = virtualOf(hub.hub).speakers()[1].id;
    await hub.op('set_volume_device', { DeviceID: id, Volume: '23' });
    await until(async () => (await ctrl.read(p.aid, p.iid[HAP.Volume])).value === 46, 'Volume 46');
    await ctrl.write(p.aid, p.iid[HAP.Mute], true);
    expect(await hub.op('get_mute_device', { DeviceID: id })).toEqual({ Mute: 'true' });
    expect(virtualOf(hub.hub).speakers()[1].isMuted()).toBe(true);
    expect((await hub.op('get_volume_device', { DeviceID: id })).Volume).toBe('23');
    await until(() => ctrl.isOn(p.aid, p.iid[HAP.Mute]), 'Mute reads true');
    await ctrl.write(p.aid, p.iid[HAP.Mute], false);
    expect(await hub.op('get_mute_device', { DeviceID: id })).toEqual({ Mute: 'false' });
    expect(virtualOf(hub.hub).speakers()[1].isMuted()).toBe(false);
  });

  test('a hub that goes away: StatusFault, writes answer a HAP status (no exception escapes); it comes back and works', async () => {
    const d = byName('Desk');
    await hub.close();
    await until(async () => (await ctrl.read(d.aid, d.iid[HAP.StatusFault])).value === 1, 'StatusFault once the hub is gone');
    await expect(ctrl.write(d.aid, d.iid[HAP.Brightness], 30)).rejects.toMatchObject({ status: -70402 });
    hub = await startHub({ server: { port: hubPort }, speakers: { virtual: { count: 3, names: ['Desk', 'Porch', 'Garage'] } } });
    await until(() => hb.lines.filter((l) => /Following the hub's events/.test(l)).length >= 2, 'the reconnect', 15_000);
    await until(async () => (await ctrl.read(d.aid, d.iid[HAP.StatusFault])).value === 0, 'StatusFault cleared after the reconnect');
    await ctrl.write(d.aid, d.iid[HAP.Brightness], 30);
    expect((await hub.op('get_volume_device', { DeviceID: virtualOf(hub.hub).speakers()[0].id })).Volume).toBe('15');
    expect(unhandled).toEqual([]);
  });

  test('a speaker that fails to play answers a HAP status and the log says why', async () => {
    const g = byName('Garage');
    await hub.op('stop_play');
    // The in-process hub has sample tracks, so make the play fail at the speaker instead.
    virtualOf(hub.hub).speakers()[2].failNextPlay('injected');
    await expect(ctrl.write(g.aid, g.iid[HAP.On], true)).rejects.toMatchObject({ status: -70402 });
    expect(hb.lines.some((l) => /^warn Garage .*write: .*injected/.test(l))).toBe(true);
    expect(unhandled).toEqual([]);
  });
});

describe('nothing starts unless configured', () => {
  test('an embedded hub without drivers starts nothing and says what is missing', async () => {
    const storage = await mkdtemp(join(tmpdir(), 'speakerhub-mini-hb-'));
    const hb = new MiniHomebridge(storage);
    new SpeakerHubPlatform(hb.log, { platform: 'SpeakerHub' }, hb.api);
    hb.events.emit('didFinishLaunching');
    await until(() => hb.lines.some((l) => l.includes('No speaker drivers are configured')), 'the warning');
    expect(hb.registered).toBe(0);
    hb.events.emit('shutdown');
    await rm(storage, { recursive: true, force: true });
  });

  test('a bad configuration is logged naming the key, never thrown into Homebridge', async () => {
    const storage = await mkdtemp(join(tmpdir(), 'speakerhub-mini-hb-'));
    const hb = new MiniHomebridge(storage);
    expect(() => new SpeakerHubPlatform(hb.log, { platform: 'SpeakerHub', hub: { mode: 'remote' } }, hb.api)).not.toThrow();
    expect(hb.lines.join('\n')).toContain('hub.url: is required when hub.mode is "remote"');
    await rm(storage, { recursive: true, force: true });
  });
});

describe('mappings', () => {
  test('volume ↔ percent: percent = 2 × volume, volume = round(percent / 2), round trip exact', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 50 }), (v) => percentToVolume(volumeToPercent(v)) === v && volumeToPercent(v) === 2 * v));
    fc.assert(fc.property(fc.integer({ min: 0, max: 100 }), (p) => percentToVolume(p) === Math.round(p / 2)));
  });

  test.each([
    ['Kitchen', 'Kitchen'],
    ['Büro – Regal', 'Büro Regal'],
    ["Tom's Room: Sonos/Play:1", "Tom's Room: Sonos/Play:1"],
    ['  "Living Room" (2)  ', 'Living Room 2'],
    ['Bath 🛁', 'Bath'],
    ['Office Desk!', 'Office Desk'],
    ['!!!', 'Speaker 1234'],
  ])('HomeKit name of %j is %j', (input, out) => {
    expect(homekitName(input, 'Speaker 1234')).toBe(out);
  });
});

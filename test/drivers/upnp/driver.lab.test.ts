/**
 * The driver's discovery bookkeeping against a fake renderer on loopback, with a manual clock:
 * SSDP alive/byebye (fed in directly: no multicast is sent from a test's own namespace),
 * max-age expiry, static renderers and their periodic re-check, and resubscription on return.
 * The real protocol behaviour is covered by upnp.test.ts against gmediarender.
 */
import { once } from 'node:events';
import { ManualClock } from '../../../src/core/clock';
import { UpnpDriver } from '../../../src/drivers/upnp';
import { UpnpConfigSchema } from '../../../src/drivers/upnp/config';
import { MEDIA_RENDERER } from '../../../src/protocols/upnp/description';
import type { UpnpSpeaker } from '../../../src/drivers/upnp/renderer';
import type { SsdpAlive } from '../../../src/protocols/upnp/ssdp';
import { createLogger } from '../../../src/logger';
import { FakeRenderer, UDN } from './fake-renderer';
import { eventually } from '../../helpers/wait';

const logger = createLogger({ level: 'silent' });

function alive(fake: FakeRenderer, extra: Partial<SsdpAlive> = {}): SsdpAlive {
  return {
    udn: UDN,
    usn: `${UDN}::${MEDIA_RENDERER}`,
    type: MEDIA_RENDERER,
    location: fake.location,
    maxAgeSeconds: 100,
    via: 'notify',
    from: '127.0.0.1',
    ...extra,
  };
}

/** The driver's SSDP handlers, fed directly. */
function ssdpOf(driver: UpnpDriver): { onAlive(m: SsdpAlive): void; onByeBye(m: { udn: string; usn: string; type: string; from: string }): void } {
  return driver as unknown as { onAlive(m: SsdpAlive): void; onByeBye(m: { udn: string; usn: string; type: string; from: string }): void };
}

describe('UpnpDriver discovery bookkeeping', () => {
  let fake: FakeRenderer;
  let driver: UpnpDriver | undefined;
  let clock: ManualClock;

  beforeEach(async () => {
    fake = new FakeRenderer();
    await fake.start();
    clock = new ManualClock(Date.now());
  });
  afterEach(async () => {
    await driver?.stop();
    driver = undefined;
    await fake.stop();
  });

  const make = (config: Record<string, unknown>) =>
    new UpnpDriver({ config: UpnpConfigSchema.parse({ ssdp: false, requestTimeoutMs: 1000, ...config }), address: '127.0.0.1', clock, logger });

  test('announced renderer: added with its record; expiry without re-announcement makes it unavailable; back on alive', async () => {
    driver = make({});
    await driver.start();
    const added = once(driver, 'speakerAdded');
    ssdpOf(driver).onAlive(alive(fake));
    const [speaker] = (await added) as [UpnpSpeaker];
    expect(speaker.available).toBe(true);
    expect(speaker.info()).toMatchObject({
      name: 'Fake & Co',
      modelName: 'FakeRender',
      version: '3.1',
      ipAddress: '127.0.0.1',
      port: fake.port,
      role: 21,
      wifiSignalStrength: 0,
      macAddress: '',
    });
    expect(speaker.volume).toBe(20);
    expect(fake.subscribes).toBe(2);
    await speaker.setVolume(17);
    expect(fake.volumeSets).toEqual([34]);

    // A re-announcement inside max-age keeps it; silence past max-age (and no answer) does not.
    clock.advance(90_000);
    ssdpOf(driver).onAlive(alive(fake));
    // The re-announcement renews both subscriptions (SUBSCRIBE with their SIDs): wait for both
    // to arrive, or a renewal still in flight when the renderer stops would count or not by luck.
    await eventually(() => fake.subscribes === 4, 5000, 'the two renewals');
    clock.advance(90_000);
    expect(speaker.available).toBe(true);
    await fake.stop();
    const gone = once(speaker, 'availability');
    clock.advance(30_000);
    expect(await gone).toEqual([false]);

    await fake.start();
    const back = once(speaker, 'availability');
    ssdpOf(driver).onAlive(alive(fake));
    expect(await back).toEqual([true]);
    expect(fake.subscribes).toBe(6); // subscriptions restored: two new SUBSCRIBEs
    expect(driver.speakers()).toHaveLength(1);

    const bye = once(speaker, 'availability');
    ssdpOf(driver).onByeBye({ udn: UDN, usn: `${UDN}::upnp:rootdevice`, type: 'upnp:rootdevice', from: '127.0.0.1' });
    expect(await bye).toEqual([false]);
  });

  test('a renderer that comes back at another address (same UDN) is re-resolved: same DeviceID, new address, controllable', async () => {
    driver = make({});
    await driver.start();
    const added = once(driver, 'speakerAdded');
    ssdpOf(driver).onAlive(alive(fake));
    const [speaker] = (await added) as [UpnpSpeaker];
    const id = speaker.id;
    // The renderer restarts on another port (DHCP lease, app restart): the old address is dead.
    await fake.stop();
    const moved = new FakeRenderer();
    await moved.start();
    try {
      ssdpOf(driver).onAlive(alive(moved));
      for (let i = 0; i < 100 && speaker.info().port !== moved.port; i++) await new Promise((r) => setTimeout(r, 20));
      expect(speaker.info().port).toBe(moved.port);
      expect(speaker.id).toBe(id);
      expect(driver.speakers()).toHaveLength(1);
      expect(speaker.available).toBe(true);
      await speaker.setVolume(10);
      expect(moved.volumeSets).toEqual([20]);
      expect(moved.subscribes).toBe(2); // events now come from the new address
    } finally {
      await driver.stop();
      driver = undefined;
      await moved.stop();
    }
  });

  test('announcements of other device types do not add anything; a renderer that is unreachable is not added', async () => {
    driver = make({});
    await driver.start();
    const added = jest.fn();
    driver.on('speakerAdded', added);
    ssdpOf(driver).onAlive(alive(fake, { type: 'urn:schemas-upnp-org:device:MediaServer:1' }));
    ssdpOf(driver).onAlive(alive(fake, { udn: 'uuid:other', location: 'http://127.0.0.1:1/desc.xml' }));
    // Positive signal: the one lookup started (the renderer's; the MediaServer is not looked at) has finished, empty-handed.
    const lookups = [...(driver as unknown as { resolving: Map<string, Promise<unknown>> }).resolving.values()];
    expect(lookups).toHaveLength(1);
    expect(await lookups[0]).toBeUndefined();
    expect(added).not.toHaveBeenCalled();
  });

  test('static renderer: found without SSDP, checked periodically, found again', async () => {
    driver = make({ renderers: [fake.location], recheckIntervalSeconds: 5 });
    const added = once(driver, 'speakerAdded');
    await driver.start();
    const [speaker] = (await added) as [UpnpSpeaker];
    expect(speaker.available).toBe(true);

    await fake.stop();
    const gone = once(speaker, 'availability');
    clock.advance(5_000);
    expect(await gone).toEqual([false]);

    await fake.start();
    const back = once(speaker, 'availability');
    clock.advance(5_000);
    expect(await back).toEqual([true]);
  });
});

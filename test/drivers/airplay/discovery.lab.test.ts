import { AirPlayConfigSchema } from '../../../src/drivers/airplay/config';
import { parseRaopName } from '../../../src/drivers/airplay/discovery';
import { AirPlayDriver } from '../../../src/drivers/airplay/driver';
import { createLogger } from '../../../src/logger';
import { labSuite } from '../../helpers/labs';
import { ReceiverLab, canRunReceivers, until } from './harness';

const describeIf = labSuite(
  'the AirPlay lab',
  canRunReceivers() ? undefined : 'shairport-sync, avahi-daemon, dbus-daemon, ffmpeg or root (for namespaces) is missing',
);

jest.setTimeout(120_000);

test('RAOP instance names: MAC@Name', () => {
  expect(parseRaopName('0A1B2C3D4E5F@Kitchen')).toEqual({ mac: '0A:1B:2C:3D:4E:5F', name: 'Kitchen' });
  expect(parseRaopName('Just a name')).toEqual({ mac: '', name: 'Just a name' });
});

/**
 * mDNS discovery on the lab's private bridge only (the hub side binds its multicast socket to
 * the bridge's address; each receiver's avahi-daemon publishes on its namespace's eth0).
 */
describeIf('AirPlay discovery by mDNS (_raop._tcp) on the lab bridge', () => {
  let lab: ReceiverLab;
  let driver: AirPlayDriver;

  beforeAll(() => {
    lab = new ReceiverLab();
  });
  afterAll(async () => {
    await driver?.stop();
    lab?.close();
  });

  test('receivers are found with their advertised name; one that restarts is the same speaker', async () => {
    const a = await lab.add({ name: 'Attic' });
    await lab.add({ name: 'Garage' });
    driver = new AirPlayDriver({
      config: AirPlayConfigSchema.parse({ discovery: true }),
      logger: createLogger({ level: 'silent' }),
      version: 'test',
      networkAddress: lab.hubAddress,
      interfaceName: lab.bridge,
    });
    await driver.start();
    await until('both receivers discovered', () => driver.speakers().filter((s) => s.available).length === 2, 30_000);
    const names = driver
      .speakers()
      .map((s) => s.info().name)
      .sort();
    expect(names).toEqual(['Attic', 'Garage']);
    const attic = driver.speakers().find((s) => s.info().name === 'Attic')!;
    expect(attic.info().ipAddress).toBe(a.host);
    lab.kill(a);
    await until('the killed receiver unavailable', () => !attic.available, 30_000);
    await lab.startReceiver(a);
    await until('the same speaker available again', () => attic.available, 30_000);
    expect(driver.speakers()).toHaveLength(2);
  });
});

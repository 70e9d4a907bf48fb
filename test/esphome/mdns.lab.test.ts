import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LAB_NETWORKS } from '../helpers/lab-networks';
import { labSuite } from '../helpers/labs';
import { Lan, LAN_IFNAME, lanUnavailableReason } from '../drivers/upnp/lan';
import { ensureBuilt } from '../drivers/upnp/lab';
import { JsonLines } from '../drivers/upnp/processes';
import { eventually } from '../helpers/wait';

/**
 * The hub's `_esphomelib._tcp` advertisement, found by a real mDNS browser (bonjour-service's
 * Browser) in another network namespace of a private LAN, with the TXT keys ESPHome devices
 * send (mac, version, friendly_name, api_encryption); withdrawn (goodbye) when the hub stops.
 * The hub is then reachable at the advertised address and port.
 */
jest.setTimeout(90_000);
const REPO = join(__dirname, '..', '..');
const { prefix, subnet } = LAB_NETWORKS.esphome;

interface Line {
  evt: string;
  name?: string;
  port?: number;
  txt?: Record<string, string>;
  addresses?: string[];
  status?: { name: string; mac: string; port: number; mdns?: { instance: string } };
}

labSuite('the ESPHome mDNS lab', lanUnavailableReason())('ESPHome mDNS advertisement', () => {
  let lan: Lan;
  let tmp: string;

  beforeAll(async () => {
    ensureBuilt();
    tmp = mkdtempSync(join(tmpdir(), 'speakerhub-esphome-mdns-'));
    lan = await Lan.create({ prefix, subnet, hosts: ['hub', 'ha'] });
  });

  afterAll(async () => {
    await lan?.destroy();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test('a browser on the LAN finds the hub with ESPHome’s TXT keys, and sees it withdrawn at shutdown', async () => {
    const browser = new JsonLines<Line>(lan.spawn('ha', process.execPath, [join(REPO, 'test/esphome/mdns-browse.js'), lan.host('ha').address]));
    await browser.waitFor((e) => e.evt === 'ready', 10_000, 'the browser');
    const config = {
      dataDir: join(tmp, 'data'),
      server: { host: '127.0.0.1', port: 0, token: 'esphome-mdns-token-0123456789' },
      media: { samples: false },
      network: { interface: LAN_IFNAME },
      speakers: { virtual: { count: 2 } },
      esphome: { enabled: true, encryptionKey: 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=' },
      log: { level: 'debug' },
    };
    const hub = new JsonLines<Line>(
      lan.spawn('hub', process.execPath, [join(REPO, 'test/esphome/hub-main.js'), JSON.stringify({ config, logFile: join(tmp, 'hub.log') })], {
        cwd: REPO,
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    const ready = await hub.waitFor((e) => e.evt === 'ready', 30_000, 'the hub');
    const status = ready.status!;
    expect(status.port).toBe(6053);
    const up = await browser.waitFor((e) => e.evt === 'up' && e.name === status.name, 20_000, 'the advertisement');
    expect(up.port).toBe(6053);
    expect(up.addresses).toEqual([lan.host('hub').address]);
    expect(up.txt).toMatchObject({
      mac: status.mac.replace(/:/g, '').toLowerCase(),
      friendly_name: 'SpeakerHub',
      api_encryption: 'Noise_NNpsk0_25519_ChaChaPoly_SHA256',
    });
    expect(up.txt!.version).toMatch(/^\d{4}\.\d+\.\d+$/);

    // Reachable where it is advertised: its Noise server hello names it.
    const sock = connect(up.port!, up.addresses![0]);
    sock.on('error', () => undefined);
    let got = '';
    sock.on('data', (d: Buffer) => (got += d.toString('latin1')));
    sock.write(Buffer.from([0x01, 0x00, 0x00]));
    await eventually(() => got.includes(`${status.name}\0`), 10_000, 'the server hello at the advertised address');
    sock.destroy();

    hub.child.kill('SIGTERM');
    await browser.waitFor((e) => e.evt === 'down' && e.name === status.name, 10_000, 'the goodbye at shutdown');
    await hub.waitFor((e) => e.evt === 'stopped', 10_000, 'the hub stopped');
    browser.child.kill('SIGTERM');
  });
});

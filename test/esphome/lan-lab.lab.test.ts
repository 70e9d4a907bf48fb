import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LAB_NETWORKS } from '../helpers/lab-networks';
import { labSuite } from '../helpers/labs';
import { Lan, lanUnavailableReason } from '../drivers/upnp/lan';
import { ensureBuilt } from '../drivers/upnp/lab';
import { JsonLines } from '../drivers/upnp/processes';
import { eventually } from '../helpers/wait';

/**
 * Issue 32 on a real LAN: the hub in its own network namespace, Home Assistant's side (the
 * @2colors/esphome-native-api client, this test process) on "another machine". A play_media of
 * a URL at the hub's loopback or at the hub's own LAN address is refused (the hub logs it); a
 * URL at the client's own address plays (the hub's speaker fetches it). esphome.allow admits
 * the LAN's subnet.
 */
jest.setTimeout(90_000);
const REPO = join(__dirname, '..', '..');
const { prefix, subnet } = LAB_NETWORKS.esphomeLan;
const { Client } = require('@2colors/esphome-native-api');

interface Line {
  evt: string;
  status?: { port: number };
}

labSuite('the ESPHome LAN lab', lanUnavailableReason())('ESPHome media URLs from a client on another machine', () => {
  let lan: Lan;
  let tmp: string;
  let web: Server;
  const requests: string[] = [];

  beforeAll(async () => {
    ensureBuilt();
    tmp = mkdtempSync(join(tmpdir(), 'speakerhub-esphome-lan-'));
    lan = await Lan.create({ prefix, subnet, hosts: ['hub'] });
    // The client's own web server (Home Assistant proxies media from itself), on its LAN address.
    web = createServer((req, res) => {
      requests.push(req.url ?? '');
      res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': 0 });
      res.end();
    });
    await new Promise<void>((r) => web.listen(0, lan.root.address, r));
  });

  afterAll(async () => {
    web?.closeAllConnections();
    await new Promise((r) => (web ? web.close(r) : r(undefined)));
    await lan?.destroy();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test('URLs at the hub’s machine are refused; a URL at the client’s own address plays', async () => {
    const logFile = join(tmp, 'hub.log');
    const config = {
      dataDir: join(tmp, 'data'),
      server: { host: '127.0.0.1', port: 0, token: 'esphome-lan-token-0123456789' },
      media: { samples: false },
      speakers: { virtual: { count: 1 } },
      esphome: { enabled: true, allow: [`${subnet}.0/24`] },
      log: { level: 'debug' },
    };
    const hub = new JsonLines<Line>(
      lan.spawn('hub', process.execPath, [join(REPO, 'test/esphome/hub-main.js'), JSON.stringify({ config, logFile })], {
        cwd: REPO,
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    let client: any;
    try {
      const ready = await hub.waitFor((e) => e.evt === 'ready', 30_000, 'the hub');
      const hubAddress = lan.host('hub').address;
      client = new Client({ host: hubAddress, port: ready.status!.port, reconnect: false, clientInfo: 'jest-lan-lab' });
      client.on('error', () => undefined);
      const initialized = new Promise<void>((r) => client.once('initialized', r));
      client.connect();
      await initialized;
      const player = (Object.values(client.entities) as { config: { objectId: string }; setMediaUrl(u: string): void }[]).find(
        (e) => e.config.objectId !== 'all_speakers',
      )!;
      const log = () => readFileSync(logFile, 'utf8');
      const refusals = () =>
        log()
          .split('\n')
          .filter((l) => l.includes('LocalUrlRefused'));

      player.setMediaUrl('http://127.0.0.1:8123/loopback.wav');
      await eventually(
        () => refusals().some((l) => l.includes('127.0.0.1:8123') || l.includes(lan.root.address)),
        10_000,
        'the loopback URL refused',
      );
      player.setMediaUrl(`http://${hubAddress}:8123/hub-address.wav`);
      await eventually(() => refusals().length >= 2, 10_000, 'the hub-address URL refused');
      expect(refusals()[0]).toContain(`"client":"${lan.root.address}"`);

      const port = (web.address() as AddressInfo).port;
      player.setMediaUrl(`http://${lan.root.address}:${port}/own.wav`);
      await eventually(() => requests.includes('/own.wav'), 15_000, 'the speaker fetching the client’s own URL');
      expect(refusals()).toHaveLength(2);
    } finally {
      client?.disconnect();
      hub.child.kill('SIGTERM');
      await hub.waitFor((e) => e.evt === 'stopped', 10_000, 'the hub stopped').catch(() => undefined);
    }
  });
});

import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { CommandRunner } from '../../src/esphome/commands';
import { esphomeBannerLines } from '../../src/esphome/definition';
import type { EsphomeExtension } from '../../src/esphome/extension';
import { isHubMachine, isOnHubMachine, pointsAtHubMachine, refusesClientUrl } from '../../src/net/url-target';
import { startHub, virtualOf, type TestHub } from '../helpers/hub';
import { mediaServer } from './media-server';
import { HELLO, rawClient } from './raw-client';
import { eventually } from '../helpers/wait';

/**
 * Issue 32's LAN rules on the ESPHome native API: esphome.allow (a host not on it is reset
 * before a byte is read), a per-address connection cap under the global one, and media URLs
 * at the hub's own machine refused unless the client runs there itself (Home Assistant beside
 * the hub) or esphome.allowLocalUrls. Real clients: @2colors/esphome-native-api and raw TCP.
 */
jest.setTimeout(60_000);
const { Client } = require('@2colors/esphome-native-api');

/** A real client that resolves on 'initialized' or rejects on its first error/disconnect. */
function connectClient(port: number): { client: any; ready: Promise<void> } {
  const client = new Client({ host: '127.0.0.1', port, reconnect: false, clientInfo: 'jest-lan' });
  const ready = new Promise<void>((resolve, reject) => {
    client.once('initialized', resolve);
    client.once('error', (e: Error) => reject(e));
    client.once('disconnected', () => reject(new Error('disconnected')));
  });
  client.connect();
  return { client, ready };
}

/** A non-loopback, non-link-local address of this machine, if it has one. */
function ownLanAddress(): string | undefined {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (!a.internal && a.family === 'IPv4' && !a.address.startsWith('169.254.')) return a.address;
  return undefined;
}

describe('the URL policy (src/net/url-target.ts)', () => {
  test('loopback, link-local, 0.0.0.0, localhost and the machine’s own addresses are the hub’s machine', async () => {
    for (const h of ['127.0.0.1', '127.9.9.9', '::1', '169.254.1.1', 'fe80::1', '0.0.0.0', 'localhost', 'a.localhost', '::ffff:127.0.0.1'])
      expect([h, await isHubMachine(h)]).toEqual([h, true]);
    const lan = ownLanAddress();
    if (lan) expect(await isHubMachine(lan)).toBe(true);
    expect(await isHubMachine('192.0.2.10')).toBe(false);
    expect(await pointsAtHubMachine('http://[::1]:8123/x')).toBe(true);
    expect(await pointsAtHubMachine('not a url')).toBe(false);
  });

  test('a client elsewhere on the LAN may not hand URLs at the hub’s machine; one on the hub’s machine may', async () => {
    // 192.0.2.7 (TEST-NET-1) stands for a LAN host other than the hub.
    expect(await refusesClientUrl('http://127.0.0.1:8123/x', '192.0.2.7')).toBe(true);
    expect(await refusesClientUrl('http://localhost:8123/x', '192.0.2.7')).toBe(true);
    expect(await refusesClientUrl('http://169.254.169.254/latest/meta-data/', '192.0.2.7')).toBe(true);
    expect(await refusesClientUrl('http://0.0.0.0:22/', '192.0.2.7')).toBe(true);
    expect(await refusesClientUrl('http://127.0.0.1:8123/x', undefined)).toBe(true);
    const lan = ownLanAddress();
    if (lan) expect(await refusesClientUrl(`http://${lan}:8123/x`, '192.0.2.7')).toBe(true);
    // Home Assistant beside the hub: it connects from loopback (or the machine's address) and
    // hands URLs at 127.0.0.1 or the machine's address.
    expect(await refusesClientUrl('http://127.0.0.1:8123/x', '127.0.0.1')).toBe(false);
    expect(await refusesClientUrl('http://127.0.0.1:8123/x', '::ffff:127.0.0.1')).toBe(false);
    if (lan) {
      expect(await refusesClientUrl(`http://${lan}:8123/x`, '127.0.0.1')).toBe(false);
      expect(await refusesClientUrl('http://127.0.0.1:8123/x', lan)).toBe(false);
    }
    // The URL's host is the client's own address (its own link-local address) — not another's.
    expect(await refusesClientUrl('http://[fe80::5]:8123/x', 'fe80::5')).toBe(false);
    expect(await refusesClientUrl('http://[fe80::5]:8123/x', 'fe80::6')).toBe(true);
    // Elsewhere on the LAN or the internet: not the policy's business.
    expect(await refusesClientUrl('http://192.0.2.8/song.mp3', '192.0.2.7')).toBe(false);
    expect(isOnHubMachine('192.0.2.7')).toBe(false);
    expect(isOnHubMachine('127.0.0.2')).toBe(true);
  });
});

describe('esphome.allow', () => {
  let t: TestHub | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  test('a host not on the list is closed before anything is read; on the list, it is served', async () => {
    t = await startHub({ speakers: { virtual: { count: 1 } }, esphome: { enabled: true, port: 0, host: '127.0.0.1', allow: ['10.0.0.0/8'] } });
    let ext = t.hub.extension('esphome') as EsphomeExtension;
    expect(esphomeBannerLines(ext)).toContain('              no API token: 10.0.0.0/8 may control the speakers (esphome.allow)');
    expect(t.logs.some((l) => l.includes('plaintext, no API token: 10.0.0.0/8 may control the speakers'))).toBe(true);
    // A raw client: reset (often before its connect completes), having read nothing.
    const raw = connect(ext.status!.port, '127.0.0.1', () => raw.write(HELLO));
    let read = 0;
    raw.on('data', (d: Buffer) => (read += d.length));
    raw.on('error', () => undefined);
    await new Promise((r) => raw.once('close', r));
    expect(read).toBe(0);
    const refused = connectClient(ext.status!.port);
    await expect(refused.ready).rejects.toBeDefined();
    refused.client.disconnect();
    await eventually(() => t!.logs.some((l) => l.includes('allow-list')), 5000, 'the refusal logged');
    await t.close();

    t = await startHub({ speakers: { virtual: { count: 1 } }, esphome: { enabled: true, port: 0, host: '127.0.0.1', allow: ['127.0.0.1/32'] } });
    ext = t.hub.extension('esphome') as EsphomeExtension;
    const ok = connectClient(ext.status!.port);
    try {
      await ok.ready;
      expect(Object.keys(ok.client.entities)).toHaveLength(2);
    } finally {
      ok.client.disconnect();
    }
  });

  test('with no list and a key, the banner says a key is needed and any host may connect', async () => {
    t = await startHub({
      esphome: { enabled: true, port: 0, host: '127.0.0.1', encryptionKey: 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=' },
    });
    const lines = esphomeBannerLines(t.hub.extension('esphome') as EsphomeExtension);
    expect(lines).toContain('              key required; any LAN host may connect (esphome.allow)');
    expect(t.logs.some((l) => l.includes('no API token'))).toBe(false);
  });
});

describe('ESPHome per-address cap and media URLs', () => {
  let t: TestHub;
  let web: Awaited<ReturnType<typeof mediaServer>>;
  const ext = () => t.hub.extension('esphome') as EsphomeExtension;

  beforeAll(async () => {
    web = await mediaServer();
    t = await startHub({
      speakers: { virtual: { count: 1 } },
      esphome: { enabled: true, port: 0, host: '127.0.0.1', maxConnections: 32, maxConnectionsPerAddress: 3 },
    });
  });
  afterAll(async () => {
    await t?.close();
    await web?.close();
  });

  test('one address holds at most maxConnectionsPerAddress; another address is still served', async () => {
    const port = ext().status!.port;
    const mine = await Promise.all(Array.from({ length: 10 }, () => rawClient(port)));
    try {
      await eventually(() => mine.filter((c) => !c.closed()).length === 3, 10_000, 'all but 3 refused');
      expect(t.logs.some((l) => l.includes('maxConnectionsPerAddress'))).toBe(true);
      // 127.0.0.2 is another address (the global cap of 32 is far away): served.
      const other = await rawClient(port, '127.0.0.2');
      other.socket.write(HELLO);
      await eventually(() => other.ids().includes(2), 5000, 'HelloResponse to 127.0.0.2');
      other.socket.destroy();
    } finally {
      for (const c of mine) c.socket.destroy();
    }
    await eventually(() => ext().connections === 0, 5000, 'the connections gone');
  });

  test('a play of a loopback URL from a client elsewhere is refused and logged; from the hub’s machine it plays', async () => {
    // The server's own runner, as a command from a connection at 192.0.2.7 reaches it (a
    // client off this machine needs a network namespace; the policy is unit-tested above).
    const runner = (ext() as unknown as { server: { runner: CommandRunner } }).server.runner;
    const entity = ext().entities()[1];
    const req = { key: entity.key, has_command: false, command: 0, has_volume: false, volume: 0, has_announcement: false, announcement: false };
    await runner.run(entity, { ...req, has_media_url: true, media_url: web.url('/music-refused.wav') }, '192.0.2.7');
    await eventually(() => t.logs.some((l) => l.includes('LocalUrlRefused') && l.includes('192.0.2.7')), 5000, 'the refusal logged');
    expect(virtualOf(t.hub).speaker(0).state).not.toBe('playing');

    // Home Assistant on the hub's machine: a loopback client playing a loopback URL, end to end.
    const ha = connectClient(ext().status!.port);
    try {
      await ha.ready;
      const player = Object.values(ha.client.entities as Record<string, { config: { key: number }; setMediaUrl(u: string): void }>).find(
        (e) => e.config.key === entity.key,
      )!;
      player.setMediaUrl(web.url('/music-ha.wav'));
      await eventually(() => web.requests.some((r) => r.endsWith('/music-ha.wav')), 10_000, 'the speaker fetching the URL');
      expect(web.requests.some((r) => r.endsWith('/music-refused.wav'))).toBe(false);
    } finally {
      ha.client.disconnect();
    }
  });
});

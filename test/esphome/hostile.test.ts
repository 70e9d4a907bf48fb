import type { EsphomeExtension } from '../../src/esphome/extension';
import { startHub, type TestHub } from '../helpers/hub';
import { encodeMessage } from '../../src/esphome/messages';
import { frame, HELLO, rawClient } from './raw-client';
import { eventually } from '../helpers/wait';

/**
 * Hostile and broken clients of the native API: each is refused or dropped, its memory bounded,
 * and a well-behaved client (pinged throughout) and the hub go on unaffected.
 */
jest.setTimeout(60_000);

describe('ESPHome native API, bad input', () => {
  let t: TestHub;
  let port: number;
  let good: Awaited<ReturnType<typeof rawClient>>;
  const ext = () => t.hub.extension('esphome') as EsphomeExtension;
  /** The good client answers a ping: a PingResponse (8) arrives after this one is sent. */
  const goodStillServed = async () => {
    const before = good.ids().length;
    good.socket.write(frame(7));
    await eventually(() => good.ids().slice(before).includes(8), 5000, 'the good client’s PingResponse');
  };

  beforeAll(async () => {
    t = await startHub({
      speakers: { virtual: { count: 3 } },
      esphome: { enabled: true, port: 0, host: '127.0.0.1', maxConnections: 32, maxConnectionsPerAddress: 32, maxWriteBufferBytes: 256 * 1024 },
    });
    port = ext().status!.port;
    good = await rawClient(port);
    good.socket.write(HELLO);
    await eventually(() => good.ids().includes(2), 5000, 'HelloResponse');
  });

  afterAll(async () => {
    good?.socket.destroy();
    await t?.close();
  });

  test('a frame that does not decode is closed', async () => {
    const c = await rawClient(port);
    c.socket.write(frame(1, Buffer.from([0x0a, 0x7f, 0x01])));
    await eventually(c.closed, 5000, 'the connection closed');
    await goodStillServed();
  });

  test('a bad indicator byte is closed', async () => {
    const c = await rawClient(port);
    c.socket.write(Buffer.from([0x42, 1, 2, 3]));
    await eventually(c.closed, 5000, 'the connection closed');
  });

  test('a length beyond the bound is refused at once, before its bytes arrive', async () => {
    const c = await rawClient(port);
    c.socket.write(Buffer.concat([Buffer.from([0]), Buffer.from([0x80, 0x80, 0x80, 0x08]), Buffer.from([1])]));
    await eventually(c.closed, 5000, 'the connection closed');
    await goodStillServed();
  });

  test('an unknown message type is ignored, as ESPHome ignores it', async () => {
    const c = await rawClient(port);
    c.socket.write(Buffer.concat([HELLO, frame(9999, Buffer.from('whatever')), frame(7)]));
    await eventually(() => c.ids().includes(8), 5000, 'the PingResponse after the unknown message');
    expect(c.closed()).toBe(false);
    c.socket.destroy();
  });

  test('a request before HelloRequest closes the connection', async () => {
    const c = await rawClient(port);
    c.socket.write(frame(9));
    await eventually(c.closed, 5000, 'the connection closed');
    expect(c.ids()).not.toContain(10);
  });

  test('a client that never reads is dropped once its unread output passes the bound', async () => {
    const c = await rawClient(port);
    c.socket.pause();
    c.socket.write(HELLO);
    await eventually(() => ext().connections === 2, 5000, 'two connections');
    // Each ListEntitiesRequest (3 bytes) makes ~1 KB of answers; 20,000 of them far exceed every buffer.
    const burst = Buffer.concat(Array.from({ length: 20_000 }, () => frame(11)));
    c.socket.write(burst);
    await eventually(() => ext().connections === 1, 20_000, 'the reader-less client dropped');
    expect(t.logs.some((l) => l.includes('client does not read'))).toBe(true);
    c.socket.destroy();
    await goodStillServed();
  });

  test('a flood of commands: at most 16 run at once, the rest dropped; the hub stays responsive', async () => {
    const c = await rawClient(port);
    const key = ext().entities()[1].key;
    const cmds = Array.from({ length: 5000 }, (_, i) => {
      const { id, data } = encodeMessage('MediaPlayerCommandRequest', { key, has_volume: true, volume: (i % 50) / 50 });
      return frame(id, data);
    });
    c.socket.write(Buffer.concat([HELLO, ...cmds]));
    await eventually(() => t.logs.some((l) => l.includes('faster than they run')), 10_000, 'the flood noticed');
    await goodStillServed();
    c.socket.destroy();
  });

  test('1,000 connections: the cap holds, the rest are refused, the good client is served', async () => {
    const opened = await Promise.allSettled(Array.from({ length: 1000 }, () => rawClient(port)));
    const sockets = opened.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    try {
      await eventually(() => sockets.filter((s) => !s.closed()).length <= 31, 20_000, 'all but the cap refused');
      expect(ext().connections).toBeLessThanOrEqual(32);
      await goodStillServed();
    } finally {
      for (const s of sockets) s.socket.destroy();
    }
    await eventually(() => ext().connections === 1, 10_000, 'the connections gone');
    // A new client is admitted again.
    const again = await rawClient(port);
    again.socket.write(HELLO);
    await eventually(() => again.ids().includes(2), 5000, 'HelloResponse after the flood');
    again.socket.destroy();
  });
});

describe('ESPHome native API, encrypted, bad input', () => {
  let t: TestHub;
  let port: number;
  beforeAll(async () => {
    t = await startHub({
      speakers: { virtual: { count: 1 } },
      esphome: { enabled: true, port: 0, host: '127.0.0.1', encryptionKey: 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=' },
    });
    port = (t.hub.extension('esphome') as EsphomeExtension).status!.port;
  });
  afterAll(async () => {
    await t?.close();
  });

  test('a garbage handshake gets the ESPHome failure frame and is closed; a plaintext client too', async () => {
    const c = await rawClient(port);
    c.socket.write(Buffer.from([0x01, 0x00, 0x00, 0x01, 0x00, 0x05, 0x00, 1, 2, 3, 4]));
    await eventually(c.closed, 5000, 'the connection closed');
    const text = c.received().toString('latin1');
    expect(text).toContain('Handshake MAC failure');
    const p = await rawClient(port);
    p.socket.write(HELLO);
    await eventually(p.closed, 5000, 'the plaintext client closed');
    // The hub still answers a new client's hello with its server hello (protocol 1, name, MAC).
    const n = await rawClient(port);
    n.socket.write(Buffer.from([0x01, 0x00, 0x00]));
    await eventually(() => n.received().length > 4 && n.received()[3] === 0x01, 5000, 'the server hello');
    const mac = (t.hub.extension('esphome') as EsphomeExtension).status!.mac.replace(/:/g, '').toLowerCase();
    // As ESPHome's: protocol 1, the name, the MAC in aioesphomeapi's expected_mac form, each NUL-terminated.
    await eventually(() => n.received().toString('latin1').includes(`\0${mac}\0`), 5000, 'the server hello’s MAC');
    expect(n.received().toString('latin1')).toMatch(/speakerhub-[0-9a-f]{6}\0/);
    n.socket.destroy();
  });
});

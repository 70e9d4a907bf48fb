/**
 * The REST server against hostile and sloppy clients (issue 7 items 1, 3, 4, 9; issue 8):
 * stalled event streams, connection floods, trickling headers, log amplification, bare-LF
 * requests, raw UTF-8, missing Host, long Text. Everything over real TCP on loopback.
 */
import * as net from 'node:net';
import { parseConfig } from '../../src/hub-config';
import { startHub, TEST_TOKEN, type TestHub, virtualOf } from '../helpers/hub';
import { AUTH, expectErrorShape, rawRequest } from './util';
import { eventually } from '../helpers/wait';

/** Opens a raw TCP connection (optionally from another loopback address) and resolves once connected. */
function connect(base: string, localAddress?: string): Promise<net.Socket> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const s = net.connect({ port: Number(u.port), host: u.hostname, localAddress });
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}

/** Resolves when the socket is closed by the other side (or errors: a reset). */
function closed(s: net.Socket): Promise<void> {
  return new Promise((resolve) => {
    if (s.destroyed) return resolve();
    s.once('close', () => resolve());
    s.on('error', () => undefined);
  });
}

describe('event streams: bounded, capped, off the request path', () => {
  let h: TestHub;
  beforeAll(async () => {
    h = await startHub({
      speakers: { virtual: { count: 200 } },
      limits: { maxEventStreams: 3, eventStreamMaxQueued: 1000, eventStreamBufferKB: 16 },
    });
  });
  afterAll(async () => h.close());

  test('a client that stops reading is disconnected while a set_volume loop runs; a reading client keeps its stream', async () => {
    // A stalled client: sends the request, never reads a byte.
    const stalled = await connect(h.base);
    stalled.pause();
    stalled.write(`GET /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_TOKEN}\r\n\r\n`);
    // A healthy client reads everything.
    const healthy = await connect(h.base);
    let healthyBytes = 0;
    healthy.on('data', (d) => (healthyBytes += d.length));
    healthy.write(`GET /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_TOKEN}\r\n\r\n`);
    await eventually(() => h.hub.eventSubscribers === 2, 5000, 'two subscribers');
    const stalledGone = closed(stalled);
    // Each set_volume makes 200 volume events (~16 KB of stream); loop until the server drops the stalled client.
    let done = false;
    let calls = 0;
    void stalledGone.then(() => (done = true));
    const deadline = Date.now() + 60_000;
    while (!done && h.hub.eventSubscribers === 2 && Date.now() < deadline) {
      await h.op('set_volume', { Volume: String(calls++ % 50) });
    }
    await eventually(() => h.hub.eventSubscribers === 1, 10_000, 'the stalled stream to be dropped');
    expect(h.logs.join('')).toMatch(/event stream closed: its client does not read/);
    // The healthy stream is still served.
    const before = healthyBytes;
    await h.op('set_volume', { Volume: '7' });
    await eventually(() => healthyBytes > before, 5000, 'the healthy stream to receive the next events');
    healthy.destroy();
    stalled.destroy();
    await eventually(() => h.hub.eventSubscribers === 0, 5000, 'no subscribers left');
  }, 90_000);

  test('one stream more than limits.maxEventStreams is refused with Busy (HTTP 503)', async () => {
    const open: net.Socket[] = [];
    for (let i = 0; i < 3; i++) {
      const s = await connect(h.base);
      s.on('data', () => undefined);
      s.write(`GET /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_TOKEN}\r\n\r\n`);
      open.push(s);
    }
    await eventually(() => h.hub.eventSubscribers === 3, 5000, 'three streams');
    const r = await fetch(`${h.base}/api/v1/events`, { headers: AUTH, signal: AbortSignal.timeout(5000) });
    const body = (await r.json()) as any;
    expect(r.status).toBe(503);
    expectErrorShape(r.status, body);
    expect(body.ErrorCode).toBe('Busy');
    expect(body.ErrorMessage).toMatch(/maxEventStreams/);
    // Every refusal is answered; the log says so a bounded number of times (LimitedLog: 5 per 10 s).
    for (let i = 0; i < 20; i++) {
      const again = await fetch(`${h.base}/api/v1/events`, { headers: AUTH, signal: AbortSignal.timeout(5000) });
      expect(again.status).toBe(503);
      await again.body?.cancel();
    }
    expect(h.logs.filter((l) => l.includes('event stream refused')).length).toBeLessThanOrEqual(5);
    for (const s of open) s.destroy();
    await eventually(() => h.hub.eventSubscribers === 0, 5000, 'streams closed');
  });

  test('/favicon.ico is served without a token and no refusal is logged', async () => {
    const before = h.logs.filter((l) => l.includes('request refused')).length;
    const r = await fetch(`${h.base}/favicon.ico`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('image/svg+xml');
    expect(await r.text()).toMatch(/^<svg /);
    expect(h.logs.filter((l) => l.includes('request refused')).length).toBe(before);
  });

  test('a stream receives the volume events of a set_volume (through the bounded feed)', async () => {
    const s = await connect(h.base);
    let received = '';
    s.on('data', (d) => (received += d.toString()));
    s.write(`GET /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_TOKEN}\r\n\r\n`);
    await eventually(() => received.includes('event: playbackState'), 5000, 'the initial event');
    // The answer is written in the same turn the operation ran; the volume events come later.
    const answered = h.op('set_volume', { Volume: '33' });
    await answered;
    await eventually(() => received.includes('"volume":33'), 5000, 'the volume events');
    s.destroy();
  });
});

describe('connections: per-address and global caps, header timeout, refusals logged briefly', () => {
  let h: TestHub;
  beforeAll(async () => {
    h = await startHub({
      speakers: { virtual: { count: 2 } },
      limits: { maxConnectionsPerAddress: 5, maxConnections: 50, headersTimeoutSeconds: 1 },
    });
  });
  afterAll(async () => h.close());

  test('one address over its limit is cut off at once; another address is served', async () => {
    const held: net.Socket[] = [];
    for (let i = 0; i < 5; i++) held.push(await connect(h.base, '127.0.0.2'));
    // Reset by the server before any byte (the reset may even beat the client's 'connect').
    await connect(h.base, '127.0.0.2').then(closed, () => undefined);
    // The legitimate client on 127.0.0.1 still gets answers.
    expect(await h.op('device_count')).toEqual({ DeviceCount: '2' });
    expect(h.logs.join('')).toMatch(
      /REST server: connection refused, limit reached.*maxConnectionsPerAddress|maxConnectionsPerAddress.*REST server: connection refused/,
    );
    for (const s of held) s.destroy();
  });

  test('a client that trickles its header is dropped after the header timeout', async () => {
    const s = await connect(h.base, '127.0.0.3');
    s.on('data', () => undefined);
    s.write('GET /api/v1/device_count HTTP/1.1\r\n');
    const timer = setInterval(() => s.writable && s.write('X-a: b\r\n'), 200);
    await closed(s);
    clearInterval(timer);
    expect(h.logs.join('')).toMatch(/request not received within the header\/request timeout/);
  }, 15_000);

  test('refused requests with 15 KB paths cost under 300 log bytes each', async () => {
    const before = h.logs.join('').length;
    const path = `/api/v1/${'x'.repeat(15_000)}`;
    const n = 200;
    for (let i = 0; i < n; i++) {
      const r = await fetch(h.base + path, { headers: { Authorization: 'Bearer wrong-token-0123456789' } });
      const body = await r.text();
      expect(r.status).toBe(401);
      expect(body.length).toBeLessThan(1000);
    }
    const perRequest = (h.logs.join('').length - before) / n;
    expect(perRequest).toBeLessThan(300);
    // The echo in an unknown-operation answer is cut short too.
    const unknown = await fetch(h.base + path, { headers: AUTH });
    expect((await unknown.text()).length).toBeLessThan(1000);
  }, 30_000);
});

describe('sloppy but honest clients are served', () => {
  let h: TestHub;
  beforeAll(async () => {
    h = await startHub({ speakers: { virtual: { count: 2 } }, tts: { maxTextLength: 30_000 } });
  });
  afterAll(async () => h.close());

  test('bare-LF line ends get an answer at once', async () => {
    const u = new URL(h.base);
    const answer = await new Promise<string>((resolve, reject) => {
      const s = net.connect(Number(u.port), u.hostname, () => {
        s.write(
          `GET /api/v1/device_count?SessionToken=${h.session} HTTP/1.1\nHost: ${u.host}\nAuthorization: Bearer ${TEST_TOKEN}\nConnection: close\n\n`,
        );
      });
      let text = '';
      s.on('data', (d) => (text += d.toString()));
      s.on('close', () => resolve(text));
      s.on('error', reject);
      setTimeout(() => reject(new Error(`no answer within 3 s: ${JSON.stringify(text)}`)), 3000).unref();
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(answer).toContain('{"DeviceCount":"2"}');
  });

  test('raw UTF-8 in the request line is accepted and decoded', async () => {
    // An unknown DeviceID: the text must reach validation (not a parser error), and the target check names the speaker.
    const r = await rawRequest(
      h.base,
      `GET /api/v1/play_tts_selected_speakers?SessionToken=${h.session}&Text=Grüße aus Köln&DeviceIDList=99999999999999 HTTP/1.1`,
      AUTH,
      5000,
    );
    expect(r.body).toMatchObject({ Result: 'false', ErrorCode: 'DeviceNotFound' });
  });

  test('a request without Host gets the API error shape', async () => {
    const u = new URL(h.base);
    const text = await new Promise<string>((resolve, reject) => {
      const s = net.connect(Number(u.port), u.hostname, () =>
        s.write(`GET /api/v1/device_count HTTP/1.1\r\nAuthorization: Bearer ${TEST_TOKEN}\r\n\r\n`),
      );
      let t = '';
      s.on('data', (d) => (t += d.toString()));
      s.on('close', () => resolve(t));
      s.on('error', reject);
    });
    expect(text).toMatch(/^HTTP\/1\.1 400/);
    const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
    expectErrorShape(400, body);
    expect(body.ErrorMessage).toMatch(/Host/);
  });

  test('a Text over 16 KB reaches the TextTooLong check (tts.maxTextLength is reachable)', async () => {
    const r = await h.get(`/api/v1/play_tts_party_mode?SessionToken=${h.session}&Text=${'a'.repeat(30_001)}`);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ ErrorCode: 'TextTooLong', Parameter: 'Text' });
    // Percent-encoded multi-byte text of the maximum length fits the head, too.
    const umlauts = encodeURIComponent('ü'.repeat(30_001));
    const r2 = await h.get(`/api/v1/play_tts_party_mode?SessionToken=${h.session}&Text=${umlauts}`);
    expect(r2.body).toMatchObject({ ErrorCode: 'TextTooLong' });
  });
});

describe('public endpoints, CORS and the /v1 dialect', () => {
  let h: TestHub;
  beforeAll(async () => {
    h = await startHub({ speakers: { virtual: { count: 3 } } });
  });
  afterAll(async () => h.close());

  test('GET /healthz answers without a token: status, version, speakers, uptime', async () => {
    const r = await h.get('/healthz', {});
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'ok', version: expect.any(String), speakers: { total: 3, available: 3 } });
    expect(typeof r.body.uptime).toBe('number');
    virtualOf(h.hub).speakers()[0].vanish();
    await eventually(async () => (await h.get('/healthz', {})).body.speakers.available === 2, 5000, 'healthz to see the vanished speaker');
  });

  test('/v1/openapi.json is public like /api/v1/openapi.json', async () => {
    for (const p of ['/api/v1/openapi.json', '/v1/openapi.json']) {
      const r = await h.get(p, {});
      expect(r.status).toBe(200);
      expect(r.body.openapi).toBe('3.1.0');
    }
  });

  test('the OpenAPI document types parameters from their schemas (integers, ranges, patterns, lists)', async () => {
    const doc = (await h.get('/api/v1/openapi.json', {})).body;
    const param = (op: string, name: string) => doc.paths[`/api/v1/${op}`].get.parameters.find((p: any) => p.name === name);
    expect(param('set_volume', 'Volume').schema).toMatchObject({ type: 'integer', minimum: 0, maximum: 50 });
    expect(param('device_info', 'DeviceID').schema).toMatchObject({ type: 'string', pattern: expect.stringContaining('\\d') });
    expect(param('play_web_media', 'MediaUrl').schema).toMatchObject({ type: 'string', maxLength: 4096 });
    expect(param('play_tts', 'Text').schema).toMatchObject({ type: 'string', minLength: 1 });
    const list = param('play_tts_selected_speakers', 'DeviceIDList');
    expect(list).toMatchObject({
      style: 'form',
      explode: false,
      schema: { type: 'array', maxItems: 1000, items: { type: 'string', pattern: expect.any(String) } },
    });
    // No parameter is left as a bare, unconstrained string but the session token.
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const p of item.get.parameters) {
        if (p.name === 'SessionToken') continue;
        expect({ path, name: p.name, keys: Object.keys(p.schema).length > 1 }).toEqual({ path, name: p.name, keys: true });
      }
    }
  });

  test('a CORS preflight does not advertise HEAD (which answers 405)', async () => {
    const r = await fetch(`${h.base}/api/v1/device_count`, {
      method: 'OPTIONS',
      headers: { Origin: 'http://example.test', 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'authorization' },
    });
    expect(r.status).toBeLessThan(300);
    const methods = (r.headers.get('access-control-allow-methods') ?? '').split(',').map((m) => m.trim());
    expect(methods).toContain('GET');
    expect(methods).not.toContain('HEAD');
  });

  test('requests are logged at debug level (path only, no query)', async () => {
    await h.op('device_count');
    const lines = h.logs.filter((l) => l.includes('"msg":"request"'));
    expect(lines.some((l) => l.includes('/api/v1/device_count') && l.includes('"status":200'))).toBe(true);
    expect(lines.join('')).not.toContain(h.session);
  });
});

test('limits.* are validated and documented defaults apply', () => {
  expect(parseConfig({}).limits).toEqual({
    maxConnections: 2000,
    maxConnectionsPerAddress: 200,
    headersTimeoutSeconds: 10,
    requestTimeoutSeconds: 30,
    maxEventStreams: 100,
    eventStreamMaxQueued: 500,
    eventStreamBufferKB: 64,
    mediaMaxConnections: 1000,
    mediaMaxConnectionsPerAddress: 50,
    mediaSendTimeoutSeconds: 60,
    mediaUrlGraceSeconds: 60,
    ttsCacheMB: 200,
    ttsQueue: 16,
  });
  expect(() => parseConfig({ limits: { maxConnections: 0 } })).toThrow(/limits\.maxConnections/);
  expect(() => parseConfig({ limits: { maxConections: 5 } })).toThrow(/limits\.maxConections: unknown key/);
});

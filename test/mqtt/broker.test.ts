import { connectAsync, type MqttClient } from 'mqtt';
import { createLogger } from '../../src/logger';
import { KeyAuth } from '../../src/mqtt/auth';
import { EmbeddedBroker } from '../../src/mqtt/broker';
import { generateKey } from '../../src/mqtt/keys';
import { createServer, type Server } from 'node:http';

const keys = { publishKey: generateKey('pub'), subscribeKey: generateKey('sub') };
let broker: EmbeddedBroker;
let http: Server;
let url: string;
const clients: MqttClient[] = [];

async function client(opts: Record<string, unknown>, target = url): Promise<MqttClient> {
  const c = await connectAsync(target, { reconnectPeriod: 0, connectTimeout: 5000, ...opts });
  clients.push(c);
  return c;
}

function nextMessage(c: MqttClient, topic: string): Promise<string> {
  return new Promise((resolve) => {
    const on = (t: string, p: Buffer) => {
      if (t !== topic) return;
      c.off('message', on);
      resolve(p.toString());
    };
    c.on('message', on);
  });
}

beforeAll(async () => {
  http = createServer((_q, r) => r.end('x'));
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  broker = new EmbeddedBroker({
    auth: new KeyAuth(keys),
    logger: createLogger({ level: 'silent' }),
    tcp: { host: '127.0.0.1', port: 0 },
    httpServer: http,
    wsPath: '/mqtt',
    maxPacketBytes: 4096,
    maxClients: 50,
    drainTimeoutMs: 2000,
    hubClientId: 'speakerhub-test',
    isHubTopic: (t) => t.startsWith('speakerhub/bridge/state'),
  });
  await broker.start();
  url = `mqtt://127.0.0.1:${broker.address!.port}`;
});

afterAll(async () => {
  for (const c of clients) c.end(true);
  await broker.stop();
  await new Promise((r) => http.close(r));
});

describe('embedded broker: keys as credentials', () => {
  test('subscribe key + publish key publishes; a subscribe-key-only client receives', async () => {
    const reader = await client({ username: keys.subscribeKey });
    await reader.subscribeAsync('room/#');
    const writer = await client({ username: keys.subscribeKey, password: keys.publishKey });
    const got = nextMessage(reader, 'room/a');
    await writer.publishAsync('room/a', 'hello', { qos: 1 });
    expect(await got).toBe('hello');
  });

  test('an empty password is read-only too: its publishes reach nobody and it stays connected', async () => {
    const reader = await client({ username: keys.subscribeKey, password: keys.publishKey });
    await reader.subscribeAsync('ro/#');
    for (const password of ['', undefined]) {
      const ro = await client({ username: keys.subscribeKey, ...(password === undefined ? {} : { password }) });
      await ro.publishAsync('ro/x', 'from read-only', { qos: 1 });
      // A later message of a writer arrives first, proving the refused one was dropped, not delayed.
      const got = nextMessage(reader, 'ro/x');
      await (await client({ username: keys.subscribeKey, password: keys.publishKey })).publishAsync('ro/x', 'from writer', { qos: 1 });
      expect(await got).toBe('from writer');
      expect(ro.connected).toBe(true);
      await ro.publishAsync('ro/y', 'again', { qos: 1 }); // still acknowledged: the connection is alive
    }
  });

  test.each([
    ['a wrong subscribe key', { username: 'sub-wrong-wrong-wrong-wrong', password: keys.publishKey }],
    ['a wrong publish key', { username: keys.subscribeKey, password: 'pub-wrong-wrong-wrong' }],
    ['no username', {}],
    ['the publish key as username', { username: keys.publishKey }],
    ['the old in-process username of the hub (the hub has no credential now)', { username: 'speakerhub-internal', password: 'guess' }],
  ])('%s is refused with CONNACK not authorized', async (_what, creds) => {
    await expect(client(creds)).rejects.toMatchObject({ code: 5 });
  });

  test("nobody takes over the hub's client id", async () => {
    await expect(client({ clientId: 'speakerhub-test', username: keys.subscribeKey, password: keys.publishKey })).rejects.toMatchObject({ code: 5 });
  });

  test('hub topics are refused to other clients; retained messages of clients are not kept', async () => {
    const writer = await client({ username: keys.subscribeKey, password: keys.publishKey });
    await writer.publishAsync('speakerhub/bridge/state', '{"state":"offline"}', { qos: 1, retain: true });
    await writer.publishAsync('plain/retained', 'r', { qos: 1, retain: true });
    const reader = await client({ username: keys.subscribeKey });
    const received: string[] = [];
    reader.on('message', (t) => received.push(t));
    await reader.subscribeAsync(['speakerhub/#', 'plain/#']);
    // Marker round trip: anything retained would have been delivered before the marker.
    const got = nextMessage(reader, 'plain/marker');
    await writer.publishAsync('plain/marker', 'm', { qos: 1 });
    await got;
    expect(received).toEqual(['plain/marker']);
  });
});

describe('embedded broker: transports and bounds', () => {
  test('MQTT over WebSocket at /mqtt on the HTTP server, same credentials', async () => {
    const port = (http.address() as { port: number }).port;
    const ws = await client({ username: keys.subscribeKey, password: keys.publishKey }, `ws://127.0.0.1:${port}/mqtt`);
    await ws.subscribeAsync('w/#');
    const got = nextMessage(ws, 'w/1');
    await ws.publishAsync('w/1', 'over ws', { qos: 1 });
    expect(await got).toBe('over ws');
    await expect(client({ username: 'nobody-at-all-here' }, `ws://127.0.0.1:${port}/mqtt`)).rejects.toMatchObject({ code: 5 });
  });

  test('a packet above the limit closes that connection; others carry on', async () => {
    const big = await client({ username: keys.subscribeKey, password: keys.publishKey });
    const closed = new Promise<void>((r) => big.once('close', () => r()));
    big.publish('big/1', Buffer.alloc(10_000, 1), { qos: 0 });
    await closed;
    const ok = await client({ username: keys.subscribeKey, password: keys.publishKey });
    await ok.publishAsync('small/1', 'fine', { qos: 1 });
  });
});

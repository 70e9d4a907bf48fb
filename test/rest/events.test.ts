/**
 * The server-sent events stream, /api/v1/events, read by a real HTTP client.
 */
import { request, type IncomingMessage } from 'node:http';
import { startHub, TEST_TOKEN, type TestHub } from '../helpers/hub';
import { AUTH, expectErrorShape, httpGet } from './util';
import { eventually } from '../helpers/wait';

interface SseEvent {
  event: string;
  data: any;
}

interface SseClient {
  status: number;
  headers: IncomingMessage['headers'];
  events: SseEvent[];
  /** Raw text received (comments included). */
  raw: string;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

/** Opens an SSE stream; resolves once the status line and headers arrive. */
function openSse(url: string, headers: Record<string, string>, method = 'GET'): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { Accept: 'text/event-stream', ...headers } }, (res) => {
      let buffer = '';
      let endedResolve!: () => void;
      const client: SseClient = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        events: [],
        raw: '',
        ended: new Promise<void>((r) => (endedResolve = r)),
        close: () => req.destroy(),
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        client.raw += chunk;
        buffer += chunk;
        let sep: number;
        while ((sep = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, sep);
          buffer = buffer.slice(sep + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue;
            if (line.startsWith('event:')) event = line.slice(6).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
          }
          if (data.length) client.events.push({ event, data: JSON.parse(data.join('\n')) });
        }
      });
      res.on('end', () => endedResolve());
      res.on('close', () => endedResolve());
      res.on('error', () => endedResolve());
      resolve(client);
    });
    req.on('error', (e) => {
      if ((e as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(e);
    });
    req.setTimeout(10_000, () => req.destroy(new Error('SSE request timed out')));
    req.end();
  });
}

let h: TestHub;
let persistentId: string;
const clients: SseClient[] = [];

async function sse(path: string, headers: Record<string, string> = AUTH, method = 'GET'): Promise<SseClient> {
  const c = await openSse(h.base + path, headers, method);
  clients.push(c);
  return c;
}

beforeAll(async () => {
  h = await startHub({ speakers: { virtual: { count: 2 } } });
  persistentId = (await h.op('media_list')).MediaList[0].PersistentID;
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await h.op('stop_play');
});
afterAll(async () => {
  await h?.close();
});

const of = (c: SseClient, name: string) => c.events.filter((e) => e.event === name);

test('with the bearer header: playbackState Playing then Stopped, volume and selection events, all JSON', async () => {
  const c = await sse('/api/v1/events');
  expect(c.status).toBe(200);
  expect(c.headers['content-type']).toMatch(/^text\/event-stream/);
  // The current state comes first, so a client needs no poll to start.
  await eventually(() => c.events.length >= 1, 5000, 'the initial event');
  expect(c.events[0]).toEqual({ event: 'playbackState', data: expect.objectContaining({ state: 'PlayerStateStopped', timeElapsed: -1 }) });

  expect(await h.op('set_party_mode')).toEqual({ Result: 'true' });
  expect(await h.op('play_hub_media', { PersistentID: persistentId })).toEqual({ Result: 'true' });
  expect(await h.op('set_volume', { Volume: '33' })).toEqual({ Result: 'true' });
  expect(await h.op('stop_play')).toEqual({ Result: 'true' });

  const devices = (await h.op('device_list')).DeviceList.map((d: { DeviceID: string }) => d.DeviceID).sort();
  await eventually(
    () => of(c, 'playbackState').some((e) => e.data.state === 'PlayerStateStopped' && e.data.reason === 'stopped'),
    5000,
    'the Stopped event',
  );
  await eventually(() => of(c, 'volume').length >= devices.length, 5000, 'volume events');

  const selection = of(c, 'selection');
  expect(selection.length).toBeGreaterThanOrEqual(1);
  expect([...selection.at(-1)!.data.deviceIds].sort()).toEqual(devices);

  const states = of(c, 'playbackState').slice(1); // after the initial snapshot
  const playing = states.findIndex((e) => e.data.state === 'PlayerStatePlaying');
  const stopped = states.findIndex((e) => e.data.state === 'PlayerStateStopped');
  expect(playing).toBeGreaterThanOrEqual(0);
  expect(stopped).toBeGreaterThan(playing);
  expect(states[playing].data).toMatchObject({ kind: 'hub', persistentId, priority: 100 });
  expect([...states[playing].data.deviceIds].sort()).toEqual(devices);

  const volumes = of(c, 'volume').map((e) => e.data);
  for (const id of devices) expect(volumes).toContainEqual({ deviceId: id, volume: 33 });

  // The stream's order follows the commands: selection, Playing, volume, Stopped.
  const order = c.events.map((e) => (e.event === 'playbackState' ? e.data.state : e.event));
  const idx = (name: string, from = 0) => order.indexOf(name, from);
  expect(idx('selection')).toBeLessThan(idx('PlayerStatePlaying'));
  expect(idx('PlayerStatePlaying')).toBeLessThan(idx('volume'));
  expect(idx('volume')).toBeLessThan(idx('PlayerStateStopped', 1));
});

test('with ?access_token= for EventSource-style clients (no header)', async () => {
  const c = await sse(`/api/v1/events?access_token=${encodeURIComponent(TEST_TOKEN)}`, {});
  expect(c.status).toBe(200);
  await eventually(() => c.events.length >= 1, 5000, 'the initial event');
  expect(await h.op('set_volume', { Volume: '12' })).toEqual({ Result: 'true' });
  await eventually(() => of(c, 'volume').some((e) => e.data.volume === 12), 5000, 'a volume event');
});

test('the bearer scheme is case-insensitive here too, and doubled slashes work', async () => {
  const c = await sse('//api//v1//events', { Authorization: `bearer ${TEST_TOKEN}` });
  expect(c.status).toBe(200);
});

test.each([
  ['no token', '/api/v1/events', {}],
  ['a wrong bearer token', '/api/v1/events', { Authorization: 'Bearer wrong' }],
  ['a wrong access_token', '/api/v1/events?access_token=wrong', {}],
  ['an almost-right access_token', `/api/v1/events?access_token=${TEST_TOKEN.slice(0, -1)}`, {}],
] as [string, string, Record<string, string>][])('%s: 401 with the documented shape', async (_what, path, headers) => {
  const r = await httpGet(h.base + path, headers);
  expect(r.status).toBe(401);
  expect(r.body.ErrorCode).toBe('Unauthorized');
  expectErrorShape(r.status, r.body);
  expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
});

test('a browser on another origin may read the stream (Access-Control-Allow-Origin)', async () => {
  const c = await sse('/api/v1/events', { ...AUTH, Origin: 'http://sample-client.example' });
  expect(c.status).toBe(200);
  expect(['*', 'http://sample-client.example']).toContain(c.headers['access-control-allow-origin']);
});

test('a disconnected client leaves no listener behind', async () => {
  const before = h.hub.eventSubscribers;
  const c = await sse('/api/v1/events');
  await eventually(() => c.events.length >= 1, 5000, 'the initial event');
  expect(h.hub.eventSubscribers).toBe(before + 1);
  c.close();
  await eventually(() => h.hub.eventSubscribers === before, 5000, 'subscription removed');
  // Events after the disconnect do not break the hub.
  expect(await h.op('set_volume', { Volume: '14' })).toEqual({ Result: 'true' });
});

test('HEAD /api/v1/events is refused at once (GET only) instead of hanging', async () => {
  const c = await Promise.race([
    sse('/api/v1/events', AUTH, 'HEAD'),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error('HEAD /api/v1/events did not answer within 3 s')), 3000).unref()),
  ]);
  expect(c.status).toBe(405);
  await Promise.race([c.ended, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('HEAD response did not end')), 3000).unref())]);
});

test('stopping the hub ends open event streams instead of waiting for the clients', async () => {
  const other = await startHub({ media: { samples: false }, speakers: { virtual: { count: 1 } } });
  let closed = false;
  try {
    const c = await openSse(`${other.base}/api/v1/events`, AUTH);
    clients.push(c);
    expect(c.status).toBe(200);
    const t0 = Date.now();
    await Promise.race([
      other.close().then(() => (closed = true)),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('hub.stop() still waits for the SSE client after 5 s')), 5000).unref()),
    ]);
    expect(Date.now() - t0).toBeLessThan(5000);
    await c.ended;
  } finally {
    for (const c of clients.splice(0)) c.close();
    if (!closed) await other.close();
  }
});

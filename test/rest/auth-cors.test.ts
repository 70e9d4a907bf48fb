/**
 * Bearer authentication, CORS for browser clients on other origins, and secrets kept out of
 * the logs, all through real HTTP.
 */
import { startHub, TEST_TOKEN, type TestHub } from '../helpers/hub';
import { AUTH, expectErrorShape, httpGet, rawRequest } from './util';

let h: TestHub;
/** Every SessionToken the hub handed out in this file: none may reach a log. */
const sessions: string[] = [];

beforeAll(async () => {
  h = await startHub({ media: { samples: false }, speakers: { virtual: { count: 2 } } });
  sessions.push(h.session);
});
afterAll(async () => {
  await h?.close();
});

async function expectUnauthorized(path: string, headers: Record<string, string>): Promise<void> {
  const r = await httpGet(h.base + path, headers);
  expect({ path, headers, status: r.status }).toEqual({ path, headers, status: 401 });
  expect(r.body).toMatchObject({ Result: 'false', ErrorCode: 'Unauthorized' });
  expectErrorShape(r.status, r.body, path);
  expect(r.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
}

describe('bearer authentication', () => {
  test('no Authorization header: 401 Unauthorized with WWW-Authenticate, for operations of both dialects', async () => {
    for (const path of [
      `/api/v1/device_count?SessionToken=${h.session}`,
      `/v1/device_count?SessionID=${h.session}`,
      '/api/v1/init_session',
      '/v1/init_session',
      `/api/v1/set_volume?SessionToken=${h.session}&Volume=10`,
      `//api//v1//device_count?SessionToken=${h.session}`,
      // Unknown operations do not reveal themselves to a caller without the token.
      `/api/v1/no_such_operation?SessionToken=${h.session}`,
    ]) {
      await expectUnauthorized(path, {});
    }
  });

  test('a refused request has no effect', async () => {
    const before = await h.op('get_volume');
    await expectUnauthorized(`/api/v1/set_volume?SessionToken=${h.session}&Volume=3`, {});
    expect(await h.op('get_volume')).toEqual(before);
  });

  test('wrong tokens and wrong schemes: 401', async () => {
    const path = `/api/v1/device_count?SessionToken=${h.session}`;
    const wrong = [
      'Bearer wrong-token',
      `Bearer ${TEST_TOKEN}x`,
      `Bearer ${TEST_TOKEN.slice(0, -1)}`,
      `Bearer ${TEST_TOKEN.slice(0, -1)}${TEST_TOKEN.endsWith('j') ? 'k' : 'j'}`,
      'Bearer ',
      'Bearer',
      TEST_TOKEN,
      `Basic ${TEST_TOKEN}`,
      `Basic ${Buffer.from(`user:${TEST_TOKEN}`).toString('base64')}`,
      `Token ${TEST_TOKEN}`,
      `Bearer ${TEST_TOKEN} extra`,
      `Bearer${TEST_TOKEN}`,
    ];
    for (const authorization of wrong) await expectUnauthorized(path, { Authorization: authorization });
  });

  test('the token in the query string is not accepted for operations (only the events stream takes access_token)', async () => {
    await expectUnauthorized(`/api/v1/device_count?SessionToken=${h.session}&access_token=${TEST_TOKEN}`, {});
  });

  test('the right token: 200', async () => {
    const r = await httpGet(`${h.base}/api/v1/device_count?SessionToken=${h.session}`, AUTH);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ DeviceCount: '2' });
  });

  test('the Bearer scheme is case-insensitive', async () => {
    for (const scheme of ['bearer', 'BEARER', 'BeArEr', 'Bearer']) {
      const r = await httpGet(`${h.base}/api/v1/device_count?SessionToken=${h.session}`, { Authorization: `${scheme} ${TEST_TOKEN}` });
      expect({ scheme, status: r.status, body: r.body }).toEqual({ scheme, status: 200, body: { DeviceCount: '2' } });
    }
  });

  test('a token with non-ASCII characters works when sent as its UTF-8 bytes; one byte off does not', async () => {
    const token = 'grüße-aus-köln-0123456789abcdef';
    const hub = await startHub({ server: { token }, media: { samples: false }, speakers: { virtual: { count: 1 } } });
    try {
      const ok = await rawRequest(hub.base, 'GET /api/v1/init_session HTTP/1.1', { Authorization: `Bearer ${token}` });
      expect(ok.status).toBe(200);
      expect(typeof ok.body.SessionToken).toBe('string');
      // One non-ASCII character changed (same byte length), the same length with a different split of bytes, one ASCII letter changed.
      for (const wrong of [token.replace('ü', 'ý'), token.replace('köln', 'koln').replace('k', 'kk'), token.slice(0, -1) + 'g']) {
        const r = await rawRequest(hub.base, 'GET /api/v1/init_session HTTP/1.1', { Authorization: `Bearer ${wrong}` });
        expect({ wrong, status: r.status }).toEqual({ wrong, status: 401 });
      }
    } finally {
      await hub.close();
    }
  });

  test('init_session needs the token, and with it hands out a working session', async () => {
    await expectUnauthorized('/api/v1/init_session', {});
    await expectUnauthorized('/api/v1/init_session', { Authorization: 'Bearer nope' });
    const r = await httpGet(`${h.base}/api/v1/init_session`, AUTH);
    expect(r.status).toBe(200);
    expect(typeof r.body.SessionToken).toBe('string');
    sessions.push(r.body.SessionToken);
    const c = await httpGet(`${h.base}/api/v1/device_count?SessionToken=${encodeURIComponent(r.body.SessionToken)}`, AUTH);
    expect(c.body).toEqual({ DeviceCount: '2' });
  });

  test('server.auth=false serves without a token', async () => {
    const open = await startHub({ server: { auth: false }, media: { samples: false }, speakers: { virtual: { count: 1 } } });
    try {
      const init = await httpGet(`${open.base}/api/v1/init_session`, {});
      expect(init.status).toBe(200);
      const session = init.body.SessionToken as string;
      expect(typeof session).toBe('string');
      const count = await httpGet(`${open.base}/api/v1/device_count?SessionToken=${session}`, {});
      expect(count).toMatchObject({ status: 200, body: { DeviceCount: '1' } });
      // Any Authorization header is ignored rather than refused.
      const withJunk = await httpGet(`${open.base}/api/v1/device_count?SessionToken=${session}`, { Authorization: 'Bearer whatever' });
      expect(withJunk).toMatchObject({ status: 200, body: { DeviceCount: '1' } });
      // The session is still checked.
      const noSession = await httpGet(`${open.base}/api/v1/device_count?SessionToken=unknown`, {});
      expect(noSession).toMatchObject({ status: 200, body: { Result: 'false', ErrorCode: 'SessionNotFound' } });
    } finally {
      await open.close();
    }
  });
});

describe('CORS', () => {
  const ORIGIN = 'http://sample-client.example:8080';

  test('a preflight from another origin answers 204 without a token and allows the Authorization header', async () => {
    for (const path of [`/api/v1/device_count?SessionToken=${h.session}`, '/api/v1/init_session', '/v1/init_session', '/api/v1/events']) {
      const res = await fetch(h.base + path, {
        method: 'OPTIONS',
        headers: { Origin: ORIGIN, 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'authorization' },
      });
      await res.arrayBuffer();
      expect({ path, status: res.status }).toEqual({ path, status: 204 });
      const allowOrigin = res.headers.get('access-control-allow-origin');
      expect([ORIGIN, '*']).toContain(allowOrigin);
      const allowHeaders = (res.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/\s*,\s*/);
      expect(allowHeaders).toContain('authorization');
      expect((res.headers.get('access-control-allow-methods') ?? '').toUpperCase()).toContain('GET');
    }
  });

  test('GET with an Origin gets Access-Control-Allow-Origin, on success and on failures', async () => {
    const cases: [string, Record<string, string>, number][] = [
      [`/api/v1/device_count?SessionToken=${h.session}`, AUTH, 200],
      [`/api/v1/device_count?SessionToken=${h.session}`, {}, 401],
      ['/api/v1/device_count', AUTH, 400],
      ['/api/v1/device_count?SessionToken=nope', AUTH, 200],
      [`/api/v1/no_such_operation?SessionToken=${h.session}`, AUTH, 404],
    ];
    for (const [path, headers, status] of cases) {
      const r = await httpGet(h.base + path, { ...headers, Origin: ORIGIN });
      expect({ path, status: r.status }).toEqual({ path, status });
      expect([ORIGIN, '*']).toContain(r.headers.get('access-control-allow-origin'));
    }
  });

  test('server.corsOrigin is what Access-Control-Allow-Origin says', async () => {
    const only = 'http://only-this.example';
    const hub = await startHub({ server: { corsOrigin: only }, media: { samples: false }, speakers: { virtual: { count: 1 } } });
    try {
      const r = await httpGet(`${hub.base}/api/v1/device_count?SessionToken=${hub.session}`, { ...AUTH, Origin: only });
      expect(r.status).toBe(200);
      expect(r.headers.get('access-control-allow-origin')).toBe(only);
    } finally {
      await hub.close();
    }
  });
});

describe('secrets stay out of the logs', () => {
  test('neither the API token nor any SessionToken appears in a log line, even after refused requests', async () => {
    const s = h.session;
    const almost = `${TEST_TOKEN.slice(0, -1)}X`;
    const attempts: [string, Record<string, string>][] = [
      [`/api/v1/device_count?SessionToken=${s}`, { Authorization: `Bearer ${almost}` }],
      [`/api/v1/device_count?SessionToken=${s}&access_token=${TEST_TOKEN}`, {}],
      [`/api/v1/device_count?access_token=${TEST_TOKEN}&SessionToken=${s}`, { Authorization: 'Bearer wrong' }],
      [`/v1/device_count?SessionID=${s}`, {}],
      [`/api/v1/device_count?SesssionToken=${s}`, {}],
      [`/api/v1/device_count?token=${TEST_TOKEN}&key=${TEST_TOKEN}`, {}],
      [`/api/v1/events?access_token=${almost}&SessionToken=${s}`, {}],
      [`/api/v1/no_such_operation?SessionToken=${s}&access_token=${TEST_TOKEN}`, {}],
      [`/api/v1/no_such_operation?SessionToken=${s}`, AUTH],
      [`//api//v1//device_count?SessionToken=${s}`, { Authorization: `Bearer ${almost}` }],
      // A percent-encoded parameter name still names the session (the lenient parser decodes names).
      [`/api/v1/device_count?Session%54oken=${s}`, { Authorization: `Bearer ${almost}` }],
      // Successful requests and operation failures, too.
      [`/api/v1/device_count?SessionToken=${s}`, AUTH],
      [`/api/v1/device_info?SessionToken=${s}&DeviceID=1`, AUTH],
      [`/api/v1/play_web_media_party_mode?SessionToken=${s}&MediaUrl=http://127.0.0.1:1/x.wav`, AUTH],
    ];
    for (const [path, headers] of attempts) {
      const r = await httpGet(h.base + path, headers);
      expect(r.status).toBeLessThan(500);
    }
    // The encoded name really works as SessionToken, so it is a secret worth hiding.
    const enc = await httpGet(`${h.base}/api/v1/device_count?Session%54oken=${s}`, AUTH);
    expect(enc.body).toEqual({ DeviceCount: '2' });
    // Raw requests: a bad request line, and a token in a header the hub does not know.
    await rawRequest(h.base, `GET /api/v1/device_count?SessionToken=${s}&x=\u00e9 HTTP/1.1`, { Authorization: `Bearer ${almost}` });
    await rawRequest(h.base, `GET /api/v1/device_count?SessionToken=${s} HTTP/1.1`, {
      Authorization: `Bearer ${TEST_TOKEN}`,
      'X-Api-Key': TEST_TOKEN,
    });

    const logs = h.logs.join('');
    // The refusals were logged, in words the redaction leaves whole (it once ate "token" after "bearer")...
    expect(logs).toContain('request refused: no API token, or a wrong one (Authorization: Bearer)');
    expect(logs).not.toContain(TEST_TOKEN); // ...but not the token
    expect(logs).not.toContain(almost);
    for (const session of sessions) expect(logs).not.toContain(session);
  });
});

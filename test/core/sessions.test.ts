import { ManualClock } from '../../src/core/clock';
import http from 'node:http';
import { TEST_TOKEN, startHub, type TestHub } from '../helpers/hub';

describe('sessions over HTTP', () => {
  const clock = new ManualClock();
  let t: TestHub;

  beforeAll(async () => {
    t = await startHub({ sessions: { idleMinutes: 60, maxSessions: 5 }, speakers: { virtual: { count: 2 } } }, { clock });
  });
  afterAll(() => t.close());

  const init = async () => (await t.get('/api/v1/init_session')).body;
  const count = (token: string) => t.get(`/api/v1/device_count?SessionToken=${encodeURIComponent(token)}`).then((r) => r.body);

  test('init_session returns a unique, unguessable token and the hub UUID', async () => {
    const tokens = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const body = await init();
      expect(typeof body.SessionToken).toBe('string');
      // 24 random bytes in base64url: 32 characters, 192 bits.
      expect(body.SessionToken).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(body.HKWHubUUID).toMatch(/^[0-9a-f-]{36}$/);
      tokens.add(body.SessionToken);
    }
    expect(tokens.size).toBe(5);
  });

  test('close_session removes the token; it then gets SessionNotFound', async () => {
    const { SessionToken } = await init();
    expect(await count(SessionToken)).toEqual({ DeviceCount: '2' });
    expect((await t.get(`/api/v1/close_session?SessionToken=${SessionToken}`)).body).toEqual({ Result: 'true' });
    const after = await count(SessionToken);
    expect(after.Result).toBe('false');
    expect(after.ErrorCode).toBe('SessionNotFound');
    // Closing twice fails the same way.
    expect((await t.get(`/api/v1/close_session?SessionToken=${SessionToken}`)).body.ErrorCode).toBe('SessionNotFound');
  });

  test('one keep-alive connection presenting several tokens: each is checked for itself, closed ones refused', async () => {
    // The REST server hashes a connection's token once (SessionMemo): a proxy that carries many
    // clients over one connection must still get each token checked, and a closed one refused.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<unknown>();
    const get = (path: string) =>
      new Promise<any>((resolve, reject) => {
        http
          .get(`${t.base}${path}`, { agent, headers: { Authorization: `Bearer ${TEST_TOKEN}` } }, (res) => {
            sockets.add(res.socket);
            let text = '';
            res.setEncoding('utf8').on('data', (d: string) => (text += d));
            res.on('end', () => resolve(JSON.parse(text)));
          })
          .on('error', reject);
      });
    try {
      const a = (await get('/api/v1/init_session')).SessionToken as string;
      const b = (await get('/api/v1/init_session')).SessionToken as string;
      const countOf = (token: string) => get(`/api/v1/device_count?SessionToken=${encodeURIComponent(token)}`);
      expect(await countOf(a)).toEqual({ DeviceCount: '2' });
      expect(await countOf(b)).toEqual({ DeviceCount: '2' });
      // Same length as a, last character changed: refused, though a was just accepted here.
      const forged = a.slice(0, -1) + (a.endsWith('A') ? 'B' : 'A');
      expect((await countOf(forged)).ErrorCode).toBe('SessionNotFound');
      expect(await countOf(a)).toEqual({ DeviceCount: '2' });
      expect((await get(`/api/v1/close_session?SessionToken=${a}`)).Result).toBe('true');
      expect((await countOf(a)).ErrorCode).toBe('SessionNotFound');
      expect(await countOf(b)).toEqual({ DeviceCount: '2' });
      expect(sockets.size).toBe(1);
    } finally {
      agent.destroy();
    }
  });

  test('an unknown token is SessionNotFound (HTTP 200, Result "false")', async () => {
    const r = await t.get('/api/v1/device_count?SessionToken=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ Result: 'false', ErrorCode: 'SessionNotFound' });
  });

  test('a session expires after 60 idle minutes; each command renews it', async () => {
    const { SessionToken } = await init();
    clock.advance(59 * 60_000);
    expect(await count(SessionToken)).toEqual({ DeviceCount: '2' });
    clock.advance(59 * 60_000); // 118 min after start, 59 after the last command
    expect(await count(SessionToken)).toEqual({ DeviceCount: '2' });
    clock.advance(60 * 60_000);
    expect((await count(SessionToken)).ErrorCode).toBe('SessionNotFound');
  });

  test('the table is bounded: beyond maxSessions the longest-idle session is evicted', async () => {
    const tokens: string[] = [];
    for (let i = 0; i < 5; i++) {
      tokens.push((await init()).SessionToken);
      clock.advance(1000);
    }
    // Use the first one, so the second becomes the longest idle.
    expect(await count(tokens[0])).toEqual({ DeviceCount: '2' });
    const extra = (await init()).SessionToken;
    expect((await count(tokens[1])).ErrorCode).toBe('SessionNotFound');
    for (const tok of [tokens[0], ...tokens.slice(2), extra]) expect(await count(tok)).toEqual({ DeviceCount: '2' });
  });
});

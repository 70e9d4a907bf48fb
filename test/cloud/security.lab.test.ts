/**
 * The security probe's findings against the single-node cloud, each with the probe's own
 * input: connection caps and the head timeout, links per account, open redirects through
 * `next`, concurrent refreshes, replayed codes, password guessing from many addresses, and
 * the page headers (Referrer-Policy, iss, login CSRF). The cluster suite checks the
 * cluster-wide limits.
 */
import { connect, type Socket } from 'node:net';
import WebSocket from 'ws';
import { cloudSignin } from '../../src/cloud-link/credentials';
import { authorize, basic, passwordGrant, postForm, registerClient, signup, startCloud, webSignin, PASSWORD, type TestCloud } from './helpers';

const REDIRECT = 'https://app.example.org/callback';

let t: TestCloud;
let client: { client_id: string; client_secret: string };

beforeAll(async () => {
  t = await startCloud({
    trustProxy: false,
    connections: { maxConnectionsPerAddress: 5, maxConnections: 40, headersTimeoutMs: 500, maxLinksPerAccount: 2 },
  });
  for (const u of ['alice', 'henry']) await signup(t.base, u);
  client = await registerClient(t, REDIRECT);
});
afterAll(() => t?.close());

function openSocket(base: string, localAddress: string): Promise<Socket> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const s = connect({ host: u.hostname, port: Number(u.port), localAddress }, () => resolve(s));
    s.on('error', reject);
  });
}
const closed = (s: Socket) => new Promise<void>((resolve) => (s.destroyed ? resolve() : s.once('close', () => resolve())));

describe('connections', () => {
  test('one address holds at most maxConnectionsPerAddress sockets: the next is reset before a byte is read', async () => {
    const held = await Promise.all(Array.from({ length: 5 }, () => openSocket(t.base, '127.0.0.2')));
    // Head-trickling: a request line that never ends.
    for (const s of held) s.write('GET /api/v1/init_session HTTP/1.1\r\nX-Slow: ');
    // A complete request on a sixth socket: reset, never answered (without the cap it would get a 200).
    const extra = await openSocket(t.base, '127.0.0.2').catch(() => undefined);
    if (extra) {
      let answer = '';
      extra.on('data', (d) => (answer += d));
      extra.on('error', () => undefined);
      extra.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await closed(extra);
      expect(answer).toBe('');
    }
    // Another address is still served.
    expect((await fetch(`${t.base}/healthz`)).status).toBe(200);
    for (const s of held) s.destroy();
  });

  test('a head that does not arrive within the head timeout gets its connection closed', async () => {
    const s = await openSocket(t.base, '127.0.0.3');
    s.on('error', () => undefined);
    let answer = '';
    s.on('data', (d) => (answer += d));
    s.write('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Trickle: a');
    await closed(s);
    expect(answer === '' || /^HTTP\/1\.1 408/.test(answer)).toBe(true);
  });

  test('an account holds at most maxLinksPerAccount hub links: a newer one is refused while the others answer pings', async () => {
    const { linkToken } = await cloudSignin(t.base, 'henry', PASSWORD);
    const url = `${t.base.replace(/^http/, 'ws')}/hub/link`;
    const open = () =>
      new Promise<WebSocket>((resolve, reject) => {
        const ws = new WebSocket(url, { headers: { authorization: `Bearer ${linkToken}` } });
        ws.once('open', () => resolve(ws));
        ws.once('error', reject);
      });
    const first = await open();
    const second = await open();
    const third = await open();
    // The live links stay; the newcomer is closed (hostile.test.ts: a dead one is replaced instead).
    expect(await new Promise<number>((resolve) => third.once('close', (code) => resolve(code)))).toBe(4003);
    expect(first.readyState).toBe(WebSocket.OPEN);
    expect(second.readyState).toBe(WebSocket.OPEN);
    first.close();
    second.close();
  });
});

describe('sign-in pages', () => {
  test('next= never leads to another origin, and control characters in it are refused, not a 500', async () => {
    for (const next of [
      '/\t/evil.example.org',
      '/\n/evil.example.org',
      '//evil.example.org',
      '/\\evil.example.org',
      'https://evil.example.org/',
      '/x\r\nSet-Cookie: a=b',
    ]) {
      const r = await postForm(`${t.base}/signin`, { username: 'alice', password: PASSWORD, next });
      expect(r.status).toBe(303);
      expect(r.headers.get('location')).toBe('/account');
    }
    const ok = await postForm(`${t.base}/signin`, { username: 'alice', password: PASSWORD, next: '/oauth/authorize?client_id=x&state=y' });
    expect(ok.headers.get('location')).toBe('/oauth/authorize?client_id=x&state=y');
    const page = await fetch(`${t.base}/signin?next=${encodeURIComponent('/\t/evil.example.org')}`);
    expect(await page.text()).toContain('name="next" value="/account"');
  });

  test('HTML pages send Referrer-Policy: no-referrer', async () => {
    for (const path of ['/signin', '/signup']) expect((await fetch(`${t.base}${path}`)).headers.get('referrer-policy')).toBe('no-referrer');
  });

  test('sign-in and sign-up forms posted from another site are refused (login CSRF)', async () => {
    const forged = await postForm(`${t.base}/signin`, { username: 'alice', password: PASSWORD }, { origin: 'https://evil.example.org' });
    expect(forged.status).toBe(403);
    expect(forged.headers.get('set-cookie')).toBeNull();
    const fetchSite = await postForm(`${t.base}/signin`, { username: 'alice', password: PASSWORD }, { 'sec-fetch-site': 'cross-site' });
    expect(fetchSite.status).toBe(403);
    const signupForged = await postForm(
      `${t.base}/signup`,
      { username: 'mallory', email: 'm@example.org', password: PASSWORD },
      { origin: 'https://evil.example.org' },
    );
    expect(signupForged.status).toBe(403);
    const same = await postForm(`${t.base}/signin`, { username: 'alice', password: PASSWORD }, { origin: t.base, 'sec-fetch-site': 'same-origin' });
    expect(same.status).toBe(303);
  });
});

describe('OAuth', () => {
  const auth = () => ({ authorization: basic(client.client_id, client.client_secret) });
  /** 401 for a dead token, 503 HubOffline for a live one (alice has no hub linked here). */
  const tokenLive = async (token: string) =>
    (await fetch(`${t.base}/api/v1/init_session`, { headers: { authorization: `Bearer ${token}` } })).status !== 401;

  test('authorization responses carry iss (RFC 9207)', async () => {
    const cookie = await webSignin(t.base, 'alice');
    const allowed = await authorize(t.base, cookie, { response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, state: 's' });
    expect(new URL(allowed.location!).searchParams.get('iss')).toBe(t.base);
    const denied = await authorize(
      t.base,
      cookie,
      { response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, state: 's' },
      'deny',
    );
    expect(new URL(denied.location!).searchParams.get('iss')).toBe(t.base);
  });

  test('a refresh token refreshed concurrently: one pair issued, the others invalid_grant, never a 500', async () => {
    const grant = (await passwordGrant(t.base, client, 'alice')).body;
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => postForm(`${t.base}/oauth/token`, { grant_type: 'refresh_token', refresh_token: grant.refresh_token }, auth())),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    for (const a of answers.filter((x) => x.status !== 200)) expect(a.body.error).toBe('invalid_grant');
  });

  test('a replayed authorization code revokes the tokens it issued', async () => {
    const cookie = await webSignin(t.base, 'alice');
    const a = await authorize(t.base, cookie, { response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT });
    const code = new URL(a.location!).searchParams.get('code')!;
    const form = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT };
    const first = await postForm(`${t.base}/oauth/token`, form, auth());
    expect(first.status).toBe(200);
    expect(await tokenLive(first.body.access_token)).toBe(true);
    const replay = await postForm(`${t.base}/oauth/token`, form, auth());
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    expect(await tokenLive(first.body.access_token)).toBe(false);
    const refresh = await postForm(`${t.base}/oauth/token`, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token }, auth());
    expect(refresh.body.error).toBe('invalid_grant');
  });

  test('relayed requests per user meet the relay limit: 429 with the error shape', async () => {
    const limited = await startCloud({ rateLimits: { relay: { burst: 3, perSecond: 0.01 } } });
    try {
      await signup(limited.base, 'rita');
      const c = await registerClient(limited);
      const token = (await passwordGrant(limited.base, c, 'rita')).body.access_token;
      const statuses: number[] = [];
      for (let n = 0; n < 5; n++)
        statuses.push((await fetch(`${limited.base}/api/v1/init_session`, { headers: { authorization: `Bearer ${token}` } })).status);
      // No hub linked: HubOffline (503) while within the limit, then 429.
      expect(statuses).toEqual([503, 503, 503, 429, 429]);
    } finally {
      await limited.close();
    }
  });

  test('password guesses for one username from 40 addresses meet a per-username limit', async () => {
    const guarded = await startCloud({ trustProxy: true, rateLimits: {} });
    try {
      await signup(guarded.base, 'victim');
      const c = await registerClient(guarded);
      const statuses: number[] = [];
      for (let n = 0; n < 40; n++) {
        const r = await postForm(
          `${guarded.base}/oauth/token`,
          { grant_type: 'password', username: 'victim', password: `wrong-${n}` },
          { authorization: basic(c.client_id, c.client_secret), 'x-forwarded-for': `203.0.113.${n}` },
        );
        statuses.push(r.status);
      }
      expect(statuses.slice(0, 20)).toEqual(Array(20).fill(400));
      expect(statuses.slice(20)).toEqual(Array(20).fill(429));
    } finally {
      await guarded.close();
    }
  });
});

describe('configuration', () => {
  test('--redis without a PostgreSQL database is refused at start with what to add', async () => {
    await expect(startCloud({ redis: 'redis://127.0.0.1:1', database: undefined })).rejects.toThrow(/--database postgres:\/\//);
  });
});

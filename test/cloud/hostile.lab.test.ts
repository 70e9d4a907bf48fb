/**
 * Hostile clients of the single-node cloud (issue 32): a client-written X-Forwarded-For
 * behind --trust-proxy, password guessing that must slow the guesser and not the owner, and a
 * link-token holder opening links to push the real hub out. The cluster suite checks the same
 * through the docs' HAProxy (docs/cloud-cluster.md), with Redis and PostgreSQL stopped and restarted.
 */
import WebSocket from 'ws';
import { cloudSignin, saveCredential } from '../../src/cloud-link/credentials';
import { ManualClock } from '../../src/core/clock';
import { parseTrustProxy } from '../../src/cloud/http/trust-proxy';
import { basic, postForm, registerClient, signup, startCloud, PASSWORD, type TestCloud } from './helpers';
import { startLinkedHub } from './hub';
import { eventually } from '../helpers/wait';

jest.setTimeout(60_000);

const until = (fn: () => Promise<boolean>, ms = 20_000) => eventually(fn, ms, 'the condition', 50).then(() => undefined);

describe('health endpoints', () => {
  test('/livez and /readyz answer 200 with what the instance holds; /healthz keeps its meaning', async () => {
    const t = await startCloud();
    try {
      const live = await fetch(`${t.base}/livez`);
      expect(live.status).toBe(200);
      expect(await live.json()).toEqual({ status: 'ok' });
      const ready = await fetch(`${t.base}/readyz`);
      expect(ready.status).toBe(200);
      expect(ready.headers.get('cache-control')).toBe('no-store');
      expect(await ready.json()).toEqual({ status: 'ready', links: 0 });
      const health = await fetch(`${t.base}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: 'ok', database: 'ok', links: 0 });
    } finally {
      await t.close();
    }
  });
});

describe('--trust-proxy', () => {
  test('names hops or proxies; a bad value is a clear error', () => {
    expect(parseTrustProxy(true)).toEqual({ hops: 1 });
    expect(parseTrustProxy('2')).toEqual({ hops: 2 });
    expect(parseTrustProxy('10.0.0.5, 10.1.0.0/16,loopback')).toEqual({ addresses: ['10.0.0.5', '10.1.0.0/16', 'loopback'] });
    expect(() => parseTrustProxy('0')).toThrow(/hop count from 1 to 10/);
    expect(() => parseTrustProxy('10.0.0.300')).toThrow(/not an IP address, a CIDR/);
    expect(() => parseTrustProxy('10.0.0.0/33')).toThrow(/not an IP address, a CIDR/);
  });

  test('a client-written X-Forwarded-For prefix never counts: sign-ups with forged addresses meet the per-address limit', async () => {
    // One hop: the balancer appends the address it saw; everything left of it is the client's.
    const t = await startCloud({ trustProxy: true, rateLimits: { signup: { burst: 3, perSecond: 0.001 } } });
    try {
      const statuses: number[] = [];
      for (let n = 0; n < 6; n++) {
        const res = await fetch(`${t.base}/api/account/signup`, {
          method: 'POST',
          // What HAProxy forwards for a client at 198.51.100.7 that wrote its own X-Forwarded-For.
          headers: { 'content-type': 'application/json', 'x-forwarded-for': `203.0.113.${n}, 198.51.100.7` },
          body: JSON.stringify({ username: `forger${n}`, email: `f${n}@example.org`, password: PASSWORD }),
        });
        statuses.push(res.status);
      }
      expect(statuses).toEqual([201, 201, 201, 429, 429, 429]);
      // Another real client is not affected.
      const other = await fetch(`${t.base}/api/account/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.8' },
        body: JSON.stringify({ username: 'honest', email: 'h@example.org', password: PASSWORD }),
      });
      expect(other.status).toBe(201);
    } finally {
      await t.close();
    }
  });

  test('with the proxies named, only their entries are skipped: a client reaching the instance directly cannot forge one', async () => {
    const t = await startCloud({ trustProxy: '10.9.9.9', rateLimits: { signup: { burst: 2, perSecond: 0.001 } } });
    try {
      const statuses: number[] = [];
      for (let n = 0; n < 4; n++) {
        const r = await fetch(`${t.base}/api/account/signup`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': `203.0.113.${n}` },
          body: JSON.stringify({ username: `direct${n}`, email: `d${n}@example.org`, password: PASSWORD }),
        });
        statuses.push(r.status);
      }
      // 127.0.0.1 is not a named proxy: its X-Forwarded-For is ignored, all four are one address.
      expect(statuses).toEqual([201, 201, 429, 429]);
    } finally {
      await t.close();
    }
  });
});

describe('password guessing slows the guesser, not the owner', () => {
  let t: TestCloud;
  let clock: ManualClock;
  let client: { client_id: string; client_secret: string };
  const grant = (username: string, password: string, from: string) =>
    postForm(
      `${t.base}/oauth/token`,
      { grant_type: 'password', username, password },
      { authorization: basic(client.client_id, client.client_secret), 'x-forwarded-for': from },
    );

  beforeAll(async () => {
    clock = new ManualClock(Date.now());
    // The defaults, except a roomier per-(address, username) bucket: the backoff is what is measured here.
    t = await startCloud({ trustProxy: true, rateLimits: { signinByUser: { burst: 100, perSecond: 1 } }, clock });
    for (const u of ['owner', 'target', 'spread']) await signup(t.base, u);
    client = await registerClient(t);
  });
  afterAll(() => t?.close());

  test("an attacker's guesses from one address lock out neither the owner's usual address nor a new one", async () => {
    // The owner signed in once from home.
    expect((await grant('owner', PASSWORD, '198.51.100.10')).status).toBe(200);
    const attacker: number[] = [];
    for (let n = 0; n < 30; n++) attacker.push((await grant('owner', `guess-${n}`, '203.0.113.66')).status);
    // Five free failures, then backoff: 429 with Retry-After (and the right password is no key for the attacker either).
    expect(attacker.slice(0, 5)).toEqual(Array(5).fill(400));
    expect(attacker.slice(5)).toEqual(Array(25).fill(429));
    const blocked = await grant('owner', PASSWORD, '203.0.113.66');
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // The owner: from home, and from an address never seen (a phone on the road).
    expect((await grant('owner', PASSWORD, '198.51.100.10')).status).toBe(200);
    expect((await grant('owner', PASSWORD, '192.0.2.44')).status).toBe(200);
  });

  test('the backoff doubles per failure after the free ones and ends with a success', async () => {
    const from = '203.0.113.90';
    for (let n = 0; n < 5; n++) expect((await grant('target', `wrong-${n}`, from)).status).toBe(400);
    // After the 5th failure the next attempt waits 1 s; a failure then makes it 2 s, then 4 s.
    for (const wait of [1, 2, 4]) {
      const early = await grant('target', 'wrong', from);
      expect(early.status).toBe(429);
      expect(Number(early.headers.get('retry-after'))).toBe(wait);
      clock.advance(wait * 1000);
      expect((await grant('target', 'wrong', from)).status).toBe(400);
    }
    expect(Number((await grant('target', PASSWORD, from)).headers.get('retry-after'))).toBe(8);
    clock.advance(8000);
    expect((await grant('target', PASSWORD, from)).status).toBe(200);
    // The success cleared the pair's failures: a typo now is an ordinary 400.
    expect((await grant('target', 'typo', from)).status).toBe(400);
    expect((await grant('target', PASSWORD, from)).status).toBe(200);
  });

  test('guesses spread over 40 addresses meet the per-username limit, but not the owner at an address they signed in from', async () => {
    const home = '198.51.100.20';
    expect((await grant('spread', PASSWORD, home)).status).toBe(200);
    const statuses: number[] = [];
    for (let n = 0; n < 40; n++) statuses.push((await grant('spread', `spread-${n}`, `192.0.2.${100 + n}`)).status);
    // The burst of 20, less the owner's first sign-in (from an address new then).
    expect(statuses.slice(0, 19)).toEqual(Array(19).fill(400));
    expect(statuses.slice(19)).toEqual(Array(21).fill(429));
    // A new address meets the exhausted per-username limit; the owner's known one does not.
    expect((await grant('spread', PASSWORD, '192.0.2.250')).status).toBe(429);
    expect((await grant('spread', PASSWORD, home)).status).toBe(200);
    // The web sign-in and the account API share the guard.
    const web = await postForm(`${t.base}/signin`, { username: 'spread', password: PASSWORD, next: '/account' }, { 'x-forwarded-for': home });
    expect(web.status).toBe(303);
    const api = await fetch(`${t.base}/api/account/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': home },
      body: JSON.stringify({ username: 'spread', password: PASSWORD }),
    });
    expect(api.status).toBe(200);
  });
});

describe('a link-token holder cannot evict the real hub', () => {
  test('links beyond the cap are refused (4003) while the real hub answers pings; a dead link is replaced; revoking other link tokens shuts the holder out', async () => {
    const t = await startCloud({ connections: { maxLinksPerAccount: 2 }, link: { heartbeatMs: 60_000, probeMs: 500 } });
    await signup(t.base, 'owner');
    const hub = await startLinkedHub(t.base, 'owner');
    const sockets: WebSocket[] = [];
    try {
      await hub.waitFor('online');
      const c = await registerClient(t);
      const token = (
        await postForm(
          `${t.base}/oauth/token`,
          { grant_type: 'password', username: 'owner', password: PASSWORD },
          { authorization: basic(c.client_id, c.client_secret) },
        )
      ).body.access_token;
      // The attacker holds a link token of the account (its own sign-in here; a copied one is the same).
      const { linkToken } = await cloudSignin(t.base, 'owner', PASSWORD);
      const url = `${t.base.replace(/^http/, 'ws')}/hub/link`;
      const open = (autoPong = true) =>
        new Promise<{ ws: WebSocket; closed: Promise<number> }>((resolve, reject) => {
          const ws = new WebSocket(url, { headers: { authorization: `Bearer ${linkToken}` }, autoPong });
          sockets.push(ws);
          const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
          ws.once('open', () => resolve({ ws, closed }));
          ws.once('error', reject);
        });
      // The account's second link (the cap is 2), then ten more: each refused, the real hub never closed.
      const squatter = await open();
      const refusals = [];
      for (let n = 0; n < 10; n++) refusals.push((await open()).closed);
      expect(await Promise.all(refusals)).toEqual(Array(10).fill(4003));
      expect(hub.link.state).toBe('online');
      // The squatter goes (its link was newest: requests went to it); the real hub answers again.
      squatter.ws.close();
      await squatter.closed;
      const r = await fetch(`${t.base}/api/v1/init_session`, { headers: { authorization: `Bearer ${token}` } });
      expect(r.status).toBe(200);
      // A link that stops answering pings (half-open, a crashed machine) is replaced by the next newcomer.
      const silent = await open(false);
      const replacement = await open();
      expect(await silent.closed).toBe(4002);
      expect(replacement.ws.readyState).toBe(WebSocket.OPEN);
      expect(hub.link.state).toBe('online');
      expect(t.logs.join('')).toMatch(/a hub link beyond its account cap/);

      // The remedy for the leak: the owner signs in again revoking every other link token.
      // The attacker's link closes (4001) and cannot come back (401); the real hub relinks with the new token.
      const cred = await cloudSignin(t.base, 'owner', PASSWORD, { revokeOthers: true });
      expect(cred.revoked).toBe(2);
      await saveCredential(hub.dataDir, cred);
      expect(await replacement.closed).toBe(4001);
      const back = await new Promise<number>((resolve) => {
        const ws = new WebSocket(url, { headers: { authorization: `Bearer ${linkToken}` } });
        ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.on('open', () => resolve(101));
        ws.on('error', () => undefined);
      });
      expect(back).toBe(401);
      await until(async () => (await fetch(`${t.base}/api/v1/init_session`, { headers: { authorization: `Bearer ${token}` } })).status === 200);
      expect(t.cloud.context.registry.hubsOf(t.cloud.context.registry.all()[0].userId)).toHaveLength(1);
    } finally {
      for (const ws of sockets) ws.terminate();
      await hub.close();
      await t.close();
    }
  });
});

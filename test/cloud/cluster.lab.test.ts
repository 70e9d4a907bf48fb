/**
 * The cloud as a cluster, with real peers on loopback: a private PostgreSQL, a real
 * redis-server, three `speakerhub cloud --database … --redis …` processes (started at once:
 * their migrations race) behind a real HAProxy (round robin, no stickiness, /readyz
 * checks), and a real hub linked through the balancer (`speakerhub hub --cloud <balancer>`).
 * Relayed requests through every instance reach the hub wherever its link landed; OAuth
 * state (codes, refresh rotation, revocations) and rate limits hold across instances;
 * SIGKILLing the instance holding the link, and killing Redis, are survived with every
 * request answered. Waits are for positive signals (a status, a health answer), never sleeps.
 */
import { spawn } from 'node:child_process';
import WebSocket from 'ws';
import { get as httpGet } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { MIGRATIONS } from '../../src/cloud/storage/migrations';
import { labSuite } from '../helpers/labs';
import { authorize, basic, PASSWORD, passwordGrant, postForm, postJson, signup, webSignin } from './helpers';
import { startLinkedHub, type LinkedHub } from './hub';
import { Balancer, CLI, CloudInstance, clusterPeersMissing, freePort, PrivateRedis } from './cluster-peers';
import { PrivatePostgres, postgresMissing } from './postgres';
import { eventually } from '../helpers/wait';

jest.setTimeout(120_000);

const REDIRECT = 'https://app.example.org/callback';

/** test/helpers/wait's eventually, in this suite's argument order. */
const until = (what: string, fn: () => Promise<boolean>, ms = 30_000) => eventually(fn, ms, what, 50).then(() => undefined);

/** A relayed GET with a bound: a request that hangs fails the test instead of stalling it. */
async function call(base: string, path: string, token: string): Promise<{ status: number; body: any }> {
  const res = await fetch(base + path, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(40_000) });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

/** As call(), on a new connection (no keep-alive), with a bearer token or other headers. */
function callFresh(base: string, path: string, token: string | Record<string, string>): Promise<{ status: number; body: any }> {
  const headers = typeof token === 'string' ? { authorization: `Bearer ${token}` } : token;
  return new Promise((resolve, reject) => {
    const req = httpGet(base + path, { agent: false, headers, timeout: 40_000 }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) });
        } catch {
          resolve({ status: res.statusCode ?? 0, body: text });
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error('the request hung')));
    req.on('error', reject);
  });
}

function runCli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => resolve({ code, out, err }));
  });
}

labSuite('The cloud cluster (PostgreSQL, redis-server, HAProxy)', postgresMissing() ?? clusterPeersMissing())('the cloud as a cluster', () => {
  const pg = new PrivatePostgres();
  const redis = new PrivateRedis();
  const balancer = new Balancer();
  const instances: CloudInstance[] = [];
  let dir: string;
  let database: string;
  let hub: LinkedHub | undefined;
  let client: { client_id: string; client_secret: string };
  let aliceToken: string;
  let bobToken: string;
  const recovery: { redis?: number; postgres?: number } = {};

  const sql = async <T>(query: string): Promise<T[]> => {
    const c = new Client({ connectionString: database });
    await c.connect();
    try {
      return (await c.query(query)).rows as T[];
    } finally {
      await c.end();
    }
  };
  const counts = async () =>
    (
      await sql<{ users: string; clients: string; families: string; refresh: string }>(
        'SELECT (SELECT COUNT(*) FROM users) AS users, (SELECT COUNT(*) FROM clients) AS clients, (SELECT COUNT(*) FROM token_families) AS families, (SELECT COUNT(*) FROM refresh_tokens) AS refresh',
      )
    )[0];
  const usernames = async () => (await sql<{ username: string }>('SELECT username FROM users ORDER BY username')).map((u) => u.username);
  const live = () => instances.filter((i) => i.running);
  /** The instance holding the hub's link (its /healthz counts it). */
  const holder = async (): Promise<CloudInstance | undefined> => {
    for (const i of live()) if ((await i.health().catch(() => undefined))?.body.links === 1) return i;
    return undefined;
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'speakerhub-cluster-'));
    await pg.start();
    database = await pg.freshDatabase();
    await redis.start();
    balancer.port = await freePort();
    const ports = await Promise.all([freePort(), freePort(), freePort()]);
    for (const [n, port] of ports.entries())
      instances.push(new CloudInstance(port, join(dir, `instance-${n}`), { database, redis: redis.url, publicUrl: balancer.url }));
    // All three at once on an empty database: the migrations must take turns.
    await Promise.all(instances.map((i) => i.start()));
    await balancer.start(ports);

    for (const u of ['alice', 'bob', 'victim', 'carol']) await signup(balancer.url, u);
    // `speakerhub cloud client add` straight on the cluster's database.
    const added = await runCli([
      'cloud',
      'client',
      'add',
      '--data',
      join(dir, 'cli'),
      '--database',
      database,
      '--name',
      'Cluster app',
      '--redirect-uri',
      REDIRECT,
      '--json',
    ]);
    expect(added.err).toBe('');
    client = JSON.parse(added.out);
    aliceToken = (await passwordGrant(balancer.url, client, 'alice')).body.access_token;
    bobToken = (await passwordGrant(balancer.url, client, 'bob')).body.access_token;
    hub = await startLinkedHub(balancer.url, 'alice');
    await hub.waitFor('online');
    await until('the link is counted by one instance', async () => (await holder()) !== undefined);
  });

  afterAll(async () => {
    await hub?.close();
    await balancer.stop();
    for (const i of instances) await i.kill();
    await redis.stop();
    await pg.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('three instances started together migrated the schema once; each reports healthy', async () => {
    const versions = await sql<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
    expect(versions.map((v) => Number(v.version))).toEqual(MIGRATIONS.map((_m, i) => i + 1));
    const ids = new Set<string>();
    for (const i of instances) {
      const h = await i.health();
      expect(h.status).toBe(200);
      expect(h.body).toMatchObject({ status: 'ok', database: 'ok', redis: 'ok' });
      ids.add(h.body.instance!);
    }
    expect(ids.size).toBe(3);
  });

  test('relayed requests through every instance reach the hub, wherever its link landed', async () => {
    const h = await holder();
    expect(live().filter((i) => i !== h)).toHaveLength(2);
    for (const i of instances) {
      const s = await call(i.url, '/api/v1/init_session', aliceToken);
      expect(s.status).toBe(200);
      const list = await call(i.url, `/api/v1/device_list?SessionToken=${s.body.SessionToken}`, aliceToken);
      expect(list.status).toBe(200);
      expect(list.body.DeviceList).toHaveLength(3);
    }
    // Through the balancer (round robin over all three), many in parallel.
    const many = await Promise.all(Array.from({ length: 30 }, () => call(balancer.url, '/api/v1/init_session', aliceToken)));
    expect(many.map((r) => r.status)).toEqual(many.map(() => 200));
    // The hub's own errors travel back unchanged from another instance.
    const other = live().find((i) => i !== h)!;
    const s = (await call(other.url, '/api/v1/init_session', aliceToken)).body.SessionToken;
    const bad = await call(other.url, `/api/v1/set_volume?SessionToken=${s}&Volume=99`, aliceToken);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ Result: 'false', ErrorCode: 'InvalidParameter', Parameter: 'Volume', ResponseOf: 'set_volume' });
  });

  test('a user without a linked hub gets HubOffline at once from every instance', async () => {
    for (const i of instances) {
      const r = await call(i.url, '/api/v1/init_session', bobToken);
      expect(r.status).toBe(503);
      expect(JSON.stringify(r.body)).toContain('HubOffline');
    }
  });

  test('a code issued by one instance is redeemed on another, once', async () => {
    const [a, b, c] = instances;
    const cookie = await webSignin(a.url, 'alice');
    const r = await authorize(a.url, cookie, { response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, state: 'xyz' });
    expect(r.status).toBe(303);
    const code = new URL(r.location!).searchParams.get('code')!;
    const form = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT };
    const auth = { authorization: basic(client.client_id, client.client_secret) };
    const redeemed = await postForm(`${b.url}/oauth/token`, form, auth);
    expect(redeemed.status).toBe(200);
    expect((await call(c.url, '/api/v1/init_session', redeemed.body.access_token)).status).toBe(200);
    const replay = await postForm(`${c.url}/oauth/token`, form, auth);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
  });

  test('a browser session made on one instance works on the others', async () => {
    const cookie = await webSignin(instances[0].url, 'alice');
    for (const i of instances.slice(1)) {
      const res = await fetch(`${i.url}/account`, { headers: { cookie }, redirect: 'manual' });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('alice');
    }
  });

  test('refresh rotation and family revocation hold across instances; revoked tokens are refused by every instance within a second', async () => {
    const [a, b, c] = instances;
    const first = (await passwordGrant(a.url, client, 'alice')).body;
    // Every instance has the access token in its cache now.
    for (const i of instances) expect((await call(i.url, '/api/v1/init_session', first.access_token)).status).toBe(200);
    const auth = { authorization: basic(client.client_id, client.client_secret) };
    const second = await postForm(`${b.url}/oauth/token`, { grant_type: 'refresh_token', refresh_token: first.refresh_token }, auth);
    expect(second.status).toBe(200);
    // The rotation dropped the first access token: every instance refuses it, within a second.
    for (const i of instances)
      await until(
        `${i.url} refuses the rotated-out access token`,
        async () => (await call(i.url, '/api/v1/init_session', first.access_token)).status === 401,
        1000,
      );
    for (const i of instances) expect((await call(i.url, '/api/v1/init_session', second.body.access_token)).status).toBe(200);
    // The first refresh token replayed on a third instance: the whole family is revoked.
    const replay = await postForm(`${c.url}/oauth/token`, { grant_type: 'refresh_token', refresh_token: first.refresh_token }, auth);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    for (const i of instances)
      await until(
        `${i.url} refuses the revoked family's access token`,
        async () => (await call(i.url, '/api/v1/init_session', second.body.access_token)).status === 401,
        1000,
      );
    const late = await postForm(`${a.url}/oauth/token`, { grant_type: 'refresh_token', refresh_token: second.body.refresh_token }, auth);
    expect(late.status).toBe(400);
    expect(late.body.error).toBe('invalid_grant');
  });

  test('password guessing spread over instances and 40 addresses meets one per-username limit; the owner at a known address still gets in', async () => {
    const auth = { authorization: basic(client.client_id, client.client_secret) };
    // The victim signed in once from home, through the third instance: every instance knows the address.
    const home = { ...auth, 'x-forwarded-for': '192.0.2.77' };
    expect((await postForm(`${instances[2].url}/oauth/token`, { grant_type: 'password', username: 'victim', password: PASSWORD }, home)).status).toBe(
      200,
    );
    const statuses: number[] = [];
    for (let n = 0; n < 25; n++) {
      const i = instances[n % 3];
      const r = await postForm(
        `${i.url}/oauth/token`,
        { grant_type: 'password', username: 'victim', password: `guess-${n}-wrong` },
        { ...auth, 'x-forwarded-for': `198.51.100.${n % 40}` },
      );
      statuses.push(r.status);
    }
    // The default per-username burst is 20 (the victim's first sign-in, from an address new then, took one):
    // each instance alone would have allowed all 25.
    expect(statuses.slice(0, 19)).toEqual(Array(19).fill(400));
    expect(statuses.slice(19)).toEqual(Array(6).fill(429));
    // The owner from home, on any instance, is not locked out; nor is the victim's hub.
    for (const i of instances)
      expect((await postForm(`${i.url}/oauth/token`, { grant_type: 'password', username: 'victim', password: PASSWORD }, home)).status).toBe(200);
    expect((await call(instances[1].url, '/api/v1/init_session', aliceToken)).status).toBe(200);
  });

  test('every instance lists the hub, wherever its link landed: /api/account/hubs and /account through the round-robin balancer', async () => {
    // The holder knows its own link; the others learn it from the cluster.
    const h = (await holder())!;
    const own = await call(h.url, '/api/account/hubs', aliceToken);
    expect(own.body.hubs).toHaveLength(1);
    const uuid: string = own.body.hubs[0].HKWHubUUID;
    expect(uuid).not.toBe('');
    // Round robin over three instances, one new connection each: every instance answers twice.
    for (let n = 0; n < 6; n++) {
      const r = await callFresh(balancer.url, '/api/account/hubs', aliceToken);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ username: 'alice', hubs: [{ HKWHubUUID: uuid, connectedAt: own.body.hubs[0].connectedAt }] });
    }
    for (const i of instances) expect((await call(i.url, '/api/account/hubs', aliceToken)).body.hubs).toHaveLength(1);
    const cookie = await webSignin(balancer.url, 'alice');
    for (let n = 0; n < 6; n++) {
      const page = await callFresh(balancer.url, '/account', { cookie });
      expect(page.status).toBe(200);
      expect(page.body).toContain(`Hubs online: <code>${uuid}</code>.`);
      expect(page.body).not.toContain('hubs-partial');
    }
    // A user without a hub sees none, from every instance.
    for (const i of instances) expect((await call(i.url, '/api/account/hubs', bobToken)).body).toEqual({ username: 'bob', hubs: [] });
  });

  test('the cap of 10 hub links per account holds across instances: an 11th link (on any instance) is refused while the 10 answer pings: a link-token holder cannot evict hubs', async () => {
    const linkToken: string = (await postJson(`${balancer.url}/api/account/signin`, { username: 'carol', password: PASSWORD })).body.link_token;
    const carolToken: string = (await passwordGrant(balancer.url, client, 'carol')).body.access_token;
    const uuids = async (base: string) =>
      ((await call(base, '/api/account/hubs', carolToken)).body.hubs as { HKWHubUUID: string }[]).map((x) => x.HKWHubUUID);
    const sockets: WebSocket[] = [];
    const closed: number[] = [];
    try {
      // Links spread over the three instances (at most 4 each: no instance reaches the cap alone).
      for (let n = 0; n < 11; n++) {
        const ws = new WebSocket(`ws://127.0.0.1:${instances[n % 3].port}/hub/link`, { headers: { authorization: `Bearer ${linkToken}` } });
        sockets.push(ws);
        ws.on('close', (code) => closed.push(n * 10_000 + code));
        await new Promise<void>((resolve, reject) => {
          ws.once('open', resolve);
          ws.once('error', reject);
        });
        ws.send(JSON.stringify({ t: 'hello', uuid: `cap-${n}`, version: 'test' }));
        if (n < 10) await until(`link ${n} is listed`, async () => (await uuids(instances[(n + 1) % 3].url)).includes(`cap-${n}`));
      }
      // The newest (the 11th, on the second instance) was refused; the 10 live ones stay, listed everywhere.
      await until('the newest link is refused', async () => closed.length > 0);
      expect(closed).toEqual([10 * 10_000 + 4003]);
      const want = Array.from({ length: 10 }, (_x, n) => `cap-${n}`);
      for (const i of instances)
        await until(`instance ${i.port} lists the 10 first`, async () => JSON.stringify(await uuids(i.url)) === JSON.stringify(want));
      // The owner revokes every other link token (through any instance): all 10 links close, wherever they are.
      const closedBefore = closed.length;
      const fresh = await postJson(`${balancer.url}/api/account/signin`, { username: 'carol', password: PASSWORD, revoke_other_links: true });
      expect(fresh.body.revoked_link_tokens).toBe(1);
      await until('every link opened with the revoked token is closed', async () => closed.length === closedBefore + 10);
      expect(closed.slice(closedBefore).map((c) => c % 10_000)).toEqual(Array(10).fill(4001));
    } finally {
      for (const ws of sockets) ws.close();
    }
    await until('carol has no links left', async () => (await uuids(balancer.url)).length === 0);
  });

  test('SIGKILL the instance holding the link: requests in flight are answered, the hub relinks to another, nothing stored is lost', async () => {
    const before = await counts();
    const h = (await holder())!;
    const others = live().filter((i) => i !== h);
    // Requests in flight through the other instances (routed to the holder) and the balancer.
    // Each on a connection of its own: HAProxy closes a kept-alive client connection without an
    // answer when its server dies (so that clients may retry), and answers only a first request.
    const inFlight = Array.from({ length: 20 }, (_v, n) =>
      callFresh(n % 2 ? others[n % others.length].url : balancer.url, '/api/v1/init_session', aliceToken),
    );
    await h.kill('SIGKILL');
    const answers = await Promise.all(inFlight);
    for (const r of answers) {
      expect([200, 503]).toContain(r.status);
      if (r.status === 503) expect(JSON.stringify(r.body)).toContain('HubOffline');
    }
    await until('the hub relinked to a surviving instance', async () => (await holder()) !== undefined);
    for (const i of live()) expect((await call(i.url, '/api/v1/init_session', aliceToken)).status).toBe(200);
    expect((await call(balancer.url, '/api/v1/init_session', aliceToken)).status).toBe(200);
    expect(await counts()).toEqual(before);
    // The killed instance comes back and serves again (a new instance id; its old lease is gone).
    await h.start();
    await until('the restarted instance is healthy', async () => (await h.health()).status === 200);
    expect((await call(h.url, '/api/v1/init_session', aliceToken)).status).toBe(200);
  });

  /** Requests through the balancer, each on a new connection (round robin): every answer is JSON, none HAProxy's own page. */
  const throughBalancer = async (n: number, token: string) => {
    const out: { status: number; body: any }[] = [];
    for (let k = 0; k < n; k++) out.push(await callFresh(balancer.url, '/api/v1/init_session', token));
    for (const r of out) expect(typeof r.body).toBe('object');
    return out;
  };
  const signupThrough = (base: string, username: string) =>
    fetch(`${base}/api/account/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username, email: `${username}@example.org`, password: PASSWORD }),
    });

  test('Redis lost: every instance stays in the balancer; the holder serves its hub, the others answer JSON HubOffline; sign-up works; back: all recover by themselves', async () => {
    const h = (await holder())!;
    const other = live().find((i) => i !== h)!;
    await redis.kill();
    const lostAt = Date.now();
    await until('the other instance reports Redis unreachable', async () => (await other.health()).status === 503);
    // Ready all the same: the balancer keeps them (its checks every 500 ms, 2 failures to take one out).
    for (const i of live()) expect(await i.ready()).toBe(200);
    const r = await call(other.url, '/api/v1/init_session', aliceToken);
    expect(r.status).toBe(503);
    expect(JSON.stringify(r.body)).toContain('HubOffline');
    expect((await call(h.url, '/api/v1/init_session', aliceToken)).status).toBe(200);
    // Through the balancer, past its checks: the holder's third answers 200, the rest JSON 503 with Retry-After.
    await new Promise((r2) => setTimeout(r2, 1200));
    const through = await throughBalancer(6, aliceToken);
    expect(through.filter((x) => x.status === 200)).toHaveLength(2);
    for (const x of through.filter((y) => y.status !== 200)) expect(x).toMatchObject({ status: 503, body: { ErrorCode: 'HubOffline' } });
    // Sign-up needs only PostgreSQL.
    expect((await signupThrough(balancer.url, 'redisless')).status).toBe(201);
    // Hub lists fall back to each instance's own links, and say so.
    expect((await call(other.url, '/api/account/hubs', aliceToken)).body).toEqual({ username: 'alice', hubs: [], partial: true });
    expect((await call(h.url, '/api/account/hubs', aliceToken)).body).toMatchObject({ hubs: [{ HKWHubUUID: expect.any(String) }], partial: true });
    await redis.start();
    const backAt = Date.now();
    await until('the other instance is healthy again', async () => (await other.health()).status === 200);
    await until(
      'requests through the other instance reach the hub again',
      async () => (await call(other.url, '/api/v1/init_session', aliceToken)).status === 200,
    );
    recovery.redis = Date.now() - backAt;
    for (const i of live()) expect((await call(i.url, '/api/v1/init_session', aliceToken)).status).toBe(200);
    expect((await throughBalancer(3, aliceToken)).map((x) => x.status)).toEqual([200, 200, 200]);
    // The lists are written back to the new Redis by the instances holding the links.
    for (const i of live())
      await until('every instance lists the hub again, whole', async () => {
        const b = (await call(i.url, '/api/account/hubs', aliceToken)).body;
        return b.hubs.length === 1 && b.partial === undefined;
      });
    process.stdout.write(`Redis outage ${backAt - lostAt} ms; relays through every instance again ${recovery.redis} ms after it was back\n`);
  });

  test('PostgreSQL lost: relays with cached tokens keep answering through the balancer; sign-up and token issue answer JSON 503 + Retry-After; back: recovered, nothing lost', async () => {
    // A sign-up answered the instant before the crash: a 201 is a commit, and a commit survives it.
    expect((await signupThrough(balancer.url, 'lastbeforecrash')).status).toBe(201);
    const before = await counts();
    const usersBefore = await usernames();
    await pg.pause();
    let backAt = 0;
    try {
      for (const i of live()) await until(`${i.url} reports the database unreachable`, async () => (await i.health()).status === 503);
      for (const i of live()) expect(await i.ready()).toBe(200);
      const i = live()[0];
      expect((await i.health()).body.database).toBe('unreachable');
      // Past the balancer's checks (500 ms, fall 2): nobody was taken out; cached tokens relay everywhere.
      await new Promise((r) => setTimeout(r, 1200));
      expect((await throughBalancer(6, aliceToken)).map((x) => x.status)).toEqual(Array(6).fill(200));
      const grant = await postForm(
        `${balancer.url}/oauth/token`,
        { grant_type: 'password', username: 'alice', password: PASSWORD },
        { authorization: basic(client.client_id, client.client_secret) },
      );
      expect(grant.status).toBe(503);
      expect(grant.body.error).toBe('temporarily_unavailable');
      expect(grant.headers.get('retry-after')).toBe('5');
      const signupRes = await signupThrough(balancer.url, 'pgless');
      expect(signupRes.status).toBe(503);
      expect(signupRes.headers.get('retry-after')).toBe('5');
      expect(await signupRes.json()).toEqual({ error: 'temporarily_unavailable', error_description: expect.stringContaining('database') });
      const unknownToken = await call(balancer.url, '/api/v1/init_session', 'A'.repeat(43));
      expect(unknownToken.status).toBe(503);
      expect(unknownToken.body.ErrorCode).toBe('Busy');
    } finally {
      await pg.resume();
      backAt = Date.now();
    }
    // Polled on /healthz (each sign-up attempt would spend the address's sign-up allowance).
    for (const i of live()) await until(`${i.url} is healthy again`, async () => (await i.health()).status === 200);
    expect((await signupThrough(balancer.url, 'pgback')).status).toBe(201);
    recovery.postgres = Date.now() - backAt;
    expect((await passwordGrant(live()[1].url, client, 'alice')).status).toBe(200);
    const after = await counts();
    // Nothing lost: every account (by name) and client from before, plus the one signed up after recovery.
    expect(await usernames()).toEqual([...usersBefore, 'pgback'].sort());
    expect({ users: Number(after.users), clients: after.clients }).toEqual({ users: Number(before.users) + 1, clients: before.clients });
    process.stdout.write(`PostgreSQL back: every instance healthy and a sign-up through the balancer done ${recovery.postgres} ms later\n`);
  });

  test('a client-written X-Forwarded-For through the documented HAProxy never counts: forged sign-ups meet the per-address limit of 10', async () => {
    // Last in the suite: it spends the balancer address's sign-up allowance.
    const statuses: number[] = [];
    for (let n = 0; n < 20; n++) {
      const r = await fetch(`${balancer.url}/api/account/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': `203.0.113.${n}` },
        body: JSON.stringify({ username: `forged${n}`, email: `forged${n}@example.org`, password: PASSWORD }),
      });
      statuses.push(r.status);
    }
    // This suite signed up from the same (loopback) address before: at most the burst of 10 in all.
    expect(statuses.filter((x) => x === 201).length).toBeLessThanOrEqual(10);
    expect(statuses.slice(-8)).toEqual(Array(8).fill(429));
  });
});

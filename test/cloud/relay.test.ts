/**
 * The relay end to end on loopback: a cloud, two users each with a real linked hub, and
 * OAuth clients calling the API through the cloud. Every operation of the table through
 * the cloud; the same parsing, dialects and CORS as the local server; ResponseOf;
 * HubOffline; cross-user isolation; links dropped mid-request; re-authentication; heartbeats.
 */
import WebSocket from 'ws';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ERROR_CODES } from '../../src/core/errors';
import { OPERATIONS } from '../../src/operations/table';
import { backoffDelay } from '../../src/util/backoff';
import { cloudSignin, readCredential, saveCredential } from '../../src/cloud-link/credentials';
import { TEST_TOKEN } from '../helpers/hub';
import { rawRequest } from '../rest/util';
import { onCluster, passwordGrant, registerClient, signup, startCloud, PASSWORD, type TestCloud } from './helpers';

/**
 * Through a cluster (cluster-suites.test.ts) four tests do not apply: HAProxy refuses a
 * request line with raw spaces before any instance sees it, caps one address at 200
 * connections (the 256-in-flight test opens more), and the link-restore and late-cloud
 * tests watch one instance's registry while the hub may link to the other.
 */
const notThroughBalancer = onCluster() ? test.skip : test;
import { startLinkedHub, type LinkedHub } from './hub';

let t: TestCloud;
let alice: LinkedHub;
let bob: LinkedHub;
let aliceToken: string;
let bobToken: string;
let carolToken: string;
/** Data folders the tests make themselves (startLinkedHub removes only its own). */
const dirs: string[] = [];
async function tempDir(prefix: string): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

beforeAll(async () => {
  t = await startCloud({ link: { heartbeatMs: 1000, requestTimeoutMs: 5000 } });
  for (const u of ['alice', 'bob', 'carol']) await signup(t.base, u);
  const client = await registerClient(t);
  aliceToken = (await passwordGrant(t.base, client, 'alice')).body.access_token;
  bobToken = (await passwordGrant(t.base, client, 'bob')).body.access_token;
  carolToken = (await passwordGrant(t.base, client, 'carol')).body.access_token;
  // Alice's hub signs in itself (--cloud-username/--cloud-password-file); Bob's uses the
  // link token `speakerhub account signin` saved in its data folder.
  alice = await startLinkedHub(t.base, 'alice');
  const bobDir = await tempDir('speakerhub-bob-');
  await saveCredential(bobDir, await cloudSignin(t.base, 'bob', PASSWORD));
  bob = await startLinkedHub(t.base, 'bob', { dataDir: bobDir, withPassword: false, speakers: 2 });
  await Promise.all([alice.waitFor('online'), bob.waitFor('online')]);
}, 60_000);

afterAll(async () => {
  await alice?.close();
  await bob?.close();
  await t?.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function call(base: string, path: string, token: string, init: RequestInit = {}) {
  const res = await fetch(base + path, { ...init, headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) } });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body, headers: res.headers };
}
const viaCloud = (path: string, token = aliceToken) => call(t.base, path, token);
const local = (hub: LinkedHub, path: string) => call(hub.base, path, TEST_TOKEN);

async function session(token = aliceToken): Promise<string> {
  const r = await viaCloud('/api/v1/init_session', token);
  expect(r.status).toBe(200);
  return r.body.SessionToken;
}

describe('every operation through the cloud', () => {
  test('each answers as the hub does, with ResponseOf exactly on the operations the spec lists', async () => {
    const s = await session();
    const devices = (await local(alice, `/api/v1/device_list?SessionToken=${s}`)).body.DeviceList;
    const media = (await local(alice, `/api/v1/media_list?SessionToken=${s}`)).body.MediaList;
    const values: Record<string, string> = {
      DeviceID: devices[0].DeviceID,
      DeviceIDList: devices.map((d: { DeviceID: string }) => d.DeviceID).join(','),
      PersistentID: media[0].PersistentID,
    };
    const readOnly = new Set([
      'device_count',
      'device_list',
      'device_info',
      'media_list',
      'playback_status',
      'is_playing',
      'get_volume',
      'get_volume_device',
    ]);
    // "$X" in an example is what an earlier example's answer set (exampleCaptures: announce → AnnouncementID).
    const captured: Record<string, string> = {};
    for (const op of OPERATIONS) {
      const params: Record<string, string> = {};
      for (const [k, v] of Object.entries(op.example)) params[k] = values[k] ?? (v.startsWith('$') ? captured[v.slice(1)] : v);
      if (op.name === 'play_web_media' || op.name.startsWith('play_web_media_')) params.MediaUrl = `${alice.base}/api/v1/openapi.json`;
      // close_session closes a session of its own, so the others keep theirs.
      if (op.needsSession) params.SessionToken = op.name === 'close_session' ? await session() : s;
      const qs = new URLSearchParams(params).toString();
      const r = await viaCloud(`/api/v1/${op.name}${qs ? `?${qs}` : ''}`);
      const { ResponseOf, ...body } = r.body;
      if (op.exampleCaptures && typeof body[op.exampleCaptures.field] === 'string')
        captured[op.exampleCaptures.variable] = body[op.exampleCaptures.field];
      expect({ op: op.name, ResponseOf }).toEqual({ op: op.name, ResponseOf: op.cloudResponseOf ? op.name : undefined });
      if (body.Result === 'false') {
        // Operation-level refusals (NotResumable after a fresh play, …) travel as the hub sent them.
        expect({ op: op.name, status: r.status }).toEqual({ op: op.name, status: ERROR_CODES[body.ErrorCode as keyof typeof ERROR_CODES].status });
        expect(['UnknownOperation', 'InternalError', 'HubOffline', 'HubBusy', 'HubTimeout', 'InvalidParameter', 'Unauthorized']).not.toContain(
          body.ErrorCode,
        );
      } else {
        expect({ op: op.name, status: r.status }).toEqual({ op: op.name, status: 200 });
        expect({ op: op.name, ok: op.response.safeParse(body).success }).toEqual({ op: op.name, ok: true });
      }
      if (readOnly.has(op.name)) {
        const l = await local(alice, `/api/v1/${op.name}?${qs}`);
        expect({ op: op.name, body }).toEqual({ op: op.name, body: l.body });
      }
    }
  }, 60_000);
});

describe('the same requests as the local server', () => {
  test('old dialect, doubled slashes, the SesssionToken misspelling, unencoded values, quotes', async () => {
    const v1 = await viaCloud('/v1/init_session');
    expect(Object.keys(v1.body).sort()).toEqual(['HKWHubUUID', 'ResponseOf', 'SessionID']);
    const sid = v1.body.SessionID;
    expect((await viaCloud(`//api//v1//device_count?SessionID=${sid}`)).body.DeviceCount).toBe('3');
    expect((await viaCloud(`/api/v1/get_volume?SesssionToken="${sid}"`)).body.Volume).toMatch(/^\d+$/);
    const s = await session();
    const dev = (await viaCloud(`/api/v1/device_list?SessionToken=${s}`)).body.DeviceList[0].DeviceID;
    // An unencoded Text with & and spaces (percent-encoded here only because fetch must).
    const r = await viaCloud(`/api/v1/play_tts_selected_speakers?SessionToken=${s}&Text=Tom%20%26%20Jerry&DeviceIDList=${dev}`);
    expect(r.body).toEqual({ Result: 'true' });
    const err = await viaCloud(`/api/v1/set_volume?SessionToken=${s}&Volume=99`);
    expect(err.status).toBe(400);
    expect(err.body).toMatchObject({ Result: 'false', ErrorCode: 'InvalidParameter', Parameter: 'Volume', ResponseOf: 'set_volume' });
    const unknown = await viaCloud('/api/v1/no_such_operation');
    expect(unknown.status).toBe(404);
    expect(unknown.body.ErrorCode).toBe('UnknownOperation');
  });

  notThroughBalancer('a raw request line with spaces is repaired as on the local server', async () => {
    const r = await rawRequest(t.base, 'GET /api/v1/init_session?_="a b" HTTP/1.1', { Authorization: `Bearer ${aliceToken}` });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ ResponseOf: 'init_session', HKWHubUUID: alice.hub.core.uuid });
  });

  test('CORS: the preflight and the response headers match the local server', async () => {
    const pre = (base: string) =>
      fetch(`${base}/api/v1/device_count`, {
        method: 'OPTIONS',
        headers: { origin: 'https://app.example.org', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
      });
    const [c, l] = await Promise.all([pre(t.base), pre(alice.base)]);
    expect(c.status).toBe(l.status);
    for (const h of ['access-control-allow-origin', 'access-control-allow-methods', 'access-control-allow-headers', 'access-control-max-age'])
      expect([h, c.headers.get(h)]).toEqual([h, l.headers.get(h)]);
    const s = await session();
    const get = await fetch(`${t.base}/api/v1/device_count?SessionToken=${s}`, {
      headers: { authorization: `Bearer ${aliceToken}`, origin: 'https://app.example.org' },
    });
    expect(get.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('isolation and availability', () => {
  test("each token reaches only its own user's hub; foreign sessions are unknown there", async () => {
    const a = await viaCloud('/api/v1/init_session', aliceToken);
    const b = await viaCloud('/api/v1/init_session', bobToken);
    expect(a.body.HKWHubUUID).toBe(alice.hub.core.uuid);
    expect(b.body.HKWHubUUID).toBe(bob.hub.core.uuid);
    expect(a.body.HKWHubUUID).not.toBe(b.body.HKWHubUUID);
    expect((await viaCloud(`/api/v1/device_count?SessionToken=${b.body.SessionToken}`, bobToken)).body.DeviceCount).toBe('2');
    // Bob presenting Alice's SessionToken reaches Bob's hub, which never issued it.
    const cross = await viaCloud(`/api/v1/device_count?SessionToken=${a.body.SessionToken}`, bobToken);
    expect(cross.body.ErrorCode).toBe('SessionNotFound');
    // Other credentials are not API tokens: a hub's link token, a query access_token, no token.
    const link = (await readCredential(bob.dataDir))!.linkToken;
    expect((await viaCloud('/api/v1/init_session', link)).status).toBe(401);
    const q = await fetch(`${t.base}/api/v1/init_session?access_token=${aliceToken}`);
    expect(q.status).toBe(401);
    const none = await fetch(`${t.base}/api/v1/init_session`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(await none.json()).toMatchObject({ Result: 'false', ErrorCode: 'Unauthorized' });
  });

  test('a user with no hub online gets 503 HubOffline (never a hang: the request returns)', async () => {
    const r = await viaCloud('/api/v1/init_session', carolToken);
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ Result: 'false', ErrorCode: 'HubOffline', ResponseOf: 'init_session' });
    expect(r.body.ErrorMessage).toMatch(/speakerhub hub --cloud/);
  });
});

describe('link faults', () => {
  test('a link dropped while a request is in flight: that request gets HubOffline, the hub relinks, the next succeeds', async () => {
    const s = await session();
    const ext = alice.link as unknown as { onRequest(ws: WebSocket, text: string): void };
    const original = ext.onRequest;
    let dropped = false;
    ext.onRequest = function (this: typeof ext, ws: WebSocket, text: string) {
      if (!dropped && text.includes('"device_count"')) {
        dropped = true;
        alice.link.dropLink(); // the request reached the hub, which vanishes before answering
        return;
      }
      return original.call(this, ws, text);
    };
    try {
      const r = await viaCloud(`/api/v1/device_count?SessionToken=${s}`);
      expect(r.status).toBe(503);
      expect(r.body.ErrorCode).toBe('HubOffline');
      expect(r.body.ErrorMessage).toMatch(/dropped while the request was in flight/);
      await alice.waitFor('online');
      expect((await viaCloud(`/api/v1/device_count?SessionToken=${s}`)).body.DeviceCount).toBe('3');
    } finally {
      ext.onRequest = original;
    }
  });

  notThroughBalancer('a request made while the link is being restored waits for the hub and succeeds', async () => {
    await signup(t.base, 'dave');
    const daveToken = (await passwordGrant(t.base, await registerClient(t), 'dave')).body.access_token;
    const dave = await startLinkedHub(t.base, 'dave');
    try {
      await dave.waitFor('online');
      const s = await session(daveToken);
      // Hold the hub's reconnection until the request is waiting at the cloud.
      const ext = dave.link as unknown as { connect(): void };
      const connect = ext.connect;
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      ext.connect = function (this: unknown) {
        void gate.then(() => connect.call(this));
      };
      const registry = t.cloud.context.registry as unknown as { waitingCount: number; count: number };
      const before = registry.count;
      dave.link.dropLink();
      while (registry.count >= before) await new Promise((r) => setTimeout(r, 5));
      const pending = viaCloud(`/api/v1/get_volume?SessionToken=${s}`, daveToken);
      while (registry.waitingCount < 1) await new Promise((r) => setTimeout(r, 5));
      release();
      const r = await pending;
      expect(r.status).toBe(200);
      expect(r.body.Volume).toMatch(/^\d+$/);
    } finally {
      await dave.close();
    }
  });

  test('a refused link token makes the hub sign in again (re-authentication)', async () => {
    const cred = (await readCredential(alice.dataDir))!;
    const dir = await tempDir('speakerhub-reauth-');
    await saveCredential(dir, { ...cred, linkToken: 'revoked-or-unknown-token-000000000000000000' });
    const h = await startLinkedHub(t.base, 'alice', { dataDir: dir });
    try {
      await h.waitFor('online');
      expect((await readCredential(dir))!.linkToken).not.toBe('revoked-or-unknown-token-000000000000000000');
    } finally {
      await h.close();
    }
  });

  test('the cloud drops a link that stops answering heartbeats', async () => {
    const token = (await cloudSignin(t.base, 'carol', PASSWORD)).linkToken;
    const ws = new WebSocket(`${t.base.replace('http', 'ws')}/hub/link`, { headers: { authorization: `Bearer ${token}` }, autoPong: false });
    // Through a balancer the dropped socket may end in a reset: the close code is what counts.
    ws.on('error', () => undefined);
    await new Promise((resolve) => ws.once('open', resolve));
    const closed = await new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    expect(closed).toBe(1006); // terminated, not closed politely
  });

  notThroughBalancer(
    'a hub that does not answer: 256 requests in flight, the next gets HubBusy at once, then all HubTimeout',
    async () => {
      // A simulated hub for Carol that accepts requests and never answers them.
      const token = (await cloudSignin(t.base, 'carol', PASSWORD)).linkToken;
      const ws = new WebSocket(`${t.base.replace('http', 'ws')}/hub/link`, { headers: { authorization: `Bearer ${token}` } });
      let received = 0;
      ws.on('message', () => received++);
      await new Promise((resolve) => ws.once('open', resolve));
      try {
        const stuck = Array.from({ length: 256 }, () => viaCloud('/api/v1/init_session', carolToken));
        while (received < 256) await new Promise((r) => setTimeout(r, 10));
        const busy = await viaCloud('/api/v1/init_session', carolToken);
        expect(busy.status).toBe(503);
        expect(busy.body.ErrorCode).toBe('HubBusy');
        const answers = await Promise.all(stuck);
        expect(new Set(answers.map((a) => `${a.status} ${a.body.ErrorCode}`))).toEqual(new Set(['504 HubTimeout']));
      } finally {
        ws.terminate();
      }
    },
    30_000,
  );

  test('an unknown link token is refused with 401 before any WebSocket exists', async () => {
    const ws = new WebSocket(`${t.base.replace('http', 'ws')}/hub/link`, { headers: { authorization: 'Bearer nope' } });
    ws.on('error', () => undefined);
    const status = await new Promise<number>((resolve) => ws.once('unexpected-response', (_req, res) => resolve(res.statusCode!)));
    expect(status).toBe(401);
    ws.terminate();
  });

  test('reconnect delays grow exponentially with jitter and never exceed 10 s', () => {
    expect(backoffDelay(0, 500, 10_000, () => 0)).toBe(250);
    expect(backoffDelay(0, 500, 10_000, () => 1)).toBe(500);
    expect(backoffDelay(3, 500, 10_000, () => 1)).toBe(4000);
    for (let a = 0; a < 50; a++) {
      const d = backoffDelay(a, 500, 10_000);
      expect(d).toBeLessThanOrEqual(10_000);
      expect(d).toBeGreaterThanOrEqual(Math.min(10_000, 500 * 2 ** a) / 2);
    }
  });
});

test('the hub refuses to start with --cloud and no sign-in, saying what to run', async () => {
  const dir = await tempDir('speakerhub-nosignin-');
  await writeFile(join(dir, 'x'), '');
  await expect(startLinkedHub(t.base, 'alice', { dataDir: dir, withPassword: false })).rejects.toThrow(/speakerhub account signin --cloud/);
});

notThroughBalancer('a hub whose cloud is unreachable at start runs locally and links once the cloud is up', async () => {
  const { createServer } = await import('node:net');
  const port = await new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as { port: number }).port;
      srv.close(() => resolve(p));
    });
  });
  const h = await startLinkedHub(`http://127.0.0.1:${port}`, 'ivy');
  let later: TestCloud | undefined;
  try {
    expect(h.link.state).not.toBe('online');
    expect((await local(h, '/api/v1/init_session')).status).toBe(200);
    later = await startCloud({ port });
    await signup(later.base, 'ivy');
    await h.waitFor('online');
    expect(later.cloud.context.registry.count).toBe(1);
  } finally {
    await h.close();
    await later?.close();
  }
});

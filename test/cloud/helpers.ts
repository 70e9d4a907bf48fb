import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { Clock } from '../../src/core/clock';
import { createLogger } from '../../src/logger';
import { CloudServer, type CloudOptions } from '../../src/cloud/server';

export const PASSWORD = 'correct horse battery';

export interface TestCloud {
  cloud: CloudServer;
  base: string;
  dataDir: string;
  logs: string[];
  close(): Promise<void>;
}

/** Generous limits, so suites making many requests are not throttled (the limit test sets its own). */
export const RELAXED_LIMITS = {
  signinByAddress: { burst: 10_000, perSecond: 1000 },
  signinByUser: { burst: 10_000, perSecond: 1000 },
  signinByUsername: { burst: 10_000, perSecond: 1000 },
  relay: { burst: 100_000, perSecond: 10_000 },
  token: { burst: 10_000, perSecond: 1000 },
  signup: { burst: 10_000, perSecond: 1000 },
};

let postgres: { freshDatabase(): Promise<string>; url(db: string): string } | undefined;

/** postgres.test.ts runs the suites on its private cluster; the other files use the embedded file. */
export function setPostgres(pg: typeof postgres): void {
  postgres = pg;
}

/** True when the suite runs on PostgreSQL. */
export function onPostgres(): boolean {
  return postgres !== undefined;
}

/** A new empty database URL on PostgreSQL; undefined (the embedded file in the data folder) otherwise. */
export async function freshDatabase(): Promise<string | undefined> {
  return postgres?.freshDatabase();
}

/**
 * cluster-suites.test.ts reruns suites through a cluster: every startCloud() then starts two
 * instances (in this process, sharing the suite's clock) on one PostgreSQL database and a
 * Redis database of their own, behind HAProxy; `base` is the balancer's URL, `cloud` the
 * first instance (its context reaches the shared database).
 */
export interface ClusterPeers {
  /** A Redis URL not used by another test cloud (its own database number: separate rate-limit buckets). */
  nextRedis(): string;
  balancer(port: number, backends: number[]): Promise<{ url: string; stop(): Promise<void> }>;
  freePort(): Promise<number>;
}
let cluster: ClusterPeers | undefined;

export function setCluster(c: ClusterPeers | undefined): void {
  cluster = c;
}

/** True when the suite runs through a cluster (two instances behind a balancer). */
export function onCluster(): boolean {
  return cluster !== undefined;
}

export async function startCloud(options: Partial<CloudOptions> & { clock?: Clock } = {}, dataDir?: string): Promise<TestCloud> {
  if (cluster) return startClusterCloud(cluster, options);
  const dir = dataDir ?? (await mkdtemp(join(tmpdir(), 'speakerhub-cloud-')));
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const cloud = new CloudServer({
    host: '127.0.0.1',
    port: 0,
    dataDir: dir,
    database: await freshDatabase(),
    logger: createLogger({ level: 'debug', stream }),
    rateLimits: RELAXED_LIMITS,
    ...options,
  });
  const base = await cloud.start();
  return {
    cloud,
    base,
    dataDir: dir,
    logs,
    async close() {
      await cloud.stop();
      if (!dataDir) await rm(dir, { recursive: true, force: true });
    },
  };
}

async function startClusterCloud(c: ClusterPeers, options: Partial<CloudOptions>): Promise<TestCloud> {
  const database = await freshDatabase();
  if (!database) throw new Error('a cluster needs PostgreSQL: call setPostgres() first');
  const redis = c.nextRedis();
  const port = await c.freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const dirs: string[] = [];
  const instances: CloudServer[] = [];
  for (let i = 0; i < 2; i++) {
    const dir = await mkdtemp(join(tmpdir(), 'speakerhub-cluster-cloud-'));
    dirs.push(dir);
    const cloud = new CloudServer({
      host: '127.0.0.1',
      dataDir: dir,
      database,
      redis,
      publicUrl,
      logger: createLogger({ level: 'debug', stream }),
      rateLimits: RELAXED_LIMITS,
      ...options,
      port: 0,
    });
    await cloud.start();
    instances.push(cloud);
  }
  const balancer = await c.balancer(
    port,
    instances.map((i) => Number(new URL(i.url).port)),
  );
  return {
    cloud: instances[0],
    base: balancer.url,
    dataDir: dirs[0],
    logs,
    async close() {
      await balancer.stop();
      for (const i of instances) await i.stop();
      for (const d of dirs) await rm(d, { recursive: true, force: true });
    },
  };
}

export async function postForm(
  url: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
    redirect: 'manual',
  });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* html */
  }
  return { status: res.status, body, headers: res.headers };
}

export async function postJson(url: string, json: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(json) });
  return { status: res.status, body: await res.json() };
}

export function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
}

/** Signs a user up through the JSON API. */
export async function signup(base: string, username: string, password = PASSWORD): Promise<void> {
  const r = await postJson(`${base}/api/account/signup`, { username, email: `${username}@example.org`, password });
  if (r.status !== 201) throw new Error(`signup ${username}: ${r.status} ${JSON.stringify(r.body)}`);
}

/** A confidential client registered straight in the store. */
export async function registerClient(
  t: TestCloud,
  redirectUri = 'https://app.example.org/callback',
): Promise<{ client_id: string; client_secret: string }> {
  return t.cloud.context.clients.register({ name: 'Test app', redirectUris: [redirectUri] });
}

export async function passwordGrant(base: string, client: { client_id: string; client_secret: string }, username: string, password = PASSWORD) {
  return postForm(
    `${base}/oauth/token`,
    { grant_type: 'password', username, password },
    { authorization: basic(client.client_id, client.client_secret) },
  );
}

/** Signs in on the web pages; returns the session cookie. */
export async function webSignin(base: string, username: string, password = PASSWORD): Promise<string> {
  const r = await postForm(`${base}/signin`, { username, password, next: '/account' });
  if (r.status !== 303) throw new Error(`web signin ${username}: ${r.status}`);
  return r.headers.get('set-cookie')!.split(';')[0];
}

/**
 * The consent step as a browser does it: GET the authorization page (signed in), then POST
 * its form with the decision. Returns the redirect location (with code or error).
 */
export async function authorize(
  base: string,
  cookie: string,
  params: Record<string, string>,
  decision = 'allow',
): Promise<{ status: number; location: string | null; page: string }> {
  const url = `${base}/oauth/authorize?${new URLSearchParams(params)}`;
  const res = await fetch(url, { headers: { cookie }, redirect: 'manual' });
  const page = await res.text();
  if (res.status !== 200) return { status: res.status, location: res.headers.get('location'), page };
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
  if (!csrf) return { status: res.status, location: null, page };
  const post = await postForm(`${base}/oauth/authorize`, { ...params, csrf, decision }, { cookie });
  return { status: post.status, location: post.headers.get('location'), page: String(post.body) };
}

export function pkcePair(): { verifier: string; challenge: string } {
  const { createHash, randomBytes } = require('node:crypto') as typeof import('node:crypto');
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

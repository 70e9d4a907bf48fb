import { timingSafeEqual } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { AccountError } from './accounts/accounts';
import type { Clients } from './accounts/clients';
import { newSecret } from './secrets';

/**
 * While a cloud runs, `<data>/cloud-admin.json` (mode 0600) names its process, URL and an
 * admin token. `speakerhub cloud client add` uses it to register clients through the
 * running cloud (the embedded database lives in that process's memory, so a second
 * writer to the file would be lost); with no cloud running it opens the database itself.
 * The file also stops a second cloud from using the same embedded database.
 */
export const ADMIN_FILE = 'cloud-admin.json';

export interface AdminInfo {
  pid: number;
  url: string;
  token: string;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The running cloud's admin info, if the file names a cloud that answers. A live PID is not
 * proof: after a crash the file stays, and its PID may be a zombie not yet reaped or, after a
 * power loss, another program's. So the cloud it names must answer GET /admin/ping at its URL
 * with its admin token; anything else is a stale file, and a new cloud may take the folder.
 */
export async function runningCloud(dataDir: string): Promise<AdminInfo | undefined> {
  let info: AdminInfo;
  try {
    info = JSON.parse(await readFile(join(dataDir, ADMIN_FILE), 'utf8')) as AdminInfo;
  } catch {
    return undefined;
  }
  if (typeof info?.pid !== 'number' || info.pid === process.pid || !isAlive(info.pid)) return undefined;
  if (typeof info.url !== 'string' || typeof info.token !== 'string') return undefined;
  try {
    const r = await fetch(new URL('/admin/ping', info.url), {
      headers: { Authorization: `Bearer ${info.token}` },
      signal: AbortSignal.timeout(PING_TIMEOUT_MS),
    });
    await r.body?.cancel();
    return r.status === 204 ? info : undefined;
  } catch {
    return undefined;
  }
}

/** How long a cloud named in the admin file has to answer before the file counts as stale. */
const PING_TIMEOUT_MS = 2000;

export async function writeAdminInfo(dataDir: string, url: string): Promise<AdminInfo> {
  const info = { pid: process.pid, url, token: newSecret() };
  await writeFile(join(dataDir, ADMIN_FILE), `${JSON.stringify(info)}\n`, { mode: 0o600 });
  return info;
}

export async function removeAdminInfo(dataDir: string): Promise<void> {
  await rm(join(dataDir, ADMIN_FILE), { force: true });
}

/**
 * POST /admin/clients {name, redirectUris} with the admin token → {client_id, client_secret};
 * GET /admin/ping with the admin token → 204 (proves this is the cloud the admin file names).
 */
export function adminRoutes(app: FastifyInstance, clients: Clients, token: () => string | undefined): void {
  const authorized = (header: string | undefined): boolean => {
    const expected = token();
    const given = /^Bearer\s+(\S+)$/.exec(header ?? '')?.[1];
    return !!expected && !!given && given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected));
  };
  const refuse = { error: 'unauthorized', error_description: 'The admin token from cloud-admin.json is required.' };
  app.get('/admin/ping', async (req, reply) => (authorized(req.headers.authorization) ? reply.code(204).send() : reply.code(401).send(refuse)));
  app.post('/admin/clients', async (req, reply) => {
    if (!authorized(req.headers.authorization)) return reply.code(401).send(refuse);
    const b = (req.body ?? {}) as { name?: unknown; redirectUris?: unknown };
    try {
      const uris = Array.isArray(b.redirectUris) ? b.redirectUris.map(String) : [];
      return reply.code(201).send(await clients.register({ name: String(b.name ?? ''), redirectUris: uris }));
    } catch (e) {
      if (!(e instanceof AccountError)) throw e;
      return reply.code(400).send({ error: e.code, error_description: e.message, field: e.field });
    }
  });
}

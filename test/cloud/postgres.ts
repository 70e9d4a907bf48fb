import { execFile } from 'node:child_process';
import { chown, mkdtemp, readdir, rm } from 'node:fs/promises';
import { existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';

const run = promisify(execFile);

/**
 * A private PostgreSQL cluster for the cloud suites: initdb + pg_ctl in a temp folder, on a
 * free loopback port, trust authentication, never the system service. As root, the
 * programs run as the `postgres` user (initdb refuses root).
 */
export class PrivatePostgres {
  private dir = '';
  private port = 0;
  private bin = '';

  async start(): Promise<string> {
    this.bin = await binDir();
    this.dir = await mkdtemp(join(tmpdir(), 'speakerhub-pg-'));
    const asRoot = process.getuid?.() === 0;
    if (asRoot) await chown(this.dir, ...(await postgresIds()));
    const as = (cmd: string, args: string[]) =>
      asRoot ? run('runuser', ['-u', 'postgres', '--', join(this.bin, cmd), ...args]) : run(join(this.bin, cmd), args);
    await as('initdb', ['-D', join(this.dir, 'data'), '-U', 'hub', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '-N']);
    this.port = await freePort();
    // fsync and full-page writes off: pause() kills the server, not the machine, and the
    // kernel keeps what it had written. synchronous_commit stays on (the default): off, a
    // commit is answered before its WAL leaves the server's memory, so the kill lost a
    // sign-up the cloud had answered 201 (CI19: 5 users where 6 were due; here, one signed up
    // just before the kill was gone in 4 runs of 6).
    this.startAs = () =>
      as('pg_ctl', [
        '-D',
        join(this.dir, 'data'),
        '-l',
        join(this.dir, 'pg.log'),
        '-w',
        '-o',
        `-p ${this.port} -c listen_addresses=127.0.0.1 -k ${this.dir} -c fsync=off -c full_page_writes=off`,
        'start',
      ]);
    await this.startAs();
    this.stopAs = () => as('pg_ctl', ['-D', join(this.dir, 'data'), '-m', 'immediate', '-w', 'stop']);
    return this.url('postgres');
  }

  private stopAs?: () => Promise<unknown>;
  private startAs?: () => Promise<unknown>;

  /** Stops the server at once (as a crash would), keeping its data: resume() brings it back on the same port. */
  async pause(): Promise<void> {
    await this.stopAs?.();
  }

  async resume(): Promise<void> {
    await this.startAs?.();
  }

  url(db: string): string {
    return `postgres://hub@127.0.0.1:${this.port}/${db}`;
  }

  /** A new empty database, so every suite (and cloud) starts clean. */
  async freshDatabase(): Promise<string> {
    const name = `t_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
    const c = new Client({ connectionString: this.url('postgres') });
    await c.connect();
    try {
      await c.query(`CREATE DATABASE ${name}`);
    } finally {
      await c.end();
    }
    return this.url(name);
  }

  async stop(): Promise<void> {
    await this.stopAs?.().catch(() => undefined);
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }
}

/** Why no private cluster can start here, or undefined when one can. */
export function postgresMissing(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (existsSync(root) && readdirSync(root).some((v) => existsSync(join(root, v, 'bin', 'initdb')))) return undefined;
  return 'initdb not found (Debian package postgresql)';
}

async function binDir(): Promise<string> {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = (await readdir(root)).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a));
    if (versions.length) return join(root, versions[0], 'bin');
  }
  try {
    return (await run('pg_config', ['--bindir'])).stdout.trim();
  } catch {
    throw new Error('PostgreSQL is not installed (initdb not found); run scripts/install-test-deps.sh');
  }
}

async function postgresIds(): Promise<[number, number]> {
  const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
  return [Number(uid.stdout), Number(gid.stdout)];
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

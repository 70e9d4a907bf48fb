import * as net from 'node:net';
/**
 * Configuration errors that name the bad key, and the real CLI: it starts, prints its URL
 * and token, serves the API, stops cleanly on SIGTERM, and refuses a bad config file.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request } from 'node:http';
import { ConfigError, parseConfig } from '../../src/hub-config';
import { httpGet } from './util';

const ROOT = path.join(__dirname, '../..');
const CLI = path.join(ROOT, 'dist/cli.js');

function configError(input: unknown): ConfigError {
  try {
    parseConfig(input);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error(`parseConfig accepted ${JSON.stringify(input)}`);
}

describe('parseConfig names the offending key', () => {
  test.each([
    [{ server: { port: 'x' } }, 'server.port'],
    [{ server: { prot: 1 } }, 'server.prot'],
    [{ server: { port: 70000 } }, 'server.port'],
    [{ server: { token: 'short' } }, 'server.token'],
    [{ server: { auth: 'no' } }, 'server.auth'],
    [{ speakers: { virtual: { count: -1 } } }, 'speakers.virtual.count'],
    [{ speakers: { virtual: { volume: 51 } } }, 'speakers.virtual.volume'],
    [{ speakers: { virtul: {} } }, 'speakers.virtul'],
    [{ tts: { provider: 'nope' } }, 'tts.provider'],
    [{ tts: { maxTextLength: 0 } }, 'tts.maxTextLength'],
    [{ log: { level: 'loud' } }, 'log.level'],
    [{ sessions: { idleMinutes: 0 } }, 'sessions.idleMinutes'],
    [{ media: { folders: 'music' } }, 'media.folders'],
    [{ bogus: true }, 'bogus'],
  ] as [unknown, string][])('%j → %s', (input, key) => {
    const e = configError(input);
    expect(e.message).toContain(key);
    expect(e.problems.some((p) => p.startsWith(key))).toBe(true);
  });

  test('several problems are all reported', () => {
    const e = configError({ server: { port: 'x', prot: 1 }, log: { level: 'loud' } });
    expect(e.message).toContain('server.port');
    expect(e.message).toContain('server.prot');
    expect(e.message).toContain('log.level');
  });

  test('an empty configuration gets the documented defaults', () => {
    const c = parseConfig({});
    expect(c.server).toMatchObject({ enabled: true, port: 8090, auth: true, corsOrigin: '*' });
    expect(c.speakers.virtual.count).toBe(3);
    expect(c.tts.maxTextLength).toBe(1000);
  });
});

// ---- the CLI ------------------------------------------------------------------------------

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/** Builds dist/ when it is missing or older than src/ (the test command normally builds first). */
async function ensureBuilt(): Promise<void> {
  if (existsSync(CLI) && statSync(CLI).mtimeMs >= newestMtime(path.join(ROOT, 'src'))) return;
  const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
  await new Promise<void>((resolve) => {
    // tsc emits even with type errors elsewhere; the CLI's presence is what counts.
    execFile(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: ROOT }, () => resolve());
  });
  if (!existsSync(CLI)) throw new Error('npx tsc -p tsconfig.build.json did not produce dist/cli.js');
}

const children: ChildProcess[] = [];
const tmpDirs: string[] = [];

function tmp(prefix: string): string {
  const d = mkdtempSync(path.join(tmpdir(), prefix));
  tmpDirs.push(d);
  return d;
}

interface Cli {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function runCli(args: string[]): Cli {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, stdout: () => out, stderr: () => err, exit };
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

/** Waits until the CLI printed its REST URL; the API token is read from its data folder. */
async function banner(cli: Cli): Promise<{ base: string; token: string }> {
  const found = new Promise<{ base: string; token: string }>((resolve, reject) => {
    const check = () => {
      const url = /REST API:\s+(http:\/\/\S+?)\/api\/v1\/?\s/.exec(cli.stdout());
      const file = /API token:\s+not shown \(not a terminal\); it is in (\S+)/.exec(cli.stdout());
      if (url && file) {
        cli.child.stdout!.off('data', check);
        resolve({ base: url[1], token: readFileSync(file[1], 'utf8').trim() });
      }
    };
    cli.child.stdout!.on('data', check);
    cli.exit.then(({ code }) => reject(new Error(`the CLI exited (${code}) before printing its URL:\n${cli.stdout()}\n${cli.stderr()}`)));
    check();
  });
  return within(found, 20_000, 'the CLI banner');
}

beforeAll(ensureBuilt, 120_000);
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of tmpDirs) rmSync(d, { recursive: true, force: true });
});

describe('the CLI', () => {
  test('starts, prints its URL and token, serves the API, and exits 0 on SIGTERM', async () => {
    const data = tmp('speakerhub-cli-');
    const cli = runCli(['hub', '--port', '0', '--host', '127.0.0.1', '--data', data, '--virtual-speakers', '2', '--log-level', 'warn']);
    const { base } = await banner(cli);
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(Number(new URL(base).port)).toBeGreaterThan(0);
    // Not on 8090: the hint names the hub's URL, since the CLI looks at 8090 unless told.
    await within(
      new Promise<void>((resolve) => {
        const check = () => cli.stdout().includes('Try:') && (cli.child.stdout!.off('data', check), resolve());
        cli.child.stdout!.on('data', check);
        check();
      }),
      10_000,
      'the Try line',
    );
    expect(cli.stdout()).toContain(`speakerhub speakers --url ${base}`);
    // The token is kept in the data folder, readable by the owner only; stdout is no
    // terminal here, so the banner names the file instead of printing the secret.
    const saved = path.join(data, 'api-token');
    const token = readFileSync(saved, 'utf8').trim();
    expect(token.length).toBeGreaterThanOrEqual(22);
    expect(statSync(saved).mode & 0o077).toBe(0);
    expect(cli.stdout()).not.toContain(token);
    expect(cli.stdout()).toContain(`API token:  not shown (not a terminal); it is in ${saved}`);

    const auth = { Authorization: `Bearer ${token}` };
    expect((await httpGet(`${base}/api/v1/init_session`, {})).status).toBe(401);
    const init = await httpGet(`${base}/api/v1/init_session`, auth);
    expect(init.status).toBe(200);
    const session = init.body.SessionToken as string;
    expect(typeof session).toBe('string');
    expect((await httpGet(`${base}/api/v1/device_count?SessionToken=${session}`, auth)).body).toEqual({ DeviceCount: '2' });

    cli.child.kill('SIGTERM');
    const { code, signal } = await within(cli.exit, 5000, 'exit after SIGTERM');
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    // At log level warn, nothing about a normal run went to stderr.
    expect(cli.stderr()).toBe('');
  }, 30_000);

  test('--snapcast without --drivers runs the Snapcast driver instead of the virtual speakers', async () => {
    // A free port with nothing listening: the driver keeps retrying and the hub runs without speakers.
    const free = await new Promise<number>((resolve) => {
      const srv = net.createServer().listen(0, '127.0.0.1', () => {
        const port = (srv.address() as net.AddressInfo).port;
        srv.close(() => resolve(port));
      });
    });
    const data = tmp('speakerhub-cli-');
    const cli = runCli([
      'hub',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--data',
      data,
      '--snapcast',
      `127.0.0.1:${free}`,
      '--no-samples',
      '--log-level',
      'warn',
    ]);
    const { base, token } = await banner(cli);
    const auth = { Authorization: `Bearer ${token}` };
    const session = (await httpGet(`${base}/api/v1/init_session`, auth)).body.SessionToken as string;
    expect((await httpGet(`${base}/api/v1/device_count?SessionToken=${session}`, auth)).body).toEqual({ DeviceCount: '0' });
    cli.child.kill('SIGTERM');
    expect(await within(cli.exit, 5000, 'exit after SIGTERM')).toMatchObject({ code: 0 });
  }, 30_000);

  test('exits 0 on SIGTERM even while an event-stream client is connected', async () => {
    const data = tmp('speakerhub-cli-');
    const cli = runCli([
      'hub',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--data',
      data,
      '--virtual-speakers',
      '1',
      '--no-samples',
      '--log-level',
      'warn',
    ]);
    const { base, token } = await banner(cli);
    const streamEnded = new Promise<number>((resolve, reject) => {
      const req = request(`${base}/api/v1/events`, { headers: { Authorization: `Bearer ${token}` } }, (res) => {
        res.resume();
        res.on('close', () => resolve(res.statusCode ?? 0));
        cli.child.kill('SIGTERM');
      });
      req.on('error', reject);
      req.end();
    });
    const { code } = await within(cli.exit, 5000, 'exit after SIGTERM with an SSE client');
    expect(code).toBe(0);
    expect(await within(streamEnded, 2000, 'the event stream to end')).toBe(200);
  }, 30_000);

  test.each([
    ['a wrong type', 'server.port', { server: { port: 'x' } }],
    ['an unknown key', 'server.prot', { server: { prot: 1 } }],
    ['a bad nested value', 'speakers.virtual.count', { speakers: { virtual: { count: -2 } } }],
    ['a bad log level', 'log.level', { log: { level: 'loud' } }],
  ] as [string, string, unknown][])(
    'a config file with %s makes the CLI exit 2 naming %s',
    async (_what, key, config) => {
      const dir = tmp('speakerhub-cfg-');
      const file = path.join(dir, 'config.json');
      writeFileSync(file, JSON.stringify(config));
      // No --port flag: flags override the file, and the bad value must be the file's.
      const cli = runCli(['hub', '--config', file, '--host', '127.0.0.1', '--data', path.join(dir, 'data')]);
      const { code } = await within(cli.exit, 10_000, 'exit on a bad config');
      expect(code).toBe(2);
      expect(cli.stderr()).toContain(key);
      expect(cli.stdout()).not.toContain('REST API:');
    },
    20_000,
  );

  test('a config file that is not JSON makes the CLI exit 2 naming the file', async () => {
    const dir = tmp('speakerhub-cfg-');
    const file = path.join(dir, 'config.json');
    writeFileSync(file, '{ server: ');
    const cli = runCli(['hub', '--config', file, '--port', '0', '--data', path.join(dir, 'data')]);
    const { code } = await within(cli.exit, 10_000, 'exit on a non-JSON config');
    expect(code).toBe(2);
    expect(cli.stderr()).toContain(file);
  }, 20_000);
});

/**
 * Every example in the documentation — README.md and every page under docs/ (issue 29) — runs
 * as written (issue 8), against a fresh default hub (the
 * CLI's `hub` command with its defaults: three virtual speakers, the sample tracks, offline
 * TTS) on a free loopback port:
 *
 * - Each ```sh block runs in bash with the docs' base URL and token substituted; `curl`
 *   must get a 2xx answer whose body has no "Result":"false", every command must succeed
 *   (set -euo pipefail). `speakerhub` is a command on PATH, as the Quick start's `npm link`
 *   makes it: a bin folder with a `speakerhub` link to this checkout's dist/cli.js (executable,
 *   its `#!/usr/bin/env node` line runs it) — no shell function stands in for it.
 * - A block whose first line starts with `# not runnable against the default hub` is
 *   skipped; that is the only way out, and the marker is visible to readers.
 * - The Cloud mode walkthrough's blocks (first line `# cloud walkthrough: …`) run in page
 *   order (they are all on docs/cloud.md) as one bash script in a temporary folder, against a cloud on a free loopback port
 *   substituted for 8080: variables and files carry from block to block; the commands that
 *   keep running (the cloud, the linked hub) are started in the background, each followed by
 *   a wait for its positive signal (the cloud's banner; the hub's link relaying
 *   init_session), and stopped after the test.
 * - ```js blocks that use the package run with node, the package resolved to this checkout.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EXAMPLE } from '../src/operations/table';
import { CLI, ROOT, ensureBuilt, killAll, runCli, waitForBanner, within, type Cli } from './helpers/cli';
import { allBlocks, type Block } from './helpers/docs';

export const NOT_RUNNABLE = '# not runnable against the default hub';
export const CLOUD_WALKTHROUGH = '# cloud walkthrough: runs in order with a cloud on 127.0.0.1:8080';

const blocks = allBlocks();
const shell = blocks.filter((b) => ['sh', 'bash', 'shell'].includes(b.lang));
const cloudWalkthrough = shell.filter((b) => b.code.trimStart().startsWith(CLOUD_WALKTHROUGH));
const runnable = shell.filter((b) => !b.code.trimStart().startsWith(NOT_RUNNABLE) && !cloudWalkthrough.includes(b));
const js = blocks.filter((b) => b.lang === 'js' && b.code.includes("require('homebridge-speakerhub')"));

let hub: Cli;
let port: string;
let mqttPort: string | undefined;
let token: string;
let dataDir: string;
let binDir: string;
const tmpDirs: string[] = [];

beforeAll(async () => {
  await ensureBuilt();
  dataDir = mkdtempSync(path.join(tmpdir(), 'speakerhub-readme-'));
  tmpDirs.push(dataDir);
  // MQTT on a free port too (1883 may be taken); the MQTT examples are pointed at it below.
  hub = runCli(['hub', '--port', '0', '--host', '127.0.0.1', '--data', dataDir, '--log-level', 'warn', '--mqtt-port', '0']);
  const { base } = await waitForBanner(hub);
  port = new URL(base).port;
  mqttPort = /MQTT:\s+mqtt:\/\/[^\s:]+:(\d+)/.exec(hub.stdout())?.[1];
  token = readFileSync(path.join(dataDir, 'api-token'), 'utf8').trim();
  // What `npm link` does: an executable `speakerhub` on PATH that is this checkout's CLI.
  binDir = mkdtempSync(path.join(tmpdir(), 'speakerhub-readme-bin-'));
  tmpDirs.push(binDir);
  chmodSync(CLI, 0o755);
  symlinkSync(CLI, path.join(binDir, 'speakerhub'));
}, 120_000);

afterAll(async () => {
  if (hub && hub.child.exitCode === null) {
    hub.child.kill('SIGTERM');
    await within(hub.exit, 10_000, 'hub exit').catch(() => undefined);
  }
  killAll();
  for (const d of tmpDirs) rmSync(d, { recursive: true, force: true });
});

function run(
  cmd: string,
  args: string[],
  input: string | undefined,
  env: Record<string, string>,
  cwd = ROOT,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 110_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
    child.stdin.end(input ?? '');
  });
}

/** The docs' base URL, token, data folder and MQTT port become the test hub's. */
function substitute(code: string): string {
  return code
    .replaceAll('~/.speakerhub/', `${dataDir}/`)
    .replace(/\b(mosquitto_(?:pub|sub)) -h 127\.0\.0\.1 /g, `$1 -h 127.0.0.1 -p ${mqttPort ?? 1883} `)
    .replaceAll('127.0.0.1:8090', `127.0.0.1:${port}`)
    .replaceAll('127.0.0.1%3A8090', `127.0.0.1%3A${port}`)
    .replaceAll('<the token>', token);
}

/** The shell functions every example runs with: the checkout's CLI, and a curl that fails on errors. */
function commands(): string {
  return `export PATH=${binDir}:"$PATH"
curl() {
  local out
  if ! out=$(command curl --fail-with-body "$@"); then printf '%s\\n' "$out" >&2; echo "docs example failed: curl $*" >&2; return 1; fi
  printf '%s\\n' "$out"
  if [[ "$out" == *'"Result":"false"'* ]]; then echo "docs example failed: curl $* answered $out" >&2; return 1; fi
}
`;
}

function preamble(): string {
  return `set -euo pipefail
export SPEAKERHUB_URL=http://127.0.0.1:${port} SPEAKERHUB_TOKEN=${token} SPEAKERHUB_DATA_DIR=${dataDir}
T=${token}
${commands()}`;
}

test('the docs have runnable shell examples, and skip only visibly marked ones', () => {
  expect(runnable.length).toBeGreaterThanOrEqual(3);
  // README.md and the pages under docs/ are all read (a page that moved out of the README stays checked).
  expect(new Set(shell.map((b) => b.file)).size).toBeGreaterThan(1);
  for (const b of shell.filter((x) => !runnable.includes(x) && !cloudWalkthrough.includes(x)))
    expect(b.code.split('\n')[0]).toMatch(/^# not runnable against the default hub: \S/);
});

test("the example IDs are the default hub's", async () => {
  const r = await run(
    'bash',
    [
      '-c',
      `${preamble()}\nS=$(curl -s -H "Authorization: Bearer $T" "http://127.0.0.1:${port}/api/v1/init_session" | jq -r .SessionToken)\ncurl -s -H "Authorization: Bearer $T" "http://127.0.0.1:${port}/api/v1/device_list?SessionToken=$S"; echo; curl -s -H "Authorization: Bearer $T" "http://127.0.0.1:${port}/api/v1/media_list?SessionToken=$S"`,
    ],
    undefined,
    {},
  );
  expect(r.code).toBe(0);
  expect(r.out).toContain(EXAMPLE.deviceId);
  expect(r.out).toContain(EXAMPLE.otherDeviceId);
  expect(r.out).toContain(EXAMPLE.persistentId);
  const sample = await fetch(EXAMPLE.mediaUrl.replace('127.0.0.1:8090', `127.0.0.1:${port}`));
  expect(sample.status).toBe(200);
  expect(sample.headers.get('content-type')).toBe('audio/wav');
  expect(
    Buffer.from(await sample.arrayBuffer())
      .subarray(0, 4)
      .toString(),
  ).toBe('RIFF');
});

describe('shell examples', () => {
  test.each(runnable.map((b) => [b.file, b.line, b] as const))(
    '%s line %i runs',
    async (_file, _line, block) => {
      const r = await run('bash', ['-c', preamble() + substitute(block.code)], undefined, {});
      if (r.code !== 0) throw new Error(`${block.file} example at line ${block.line} failed (exit ${r.code}):\n${r.out}`);
    },
    120_000,
  );
});

describe('library examples', () => {
  test.each(js.map((b) => [b.file, b.line, b] as const))(
    '%s line %i runs with node',
    async (_file, _line, block) => {
      const dir = mkdtempSync(path.join(tmpdir(), 'speakerhub-readme-js-'));
      tmpDirs.push(dir);
      mkdirSync(path.join(dir, 'node_modules'));
      symlinkSync(ROOT, path.join(dir, 'node_modules', 'homebridge-speakerhub'), 'dir');
      writeFileSync(path.join(dir, 'example.js'), block.code);
      // As written; only the temp folder is the test's (the example keeps its data under it).
      const r = await run(process.execPath, ['example.js'], undefined, { TMPDIR: dir }, dir);
      if (r.code !== 0) throw new Error(`${block.file} example at line ${block.line} failed (exit ${r.code}):\n${r.out}`);
      expect(r.out).toMatch(/REST API at http:\/\/127\.0\.0\.1:\d+\/api\/v1\//);
    },
    60_000,
  );
});

/** The walkthrough's own folder (docs/cloud.md: `mkdir -p ~/speakerhub-cloud-demo`), under the test's HOME. */
const DEMO = 'speakerhub-cloud-demo';

describe('the cloud walkthrough', () => {
  let dir: string;
  let cloudPort: number;

  /** A free loopback port for the cloud (the docs' 8080 may be taken on this machine). */
  const freePort = () =>
    new Promise<number>((resolve, reject) => {
      const srv = createServer();
      srv.once('error', reject);
      srv.listen(0, '127.0.0.1', () => {
        const { port: p } = srv.address() as { port: number };
        srv.close(() => resolve(p));
      });
    });

  /**
   * A command that keeps running (`speakerhub cloud`, `speakerhub hub`) starts in the
   * background, on loopback (the hub on free ports), its pid recorded for the cleanup, and
   * the script goes on once its positive signal arrives.
   */
  function background(line: string): string {
    const args = line.replace(/^(npx )?speakerhub /, '');
    const cloud = args.startsWith('cloud');
    const extra = cloud ? '--host 127.0.0.1 --log-level warn' : '--host 127.0.0.1 --port 0 --mqtt-port 0 --log-level info';
    const log = cloud ? 'cloud.log' : 'hub.log';
    const ready = cloud
      ? `grep -q 'SpeakerHub Cloud is running' ${log}`
      : `command curl -sf -o /dev/null -H "Authorization: Bearer \${T:?}" http://127.0.0.1:${cloudPort}/api/v1/init_session`;
    return `node ${CLI} ${args} ${extra} </dev/null >${log} 2>&1 &\necho $! >> ${dir}/pids\nwait_for ${log} $! '${ready.replaceAll("'", `'\\''`)}'`;
  }

  function script(): string {
    const lines = [
      'set -euo pipefail',
      commands(),
      // Polls a positive signal (bounded), failing at once if the process it waits for exited.
      `wait_for() {
  for _ in $(seq 600); do
    if eval "$3"; then return 0; fi
    if ! kill -0 "$2" 2>/dev/null; then echo "docs example failed: the process logging to $1 exited:" >&2; cat "$1" >&2; return 1; fi
    sleep 0.1
  done
  echo "docs example failed: no ready signal ($3); $1 says:" >&2; cat "$1" >&2; return 1
}`,
    ];
    for (const b of cloudWalkthrough) {
      lines.push(`echo '::block ${b.file}:${b.line}'`);
      const code = b.code.replaceAll('127.0.0.1:8080', `127.0.0.1:${cloudPort}`).replace(/ --port 8080\b/g, ` --port ${cloudPort}`);
      for (const line of code.split('\n')) lines.push(/^(npx )?speakerhub (cloud --port|hub )/.test(line) ? background(line) : line);
    }
    return lines.join('\n');
  }

  /** What each block printed, by the block's first code line. */
  function outputs(out: string): Map<Block, string> {
    const m = new Map<Block, string>();
    for (const b of cloudWalkthrough) {
      const start = out.indexOf(`::block ${b.file}:${b.line}\n`);
      const next = out.indexOf('::block ', start + 1);
      m.set(b, out.slice(start, next < 0 ? undefined : next));
    }
    return m;
  }

  const blockWith = (text: string) => {
    const b = cloudWalkthrough.find((x) => x.code.includes(text));
    if (!b) throw new Error(`no cloud walkthrough block contains ${text}`);
    return b;
  };
  const lastJson = (text: string) =>
    JSON.parse(
      text
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .at(-1) ?? 'null',
    ) as Record<string, unknown>;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'speakerhub-readme-cloud-'));
    cloudPort = await freePort();
  });

  afterAll(async () => {
    let pids: number[] = [];
    try {
      pids = readFileSync(path.join(dir, 'pids'), 'utf8').split('\n').filter(Boolean).map(Number);
    } catch {
      // The script failed before starting anything.
    }
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    for (const pid of pids.reverse()) {
      if (!alive(pid)) continue;
      process.kill(pid, 'SIGTERM');
      const gone = new Promise<void>((resolve) => {
        const check = () => (alive(pid) ? setTimeout(check, 50) : resolve());
        check();
      });
      await within(gone, 10_000, `process ${pid} stopping`).catch(() => process.kill(pid, 'SIGKILL'));
    }
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  test('the docs have the whole walkthrough, on one page, from starting the cloud to the hub answering through it', () => {
    expect(new Set(cloudWalkthrough.map((b) => b.file)).size).toBe(1);
    expect(cloudWalkthrough.length).toBeGreaterThanOrEqual(8);
    expect(cloudWalkthrough[0].code).toMatch(/speakerhub cloud --port 8080/);
    expect(cloudWalkthrough.at(-1)!.code).toMatch(/set_party_mode/);
  });

  test('runs in order against a real cloud and a linked hub', async () => {
    // HOME is the test's folder: the walkthrough's ~/speakerhub-cloud-demo lands there.
    const r = await run('bash', ['-c', script()], undefined, { HOME: dir }, dir);
    if (r.code !== 0) throw new Error(`the docs' cloud walkthrough failed (exit ${r.code}):\n${r.out}`);
    const out = outputs(r.out);

    const password = lastJson(out.get(blockWith('grant_type=password'))!);
    expect(password).toEqual({ token_type: 'bearer', access_token: expect.any(String), expires_in: 3600, refresh_token: expect.any(String) });
    expect(String(password.access_token).length).toBeGreaterThanOrEqual(40);

    expect(out.get(blockWith('decision=allow'))).toMatch(/^https:\/\/app\.example\.org\/callback\?code=[\w-]+&state=xyz&iss=[^&\s]+$/m);
    const code = lastJson(out.get(blockWith('grant_type=authorization_code'))!);
    expect(code).toMatchObject({ token_type: 'bearer', expires_in: 3600, access_token: expect.any(String), refresh_token: expect.any(String) });

    // The refresh grant's answer is the last tokens.json: a new pair, the old one replaced.
    const refreshed = JSON.parse(readFileSync(path.join(dir, DEMO, 'tokens.json'), 'utf8')) as Record<string, unknown>;
    expect(refreshed).toMatchObject({ expires_in: 3600, access_token: expect.any(String) });
    expect(refreshed.access_token).not.toBe(password.access_token);
    expect(refreshed.refresh_token).not.toBe(password.refresh_token);

    // The hub keeps its link token (not the password) in its data folder, readable only by its user.
    expect(statSync(path.join(dir, DEMO, 'hub-data', 'cloud-link.json')).mode & 0o777).toBe(0o600);
    expect(readFileSync(path.join(dir, DEMO, 'hub-data', 'cloud-link.json'), 'utf8')).not.toContain('correct horse battery');

    expect(lastJson(out.get(blockWith('set_party_mode'))!)).toEqual({ Result: 'true', ResponseOf: 'set_party_mode' });
  }, 120_000);
});

describe('the Quick start makes `speakerhub` a command without root (issue 31 item 8)', () => {
  test('the ~/.local link block runs as written with a fresh HOME, and the linked command runs', async () => {
    const [block] = shell.filter((b) => b.code.split('\n')[0].includes('links into ~/.local'));
    expect(block).toBeDefined();
    expect(block.file).toBe('README.md');
    const home = mkdtempSync(path.join(tmpdir(), 'speakerhub-readme-home-'));
    tmpDirs.push(home);
    const npmCache = (await run('npm', ['config', 'get', 'cache'], undefined, {})).out.trim();
    // No npm_config_* of the npm that runs this test (its prefix would win over the block's).
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
    const r = spawnSync('bash', ['-euo', 'pipefail', '-c', `${block.code}\ncommand -v speakerhub`], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 170_000,
      env: {
        ...env,
        HOME: home,
        npm_config_cache: npmCache,
        npm_config_prefer_offline: 'true',
        npm_config_audit: 'false',
        npm_config_fund: 'false',
        npm_config_update_notifier: 'false',
      },
    });
    const out = `${r.stdout}${r.stderr}`;
    if (r.status !== 0) throw new Error(`${block.file} example at line ${block.line} failed (exit ${r.status}):\n${out}`);
    const lines = r.stdout.trim().split('\n');
    // `speakerhub --version` printed the version, and the command found is the one in ~/.local/bin.
    expect(lines.at(-2)).toBe(JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version);
    expect(lines.at(-1)).toBe(path.join(home, '.local/bin/speakerhub'));
  }, 180_000);
});

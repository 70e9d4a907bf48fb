/**
 * Every example in the README runs as written (issue 8), against a fresh default hub (the
 * CLI's `hub` command with its defaults: three virtual speakers, the sample tracks, offline
 * TTS) on a free loopback port:
 *
 * - Each ```sh block runs in bash with the README's base URL and token substituted; `curl`
 *   must get a 2xx answer whose body has no "Result":"false", every command must succeed
 *   (set -euo pipefail). `speakerhub`/`npx speakerhub` run this checkout's CLI.
 * - A block whose first line starts with `# not runnable against the default hub` is
 *   skipped; that is the only way out, and the marker is visible to readers.
 * - ```js blocks that use the package run with node, the package resolved to this checkout.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EXAMPLE } from '../src/operations/table';
import { CLI, ROOT, ensureBuilt, killAll, runCli, waitForBanner, within, type Cli } from './helpers/cli';

export const NOT_RUNNABLE = '# not runnable against the default hub';

interface Block {
  lang: string;
  code: string;
  line: number;
}

/** The fenced code blocks of a markdown text, with their language tag and first line number. */
export function codeBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) body.push(lines[i]);
    blocks.push({ lang: open[1], code: body.join('\n'), line: start + 1 });
  }
  return blocks;
}

const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const blocks = codeBlocks(README);
const shell = blocks.filter((b) => ['sh', 'bash', 'shell'].includes(b.lang));
const runnable = shell.filter((b) => !b.code.trimStart().startsWith(NOT_RUNNABLE));
const js = blocks.filter((b) => b.lang === 'js' && b.code.includes("require('homebridge-speakerhub')"));

let hub: Cli;
let port: string;
let mqttPort: string | undefined;
let token: string;
let dataDir: string;
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

/** The README's base URL, token, data folder and MQTT port become the test hub's. */
function substitute(code: string): string {
  return code
    .replaceAll('~/.speakerhub/', `${dataDir}/`)
    .replace(/\b(mosquitto_(?:pub|sub)) -h 127\.0\.0\.1 /g, `$1 -h 127.0.0.1 -p ${mqttPort ?? 1883} `)
    .replaceAll('127.0.0.1:8090', `127.0.0.1:${port}`)
    .replaceAll('127.0.0.1%3A8090', `127.0.0.1%3A${port}`)
    .replaceAll('<the token>', token);
}

function preamble(): string {
  return `set -euo pipefail
export SPEAKERHUB_URL=http://127.0.0.1:${port} SPEAKERHUB_TOKEN=${token} SPEAKERHUB_DATA_DIR=${dataDir}
T=${token}
speakerhub() { node ${CLI} "$@"; }
npx() { if [ "$1" = speakerhub ]; then shift; node ${CLI} "$@"; else command npx "$@"; fi; }
curl() {
  local out
  if ! out=$(command curl --fail-with-body "$@"); then printf '%s\\n' "$out" >&2; echo "README example failed: curl $*" >&2; return 1; fi
  printf '%s\\n' "$out"
  if [[ "$out" == *'"Result":"false"'* ]]; then echo "README example failed: curl $* answered $out" >&2; return 1; fi
}
`;
}

test('the README has runnable shell examples, and skips only visibly marked ones', () => {
  expect(runnable.length).toBeGreaterThanOrEqual(3);
  for (const b of shell.filter((x) => !runnable.includes(x))) expect(b.code.split('\n')[0]).toMatch(/^# not runnable against the default hub: \S/);
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
  test.each(runnable.map((b) => [b.line, b]))(
    'README line %i runs',
    async (_line, block) => {
      const r = await run('bash', ['-c', preamble() + substitute(block.code)], undefined, {});
      if (r.code !== 0) throw new Error(`README example at line ${block.line} failed (exit ${r.code}):\n${r.out}`);
    },
    120_000,
  );
});

describe('library examples', () => {
  test.each(js.map((b) => [b.line, b]))(
    'README line %i runs with node',
    async (_line, block) => {
      const dir = mkdtempSync(path.join(tmpdir(), 'speakerhub-readme-js-'));
      tmpDirs.push(dir);
      mkdirSync(path.join(dir, 'node_modules'));
      symlinkSync(ROOT, path.join(dir, 'node_modules', 'homebridge-speakerhub'), 'dir');
      const code = block.code.replaceAll("'/tmp/hub'", JSON.stringify(path.join(dir, 'data'))).replace(/port: 8090/g, 'port: 0');
      writeFileSync(path.join(dir, 'example.js'), code);
      const r = await run(process.execPath, ['example.js'], undefined, {}, dir);
      if (r.code !== 0) throw new Error(`README example at line ${block.line} failed (exit ${r.code}):\n${r.out}`);
      expect(r.out).toMatch(/REST API at http:\/\/127\.0\.0\.1:\d+\/api\/v1\//);
    },
    60_000,
  );
});

/**
 * The CLI keeps V8's optimizing compiler (TurboFan) off while the hub starts and turns it on
 * once the start-up burst is over (src/cli/heap.ts). V8 ignores flags it does not know without
 * a word, so a Node whose V8 renamed the flag would silently lose the optimizer or the saving:
 * both directions are checked on every Node the project supports here.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT, ensureBuilt, killAll, runCli, waitForBanner, within } from '../helpers/cli';
import { NODE24 } from '../nodered/runtime';

const dirs: string[] = [];
beforeAll(ensureBuilt, 120_000);
afterAll(() => {
  killAll();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** V8's %GetOptimizationStatus bit for "optimized by TurboFan". */
const TURBOFANNED = 1 << 6;
const TOKEN = 'v8-flags-token-0123456789abcdef';

const PROBE = `
const heap = require(${JSON.stringify(path.join(ROOT, 'dist/cli/heap.js'))});
const hot = () => (x) => { let s = 0; for (let i = 0; i < 100; i++) s += i * x; return s; };
const turbofanned = (f) => (%GetOptimizationStatus(f) & ${TURBOFANNED}) !== 0;
// Calls f in rounds of 10,000, yielding between them so that V8's background compile can finish
// and be installed (on a loaded machine it lags the calls), until f is optimized or time is up.
async function run(f, ms) {
  const end = Date.now() + ms;
  while (!turbofanned(f) && Date.now() < end) {
    for (let i = 0; i < 10000; i++) f(i);
    await new Promise((resolve) => setImmediate(resolve));
  }
  return %GetOptimizationStatus(f);
}
// startupDone's timer does not hold a process open: this one does, as a hub's server would.
const keep = setInterval(() => undefined, 1000);
(async () => {
  // Off: a second of calls, far more than it takes to be optimized once the compiler is on.
  const during = await run(hot(), 1000);
  await heap.startupDone(true);
  const after = await run(hot(), 20000);
  clearInterval(keep);
  process.stdout.write(JSON.stringify({ during, after }));
})();
`;

const nodes = [process.execPath, ...(existsSync(NODE24) ? [NODE24] : [])];

test.each(nodes)(
  'START_FLAGS turn TurboFan off, startupDone turns it on again (%s)',
  async (node) => {
    const { START_FLAGS } = (await import('../../src/cli/heap')) as typeof import('../../src/cli/heap');
    const child = spawn(node, [...START_FLAGS, '--allow-natives-syntax', '-e', PROBE], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const code = await within(new Promise<number | null>((resolve) => child.on('close', resolve)), 30_000, 'the probe');
    expect({ code, err }).toEqual({ code: 0, err: '' });
    const { during, after } = JSON.parse(out) as { during: number; after: number };
    expect(during & TURBOFANNED).toBe(0);
    expect(after & TURBOFANNED).toBe(TURBOFANNED);
  },
  40_000,
);

test('the hub compiles nothing with TurboFan while it starts, and its request path once it serves', async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'speakerhub-v8-'));
  dirs.push(dataDir);
  // --trace-opt prints each TurboFan compile on stdout, in order with the banner.
  const cli = runCli(
    [
      'hub',
      '--virtual-speakers',
      '100',
      '-d',
      dataDir,
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--mqtt-port',
      '0',
      '--token',
      TOKEN,
      '--log-level',
      'warn',
    ],
    {},
    ['--trace-opt'],
  );
  try {
    const { base } = await waitForBanner(cli);
    const out = cli.stdout;
    const beforeBanner = out().slice(0, out().indexOf(' is running.'));
    // Start-up proper (100 speakers, the MQTT broker and front end, the REST server): nothing.
    expect(beforeBanner.match(/compiling method/g) ?? []).toEqual([]);
    const auth = { Authorization: `Bearer ${TOKEN}` };
    const { SessionToken } = (await (await fetch(`${base}/api/v1/init_session`, { headers: auth })).json()) as { SessionToken: string };
    // Served for a while, the request path is optimized: the compiler is on again.
    const deadline = Date.now() + 20_000;
    while (!/compiling method[^\n]*fastPath/.test(out()) && Date.now() < deadline) {
      await Promise.all(
        Array.from({ length: 50 }, () =>
          fetch(`${base}/api/v1/playback_status?SessionToken=${SessionToken}`, { headers: auth }).then((r) => r.text()),
        ),
      );
    }
    expect(out()).toMatch(/compiling method[^\n]*fastPath/);
  } finally {
    cli.child.kill();
  }
}, 60_000);

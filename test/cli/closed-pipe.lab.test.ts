/**
 * Issue 31, item 3: `speakerhub media | true` printed a 20-line "Unhandled 'error' event …
 * write EPIPE" trace and exited 1. The built CLI runs here against a hub with its stdout a
 * pipe whose reading end is closed before the output is written (as `| true` or `| head -0`
 * do): it must end quietly with exit code 0. The hub itself, whose logs go to stdout, must
 * say so in one line and exit 1, with no trace either.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CLI, ROOT, cliResult, ensureBuilt, killAll, within } from '../helpers/cli';
import { startHub, TEST_TOKEN, type TestHub } from '../helpers/hub';

let h: TestHub;
let env: Record<string, string>;
beforeAll(async () => {
  await ensureBuilt();
  h = await startHub({ speakers: { virtual: { count: 3 } } });
  env = { SPEAKERHUB_URL: h.base, SPEAKERHUB_TOKEN: TEST_TOKEN };
}, 120_000);
afterAll(async () => {
  killAll();
  await h?.close();
});

/** Runs the CLI with stdout a pipe closed at once; resolves with its exit and everything it wrote on stderr. */
async function withClosedStdout(args: string[]): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SPEAKERHUB_')));
  const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...base, ...env } });
  // Our end of the pipe goes away before the CLI has asked the hub anything: its write gets EPIPE.
  child.stdout.destroy();
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  return { ...(await within(exit, 20_000, `speakerhub ${args.join(' ')}`)), stderr };
}

test.each(['media', 'status', 'speakers', 'volume', 'media --json'])(
  'speakerhub %s with its stdout closed ends quietly with exit code 0',
  async (command) => {
    const args = command.split(' ');
    // The command does write something when someone reads it.
    const normal = await cliResult(args, env);
    expect([normal.code, normal.stdout.length > 0]).toEqual([0, true]);
    const r = await withClosedStdout(args);
    expect(r).toEqual({ code: 0, signal: null, stderr: '' });
  },
);

test('speakerhub hub, whose logs go to stdout, ends with one line and exit code 1 when stdout is closed', async () => {
  const data = mkdtempSync(path.join(tmpdir(), 'speakerhub-closed-pipe-'));
  try {
    const args = ['hub', '--port', '0', '--host', '127.0.0.1', '--data', data, '--no-samples', '--virtual-speakers', '1', '--mqtt', 'off'];
    const r = await withClosedStdout(args);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^speakerhub: cannot write to stdout: .*EPIPE/m);
    expect(r.stderr).not.toContain('Unhandled');
  } finally {
    rmSync(data, { recursive: true, force: true });
  }
});

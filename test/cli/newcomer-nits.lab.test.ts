/**
 * Issue 31 item 14, as the newcomer met it: a mistyped --interface is a start-up error (exit 2,
 * one line naming the flag); a mistyped REST operation gets a "did you mean"; the 401 text keeps
 * its word "token" through the redaction of log lines; `npm pack`'s tarball is not left as an
 * untracked file in the clone.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { redactText } from '../../src/redact';
import { ROOT, cliResult, ensureBuilt, killAll, runCli, waitForBanner, within } from '../helpers/cli';

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'speakerhub-nits-'));
  dirs.push(d);
  return d;
};

beforeAll(ensureBuilt, 120_000);
afterAll(() => {
  killAll();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('--interface naming no interface of this machine: exit 2, one line naming --interface and the interfaces there are', async () => {
  const r = await cliResult(['hub', '--interface', 'eth9', '--port', '0', '--host', '127.0.0.1', '--data', tmp(), '--no-samples', '--mqtt', 'off']);
  expect(r.code).toBe(2);
  const lines = r.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(
    /^speakerhub: cannot start: network interface "eth9" has no IPv4 address \(interfaces here: .*lo.*\); name one of them with --interface/,
  );
  expect(r.stdout).not.toContain('REST API');
});

test('a mistyped REST operation answers UnknownOperation with the nearest operation', async () => {
  const data = tmp();
  const hub = runCli(['hub', '--port', '0', '--host', '127.0.0.1', '--data', data, '--no-samples', '--mqtt', 'off', '--log-level', 'warn']);
  try {
    const { base } = await waitForBanner(hub);
    const token = readFileSync(path.join(data, 'api-token'), 'utf8').trim();
    const res = await fetch(`${base}/api/v1/set_volum?Volume=10`, { headers: { Authorization: `Bearer ${token}` } });
    expect(res.status).toBe(404);
    const body = (await res.json()) as Record<string, string>;
    expect(body.ErrorCode).toBe('UnknownOperation');
    expect(body.ErrorMessage).toContain('Did you mean set_volume?');
    // Nothing near: no guess.
    const far = (await (await fetch(`${base}/api/v1/xyzzyplugh`, { headers: { Authorization: `Bearer ${token}` } })).json()) as Record<
      string,
      string
    >;
    expect(far.ErrorMessage).not.toContain('Did you mean');
  } finally {
    hub.child.kill('SIGTERM');
    await within(hub.exit, 15_000, 'hub exit');
  }
}, 60_000);

test('the 401 text keeps "bearer token" through the log redaction; a real bearer credential is still redacted', () => {
  expect(redactText('Unauthorized: The bearer token is missing or wrong.')).toBe('Unauthorized: The bearer token is missing or wrong.');
  expect(redactText('Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345')).not.toContain('abcdefghijklmnop');
  expect(redactText('Bearer tokenabcdefghijklmnop1234')).not.toContain('tokenabcdefghijklmnop1234');
});

test("`npm pack`'s tarball in the clone is ignored by git (docs/running-as-a-service.md: `npm pack` in the clone)", () => {
  const out = execFileSync('git', ['check-ignore', '-v', 'homebridge-speakerhub-0.1.0.tgz'], { cwd: ROOT, encoding: 'utf8' });
  expect(out).toContain('.gitignore');
});

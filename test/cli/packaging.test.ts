/**
 * The systemd unit in packaging/ passes `systemd-analyze verify` (with ExecStart pointed at
 * this checkout's CLI, since the test does not install the package globally), and it uses
 * only environment variable names the hub reads.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { configKeys } from '../../src/config/env';
import { CLI, ROOT } from '../helpers/cli';

const UNIT = readFileSync(path.join(ROOT, 'packaging/speakerhub.service'), 'utf8');

test('systemd-analyze verify accepts the unit', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'speakerhub-unit-'));
  try {
    const file = path.join(dir, 'speakerhub.service');
    writeFileSync(file, UNIT.replace('/usr/local/bin/speakerhub', `${process.execPath} ${CLI}`));
    const r = await new Promise<{ code: number | null; out: string }>((resolve) => {
      execFile('systemd-analyze', ['verify', file], { timeout: 60_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
      );
    });
    // Lines about other units on this machine are not the unit's problems.
    const ours = r.out.split('\n').filter((l) => l.includes('speakerhub.service'));
    expect({ code: r.code, ours }).toEqual({ code: 0, ours: [] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the unit sets only SPEAKERHUB_* variables the hub knows', () => {
  const known = new Set(configKeys().map((k) => k.env));
  const used = [...UNIT.matchAll(/^Environment=(SPEAKERHUB_[A-Z_]+)=/gm)].map((m) => m[1]);
  expect(used.length).toBeGreaterThan(0);
  for (const v of used) expect(known).toContain(v);
});

test('the Dockerfile starts the CLI hub with variables the hub knows', () => {
  const docker = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const known = new Set(configKeys().map((k) => k.env));
  const used = [...docker.matchAll(/(SPEAKERHUB_[A-Z_]+)=/g)].map((m) => m[1]);
  expect(used).toContain('SPEAKERHUB_DATA_DIR');
  for (const v of used) expect(known).toContain(v);
  expect(docker).toContain('ENTRYPOINT ["node", "/app/dist/cli.js"]');
});

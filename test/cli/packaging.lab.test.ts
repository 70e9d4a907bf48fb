/**
 * The systemd unit in packaging/ passes `systemd-analyze verify` (with ExecStart pointed at
 * this checkout's CLI), and it uses only environment variable names the hub reads; the
 * docs' installs from the release tarball work as written (below).
 */
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { configKeys } from '../../src/config/env';
import { VERSION } from '../../src/version';
import { CLI, ensureBuilt, killAll, ROOT, within } from '../helpers/cli';
import { allBlocks } from '../helpers/docs';
import { installHomebridgeDeps, startHomebridge } from '../homebridge/helpers';

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

/**
 * The installs the docs describe, from the release tarball (the package is not on the npm
 * registry): each block of the docs (README.md, docs/) runs as written, with only what would touch this machine moved
 * into a temporary folder — npm's global prefix, Homebridge's storage folder, HOME — and `sudo`
 * dropped. `npm pack` runs with --ignore-scripts from the test's folder: its prepack is the
 * build, which ensureBuilt() did (a build here would rewrite dist/ under the suites running
 * beside this one). Then what was installed is used: the global `speakerhub` starts a hub that
 * serves its page, Homebridge loads the plugin from its storage folder, and Node-RED's user
 * directory holds the node module.
 */
describe('installs from the release tarball, as the docs document them', () => {
  /** The ```sh block of the docs (README.md, docs/**) whose first line contains `marker`. */
  const block = (marker: string): string => {
    const found = allBlocks().filter((b) => b.lang === 'sh' && b.code.split('\n')[0].includes(marker));
    expect(found).toHaveLength(1);
    return found[0].code;
  };
  let dir: string;
  // npm's cache and registry as this machine has them (HOME moves for the Node-RED block).
  const npmCache = execFileSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).trim();
  const run = (script: string, env: Record<string, string>): { code: number; out: string } => {
    const packed = script.replace(/^npm pack\b/m, `npm pack --ignore-scripts --silent ${JSON.stringify(ROOT)}`).replace(/\bsudo /g, '');
    const r = spawnSync('bash', ['-euo', 'pipefail', '-c', packed], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 240_000,
      env: {
        ...process.env,
        npm_config_cache: npmCache,
        npm_config_prefer_offline: 'true',
        npm_config_audit: 'false',
        npm_config_fund: 'false',
        npm_config_update_notifier: 'false',
        ...env,
      },
    });
    return { code: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
  };

  beforeAll(async () => {
    await ensureBuilt();
    dir = mkdtempSync(path.join(tmpdir(), 'speakerhub-install-'));
  }, 180_000);
  afterAll(() => {
    killAll();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('globally (the service section): the speakerhub command, the systemd unit in the package, a hub that serves its page', async () => {
    const prefix = path.join(dir, 'global');
    const env = { npm_config_prefix: prefix, PATH: `${path.join(prefix, 'bin')}:${process.env.PATH}` };
    const r = run(block('installs globally'), env);
    expect(r).toMatchObject({ code: 0 });
    expect(r.out).toContain(`${VERSION}\n`); // speakerhub --version, the last line of the block
    // The next block copies the unit from the installed package.
    const root = execFileSync('npm', ['root', '-g'], { env: { ...process.env, ...env }, encoding: 'utf8' }).trim();
    expect(readFileSync(path.join(root, 'homebridge-speakerhub', 'packaging', 'speakerhub.service'), 'utf8')).toBe(UNIT);
    // The installed command runs a hub (not this checkout's): its banner, its page at /, its API.
    const data = path.join(dir, 'global-data');
    const hub = spawn(path.join(prefix, 'bin', 'speakerhub'), ['hub', '--host', '127.0.0.1', '--port', '0', '--data', data, '--no-samples'], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      hub.stdout.setEncoding('utf8');
      const base = await within(
        new Promise<string>((resolve) =>
          hub.stdout.on('data', (d: string) => {
            out += d;
            const m = /Web page:\s+(http:\/\/127\.0\.0\.1:\d+)\/\s/.exec(out);
            if (m) resolve(m[1]);
          }),
        ),
        60_000,
        'the installed hub banner',
      );
      expect(await (await fetch(`${base}/`)).text()).toContain('<title>SpeakerHub</title>');
      const token = readFileSync(path.join(data, 'api-token'), 'utf8').trim();
      const count = await (await fetch(`${base}/api/v1/init_session`, { headers: { Authorization: `Bearer ${token}` } })).json();
      expect(count.SessionToken).toEqual(expect.any(String));
    } finally {
      hub.kill('SIGTERM');
      await new Promise((r) => hub.once('exit', r));
    }
  }, 300_000);

  test("into Homebridge's storage folder: Homebridge loads the plugin from there and runs its embedded hub", async () => {
    installHomebridgeDeps();
    const storage = path.join(dir, 'homebridge');
    mkdirSync(storage);
    writeFileSync(path.join(storage, 'package.json'), '{"private":true}\n'); // as hb-service keeps one
    const r = run(block('installs into a Homebridge storage folder').replace(/\/var\/lib\/homebridge/g, storage), {});
    expect(r).toMatchObject({ code: 0 });
    const hb = await startHomebridge({
      major: 1,
      storage,
      pluginPath: path.join(storage, 'node_modules'),
      platform: { platform: 'SpeakerHub', name: 'SpeakerHub', hub: { drivers: ['virtual'], samples: false } },
    });
    try {
      await hb.waitFor(/SpeakerHub hub running in Homebridge/, 60_000);
      // -P is the storage folder's node_modules only (strict plugin resolution), where the tarball was unpacked (a copy, no link).
      expect(hb.output.join('\n')).toContain(`Loaded plugin: homebridge-speakerhub@${VERSION}`);
      expect(lstatSync(path.join(storage, 'node_modules', 'homebridge-speakerhub')).isSymbolicLink()).toBe(false);
    } finally {
      await hb.stop();
    }
  }, 300_000);

  test("into Node-RED's user directory: the node module is installed where Node-RED loads it", () => {
    const home = path.join(dir, 'home');
    mkdirSync(path.join(home, '.node-red'), { recursive: true });
    writeFileSync(path.join(home, '.node-red', 'package.json'), '{"name":"node-red-project","private":true}\n'); // as Node-RED makes it
    const r = run(block('installs into your own Node-RED user directory'), { HOME: home });
    expect(r).toMatchObject({ code: 0 });
    const installed = JSON.parse(readFileSync(path.join(home, '.node-red', 'node_modules', 'homebridge-speakerhub', 'package.json'), 'utf8'));
    expect(installed.version).toBe(VERSION);
    expect(Object.keys(installed['node-red'].nodes)).toContain('speakerhub-config');
    const project = JSON.parse(readFileSync(path.join(home, '.node-red', 'package.json'), 'utf8'));
    expect(project.dependencies['homebridge-speakerhub']).toMatch(/homebridge-speakerhub-.*\.tgz$/);
    // Nothing was left in the clone: the tarball went to the folder the block ran in.
    expect(readdirSync(ROOT).filter((f) => f.endsWith('.tgz'))).toEqual([]);
  }, 300_000);
});

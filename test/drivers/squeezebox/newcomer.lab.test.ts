/**
 * Issue 31 items 4 and 10, as a newcomer meets them with a real squeezelite on loopback and the
 * hub run by its CLI:
 * - the hub on a machine without ffmpeg says so at start (banner and log, naming the fix), and a
 *   play then fails at once with an error that says to install ffmpeg (not `spawn ffmpeg ENOENT`);
 * - a player's volume survives a hub restart: the hub keeps it (by MAC) in its data folder and
 *   sends it when the player says HELO again, instead of the default 20;
 * - a play the player cannot play (a 404) fails with the reason, exit 1 (issue 31 item 2),
 *   instead of "Playing … on Kitchen" and a stop 0.8 s later.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodeWav } from '../../../src/audio/wav';
import { cliResult, ensureBuilt, killAll, runCli, waitForBanner, within, type Cli } from '../../helpers/cli';
import { labSuite } from '../../helpers/labs';
import { freePort, squeezeliteInstalled } from './harness';
import { eventually } from '../../helpers/wait';

const describeIf = labSuite('squeezelite on loopback', squeezeliteInstalled());

describeIf('Squeezebox for a newcomer: ffmpeg missing, volume across restarts', () => {
  const dirs: string[] = [];
  const procs: ChildProcess[] = [];
  const tmp = () => {
    const d = mkdtempSync(path.join(tmpdir(), 'sb-newcomer-'));
    dirs.push(d);
    return d;
  };

  beforeAll(ensureBuilt, 120_000);
  afterAll(() => {
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    killAll();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  async function startHub(data: string, slimPort: number, env: Record<string, string> = {}): Promise<{ hub: Cli; url: string }> {
    const hub = runCli(
      ['hub', '--port', '0', '--host', '127.0.0.1', '--data', data, '--drivers', 'squeezebox', '--slimproto-port', String(slimPort)].concat([
        '--no-slimproto-discovery',
        '--mqtt',
        'off',
        '--log-format',
        'json',
      ]),
      env,
    );
    const { base } = await waitForBanner(hub);
    return { hub, url: base };
  }

  async function stopHub(hub: Cli): Promise<void> {
    hub.child.kill('SIGTERM');
    const { code } = await within(hub.exit, 20_000, 'hub exit');
    expect(code).toBe(0);
  }

  /** A real squeezelite at the hub's SlimProto port; its stdout audio goes nowhere; its log is kept. */
  function squeezelite(name: string, mac: string, slimPort: number): { proc: ChildProcess; log: () => string } {
    let log = '';
    const proc = spawn('squeezelite', ['-s', `127.0.0.1:${slimPort}`, '-n', name, '-m', mac, '-o', '-', '-d', 'slimproto=debug'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    proc.stderr!.on('data', (d) => (log = (log + String(d)).slice(-200_000)));
    procs.push(proc);
    return { proc, log: () => log };
  }

  test('without ffmpeg: the start says so with the fix, and a play fails saying to install ffmpeg', async () => {
    const data = tmp();
    // A PATH with the programs a shell has, but no ffmpeg (the machine's own ffmpeg stays hidden).
    const bin = tmp();
    for (const prog of ['sh', 'ls', 'cat', 'espeak-ng']) {
      const found = ['/usr/bin', '/bin'].map((d) => path.join(d, prog)).find((f) => existsSync(f));
      if (found) symlinkSync(found, path.join(bin, prog));
    }
    mkdirSync(path.join(bin, 'empty'));
    const slimPort = await freePort();
    const { hub, url } = await startHub(data, slimPort, { PATH: bin });
    try {
      expect(hub.stdout()).toMatch(
        /Warning: +ffmpeg is not installed: Squeezebox players cannot play anything until it is \(sudo apt install ffmpeg\)/,
      );
      await eventually(
        () => /ffmpeg is not installed/.test(hub.stdout() + hub.stderr()) && /"level":40/.test(hub.stdout()),
        5000,
        'the warning in the log',
      );
      const player = squeezelite('Kitchen', '00:01:02:03:04:51', slimPort);
      const token = readFileSync(path.join(data, 'api-token'), 'utf8').trim();
      await eventually(
        async () => (await cliResult(['speakers', '--url', url], { SPEAKERHUB_TOKEN: token })).stdout.includes('Kitchen'),
        20_000,
        () => `Kitchen in the speakers (${player.log().slice(-500)})`,
      );
      const r = await cliResult(['play', 'Little Waltz', '--speakers', 'Kitchen', '--url', url], { SPEAKERHUB_TOKEN: token }, 30_000);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('ffmpeg is not installed');
      expect(r.stderr).toContain('sudo apt install ffmpeg');
      expect(r.stderr + r.stdout).not.toContain('ENOENT');
    } finally {
      await stopHub(hub);
    }
  }, 90_000);

  test('a URL that is a 404: the CLI play fails with the reason (exit 1); a playable one plays', async () => {
    const data = tmp();
    const slimPort = await freePort();
    const web = createServer((req, res) => {
      if (req.url?.startsWith('/missing')) return void res.writeHead(404).end('not found');
      res
        .writeHead(200, { 'Content-Type': 'audio/wav' })
        .end(encodeWav(new Int16Array(8000 * 20).fill(3000), 8000, { title: 'Web', artist: '', album: '' }));
    });
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
    const webUrl = (p: string) => `http://127.0.0.1:${(web.address() as AddressInfo).port}${p}`;
    const { hub, url } = await startHub(data, slimPort);
    const token = readFileSync(path.join(data, 'api-token'), 'utf8').trim();
    const run = (...args: string[]) => cliResult([...args, '--url', url], { SPEAKERHUB_TOKEN: token }, 30_000);
    const player = squeezelite('Kitchen', '00:01:02:03:04:53', slimPort);
    try {
      await eventually(
        async () => (await run('speakers')).stdout.includes('Kitchen'),
        20_000,
        () => `Kitchen in the speakers (${player.log().slice(-500)})`,
      );
      const bad = await run('play', webUrl('/missing.mp3'), '--speakers', 'Kitchen');
      expect({ code: bad.code, out: bad.stdout }).toEqual({ code: 1, out: expect.not.stringContaining('Playing') });
      expect(bad.stderr).toMatch(/could not be decoded|404/);
      expect((await run('status')).stdout).not.toMatch(/Playing/);
      const good = await run('play', webUrl('/tone.wav'), '--speakers', 'Kitchen');
      expect(good.code).toBe(0);
      expect(good.stdout).toContain('Playing');
    } finally {
      await stopHub(hub);
      await new Promise((r) => web.close(r));
    }
  }, 90_000);

  test("a player's volume is the one it had before the hub restarted", async () => {
    const data = tmp();
    const slimPort = await freePort();
    let { hub, url } = await startHub(data, slimPort);
    const token = readFileSync(path.join(data, 'api-token'), 'utf8').trim();
    const run = (...args: string[]) => cliResult([...args, '--url', url], { SPEAKERHUB_TOKEN: token }, 30_000);
    const player = squeezelite('Kitchen', '00:01:02:03:04:52', slimPort);
    const volumeLine = async () => (await run('volume')).stdout.split('\n').find((l) => l.includes('Kitchen')) ?? '';
    const gains = () => [...player.log().matchAll(/audg gainL: (\d+)/g)].map((m) => Number(m[1]));
    try {
      await eventually(
        async () => (await volumeLine()) !== '',
        20_000,
        () => `Kitchen in the speakers (${player.log().slice(-500)})`,
      );
      expect(await volumeLine()).toMatch(/\b20\b/);
      const set = await run('volume', 'Kitchen', '33');
      expect(set.code).toBe(0);
      await eventually(() => gains().length >= 2, 5000, 'the player taking the new volume');
      const gainAt33 = gains().at(-1)!;
      expect(gainAt33).not.toBe(gains()[0]);
      await stopHub(hub);

      ({ hub, url } = await startHub(data, slimPort));
      const before = gains().length;
      // squeezelite reconnects by itself; the hub sends it its volume at HELO.
      await eventually(
        () => gains().length > before,
        30_000,
        () => `the player's HELO after the restart (${player.log().slice(-500)})`,
      );
      expect(gains().at(-1)).toBe(gainAt33);
      expect(await volumeLine()).toMatch(/\b33\b/);
    } finally {
      await stopHub(hub);
    }
  }, 120_000);
});

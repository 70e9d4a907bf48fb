/**
 * Issue 31 item 1: an MPD on another machine (here: a real mpd in its own network namespace,
 * joined to this one by a veth pair), added with the docs' `--mpd <host>` (docs/drivers/mpd.md) and no --interface.
 * - As the hub starts by default (media server on 127.0.0.1 only), the MPD cannot fetch the
 *   hub's media: the start log says so, and a play fails at once naming the --interface to give
 *   (the interface this machine reaches the MPD on), instead of MPD's `CURL failed … 127.0.0.1`.
 * - With --media-host 0.0.0.0 (and still no --interface), the URLs the MPD gets point at the
 *   hub's address on the route to it, and it plays.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cliResult, ensureBuilt, killAll, runCli, waitForBanner, within, type Cli } from '../../helpers/cli';
import { LAB_NETWORKS } from '../../helpers/lab-networks';
import { labSuite } from '../../helpers/labs';
import { fields, mpcAt, mpdInstalled } from './harness';
import { eventually } from '../../helpers/wait';

function unavailable(): string | undefined {
  const missing = mpdInstalled();
  if (missing) return missing;
  if (spawnSync('ip', ['netns', 'list']).status !== 0) return 'ip netns does not work here (needs root)';
  return undefined;
}

const describeIf = labSuite('the remote MPD lab', unavailable());

describeIf('a remote MPD added with --mpd <host>, without --interface', () => {
  const tag = `${process.pid % 10_000}`;
  const ns = `${LAB_NETWORKS.mpdRemote.prefix}${tag}`;
  const hostSide = `shmr${tag}a`;
  const hubAddress = `${LAB_NETWORKS.mpdRemote.subnet}.1`;
  const mpdAddress = `${LAB_NETWORKS.mpdRemote.subnet}.2`;
  const dir = mkdtempSync(path.join(tmpdir(), 'mpd-remote-'));
  const procs: ChildProcess[] = [];
  const sh = (cmd: string) => execFileSync('sh', ['-c', cmd], { stdio: 'pipe' });
  let mpdLog = '';

  beforeAll(async () => {
    await ensureBuilt();
    sh(
      [
        `ip netns add ${ns}`,
        `ip link add ${hostSide} type veth peer name shmr${tag}b`,
        `ip link set shmr${tag}b netns ${ns}`,
        `ip -n ${ns} link set shmr${tag}b name eth0`,
        `ip addr add ${hubAddress}/24 dev ${hostSide}`,
        `ip -n ${ns} addr add ${mpdAddress}/24 dev eth0`,
        `ip link set ${hostSide} up`,
        `ip -n ${ns} link set eth0 up`,
        `ip -n ${ns} link set lo up`,
      ].join(' && '),
    );
    for (const d of ['music', 'pl']) mkdirSync(path.join(dir, d));
    writeFileSync(
      path.join(dir, 'mpd.conf'),
      [
        `music_directory "${dir}/music"`,
        `playlist_directory "${dir}/pl"`,
        `db_file "${dir}/db"`,
        `state_file "${dir}/state"`,
        `pid_file "${dir}/pid"`,
        `log_file "${dir}/log"`,
        `bind_to_address "${mpdAddress}"`,
        'port "6600"',
        'audio_output {',
        '  type "null"',
        '  name "null"',
        '  mixer_type "software"',
        '}',
        '',
      ].join('\n'),
    );
    const mpd = spawn('ip', ['netns', 'exec', ns, 'mpd', '--no-daemon', path.join(dir, 'mpd.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
    mpd.stderr!.on('data', (d) => (mpdLog = (mpdLog + String(d)).slice(-4000)));
    procs.push(mpd);
    await eventually(
      async () => (await mpcAt(mpdAddress, 6600, 'ping')) !== undefined,
      15_000,
      () => `mpd in ${ns} (${mpdLog})`,
    );
  }, 120_000);

  afterAll(async () => {
    killAll();
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    await Promise.all(procs.map((p) => (p.exitCode === null && p.signalCode === null ? new Promise((r) => p.once('exit', r)) : undefined)));
    spawnSync('ip', ['netns', 'del', ns]);
    spawnSync('ip', ['link', 'del', hostSide]);
    rmSync(dir, { recursive: true, force: true });
  });

  async function startHub(extra: string[]): Promise<{ hub: Cli; url: string; token: string }> {
    const data = mkdtempSync(path.join(dir, 'hub-'));
    const hub = runCli(
      [
        'hub',
        '--port',
        '0',
        '--host',
        '127.0.0.1',
        '--data',
        data,
        '--mpd',
        mpdAddress,
        '--virtual-speakers',
        '0',
        '--mqtt',
        'off',
        '--log-format',
        'json',
      ].concat(extra),
    );
    const { base } = await waitForBanner(hub);
    return { hub, url: base, token: readFileSync(path.join(data, 'api-token'), 'utf8').trim() };
  }

  async function stopHub(hub: Cli): Promise<void> {
    hub.child.kill('SIGTERM');
    await within(hub.exit, 20_000, 'hub exit');
  }

  const speaker = `MPD ${mpdAddress}`;

  test('by default: the start log warns, and a play fails at once naming --interface and the interface', async () => {
    const { hub, url, token } = await startHub([]);
    try {
      expect(hub.stdout()).toContain(`the mpd driver has servers on other machines (${mpdAddress}:6600) but neither --interface`);
      // Once connected, the speaker's own line names the interface this machine reaches it on.
      await eventually(
        () => hub.stdout().includes(`until the hub is started with --interface ${hostSide}`),
        15_000,
        () =>
          `the per-speaker warning (${hub
            .stdout()
            .split('\n')
            .filter((l) => l.includes('mpd'))
            .map((l) => l.slice(0, 400))
            .join('\n')})`,
      );
      await eventually(
        async () => (await cliResult(['speakers', '--url', url], { SPEAKERHUB_TOKEN: token })).stdout.includes(speaker),
        15_000,
        'the MPD listed',
      );
      const r = await cliResult(['play', 'Little Waltz', '--speakers', speaker, '--url', url], { SPEAKERHUB_TOKEN: token }, 30_000);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`start the hub with --interface ${hostSide} (this machine reaches it from ${hubAddress})`);
      expect(r.stderr).not.toContain('CURL');
      // Nothing was put into the MPD's queue.
      expect(fields(await mpcAt(mpdAddress, 6600, 'status')).playlistlength).toBe('0');
    } finally {
      await stopHub(hub);
    }
  }, 90_000);

  test('with --media-host 0.0.0.0: the MPD gets URLs at the hub address that routes to it, and plays', async () => {
    const { hub, url, token } = await startHub(['--media-host', '0.0.0.0']);
    try {
      expect(hub.stdout()).not.toContain('the mpd driver has servers on other machines');
      await eventually(
        async () => (await cliResult(['speakers', '--url', url], { SPEAKERHUB_TOKEN: token })).stdout.includes(speaker),
        15_000,
        'the MPD listed',
      );
      const r = await cliResult(['play', 'Little Waltz', '--speakers', speaker, '--url', url], { SPEAKERHUB_TOKEN: token }, 30_000);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const song = fields(await mpcAt(mpdAddress, 6600, 'currentsong'));
      expect(song.file).toMatch(new RegExp(`^http://${hubAddress.replace(/\./g, '\\.')}:\\d+/media/`));
      // It plays: the elapsed time moves on and MPD has no error.
      await eventually(
        async () => {
          const st = fields(await mpcAt(mpdAddress, 6600, 'status'));
          return st.state === 'play' && Number(st.elapsed) > 0.5 && !st.error;
        },
        15_000,
        "the MPD playing the hub's media",
      );
    } finally {
      await mpcAt(mpdAddress, 6600, 'stop', 'clear').catch(() => undefined);
      await stopHub(hub);
    }
  }, 90_000);
});

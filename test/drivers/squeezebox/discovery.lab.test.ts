import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, ensureBuilt, ROOT } from '../../helpers/cli';
import { labSuite } from '../../helpers/labs';
import { LAB_NETWORKS } from '../../helpers/lab-networks';
import { squeezeliteInstalled } from './harness';
import { eventually } from '../../helpers/wait';

function unavailable(): string | undefined {
  const missing = squeezeliteInstalled();
  if (missing) return missing;
  if (spawnSync('ip', ['netns', 'list']).status !== 0) return 'ip netns does not work here (needs root)';
  return undefined;
}

const describeIf = labSuite('the Squeezebox discovery lab', unavailable());

/**
 * A player started without -s finds the hub by its UDP broadcast. Broadcast needs a LAN, so the
 * hub and the player each run in a network namespace of their own, joined by a veth pair: the
 * hub's SlimProto port is 3483 there (discovery only finds servers on 3483), which touches no
 * port of this machine.
 */
describeIf('Squeezebox discovery: a squeezelite without -s finds the hub', () => {
  const tag = `${process.pid % 100_000}`;
  const hubNs = `${LAB_NETWORKS.squeezeboxDiscovery.prefix}h-${tag}`;
  const playerNs = `${LAB_NETWORKS.squeezeboxDiscovery.prefix}p-${tag}`;
  const subnet = `${LAB_NETWORKS.squeezeboxDiscovery.subnet}.${process.pid % 250}`;
  const dir = mkdtempSync(join(tmpdir(), 'sb-disco-'));
  const procs: ChildProcess[] = [];
  let hubOut = '';

  const sh = (cmd: string) => execFileSync('sh', ['-c', cmd], { stdio: 'pipe' });

  beforeAll(async () => {
    await ensureBuilt();
    sh(
      [
        `ip netns add ${hubNs}`,
        `ip netns add ${playerNs}`,
        `ip link add sbv${tag} type veth peer name sbw${tag}`,
        `ip link set sbv${tag} netns ${hubNs}`,
        `ip link set sbw${tag} netns ${playerNs}`,
        `ip -n ${hubNs} link set sbv${tag} name eth0`,
        `ip -n ${playerNs} link set sbw${tag} name eth0`,
        `ip -n ${hubNs} addr add ${subnet}.1/24 brd + dev eth0`,
        `ip -n ${playerNs} addr add ${subnet}.2/24 brd + dev eth0`,
        `ip -n ${hubNs} link set eth0 up`,
        `ip -n ${playerNs} link set eth0 up`,
        `ip -n ${hubNs} link set lo up`,
        `ip -n ${playerNs} link set lo up`,
        // A LAN host has a default route; without one a send to 255.255.255.255 is unreachable.
        `ip -n ${playerNs} route add default dev eth0`,
      ].join(' && '),
    );
  }, 120_000);

  afterAll(() => {
    for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
    for (const ns of [hubNs, playerNs]) spawnSync('ip', ['netns', 'del', ns]);
    rmSync(dir, { recursive: true, force: true });
  });

  test('the hub answers the broadcast and the player connects to it (HELO → speaker)', async () => {
    const hub = spawn(
      'ip',
      [
        'netns',
        'exec',
        hubNs,
        process.execPath,
        CLI,
        'hub',
        '--drivers',
        'squeezebox',
        '--data',
        dir,
        '--port',
        '8090',
        '--mqtt',
        'off',
        '--log-format',
        'json',
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    procs.push(hub);
    hub.stdout!.on('data', (d) => (hubOut = (hubOut + String(d)).slice(-20_000)));
    hub.stderr!.on('data', (d) => (hubOut = (hubOut + String(d)).slice(-20_000)));
    await eventually(
      () => hubOut.includes('SlimProto server on port 3483'),
      30_000,
      () => `the hub's SlimProto server\n${hubOut}`,
    );
    // No -s: squeezelite broadcasts 'e' to UDP 3483 and connects to whoever answers. Its
    // output is a pipe nobody reads: it blocks once full instead of spinning on silence.
    const player = spawn('ip', ['netns', 'exec', playerNs, 'squeezelite', '-n', 'Discovered', '-m', '02:00:00:5b:00:09', '-o', '-', '-a', '16'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    procs.push(player);
    await eventually(
      () => hubOut.includes('squeezebox: player 02:00:00:5b:00:09 connected'),
      20_000,
      () => `the player on the hub\n${hubOut.slice(-3000)}`,
    );
    expect(hubOut).not.toContain('connection refused');
  }, 90_000);
});

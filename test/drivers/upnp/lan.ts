import { spawn, execFileSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * A private LAN for tests, built from network namespaces: one namespace holds a bridge, every
 * host gets its own namespace with one veth ("lan0") into it, and the root namespace gets a
 * veth too so the test process can reach the hosts by unicast. Real programs that refuse
 * loopback (libupnp, snapserver's mDNS) run on it as on a home network, with multicast.
 *
 * Safety rules it keeps: nothing multicasts from the root namespace (its veth has multicast
 * off and IPv6 disabled); hosts have IPv6 disabled (no DAD delay, no MLD/ND traffic); every
 * name starts with the prefix, so a crashed run's leftovers are found and removed.
 */

export interface LanHost {
  name: string;
  /** Network namespace name. */
  ns: string;
  /** The host's interface into the LAN (same name in every namespace). */
  ifname: string;
  address: string;
}

export interface LanOptions {
  /** Unique per user of this helper, [a-z0-9]{1,8}: names every namespace and link. */
  prefix: string;
  /** First three octets of a private /24 nobody else uses, e.g. '10.231.7'. */
  subnet: string;
  /** Host names, [a-z0-9]{1,8}; they get .11, .12, … in order. */
  hosts: string[];
}

export const LAN_IFNAME = 'lan0';
const ROOT_OCTET = 1;
const FIRST_HOST_OCTET = 11;

/** Why this machine cannot build a LAN (not root, no iproute2), or undefined when it can. */
export function lanUnavailableReason(): string | undefined {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  if (!existsSync('/usr/sbin/ip') && !existsSync('/sbin/ip') && !existsSync('/usr/bin/ip')) return 'iproute2 (ip) is not installed';
  return undefined;
}

function run(cmd: string, args: string[], allowFail = false): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    if (allowFail) return '';
    const err = e as { stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${err.stderr?.trim() || err.message}`);
  }
}

export class Lan {
  readonly prefix: string;
  readonly subnet: string;
  /** The root namespace's end: the test process's address on the LAN. */
  readonly root: { ifname: string; address: string };
  private readonly hosts = new Map<string, LanHost>();
  private readonly children = new Set<ChildProcess>();
  private destroyed = false;

  private constructor(options: LanOptions) {
    this.prefix = options.prefix;
    this.subnet = options.subnet;
    this.root = { ifname: `${options.prefix}-root`, address: `${options.subnet}.${ROOT_OCTET}` };
  }

  /** Removes namespaces, links and processes a crashed earlier run with this prefix left behind. */
  static cleanup(prefix: string): void {
    checkName(prefix, 'prefix');
    const namespaces = run('ip', ['netns', 'list'], true)
      .split('\n')
      .map((l) => l.split(' ')[0])
      .filter((n) => n.startsWith(`${prefix}-`));
    for (const ns of namespaces) {
      // Only processes inside our own namespaces: every one of them is a test's.
      for (const pid of run('ip', ['netns', 'pids', ns], true).split(/\s+/).filter(Boolean)) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          /* gone already */
        }
      }
    }
    for (const ns of namespaces) run('ip', ['netns', 'del', ns], true);
    run('ip', ['link', 'del', `${prefix}-root`], true);
  }

  static async create(options: LanOptions): Promise<Lan> {
    checkName(options.prefix, 'prefix');
    if (!/^(10|192\.168|172\.(1[6-9]|2\d|3[01]))\.\d+(\.\d+)?$/.test(options.subnet) || options.subnet.split('.').length !== 3) {
      throw new Error(`subnet must be the first three octets of a private /24, got ${options.subnet}`);
    }
    if (options.hosts.length > 200) throw new Error('at most 200 hosts');
    options.hosts.forEach((h) => checkName(h, 'host name'));
    Lan.cleanup(options.prefix);
    const lan = new Lan(options);
    try {
      lan.build(options.hosts);
    } catch (e) {
      Lan.cleanup(options.prefix);
      throw e;
    }
    return lan;
  }

  private get bridgeNs(): string {
    return `${this.prefix}-br`;
  }

  private build(names: string[]): void {
    const br = this.bridgeNs;
    const script: string[] = [
      'set -e',
      `ip netns add ${br}`,
      `ip netns exec ${br} sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1`,
      `ip -n ${br} link set lo up`,
      `ip -n ${br} link add br0 type bridge`,
      // Without an IGMP querier, snooping would learn nothing and could starve group traffic.
      `ip -n ${br} link set br0 type bridge mcast_snooping 0`,
      `ip -n ${br} link set br0 up`,
    ];
    names.forEach((name, i) => {
      const host: LanHost = { name, ns: `${this.prefix}-${name}`, ifname: LAN_IFNAME, address: `${this.subnet}.${FIRST_HOST_OCTET + i}` };
      this.hosts.set(name, host);
      script.push(
        `ip netns add ${host.ns}`,
        // Before the veth arrives, so it never gets IPv6 (no DAD wait, no MLD/ND).
        `ip netns exec ${host.ns} sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 net.ipv6.conf.all.accept_dad=0`,
        `ip -n ${host.ns} link set lo up`,
        `ip link add name ${LAN_IFNAME} netns ${host.ns} type veth peer name h-${name} netns ${br}`,
        `ip -n ${br} link set h-${name} master br0 up`,
        `ip -n ${host.ns} addr add ${host.address}/24 dev ${LAN_IFNAME}`,
        `ip -n ${host.ns} link set ${LAN_IFNAME} up`,
        // No default route in here: multicast needs a route of its own, on the LAN only.
        `ip -n ${host.ns} route add 224.0.0.0/4 dev ${LAN_IFNAME}`,
      );
    });
    const r = this.root.ifname;
    script.push(
      `ip link add name ${r} type veth peer name h-root netns ${br}`,
      `sysctl -qw net.ipv6.conf.${r}.disable_ipv6=1`,
      `ip link set dev ${r} multicast off`,
      `ip addr add ${this.root.address}/24 dev ${r}`,
      `ip link set ${r} up`,
      `ip -n ${br} link set h-root master br0 up`,
    );
    run('bash', ['-c', script.join('\n')]);
    for (const h of this.hosts.values()) this.assertLocalRoute(h.address);
  }

  host(name: string): LanHost {
    const h = this.hosts.get(name);
    if (!h) throw new Error(`no host ${name} on this LAN`);
    return h;
  }

  allHosts(): LanHost[] {
    return [...this.hosts.values()];
  }

  /**
   * Throws unless traffic from here to that address leaves through our root veth: a test
   * must never send LAN traffic out of the machine's real interface.
   */
  assertLocalRoute(address: string): void {
    const out = run('ip', ['-o', 'route', 'get', address]);
    if (!new RegExp(`\\bdev ${this.root.ifname}\\b`).test(out)) {
      throw new Error(`${address} is not routed through ${this.root.ifname}: ${out.trim()}`);
    }
  }

  /** Gives a host another address on the LAN (a DHCP lease changing), e.g. octet 50 → <subnet>.50. */
  changeAddress(hostName: string, octet: number): LanHost {
    const host = this.host(hostName);
    if (!Number.isInteger(octet) || octet < 2 || octet > 254) throw new Error(`bad host octet ${octet}`);
    const address = `${this.subnet}.${octet}`;
    if ([...this.hosts.values()].some((h) => h.address === address)) throw new Error(`${address} is taken`);
    run('bash', [
      '-c',
      [
        'set -e',
        `ip -n ${host.ns} addr del ${host.address}/24 dev ${LAN_IFNAME}`,
        `ip -n ${host.ns} addr add ${address}/24 dev ${LAN_IFNAME}`,
        `ip -n ${host.ns} route replace 224.0.0.0/4 dev ${LAN_IFNAME}`,
      ].join('\n'),
    ]);
    host.address = address;
    this.assertLocalRoute(address);
    return host;
  }

  /** Starts a program inside a host's namespace; destroy() ends it if it still runs. */
  spawn(hostName: string, command: string, args: string[], options: SpawnOptions = {}): ChildProcess {
    if (this.destroyed) throw new Error('the LAN is destroyed');
    const host = this.host(hostName);
    // ip netns exec execs the program, so the child's pid is the program's own.
    const child = spawn('ip', ['netns', 'exec', host.ns, command, ...args], { stdio: ['ignore', 'pipe', 'pipe'], ...options });
    this.children.add(child);
    child.once('exit', () => this.children.delete(child));
    return child;
  }

  /** Runs a command in a host's namespace to completion; returns stdout. */
  exec(hostName: string, command: string, args: string[]): string {
    return run('ip', ['netns', 'exec', this.host(hostName).ns, command, ...args]);
  }

  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    const live = [...this.children].filter((c) => c.exitCode === null && c.signalCode === null);
    for (const c of live) c.kill('SIGTERM');
    await Promise.all(
      live.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            const t = setTimeout(() => {
              c.kill('SIGKILL');
              resolve();
            }, 2000);
            c.once('exit', () => {
              clearTimeout(t);
              resolve();
            });
          }),
      ),
    );
    Lan.cleanup(this.prefix);
  }
}

function checkName(name: string, what: string): void {
  if (!/^[a-z0-9]{1,8}$/.test(name)) throw new Error(`${what} must be 1–8 of [a-z0-9], got ${JSON.stringify(name)}`);
}

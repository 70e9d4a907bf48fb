/**
 * NetworkUnavailable when the host loses its network and gets it back, with the embedded
 * broker (whose link never drops). The network change is real: a veth pair in a network
 * namespace the test builds (10.231.9.0/24), its cable pulled and its address removed. The
 * hub reads that namespace's interfaces as `os.networkInterfaces()` gives them there (a small
 * node process inside the namespace reports them), through the extension's interface source.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import type { NetworkInterfaceInfo } from 'node:os';
import { createInterface } from 'node:readline';
import { NetworkWatch, lanAddresses } from '../../src/mqtt/network-watch';
import { lanUnavailableReason } from '../drivers/upnp/lan';
import { labSuite } from '../helpers/labs';
import { LAB_NETWORKS } from '../helpers/lab-networks';
import { Probe, startMqttHub, type MqttTestHub } from './helpers';

type Interfaces = NodeJS.Dict<NetworkInterfaceInfo[]>;

const v4 = (address: string, internal = false): NetworkInterfaceInfo => ({
  address,
  netmask: '255.255.255.0',
  family: 'IPv4',
  mac: '02:00:00:00:00:01',
  internal,
  cidr: `${address}/24`,
});
const v6 = (address: string): NetworkInterfaceInfo => ({ ...v4(address), family: 'IPv6', scopeid: 0 });

describe('NetworkWatch', () => {
  function watch(interfaceName?: string) {
    let current: Interfaces = {};
    const seen: string[] = [];
    const w = new NetworkWatch({
      intervalMs: 60_000,
      interfaceName,
      source: () => {
        if (current === undefined) throw new Error('no interfaces');
        return current;
      },
      onLost: () => seen.push('lost'),
      onRestored: (a) => seen.push(`restored ${a.join(',')}`),
    });
    return {
      w,
      seen,
      set(i: Interfaces | undefined) {
        current = i as Interfaces;
        w.check();
      },
    };
  }

  test('counts only non-internal IPv4 addresses (of the configured interface when one is set)', () => {
    const all: Interfaces = {
      lo: [v4('127.0.0.1', true)],
      eth0: [v4('192.168.1.5'), v6('fe80::1')],
      wlan0: [v4('10.0.0.7')],
    };
    expect(lanAddresses(() => all)).toEqual(['10.0.0.7', '192.168.1.5']);
    expect(lanAddresses(() => all, 'eth0')).toEqual(['192.168.1.5']);
    expect(lanAddresses(() => all, 'eth9')).toEqual([]);
  });

  test('reports a loss of every address and the return; a start without addresses, a partial loss or a failing source are not a loss', () => {
    const { seen, set } = watch();
    set({ lo: [v4('127.0.0.1', true)] });
    set({ eth0: [v4('192.168.1.5')] });
    expect(seen).toEqual([]);
    set({ eth0: [v4('192.168.1.5')], wlan0: [v4('10.0.0.7')] });
    set({ wlan0: [v4('10.0.0.7')] });
    set(undefined);
    expect(seen).toEqual([]);
    set({ lo: [v4('127.0.0.1', true)], eth0: [v6('fe80::1')] });
    set({});
    expect(seen).toEqual(['lost']);
    set({ eth0: [v4('192.168.1.9')] });
    set({ eth0: [v4('192.168.1.9')] });
    expect(seen).toEqual(['lost', 'restored 192.168.1.9']);
  });

  test('with an interface configured, only that one counts', () => {
    const { seen, set } = watch('eth0');
    set({ eth0: [v4('192.168.1.5')], wlan0: [v4('10.0.0.7')] });
    set({ wlan0: [v4('10.0.0.7')] });
    expect(seen).toEqual(['lost']);
  });
});

const { prefix: PREFIX, subnet: SUBNET } = LAB_NETWORKS.mqttNetwork;
const NS = `${PREFIX}-hub`;
const IF_HUB = `${PREFIX}-a`;
const IF_PEER = `${PREFIX}-b`;
const ADDRESS = `${SUBNET}.2`;

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function removeNamespace(): void {
  try {
    ip('netns', 'del', NS);
  } catch {
    /* not there */
  }
}

/** Interfaces as a node process inside the namespace sees them, kept up to date. */
class NamespaceInterfaces {
  current: Interfaces = {};
  private readonly waiters: { match: (i: Interfaces) => boolean; resolve: () => void }[] = [];
  private constructor(private readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      this.current = JSON.parse(line) as Interfaces;
      for (const w of this.waiters.splice(0))
        if (w.match(this.current)) w.resolve();
        else this.waiters.push(w);
    });
  }

  static start(): NamespaceInterfaces {
    // Prints os.networkInterfaces() whenever it changes.
    const script =
      "const os=require('os');let last='';setInterval(()=>{const s=JSON.stringify(os.networkInterfaces());if(s!==last){last=s;process.stdout.write(s+'\\n')}},20)";
    return new NamespaceInterfaces(spawn('ip', ['netns', 'exec', NS, process.execPath, '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] }));
  }

  until(match: (i: Interfaces) => boolean): Promise<void> {
    if (match(this.current)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ match, resolve }));
  }

  stop(): void {
    this.child.kill();
  }
}

const suite = labSuite('the network namespace lab', lanUnavailableReason());

suite('NetworkUnavailable when the host loses its network (a real interface in a network namespace)', () => {
  let ifs: NamespaceInterfaces | undefined;
  let t: MqttTestHub | undefined;
  let p: Probe | undefined;

  beforeAll(() => {
    removeNamespace();
    ip('netns', 'add', NS);
    // Both ends of the cable inside the namespace: nothing of the root namespace is touched.
    ip('-n', NS, 'link', 'add', IF_HUB, 'type', 'veth', 'peer', 'name', IF_PEER);
    ip('-n', NS, 'addr', 'add', `${ADDRESS}/24`, 'dev', IF_HUB);
    ip('-n', NS, 'link', 'set', IF_HUB, 'up');
    ip('-n', NS, 'link', 'set', IF_PEER, 'up');
  });

  afterAll(async () => {
    await p?.end();
    await t?.close();
    ifs?.stop();
    removeNamespace();
  });

  test('cable pulled, then plugged in; address removed, then given back: Lost and Restored on the channel, with the hub UUID', async () => {
    ifs = NamespaceInterfaces.start();
    const source = ifs;
    const hasAddress = (i: Interfaces) => lanAddresses(() => i).includes(ADDRESS);
    await source.until(hasAddress);
    t = await startMqttHub({ mqtt: { networkWatchMs: 50 } }, { mqtt: { interfaces: () => source.current } });
    p = await Probe.connect(t.url!, { username: t.keys.subscribeKey });
    await p.client.subscribeAsync('speakerhub/channel', { qos: 1 });
    const probe = p;
    const uuid = t.uuid;
    let after = -1;
    const next = async (network: 'Lost' | 'Restored') => {
      const m = await probe.wait(
        (m) =>
          m.topic === 'speakerhub/channel' &&
          m.json?.Reason === 'NetworkUnavailable' &&
          m.json.Network === network &&
          probe.messages.indexOf(m) > after,
        10_000,
        `NetworkUnavailable ${network}`,
      );
      expect(m.json).toEqual({ Event: 'DeviceStateUpdated', HKWHubUUID: uuid, SessionToken: '', Reason: 'NetworkUnavailable', Network: network });
      after = probe.messages.indexOf(m);
    };

    ip('-n', NS, 'link', 'set', IF_PEER, 'down');
    await next('Lost');
    expect(t.logs.some((l) => l.includes('network lost'))).toBe(true);
    ip('-n', NS, 'link', 'set', IF_PEER, 'up');
    await next('Restored');
    expect(t.logs.some((l) => l.includes('network restored') && l.includes(ADDRESS))).toBe(true);

    ip('-n', NS, 'addr', 'del', `${ADDRESS}/24`, 'dev', IF_HUB);
    await next('Lost');
    ip('-n', NS, 'addr', 'add', `${ADDRESS}/24`, 'dev', IF_HUB);
    await next('Restored');

    // Each change was said once: two losses, two returns.
    expect(probe.messages.filter((m) => m.json?.Reason === 'NetworkUnavailable').map((m) => m.json.Network)).toEqual([
      'Lost',
      'Restored',
      'Lost',
      'Restored',
    ]);
  });
});

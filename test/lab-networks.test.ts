import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { LAB_NETWORKS } from './helpers/lab-networks';

/** Labs run side by side under jest: a shared subnet or namespace prefix breaks both (a CI run once did). */
describe('the lab networks', () => {
  const entries = Object.entries(LAB_NETWORKS);

  test('no two labs share a subnet, or one lies inside another', () => {
    for (const [a, x] of entries)
      for (const [b, y] of entries) {
        if (a === b) continue;
        const inside = x.subnet === y.subnet || x.subnet.startsWith(`${y.subnet}.`);
        expect(inside ? `${a} ${x.subnet} overlaps ${b} ${y.subnet}` : '').toBe('');
      }
  });

  test('no two labs share a namespace prefix', () => {
    const prefixes = entries.map(([, n]) => n.prefix);
    expect(new Set(prefixes).size).toBe(prefixes.length);
  });

  test('each lab network is used by one test file: two suites on one network run side by side under jest and tear each other down', () => {
    const root = join(__dirname, '..');
    const files = (function walk(dir: string): string[] {
      return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.test.ts') ? [join(dir, e.name)] : [],
      );
    })(__dirname);
    const users = new Map<string, string[]>();
    const use = (network: string, file: string) => users.set(network, [...(users.get(network) ?? []), relative(root, file)]);
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const name of new Set([...text.matchAll(/LAB_NETWORKS\.(\w+)/g)].map((m) => m[1]))) use(name, file);
      // A lab started without a network takes its module's default.
      if (/DlnaLab\.start\((\[[^\]]*\])?\)/.test(text)) use('dlna (DlnaLab default)', file);
      if (/UpnpLab\.start\(\)/.test(text) || /UpnpLab\.start\(\{(?![^}]*\.\.\.(LAB_NETWORKS|NETWORK))/.test(text))
        use('upnp (UpnpLab default)', file);
    }
    const shared = [...users]
      .filter(([network, list]) => list.length > 1 && !network.endsWith('Bench'))
      .map(([n, list]) => `${n}: ${list.join(', ')}`);
    expect(shared).toEqual([]);
  });

  test('bench/announce-upnp.js (plain JS) builds the LAN the table gives it', () => {
    const bench = readFileSync(join(__dirname, '..', 'bench', 'announce-upnp.js'), 'utf8');
    const { prefix, subnet } = LAB_NETWORKS.announceUpnpBench;
    expect(bench).toContain(`prefix: '${prefix}', subnet: '${subnet}'`);
  });

  test('bench/first-sound-peers.js (plain JS) builds the LAN the table gives it', () => {
    const bench = readFileSync(join(__dirname, '..', 'bench', 'first-sound-peers.js'), 'utf8');
    const { prefix, subnet } = LAB_NETWORKS.firstSoundBench;
    expect(bench).toContain(`prefix: '${prefix}', subnet: '${subnet}'`);
  });
});

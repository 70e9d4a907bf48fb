import { readFileSync } from 'node:fs';
import { join } from 'node:path';
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

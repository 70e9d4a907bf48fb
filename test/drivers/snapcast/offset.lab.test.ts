import { snapcastInstalled } from './harness';
import { labSuite } from '../../helpers/labs';
import { measureSnapcastOffset } from './offset';

const describeIf = labSuite('the Snapcast lab', snapcastInstalled() ? undefined : 'snapserver, snapclient or ffmpeg is not installed');

/**
 * How close the clients play is measured in `npm run bench` (bench/drivers.js: target < 0.5 ms);
 * a loaded machine must not fail a test over it. What is tested here is that the method works:
 * every client plays every marker, and a known offset shows up on the right client.
 */
describeIf('inter-client offset of a Snapcast party play (real snapclients)', () => {
  test('all three clients play every marker of a party play, and the method yields one instant per client', async () => {
    const r = await measureSnapcastOffset({ markers: 3 });
    expect(r.markers).toHaveLength(3);
    for (const m of r.markers) {
      expect(m.perClientMs).toHaveLength(3);
      for (const v of m.perClientMs) expect(Number.isFinite(v) && v >= 0).toBe(true);
      // Instants are relative to the earliest client: one of them is that client.
      expect(Math.min(...m.perClientMs)).toBe(0);
    }
  }, 60_000);

  test('a client set to play 50 ms early (snapcast latency) is the earliest at every marker', async () => {
    const r = await measureSnapcastOffset({ markers: 3, latencyMs: { 2: 50 } });
    expect(r.markers).toHaveLength(3);
    // Ordering only: 50 ms is two orders of magnitude above any scheduling noise.
    for (const m of r.markers) expect({ perClientMs: m.perClientMs, earliest: m.perClientMs.indexOf(0) }).toMatchObject({ earliest: 1 });
  }, 60_000);
});

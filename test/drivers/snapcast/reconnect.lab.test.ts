/**
 * The control connection's backoff against a real snapserver that is down for ~8 s: with the
 * default settings the hub is back as soon as snapserver and its clients are (a doubling
 * backoff once cost another 7.5 s). No timing assertion: the test waits for the clients to be
 * Active again, and checks the retry schedule the hub logged against its rule. The lag itself
 * is reported by `npm run bench`.
 */
import { snapcastInstalled } from './harness';
import { labSuite } from '../../helpers/labs';
import { measureSnapcastReconnect } from './reconnect';

const describeIf = labSuite('the Snapcast lab', snapcastInstalled() ? undefined : 'snapserver, snapclient or ffmpeg is not installed');

describeIf('Snapcast reconnect after a snapserver outage (default backoff)', () => {
  test('clients are back after an 8 s outage, and every retry waited at most a quarter of the outage so far', async () => {
    const r = await measureSnapcastReconnect({ outageMs: 8000 });
    expect(r.hubBackMs).toBeGreaterThanOrEqual(0);
    expect(r.retries.length).toBeGreaterThan(3);
    for (const retry of r.retries) expect(retry.retryInMs).toBeLessThanOrEqual(Math.max(250, Math.round(retry.downForMs / 4)));
    // The hub saw a long outage (the last failed retry comes a quarter-wait before snapserver is
    // back, so anywhere past ~6 s of the 8): long enough for a doubling backoff to reach 4 s waits.
    expect(Math.max(...r.retries.map((x) => x.downForMs))).toBeGreaterThan(4000);
    expect(r.connects).toBe(2);
  }, 90_000);
});

/**
 * The control connection's backoff against a real snapserver that is down for ~8 s: with the
 * default settings the hub is back as soon as snapserver and its clients are (a doubling
 * backoff once cost another 7.5 s). No timing assertion: the test waits for the clients to be
 * Active again, and checks the retry schedule the hub logged against its rule.
 */
import { SnapcastEnv, snapcastInstalled, waitFor } from './harness';
import { labSuite } from '../helpers/labs';
import { startSnapcastHub, toneWav, type SnapcastHub } from './hub';

const describeIf = labSuite('the Snapcast lab', snapcastInstalled() ? undefined : 'snapserver, snapclient or ffmpeg is not installed');

describeIf('Snapcast reconnect after a snapserver outage (default backoff)', () => {
  let env: SnapcastEnv;
  let t: SnapcastHub;
  const clientIds = [1, 2].map((n) => `speakerhub-test-client-${n}`);

  beforeAll(async () => {
    env = await SnapcastEnv.create('speakerhub-snapcast-reconnect-');
    await env.startServer();
    for (const n of [1, 2]) await env.startClient(n);
    await env.clientsConnected(clientIds);
    // The defaults (the shared harness shortens them for its other tests).
    t = await startSnapcastHub(env.address, { 'tone.wav': toneWav(2, 440, 'Tone') }, { reconnectMinMs: 250, reconnectMaxMs: 10_000 });
    await waitFor(async () => (await t.op('device_list')).DeviceList.filter((d: any) => d.Active).length === 2, 10_000, 'both clients active');
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await env?.close();
  }, 30_000);

  test('clients are back after an 8 s outage, and every retry waited at most a quarter of the outage so far', async () => {
    await env.stopServer();
    await waitFor(async () => (await t.op('device_list')).DeviceList.every((d: any) => !d.Active), 5000, 'all clients inactive');
    // The outage itself (not a check that nothing happened).
    await new Promise((r) => setTimeout(r, 8000));
    await env.startServer();
    await env.clientsConnected(clientIds, 15_000);
    await waitFor(async () => (await t.op('device_list')).DeviceList.every((d: any) => d.Active), 20_000, 'all clients active again');

    const retries = t.logs
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'snapserver control connection unavailable');
    expect(retries.length).toBeGreaterThan(3);
    for (const r of retries) expect(r.retryInMs).toBeLessThanOrEqual(Math.max(250, Math.round(r.downForMs / 4)));
    // The outage was long enough for a doubling backoff to have reached 8 s waits.
    expect(Math.max(...retries.map((r) => r.downForMs))).toBeGreaterThan(7000);
    expect(t.logs.filter((l) => l.includes('"connected to snapserver"')).length).toBe(2);
  }, 60_000);
});

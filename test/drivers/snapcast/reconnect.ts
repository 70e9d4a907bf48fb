import { SnapcastEnv } from './harness';
import { startSnapcastHub, toneWav } from './hub';
import { eventually } from '../../helpers/wait';

/**
 * A snapserver outage of `outageMs` with the hub's default reconnect backoff: snapserver is
 * stopped, kept down, started again; measured from that start, when snapserver lists its
 * snapclients again (they reconnect on their own: the baseline) and when the hub shows them
 * all Active. Used by test/drivers/snapcast/reconnect.lab.test.ts (no timing assertion: it checks the
 * retry schedule) and by `npm run bench` (bench/drivers.js: the hub's lag behind the clients).
 */
export interface ReconnectReport {
  outageMs: number;
  /** ms from snapserver's restart until it lists every snapclient connected again. */
  clientsBackMs: number;
  /** ms from snapserver's restart until the hub shows every client Active. */
  hubBackMs: number;
  /** The hub's logged retries: how long it waited each time, how long the outage had lasted. */
  retries: { retryInMs: number; downForMs: number }[];
  /** "connected to snapserver" lines: the first connect and the reconnect. */
  connects: number;
}

export async function measureSnapcastReconnect(options: { outageMs?: number } = {}): Promise<ReconnectReport> {
  const outageMs = options.outageMs ?? 8000;
  const env = await SnapcastEnv.create('speakerhub-snapcast-reconnect-');
  const clientIds = [1, 2].map((n) => `speakerhub-test-client-${n}`);
  let hub: Awaited<ReturnType<typeof startSnapcastHub>> | undefined;
  try {
    await env.startServer();
    for (const n of [1, 2]) await env.startClient(n);
    await env.clientsConnected(clientIds);
    // The defaults (the shared harness shortens them for its other tests).
    hub = await startSnapcastHub(env.address, { 'tone.wav': toneWav(2, 440, 'Tone') }, { reconnectMinMs: 250, reconnectMaxMs: 10_000 });
    const t = hub;
    const active = async () => ((await t.op('device_list')).DeviceList as { Active: boolean }[]).map((d) => d.Active);
    await eventually(async () => (await active()).filter(Boolean).length === 2, 10_000, 'both clients active');

    await env.stopServer();
    await eventually(async () => (await active()).every((a) => !a), 5000, 'all clients inactive');
    // The outage itself (not a check that nothing happened).
    await new Promise((r) => setTimeout(r, outageMs));
    await env.startServer();
    const restartedAt = Date.now();
    let clientsBackMs = -1;
    let hubBackMs = -1;
    await Promise.all([
      env.clientsConnected(clientIds, 20_000).then(() => (clientsBackMs = Date.now() - restartedAt)),
      eventually(async () => (await active()).every(Boolean), 30_000, 'all clients active again in the hub').then(
        () => (hubBackMs = Date.now() - restartedAt),
      ),
    ]);
    const logs = t.logs.map((l) => JSON.parse(l) as { msg: string; retryInMs?: number; downForMs?: number });
    return {
      outageMs,
      clientsBackMs,
      hubBackMs,
      retries: logs
        .filter((l) => l.msg === 'snapserver control connection unavailable')
        .map((l) => ({ retryInMs: l.retryInMs!, downForMs: l.downForMs! })),
      connects: logs.filter((l) => l.msg === 'connected to snapserver').length,
    };
  } finally {
    await hub?.close();
    await env.close();
  }
}

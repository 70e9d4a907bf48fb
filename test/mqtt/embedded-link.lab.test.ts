/**
 * The hub attached to its embedded broker in process (src/mqtt/embedded-link.ts), as
 * `speakerhub hub` runs it: the built CLI in a child process, and a real MQTT client (mqtt.js)
 * from outside over TCP. The bridge works end to end through the in-process link (retained
 * state, a command and its answer, the retained state a late client gets, offline on a clean
 * stop), and the hub process never loads mqtt.js (idle RSS: issue 29): its require.cache is
 * read in the child itself, through a preload that prints it on SIGUSR2.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { MqttClient } from 'mqtt';
import { ensureBuilt, killAll, runCli, waitForBanner, within, type Cli } from '../helpers/cli';
import { Probe } from './helpers';

/** Preloaded into the hub: prints the files in require.cache on SIGUSR2 (one line, JSON). */
const PRELOAD = `process.on('SIGUSR2', () => process.stdout.write('REQUIRE-CACHE ' + JSON.stringify(Object.keys(require.cache)) + '\\n'));\n`;

describe('the embedded broker carries the bridge in process (CLI hub, outside client over TCP)', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mqtt-embedded-link-'));
  const data = path.join(dir, 'data');
  let hub: Cli | undefined;
  const clients: MqttClient[] = [];

  beforeAll(ensureBuilt, 120_000);
  afterAll(async () => {
    for (const c of clients) await c.endAsync(true).catch(() => undefined);
    if (hub && hub.child.exitCode === null && hub.child.signalCode === null) {
      hub.child.kill('SIGTERM');
      await within(hub.exit, 15_000, 'hub exit').catch(() => undefined);
    }
    killAll();
    rmSync(dir, { recursive: true, force: true });
  });

  test('retained state, a command and its answer, retained state for a late client; mqtt.js is not loaded in the hub', async () => {
    const preload = path.join(dir, 'require-cache.js');
    writeFileSync(preload, PRELOAD);
    const args = ['hub', '--virtual-speakers', '2', '-d', data, '--host', '127.0.0.1', '--port', '0', '--mqtt-port', '0', '--log-level', 'warn'];
    hub = runCli(args, {}, ['-r', preload]);
    await waitForBanner(hub);
    const url = /MQTT:\s+(mqtt:\/\/\S+)/.exec(hub.stdout())?.[1];
    expect(url).toMatch(/^mqtt:\/\/127\.0\.0\.1:\d+$/);
    const keys = JSON.parse(readFileSync(path.join(data, 'pubsub-keys.json'), 'utf8')) as { publishKey: string; subscribeKey: string };
    const creds = { username: keys.subscribeKey, password: keys.publishKey };

    // Retained state published by the hub through the in-process link reaches a TCP subscriber.
    const probe = await Probe.connect(url!, creds);
    clients.push(probe.client);
    await probe.client.subscribeAsync(['speakerhub/#'], { qos: 1 });
    const state = await probe.wait((m) => m.topic === 'speakerhub/bridge/state');
    expect(state).toMatchObject({ retain: true, json: { state: 'online' } });
    expect((await probe.wait((m) => m.topic === 'speakerhub/bridge/info')).json).toMatchObject({ broker: 'embedded' });
    const speaker = await probe.wait((m) => m.topic === 'speakerhub/virtual_speaker_1');
    expect(speaker.retain).toBe(true);
    expect(speaker.json).toMatchObject({ available: true });

    // A command from outside reaches the hub's in-process subscription, and its answer comes back.
    await probe.client.publishAsync('speakerhub/bridge/request/device_count', JSON.stringify({ transaction: 'count' }), { qos: 1 });
    const count = await probe.wait((m) => m.topic === 'speakerhub/bridge/response/device_count' && m.json?.transaction === 'count');
    expect(count.json).toMatchObject({ status: 'ok', data: { DeviceCount: '2' } });
    await probe.client.publishAsync('speakerhub/virtual_speaker_1/set', JSON.stringify({ volume: 37, transaction: 'vol' }), { qos: 1 });
    expect((await probe.wait((m) => m.topic === 'speakerhub/virtual_speaker_1/response' && m.json?.transaction === 'vol')).json).toMatchObject({
      status: 'ok',
    });
    await probe.wait((m) => m.topic === 'speakerhub/virtual_speaker_1' && m.json?.volume === 37);

    // The broker stored the hub's new state as retained: a client connecting now gets it at once.
    const late = await Probe.connect(url!, { username: keys.subscribeKey });
    clients.push(late.client);
    await late.client.subscribeAsync('speakerhub/virtual_speaker_1');
    const retained = await late.wait((m) => m.topic === 'speakerhub/virtual_speaker_1');
    expect(retained).toMatchObject({ retain: true, json: { volume: 37 } });

    // What the hub process has loaded, read in the process itself.
    const before = hub.stdout().length;
    hub.child.kill('SIGUSR2');
    const line = await within(
      new Promise<string>((resolve) => {
        const check = () => {
          const found = /REQUIRE-CACHE (.*)\n/.exec(hub!.stdout().slice(before));
          if (!found) return;
          hub!.child.stdout!.off('data', check);
          resolve(found[1]);
        };
        hub!.child.stdout!.on('data', check);
        check();
      }),
      10_000,
      'the require.cache listing',
    );
    const files = JSON.parse(line) as string[];
    expect(files.some((f) => f.includes(`${path.sep}node_modules${path.sep}aedes${path.sep}`))).toBe(true);
    expect(files.filter((f) => f.includes(`${path.sep}node_modules${path.sep}mqtt${path.sep}`))).toEqual([]);

    // A clean stop says offline through the same link before the broker goes.
    hub.child.kill('SIGTERM');
    await probe.wait((m) => m.topic === 'speakerhub/bridge/state' && m.json?.state === 'offline');
    expect((await within(hub.exit, 15_000, 'hub exit')).code).toBe(0);
  }, 60_000);
});

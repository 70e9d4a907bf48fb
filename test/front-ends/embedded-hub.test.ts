/**
 * Issue 29: a hub composes its front ends from its config, whoever creates it. createHub()
 * with `mqtt.enabled` runs the broker and the bridge (no CLI, no extension handed in); without
 * it, nothing listens on that port and no MQTT runs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SpeakerHub } from '../../src/hub';
import type { VirtualDriver } from '../../src/drivers/virtual/virtual-driver';
import { MqttExtension } from '../../src/mqtt/extension';
import { createTestHub } from '../helpers/hub';
import { bridgeRequest, Probe } from '../mqtt/helpers';

const KEYS = { publishKey: 'pub-embedded-0123456789', subscribeKey: 'sub-embedded-0123456789' };

/** A TCP port nothing listens on right now (the OS picks it, then it is released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/** Resolves with the connection's outcome: 'open' or the error code (ECONNREFUSED when nothing listens). */
function probePort(port: number): Promise<string> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.destroy();
      resolve('open');
    });
    sock.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

let dataDir: string;
let hub: SpeakerHub | undefined;

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-fe-'));
});

afterEach(async () => {
  await hub?.stop();
  hub = undefined;
  await rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
});

test('createHub({ mqtt: { enabled: true, port } }): a client connects to that port and drives a speaker through the bridge', async () => {
  const port = await freePort();
  ({ hub } = await createTestHub({ mqtt: { enabled: true, port, host: '127.0.0.1' }, pubsub: KEYS }, { dataDir }));
  await hub.start();
  expect(hub.extension('mqtt')).toBeDefined();
  const speaker = hub.driver<VirtualDriver>('virtual')!.speakers()[0];
  const client = await Probe.connect(`mqtt://127.0.0.1:${port}`, { username: KEYS.subscribeKey, password: KEYS.publishKey });
  try {
    await client.client.subscribeAsync('speakerhub/bridge/#');
    await client.wait((m) => m.topic === 'speakerhub/bridge/state' && m.json?.state === 'online');
    const target = speaker.volume === 17 ? 18 : 17;
    const set = await bridgeRequest(client, client.client, 'speakerhub', 'set_volume_device', { DeviceID: speaker.id, Volume: String(target) });
    expect(set.status).toBe('ok');
    // The real outcome: the virtual speaker itself is at the new volume, and the hub reads it back so.
    expect(speaker.volume).toBe(target);
    const got = await bridgeRequest(client, client.client, 'speakerhub', 'get_volume_device', { DeviceID: speaker.id });
    expect(got).toMatchObject({ status: 'ok', data: { Volume: String(target) } });
  } finally {
    await client.end();
  }
  await hub.stop();
  hub = undefined;
  // Stopped with the hub: the port is free again.
  expect(await probePort(port)).toBe('ECONNREFUSED');
});

test('createHub without mqtt.enabled opens no MQTT port and runs no MQTT (a port named alone turns nothing on)', async () => {
  const port = await freePort();
  ({ hub } = await createTestHub({ mqtt: { port, host: '127.0.0.1' }, pubsub: KEYS }, { dataDir }));
  await hub.start();
  expect(hub.extension('rest')).toBeDefined();
  expect(hub.extension('mqtt')).toBeUndefined();
  expect(await probePort(port)).toBe('ECONNREFUSED');
});

test('a default createHub runs REST and nothing else: exactly the front ends its config names', async () => {
  let logs: string[];
  ({ hub, logs } = await createTestHub({}, { dataDir }));
  await hub.start();
  const started = logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'hub started');
  expect(started.extensions).toEqual(['rest']);
  for (const name of ['mqtt', 'dlna', 'cloud-link']) expect(hub.extension(name)).toBeUndefined();
});

test("an embedder's extension named like a registered front end takes its place: one MQTT, the embedder's", async () => {
  const mine = new MqttExtension();
  let logs: string[];
  ({ hub, logs } = await createTestHub({ mqtt: { enabled: true, port: 0, host: '127.0.0.1' }, pubsub: KEYS }, { dataDir, extensions: [mine] }));
  await hub.start();
  expect(hub.extension('mqtt')).toBe(mine);
  expect(mine.status?.mode).toBe('embedded');
  const lines = logs.map((l) => JSON.parse(l));
  expect(lines.filter((l) => l.msg === 'MQTT started')).toHaveLength(1);
  expect(lines.find((l) => l.msg === 'hub started').extensions).toEqual(['rest', 'mqtt']);
});

/**
 * The hub's own link to its broker is never dropped. A slow command holds the hub's only
 * command slot (mqtt.maxConcurrentCommands 1) while ~6 MB of bridge requests queue up; the hub
 * holds the broker's deliveries on purpose (in process, embedded-link.ts; with the mqtt.js link
 * it stopped reading, and the embedded broker, drainTimeout 100 ms here, disconnected it, which
 * took bridge/state offline and ran QoS 1 commands twice after the redelivery). Every request
 * is answered exactly once, and the bridge never says offline.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { Probe, startMqttHub, type MqttTestHub } from './helpers';

let t: MqttTestHub;
let stall: Server;
const sockets: Socket[] = [];

beforeAll(async () => {
  // A media URL that accepts the connection and never answers: a play on it holds its command slot.
  stall = createServer((s) => sockets.push(s.on('error', () => undefined)));
  await new Promise<void>((r) => stall.listen(0, '127.0.0.1', r));
  t = await startMqttHub({ mqtt: { maxConcurrentCommands: 1, drainTimeoutMs: 100 } });
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  stall.close();
  await t.close();
});

test('a slow command and 6 MB of queued requests: the hub stays connected and answers each request once', async () => {
  const probe = await Probe.connect(t.url!, { username: t.keys.subscribeKey, password: t.keys.publishKey });
  await probe.client.subscribeAsync(['speakerhub/bridge/state', 'speakerhub/bridge/response/#'], { qos: 1 });
  await probe.wait((m) => m.topic === 'speakerhub/bridge/state' && m.json?.state === 'online');
  const writer = await Probe.connect(t.url!, { username: t.keys.subscribeKey, password: t.keys.publishKey });
  const port = (stall.address() as { port: number }).port;
  writer.client.publish(
    'speakerhub/bridge/request/play_web_media_party_mode',
    JSON.stringify({ MediaUrl: `http://127.0.0.1:${port}/never.mp3`, transaction: 'slow' }),
    { qos: 1 },
  );
  const N = 2000;
  const filler = 'x'.repeat(3000);
  for (let i = 0; i < N; i++) {
    writer.client.publish('speakerhub/bridge/request/device_count', JSON.stringify({ transaction: `r${i}`, filler }), { qos: 1 });
  }
  await probe.wait(
    (m) => m.topic === 'speakerhub/bridge/response/play_web_media_party_mode' && m.json?.transaction === 'slow',
    60_000,
    'the slow command',
  );
  await probe.wait((m) => m.json?.transaction === `r${N - 1}`, 60_000, 'the last request answered');
  // Answers come in order: once the last is in, all are. Each exactly once.
  const answers = probe.messages.filter((m) => m.topic === 'speakerhub/bridge/response/device_count').map((m) => m.json?.transaction as string);
  expect(answers.length).toBe(N);
  expect(new Set(answers).size).toBe(N);
  expect(probe.messages.some((m) => m.topic === 'speakerhub/bridge/state' && m.json?.state === 'offline')).toBe(false);
  await writer.client.endAsync();
  await probe.client.endAsync();
}, 120_000);

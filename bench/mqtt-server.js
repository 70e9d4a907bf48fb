'use strict';
/**
 * Bench child for bench/mqtt.js: either a SpeakerHub with its embedded MQTT broker
 * (mode "hub"), or the baseline, a bare aedes broker with an echo responder attached the way
 * the hub attaches to its embedded broker (aedes' in-process subscribe/publish, no MQTT client:
 * src/mqtt/embedded-link.ts) (mode "bare").
 *
 *   node bench/mqtt-server.js hub <dataDir>      node bench/mqtt-server.js bare
 *
 * Reports {type:'ready', url, ...} and, on {cmd:'tick'} (bare only), publishes one message
 * shaped like PlaybackTimeChanged to `bench/fanout`. Listens on 127.0.0.1 only.
 */
const { join } = require('node:path');
const net = require('node:net');
const { rmSync } = require('node:fs');
const { report, serveParent } = require('./child-ipc');

const dist = join(__dirname, '..', 'dist');
const mode = process.argv[2];

async function startHub(dataDir) {
  const { createHub, MqttExtension } = require(join(dist, 'index.js'));
  const { createLogger } = require(join(dist, 'logger.js'));
  const ext = new MqttExtension();
  const hub = createHub(
    {
      dataDir,
      server: { host: '127.0.0.1', port: 0, token: 'bench-token-0123456789abcdefghij' },
      mqtt: { enabled: true, host: '127.0.0.1', port: 0, maxClients: 5000 },
      speakers: { virtual: { count: 3 } },
      log: { level: 'warn' },
    },
    { logger: createLogger({ level: 'warn' }), extensions: [ext] },
  );
  await hub.start();
  const session = hub.core.sessions.create();
  const speakers = hub.core.speakers.all().map((s) => hub.core.speakers.record(s).DeviceID);
  const media = hub.library.list()[0];
  report({
    type: 'ready',
    url: `mqtt://127.0.0.1:${ext.brokerAddress.port}`,
    keys: ext.status.keys,
    uuid: hub.core.uuid,
    session,
    rest: hub.url,
    persistentId: media && media.persistentId,
    speakers,
  });
  return () => hub.stop().finally(() => rmSync(dataDir, { recursive: true, force: true }));
}

/**
 * The baseline talks to aedes' in-process API itself (subscribe with a listener, publish a packet)
 * rather than through the product's pieces that do the same (EmbeddedBroker.publish/subscribe in
 * src/mqtt/broker.ts, EmbeddedLink in src/mqtt/embedded-link.ts), on purpose: the ratio is meant to
 * show what the hub adds on top of aedes, and those pieces are part of that — the broker's
 * authenticate/authorizePublish/authorizeForward hooks and packet guard, the link's command slots,
 * its bound on unfinished publications and its ordering turn. Routed through them, the baseline
 * would measure the product against itself and the ratio would no longer see their cost. What is
 * written twice is aedes' own call (a packet literal and a callback), not hub logic.
 */
async function startBare() {
  const { Aedes } = require('aedes');
  const broker = await Aedes.createBroker({ drainTimeout: 10000 });
  const server = net.createServer({ noDelay: true }, (s) => {
    s.setNoDelay(true);
    broker.handle(s);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const publish = (topic, body, qos = 1) =>
    broker.publish({ cmd: 'publish', topic, payload: Buffer.from(JSON.stringify(body)), qos, retain: false, dup: false }, () => undefined);
  const answer = (packet, done) => {
    // Parse and answer a JSON the size of the hub's answer, as the hub does.
    const req = JSON.parse(packet.payload.toString());
    if (packet.topic === 'echo/req') {
      publish('echo/res', { status: 'ok', data: { DeviceCount: '3' }, transaction: req.transaction });
    } else if (!req.ResponseOf) {
      // One shared topic, like the pub/sub channel: requests and answers (and the echo's own) all go by.
      publish('echo/chan', {
        HKWHubUUID: '00000000-0000-4000-8000-000000000000',
        SessionToken: req.SessionToken,
        ResponseOf: req.Command,
        DeviceCount: '3',
        transaction: req.transaction,
      });
    }
    done();
  };
  for (const topic of ['echo/req', 'echo/chan']) await new Promise((r) => broker.subscribe(topic, answer, r));
  let tick = 0;
  report({ type: 'ready', url: `mqtt://127.0.0.1:${server.address().port}` });
  return {
    stop: async () => {
      await new Promise((r) => server.close(r));
      await new Promise((r) => broker.close(r));
    },
    tick: () => {
      tick++;
      publish(
        'bench/fanout',
        {
          Event: 'PlaybackTimeChanged',
          HKWHubUUID: '00000000-0000-4000-8000-000000000000',
          SessionToken: '',
          PlaybackTime: String(tick),
          DeviceIDList: '12106658486352,25350427372477,22178105730409',
        },
        0,
      );
    },
  };
}

(async () => {
  let stopFn = async () => undefined;
  const commands = {};
  if (mode === 'hub') stopFn = await startHub(process.argv[3]);
  else {
    const bare = await startBare();
    stopFn = bare.stop;
    commands.tick = () => bare.tick();
  }
  let stopping = false;
  serveParent(async (code) => {
    if (stopping) return;
    stopping = true;
    await stopFn().catch(() => undefined);
    process.exit(code);
  }, commands);
})().catch((e) => {
  report({ type: 'error', error: e.stack || String(e) });
  process.exit(1);
});

/**
 * SIGTERM ends the hub even when its external broker is stalled (SIGSTOPped: it holds the
 * connection and never acknowledges the final "offline") or gone: the goodbye is bounded, and
 * the process exits. The real CLI and a real mosquitto.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectAsync } from 'mqtt';
import { ensureBuilt, killAll, runCli, waitForBanner, within } from '../helpers/cli';
import { TEST_TOKEN } from '../helpers/hub';
import { Mosquitto, mosquittoUnavailable, USERS } from './mosquitto';

const missing = mosquittoUnavailable();
let dataDir: string;

beforeAll(async () => {
  if (missing) throw new Error(missing);
  await ensureBuilt();
  dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-shutdown-'));
});
afterAll(async () => {
  killAll();
  await rm(dataDir, { recursive: true, force: true });
});

async function hubOn(broker: Mosquitto) {
  const cli = runCli(
    [
      'hub',
      '-d',
      dataDir,
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--token',
      TEST_TOKEN,
      '--mqtt',
      `mqtt://127.0.0.1:${broker.port}`,
      '--log-level',
      'info',
    ],
    {
      SPEAKERHUB_MQTT_USERNAME: 'speakerhub',
      SPEAKERHUB_MQTT_PASSWORD: USERS.speakerhub,
    },
  );
  await waitForBanner(cli);
  // The positive signal that the link is up: the hub's retained bridge/state says online.
  const watcher = await connectAsync(`mqtt://127.0.0.1:${broker.port}`, { username: 'controller', password: USERS.controller, reconnectPeriod: 0 });
  try {
    const online = new Promise<void>((resolve) => watcher.on('message', (_t, payload) => String(payload).includes('"online"') && resolve()));
    await watcher.subscribeAsync('speakerhub/bridge/state', { qos: 1 });
    await within(online, 20_000, 'the hub to say online on mosquitto');
  } finally {
    await watcher.endAsync(true);
  }
  return cli;
}

test.each(['stalled', 'gone'] as const)(
  'SIGTERM with the broker %s: the hub exits',
  async (fault) => {
    const broker = new Mosquitto();
    await broker.start();
    try {
      const cli = await hubOn(broker);
      if (fault === 'stalled') broker.pause();
      else await broker.kill();
      cli.child.kill('SIGTERM');
      const { code, signal } = await within(cli.exit, 30_000, `the hub to exit after SIGTERM with the broker ${fault}`);
      expect(signal).toBeNull();
      expect(code === 0 || code === 1).toBe(true);
    } finally {
      broker.resume();
      await broker.stop();
    }
  },
  60_000,
);

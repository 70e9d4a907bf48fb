/**
 * The CLI only maps flags (and its defaults) onto config: `speakerhub hub` runs MQTT unless
 * told otherwise — by `--mqtt off`, the config file or the environment — because its default
 * lies beneath them; the hub itself starts what the config turns on.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load';
import { enabledFrontEnds } from '../../src/front-ends';
import { parseConfig } from '../../src/hub-config';
import { killAll, runCli, waitForBanner, within } from '../helpers/cli';
import { bridgeRequest, Probe } from '../mqtt/helpers';

const TOKEN = 'test-token-0123456789abcdefghij';
const KEYS = { publishKey: 'pub-cli-default-0123456789', subscribeKey: 'sub-cli-default-0123456789' };
const CLI_DEFAULTS = { mqtt: { enabled: true } };

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

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

const dirs: string[] = [];
afterAll(async () => {
  killAll();
  for (const d of dirs) await rm(d, { recursive: true, force: true, maxRetries: 5 });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'speakerhub-fe-cli-'));
  dirs.push(d);
  return d;
}

describe('the CLI default beneath the config file', () => {
  test('no file: MQTT on; a file or the environment saying enabled:false wins; a file naming a broker keeps it on', async () => {
    const dir = await tempDir();
    expect((await loadConfig(undefined, {}, { env: {}, defaults: CLI_DEFAULTS })).mqtt.enabled).toBe(true);
    const off = join(dir, 'off.json');
    await writeFile(off, JSON.stringify({ mqtt: { enabled: false } }));
    expect((await loadConfig(off, {}, { env: {}, defaults: CLI_DEFAULTS })).mqtt.enabled).toBe(false);
    expect((await loadConfig(undefined, {}, { env: { SPEAKERHUB_MQTT_ENABLED: 'false' }, defaults: CLI_DEFAULTS })).mqtt.enabled).toBe(false);
    const broker = join(dir, 'broker.json');
    await writeFile(broker, JSON.stringify({ mqtt: { url: 'mqtt://broker.lan:1883' } }));
    const c = await loadConfig(broker, {}, { env: {}, defaults: CLI_DEFAULTS });
    expect(c.mqtt).toMatchObject({ enabled: true, url: 'mqtt://broker.lan:1883' });
    // Without the CLI's default (a library hub), the same file names a broker but does not turn MQTT on.
    expect((await loadConfig(broker, {}, { env: {} })).mqtt.enabled).toBe(false);
  });

  test('the registry turns on what the validated config names', () => {
    expect(enabledFrontEnds(parseConfig({})).map((f) => f.name)).toEqual([]);
    expect(enabledFrontEnds(parseConfig({ mqtt: { enabled: true }, dlna: { enabled: true } })).map((f) => f.name)).toEqual(['mqtt', 'dlna']);
    expect(enabledFrontEnds(parseConfig({ cloud: { url: 'http://127.0.0.1:8080' } })).map((f) => f.name)).toEqual(['cloud-link']);
  });
});

describe('speakerhub hub', () => {
  test('runs the embedded broker by default: a client drives a speaker through the bridge; --mqtt off opens no port', async () => {
    const port = await freePort();
    const base = ['--host', '127.0.0.1', '--port', '0', '--token', TOKEN, '--log-level', 'warn', '--mqtt-port', String(port)];
    const keys = ['--publish-key', KEYS.publishKey, '--subscribe-key', KEYS.subscribeKey];
    const on = runCli(['hub', '-d', await tempDir(), ...base, ...keys]);
    try {
      await waitForBanner(on);
      expect(on.stdout()).toContain(`MQTT:       mqtt://127.0.0.1:${port}`);
      const client = await Probe.connect(`mqtt://127.0.0.1:${port}`, { username: KEYS.subscribeKey, password: KEYS.publishKey });
      try {
        await client.client.subscribeAsync('speakerhub/bridge/#');
        const list = await bridgeRequest(client, client.client, 'speakerhub', 'device_list', {});
        const id = list.data.DeviceList[0].DeviceID as string;
        expect((await bridgeRequest(client, client.client, 'speakerhub', 'set_volume_device', { DeviceID: id, Volume: '13' })).status).toBe('ok');
        expect(await bridgeRequest(client, client.client, 'speakerhub', 'get_volume_device', { DeviceID: id })).toMatchObject({
          data: { Volume: '13' },
        });
      } finally {
        await client.end();
      }
    } finally {
      on.child.kill('SIGTERM');
      await within(on.exit, 20_000, 'the hub to stop');
    }
    const off = runCli(['hub', '-d', await tempDir(), ...base, '--mqtt', 'off']);
    try {
      await waitForBanner(off);
      expect(off.stdout()).not.toContain('MQTT:');
      expect(await probePort(port)).toBe('ECONNREFUSED');
    } finally {
      off.child.kill('SIGTERM');
      await within(off.exit, 20_000, 'the hub to stop');
    }
  }, 60_000);
});

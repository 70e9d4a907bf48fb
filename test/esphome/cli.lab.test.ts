import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliResult, ensureBuilt, killAll, runCli, within } from '../helpers/cli';
import { freePort } from '../helpers/net';
import { HELLO, rawClient } from './raw-client';

/** `speakerhub hub --esphome`: the flags become config, the banner says where and how, bad values stop it with exit code 2. */
const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'speakerhub-esphome-cli-'));
  dirs.push(d);
  return d;
};

beforeAll(ensureBuilt, 120_000);
afterAll(() => {
  killAll();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('--esphome --esphome-port: the API listens there and the banner says so (plaintext, no token)', async () => {
  const port = await freePort();
  const cli = runCli([
    'hub',
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--data',
    tmp(),
    '--virtual-speakers',
    '2',
    '--log-level',
    'warn',
    '--esphome',
    '--esphome-port',
    String(port),
  ]);
  await within(
    new Promise<void>((resolve) => {
      const check = () => /Media:/.test(cli.stdout()) && (cli.child.stdout!.off('data', check), resolve());
      cli.child.stdout!.on('data', check);
      check();
    }),
    30_000,
    'the banner',
  );
  expect(cli.stdout()).toContain(`ESPHome:    port ${port}, 2 speakers + All speakers, plaintext, no token (set esphome.encryptionKey to encrypt)`);
  expect(cli.stdout()).toContain('no API token: any LAN host may control the speakers (esphome.allow)');
  expect(cli.stdout()).toContain('not advertised (no --interface)');
  const c = await rawClient(port);
  c.socket.write(HELLO);
  await within(
    new Promise<void>((resolve) => {
      const t = setInterval(() => c.ids().includes(2) && (clearInterval(t), resolve()), 20);
    }),
    5000,
    'HelloResponse',
  );
  c.socket.destroy();
  cli.child.kill('SIGTERM');
  expect((await within(cli.exit, 15_000, 'the exit')).code).toBe(0);
});

test('a bad encryption key or port stops the hub with exit code 2, naming where it came from', async () => {
  const bad = await cliResult(['hub', '--port', '0', '--data', tmp(), '--esphome'], { SPEAKERHUB_ESPHOME_ENCRYPTION_KEY: 'not-a-key' });
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('SPEAKERHUB_ESPHOME_ENCRYPTION_KEY (esphome.encryptionKey)');
  const port = await cliResult(['hub', '--port', '0', '--data', tmp(), '--esphome-port', 'x']);
  expect(port.code).not.toBe(0);
  expect(port.stderr).toContain('--esphome-port must be an integer');
});

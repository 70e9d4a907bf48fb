/**
 * A hub that does not run a front end never loads its code (docs/development.md, "Memory"): the package's
 * createHub with a default config starts REST only, and no module of MQTT (aedes, mqtt.js),
 * the cloud link (ws) or DLNA is in the process; with `mqtt.enabled` the MQTT code loads.
 * Run in a child process of the built package (dist/), as a library user runs it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt } from '../helpers/cli';
import { probeLoaded } from '../helpers/lazy-load';

const probe = (dataDir: string, mqtt: 'on' | 'off') =>
  probeLoaded(dataDir, mqtt === 'on' ? { mqtt: { enabled: true, host: '127.0.0.1', port: 0 } } : {}, ['rest', 'mqtt', 'dlna', 'cloud-link'], {
    mqtt: /\/dist\/mqtt\/extension\.js$/,
    aedes: /node_modules\/aedes\//,
    mqttjs: /node_modules\/mqtt\//,
    dlna: /\/dist\/dlna\/extension\.js$/,
    cloudLink: /\/dist\/cloud-link\/link-extension\.js$/,
    ws: /node_modules\/ws\//,
  });

let dataDir: string;
beforeAll(async () => {
  await ensureBuilt();
  dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-fe-lazy-'));
});
afterAll(() => rm(dataDir, { recursive: true, force: true, maxRetries: 5 }));

test('a default library hub runs REST only and loads no front end code', async () => {
  expect(await probe(dataDir, 'off')).toEqual({
    running: ['rest'],
    mqtt: false,
    aedes: false,
    mqttjs: false,
    dlna: false,
    cloudLink: false,
    ws: false,
  });
}, 60_000);

test('mqtt.enabled loads the MQTT code (and only it)', async () => {
  expect(await probe(dataDir, 'on')).toMatchObject({ running: ['rest', 'mqtt'], mqtt: true, aedes: true, dlna: false, cloudLink: false });
}, 60_000);

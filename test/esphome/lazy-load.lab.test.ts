/**
 * Without `esphome.enabled` the hub loads none of the ESPHome code, protobufjs or the mDNS
 * advertiser (so nothing listens on 6053 and nothing multicasts); with it, they load. Run in
 * a child process of the built package (dist/), as a library user runs it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt } from '../helpers/cli';
import { probeLoaded } from '../helpers/lazy-load';

const probe = (dataDir: string, on: 'on' | 'off') =>
  probeLoaded(dataDir, on === 'on' ? { esphome: { enabled: true, host: '127.0.0.1', port: 0 } } : {}, ['esphome'], {
    esphome: /\/dist\/esphome\/extension\.js$/,
    protobufjs: /node_modules\/protobufjs\//,
    mdns: /\/dist\/net\/mdns\.js$/,
  });

let dataDir: string;
beforeAll(async () => {
  await ensureBuilt();
  dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-esphome-lazy-'));
}, 120_000);
afterAll(async () => {
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

test('off: no ESPHome code, no protobufjs, no mDNS advertiser', async () => {
  expect(await probe(dataDir, 'off')).toEqual({ running: [], esphome: false, protobufjs: false, mdns: false });
});

test('on: the extension runs and its code is loaded', async () => {
  expect(await probe(dataDir, 'on')).toMatchObject({ running: ['esphome'], esphome: true, protobufjs: true });
});

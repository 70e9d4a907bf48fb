/**
 * Without `esphome.enabled` the hub loads none of the ESPHome code, protobufjs or the mDNS
 * advertiser (so nothing listens on 6053 and nothing multicasts); with it, they load. Run in
 * a child process of the built package (dist/), as a library user runs it.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt, ROOT } from '../helpers/cli';

const PROBE = `
const { createHub } = require(${JSON.stringify(ROOT)});
const [dataDir, on] = process.argv.slice(1);
(async () => {
  const hub = createHub({
    dataDir,
    server: { host: '127.0.0.1', port: 0 },
    media: { samples: false },
    log: { level: 'silent' },
    ...(on === 'on' ? { esphome: { enabled: true, host: '127.0.0.1', port: 0 } } : {}),
  });
  await hub.start();
  const loaded = Object.keys(require.cache).map((f) => f.replace(/\\\\/g, '/'));
  const has = (re) => loaded.some((f) => re.test(f));
  const out = {
    running: !!hub.extension('esphome'),
    esphome: has(/\\/dist\\/esphome\\/extension\\.js$/),
    protobufjs: has(/node_modules\\/protobufjs\\//),
    mdns: has(/\\/dist\\/net\\/mdns\\.js$/),
  };
  await hub.stop();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
`;

function probe(dataDir: string, on: 'on' | 'off'): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', PROBE, dataDir, on], { cwd: ROOT, timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`${err.message}\n${stderr}`));
      resolve(JSON.parse(stdout.trim().split('\n').pop()!));
    });
  });
}

let dataDir: string;
beforeAll(async () => {
  await ensureBuilt();
  dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-esphome-lazy-'));
}, 120_000);
afterAll(async () => {
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

test('off: no ESPHome code, no protobufjs, no mDNS advertiser', async () => {
  expect(await probe(dataDir, 'off')).toEqual({ running: false, esphome: false, protobufjs: false, mdns: false });
});

test('on: the extension runs and its code is loaded', async () => {
  expect(await probe(dataDir, 'on')).toMatchObject({ running: true, esphome: true, protobufjs: true });
});

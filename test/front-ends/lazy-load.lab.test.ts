/**
 * A hub that does not run a front end never loads its code (docs/development.md, "Memory"): the package's
 * createHub with a default config starts REST only, and no module of MQTT (aedes, mqtt.js),
 * the cloud link (ws) or DLNA is in the process; with `mqtt.enabled` the MQTT code loads.
 * Run in a child process of the built package (dist/), as a library user runs it.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt, ROOT } from '../helpers/cli';

const PROBE = `
const { createHub } = require(${JSON.stringify(ROOT)});
const [dataDir, mqtt] = process.argv.slice(1);
(async () => {
  const hub = createHub({
    dataDir,
    server: { host: '127.0.0.1', port: 0 },
    media: { samples: false },
    log: { level: 'silent' },
    ...(mqtt === 'on' ? { mqtt: { enabled: true, host: '127.0.0.1', port: 0 } } : {}),
  });
  await hub.start();
  const loaded = Object.keys(require.cache).map((f) => f.replace(/\\\\/g, '/'));
  const has = (re) => loaded.some((f) => re.test(f));
  const out = {
    running: ['rest', 'mqtt', 'dlna', 'cloud-link'].filter((n) => hub.extension(n)),
    mqtt: has(/\\/dist\\/mqtt\\/extension\\.js$/), aedes: has(/node_modules\\/aedes\\//), mqttjs: has(/node_modules\\/mqtt\\//),
    dlna: has(/\\/dist\\/dlna\\/extension\\.js$/), cloudLink: has(/\\/dist\\/cloud-link\\/link-extension\\.js$/), ws: has(/node_modules\\/ws\\//),
  };
  await hub.stop();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
`;

function probe(dataDir: string, mqtt: 'on' | 'off'): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', PROBE, dataDir, mqtt], { cwd: ROOT, timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`${err.message}\n${stderr}`));
      resolve(JSON.parse(stdout.trim().split('\n').pop()!));
    });
  });
}

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

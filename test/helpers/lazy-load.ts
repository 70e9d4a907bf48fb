/**
 * What a hub loads, seen as a library user sees it: the built package's createHub (dist/) in a
 * child process, started with `config` and stopped, reports which of `extensions` ran and
 * which of `modules` (a name, and a pattern over the loaded files' paths) were loaded. The
 * suites that check a front end's code loads only when it runs (docs/development.md, "Memory")
 * ask it.
 */
import { execFile } from 'node:child_process';
import { ROOT } from './cli';

const PROBE = `
const { createHub } = require(${JSON.stringify(ROOT)});
const [dataDir, configJson, extensionsJson, modulesJson] = process.argv.slice(1);
(async () => {
  const hub = createHub({
    dataDir,
    server: { host: '127.0.0.1', port: 0 },
    media: { samples: false },
    log: { level: 'silent' },
    ...JSON.parse(configJson),
  });
  await hub.start();
  const loaded = Object.keys(require.cache).map((f) => f.replace(/\\\\/g, '/'));
  const out = { running: JSON.parse(extensionsJson).filter((n) => hub.extension(n)) };
  for (const [name, source] of Object.entries(JSON.parse(modulesJson))) {
    const re = new RegExp(source);
    out[name] = loaded.some((f) => re.test(f));
  }
  await hub.stop();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
`;

/** Runs the probe (ensureBuilt() first); `{ running: [the extensions that ran], <module name>: loaded }`. */
export function probeLoaded(
  dataDir: string,
  config: Record<string, unknown>,
  extensions: string[],
  modules: Record<string, RegExp>,
): Promise<Record<string, unknown>> {
  const sources = Object.fromEntries(Object.entries(modules).map(([name, re]) => [name, re.source]));
  const args = ['-e', PROBE, dataDir, JSON.stringify(config), JSON.stringify(extensions), JSON.stringify(sources)];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { cwd: ROOT, timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`${err.message}\n${stderr}`));
      resolve(JSON.parse(stdout.trim().split('\n').pop()!));
    });
  });
}

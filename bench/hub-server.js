'use strict';
/**
 * Bench child: one SpeakerHub in its own process, so the load generator (in the parent)
 * never shares an event loop with it.
 *
 *   node bench/hub-server.js '{"dataDir":"/tmp/x","speakers":3,"token":"...","session":true}'
 *
 * Forked with IPC it reports {type:'ready', url, token, session, ...} through process.send and
 * answers {cmd:'rss'} (needs --expose-gc) and {cmd:'stop'}; run by hand it prints the same
 * JSON on stdout and stops on SIGINT/SIGTERM (so --cpu-prof profiles get written).
 * It listens on 127.0.0.1 only, and stops itself when the parent goes away.
 */
const http = require('node:http');
const { rmSync } = require('node:fs');
const { join } = require('node:path');
const { report, serveParent } = require('./child-ipc');

const cfg = JSON.parse(process.argv[2] || process.env.BENCH_HUB_CONFIG || '{}');
if (!cfg.dataDir) {
  console.error('hub-server: config needs a dataDir');
  process.exit(2);
}
const TOKEN = cfg.token || 'bench-token-0123456789abcdefghij';

// Loaded only after the config checks, so a bad call fails fast.
const { createHub } = require(join(__dirname, '..', 'dist', 'index.js'));
const { START_FLAGS, startupDone } = require(join(__dirname, '..', 'dist', 'cli', 'heap.js'));

let hub;
let stopping = false;

/** GET with node:http (not fetch: undici would be loaded and counted in the RSS figure). */
function get(url, headers) {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode, text }));
      })
      .on('error', reject);
  });
}

async function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  const force = setTimeout(() => process.exit(code), 5000);
  force.unref();
  try {
    if (hub) await hub.stop();
  } catch (e) {
    console.error('hub-server: stop failed:', e && e.message);
    code = code || 1;
  }
  try {
    rmSync(cfg.dataDir, { recursive: true, force: true });
  } catch {
    /* the parent removes it too */
  }
  if (process.send && process.connected) process.send({ type: 'stopped' });
  process.exit(code);
}

async function main() {
  const t0 = process.hrtime.bigint();
  hub = createHub({
    dataDir: cfg.dataDir,
    server: { host: '127.0.0.1', port: 0, token: TOKEN, auth: true },
    mediaServer: { host: '127.0.0.1', port: 0 },
    speakers: { virtual: { count: cfg.speakers ?? 3 } },
    log: { level: cfg.logLevel || 'warn' },
  });
  await hub.start();
  const startMs = Number(process.hrtime.bigint() - t0) / 1e6;
  // Started with the CLI's start-only V8 flags (bench/run.js): end them as the CLI does, and
  // be ready once they have ended (the load that follows at once would otherwise keep them on).
  if (process.execArgv.some((f) => START_FLAGS.includes(f))) await startupDone(true);
  const url = hub.url;
  let session;
  if (cfg.session !== false) {
    const r = await get(`${url}/api/v1/init_session`, { Authorization: `Bearer ${TOKEN}` });
    if (r.status !== 200) throw new Error(`init_session answered ${r.status}: ${r.text}`);
    session = JSON.parse(r.text).SessionToken;
  }
  report({ type: 'ready', pid: process.pid, url, token: TOKEN, session, speakers: cfg.speakers ?? 3, startMs });
}

serveParent(stop);

main().catch((e) => {
  console.error('hub-server: start failed:', e && e.stack ? e.stack : e);
  report({ type: 'error', error: String(e && e.message ? e.message : e) });
  stop(1);
});

'use strict';
/**
 * Bench child: a hub (3 virtual speakers) with its REST server and its link to the cloud.
 *   node bench/linked-hub-server.js '{"dataDir":"/tmp/x","cloud":"http://…","username":"…","passwordFile":"…","token":"…"}'
 * Reports {type:'ready', url} once the link is online. Commands: rss, stop.
 */
const { rmSync } = require('node:fs');
const { join } = require('node:path');
const { report, serveParent } = require('./child-ipc');

const cfg = JSON.parse(process.argv[2] || '{}');
const dist = join(__dirname, '..', 'dist');
const { createHub } = require(join(dist, 'index.js'));
const { CloudLinkExtension } = require(join(dist, 'cloud-link', 'link-extension.js'));
const { createLogger } = require(join(dist, 'logger.js'));

let hub;
let stopping = false;
async function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  try {
    if (hub) await hub.stop();
  } catch {
    code = code || 1;
  }
  rmSync(cfg.dataDir, { recursive: true, force: true });
  process.exit(code);
}
serveParent(stop);

(async () => {
  const link = new CloudLinkExtension();
  hub = createHub(
    {
      dataDir: cfg.dataDir,
      server: { host: '127.0.0.1', port: 0, token: cfg.token },
      media: { samples: false },
      speakers: { virtual: { count: 3 } },
      cloud: { url: cfg.cloud, username: cfg.username, passwordFile: cfg.passwordFile },
      log: { level: 'warn' },
    },
    { logger: createLogger({ level: 'warn' }), extensions: [link] },
  );
  await hub.start();
  if (link.state !== 'online') await new Promise((resolve) => link.onState((s) => s === 'online' && resolve()));
  report({ type: 'ready', url: hub.url });
})().catch((e) => {
  report({ type: 'error', error: e.stack || String(e) });
  stop(1);
});

'use strict';
/**
 * Bench child: SpeakerHub Cloud in its own process (embedded database in a temp folder).
 *   node bench/cloud-server.js '{"dataDir":"/tmp/x","links":1000}'
 * Reports {type:'ready', url, client, username, password, linkTokens} once listening: a user
 * and a confidential client for the relay bench, and `links` hub link tokens (one user each)
 * for the memory bench. Commands: {cmd:'count'} → {type:'count', links}, rss, stop.
 */
const { rmSync } = require('node:fs');
const { join } = require('node:path');
const { report, serveParent } = require('./child-ipc');

const cfg = JSON.parse(process.argv[2] || '{}');
const { CloudServer } = require(join(__dirname, '..', 'dist', 'cloud', 'server.js'));
const { createLogger } = require(join(__dirname, '..', 'dist', 'logger.js'));

let cloud;
let stopping = false;
async function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  try {
    if (cloud) await cloud.stop();
  } catch {
    code = code || 1;
  }
  rmSync(cfg.dataDir, { recursive: true, force: true });
  process.exit(code);
}

serveParent(stop, {
  count: () => report({ type: 'count', links: cloud.context.registry.count }),
});

(async () => {
  cloud = new CloudServer({
    host: '127.0.0.1',
    port: 0,
    dataDir: cfg.dataDir,
    logger: createLogger({ level: 'warn' }),
    rateLimits: {
      token: { burst: 1e6, perSecond: 1e6 },
      signinByAddress: { burst: 1e6, perSecond: 1e6 },
      signinByUser: { burst: 1e6, perSecond: 1e6 },
    },
  });
  const url = await cloud.start();
  const ctx = cloud.context;
  const password = 'bench password 0123';
  await ctx.accounts.signup({ username: 'bench', email: 'bench@example.org', password });
  const client = await ctx.clients.register({ name: 'bench', redirectUris: ['https://bench.example.org/cb'] });
  const linkTokens = [];
  for (let i = 0; i < (cfg.links || 0); i++) linkTokens.push(await ctx.linkTokens.create(`bench-hub-user-${i}`));
  report({ type: 'ready', url, client, username: 'bench', password, linkTokens });
})().catch((e) => {
  report({ type: 'error', error: e.stack || String(e) });
  stop(1);
});

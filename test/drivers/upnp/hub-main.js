'use strict';
/**
 * A real hub with the UPnP driver, for the UPnP tests: started inside the hub's network
 * namespace (`ip netns exec <ns> node test/drivers/upnp/hub-main.js '<json>'`) from the compiled
 * dist/. It reports on stdout, one JSON object a line:
 *   {"evt":"ready","url":…,"token":…,"mediaBase":…}   once the REST server listens
 *   {"evt":"media","method":"GET","from":"10.…","t":<ms>,"range":…}   every media request
 * Logs (pino JSON) go to the file named in the argument. SIGTERM stops the hub cleanly.
 *
 * Argument: {"config": <hub config>, "logFile": <path>}; the hub runs the upnp driver only
 * unless the config names drivers itself.
 */
const { createWriteStream } = require('node:fs');
const { createHub, parseConfig } = require('../../../dist');
const { createLogger } = require('../../../dist/logger');

const emit = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

async function main() {
  const arg = JSON.parse(process.argv[2]);
  const input = { drivers: ['upnp'], ...arg.config };
  const config = parseConfig(input);
  const stream = createWriteStream(arg.logFile, { flags: 'a' });
  const logger = createLogger({ level: config.log.level, stream });
  const hub = createHub(input, { logger });
  await hub.start();
  // The media server's own socket: every request a renderer makes, with who made it and when.
  const mediaSocket = hub.mediaServer['server'];
  if (!mediaSocket || typeof mediaSocket.on !== 'function') {
    throw new Error('MediaServer no longer keeps its http.Server in the field "server": update hub-main.js to count media requests');
  }
  mediaSocket.on('request', (req) => {
    emit({ evt: 'media', method: req.method, from: req.socket.remoteAddress, t: Date.now(), range: req.headers.range });
  });
  emit({ evt: 'ready', url: hub.url, token: hub.token, mediaBase: hub.mediaServer.baseUrl });
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await hub.stop().catch(() => undefined);
    stream.end(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((e) => {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
});

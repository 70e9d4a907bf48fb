'use strict';
/**
 * A real hub for the DLNA tests, started inside a network namespace from the compiled dist/:
 * `ip netns exec <ns> node test/dlna/hub-main.js '<json>'`. With `dlna` the DLNA extension runs
 * (as `speakerhub hub --dlna` runs it). Reports on stdout, one JSON object a line:
 *   {"evt":"ready","url":…,"renderers":[{udn,name,kind,location}],"mediaServer":{udn,name,location},"rss":…}   once started
 *   {"evt":"media","method":"GET","from":"10.…","path":…,"t":<ms>}   every request to the hub's media server
 *   {"evt":"renderers","renderers":[…]}   answering the line "renderers" on stdin
 *   {"evt":"rss","rss":…}   answering "rss" (after a GC when node runs with --expose-gc)
 *   {"evt":"speakers","speakers":[{name,state,position,fetches:[{url,live,duration}]}]}   answering
 *     "speakers": the virtual speakers, what each plays where, and what it fetched
 * Logs (pino JSON) go to the file named in the argument. SIGTERM stops the hub cleanly.
 *
 * Argument: {"config": <hub config>, "logFile": <path>, "dlna": true|false}
 */
const { createWriteStream } = require('node:fs');
const { createInterface } = require('node:readline');
const { createHub, parseConfig } = require('../../dist');
const { createLogger } = require('../../dist/logger');
const { DlnaExtension } = require('../../dist/dlna/extension');

const emit = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

async function main() {
  const arg = JSON.parse(process.argv[2]);
  const config = parseConfig(arg.config);
  const stream = createWriteStream(arg.logFile, { flags: 'a' });
  const logger = createLogger({ level: config.log.level, stream });
  const dlna = new DlnaExtension();
  const hub = createHub(arg.config, { logger, extensions: arg.dlna === false ? [] : [dlna] });
  await hub.start();
  const mediaSocket = hub.mediaServer['server'];
  if (mediaSocket && typeof mediaSocket.on === 'function') {
    mediaSocket.on('request', (req) => emit({ evt: 'media', method: req.method, from: req.socket.remoteAddress, path: req.url, t: Date.now() }));
  }
  const rss = () => {
    if (global.gc) global.gc();
    return process.memoryUsage().rss;
  };
  emit({ evt: 'ready', url: hub.url, renderers: dlna.renderers(), mediaServer: dlna.mediaServer, status: dlna.status, rss: rss() });
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line.trim() === 'renderers') emit({ evt: 'renderers', renderers: dlna.renderers() });
    if (line.trim() === 'rss') emit({ evt: 'rss', rss: rss() });
    if (line.trim() === 'speakers') {
      const list = hub.driver('virtual')?.speakers() ?? [];
      emit({
        evt: 'speakers',
        speakers: list.map((s) => ({
          name: s.info().name,
          state: s.state,
          position: s.position(),
          fetches: s.fetches.map((f) => ({ url: f.url, live: f.live, duration: f.duration })),
        })),
      });
    }
  });
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

'use strict';
/**
 * A real hub for the ESPHome mDNS test, started inside a network namespace from the compiled
 * dist/: `ip netns exec <ns> node test/esphome/hub-main.js '<json>'`. The config turns the
 * esphome front end on (as `speakerhub hub --esphome --interface lan0`). Prints one JSON line
 * {"evt":"ready","url":…,"status":…} once started, and {"evt":"rss","rss":…} answering the line
 * "rss" on stdin (after a GC under --expose-gc: bench/esphome.js); SIGTERM stops the hub (the
 * mDNS goodbye goes out).
 * Argument: {"config": <hub config>, "logFile": <path>}
 */
const { createWriteStream } = require('node:fs');
const { createInterface } = require('node:readline');
const { createHub, parseConfig } = require('../../dist');
const { createLogger } = require('../../dist/logger');

async function main() {
  const arg = JSON.parse(process.argv[2]);
  const config = parseConfig(arg.config);
  const stream = createWriteStream(arg.logFile, { flags: 'a' });
  const hub = createHub(arg.config, { logger: createLogger({ level: config.log.level, stream }) });
  await hub.start();
  const ext = hub.extension('esphome');
  process.stdout.write(`${JSON.stringify({ evt: 'ready', url: hub.url, status: ext.status })}\n`);
  if (process.stdin.readable) {
    createInterface({ input: process.stdin }).on('line', (line) => {
      if (line.trim() !== 'rss') return;
      if (global.gc) global.gc();
      process.stdout.write(`${JSON.stringify({ evt: 'rss', rss: process.memoryUsage().rss, connections: ext.connections })}\n`);
    });
  }
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await hub.stop().catch(() => undefined);
    process.stdout.write(`${JSON.stringify({ evt: 'stopped' })}\n`);
    stream.end(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((e) => {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
});

'use strict';
/**
 * A hub with virtual speakers in a child process (from the compiled dist/), so the test can
 * read this process's RSS alone. Run with --expose-gc. Reports on stdout, one JSON a line:
 *   {"evt":"ready","url":…}            once the REST server listens
 * and answers one command a line on stdin:
 *   rss      -> {"evt":"rss","rss":<bytes after a full GC>}
 *   fetches  -> {"evt":"fetches","fetches":[{bytes,duration,live}…]} (each speaker's last download)
 * Argument: {"dataDir":…,"token":…}.
 */
const { createInterface } = require('node:readline');
const { createHub } = require('../../../dist');

const emit = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

async function main() {
  const arg = JSON.parse(process.argv[2]);
  const hub = createHub({
    dataDir: arg.dataDir,
    media: { samples: false },
    speakers: { virtual: { count: 3 } },
    server: { host: '127.0.0.1', port: 0, token: arg.token },
    log: { level: 'silent' },
  });
  await hub.start();
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line === 'rss') {
      global.gc();
      emit({ evt: 'rss', rss: process.memoryUsage().rss });
    } else if (line === 'fetches') {
      emit({
        evt: 'fetches',
        fetches: hub
          .driver('virtual')
          .speakers()
          .map((s) => s.fetches.at(-1) ?? null),
      });
    }
  });
  process.stdin.on('end', () => void hub.stop().then(() => process.exit(0)));
  emit({ evt: 'ready', url: hub.url });
}

main().catch((e) => {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
});

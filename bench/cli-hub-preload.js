'use strict';
/**
 * Preloaded (node -r) into `node dist/cli.js hub …` forked by bench/run.js, so the hub is
 * measured exactly as `speakerhub hub` runs (the CLI's own modules, flags and front ends):
 * reports 'ready' once the start banner is out and serves the parent's 'rss' and 'stop'.
 */
const { report } = require('./child-ipc');

const write = process.stdout.write.bind(process.stdout);
let ready = false;
process.stdout.write = (chunk, ...rest) => {
  const text = String(chunk);
  if (!ready && text.includes(' is running.')) {
    ready = true;
    const url = /REST API:\s+(http:\/\/\S+?)\/api\/v1\//.exec(text)?.[1];
    setImmediate(() => report({ type: 'ready', pid: process.pid, url }));
  }
  return write(chunk, ...rest);
};

process.on('message', async (m) => {
  if (!m || typeof m !== 'object') return;
  if (m.cmd === 'stop') return process.kill(process.pid, 'SIGTERM');
  if (m.cmd === 'rss') {
    global.gc();
    await new Promise((r) => setImmediate(r));
    global.gc();
    const mu = process.memoryUsage();
    report({ type: 'rss', rss: mu.rss, heapTotal: mu.heapTotal, heapUsed: mu.heapUsed, external: mu.external, arrayBuffers: mu.arrayBuffers });
  }
});
process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));

'use strict';
/**
 * What every bench server child shares: reporting to the parent (IPC, or stdout when run by
 * hand), the 'stop' and 'rss' commands (rss needs node --expose-gc), and stopping when the
 * parent goes away or a signal arrives, so no orphan keeps a port.
 */

function report(msg) {
  if (process.send) process.send(msg);
  else process.stdout.write(`${JSON.stringify(msg)}\n`);
}

async function reportRss() {
  if (typeof global.gc !== 'function') return report({ type: 'error', error: 'rss needs node --expose-gc' });
  global.gc();
  await new Promise((r) => setImmediate(r));
  global.gc();
  const mu = process.memoryUsage();
  report({ type: 'rss', rss: mu.rss, heapTotal: mu.heapTotal, heapUsed: mu.heapUsed, external: mu.external, arrayBuffers: mu.arrayBuffers });
}

/** Serves the parent's commands: stop, rss, and the child's own (name → handler(message)). */
function serveParent(stop, commands = {}) {
  process.on('message', async (m) => {
    if (!m || typeof m !== 'object') return;
    if (m.cmd === 'stop') return stop(0);
    if (m.cmd === 'rss') return reportRss();
    if (commands[m.cmd]) return commands[m.cmd](m);
  });
  process.on('disconnect', () => stop(0));
  process.on('SIGTERM', () => stop(0));
  process.on('SIGINT', () => stop(0));
}

module.exports = { report, serveParent };

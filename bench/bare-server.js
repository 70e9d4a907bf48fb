'use strict';
/**
 * Bench baseline: a bare node:http server on 127.0.0.1 answering fixed JSON bodies with the
 * hub's headers (Content-Type application/json; charset=utf-8 and the CORS header), found by
 * path, query ignored, no auth. Like a minimal hand-written handler, it JSON.stringify()s
 * the body object on every request (the hub serializes on every request too).
 *
 * Forked with IPC: reports {type:'ready', url}; {cmd:'routes', routes:{path:{headers, json}}}
 * replaces the routes (answered {type:'routes-set'}); {cmd:'rss'} (needs --expose-gc) and
 * {cmd:'stop'} as in hub-server.js. Run by hand it prints the ready JSON on stdout and takes
 * routes from a JSON file named as argv[2].
 */
const http = require('node:http');
const { readFileSync } = require('node:fs');
const { report, serveParent } = require('./child-ipc');

let routes = new Map();

function setRoutes(obj) {
  const next = new Map();
  for (const [path, r] of Object.entries(obj || {})) {
    next.set(path, { headers: { 'content-type': 'application/json; charset=utf-8', ...(r.headers || {}) }, json: r.json });
  }
  routes = next;
}
if (process.argv[2]) setRoutes(JSON.parse(readFileSync(process.argv[2], 'utf8')));

const NOT_FOUND = { headers: { 'content-type': 'application/json; charset=utf-8' }, json: { ErrorCode: 'UnknownOperation' } };

const server = http.createServer((req, res) => {
  const q = req.url.indexOf('?');
  const route = routes.get(q < 0 ? req.url : req.url.slice(0, q));
  const r = route || NOT_FOUND;
  const body = JSON.stringify(r.json);
  res.writeHead(route ? 200 : 404, { ...r.headers, 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
// Same keep-alive window as the hub (fastify's 72 s), so idle load connections are never cut.
server.keepAliveTimeout = 72_000;

let stopping = false;
function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  setTimeout(() => process.exit(code), 3000).unref();
  server.close(() => {
    if (process.send && process.connected) process.send({ type: 'stopped' });
    process.exit(code);
  });
  server.closeAllConnections();
}

serveParent(stop, {
  routes(m) {
    setRoutes(m.routes);
    report({ type: 'routes-set', count: routes.size });
  },
});

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  report({ type: 'ready', pid: process.pid, url: `http://127.0.0.1:${port}` });
});

'use strict';
/**
 * A small "internet radio and music site" for the UPnP tests, run inside its own network
 * namespace: serves the files of a folder (with Range, which renderers use to seek) and an
 * endless MP3 stream at /live/<file> (no Content-Length, like a radio station, looping the
 * file), and /stall/<file>, which sends the first few seconds of a file and then nothing more
 * (a server that hangs mid-stream). Reports every request on stdout as a JSON line {"evt":"get",…}; {"evt":"ready"} first.
 *
 * Usage: node web-server.js <bind address> <port> <folder>
 */
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');

const [host, port, folder] = process.argv.slice(2);
const TYPES = { '.mp3': 'audio/mpeg', '.wav': 'audio/wav' };
const emit = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  emit({ evt: 'get', method: req.method, path: url.pathname, from: req.socket.remoteAddress, t: Date.now(), range: req.headers.range });
  const live = url.pathname.startsWith('/live/');
  const stall = url.pathname.startsWith('/stall/');
  const name = path.basename(url.pathname);
  const file = path.join(folder, name);
  if (!name || !fs.existsSync(file)) {
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('not found\n');
    return;
  }
  const type = TYPES[path.extname(name)] || 'application/octet-stream';
  const data = fs.readFileSync(file);
  if (live) {
    // A station: no length, no end; paced near real time so it does not flood the renderer.
    res.writeHead(200, { 'Content-Type': type, 'icy-name': 'Test Radio' });
    if (req.method === 'HEAD') return res.end();
    let offset = 0;
    const chunk = 8192;
    const timer = setInterval(() => {
      const slice = data.subarray(offset, offset + chunk);
      offset = offset + chunk >= data.length ? 0 : offset + chunk;
      res.write(slice);
    }, 250);
    res.on('close', () => clearInterval(timer));
    return;
  }
  if (stall) {
    // Promises the whole file, delivers ~3 s of 64 kbit/s audio, then hangs until the client gives up.
    res.writeHead(200, { 'Content-Type': type, 'Content-Length': data.length });
    res.write(data.subarray(0, 24000));
    return;
  }
  const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range || '');
  if (m) {
    const start = Number(m[1]);
    const end = m[2] ? Math.min(Number(m[2]), data.length - 1) : data.length - 1;
    if (start >= data.length) {
      res.writeHead(416, { 'Content-Range': `bytes */${data.length}` });
      return res.end();
    }
    res.writeHead(206, {
      'Content-Type': type,
      'Accept-Ranges': 'bytes',
      'Content-Range': `bytes ${start}-${end}/${data.length}`,
      'Content-Length': end - start + 1,
    });
    return res.end(req.method === 'HEAD' ? undefined : data.subarray(start, end + 1));
  }
  res.writeHead(200, { 'Content-Type': type, 'Accept-Ranges': 'bytes', 'Content-Length': data.length });
  res.end(req.method === 'HEAD' ? undefined : data);
});

server.listen(Number(port), host, () => emit({ evt: 'ready', url: `http://${host}:${port}` }));
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});

'use strict';
/**
 * A small keep-alive HTTP/1.1 load client on raw sockets, for the fixed-rate latency runs.
 *
 * Why not autocannon for these: autocannon's rate limit (overallRate/connectionRate) lets each
 * connection fire its whole per-second quota back to back and then wait for the next second,
 * so "1,000 req/s" is a 10-connection burst at full speed followed by idleness; and its latency
 * histogram has 1 ms resolution (0.3 ms and 1.9 ms both read as 1 ms), too coarse for a 2 ms
 * target. This client paces requests evenly (open loop, one every 1000/rate ms on a 1 ms tick)
 * and times each one with performance.now() (microsecond resolution), from the socket write to
 * the last body byte. Responses must carry Content-Length (the hub and the bare server do).
 */
const net = require('node:net');
const { performance } = require('node:perf_hooks');

class RawConn {
  constructor(port) {
    this.socket = net.connect({ host: '127.0.0.1', port });
    this.socket.setNoDelay(true);
    this.cb = null;
    this.dead = null;
    this.reset();
    this.socket.on('data', (d) => this.onData(d));
    this.socket.on('error', (e) => this.fail(e));
    this.socket.on('close', () => this.fail(new Error('connection closed by the server')));
  }

  static open(port) {
    const c = new RawConn(port);
    return new Promise((resolve, reject) => {
      c.socket.once('connect', () => resolve(c));
      c.socket.once('error', reject);
    });
  }

  reset() {
    this.head = null;
    this.status = 0;
    this.need = -1;
    this.chunks = [];
    this.have = 0;
  }

  /** Sends one request (a prebuilt Buffer); cb(err, status, body) when the response is complete. */
  send(buf, cb) {
    if (this.dead) return cb(this.dead);
    this.cb = cb;
    this.reset();
    this.socket.write(buf);
  }

  request(buf) {
    return new Promise((resolve, reject) => this.send(buf, (err, status, body) => (err ? reject(err) : resolve({ status, body }))));
  }

  onData(d) {
    if (!this.cb) return this.fail(new Error('unsolicited data from the server'));
    this.chunks.push(d);
    this.have += d.length;
    if (this.need < 0) {
      const buf = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
      this.chunks = [buf];
      const idx = buf.indexOf('\r\n\r\n');
      if (idx < 0) return;
      const head = buf.toString('latin1', 0, idx);
      this.status = Number(head.slice(9, 12));
      const m = /\r\ncontent-length:[ \t]*(\d+)/i.exec(head);
      if (!m) return this.fail(new Error(`response without Content-Length: ${head.split('\r\n')[0]}`));
      this.bodyStart = idx + 4;
      this.need = this.bodyStart + Number(m[1]);
    }
    if (this.have < this.need) return;
    if (this.have > this.need) return this.fail(new Error('more bytes than Content-Length (pipelining is not used)'));
    const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    const cb = this.cb;
    this.cb = null;
    cb(null, this.status, all.subarray(this.bodyStart));
  }

  fail(e) {
    if (!this.dead) this.dead = e;
    const cb = this.cb;
    this.cb = null;
    if (cb) cb(e);
  }

  close() {
    this.dead = this.dead || new Error('closed');
    this.socket.destroy();
  }
}

function buildRequest(url, path, headers = {}) {
  const u = new URL(url);
  const lines = [`GET ${path} HTTP/1.1`, `Host: ${u.host}`, 'Connection: keep-alive'];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return { port: Number(u.port), buf: Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1') };
}

/** One request on a fresh connection: {status, body}. */
async function getOnce(url, path, headers) {
  const { port, buf } = buildRequest(url, path, headers);
  const c = await RawConn.open(port);
  try {
    return await c.request(buf);
  } finally {
    c.close();
  }
}

/** Closed loop: n requests over `connections` keep-alive connections; returns the bodies' statuses and bodies. */
async function bulk(url, path, headers, n, connections = 10) {
  const { port, buf } = buildRequest(url, path, headers);
  const conns = await Promise.all(Array.from({ length: connections }, () => RawConn.open(port)));
  const out = new Array(n);
  let next = 0;
  const t0 = performance.now();
  try {
    await Promise.all(
      conns.map(async (c) => {
        while (next < n) {
          const i = next++;
          out[i] = await c.request(buf);
        }
      }),
    );
  } finally {
    for (const c of conns) c.close();
  }
  return { responses: out, ms: performance.now() - t0 };
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/**
 * Open-loop fixed-rate run: `rate` requests/s for `durationMs`, evenly spaced, over a pool of
 * keep-alive connections (a request waits only if every connection is busy; `queued` counts those).
 */
async function paced({ url, path, headers, rate, durationMs, connections = 8 }) {
  const { port, buf } = buildRequest(url, path, headers);
  const pool = await Promise.all(Array.from({ length: connections }, () => RawConn.open(port)));
  const idle = [...pool];
  const total = Math.max(1, Math.round((rate * durationMs) / 1000));
  const interval = 1000 / rate;
  const lat = new Float64Array(total);
  let ok = 0;
  let done = 0;
  let non2xx = 0;
  let errors = 0;
  let firstError;
  let waiting = 0;
  let queued = 0;
  let sent = 0;
  let t0 = 0;
  let tEnd = 0;

  try {
    await new Promise((resolve, reject) => {
      const guard = setTimeout(
        () => reject(new Error(`paced run: ${total - done} of ${total} requests unanswered ${durationMs + 10000} ms after the start`)),
        durationMs + 10000,
      );
      const fire = (conn) => {
        const start = performance.now();
        conn.send(buf, (err, status) => {
          const end = performance.now();
          done++;
          if (err) {
            errors++;
            firstError = firstError || err;
          } else {
            if (status < 200 || status >= 300) non2xx++;
            else lat[ok++] = end - start;
            if (waiting > 0) {
              waiting--;
              fire(conn);
            } else idle.push(conn);
          }
          if (done === total) {
            tEnd = end;
            clearTimeout(guard);
            resolve();
          }
        });
      };
      t0 = performance.now();
      const tick = () => {
        const due = Math.min(total, Math.floor((performance.now() - t0) / interval) + 1);
        while (sent < due) {
          sent++;
          const c = idle.pop();
          if (c) fire(c);
          else {
            waiting++;
            queued++;
          }
        }
        if (sent >= total) clearInterval(timer);
      };
      const timer = setInterval(tick, 1);
      tick();
    });
  } finally {
    for (const c of pool) c.close();
  }
  return {
    lat: lat.subarray(0, ok),
    requests: total,
    ok,
    non2xx,
    errors,
    firstError: firstError && firstError.message,
    queued,
    elapsedMs: tEnd - t0,
  };
}

/** Merges paced() runs into one latency summary (percentiles over every sample). */
function summarize(runs) {
  const n = runs.reduce((a, r) => a + r.ok, 0);
  const all = new Float64Array(n);
  let at = 0;
  for (const r of runs) {
    all.set(r.lat, at);
    at += r.lat.length;
  }
  all.sort();
  let sum = 0;
  for (let i = 0; i < n; i++) sum += all[i];
  const requests = runs.reduce((a, r) => a + r.requests, 0);
  const elapsed = runs.reduce((a, r) => a + r.elapsedMs, 0);
  return {
    requests,
    ok: n,
    non2xx: runs.reduce((a, r) => a + r.non2xx, 0),
    errors: runs.reduce((a, r) => a + r.errors, 0),
    firstError: runs.map((r) => r.firstError).find(Boolean),
    queued: runs.reduce((a, r) => a + r.queued, 0),
    achievedRate: (requests / elapsed) * 1000,
    meanMs: n ? sum / n : NaN,
    p50: percentile(all, 50),
    p90: percentile(all, 90),
    p99: percentile(all, 99),
    p999: percentile(all, 99.9),
    maxMs: n ? all[n - 1] : NaN,
  };
}

module.exports = { RawConn, buildRequest, getOnce, bulk, paced, summarize, percentile };

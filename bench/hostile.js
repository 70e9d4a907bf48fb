'use strict';
/**
 * "Hostile clients" (npm run bench:hostile, chained in npm run bench): the hub under the
 * abuse issue 7 found, each figure against a baseline measured in the same run.
 *
 *  1. 50 event streams that never read + a set_volume loop (100 speakers: 100 events a call):
 *     RSS against the idle RSS of the same hub (goal < 2x), device_count p99 meanwhile, and
 *     the hub still answering afterwards.
 *  2. 5,000 header-trickling sockets from 127.0.0.2 (a second loopback address): device_count
 *     p99 for the legitimate client on 127.0.0.1 against its p99 without them (goal < 50 ms).
 *  3. 3,000 requests with a 15 KB path and a wrong token: log bytes written per refused
 *     request (goal < 300).
 *  4. bench/hostile-lan.js: hostile DLNA control points and SlimProto clients on a namespace
 *     LAN (issue 32), REST p99 during each attack against quiet (goal < 2x).
 *
 * The hub runs in a forked child (bench/hub-server.js) on 127.0.0.1; the hostile clients and
 * the load generator run here. Exit code 0 whatever the figures say; 1 if the hub crashed.
 */
const { fork } = require('node:child_process');
const { mkdtempSync, rmSync } = require('node:fs');
const net = require('node:net');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const { RawConn, buildRequest, bulk, getOnce, paced, summarize } = require('./load');
const { processCpuS } = require('./run-children');

const num = (name, dflt) => (process.env[name] ? Number(process.env[name]) : dflt);
const SETTINGS = {
  speakers: 100,
  stalledStreams: 50,
  volumeLoopS: num('BENCH_HOSTILE_LOOP', 15),
  trickleSockets: 5000,
  trickleS: num('BENCH_HOSTILE_TRICKLE', 15),
  rate: 200,
  refused: 3000,
  refusedPathBytes: 15_000,
};
const TOKEN = 'bench-token-0123456789abcdefghij';
const AUTH = { Authorization: `Bearer ${TOKEN}` };

function log(msg) {
  process.stderr.write(`[hostile ${(performance.now() / 1000).toFixed(1).padStart(5)}s] ${msg}\n`);
}

/** The hub child; counts the bytes it logs (pino writes JSON lines to its stdout). */
function startHub() {
  const dataDir = mkdtempSync(join(tmpdir(), 'speakerhub-hostile-'));
  const proc = fork(join(__dirname, 'hub-server.js'), [JSON.stringify({ dataDir, speakers: SETTINGS.speakers, token: TOKEN, logLevel: 'warn' })], {
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const hub = { proc, dataDir, logBytes: 0, exited: false, stderr: '' };
  proc.stdout.on('data', (d) => (hub.logBytes += d.length));
  proc.stderr.on('data', (d) => (hub.stderr = (hub.stderr + d).slice(-4000)));
  proc.on('exit', () => (hub.exited = true));
  hub.next = (type, timeoutMs = 60_000) =>
    new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`hub: no '${type}' in ${timeoutMs} ms\n${hub.stderr}`)), timeoutMs);
      const on = (m) => {
        if (m.type !== type && m.type !== 'error') return;
        proc.off('message', on);
        clearTimeout(t);
        if (m.type === 'error') reject(new Error(m.error));
        else resolve(m);
      };
      proc.on('message', on);
      proc.once('exit', (code, signal) => reject(new Error(`hub exited (${code ?? signal}) while we waited for '${type}'\n${hub.stderr}`)));
    });
  hub.rss = async () => {
    const p = hub.next('rss');
    proc.send({ cmd: 'rss' });
    return (await p).rss;
  };
  hub.stop = async () => {
    if (!hub.exited) {
      proc.send({ cmd: 'stop' });
      await Promise.race([new Promise((r) => proc.once('exit', r)), new Promise((r) => setTimeout(r, 6000))]);
      if (!hub.exited) proc.kill('SIGKILL');
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  return hub;
}

const mb = (b) => `${(b / 1024 / 1024).toFixed(1)} MiB`;
const ms = (x) => `${x.toFixed(2)} ms`;

async function p99(url, session, durationMs) {
  const r = summarize([
    await paced({ url, path: `/api/v1/device_count?SessionToken=${session}`, headers: AUTH, rate: SETTINGS.rate, durationMs, connections: 4 }),
  ]);
  return r;
}

/** Opens n sockets that request the event stream and never read a byte. */
async function stalledStreams(url, n) {
  const { port } = new URL(url);
  const out = [];
  for (let i = 0; i < n; i++) {
    const s = net.connect({ host: '127.0.0.1', port: Number(port) });
    s.on('error', () => undefined);
    s.pause();
    s.write(`GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
    out.push(s);
  }
  return out;
}

/** Keeps up to `target` sockets from 127.0.0.2 sending a request head one header a second. */
function trickle(url, target) {
  const { port } = new URL(url);
  const state = { open: 0, attempts: 0, refused: 0, stopped: false, sockets: new Set() };
  const one = () => {
    if (state.stopped) return;
    state.attempts++;
    const s = net.connect({ host: '127.0.0.1', port: Number(port), localAddress: '127.0.0.2' });
    state.sockets.add(s);
    let established = false;
    let timer;
    s.on('connect', () => {
      established = true;
      state.open++;
      s.write('GET /api/v1/device_count HTTP/1.1\r\nHost: x\r\n');
      timer = setInterval(() => s.writable && s.write(`X-T: ${Date.now()}\r\n`), 1000);
    });
    s.on('error', () => undefined);
    s.on('close', () => {
      clearInterval(timer);
      state.sockets.delete(s);
      if (established) state.open--;
      else state.refused++;
      // A determined attacker reconnects (after a second: holding sockets, not a SYN flood).
      if (!state.stopped) setTimeout(one, 1000);
    });
  };
  let started = 0;
  const ramp = setInterval(() => {
    for (let i = 0; i < 250 && started < target; i++, started++) one();
    if (started >= target) clearInterval(ramp);
  }, 20);
  state.stop = () => {
    state.stopped = true;
    clearInterval(ramp);
    for (const s of state.sockets) s.destroy();
  };
  return state;
}

async function main() {
  const hub = startHub();
  const results = [];
  let crashed = false;
  try {
    const { url, session } = await hub.next('ready');
    log(`hub ready at ${url} (${SETTINGS.speakers} speakers)`);
    await p99(url, session, 2000); // warm-up
    const idleRss = await hub.rss();
    const base = await p99(url, session, 5000);
    log(`idle: RSS ${mb(idleRss)}, device_count p99 ${ms(base.p99)}`);

    // ---- 1. stalled event streams + set_volume loop ----------------------------------------
    const streams = await stalledStreams(url, SETTINGS.stalledStreams);
    let loop = true;
    let calls = 0;
    // Every call a new volume, so every call makes an event per speaker (100 events, ~7 KB a stream).
    const requests = Array.from({ length: 50 }, (_, v) => buildRequest(url, `/api/v1/set_volume?SessionToken=${session}&Volume=${v}`, AUTH).buf);
    const volumeLoop = Promise.all(
      [0, 1].map(async () => {
        const conn = await RawConn.open(Number(new URL(url).port));
        try {
          while (loop && !hub.exited) await conn.request(requests[calls++ % 50]);
        } finally {
          conn.close();
        }
      }),
    ).catch((e) => log(`set_volume loop ended: ${e.message}`)); // a hub that dies must not crash the bench
    const during = await p99(url, session, SETTINGS.volumeLoopS * 1000);
    loop = false;
    await volumeLoop;
    const loadedRss = hub.exited ? NaN : await hub.rss();
    const alive =
      !hub.exited &&
      (await getOnce(url, `/api/v1/device_count?SessionToken=${session}`, AUTH).then(
        (r) => r.status === 200,
        () => false,
      ));
    for (const s of streams) s.destroy();
    log(`stalled streams: ${calls} set_volume calls; RSS ${mb(loadedRss)}; p99 ${ms(during.p99)}; alive ${alive}`);
    results.push(['50 stalled event streams + set_volume loop: RSS / idle RSS', loadedRss / idleRss, '< 2', loadedRss / idleRss < 2 && alive]);
    results.push(['  device_count p99 meanwhile / idle p99', during.p99 / base.p99, `(${ms(during.p99)} vs ${ms(base.p99)})`, true]);
    results.push(['  hub alive afterwards', alive ? 1 : 0, '1', alive]);

    // ---- 2. trickling sockets from another address -----------------------------------------
    // The attacker runs in a process of its own, so its sockets do not slow the measuring client.
    const attacker = fork(__filename, ['--trickle', url, String(SETTINGS.trickleSockets)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const stats = () =>
      new Promise((resolve) => {
        attacker.once('message', resolve);
        attacker.send('stats');
      });
    await new Promise((r) => setTimeout(r, 3000));
    const cpu0 = processCpuS(hub.proc.pid);
    const t0 = performance.now();
    const underAttack = await p99(url, session, SETTINGS.trickleS * 1000);
    const hubCpu = (processCpuS(hub.proc.pid) - cpu0) / ((performance.now() - t0) / 1000);
    const t = await stats();
    const held = t.open;
    attacker.kill();
    log(
      `trickle: ${t.attempts} connection attempts from 127.0.0.2, ${held} open at the attacker's end, ${t.refused} refused; hub CPU ${(hubCpu * 100).toFixed(0)}% of a core; p99 ${ms(underAttack.p99)} (${underAttack.errors} errors)`,
    );
    results.push([
      `${SETTINGS.trickleSockets} trickling sockets from 127.0.0.2: legit p99 (ms)`,
      underAttack.p99,
      '< 50',
      underAttack.p99 < 50 && underAttack.errors === 0,
    ]);
    results.push(['  legit p99 / idle p99', underAttack.p99 / base.p99, `(hub CPU ${(hubCpu * 100).toFixed(0)}% of a core)`, true]);

    // ---- 3. log bytes per refused request -----------------------------------------------------
    await new Promise((r) => setTimeout(r, 500));
    const before = hub.logBytes;
    await bulk(
      url,
      `/api/v1/${'x'.repeat(SETTINGS.refusedPathBytes)}`,
      { Authorization: 'Bearer wrong-token-wrong-token-wrong' },
      SETTINGS.refused,
      10,
    );
    await new Promise((r) => setTimeout(r, 500));
    const perRefusal = (hub.logBytes - before) / SETTINGS.refused;
    log(`refused: ${SETTINGS.refused} requests with ${SETTINGS.refusedPathBytes}-byte paths wrote ${hub.logBytes - before} log bytes`);
    results.push(['log bytes per refused request (15 KB path)', perRefusal, '< 300', perRefusal < 300]);
  } catch (e) {
    crashed = true;
    log(`FAILED: ${e && e.stack ? e.stack : e}`);
  } finally {
    crashed = crashed || hub.exited;
    await hub.stop();
  }

  console.log('\nHostile clients');
  for (const [what, value, goal, ok] of results) {
    console.log(
      `  ${what.padEnd(62)} ${Number.isFinite(value) ? value.toFixed(2).padStart(9) : String(value).padStart(9)}  ${goal.padEnd(12)} ${ok ? 'ok' : 'MISSED'}`,
    );
  }
  // Issue 32's LAN peers (DLNA control points, SlimProto clients): a namespace LAN of their own.
  const lan = require('node:child_process').spawnSync(process.execPath, [join(__dirname, 'hostile-lan.js')], { stdio: 'inherit' });
  process.exit(crashed || lan.status !== 0 ? 1 : 0);
}

if (process.argv[2] === '--trickle') {
  const t = trickle(process.argv[3], Number(process.argv[4]));
  process.on('message', () => process.send({ open: t.open, attempts: t.attempts, refused: t.refused }));
  process.on('disconnect', () => process.exit(0));
  process.on('SIGTERM', () => process.exit(0));
} else {
  main();
}

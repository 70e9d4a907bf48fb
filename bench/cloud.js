'use strict';
/**
 * Cloud relay benchmark (part of npm run bench). Baselines are measured in the same run:
 *
 *  1. device_count latency at a fixed rate through the cloud (client → cloud → WebSocket
 *     link → hub → back) vs the same request on the hub's local REST server;
 *     goal: p50 overhead < 1 ms.
 *  2. throughput of device_count (autocannon, fixed connections) through the cloud vs local;
 *     goal: ratio >= 0.5.
 *  3. the cloud's RSS with 1,000 connected hubs (simulated links over loopback: WebSocket
 *     clients authenticated with their own link tokens) vs the same cloud with none.
 *
 * Cloud and hub run in forked children (bench/cloud-server.js, bench/linked-hub-server.js);
 * the load generator and the simulated hubs run here. Local and cloud are measured in
 * interleaved slices (local, cloud, cloud, local, …) so both see the same background load.
 * Exit code 0 whatever the figures say; 1 if something crashed or requests failed.
 */
const { fork } = require('node:child_process');
const { mkdtempSync, writeFileSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const autocannon = require('autocannon');
const WebSocket = require('ws');
const { paced, summarize } = require('./load');

const num = (name, dflt) => (process.env[name] ? Number(process.env[name]) : dflt);
const S = {
  rate: num('BENCH_CLOUD_RATE', 500),
  sliceMs: num('BENCH_CLOUD_SLICE_MS', 3000),
  slices: num('BENCH_SLICES', 3),
  connections: num('BENCH_CONNECTIONS', 10),
  durationS: num('BENCH_CLOUD_DURATION', 3),
  hubs: num('BENCH_CLOUD_HUBS', 1000),
};
const TOKEN = 'bench-token-0123456789abcdefghij';

function start(script, cfg) {
  const child = fork(join(__dirname, script), [JSON.stringify(cfg)], { execArgv: ['--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiters = new Map();
  child.on('message', (m) => {
    const w = waiters.get(m.type) || waiters.get('*');
    if (m.type === 'error') {
      console.error(`${script}: ${m.error}`);
      process.exitCode = 1;
    }
    if (w) {
      waiters.delete(m.type);
      w(m);
    }
  });
  const ask = (cmd, type) =>
    new Promise((resolve) => {
      waiters.set(type, resolve);
      if (cmd) child.send({ cmd });
    });
  return {
    child,
    ask,
    ready: ask(null, 'ready'),
    stop: () =>
      new Promise((r) => {
        child.once('exit', r);
        child.send({ cmd: 'stop' });
      }),
  };
}

async function getJson(url, headers = {}) {
  const res = await fetch(url, { headers });
  return res.json();
}

const mb = (b) => (b / 1048576).toFixed(1);

async function main() {
  const cloudDir = mkdtempSync(join(tmpdir(), 'bench-cloud-'));
  const hubDir = mkdtempSync(join(tmpdir(), 'bench-linked-hub-'));
  const cloud = start('cloud-server.js', { dataDir: cloudDir, links: S.hubs });
  const c = await cloud.ready;
  const pwFile = join(hubDir, 'pw');
  writeFileSync(pwFile, c.password);
  const hub = start('linked-hub-server.js', {
    dataDir: join(hubDir, 'data'),
    cloud: c.url,
    username: c.username,
    passwordFile: pwFile,
    token: TOKEN,
  });
  const h = await hub.ready;
  const basic = `Basic ${Buffer.from(`${c.client.client_id}:${c.client.client_secret}`).toString('base64')}`;
  const tok = await (
    await fetch(`${c.url}/oauth/token`, {
      method: 'POST',
      headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=password&username=${c.username}&password=${encodeURIComponent(c.password)}`,
    })
  ).json();
  const cloudAuth = { Authorization: `Bearer ${tok.access_token}` };
  const localAuth = { Authorization: `Bearer ${TOKEN}` };
  const session = (await getJson(`${c.url}/api/v1/init_session`, cloudAuth)).SessionToken;
  const path = `/api/v1/device_count?SessionToken=${session}`;
  const check = await getJson(c.url + path, cloudAuth);
  if (check.DeviceCount !== '3') throw new Error(`unexpected answer through the cloud: ${JSON.stringify(check)}`);

  const targets = { local: { url: h.url, headers: localAuth }, cloud: { url: c.url, headers: cloudAuth } };
  console.log(`\nCloud relay bench: device_count, local hub vs through the cloud (${S.slices} interleaved slice pairs)`);

  // 1. Latency at a fixed rate.
  const lat = { local: [], cloud: [] };
  for (let i = 0; i < S.slices; i++) {
    for (const name of i % 2 ? ['cloud', 'local'] : ['local', 'cloud']) {
      lat[name].push(
        await paced({ url: targets[name].url, path, headers: targets[name].headers, rate: S.rate, durationMs: S.sliceMs, connections: 8 }),
      );
    }
  }
  const L = summarize(lat.local);
  const C = summarize(lat.cloud);
  const failed = L.non2xx + L.errors + C.non2xx + C.errors;
  console.log(
    `  latency at ${S.rate} req/s   local p50 ${L.p50.toFixed(3)} ms p99 ${L.p99.toFixed(3)} ms   cloud p50 ${C.p50.toFixed(3)} ms p99 ${C.p99.toFixed(3)} ms`,
  );
  console.log(`  p50 overhead of the cloud: ${(C.p50 - L.p50).toFixed(3)} ms   (goal < 1 ms)`);

  // 2. Throughput, interleaved.
  const tp = { local: [], cloud: [] };
  for (let i = 0; i < S.slices; i++) {
    for (const name of i % 2 ? ['cloud', 'local'] : ['local', 'cloud']) {
      const r = await autocannon({
        url: targets[name].url + path,
        headers: targets[name].headers,
        connections: S.connections,
        duration: S.durationS,
      });
      if (r.non2xx || r.errors) process.exitCode = 1;
      tp[name].push(r.requests.average);
    }
  }
  const ratios = tp.cloud.map((v, i) => v / tp.local[i]).sort((a, b) => a - b);
  const median = ratios[Math.floor(ratios.length / 2)];
  const avg = (a) => a.reduce((x, y) => x + y, 0) / a.length;
  console.log(
    `  throughput (${S.connections} connections)   local ${avg(tp.local).toFixed(0)} req/s   cloud ${avg(tp.cloud).toFixed(0)} req/s   ratio ${median.toFixed(2)}   (goal >= 0.5)`,
  );
  await hub.stop();

  // 3. Memory with many connected hubs.
  const before = await cloud.ask('rss', 'rss');
  const sockets = [];
  for (let i = 0; i < c.linkTokens.length; i++) {
    const ws = new WebSocket(`${c.url.replace('http', 'ws')}/hub/link`, {
      headers: { authorization: `Bearer ${c.linkTokens[i]}` },
      perMessageDeflate: false,
    });
    ws.on('error', (e) => {
      console.error(`simulated hub ${i}: ${e.message}`);
      process.exitCode = 1;
    });
    ws.on('open', () => ws.send(JSON.stringify({ t: 'hello', uuid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, version: 'bench' })));
    sockets.push(ws);
    if (i % 100 === 99) await new Promise((r) => setTimeout(r, 20));
  }
  for (;;) {
    const { links } = await cloud.ask('count', 'count');
    if (links >= c.linkTokens.length) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const after = await cloud.ask('rss', 'rss');
  console.log(
    `  cloud RSS: ${mb(before.rss)} MB with no hubs, ${mb(after.rss)} MB with ${c.linkTokens.length} connected hubs   (${((after.rss - before.rss) / 1024 / c.linkTokens.length).toFixed(1)} KB per hub; heap ${mb(after.heapUsed)} MB)`,
  );
  for (const ws of sockets) ws.terminate();
  await cloud.stop();
  rmSync(hubDir, { recursive: true, force: true });
  rmSync(cloudDir, { recursive: true, force: true });
  if (failed) {
    console.error(`  ${failed} requests failed`);
    process.exitCode = 1;
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

'use strict';
/**
 * Cloud cluster benchmark (`npm run build && node bench/cloud-cluster.js`): three
 * (BENCH_CLUSTER_INSTANCES) `speakerhub cloud --database postgres://… --redis redis://…` instances on a private
 * PostgreSQL and redis-server (loopback, temp folders), one linked hub with 3 virtual speakers.
 *
 *  1. device_count latency at a fixed rate through the instance holding the hub's link vs
 *     through the other one (relayed over Redis pub/sub); goal: p50 overhead < 1 ms.
 *  2. throughput (autocannon, fixed connections): all on the holding instance vs the same
 *     connections split over all instances. On this 2-core machine the instances, Redis,
 *     PostgreSQL, the hub and the load generator share the cores: the figure says what a
 *     second instance costs or gains here, not on separate machines.
 *  3. BENCH_CLUSTER_LINKS (default 10,000) simulated hub links spread over the instances:
 *     RSS per link; then one instance is SIGKILLed and the time until all its links have
 *     relinked to the survivors (with the hub's backoff and jitter) is measured, goal < 30 s,
 *     with the survivors' CPU during the storm and their /healthz latency (not overloaded).
 *
 * Slices are interleaved (same, other, other, same, …) so both see the same background load.
 * Exit code 0 whatever the figures say; 1 if something crashed or requests failed.
 */
const { execFileSync, fork, spawn } = require('node:child_process');
const { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } = require('node:fs');
const { createServer } = require('node:net');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const autocannon = require('autocannon');
const { paced, summarize } = require('./load');
const { processCpuS } = require('./run-children');

const num = (name, dflt) => (process.env[name] ? Number(process.env[name]) : dflt);
const S = {
  rate: num('BENCH_CLOUD_RATE', 500),
  sliceMs: num('BENCH_CLOUD_SLICE_MS', 3000),
  slices: num('BENCH_SLICES', 3),
  connections: num('BENCH_CONNECTIONS', 10),
  durationS: num('BENCH_CLOUD_DURATION', 3),
  links: num('BENCH_CLUSTER_LINKS', 10000),
  instances: Math.max(2, num('BENCH_CLUSTER_INSTANCES', 3)),
};
const CLI = join(__dirname, '..', 'dist', 'cli.js');
const TOKEN = 'bench-token-0123456789abcdefghij';
const PASSWORD = 'correct horse battery';
const children = [];
const cleanups = [];

function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

function waitOutput(child, text, what) {
  return new Promise((resolve, reject) => {
    let seen = '';
    const on = (d) => {
      seen += d;
      if (seen.includes(text)) resolve();
    };
    child.stdout.on('data', on);
    child.stderr.on('data', on);
    child.once('exit', (code) => reject(new Error(`${what} exited (${code}): ${seen.slice(-1000)}`)));
  });
}

/** A private PostgreSQL (initdb + pg_ctl, as the cloud tests start one). */
function startPostgres() {
  const root = '/usr/lib/postgresql';
  const version = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a))[0];
  if (!version) throw new Error('PostgreSQL is not installed (scripts/install-test-deps.sh)');
  const bin = join(root, version, 'bin');
  const dir = mkdtempSync(join(tmpdir(), 'bench-pg-'));
  const asRoot = process.getuid && process.getuid() === 0;
  if (asRoot) chownSync(dir, Number(execFileSync('id', ['-u', 'postgres'])), Number(execFileSync('id', ['-g', 'postgres'])));
  const as = (cmd, args) =>
    asRoot ? execFileSync('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args]) : execFileSync(join(bin, cmd), args);
  as('initdb', ['-D', join(dir, 'data'), '-U', 'hub', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '-N']);
  return { dir, as, bin };
}

async function main() {
  const pg = startPostgres();
  const pgPort = await freePort();
  pg.as('pg_ctl', [
    '-D',
    join(pg.dir, 'data'),
    '-l',
    join(pg.dir, 'pg.log'),
    '-w',
    '-o',
    `-p ${pgPort} -c listen_addresses=127.0.0.1 -k ${pg.dir} -c fsync=off`,
    'start',
  ]);
  cleanups.push(() => {
    try {
      pg.as('pg_ctl', ['-D', join(pg.dir, 'data'), '-m', 'immediate', '-w', 'stop']);
    } catch {
      /* already stopped */
    }
    rmSync(pg.dir, { recursive: true, force: true });
  });
  const database = `postgres://hub@127.0.0.1:${pgPort}/postgres`;

  const redisPort = await freePort();
  const redisDir = mkdtempSync(join(tmpdir(), 'bench-redis-'));
  cleanups.push(() => rmSync(redisDir, { recursive: true, force: true }));
  const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', redisDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(redis);
  await waitOutput(redis, 'Ready to accept connections', 'redis-server');

  const instances = [];
  for (let i = 0; i < S.instances; i++) {
    const port = await freePort();
    const data = mkdtempSync(join(tmpdir(), 'bench-cluster-'));
    cleanups.push(() => rmSync(data, { recursive: true, force: true }));
    const args = [CLI, 'cloud', '--port', String(port), '--host', '127.0.0.1', '--data', data, '--database', database];
    // --relay-limit 0: the bench is one user at full speed, which the default per-user limit would cut.
    args.push('--redis', `redis://127.0.0.1:${redisPort}`, '--relay-limit', '0', '--log-level', 'warn', '--log-format', 'json');
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    await waitOutput(child, 'SpeakerHub Cloud is running.', `cloud instance ${i}`);
    instances.push({ url: `http://127.0.0.1:${port}`, child });
  }
  const [A, B] = instances;

  const signup = await fetch(`${A.url}/api/account/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'bench', email: 'bench@example.org', password: PASSWORD }),
  });
  if (signup.status !== 201) throw new Error(`signup: ${signup.status}`);
  const added = JSON.parse(
    execFileSync(process.execPath, [
      CLI,
      'cloud',
      'client',
      'add',
      '--data',
      join(redisDir, 'cli'),
      '--database',
      database,
      '--name',
      'Bench',
      '--redirect-uri',
      'https://app.example.org/cb',
      '--json',
    ]),
  );
  const hubDir = mkdtempSync(join(tmpdir(), 'bench-cluster-hub-'));
  cleanups.push(() => rmSync(hubDir, { recursive: true, force: true }));
  writeFileSync(join(hubDir, 'pw'), PASSWORD);
  // The hub links to A: A holds the link, B relays to it through Redis.
  const hub = fork(join(__dirname, 'linked-hub-server.js'), [
    JSON.stringify({ dataDir: join(hubDir, 'data'), cloud: A.url, username: 'bench', passwordFile: join(hubDir, 'pw'), token: TOKEN }),
  ]);
  children.push(hub);
  await new Promise((resolve, reject) =>
    hub.on('message', (m) => (m.type === 'ready' ? resolve() : m.type === 'error' ? reject(new Error(m.error)) : undefined)),
  );

  const basic = `Basic ${Buffer.from(`${added.client_id}:${added.client_secret}`).toString('base64')}`;
  const tok = await (
    await fetch(`${A.url}/oauth/token`, {
      method: 'POST',
      headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=password&username=bench&password=${encodeURIComponent(PASSWORD)}`,
    })
  ).json();
  const headers = { Authorization: `Bearer ${tok.access_token}` };
  const session = (await (await fetch(`${A.url}/api/v1/init_session`, { headers })).json()).SessionToken;
  const path = `/api/v1/device_count?SessionToken=${session}`;
  for (const i of instances) {
    const check = await (await fetch(i.url + path, { headers })).json();
    if (check.DeviceCount !== '3') throw new Error(`unexpected answer through ${i.url}: ${JSON.stringify(check)}`);
  }

  console.log(`\nCloud cluster bench: device_count through the instance holding the link vs through another (${S.slices} interleaved slice pairs)`);
  const targets = { same: A.url, other: B.url };
  const lat = { same: [], other: [] };
  for (let i = 0; i < S.slices; i++)
    for (const name of i % 2 ? ['other', 'same'] : ['same', 'other'])
      lat[name].push(await paced({ url: targets[name], path, headers, rate: S.rate, durationMs: S.sliceMs, connections: 8 }));
  const L = summarize(lat.same);
  const R = summarize(lat.other);
  if (L.non2xx + L.errors + R.non2xx + R.errors) process.exitCode = 1;
  console.log(
    `  latency at ${S.rate} req/s   same instance p50 ${L.p50.toFixed(3)} ms p99 ${L.p99.toFixed(3)} ms   other instance p50 ${R.p50.toFixed(3)} ms p99 ${R.p99.toFixed(3)} ms`,
  );
  console.log(`  p50 overhead of relaying through another instance: ${(R.p50 - L.p50).toFixed(3)} ms   (goal < 1 ms)`);

  const run = (url, connections) => autocannon({ url: url + path, headers, connections, duration: S.durationS });
  const tp = { one: [], two: [] };
  for (let i = 0; i < S.slices; i++) {
    for (const name of i % 2 ? ['two', 'one'] : ['one', 'two']) {
      const results =
        name === 'one'
          ? [await run(A.url, S.connections)]
          : await Promise.all(
              instances.map((i, k) => run(i.url, Math.floor(S.connections / instances.length) + (k < S.connections % instances.length ? 1 : 0))),
            );
      if (results.some((r) => r.non2xx || r.errors)) process.exitCode = 1;
      tp[name].push(results.reduce((a, r) => a + r.requests.average, 0));
    }
  }
  const avg = (a) => a.reduce((x, y) => x + y, 0) / a.length;
  console.log(
    `  throughput (${S.connections} connections)   1 instance ${avg(tp.one).toFixed(0)} req/s   ${instances.length} instances ${avg(tp.two).toFixed(0)} req/s   ratio ${(avg(tp.two) / avg(tp.one)).toFixed(2)}   (one hub, 2 shared cores)`,
  );
  hub.kill('SIGKILL');
  await relinkStorm(instances, database);
}

const rssMb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
const links = async (url) => (await (await fetch(`${url}/healthz`)).json()).links;

/**
 * Simulated hub links (one user each, link tokens written straight into PostgreSQL), spread
 * evenly over the instances: memory per link; then SIGKILL the first instance and time until
 * all links are held by the survivors, each link retrying with the hub's backoff (jitter in
 * the upper half of min(10 s, 0.5 s·2^attempt)). During the storm the survivors' CPU and the
 * latency of their /healthz say whether the storm overloaded them.
 */
async function relinkStorm(instances, database) {
  const n = S.links;
  const [A, ...survivors] = instances;
  const { Client } = require('pg');
  const { createHash, randomBytes } = require('node:crypto');
  const { backoffDelay } = require(join(__dirname, '..', 'dist', 'util', 'backoff.js'));
  const WebSocket = require('ws');
  const tokens = Array.from({ length: n }, () => randomBytes(32).toString('base64url'));
  const db = new Client({ connectionString: database });
  await db.connect();
  for (let i = 0; i < n; i += 500) {
    const chunk = tokens.slice(i, i + 500);
    const values = chunk.map((_t, j) => `($${3 * j + 1}, $${3 * j + 2}, $${3 * j + 3})`).join(',');
    const params = chunk.flatMap((t, j) => [createHash('sha256').update(t).digest('base64url'), `storm-user-${i + j}`, Date.now()]);
    await db.query(`INSERT INTO link_tokens (token_hash, user_id, created_at) VALUES ${values}`, params);
  }
  await db.end();
  const rssAll = () => instances.map((i) => rssMb(i.child.pid));
  const before = rssAll();
  let dead = false;
  let next = 0;
  const open = (token, first) => {
    let attempt = 0;
    const connect = (url) => {
      const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/hub/link`, { headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false });
      ws.on('open', () => (attempt = 0));
      ws.on('error', () => undefined);
      // As a hub behind a round-robin balancer: once A is gone, the next attempt lands on a survivor.
      ws.on('close', () =>
        setTimeout(() => connect(dead && url === A.url ? survivors[next++ % survivors.length].url : url), backoffDelay(attempt++, 500, 10_000)),
      );
    };
    connect(first);
  };
  tokens.forEach((t, i) => open(t, instances[i % instances.length].url));
  const until = async (cond) => {
    while (!(await cond().catch(() => false))) await new Promise((r) => setTimeout(r, 100));
  };
  const held = async (list) => (await Promise.all(list.map((i) => links(i.url)))).reduce((a, b) => a + b, 0);
  await until(async () => (await held(instances)) === n);
  const after = rssAll();
  const perLink = ((after.reduce((a, b) => a + b, 0) - before.reduce((a, b) => a + b, 0)) * 1024) / n;
  console.log(
    `  ${n} simulated hub links over ${instances.length} instances: ${perLink.toFixed(1)} KB of RSS per link (RSS ${after.map((r) => r.toFixed(0)).join(' + ')} MB)`,
  );
  const cpu0 = survivors.map((i) => processCpuS(i.child.pid));
  const health = [];
  const t0 = Date.now();
  dead = true;
  A.child.kill('SIGKILL');
  await until(async () => {
    const h0 = performance.now();
    const count = await held(survivors);
    health.push(performance.now() - h0);
    return count === n;
  });
  const seconds = (Date.now() - t0) / 1000;
  const cpu = survivors.map((i, k) => (processCpuS(i.child.pid) - cpu0[k]) / seconds);
  health.sort((a, b) => a - b);
  console.log(
    `  SIGKILL of one instance: all ${n} links held by the ${survivors.length} survivors in ${seconds.toFixed(1)} s   (goal < 30 s; ${Math.ceil(n / instances.length)} relinked)`,
  );
  console.log(
    `  survivors during the storm: CPU ${cpu.map((c) => `${(c * 100).toFixed(0)} %`).join(', ')} of a core; /healthz of all survivors p50 ${health[Math.floor(health.length / 2)].toFixed(1)} ms, max ${health[health.length - 1].toFixed(1)} ms`,
  );
}

function cleanup() {
  for (const c of children.reverse()) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const f of cleanups.reverse()) f();
}

main()
  .catch((e) => {
    console.error(e.stack || String(e));
    process.exitCode = 1;
  })
  .finally(() => {
    cleanup();
    setTimeout(() => process.exit(), 200).unref();
  });

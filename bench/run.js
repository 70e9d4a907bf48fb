'use strict';
/**
 * SpeakerHub REST benchmark (npm run bench = build + this). Every figure is measured against a
 * baseline taken in the same run and printed as hub/baseline:
 *
 *  1. throughput of device_count and playback_status (autocannon, fixed connections/duration)
 *     vs a bare node:http server answering the same JSON with the same headers;   ratio >= 0.9
 *  2. device_count latency p50/p99 at a fixed 1,000 req/s vs the bare server;       p99 < 2 ms
 *  3. device_list latency with 1,000 speakers and 10,000 open sessions, fixed rate; p99 < 10 ms
 *  4. idle RSS of a hub with 100 speakers (createHub, idle as 5) vs only node:http;  RSS < 60 MB
 *  5. idle RSS of the default hub as `speakerhub hub` runs it (REST + embedded MQTT broker,
 *     100 virtual speakers) vs the same bare node:http process, both idle BENCH_RSS_IDLE_S s
 *     (12: V8's memory reducer has run; 5a, info: the same 2 s after start);     ratio <= 1.3
 *
 * Servers run in forked children (bench/hub-server.js, bench/bare-server.js) on 127.0.0.1;
 * the load generator runs here, so it never shares an event loop with a server. Exit code 0
 * whatever the figures say; 1 if anything crashed or a run saw errors / non-2xx answers.
 *
 * Hub and baseline are measured interleaved, in short slices (ABBA order: bare, hub, hub, bare,
 * ...), so both see the same background load: on a small shared machine other processes can
 * halve the figures for seconds at a time, and back-to-back 5 s runs then compare different
 * machines. Throughput ratios are the median of the per-pair ratios; latency percentiles are
 * over all samples of all slices. The CPU time other processes used during each step is shown.
 *
 * Environment knobs (defaults in SETTINGS): BENCH_DURATION (s per server, throughput),
 * BENCH_WARMUP_MAX (s at most of throughput warm-up per server; it ends once two 1 s runs agree),
 * BENCH_CONNECTIONS, BENCH_RATE_DURATION (s per server), BENCH_SLICES (pairs per measurement), BENCH_RSS_IDLE_S (row 5's idle time),
 * BENCH_PIN=1 (taskset: load generator on CPU 0, servers on CPU 1),
 * BENCH_CPU_PROF=<dir> (hub and baseline children run with --cpu-prof, profiles written there).
 * BENCH_EXTRA_FLAGS='<v8 flags>' (added after the CLI's flags for the bench's own hub children, to try one).
 * Every hub child runs with the V8 flags the CLI sets for itself (src/cli/heap.ts HEAP_FLAGS, and
 * START_FLAGS until it has started);
 * SPEAKERHUB_V8_DEFAULTS=1 runs them (and the CLI hub) with V8's defaults instead.
 */
const { readFileSync } = require('node:fs');
const os = require('node:os');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const autocannon = require('autocannon');
const { getOnce, bulk, paced, summarize } = require('./load');
const { reportTable } = require('./rest-report');

const num = (name, dflt) => (process.env[name] ? Number(process.env[name]) : dflt);
const SETTINGS = {
  connections: num('BENCH_CONNECTIONS', 10),
  warmupS: 1,
  warmupMaxS: num('BENCH_WARMUP_MAX', 10),
  durationS: num('BENCH_DURATION', 10),
  rate: 1000,
  rateDurationS: num('BENCH_RATE_DURATION', 10),
  slices: num('BENCH_SLICES', 5),
  bigSpeakers: 1000,
  bigSessions: 10_000,
  listRate: 200,
  listDurationS: 5,
  rssSpeakers: 100,
  rssSettleMs: 2000,
  rssLoadRequests: 20_000,
  rssIdleSettleMs: num('BENCH_RSS_IDLE_S', 12) * 1000, // past V8's memory reducer, ~8 s after the last full GC
};
const {
  TOKEN,
  log,
  cpuMeter,
  processCpuS,
  pin,
  startHub,
  stopHub,
  startCliHub,
  startBare,
  killAll,
  assertAlive,
  PIN,
  CPU_PROF,
} = require('./run-children');
const HUB_HEADERS_TO_COPY = ['content-type', 'access-control-allow-origin', 'vary', 'cache-control'];
const AUTH = { Authorization: `Bearer ${TOKEN}` };
// ---- measurements -------------------------------------------------------------------------

const results = [];
const problems = [];

async function hubHeaders(url, path) {
  const res = await fetchHeaders(url + path);
  const out = {};
  for (const k of HUB_HEADERS_TO_COPY) if (res[k] !== undefined) out[k] = res[k];
  return out;
}

function fetchHeaders(full) {
  return new Promise((resolve, reject) => {
    require('node:http')
      .get(full, { headers: AUTH, agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.headers));
      })
      .on('error', reject);
  });
}

function add(row) {
  row.ratio = row.ratioOverride ?? (row.baseline > 0 ? row.hub / row.baseline : NaN);
  if (row.error) row.result = 'ERROR';
  else if (row.check) {
    row.result = row.check(row) ? 'PASS' : 'MISS';
    // An absolute target the bare server misses as well says more about the machine than the hub.
    if (row.absolute && row.result === 'MISS' && !row.check({ hub: row.baseline })) row.result = 'MISS*';
  } else row.result = '';
  results.push(row);
}

function median(xs) {
  const a = [...xs].sort((x, y) => x - y);
  const m = a.length >> 1;
  return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2;
}

/** ABBA order over n pairs: which of the two goes first in pair i. */
const firstOfPair = (i) => (i % 2 === 0 ? 0 : 1);

/** One autocannon run of `seconds` against url+path: requests/s and error counts. */
async function cannonOnce(url, path, seconds) {
  const r = await autocannon({ url: url + path, headers: AUTH, connections: SETTINGS.connections, pipelining: 1, duration: seconds });
  const bad = r.non2xx + r.errors + r.timeouts;
  if (bad) problems.push(`autocannon ${path.split('?')[0]} on ${url}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
  return { rps: r.requests.total / r.duration, total: r.requests.total, seconds: r.duration, p99: r.latency.p99, bad };
}

/**
 * Loads one server in 1 s runs until it is warm: two runs in a row within 5 % of each other
 * (at least 3 runs, at most warmupMaxS). Both a hub and a bare node:http server need several
 * seconds of load before their figures settle (JIT tiers, the load generator's own warm-up):
 * measured here, a 1 s warm-up left slices 10-40 % slow, the server measured first in a pair
 * at a disadvantage. Returns the warm-up rates (req/s), shown in the row's detail.
 */
async function warmUp(server, path) {
  const rates = [];
  while (rates.length < SETTINGS.warmupMaxS) {
    rates.push((await cannonOnce(server.info.url, path, SETTINGS.warmupS)).rps);
    const n = rates.length;
    if (n >= 3 && Math.abs(rates[n - 1] - rates[n - 2]) <= 0.05 * Math.max(rates[n - 1], rates[n - 2])) break;
  }
  return rates;
}

/**
 * Throughput of two servers (children), interleaved: each warmed up (warmUp), then
 * SETTINGS.slices pairs of (durationS / slices)-second autocannon runs in ABBA order. Returns
 * per-server medians, the median of the per-pair ratios (b / a), and each server's CPU time
 * per request.
 */
async function throughputPair(servers, path) {
  const sliceS = SETTINGS.durationS / SETTINGS.slices;
  const warm = [];
  for (const s of servers) warm.push(await warmUp(s, path));
  const runs = [[], []];
  const cpu = [0, 0];
  for (let i = 0; i < SETTINGS.slices; i++) {
    const first = firstOfPair(i);
    for (const k of [first, 1 - first]) {
      const c0 = processCpuS(servers[k].proc.pid);
      runs[k].push(await cannonOnce(servers[k].info.url, path, sliceS));
      cpu[k] += processCpuS(servers[k].proc.pid) - c0;
      assertAlive(servers[k]);
    }
  }
  const ratios = runs[0].map((a, i) => runs[1][i].rps / a.rps);
  const side = (k) => {
    const total = runs[k].reduce((x, r) => x + r.total, 0);
    return {
      rps: median(runs[k].map((r) => r.rps)),
      slices: runs[k].map((r) => r.rps),
      bad: runs[k].reduce((x, r) => x + r.bad, 0),
      cpuUsPerReq: total && cpu[k] ? (cpu[k] * 1e6) / total : NaN,
    };
  };
  return { a: { ...side(0), warm: warm[0] }, b: { ...side(1), warm: warm[1] }, ratio: median(ratios), ratios };
}

/** Fixed-rate latency of two servers, interleaved like throughputPair; percentiles over all samples. */
async function latencyPair(urls, path, rate, totalS) {
  const sliceMs = (totalS * 1000) / SETTINGS.slices;
  for (const u of urls) await paced({ url: u, path, headers: AUTH, rate, durationMs: SETTINGS.warmupS * 1000 });
  const runs = [[], []];
  for (let i = 0; i < SETTINGS.slices; i++) {
    const first = firstOfPair(i);
    for (const k of [first, 1 - first]) runs[k].push(await paced({ url: urls[k], path, headers: AUTH, rate, durationMs: sliceMs }));
  }
  const out = runs.map(summarize);
  out.forEach((r, k) => {
    if (r.non2xx + r.errors)
      problems.push(`paced ${path.split('?')[0]} on ${urls[k]}: ${r.non2xx} non-2xx, ${r.errors} errors (${r.firstError || ''})`);
  });
  return out;
}

const fmtLoad = (l) =>
  l ? `other processes used ${l.otherCores.toFixed(2)} CPU cores meanwhile (bench + servers ${l.ownCores.toFixed(2)})` : 'CPU load unknown';
const slicesText = (xs) => xs.map((x) => Math.round(x)).join('/');

async function throughputAndLatency() {
  log('starting a default hub (3 virtual speakers, auth on) and the bare server');
  const [hub, bare] = await Promise.all([startHub('hub-default', 3), startBare('bare')]);
  try {
    const url = hub.info.url;
    const qs = `?SessionToken=${encodeURIComponent(hub.info.session)}`;
    const ops = ['device_count', 'playback_status'];
    const routes = {};
    for (const op of ops) {
      const r = await getOnce(url, `/api/v1/${op}${qs}`, AUTH);
      if (r.status !== 200) throw new Error(`hub ${op} answered ${r.status}: ${r.body}`);
      routes[`/api/v1/${op}`] = { json: JSON.parse(r.body.toString('utf8')), headers: await hubHeaders(url, `/api/v1/${op}${qs}`) };
    }
    await bare.call({ cmd: 'routes', routes }, 'routes-set');
    const bareUrl = bare.info.url;

    for (const [i, op] of ops.entries()) {
      const path = `/api/v1/${op}${qs}`;
      log(
        `throughput ${op}: ${SETTINGS.connections} connections, each warmed up until steady (1 s runs, at most ${SETTINGS.warmupMaxS}), then ${SETTINGS.slices} interleaved pairs of ${SETTINGS.durationS / SETTINGS.slices} s`,
      );
      const meter = cpuMeter(hub, bare);
      const t = await throughputPair([bare, hub], path);
      const load = meter();
      assertAlive(hub, bare);
      add({
        id: `1${'ab'[i]}`,
        metric: `${op} throughput`,
        unit: 'req/s',
        hub: t.b.rps,
        baseline: t.a.rps,
        ratioOverride: t.ratio,
        target: 'ratio >= 0.90',
        check: (r) => r.ratio >= 0.9,
        error: t.a.bad || t.b.bad ? 'errors' : undefined,
        load,
        detail: `per-slice req/s hub ${slicesText(t.b.slices)}, bare ${slicesText(t.a.slices)}; pair ratios ${t.ratios.map((x) => x.toFixed(2)).join(' ')}; warm-up req/s hub ${slicesText(t.b.warm)}, bare ${slicesText(t.a.warm)}; server CPU per request hub ${t.b.cpuUsPerReq.toFixed(1)} µs, bare ${t.a.cpuUsPerReq.toFixed(1)} µs; ${fmtLoad(load)}`,
        cpuUsPerReq: { hub: t.b.cpuUsPerReq, baseline: t.a.cpuUsPerReq },
      });
    }

    const path = `/api/v1/device_count${qs}`;
    log(`latency device_count at ${SETTINGS.rate} req/s: ${SETTINGS.rateDurationS} s per server in ${SETTINGS.slices} interleaved pairs`);
    const meter = cpuMeter(hub, bare);
    const [b, h] = await latencyPair([bareUrl, url], path, SETTINGS.rate, SETTINGS.rateDurationS);
    const load = meter();
    assertAlive(hub, bare);
    const err = h.non2xx + h.errors + b.non2xx + b.errors ? 'errors' : undefined;
    const detail = (x) =>
      `mean ${x.meanMs.toFixed(3)}, p90 ${x.p90.toFixed(3)}, p99.9 ${x.p999.toFixed(3)}, max ${x.maxMs.toFixed(2)} ms, ${x.achievedRate.toFixed(0)} req/s, ${x.queued} waited for a connection`;
    add({ id: '2', metric: `device_count p50 @${SETTINGS.rate}/s`, unit: 'ms', hub: h.p50, baseline: b.p50, target: '(info)', error: err });
    add({
      id: '2',
      metric: `device_count p99 @${SETTINGS.rate}/s`,
      unit: 'ms',
      hub: h.p99,
      baseline: b.p99,
      target: 'p99 < 2 ms',
      check: (r) => r.hub < 2,
      absolute: true,
      error: err,
      load,
      detail: `hub: ${detail(h)}; bare: ${detail(b)}; ${fmtLoad(load)}`,
    });
  } finally {
    await Promise.all([stopHub(hub), bare.stop()]);
  }
}

async function deviceListLatency() {
  log(`starting a hub with ${SETTINGS.bigSpeakers} virtual speakers`);
  const hub = await startHub('hub-1000', SETTINGS.bigSpeakers);
  let bare;
  try {
    const url = hub.info.url;
    log(`opening ${SETTINGS.bigSessions} sessions with init_session`);
    const opened = await bulk(url, '/api/v1/init_session', AUTH, SETTINGS.bigSessions, 10);
    const tokens = opened.responses.filter((r) => r.status === 200).map((r) => JSON.parse(r.body.toString()).SessionToken);
    if (tokens.length !== SETTINGS.bigSessions) throw new Error(`only ${tokens.length} of ${SETTINGS.bigSessions} init_session calls succeeded`);
    const initRate = (SETTINGS.bigSessions / opened.ms) * 1000;
    const session = tokens[tokens.length >> 1];
    const path = `/api/v1/device_list?SessionToken=${encodeURIComponent(session)}`;
    const first = await getOnce(url, path, AUTH);
    if (first.status !== 200) throw new Error(`device_list answered ${first.status}: ${first.body.toString().slice(0, 300)}`);
    const json = JSON.parse(first.body.toString('utf8'));
    if (!Array.isArray(json.DeviceList) || json.DeviceList.length !== SETTINGS.bigSpeakers)
      throw new Error(`device_list has ${json.DeviceList && json.DeviceList.length} entries`);
    bare = await startBare('bare-list', { '/api/v1/device_list': { json, headers: await hubHeaders(url, path) } });

    log(
      `latency device_list at ${SETTINGS.listRate} req/s (${(first.body.length / 1024).toFixed(0)} KiB body): ${SETTINGS.listDurationS} s per server in ${SETTINGS.slices} interleaved pairs`,
    );
    const meter = cpuMeter(hub, bare);
    const [b, h] = await latencyPair([bare.info.url, url], path, SETTINGS.listRate, SETTINGS.listDurationS);
    const load = meter();
    assertAlive(hub, bare);
    const err = h.non2xx + h.errors + b.non2xx + b.errors ? 'errors' : undefined;
    const detail = (x) => `mean ${x.meanMs.toFixed(2)}, p90 ${x.p90.toFixed(2)}, max ${x.maxMs.toFixed(2)} ms, ${x.ok} samples`;
    add({ id: '3', metric: `device_list p50 @${SETTINGS.listRate}/s`, unit: 'ms', hub: h.p50, baseline: b.p50, target: '(info)', error: err });
    add({
      id: '3',
      metric: `device_list p99 @${SETTINGS.listRate}/s`,
      unit: 'ms',
      hub: h.p99,
      baseline: b.p99,
      target: 'p99 < 10 ms',
      check: (r) => r.hub < 10,
      absolute: true,
      error: err,
      load,
      detail: `${SETTINGS.bigSpeakers} speakers, ${SETTINGS.bigSessions} sessions (opened at ${initRate.toFixed(0)}/s), body ${first.body.length} B; hub: ${detail(h)}; bare: ${detail(b)}; ${fmtLoad(load)}`,
    });
  } finally {
    await Promise.all([stopHub(hub), bare && bare.stop()]);
  }
}

async function idleRss() {
  log(`idle RSS: hub with ${SETTINGS.rssSpeakers} speakers vs bare node:http (--expose-gc, ${SETTINGS.rssSettleMs} ms settle)`);
  const probe = async (start, settleMs = SETTINGS.rssSettleMs) => {
    const c = await start();
    try {
      await new Promise((r) => setTimeout(r, settleMs));
      return await c.call({ cmd: 'rss' }, 'rss', 15_000);
    } finally {
      if (c.dataDir) await stopHub(c);
      else await c.stop();
    }
  };
  // One after the other, so the hub's start-up work cannot disturb the bare process' figure.
  const b = await probe(() => startBare('bare-rss', null, ['--expose-gc']));
  const h = await probe(() => startHub('hub-rss', SETTINGS.rssSpeakers, { session: false, execArgv: ['--expose-gc'] }), SETTINGS.rssIdleSettleMs);
  const hEarly = await probe(() => startHub('hub-rss-early', SETTINGS.rssSpeakers, { session: false, execArgv: ['--expose-gc'] }));
  const mb = (x) => x / 1e6; // decimal MB, as in the target
  const c = await probe(() => startCliHub('cli-hub-rss', SETTINGS.rssSpeakers));
  const loaded = await probe(async () => {
    // The same hub once it has served requests: V8 has optimized the request path by then
    // (src/cli/heap.ts keeps its optimizing compiler off only for the start-up burst).
    const hub = await startCliHub('cli-hub-rss-loaded', SETTINGS.rssSpeakers);
    const auth = { Authorization: `Bearer ${readFileSync(join(hub.dataDir, 'api-token'), 'utf8').trim()}` };
    const session = JSON.parse((await getOnce(hub.info.url, '/api/v1/init_session', auth)).body.toString()).SessionToken;
    const r = await autocannon({
      url: `${hub.info.url}/api/v1/playback_status?SessionToken=${session}`,
      headers: auth,
      connections: SETTINGS.connections,
      amount: SETTINGS.rssLoadRequests,
    });
    if (r.non2xx + r.errors) problems.push(`RSS after load: ${r.non2xx} non-2xx, ${r.errors} errors`);
    return hub;
  });
  // Both again, idle long enough for V8 to compact the heap start-up fragmented (a plain full GC leaves it committed).
  const bIdle = await probe(() => startBare('bare-rss-idle', null, ['--expose-gc']), SETTINGS.rssIdleSettleMs);
  const cIdle = await probe(() => startCliHub('cli-hub-rss-idle', SETTINGS.rssSpeakers), SETTINGS.rssIdleSettleMs);
  add({
    id: '5',
    metric: `idle RSS, default hub (REST + MQTT), ${SETTINGS.rssSpeakers} speakers, both idle ${SETTINGS.rssIdleSettleMs / 1000} s`,
    unit: 'MB',
    hub: mb(cIdle.rss),
    baseline: mb(bIdle.rss),
    target: 'ratio <= 1.3',
    check: (r) => r.ratio <= 1.3,
    detail: `as \`speakerhub hub\` runs it, settled (V8's memory reducer has compacted the start-up heap, ~8 s after the last full GC); heapUsed ${mb(cIdle.heapUsed).toFixed(1)} / heapTotal ${mb(cIdle.heapTotal).toFixed(1)}, external ${mb(cIdle.external).toFixed(1)} MB`,
  });
  add({
    id: '5a',
    metric: `same, ${SETTINGS.rssSettleMs / 1000} s after start`,
    unit: 'MB',
    hub: mb(c.rss),
    baseline: mb(b.rss),
    target: '(info)',
    detail: `start-up garbage still committed (a full GC does not return it); heapUsed ${mb(c.heapUsed).toFixed(1)} / heapTotal ${mb(c.heapTotal).toFixed(1)}, external ${mb(c.external).toFixed(1)} MB`,
  });
  add({
    id: '5b',
    metric: `same, after ${SETTINGS.rssLoadRequests.toLocaleString('en-US')} playback_status requests`,
    unit: 'MB',
    hub: mb(loaded.rss),
    baseline: mb(b.rss),
    target: '(info)',
    detail: `the request path optimized; heapUsed ${mb(loaded.heapUsed).toFixed(1)} / heapTotal ${mb(loaded.heapTotal).toFixed(1)} MB`,
  });
  add({
    id: '4',
    metric: `idle RSS, ${SETTINGS.rssSpeakers} speakers, idle ${SETTINGS.rssIdleSettleMs / 1000} s`,
    unit: 'MB',
    hub: mb(h.rss),
    baseline: mb(bIdle.rss),
    target: 'RSS < 60 MB',
    check: (r) => r.hub < 60,
    absolute: true,
    detail: `createHub in a plain node; ${mb(hEarly.rss).toFixed(1)} MB 2 s after start; hub heapUsed ${mb(h.heapUsed).toFixed(1)} / heapTotal ${mb(h.heapTotal).toFixed(1)}, external ${mb(h.external).toFixed(1)}, arrayBuffers ${mb(h.arrayBuffers).toFixed(1)} MB; bare heapUsed ${mb(b.heapUsed).toFixed(1)}, heapTotal ${mb(b.heapTotal).toFixed(1)} MB`,
  });
}

async function main() {
  const t0 = performance.now();
  let crashed = null;
  pin(process.pid, 0);
  log(
    `node ${process.version}, ${os.cpus().length} CPUs${PIN ? ' (pinned: bench on CPU 0, servers on CPU 1)' : ''}, settings ${JSON.stringify(SETTINGS)}${CPU_PROF ? `, cpu profiles in ${CPU_PROF}` : ''}`,
  );
  // BENCH_ONLY=idleRss (comma-separated step names) runs only those steps.
  const only = process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(',') : null;
  for (const step of [throughputAndLatency, deviceListLatency, idleRss].filter((s) => !only || only.includes(s.name))) {
    try {
      await step();
    } catch (e) {
      crashed = crashed || e;
      problems.push(`${step.name} failed: ${e && e.message ? e.message : e}`);
      log(`${step.name} FAILED: ${e && e.stack ? e.stack : e}`);
      killAll();
    }
  }
  process.stdout.write(reportTable(results));
  if (problems.length) process.stdout.write(`\nProblems:\n${problems.map((p) => `  - ${p}`).join('\n')}\n`);
  const totalS = (performance.now() - t0) / 1000;
  const summary = {
    bench: 'speakerhub-rest',
    node: process.version,
    cpus: os.cpus().length,
    pinned: PIN,
    ok: problems.length === 0,
    durationS: Number(totalS.toFixed(1)),
    settings: SETTINGS,
    results: results.map((r) => ({
      id: r.id,
      metric: r.metric,
      unit: r.unit,
      hub: r.hub,
      baseline: r.baseline,
      ratio: r.ratio,
      target: r.target,
      result: r.result || 'INFO',
      otherCores: r.load ? Number(r.load.otherCores.toFixed(2)) : undefined,
      serverCpuUsPerRequest: r.cpuUsPerReq
        ? { hub: Number(r.cpuUsPerReq.hub.toFixed(1)), baseline: Number(r.cpuUsPerReq.baseline.toFixed(1)) }
        : undefined,
    })),
    problems,
  };
  process.stdout.write(`\n${JSON.stringify(summary)}\n`);
  return problems.length === 0 ? 0 : 1;
}

process.on('SIGINT', () => {
  killAll();
  process.exit(130);
});
process.on('SIGTERM', () => {
  killAll();
  process.exit(143);
});
process.on('exit', killAll);

main()
  .then((code) => {
    killAll();
    process.exitCode = code;
  })
  .catch((e) => {
    console.error(e);
    killAll();
    process.exitCode = 1;
  });

'use strict';
/**
 * Node-RED benchmark (npm run bench:nodered, chained into npm run bench): messages per second
 * through an operation node (speakerhub-device_count, remote config node, Node-RED 4's real
 * runtime embedded in this process, messages delivered by Node-RED and completion seen through
 * its onComplete hook) against calling the same operation
 * through the library client (SpeakerHubClient) directly, in the same run, same process, same
 * number of requests in flight. Goal: node/client >= 0.8.
 *
 * The hub runs in a forked child (bench/hub-server.js) on 127.0.0.1. Both sides are measured
 * interleaved in short slices (ABBA), so background load hits both alike; the ratio is the
 * median of the per-pair ratios. Knobs: BENCH_NR_SLICE_MS (default 2000), BENCH_NR_SLICES
 * (pairs, default 4), BENCH_NR_INFLIGHT (default 8).
 */
const { fork, execFileSync } = require('node:child_process');
const { mkdtempSync, rmSync, mkdirSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const http = require('node:http');

const ROOT = join(__dirname, '..');
const num = (name, dflt) => (process.env[name] ? Number(process.env[name]) : dflt);
const SLICE_MS = num('BENCH_NR_SLICE_MS', 2000);
const SLICES = num('BENCH_NR_SLICES', 4);
const INFLIGHT = num('BENCH_NR_INFLIGHT', 8);
const TOKEN = 'bench-token-0123456789abcdefghij';

execFileSync('bash', [join(ROOT, 'scripts', 'install-nodered.sh')], { stdio: ['ignore', 'ignore', 'inherit'] });
const RED = require(join(ROOT, '.cache', 'nodered4', 'node_modules', 'node-red', 'lib', 'red.js'));
const { SpeakerHubClient } = require(join(ROOT, 'dist', 'index.js'));

function startHub(dataDir) {
  return new Promise((resolve, reject) => {
    const child = fork(join(__dirname, 'hub-server.js'), [JSON.stringify({ dataDir, speakers: 3, token: TOKEN })], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    child.once('error', reject);
    child.on('message', (m) => {
      if (m.type === 'ready') resolve({ child, url: m.url });
      if (m.type === 'error') reject(new Error(m.error));
    });
  });
}

/** Keeps `inflight` calls going for `ms`; resolves with completed calls per second. */
function closedLoop(call, ms, inflight) {
  return new Promise((resolve, reject) => {
    let done = 0;
    let stopping = false;
    let running = 0;
    const start = performance.now();
    const end = start + ms;
    const next = () => {
      if (performance.now() >= end) stopping = true;
      if (stopping) {
        if (running === 0) resolve((done * 1000) / (performance.now() - start));
        return;
      }
      running++;
      call().then(
        () => {
          running--;
          done++;
          next();
        },
        (e) => {
          stopping = true;
          reject(e);
        },
      );
    };
    for (let i = 0; i < inflight; i++) next();
  });
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'speakerhub-bench-nr-'));
  const hub = await startHub(dataDir);
  const userDir = mkdtempSync(join(tmpdir(), 'speakerhub-bench-nr-ud-'));
  // The node files as a nodes directory (each .js beside its .html); the admin API (served at the
  // root of a loopback server)
  // takes the flow (with the token as an inline credential, as the editor sends it).
  const server = http.createServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  RED.init(server, {
    userDir,
    nodesDir: [join(ROOT, 'nodes')],
    httpAdminRoot: '/admin',
    httpNodeRoot: false,
    credentialSecret: 'bench',
    logging: { console: { level: 'error', metrics: false, audit: false } },
    editorTheme: { projects: { enabled: false } },
    telemetry: { enabled: false },
    externalModules: { autoInstall: false, palette: { allowInstall: false } },
  });
  server.on('request', RED.httpAdmin);
  await RED.start();
  try {
    const res = await fetch(`http://127.0.0.1:${server.address().port}/flows`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Node-RED-API-Version': 'v2', 'Node-RED-Deployment-Type': 'full' },
      body: JSON.stringify({
        flows: [
          { id: 't', type: 'tab', label: 'bench' },
          { id: 'cfg', type: 'speakerhub-config', mode: 'remote', url: hub.url, credentials: { token: TOKEN } },
          { id: 'op', type: 'speakerhub-device_count', z: 't', hub: 'cfg', wires: [['sink']] },
          { id: 'sink', type: 'junction', z: 't', wires: [[]] },
        ],
      }),
    });
    if (res.status !== 200) throw new Error(`deploy failed: ${res.status} ${await res.text()}`);
    const op = await new Promise((resolve, reject) => {
      const t0 = Date.now();
      const poll = () => {
        const n = RED.nodes.getNode('op');
        if (n) return resolve(n);
        if (Date.now() - t0 > 10_000) return reject(new Error('the flow did not start'));
        setTimeout(poll, 20);
      };
      poll();
    });
    // Each message carries its own resolver; the node's done() settles it (with the error, if any).
    RED.hooks.add('onComplete.bench', (e) => {
      if (e.node.id !== 'op' || !e.msg._settle) return;
      if (e.error) e.msg._settle.reject(e.error);
      else e.msg._settle.resolve();
    });
    const viaNode = () => new Promise((resolve, reject) => op.receive({ payload: {}, _settle: { resolve, reject } }));
    const client = new SpeakerHubClient({ baseUrl: hub.url, token: TOKEN });
    const viaClient = () => client.call('device_count');

    await closedLoop(viaNode, 500, INFLIGHT); // warm-up: sessions, connections, JIT
    await closedLoop(viaClient, 500, INFLIGHT);
    const node = [];
    const direct = [];
    for (let i = 0; i < SLICES; i++) {
      // ABBA: client, node, node, client
      const c1 = await closedLoop(viaClient, SLICE_MS / 2, INFLIGHT);
      const n1 = await closedLoop(viaNode, SLICE_MS / 2, INFLIGHT);
      const n2 = await closedLoop(viaNode, SLICE_MS / 2, INFLIGHT);
      const c2 = await closedLoop(viaClient, SLICE_MS / 2, INFLIGHT);
      node.push((n1 + n2) / 2);
      direct.push((c1 + c2) / 2);
    }
    const ratios = node.map((n, i) => n / direct[i]).sort((a, b) => a - b);
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const result = {
      bench: 'nodered',
      operation: 'device_count',
      inflight: INFLIGHT,
      nodeMsgsPerS: Math.round(median(node)),
      clientCallsPerS: Math.round(median(direct)),
      ratio: Number(median(ratios).toFixed(3)),
      goal: '>= 0.8',
    };
    await client.close();
    console.log(`Node-RED operation node vs library client (device_count, ${INFLIGHT} in flight, ${SLICES} ABBA pairs):`);
    console.log(
      `  node ${result.nodeMsgsPerS} msg/s, client ${result.clientCallsPerS} calls/s, ratio ${result.ratio} (goal ${result.goal}) ${result.ratio >= 0.8 ? 'OK' : 'BELOW GOAL'}`,
    );
    mkdirSync(join(__dirname, 'results'), { recursive: true });
    writeFileSync(join(__dirname, 'results', 'nodered.json'), `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await RED.stop();
    await new Promise((r) => server.close(r));
    rmSync(userDir, { recursive: true, force: true });
    hub.child.send({ cmd: 'stop' });
    await new Promise((r) => hub.child.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);

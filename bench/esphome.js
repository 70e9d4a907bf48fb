'use strict';
/**
 * ESPHome native API benchmark (part of npm run bench). Figures against a baseline measured in
 * the same run:
 *
 *  1. command → speaker fetch: a MediaPlayerCommandRequest with a media_url (sent by
 *     @2colors/esphome-native-api, as Home Assistant sends play_media) until the virtual speaker
 *     requests that URL from the media server here, p50/p95; vs the same play asked over REST
 *     (play_web_media_selected_speakers) on the same speaker, interleaved one by one.
 *     Goals: ESPHome p95 < 100 ms; ratio ESPHome p95 / REST p95 <= 1.5.
 *  2. memory per connected client: the hub's RSS (after a GC) with BENCH_ESPHOME_CLIENTS raw
 *     clients that said hello, listed the entities and subscribed to states, minus before.
 *
 * The hub runs in a child (test/esphome/hub-main.js, from dist/, --expose-gc) on 127.0.0.1;
 * clients and the media server run here. Exit code 0 whatever the figures say; 1 if anything
 * failed. Knobs: BENCH_ESPHOME_PLAYS (per path, default 60), BENCH_ESPHOME_CLIENTS (default 200).
 */
const { spawn } = require('node:child_process');
const { createServer } = require('node:http');
const { mkdtempSync, rmSync } = require('node:fs');
const { connect } = require('node:net');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const { createInterface } = require('node:readline');
const { Client } = require('@2colors/esphome-native-api');

const num = (name, dflt) => (process.env[name] ? Number(process.env[name]) : dflt);
const PLAYS = num('BENCH_ESPHOME_PLAYS', 60);
const CLIENTS = num('BENCH_ESPHOME_CLIENTS', 200);
const TOKEN = 'bench-esphome-token-0123456789ab';
const REPO = join(__dirname, '..');

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const ms = (x) => `${x.toFixed(1)} ms`;

function startHub(tmp) {
  const config = {
    dataDir: join(tmp, 'data'),
    server: { host: '127.0.0.1', port: 0, token: TOKEN },
    media: { samples: false },
    speakers: { virtual: { count: 4 } },
    // Every bench client connects from 127.0.0.1: the per-address cap is raised with the global one.
    esphome: {
      enabled: true,
      port: 0,
      host: '127.0.0.1',
      maxConnections: Math.max(32, CLIENTS + 8),
      maxConnectionsPerAddress: Math.max(32, CLIENTS + 8),
    },
    log: { level: 'warn' },
  };
  const child = spawn(
    process.execPath,
    ['--expose-gc', join(REPO, 'test/esphome/hub-main.js'), JSON.stringify({ config, logFile: join(tmp, 'hub.log') })],
    {
      cwd: REPO,
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const waiters = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    let m;
    try {
      m = JSON.parse(line);
    } catch {
      return;
    }
    for (const w of [...waiters]) {
      if (!w.match(m)) continue;
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(m);
    }
  });
  const next = (match) => new Promise((resolve) => waiters.push({ match, resolve }));
  return { child, next };
}

/** The media server: resolves a waiter when a path is requested. */
async function mediaServer() {
  const wav = Buffer.alloc(44 + 8000 * 2 * 30);
  wav.write('RIFF', 0, 'latin1');
  wav.writeUInt32LE(wav.length - 8, 4);
  wav.write('WAVEfmt ', 8, 'latin1');
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20);
  wav.writeUInt16LE(1, 22);
  wav.writeUInt32LE(8000, 24);
  wav.writeUInt32LE(16000, 28);
  wav.writeUInt16LE(2, 32);
  wav.writeUInt16LE(16, 34);
  wav.write('data', 36, 'latin1');
  wav.writeUInt32LE(wav.length - 44, 40);
  const waiting = new Map();
  const server = createServer((req, res) => {
    const w = waiting.get(req.url);
    if (w) {
      waiting.delete(req.url);
      w(performance.now());
    }
    res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': wav.length });
    res.end(req.method === 'HEAD' ? undefined : wav);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    base,
    /** Resolves with the arrival time of the first request for path (or rejects after 10 s). */
    arrival: (path) =>
      new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no fetch of ${path}`)), 10_000);
        waiting.set(path, (at) => {
          clearTimeout(t);
          resolve(at);
        });
      }),
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}

const frame = (id, body = Buffer.alloc(0)) => Buffer.concat([Buffer.from([0, body.length, id]), body]);

async function rawSubscriber(port) {
  const s = connect(port, '127.0.0.1');
  s.on('error', () => undefined);
  let got = Buffer.alloc(0);
  const subscribed = new Promise((resolve) => {
    s.on('data', (d) => {
      got = Buffer.concat([got, d]);
      // a MediaPlayerStateResponse (id 64) arrived: the subscription is live.
      if (got.includes(Buffer.from([64]))) resolve();
    });
  });
  await new Promise((r) => s.once('connect', r));
  s.write(Buffer.concat([frame(1, Buffer.from([0x0a, 5, ...Buffer.from('bench')])), frame(9), frame(11), frame(20)]));
  await subscribed;
  got = Buffer.alloc(0);
  return s;
}

async function main() {
  const tmp = mkdtempSync(join(tmpdir(), 'speakerhub-bench-esphome-'));
  const hub = startHub(tmp);
  const web = await mediaServer();
  let client;
  try {
    const ready = await hub.next((m) => m.evt === 'ready');
    const port = ready.status.port;
    const rest = async (op, params = {}) => {
      const q = new URLSearchParams(params).toString();
      const r = await fetch(`${ready.url}/api/v1/${op}?${q}`, { headers: { Authorization: `Bearer ${TOKEN}` } });
      return r.json();
    };
    const session = (await rest('init_session')).SessionToken;
    const devices = (await rest('device_list', { SessionToken: session })).DeviceList;
    const speaker = devices[0];

    client = new Client({ host: '127.0.0.1', port, reconnect: false, clientInfo: 'bench' });
    client.on('error', () => undefined);
    const initialized = new Promise((r) => client.once('initialized', r));
    client.connect();
    await initialized;
    const dev = client.deviceInfo.devicesList.find((d) => d.name === speaker.DeviceName);
    const entity = Object.values(client.entities).find((e) => e.config.deviceId === dev.deviceId);

    const viaEsphome = [];
    const viaRest = [];
    for (let i = 0; i < PLAYS + 5; i++) {
      const pe = `/e-${i}.wav`;
      let arrived = web.arrival(pe);
      let t0 = performance.now();
      entity.setMediaUrl(web.base + pe);
      const de = (await arrived) - t0;
      const pr = `/r-${i}.wav`;
      arrived = web.arrival(pr);
      t0 = performance.now();
      await rest('play_web_media_selected_speakers', { SessionToken: session, MediaUrl: web.base + pr, DeviceIDList: speaker.DeviceID });
      const dr = (await arrived) - t0;
      // The first few warm up both paths (JIT, connections).
      if (i >= 5) {
        viaEsphome.push(de);
        viaRest.push(dr);
      }
    }
    await rest('stop_play', { SessionToken: session, DeviceID: speaker.DeviceID });
    const e95 = pct(viaEsphome, 95);
    const r95 = pct(viaRest, 95);
    const ratio = e95 / r95;
    console.log(`ESPHome bench: command → speaker fetch over ${PLAYS} plays each (interleaved)`);
    console.log(`  ESPHome media_url  p50 ${ms(pct(viaEsphome, 50))}  p95 ${ms(e95)}`);
    console.log(`  REST play_web_…    p50 ${ms(pct(viaRest, 50))}  p95 ${ms(r95)}`);
    console.log(
      `  p95 < 100 ms: ${e95 < 100 ? 'PASS' : 'MISS'}; ratio ESPHome/REST p95 ${ratio.toFixed(2)} (goal <= 1.5): ${ratio <= 1.5 ? 'PASS' : 'MISS'}`,
    );

    client.disconnect();
    client = undefined;
    hub.child.stdin.write('rss\n');
    const before = await hub.next((m) => m.evt === 'rss');
    const socks = [];
    for (let i = 0; i < CLIENTS; i++) socks.push(await rawSubscriber(port));
    hub.child.stdin.write('rss\n');
    const after = await hub.next((m) => m.evt === 'rss');
    const per = (after.rss - before.rss) / CLIENTS;
    console.log(
      `  memory: ${CLIENTS} subscribed clients (${after.connections} open), hub RSS +${((after.rss - before.rss) / 1048576).toFixed(1)} MiB: ${(per / 1024).toFixed(1)} KiB per client`,
    );
    for (const s of socks) s.destroy();
  } finally {
    client?.disconnect();
    hub.child.kill('SIGTERM');
    await new Promise((r) => hub.child.once('exit', r));
    await web.close();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});

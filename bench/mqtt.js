'use strict';
/**
 * MQTT benchmark (part of npm run bench). Figures against a baseline measured in the same run:
 *
 *  1. request → response round trip through the hub's embedded broker: a bridge request
 *     (speakerhub/bridge/request/device_count → …/response/device_count, QoS 1) and the same on the
 *     pub/sub channel, p50/p99 over sequential requests, vs a bare aedes with an echo client
 *     attached the same way (aedes' in-process subscribe/publish) answering a JSON of the same size.
 *     Goals: hub p50 < 1 ms, ratio bare p50 / hub p50 >= 0.8.
 *  2. fan-out of PlaybackTimeChanged (each second while playing) to 1,000 subscribed clients:
 *     per tick, how long from the first to the last of the 1,000 receipts, and whether all got
 *     it; vs a bare aedes publishing a message of the same size to 1,000 clients.
 *
 * Hub and baseline run in forked children (bench/mqtt-server.js) on 127.0.0.1; the clients run
 * here. Round trips are measured interleaved in slices (hub, bare, bare, hub, …) so both see
 * the same background load. Exit code 0 whatever the figures say; 1 if anything failed.
 * Knobs: BENCH_MQTT_REQUESTS (per slice, default 400), BENCH_MQTT_SLICES (default 5),
 * BENCH_MQTT_CLIENTS (default 1000), BENCH_MQTT_TICKS (default 5).
 */
const { fork } = require('node:child_process');
const { mkdtempSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const mqtt = require('mqtt');

const num = (name, dflt) => (process.env[name] ? Number(process.env[name]) : dflt);
const REQUESTS = num('BENCH_MQTT_REQUESTS', 400);
const SLICES = num('BENCH_MQTT_SLICES', 5);
const CLIENTS = num('BENCH_MQTT_CLIENTS', 1000);
const TICKS = num('BENCH_MQTT_TICKS', 5);
const WARMUP = 100;

function child(args) {
  const p = fork(join(__dirname, 'mqtt-server.js'), args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    p.once('message', (m) => (m.type === 'ready' ? resolve({ proc: p, info: m }) : reject(new Error(m.error))));
    p.once('exit', (code) => reject(new Error(`bench child exited with ${code}`)));
  });
}

function stopChild(c) {
  return new Promise((resolve) => {
    if (c.proc.exitCode !== null) return resolve();
    c.proc.once('exit', resolve);
    c.proc.send({ cmd: 'stop' });
  });
}

async function client(url, opts = {}) {
  const c = await mqtt.connectAsync(url, { reconnectPeriod: 0, protocolVersion: 4, ...opts });
  // mqtt.js leaves Nagle on; a QoS 1 exchange would wait ~40 ms for delayed ACKs.
  c.stream.setNoDelay(true);
  return c;
}

/** Sequential request/response round trips; returns durations in ms. */
function requester(c, reqTopic, resTopic, body) {
  const waiting = new Map();
  c.on('message', (topic, payload) => {
    if (topic !== resTopic) return;
    const m = JSON.parse(payload.toString());
    const w = waiting.get(m.transaction);
    if (w) {
      waiting.delete(m.transaction);
      w();
    }
  });
  let n = 0;
  return async (count) => {
    const out = [];
    for (let i = 0; i < count; i++) {
      const transaction = `r${++n}`;
      const t0 = performance.now();
      await new Promise((resolve) => {
        waiting.set(transaction, resolve);
        c.publish(reqTopic, JSON.stringify({ ...body, transaction }), { qos: 1 });
      });
      out.push(performance.now() - t0);
    }
    return out;
  };
}

function pct(a, p) {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}
const ms = (v) => `${v.toFixed(3)} ms`;

async function roundTrips(hub, bare) {
  const creds = { username: hub.info.keys.subscribeKey, password: hub.info.keys.publishKey };
  const hc = await client(hub.info.url, creds);
  await hc.subscribeAsync(['speakerhub/bridge/response/device_count', 'speakerhub/channel'], { qos: 1 });
  const bridge = requester(hc, 'speakerhub/bridge/request/device_count', 'speakerhub/bridge/response/device_count', {});
  const cc = await client(hub.info.url, creds);
  await cc.subscribeAsync('speakerhub/channel', { qos: 1 });
  const channel = requester(cc, 'speakerhub/channel', 'speakerhub/channel', {
    Command: 'device_count',
    HKWHubUUID: hub.info.uuid,
    SessionToken: hub.info.session,
  });
  const bc = await client(bare.info.url);
  await bc.subscribeAsync('echo/res', { qos: 1 });
  const echo = requester(bc, 'echo/req', 'echo/res', {});
  const bcc = await client(bare.info.url);
  await bcc.subscribeAsync('echo/chan', { qos: 1 });
  const echoChannel = requester(bcc, 'echo/chan', 'echo/chan', { Command: 'device_count', SessionToken: 'x'.repeat(43) });
  const run = { bridge, channel, bare: echo, bareChannel: echoChannel };
  for (const f of Object.values(run)) await f(WARMUP);
  const r = { bridge: [], channel: [], bare: [], bareChannel: [] };
  for (let s = 0; s < SLICES; s++) {
    // ABBA: neither side always runs right after the other.
    const order = s % 2 ? ['bare', 'bareChannel', 'bridge', 'channel'] : ['bridge', 'channel', 'bareChannel', 'bare'];
    for (const k of order) r[k].push(...(await run[k](REQUESTS)));
  }
  for (const c of [hc, cc, bc, bcc]) c.end(true);
  return r;
}

async function connectMany(url, opts, topic, count) {
  const clients = [];
  for (let i = 0; i < count; i += 50) {
    const batch = await Promise.all(Array.from({ length: Math.min(50, count - i) }, () => client(url, opts)));
    await Promise.all(batch.map((c) => c.subscribeAsync(topic, { qos: 0 })));
    clients.push(...batch);
  }
  return clients;
}

/** Per tick: ms from the first to the last receipt, and how many clients got it. */
async function fanout(clients, topic, keyOf, trigger) {
  const ticks = new Map();
  for (const c of clients) {
    c.on('message', (t, payload) => {
      if (t !== topic) return;
      const m = JSON.parse(payload.toString());
      if (m.Event !== 'PlaybackTimeChanged') return;
      const k = keyOf(m);
      const now = performance.now();
      const e = ticks.get(k) ?? { first: now, last: now, n: 0 };
      e.last = now;
      e.n++;
      ticks.set(k, e);
    });
  }
  await trigger();
  return [...ticks.values()].filter((e) => e.n > 0);
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'speakerhub-bench-mqtt-'));
  const hub = await child(['hub', dataDir]);
  const bare = await child(['bare']);
  let failed = false;
  try {
    console.log('\nMQTT: request → response round trip (QoS 1, sequential)');
    const r = await roundTrips(hub, bare);
    for (const [name, a] of [
      ['bare aedes echo, 2 topics (baseline)', r.bare],
      ['hub bridge/request device_count', r.bridge],
      ['bare aedes echo, 1 shared topic', r.bareChannel],
      ['hub channel device_count', r.channel],
    ]) {
      console.log(`  ${name.padEnd(38)} p50 ${ms(pct(a, 50))}  p99 ${ms(pct(a, 99))}  n=${a.length}`);
    }
    // The channel is one shared topic (the spec's): its requester also receives its own command, so its baseline does too.
    for (const [k, base] of [
      ['bridge', 'bare'],
      ['channel', 'bareChannel'],
    ]) {
      const ratio = pct(r[base], 50) / pct(r[k], 50);
      console.log(
        `  ${k}: p50 ratio (bare/hub) ${ratio.toFixed(2)}  goal >= 0.8 ${ratio >= 0.8 ? 'OK' : 'MISSED'};  p50 < 1 ms ${pct(r[k], 50) < 1 ? 'OK' : 'MISSED'}`,
      );
    }

    console.log(`\nMQTT: fan-out of PlaybackTimeChanged to ${CLIENTS} clients (${TICKS} ticks each)`);
    const hubClients = await connectMany(hub.info.url, { username: hub.info.keys.subscribeKey }, 'speakerhub/channel', CLIENTS);
    const token = { Authorization: 'Bearer bench-token-0123456789abcdefghij' };
    const play = await fetch(
      `${hub.info.rest}/api/v1/play_hub_media_party_mode?SessionToken=${hub.info.session}&PersistentID=${hub.info.persistentId}`,
      { headers: token },
    );
    const played = await play.json();
    if (played.Result !== 'true') throw new Error(`play failed: ${JSON.stringify(played)}`);
    const hubTicks = await fanout(
      hubClients,
      'speakerhub/channel',
      (m) => m.PlaybackTime,
      () => new Promise((res) => setTimeout(res, TICKS * 1000 + 500)),
    );
    await fetch(`${hub.info.rest}/api/v1/stop_play?SessionToken=${hub.info.session}`, { headers: token });
    for (const c of hubClients) c.end(true);
    const bareClients = await connectMany(bare.info.url, {}, 'bench/fanout', CLIENTS);
    const bareTicks = await fanout(
      bareClients,
      'bench/fanout',
      (m) => m.PlaybackTime,
      async () => {
        for (let i = 0; i < TICKS; i++) {
          bare.proc.send({ cmd: 'tick' });
          await new Promise((res) => setTimeout(res, 1000));
        }
        await new Promise((res) => setTimeout(res, 500));
      },
    );
    for (const c of bareClients) c.end(true);
    const spread = (ts) => ts.map((e) => e.last - e.first);
    const complete = (ts) => ts.filter((e) => e.n === CLIENTS).length;
    for (const [name, ts] of [
      ['bare aedes (baseline)', bareTicks],
      ['hub', hubTicks],
    ]) {
      const s = spread(ts);
      console.log(
        `  ${name.padEnd(22)} first→last receipt p50 ${ms(pct(s, 50))}  max ${ms(Math.max(...s))}  ticks complete ${complete(ts)}/${ts.length}`,
      );
    }
    const ratio = pct(spread(bareTicks), 50) / pct(spread(hubTicks), 50);
    console.log(`  spread ratio (bare/hub) ${ratio.toFixed(2)}`);
    if (complete(hubTicks) < hubTicks.length || hubTicks.length < TICKS - 1) failed = true;
  } catch (e) {
    console.error(`bench/mqtt failed: ${e.stack || e}`);
    failed = true;
  } finally {
    await stopChild(hub);
    await stopChild(bare);
  }
  process.exit(failed ? 1 : 0);
}

main();

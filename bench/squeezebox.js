'use strict';
/**
 * Squeezebox benchmark (needs dist/ from npm run build, and squeezelite, ffmpeg, espeak-ng):
 * a hub in this process with the squeezebox driver on a free loopback port, three real
 * squeezelite players (`-o -`, 32-bit) whose output FIFOs are read at real time by pacer
 * processes (monotonic clock, an underrun is silence), REST over HTTP. Prints figures, no asserts.
 *
 *  start skew: spread of the first pulse's heard time across the three players of one party
 *    play (each pulse located by cross-correlating the capture with the 2 kHz burst), over
 *    BENCH_SQUEEZEBOX_ROUNDS plays, p50 and worst (goal p50 < 5 ms, worst < 10 ms);
 *  drift: change of the players' offsets between the first pulse and one BENCH_SQUEEZEBOX_SECONDS
 *    later (goal < 2 ms), with the hub's sync corrections made meanwhile;
 *  announce latency: request sent → the player fetches its audio (the driver's `player fetched
 *    its audio` log line), p50/p95, for uncached TTS (goal p95 < 300 ms) and hub media.
 *
 * What a `-o -` player measures: squeezelite writes to stdout as fast as it is read, so the
 * pacer is its sound card; its start lands on a FIFO page (4 KiB = 11.6 ms of 32-bit audio),
 * and its clock is the pacer's, so drift here is the hub's doing, not a crystal's.
 * Exit code 0 whatever the figures say; 1 if anything failed.
 */
const { spawn, spawnSync } = require('node:child_process');
const { closeSync, mkdtempSync, mkdirSync, openSync, readSync, rmSync, statSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { Writable } = require('node:stream');
const { performance } = require('node:perf_hooks');
const { freePort, sine, sleep, until } = require('./helpers');

const ROUNDS = Number(process.env.BENCH_SQUEEZEBOX_ROUNDS || 5);
const SECONDS = Number(process.env.BENCH_SQUEEZEBOX_SECONDS || 60);
const N = Number(process.env.BENCH_SQUEEZEBOX_N || 10);
const TOKEN = 'bench-squeezebox-token-0123456789';
/** The media's rate; the players resample to CAPTURE_RATE (BENCH_SQUEEZEBOX_RATE) so a FIFO page is a shorter step. */
const RATE = 44100;
const CAPTURE_RATE = Number(process.env.BENCH_SQUEEZEBOX_RATE || 192000);
const FRAME = 8;
const BURST_MS = 10;
const BURST_HZ = 2000;

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] : NaN;
};
const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');

/** Silence, then a 10 ms 2 kHz burst every second from `lead` s: the marker every capture is aligned on. */
function pulseWav(encodeWav, seconds, lead) {
  const s = new Int16Array(Math.round(RATE * seconds));
  const burst = sine(BURST_MS / 1000, BURST_HZ, RATE, 20000);
  for (let t = lead; t < seconds; t += 1) {
    const i0 = Math.round(t * RATE);
    s.set(burst.subarray(0, Math.max(0, s.length - i0)), i0);
  }
  return encodeWav(s, RATE, { title: 'Bench Pulses', artist: 'Bench', album: 'Bench' });
}

function toneWav(encodeWav, seconds, hz, title) {
  return encodeWav(sine(seconds, hz, RATE), RATE, { title, artist: 'Bench', album: 'Bench' });
}

/** Same pacer as test/drivers/squeezebox/harness.ts: reads the FIFO at real time into the capture. */
const PACER = `
const fs = require('fs');
const [fifo, out, RATE, FRAME] = [process.argv[1], process.argv[2], Number(process.argv[3]), 8];
const fd = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
const outFd = fs.openSync(out, 'a');
const ms = () => Number(process.hrtime.bigint()) / 1e6;
const t0 = ms();
process.stdout.write('T0 ' + t0 + '\\n');
const buf = Buffer.alloc(1 << 20);
let consumed = 0, carry = 0, gotData = false;
const timer = setInterval(() => {
  let want = Math.floor(((ms() - t0) / 1000) * RATE) * FRAME - consumed;
  while (want > 0) {
    let n;
    try { n = fs.readSync(fd, buf, carry, Math.min(want, buf.length - carry), null); }
    catch (e) { if (e.code !== 'EAGAIN') throw e; n = -1; }
    if (n === 0 && gotData) { clearInterval(timer); process.exit(0); }
    if (n <= 0) {
      if (carry) break;
      const pad = want - (want % FRAME);
      fs.writeSync(outFd, Buffer.alloc(pad));
      consumed += pad;
      break;
    }
    gotData = true;
    const have = carry + n;
    const whole = have - (have % FRAME);
    fs.writeSync(outFd, buf, 0, whole);
    buf.copy(buf, 0, whole, have);
    carry = have - whole;
    consumed += whole;
    want -= whole;
  }
}, 1);
`;

class Player {
  constructor(dir, name, mac, port) {
    Object.assign(this, { dir, name, mac, port, out: join(dir, `${name}.raw`) });
  }
  async start() {
    const fifo = join(this.dir, `${this.name}.fifo`);
    spawnSync('mkfifo', [fifo]);
    this.pacer = spawn(process.execPath, ['-e', PACER, fifo, this.out, String(CAPTURE_RATE)], { stdio: ['ignore', 'pipe', 'inherit'] });
    this.t0 = await new Promise((resolve, reject) => {
      let text = '';
      this.pacer.stdout.on('data', (d) => {
        text += String(d);
        const m = /T0 ([\d.]+)\n/.exec(text);
        if (m) resolve(Number(m[1]));
      });
      this.pacer.once('exit', () => reject(new Error('pacer exited')));
    });
    const w = openSync(fifo, 'w');
    const resample = CAPTURE_RATE === RATE ? [] : ['-r', String(CAPTURE_RATE), '-u', 'hX'];
    this.proc = spawn('squeezelite', ['-s', `127.0.0.1:${this.port}`, '-n', this.name, '-m', this.mac, '-o', '-', '-a', '32', ...resample], {
      stdio: ['ignore', w, 'ignore'],
    });
    closeSync(w);
  }
  size() {
    try {
      return statSync(this.out).size;
    } catch {
      return 0;
    }
  }
  /** Left channel from byte `from` (frame aligned), 16-bit scale. */
  samples(from, to) {
    const end = Math.min(this.size(), to ?? Infinity);
    const start = from - (from % FRAME);
    const len = Math.max(0, end - start - ((end - start) % FRAME));
    const buf = Buffer.alloc(len);
    const fd = openSync(this.out, 'r');
    try {
      readSync(fd, buf, 0, len, start);
    } finally {
      closeSync(fd);
    }
    const all = new Int32Array(buf.buffer, buf.byteOffset, len / 4);
    const s = new Float64Array(len / FRAME);
    for (let i = 0; i < s.length; i++) s[i] = all[i * 2] / 65536;
    return { start, s };
  }
  heardAt(byte) {
    return this.t0 + (byte / FRAME / CAPTURE_RATE) * 1000;
  }
  /**
   * Heard times of the pulses after byte `from`: a threshold finds each burst, then the
   * cross-correlation with the burst template (±1 ms around it) places it to the sample.
   */
  pulses(from, count) {
    const { start, s } = this.samples(from);
    const tpl = Array.from({ length: Math.round((CAPTURE_RATE * BURST_MS) / 1000) }, (_, i) => Math.sin((2 * Math.PI * BURST_HZ * i) / CAPTURE_RATE));
    const out = [];
    for (let i = 0; i < s.length && out.length < count; i++) {
      if (Math.abs(s[i]) < 6000) continue;
      let best = -Infinity;
      let at = i;
      const win = Math.round(CAPTURE_RATE / 1000);
      for (let k = Math.max(0, i - win); k <= i + win && k + tpl.length < s.length; k++) {
        let c = 0;
        for (let j = 0; j < tpl.length; j++) c += s[k + j] * tpl[j];
        if (c > best) {
          best = c;
          at = k;
        }
      }
      out.push(this.heardAt(start + at * FRAME));
      i += Math.round(CAPTURE_RATE * 0.5);
    }
    return out;
  }
  async stop() {
    for (const p of [this.proc, this.pacer]) {
      if (p && p.exitCode === null) {
        const exited = new Promise((r) => p.once('exit', r));
        p.kill('SIGKILL');
        await exited;
      }
    }
  }
}

/** bench/helpers.js until, polling every 100 ms (the players' captures are read from files). */
const waitFor = (check, ms, what) => until(check, ms, what, 100);

async function main() {
  const { createHub } = require('../dist/index.js');
  const { createLogger } = require('../dist/logger.js');
  const { encodeWav } = require('../dist/audio/wav.js');
  const dir = mkdtempSync(join(tmpdir(), 'speakerhub-bench-squeezebox-'));
  const players = [];
  let hub;
  let failed = false;
  const fetches = [];
  try {
    const mediaDir = join(dir, 'music');
    mkdirSync(mediaDir);
    writeFileSync(join(mediaDir, 'pulses.wav'), pulseWav(encodeWav, SECONDS + 15, 1));
    writeFileSync(join(mediaDir, 'chime.wav'), toneWav(encodeWav, 1, 660, 'Bench Chime'));
    let corrections = 0;
    const logger = createLogger({
      level: 'debug',
      stream: new Writable({
        write(chunk, _enc, cb) {
          const line = String(chunk);
          if (line.includes('player fetched its audio')) fetches.push(performance.now());
          if (line.includes('its group, skipping') || line.includes('its group, pausing')) corrections++;
          cb();
        },
      }),
    });
    const port = await freePort();
    hub = createHub(
      {
        dataDir: join(dir, 'data'),
        drivers: ['squeezebox'],
        speakers: { virtual: { count: 0 } },
        server: { host: '127.0.0.1', port: 0, token: TOKEN },
        media: { samples: false, folders: [mediaDir] },
        log: { level: 'debug' },
        squeezebox: { port, host: '127.0.0.1', discovery: false },
      },
      { logger },
    );
    await hub.start();
    const base = hub.url;
    const auth = { Authorization: `Bearer ${TOKEN}` };
    const session = (await (await fetch(`${base}/api/v1/init_session`, { headers: auth })).json()).SessionToken;
    const op = async (name, params = {}) =>
      (await fetch(`${base}/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`, { headers: auth })).json();
    for (const [i, name] of ['Bench-A', 'Bench-B', 'Bench-C'].entries()) {
      const p = new Player(dir, name, `02:00:00:be:00:0${i + 1}`, port);
      await p.start();
      players.push(p);
    }
    await waitFor(async () => (await op('device_list')).DeviceList.filter((d) => d.Active).length === 3, 15_000, 'three players');
    const ids = (await op('device_list')).DeviceList.map((d) => d.DeviceID);
    for (const id of ids) await op('set_volume_device', { DeviceID: id, Volume: '50' });
    const media = (await op('media_list')).MediaList;
    const pid = (t) => media.find((m) => m.Title === t).PersistentID;

    // ---- start skew, then drift on the last round --------------------------------------------
    const skews = [];
    let drift;
    let spreadLater;
    for (let r = 0; r < ROUNDS; r++) {
      const from = players.map((p) => p.size());
      await op('play_hub_media_selected_speakers', { PersistentID: pid('Bench Pulses'), DeviceIDList: ids.join(',') });
      await waitFor(() => players.every((p, i) => p.pulses(from[i], 1).length === 1), 15_000, 'the first pulse from every player');
      const first = players.map((p, i) => p.pulses(from[i], 1)[0]);
      skews.push(Math.max(...first) - Math.min(...first));
      if (r === ROUNDS - 1) {
        const before = corrections;
        await sleep(SECONDS * 1000 + 1500);
        const later = players.map((p, i) => {
          const ps = p.pulses(from[i], SECONDS + 1);
          return ps[SECONDS];
        });
        if (later.every(Number.isFinite)) {
          const off0 = first.map((t) => t - first[0]);
          const offN = later.map((t) => t - later[0]);
          drift = Math.max(...off0.map((o, i) => Math.abs(offN[i] - o)));
          spreadLater = Math.max(...later) - Math.min(...later);
        }
        console.log(`  (sync corrections during the ${SECONDS} s: ${corrections - before})`);
      }
      await op('stop_play');
      await sleep(500);
    }

    // ---- announce latency --------------------------------------------------------------------
    const latency = async (params) => {
      const out = [];
      for (let i = 0; i < N; i++) {
        const n0 = fetches.length;
        const t0 = performance.now();
        const a = await op('announce', { DeviceIDList: ids[0], ...params(i) });
        if (!a.AnnouncementID) throw new Error(`announce failed: ${JSON.stringify(a)}`);
        await waitFor(() => fetches.length > n0, 10_000, 'the player fetching the announcement');
        out.push(fetches[n0] - t0);
        await waitFor(
          async () => (await op('announcement_status', { AnnouncementID: a.AnnouncementID })).State === 'done',
          30_000,
          'announcement done',
        );
      }
      return out;
    };
    const tts = await latency((i) => ({ Text: `Bench announcement number ${i} at ${Date.now()}.` }));
    const chime = await latency(() => ({ PersistentID: pid('Bench Chime') }));

    console.log('Squeezebox (3 squeezelite players, -o - paced at real time, one hub on loopback)');
    console.log(
      `  start skew   p50 ${fmt(pct(skews, 50))} ms  worst ${fmt(Math.max(...skews))} ms  (${skews.length} party plays; goal p50 < 5, worst < 10)`,
    );
    console.log(`  drift after ${SECONDS} s  ${fmt(drift, 2)} ms  (spread then ${fmt(spreadLater)} ms; goal < 2)`);
    console.log(`  announce latency (request → player fetches the audio), n=${N} each:`);
    console.log(`    uncached TTS  p50 ${fmt(pct(tts, 50))} ms  p95 ${fmt(pct(tts, 95))} ms  (goal p95 < 300)`);
    console.log(`    hub media     p50 ${fmt(pct(chime, 50))} ms  p95 ${fmt(pct(chime, 95))} ms  (baseline: no synthesis)`);
  } catch (e) {
    failed = true;
    console.error(e);
  } finally {
    await hub?.stop().catch(() => undefined);
    for (const p of players) await p.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}

// bench/cross-family-skew.js reuses the paced squeezelite player.
if (require.main === module) main();

module.exports = { Player, pulseWav, freePort, pct, fmt, waitFor, sleep, CAPTURE_RATE, FRAME, BURST_HZ, BURST_MS };

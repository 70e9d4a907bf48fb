'use strict';
/**
 * Cross-family start skew (needs dist/ from npm run build, and squeezelite, snapserver,
 * snapclient, ffmpeg): one hub in this process with the squeezebox and snapcast drivers, one
 * real squeezelite (`-o -`, read at real time by a pacer, as in bench/squeezebox.js) and one
 * real snapclient of a real snapserver on loopback, both in one play of a pulse track (silence,
 * then a 10 ms 2 kHz burst every second). Prints figures, no asserts.
 *
 * What is compared is each player's output instant of the first burst, on the monotonic clock:
 *  - squeezelite: the pacer hears capture byte k at t0 + k/rate; squeezelite wrote it one pipe
 *    (64 KiB) earlier, as it keeps the FIFO full; that write is its output (stdout declares no
 *    device delay), so the burst's output instant is the pacer's heard time − 64 KiB/rate;
 *  - snapclient (`--player file:filename=stdout`): the file player writes every 50 ms the block
 *    that should reach its "DAC" 10 ms later; the write instant of the burst's block is pinned
 *    by the read stamps (as test/drivers/snapcast/offset.ts does), so the output instant is that + 10 ms
 *    + the burst's offset within the block.
 * Each burst is placed to the sample by cross-correlating the capture with the burst.
 *
 * Skew = snapclient − squeezelite, per play, over BENCH_CROSS_ROUNDS plays: p50 and worst of
 * |skew|, and the mean (a systematic offset). Goal |skew| < 20 ms (Music Assistant does not
 * sync across families at all). Exit code 0 whatever the figures say; 1 if anything failed.
 */
const { spawn } = require('node:child_process');
const { closeSync, mkdtempSync, mkdirSync, openSync, rmSync, writeFileSync } = require('node:fs');
const { connect } = require('node:net');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { Writable } = require('node:stream');
const { Player, pulseWav, freePort, pct, fmt, waitFor, sleep, CAPTURE_RATE, FRAME, BURST_HZ, BURST_MS } = require('./squeezebox');

const ROUNDS = Number(process.env.BENCH_CROSS_ROUNDS || 6);
const TOKEN = 'bench-cross-family-token-0123456789';
/** Linux's default pipe capacity: what squeezelite has written ahead of the pacer's reads. */
const PIPE_BYTES = 65536;
const SNAP_RATE = 48000;
const SNAP_FRAME = 4;
const BLOCK_FRAMES = SNAP_RATE / 20;
const BLOCK_NS = 50_000_000n;
const DAC_MS = 10;

function rpc(port, method) {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(`${JSON.stringify({ id: 1, jsonrpc: '2.0', method })}\r\n`));
    let buf = '';
    const t = setTimeout(() => (s.destroy(), reject(new Error('no answer'))), 2000);
    s.on('data', (d) => {
      buf += d;
      if (buf.includes('\n')) {
        clearTimeout(t);
        s.destroy();
        resolve(JSON.parse(buf.slice(0, buf.indexOf('\n'))));
      }
    });
    s.on('error', (e) => (clearTimeout(t), reject(e)));
  });
}

/** A snapclient writing its play-out to stdout; every read stamped with the monotonic clock. */
class SnapCapture {
  constructor(proc) {
    this.chunks = [];
    this.reads = [];
    this.bytes = 0;
    proc.stdout.on('data', (d) => {
      const now = process.hrtime.bigint();
      this.chunks.push(d);
      this.bytes += d.length;
      this.reads.push([Math.floor(this.bytes / SNAP_FRAME), now]);
      // Bounded: a bench run keeps well under a few minutes of audio (11 MB/min).
    });
  }
  get frames() {
    return Math.floor(this.bytes / SNAP_FRAME);
  }
  /** Left channel from frame `from` on, 16-bit scale. */
  samples(from) {
    const pcm = Buffer.concat(this.chunks);
    const n = Math.floor(pcm.length / SNAP_FRAME) - from;
    const s = new Float64Array(Math.max(0, n));
    for (let i = 0; i < s.length; i++) s[i] = pcm.readInt16LE((from + i) * SNAP_FRAME);
    return s;
  }
  /** Write instant (ns) of block k: the tightest upper bound from the reads around it. */
  blockTime(k) {
    let best;
    for (const [frames, arrived] of this.reads) {
      const last = Math.floor(frames / BLOCK_FRAMES) - 1;
      if (last < 0 || Math.abs(last - k) > 25) continue;
      const bound = arrived - BigInt(last - k) * BLOCK_NS;
      if (best === undefined || bound < best) best = bound;
    }
    return best;
  }
  /** Output instant (monotonic ms) of the first burst after frame `from`, or undefined. */
  firstBurst(from) {
    const s = this.samples(from);
    const tpl = Array.from({ length: Math.round((SNAP_RATE * BURST_MS) / 1000) }, (_, i) => Math.sin((2 * Math.PI * BURST_HZ * i) / SNAP_RATE));
    for (let i = 0; i < s.length; i++) {
      if (Math.abs(s[i]) < 6000) continue;
      if (i + tpl.length + SNAP_RATE / 1000 >= s.length) return undefined;
      let bestC = -Infinity;
      let at = i;
      const win = SNAP_RATE / 1000;
      for (let k = Math.max(0, i - win); k <= i + win; k++) {
        let c = 0;
        for (let j = 0; j < tpl.length; j++) c += s[k + j] * tpl[j];
        if (c > bestC) {
          bestC = c;
          at = k;
        }
      }
      const f = from + at;
      const k = Math.floor(f / BLOCK_FRAMES);
      const t = this.blockTime(k);
      if (t === undefined) return undefined;
      return Number(t) / 1e6 + DAC_MS + ((f - k * BLOCK_FRAMES) / SNAP_RATE) * 1000;
    }
    return undefined;
  }
}

async function main() {
  const { createHub } = require('../dist/index.js');
  const { createLogger } = require('../dist/logger.js');
  const { encodeWav } = require('../dist/audio/wav.js');
  const dir = mkdtempSync(join(tmpdir(), 'speakerhub-bench-cross-'));
  const procs = [];
  let hub;
  let player;
  let failed = false;
  try {
    const [control, stream, source, slim] = [await freePort(), await freePort(), await freePort(), await freePort()];
    mkdirSync(join(dir, 'snapdata'));
    writeFileSync(
      join(dir, 'snapserver.conf'),
      [
        '[server]',
        `datadir = ${join(dir, 'snapdata')}`,
        '[stream]',
        'bind_to_address = 127.0.0.1',
        `port = ${stream}`,
        `source = pipe://${join(dir, 'idle-fifo')}?name=Idle&mode=create`,
        `source = tcp://127.0.0.1:${source}?name=SpeakerHub&mode=server`,
        '[http]',
        'enabled = false',
        '[tcp]',
        'enabled = true',
        'bind_to_address = 127.0.0.1',
        `port = ${control}`,
        '[logging]',
        'sink = stderr',
        '',
      ].join('\n'),
    );
    const log = openSync(join(dir, 'snap.log'), 'a');
    procs.push(spawn('snapserver', ['-c', join(dir, 'snapserver.conf')], { stdio: ['ignore', log, log] }));
    await waitFor(
      () =>
        rpc(control, 'Server.GetRPCVersion').then(
          () => true,
          () => false,
        ),
      10_000,
      'snapserver',
    );
    const client = spawn(
      'snapclient',
      ['-h', '127.0.0.1', '-p', String(stream), '--hostID', 'bench-cross-snap', '--player', 'file:filename=stdout', '--logsink', 'stderr'],
      { stdio: ['ignore', 'pipe', log] },
    );
    closeSync(log);
    procs.push(client);
    const snap = new SnapCapture(client);

    const mediaDir = join(dir, 'music');
    mkdirSync(mediaDir);
    writeFileSync(join(mediaDir, 'pulses.wav'), pulseWav(encodeWav, 12, 1));
    const logger = createLogger({
      level: process.env.BENCH_CROSS_DEBUG ? 'debug' : 'info',
      stream: new Writable({
        write(chunk, _enc, cb) {
          const line = String(chunk);
          if (process.env.BENCH_CROSS_DEBUG && /agreed|start instant|missed/.test(line)) process.stdout.write(line);
          cb();
        },
      }),
    });
    hub = createHub(
      {
        dataDir: join(dir, 'data'),
        drivers: ['squeezebox'],
        speakers: { virtual: { count: 0 } },
        server: { host: '127.0.0.1', port: 0, token: TOKEN },
        media: { samples: false, folders: [mediaDir] },
        log: { level: 'info' },
        squeezebox: { port: slim, host: '127.0.0.1', discovery: false },
        snapcast: { servers: [`127.0.0.1:${control}`] },
      },
      { logger },
    );
    await hub.start();
    const auth = { Authorization: `Bearer ${TOKEN}` };
    const session = (await (await fetch(`${hub.url}/api/v1/init_session`, { headers: auth })).json()).SessionToken;
    const op = async (name, params = {}) =>
      (await fetch(`${hub.url}/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`, { headers: auth })).json();
    player = new Player(dir, 'Cross-SB', '02:00:00:be:0c:01', slim);
    await player.start();
    await waitFor(async () => (await op('device_list')).DeviceList.filter((d) => d.Active).length === 2, 15_000, 'both players');
    const ids = (await op('device_list')).DeviceList.map((d) => d.DeviceID);
    for (const id of ids) await op('set_volume_device', { DeviceID: id, Volume: '50' });
    const pid = (await op('media_list')).MediaList[0].PersistentID;

    const pipeMs = (PIPE_BYTES / (CAPTURE_RATE * FRAME)) * 1000;
    const skews = [];
    for (let r = 0; r < ROUNDS; r++) {
      const fromSb = player.size();
      const fromSnap = snap.frames;
      const res = await op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: ids.join(',') });
      if (res.Result !== 'true') throw new Error(`play failed: ${JSON.stringify(res)}`);
      let tSb;
      let tSnap;
      await waitFor(
        () => {
          tSb ??= player.pulses(fromSb, 1)[0];
          tSnap ??= snap.firstBurst(fromSnap);
          return tSb !== undefined && tSnap !== undefined;
        },
        15_000,
        'the first pulse from both players',
      );
      skews.push(tSnap - (tSb - pipeMs));
      await op('stop_play');
      await sleep(1500);
    }
    const abs = skews.map(Math.abs);
    console.log('Cross-family start skew (1 squeezelite + 1 snapclient in one play, one hub on loopback)');
    console.log(`  per play (snapclient − squeezelite, ms): ${skews.map((x) => fmt(x)).join(', ')}`);
    console.log(
      `  |skew| p50 ${fmt(pct(abs, 50))} ms  worst ${fmt(Math.max(...abs))} ms  mean ${fmt(skews.reduce((a, b) => a + b, 0) / skews.length)} ms  (${skews.length} plays; goal < 20)`,
    );
  } catch (e) {
    failed = true;
    console.error(e);
  } finally {
    await hub?.stop().catch(() => undefined);
    await player?.stop();
    for (const p of procs.reverse()) {
      if (p.exitCode === null && p.signalCode === null) {
        const exited = new Promise((r) => p.once('exit', r));
        p.kill('SIGKILL');
        await exited;
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}

main();

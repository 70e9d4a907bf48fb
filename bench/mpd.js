'use strict';
/**
 * MPD benchmark (needs dist/ from npm run build, and mpd, ffmpeg, espeak-ng installed):
 * a real mpd on a free loopback port (own config in a temp folder, pipe output through
 * ffmpeg -re into a file), a hub in this process with `mpd.servers` set, REST over HTTP.
 *
 *  announce latency: request sent → the MPD's first request to the hub's media server for the
 *  audio (the media server's `media request` log line), p50/p95:
 *   - uncached TTS (a new text each time: synthesis is on the path), goal p95 < 300 ms;
 *   - baseline in the same run: an announcement of hub media (no synthesis).
 *  pause-follow latency: `pause 1` / `pause 0` sent by another MPD client (the user's app) →
 *  the hub's playbackState event says Paused / Playing (idle player → status → the speaker's
 *  ownPlayState → the playback engine), p50/p95; goal: within a second.
 *
 * Exit code 0 whatever the figures say; 1 if anything failed.
 */
const { spawn } = require('node:child_process');
const { mkdtempSync, mkdirSync, rmSync, writeFileSync } = require('node:fs');
const { connect } = require('node:net');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { Writable } = require('node:stream');
const { performance } = require('node:perf_hooks');
const { freePort, sine, sleep } = require('./helpers');

const N = Number(process.env.BENCH_MPD_N || 10);
const TOKEN = 'bench-mpd-token-0123456789abcdef';

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};
const fmt = (x) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');

function ping(port) {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.on('data', (d) => {
      s.destroy();
      resolve(String(d).startsWith('OK MPD'));
    });
    s.on('error', () => resolve(false));
  });
}

/** One command from another MPD client (the user's app): resolves at OK. `sent` is called as it is written. */
function mpdCommand(port, command, sent) {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port });
    let greeted = false;
    s.setEncoding('utf8');
    s.on('data', (d) => {
      if (!greeted) {
        greeted = true;
        sent();
        s.write(`${command}\n`);
        return;
      }
      if (/^(OK|ACK)/m.test(d)) {
        s.destroy();
        resolve();
      }
    });
    s.on('error', reject);
  });
}

async function main() {
  const { createHub } = require('../dist/index.js');
  const { createLogger } = require('../dist/logger.js');
  const { encodeWav } = require('../dist/audio/wav.js');
  const dir = mkdtempSync(join(tmpdir(), 'speakerhub-bench-mpd-'));
  let mpd;
  let hub;
  try {
    const port = await freePort();
    for (const d of ['music', 'pl', 'media']) mkdirSync(join(dir, d));
    writeFileSync(
      join(dir, 'mpd.conf'),
      [
        `music_directory "${dir}/music"`,
        `playlist_directory "${dir}/pl"`,
        `db_file "${dir}/db"`,
        `state_file "${dir}/state"`,
        'bind_to_address "127.0.0.1"',
        `port "${port}"`,
        'audio_output {',
        '  type "pipe"',
        '  name "capture"',
        `  command "ffmpeg -loglevel quiet -re -f s16le -ar 44100 -ac 2 -i - -f s16le - >> ${dir}/out.raw"`,
        '  format "44100:16:2"',
        '  mixer_type "software"',
        '}',
        '',
      ].join('\n'),
    );
    const rate = 22050;
    const tone = sine(1, 660, rate, 8000);
    writeFileSync(join(dir, 'media', 'chime.wav'), encodeWav(tone, rate, { title: 'Bench Chime', artist: 'Bench', album: 'Bench' }));
    const long = sine(60, 440, rate, 8000);
    writeFileSync(join(dir, 'media', 'tone.wav'), encodeWav(long, rate, { title: 'Bench Tone', artist: 'Bench', album: 'Bench' }));
    mpd = spawn('mpd', ['--no-daemon', join(dir, 'mpd.conf')], { stdio: 'ignore' });
    for (let i = 0; !(await ping(port)); i++) {
      if (i > 100) throw new Error('mpd did not start');
      await sleep(100);
    }

    /** Times (performance.now) of the media server's requests, as its log lines come. */
    const mediaRequests = [];
    const logger = createLogger({
      level: 'debug',
      stream: new Writable({
        write(chunk, _enc, cb) {
          for (const line of String(chunk).split('\n')) if (line.includes('"msg":"media request"')) mediaRequests.push(performance.now());
          cb();
        },
      }),
    });
    hub = createHub(
      {
        dataDir: dir,
        speakers: { virtual: { count: 0 } },
        server: { host: '127.0.0.1', port: 0, token: TOKEN },
        media: { samples: false, folders: [join(dir, 'media')] },
        log: { level: 'debug' },
        mpd: { servers: [`127.0.0.1:${port}`] },
      },
      { logger },
    );
    await hub.start();
    const base = hub.url;
    const get = async (path) => (await fetch(base + path, { headers: { Authorization: `Bearer ${TOKEN}` } })).json();
    const session = (await get('/api/v1/init_session')).SessionToken;
    const op = (name, params = {}) => get(`/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`);
    for (let i = 0; !(await op('device_list')).DeviceList.some((d) => d.Active); i++) {
      if (i > 100) throw new Error('the MPD speaker did not come up');
      await sleep(100);
    }
    const pid = (await op('media_list')).MediaList.find((m) => m.Title === 'Bench Chime').PersistentID;

    async function once(params) {
      const before = mediaRequests.length;
      const t0 = performance.now();
      const a = await op('announce', params);
      if (!a.AnnouncementID) throw new Error(`announce failed: ${JSON.stringify(a)}`);
      for (let i = 0; mediaRequests.length === before; i++) {
        if (i > 500) throw new Error('the MPD never fetched the audio');
        await sleep(2);
      }
      const ms = mediaRequests[before] - t0;
      for (let i = 0; (await op('announcement_status', { AnnouncementID: a.AnnouncementID })).State !== 'done'; i++) {
        if (i > 300) throw new Error('announcement did not finish');
        await sleep(100);
      }
      return ms;
    }

    const tts = [];
    const hubMedia = [];
    for (let i = 0; i < N; i++) {
      tts.push(await once({ Text: `Bench ${i} ${Math.random().toString(36).slice(2, 8)}` }));
      hubMedia.push(await once({ PersistentID: pid }));
    }
    console.log(`mpd announce latency (request → MPD fetches the audio), n=${N} each:`);
    console.log(`  TTS uncached: p50 ${fmt(pct(tts, 50))} ms, p95 ${fmt(pct(tts, 95))} ms (goal p95 < 300 ms)`);
    console.log(`  hub media (baseline, no synthesis): p50 ${fmt(pct(hubMedia, 50))} ms, p95 ${fmt(pct(hubMedia, 95))} ms`);
    console.log(`  ratio TTS/hub media p50: ${fmt(pct(tts, 50) / pct(hubMedia, 50))}x`);

    // ---- pause-follow latency ------------------------------------------------------------
    const toneId = (await op('media_list')).MediaList.find((m) => m.Title === 'Bench Tone').PersistentID;
    const id = (await op('device_list')).DeviceList.find((d) => d.Active).DeviceID;
    const played = await op('play_hub_media_selected_speakers', { PersistentID: toneId, DeviceIDList: id });
    if (played.Result !== 'true') throw new Error(`play failed: ${JSON.stringify(played)}`);
    const follow = { paused: [], playing: [], pausedOk: [], playingOk: [] };
    for (let i = 0; i < N; i++) {
      for (const [command, state, key] of [
        ['pause 1', 'PlayerStatePaused', 'paused'],
        ['pause 0', 'PlayerStatePlaying', 'playing'],
      ]) {
        let t0 = 0;
        const seen = new Promise((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`playback_status did not follow '${command}'`)), 5000);
          const on = (e) => {
            if (e.state !== state) return;
            clearTimeout(timer);
            hub.core.events.off('playbackState', on);
            resolve(performance.now());
          };
          hub.core.events.on('playbackState', on);
        });
        await mpdCommand(port, command, () => (t0 = performance.now()));
        // When MPD itself answered: a pipe output closes on pause and waits for its reader.
        follow[`${key}Ok`].push(performance.now() - t0);
        follow[key].push((await seen) - t0);
        await sleep(300);
      }
    }
    await op('stop_play');
    console.log(`mpd pause-follow latency (another client's pause/resume → playbackState event), n=${N} each:`);
    console.log(`  pause 1 → Paused: p50 ${fmt(pct(follow.paused, 50))} ms, p95 ${fmt(pct(follow.paused, 95))} ms (goal < 1000 ms)`);
    console.log(`  pause 0 → Playing: p50 ${fmt(pct(follow.playing, 50))} ms, p95 ${fmt(pct(follow.playing, 95))} ms`);
    console.log(
      `  MPD's own answer (OK): pause 1 p50 ${fmt(pct(follow.pausedOk, 50))} ms, pause 0 p50 ${fmt(pct(follow.playingOk, 50))} ms ` +
        '(this pipe output closes on pause and waits for its ffmpeg -re reader; a sound card pauses at once)',
    );
    const share = (k) => follow[k].map((t, i) => t - follow[`${k}Ok`][i]);
    console.log(
      `  the hub's share (event − MPD's OK): pause p50 ${fmt(pct(share('paused'), 50))} ms, resume p50 ${fmt(pct(share('playing'), 50))} ms`,
    );
  } finally {
    await hub?.stop();
    mpd?.kill('SIGKILL');
    await sleep(200);
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

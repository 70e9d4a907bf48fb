'use strict';
/**
 * Announcement audio benchmark (issue 21; needs dist/ from npm run build, ffmpeg, espeak-ng):
 *
 *  1. CPU per ducked stream: ffmpeg running the duck mix (src/audio/duck-mix.ts: music from a
 *     position, the voice on top, fades) as fast as it can over a 30 s voice, CPU seconds (user
 *     + sys, /usr/bin/time) per second of audio, against a plain decode of the same music to
 *     the same output as the baseline (what one Snapcast feed costs today). Goal: 10 ducked
 *     streams at once under 50% of one core, i.e. CPU per audio second < 0.05.
 *  1c. The hub's CPU per ducked stream against a plain play of the same stream (issue 30), as
 *     a ratio: the music decoded as a Snapcast feed decodes it (PcmDecoder: ffmpeg to 48 kHz
 *     stereo s16) through the music loudness meter, alone (the plain play, the baseline) and with
 *     a ducked announcement on it (the voice decoded by DuckVoice, mixed by DuckMixer), the
 *     hub's own CPU (process.cpuUsage) plus its ffmpeg children's (cutime + cstime of
 *     /proc/self/stat), per second of audio, best of 3.
 *  2. Clip render time (src/media/announcement-clip.ts): chime + gap + speech at the target
 *     loudness, uncached, p50/p95 over N texts, against espeak-ng's synthesis of the same text
 *     (what an announcement waited for before) as the baseline.
 *
 * Exit code 0 whatever the figures say; 1 if anything failed.
 */
const { execFileSync, spawnSync } = require('node:child_process');
const { mkdtempSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');

const N = Number(process.env.BENCH_CLIP_N || 10);
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

/** CPU seconds (user + sys) of one ffmpeg run, as /usr/bin/time reports it. */
function timed(args) {
  const r = spawnSync('/usr/bin/time', ['-f', 'CPU %U %S', 'ffmpeg', '-v', 'error', '-nostdin', '-y', ...args], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`ffmpeg failed: ${r.stderr.slice(-300)}`);
  const m = /CPU ([\d.]+) ([\d.]+)/.exec(r.stderr);
  return Number(m[1]) + Number(m[2]);
}

async function main() {
  const { duckMixArgs } = require('../dist/audio/duck-mix.js');
  const { AnnouncementClips } = require('../dist/media/announcement-clip.js');
  const { ensureChime } = require('../dist/audio/chime.js');
  const { createLogger } = require('../dist/logger.js');
  const dir = mkdtempSync(join(tmpdir(), 'speakerhub-bench-duck-'));
  let failed = false;
  try {
    // 1. CPU per ducked stream.
    const music = join(dir, 'music.wav');
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=90', '-ar', '44100', '-ac', '2', music]);
    const voice = join(dir, 'voice.wav');
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'sine=frequency=1000:duration=30', '-ar', '22050', '-ac', '1', voice]);
    const out = ['-ar', '48000', '-ac', '2', '-c:a', 'pcm_s16le', '-f', 'null', '-'];
    const mix = duckMixArgs({ music: { input: music, startAt: 10 }, voice: { input: voice, duration: 30 }, levelDb: -15, fadeMs: 500 });
    const seconds = 31;
    const plain = ['-ss', '10', '-i', music, '-t', String(seconds), '-af', 'aresample=48000'];
    const runs = 3;
    let mixCpu = Infinity;
    let plainCpu = Infinity;
    for (let i = 0; i < runs; i++) {
      mixCpu = Math.min(mixCpu, timed([...mix, ...out]) / seconds);
      plainCpu = Math.min(plainCpu, timed([...plain, ...out]) / seconds);
    }
    console.log('\nDucked announcement mix (ffmpeg, best of 3)');
    console.log('| Measurement | CPU s per audio s | ratio to baseline | Goal |');
    console.log('|---|---|---|---|');
    console.log(`| plain decode of the music (one feed today) [baseline] | ${plainCpu.toFixed(4)} | 1.0 | |`);
    console.log(
      `| duck mix (music + voice, fades) | ${mixCpu.toFixed(4)} | ${(mixCpu / Math.max(plainCpu, 1e-4)).toFixed(1)} | < 0.05 (10 streams < 50% of a core) |`,
    );
    console.log(`| 10 duck mixes at once, share of one core | ${(mixCpu * 10 * 100).toFixed(1)}% | | < 50% |`);

    // 1b. What a Snapcast feed runs in process (no ffmpeg): the music's loudness meter, on
    // all along, and the DuckMixer during an announcement; per second of 48 kHz stereo s16.
    const { DuckMixer } = require('../dist/audio/duck-mix.js');
    const { MusicLoudness } = require('../dist/audio/music-loudness.js');
    const format = { rate: 48000, bits: 16, channels: 2 };
    const chunk = Buffer.alloc((48000 / 50) * 4); // 20 ms, as the feed hands it over
    for (let i = 0; i < chunk.length / 2; i++) chunk.writeInt16LE(Math.round(8000 * Math.sin(i / 7)), i * 2);
    const audioS = 30;
    const perSecond = (fn) => {
      let best = Infinity;
      for (let r = 0; r < 3; r++) {
        const t0 = process.cpuUsage();
        for (let i = 0; i < audioS * 50; i++) fn();
        const u = process.cpuUsage(t0);
        best = Math.min(best, (u.user + u.system) / 1e6 / audioS);
      }
      return best;
    };
    const meter = new MusicLoudness(format);
    const meterCpu = perSecond(() => meter.push(chunk));
    const mixer = new DuckMixer({ format, levelDb: -15, fadeMs: 500, musicLufs: meter.lufs, maxVoiceBytes: Number.MAX_SAFE_INTEGER });
    for (let i = 0; i < audioS * 3 * 50; i++) mixer.pushVoice(chunk);
    const mixerCpu = perSecond(() => mixer.process(chunk));
    const both = meterCpu + mixerCpu;
    console.log('\nIn-process mix on a Snapcast feed (48 kHz stereo s16, best of 3)');
    console.log('| Measurement | CPU s per audio s | Goal |');
    console.log('|---|---|---|');
    console.log(`| music loudness meter (MusicLoudness, K-weighted, 3 s short-term) | ${meterCpu.toFixed(4)} | |`);
    console.log(`| DuckMixer (envelope + voice placed on the music's loudness) | ${mixerCpu.toFixed(4)} | |`);
    console.log(`| 10 ducked streams at once (meter + mixer), share of one core | ${(both * 10 * 100).toFixed(1)}% | < 50% |`);

    // 1c. The hub's CPU per ducked stream vs a plain play of the same stream.
    const { PcmDecoder } = require('../dist/audio/pcm-decoder.js');
    const { DuckVoice } = require('../dist/audio/duck-voice.js');
    const silent = createLogger({ level: 'silent' });
    const tick = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100;
    /** CPU seconds of this process's reaped children (the ffmpeg decodes). */
    const childCpu = () => {
      const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
      return (Number(f[13]) + Number(f[14])) / tick;
    };
    const decodeOpts = (url) => ({ url, format, ffmpegPath: 'ffmpeg', startTimeoutMs: 20_000, what: 'bench', logger: silent });
    /** One stream of `seconds` of music (and a 30 s ducked voice on it): hub CPU seconds per audio second. */
    async function streamCpu(ducked) {
      const c0 = process.cpuUsage();
      const k0 = childCpu();
      const meter = new MusicLoudness(format);
      const mix = ducked ? new DuckMixer({ format, levelDb: -15, fadeMs: 500, musicLufs: meter.lufs, maxVoiceBytes: 4 * 1024 * 1024 }) : undefined;
      const voiceOver = new Promise((resolve) => {
        if (!mix) return resolve();
        const endVoice = mix.endVoice.bind(mix);
        mix.endVoice = () => {
          endVoice();
          resolve();
        };
        new DuckVoice({ url: voice, format, ffmpegPath: 'ffmpeg', startTimeoutMs: 20_000, logger: silent }).start(mix);
      });
      const music48 = new PcmDecoder({ ...decodeOpts(music), startAt: 10 });
      let bytes = 0;
      const limit = seconds * format.rate * 4;
      await new Promise((resolve, reject) => {
        music48
          .start({
            data: (chunk) => {
              if (bytes >= limit) return true;
              bytes += chunk.length;
              meter.push(chunk);
              if (mix) mix.process(chunk);
              if (bytes >= limit) {
                music48.stop();
                resolve();
              }
              return true;
            },
            end: () => resolve(),
          })
          .catch(reject);
      });
      await voiceOver;
      // The decodes' ffmpeg processes reaped, so their CPU shows in cutime/cstime.
      await new Promise((r) => setTimeout(r, 300));
      const u = process.cpuUsage(c0);
      return ((u.user + u.system) / 1e6 + (childCpu() - k0)) / seconds;
    }
    let plainHub = Infinity;
    let duckedHub = Infinity;
    for (let i = 0; i < runs; i++) {
      plainHub = Math.min(plainHub, await streamCpu(false));
      duckedHub = Math.min(duckedHub, await streamCpu(true));
    }
    console.log(`\nThe hub's CPU per stream: a ducked announcement on it vs a plain play of the same music (${seconds} s, best of ${runs})`);
    console.log('| Measurement | CPU s per audio s | ratio to baseline | Goal |');
    console.log('|---|---|---|---|');
    console.log(`| plain play: music decode (ffmpeg) + loudness meter [baseline] | ${plainHub.toFixed(4)} | 1.0 | |`);
    console.log(
      `| ducked: + the voice's decode (DuckVoice) + DuckMixer | ${duckedHub.toFixed(4)} | ${(duckedHub / Math.max(plainHub, 1e-4)).toFixed(2)} | 10 streams < 50% of a core |`,
    );
    console.log(`| 10 ducked streams at once, share of one core | ${(duckedHub * 10 * 100).toFixed(1)}% | | < 50% |`);

    // 2. Clip render time, uncached.
    const clips = new AnnouncementClips({ cacheDir: join(dir, 'clips'), logger: createLogger({ level: 'silent' }) });
    const chime = await ensureChime(join(dir, 'chime.wav'));
    const speak = [];
    const render = [];
    for (let i = 0; i < N; i++) {
      const file = join(dir, `tts-${i}.wav`);
      let t = performance.now();
      execFileSync('espeak-ng', ['-w', file, `Announcement number ${i}, dinner is ready`]);
      speak.push(performance.now() - t);
      t = performance.now();
      await clips.render([{ file: chime }, { file }]);
      render.push(performance.now() - t);
    }
    console.log(`\nAnnouncement clip (chime + gap + speech at -16 LUFS), uncached, ${N} texts`);
    console.log('| Measurement | p50 ms | p95 ms | p95 / baseline p95 |');
    console.log('|---|---|---|---|');
    console.log(`| espeak-ng synthesis of the text [baseline] | ${pct(speak, 50).toFixed(0)} | ${pct(speak, 95).toFixed(0)} | 1.0 |`);
    console.log(
      `| clip render (in process: loudness, join) | ${pct(render, 50).toFixed(0)} | ${pct(render, 95).toFixed(0)} | ${(pct(render, 95) / pct(speak, 95)).toFixed(1)} |`,
    );
    writeFileSync(join(dir, 'done'), '');
  } catch (e) {
    failed = true;
    console.error(e);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}

main();

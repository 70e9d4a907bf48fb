#!/usr/bin/env node
'use strict';
/**
 * Ducked announcements on Snapcast (issue 21), part of `npm run bench` (needs dist/ from npm
 * run build, .bench-build/ from tsc -p tsconfig.bench.json, snapserver, snapclient, ffmpeg):
 *
 *  1. Announce-to-first-speech on a real snapclient, Mode duck against Mode interrupt (the
 *     baseline), alternating rounds (test/drivers/snapcast/duck-latency.ts). Goal: duck no slower.
 *  2. CPU of 10 ducked streams at once: what ducking adds to a feed is the mix (DuckMixer,
 *     src/audio/duck-mix.ts, run here in-process over 30 s of 48 kHz stereo PCM per stream,
 *     process.cpuUsage) and the decode of the voice (ffmpeg, /usr/bin/time). The music's own
 *     decode runs whether or not the hub ducks, and is the baseline. Goal: 10 streams under
 *     50 % of one core.
 *
 * Exit code 0 whatever the figures say; 1 if a measurement failed.
 */
const { execFileSync, spawnSync } = require('node:child_process');
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { sine, stereo } = require('./helpers');

const ROUNDS = Number(process.env.BENCH_DUCK_ROUNDS || 4);
const STREAMS = 10;
const SECONDS = 30;
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
};

/** CPU seconds (user + sys) of one ffmpeg run. */
function ffmpegCpu(args) {
  const r = spawnSync('/usr/bin/time', ['-f', 'CPU %U %S', 'ffmpeg', '-v', 'error', '-nostdin', '-y', ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ffmpeg failed: ${r.stderr.slice(-300)}`);
  const m = /CPU ([\d.]+) ([\d.]+)/.exec(r.stderr);
  return Number(m[1]) + Number(m[2]);
}

function cpu() {
  const { DuckMixer } = require('../dist/audio/duck-mix.js');
  const dir = mkdtempSync(join(tmpdir(), 'speakerhub-bench-duck-'));
  try {
    const format = { rate: 48000, bits: 16, channels: 2 };
    const bytes = SECONDS * format.rate * 4;
    // The music: a tone, as the feed hands it over (10 ms pieces at a time, as the pacer does).
    const music = stereo(sine(bytes / 4 / format.rate, 440, format.rate, 8000));
    const voice = Buffer.from(music);
    const piece = format.rate * 4 * 0.01;
    const before = process.cpuUsage();
    for (let s = 0; s < STREAMS; s++) {
      const mixer = new DuckMixer({ format, levelDb: -15, fadeMs: 500, maxVoiceBytes: bytes + 1 });
      mixer.pushVoice(voice);
      mixer.endVoice();
      for (let o = 0; o < bytes; o += piece) mixer.process(music.subarray(o, o + piece));
    }
    const used = process.cpuUsage(before);
    const mixPerStream = (used.user + used.system) / 1e6 / STREAMS / SECONDS;
    // The voice's decode, per stream: a 30 s speech-like clip (22 kHz mono WAV, as TTS renders) to the stream's PCM.
    const clip = join(dir, 'voice.wav');
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', `sine=frequency=1000:duration=${SECONDS}`, '-ar', '22050', '-ac', '1', clip]);
    const music44 = join(dir, 'music.mp3');
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', `sine=frequency=440:duration=${SECONDS}`, '-ar', '44100', '-ac', '2', music44]);
    const out = ['-f', 's16le', '-ar', '48000', '-ac', '2', '-'];
    let voiceDecode = Infinity;
    let musicDecode = Infinity;
    for (let i = 0; i < 3; i++) {
      voiceDecode = Math.min(voiceDecode, ffmpegCpu(['-i', clip, ...out.slice(0, -1), '/dev/null']) / SECONDS);
      musicDecode = Math.min(musicDecode, ffmpegCpu(['-i', music44, ...out.slice(0, -1), '/dev/null']) / SECONDS);
    }
    return { mixPerStream, voiceDecode, musicDecode };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  let failed = false;
  try {
    const c = cpu();
    const perStream = c.mixPerStream + c.voiceDecode;
    console.log(`\nDucked streams: CPU (${STREAMS} streams, ${SECONDS} s of 48 kHz stereo each)`);
    console.log('| Measurement | CPU s per audio s, one stream | share of one core, 10 streams | Goal |');
    console.log('|---|---|---|---|');
    console.log(
      `| the music's own decode (mp3 → PCM; runs with or without ducking) [baseline] | ${c.musicDecode.toFixed(4)} | ${(c.musicDecode * 1000).toFixed(1)}% | |`,
    );
    console.log(`| the mix (DuckMixer, in the hub) | ${c.mixPerStream.toFixed(4)} | ${(c.mixPerStream * 1000).toFixed(1)}% | |`);
    console.log(`| the voice's decode (ffmpeg, not paced) | ${c.voiceDecode.toFixed(4)} | ${(c.voiceDecode * 1000).toFixed(1)}% | |`);
    console.log(`| what ducking adds (mix + voice decode) | ${perStream.toFixed(4)} | ${(perStream * 1000).toFixed(1)}% | < 50% |`);
  } catch (e) {
    failed = true;
    console.error('duck CPU failed:', e);
  }
  try {
    const { measureDuckLatency } = require(join(__dirname, '..', '.bench-build', 'test', 'drivers', 'snapcast', 'duck-latency.js'));
    const r = await measureDuckLatency({ rounds: ROUNDS });
    const d = median(r.duck);
    const i = median(r.interrupt);
    console.log(`\nAnnounce to first speech heard on a snapclient (median of ${ROUNDS} rounds each, alternating)`);
    console.log('| Mode | median ms | rounds ms | ratio to interrupt | Goal |');
    console.log('|---|---|---|---|---|');
    console.log(`| interrupt [baseline] | ${i.toFixed(0)} | ${r.interrupt.map((x) => x.toFixed(0)).join(', ')} | 1.00 | |`);
    console.log(`| duck | ${d.toFixed(0)} | ${r.duck.map((x) => x.toFixed(0)).join(', ')} | ${(d / i).toFixed(2)} | <= 1.00 |`);
  } catch (e) {
    failed = true;
    console.error('duck latency failed:', e);
  }
  process.exit(failed ? 1 : 0);
}

main();

'use strict';
/**
 * TTS engine benchmark (chained in npm run bench; needs dist/ from npm run build, espeak-ng and
 * festival with festvox-us-slt-hts: scripts/install-test-deps.sh). The festival provider
 * against espeak-ng, the baseline, in the same run, alternating, each run a new text (no cache):
 *
 *  1. time to first audio: the engine started → its first byte of WAV on stdout (festival
 *     through the provider's own runner, espeak-ng with --stdout), for a 10-word sentence;
 *  2. time to a complete file: provider.synthesize() as the hub's TTS cache calls it (the
 *     announcement clip needs the whole text), for the same sentence;
 *  3. the audio's length, so the two are comparable as a real-time factor.
 *
 * p50/p95 of N runs each (BENCH_TTS_N, default 15) and festival ÷ espeak for each figure.
 * Exit code 0 whatever the figures say; 1 if anything failed.
 */
const { mkdtempSync, readFileSync, rmSync } = require('node:fs');
const { cpus, loadavg, tmpdir } = require('node:os');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');

const N = Number(process.env.BENCH_TTS_N || 15);
const WORDS = ['kitchen', 'garden', 'garage', 'hallway', 'attic', 'basement', 'office', 'porch', 'bedroom', 'cellar'];

/** A new 10-word sentence per run, so no engine serves anything twice. */
const sentence = (i) => `The parcel for flat ${i} is waiting in the ${WORDS[i % WORDS.length]}.`;

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};
const fmt = (x) => (Number.isFinite(x) ? x.toFixed(0) : 'n/a');

function wavSeconds(wav) {
  const rate = wav.readUInt32LE(24);
  const blockAlign = wav.readUInt16LE(32);
  return (wav.length - 44) / (rate * blockAlign);
}

async function main() {
  const { FestivalProvider } = require('../dist/tts/festival.js');
  const { EspeakProvider } = require('../dist/tts/espeak.js');
  const { runChild } = require('../dist/tts/child-process.js');
  const { textForEngine } = require('../dist/tts/spoken-text.js');
  const dir = mkdtempSync(join(tmpdir(), 'speakerhub-bench-tts-'));
  const festival = new FestivalProvider();
  const espeak = new EspeakProvider({ mode: 'binary' });
  const words = sentence(1)
    .replace(/[^\w\s]/g, '')
    .split(/\s+/).length;
  const figures = { espeak: { first: [], file: [], seconds: [] }, festival: { first: [], file: [], seconds: [] } };

  const engines = {
    async espeak(i) {
      const text = textForEngine(sentence(i), 'en', 'espeak');
      const r = await runChild('espeak-ng', ['--stdin', '-b', '1', '-v', 'en', '--stdout'], text, 30_000, { maxStdoutBytes: 16 << 20 });
      if (r.code !== 0 || !r.stdout?.length) throw new Error(`espeak-ng failed: ${r.stderr}`);
      figures.espeak.first.push(r.firstOutputMs);
      const out = join(dir, `e${i}.wav`);
      const t0 = performance.now();
      await espeak.synthesize(sentence(i + 1000), 'en', out);
      figures.espeak.file.push(performance.now() - t0);
      figures.espeak.seconds.push(wavSeconds(readFileSync(out)));
    },
    async festival(i) {
      const r = await festival.render(textForEngine(sentence(i), 'en', 'festival'), festival.voiceFor('en'));
      figures.festival.first.push(r.firstOutputMs);
      const out = join(dir, `f${i}.wav`);
      const t0 = performance.now();
      await festival.synthesize(sentence(i + 1000), 'en', out);
      figures.festival.file.push(performance.now() - t0);
      figures.festival.seconds.push(wavSeconds(readFileSync(out)));
    },
  };

  // One of each first, unmeasured: the programs and voices into the page cache.
  await engines.espeak(-1);
  await engines.festival(-1);
  for (const k of Object.keys(figures)) for (const f of Object.values(figures[k])) f.length = 0;
  for (let i = 0; i < N; i++) {
    // Alternating order, so neither engine always runs on a machine the other just warmed.
    const order = i % 2 ? ['festival', 'espeak'] : ['espeak', 'festival'];
    for (const name of order) await engines[name](i);
  }
  rmSync(dir, { recursive: true, force: true });

  console.log(`\n== TTS engines: festival (cmu_us_slt_arctic_hts) vs espeak-ng, ${words}-word sentence, ${N} runs each ==`);
  console.log(`machine: ${cpus().length} cores, load ${loadavg()[0].toFixed(2)}`);
  const row = (label, key, p) => {
    const e = pct(figures.espeak[key], p);
    const f = pct(figures.festival[key], p);
    console.log(`${label.padEnd(34)} espeak ${fmt(e).padStart(5)} ms   festival ${fmt(f).padStart(5)} ms   festival/espeak ${(f / e).toFixed(1)}x`);
  };
  row('time to first audio p50', 'first', 50);
  row('time to first audio p95', 'first', 95);
  row('complete file (provider) p50', 'file', 50);
  row('complete file (provider) p95', 'file', 95);
  const speech = (k) => pct(figures[k].seconds, 50);
  console.log(
    `speech length p50                  espeak ${speech('espeak').toFixed(2)} s   festival ${speech('festival').toFixed(2)} s` +
      `   real-time factor: espeak ${(pct(figures.espeak.file, 50) / 1000 / speech('espeak')).toFixed(3)}, festival ${(pct(figures.festival.file, 50) / 1000 / speech('festival')).toFixed(3)}`,
  );
  const faster = pct(figures.festival.first, 95) <= pct(figures.espeak.first, 95);
  console.log(`default provider: ${faster ? 'festival is as fast as espeak' : 'espeak (it starts faster)'}`);
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});

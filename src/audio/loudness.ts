import type { Pcm } from './pcm-wav';

/**
 * EBU R128 loudness in process (ITU-R BS.1770-4), and bringing audio to a target loudness
 * with a true-peak-safe limiter. In process because announcements need it on the request
 * path: two ffmpeg runs (measure, then gain and limit) cost ~200 ms per clip on the hub's
 * machine, these functions a few milliseconds for a spoken sentence.
 *
 * Mono and stereo only (every channel weighs 1; the caller downmixes anything wider).
 * Checked against ffmpeg's ebur128 filter by test/audio/loudness.lab.test.ts.
 */

export interface LoudnessTarget {
  /** Integrated loudness, LUFS. */
  integrated: number;
  /** True-peak ceiling, dBTP. */
  truePeak: number;
}

export interface Loudness {
  /** LUFS; -Infinity when every block is gated (silence, or shorter than 400 ms). */
  integrated: number;
  /** dBTP, by 4x oversampling; -Infinity for digital silence. */
  truePeak: number;
}

/** The K-weighting pre-filter (high shelf) and RLB high-pass as biquad coefficients for a sample rate. */
export function kWeighting(rate: number): Array<{ b: [number, number, number]; a: [number, number] }> {
  // The BS.1770 filters are specified at 48 kHz; these are their analogue prototypes, mapped
  // to any rate by the bilinear transform (the same constants libebur128 uses).
  let f0 = 1681.974450955533;
  const G = 3.999843853973347;
  let Q = 0.7071752369554196;
  let K = Math.tan((Math.PI * f0) / rate);
  const Vh = 10 ** (G / 20);
  const Vb = Vh ** 0.4996667741545416;
  let a0 = 1 + K / Q + K * K;
  const shelf = {
    b: [(Vh + (Vb * K) / Q + K * K) / a0, (2 * (K * K - Vh)) / a0, (Vh - (Vb * K) / Q + K * K) / a0] as [number, number, number],
    a: [(2 * (K * K - 1)) / a0, (1 - K / Q + K * K) / a0] as [number, number],
  };
  f0 = 38.13547087602444;
  Q = 0.5003270373238773;
  K = Math.tan((Math.PI * f0) / rate);
  a0 = 1 + K / Q + K * K;
  const highPass = { b: [1, -2, 1] as [number, number, number], a: [(2 * (K * K - 1)) / a0, (1 - K / Q + K * K) / a0] as [number, number] };
  return [shelf, highPass];
}

/** Sum of K-weighted squares per 100 ms step, all channels added (BS.1770 weights 1 for L, R, C). */
function stepEnergies(pcm: Pcm): { energy: Float64Array; count: Float64Array } {
  const frames = pcm.channels[0]?.length ?? 0;
  const steps = Math.floor((frames * 10) / pcm.rate);
  const energy = new Float64Array(steps);
  const count = new Float64Array(steps);
  const [f1, f2] = kWeighting(pcm.rate);
  for (let s = 0; s < steps; s++) count[s] = Math.round(((s + 1) * pcm.rate) / 10) - Math.round((s * pcm.rate) / 10);
  for (const x of pcm.channels) {
    // Direct form I, both sections in one loop; doubles for the state.
    let x1 = 0;
    let x2 = 0;
    let y1 = 0;
    let y2 = 0;
    let z1 = 0;
    let z2 = 0;
    for (let s = 0; s < steps; s++) {
      const from = Math.round((s * pcm.rate) / 10);
      const to = Math.round(((s + 1) * pcm.rate) / 10);
      let sum = 0;
      for (let i = from; i < to; i++) {
        const x0 = x[i];
        const y0 = f1.b[0] * x0 + f1.b[1] * x1 + f1.b[2] * x2 - f1.a[0] * y1 - f1.a[1] * y2;
        x2 = x1;
        x1 = x0;
        const z0 = y0 - 2 * y1 + y2 - f2.a[0] * z1 - f2.a[1] * z2;
        y2 = y1;
        y1 = y0;
        z2 = z1;
        z1 = z0;
        sum += z0 * z0;
      }
      energy[s] += sum;
    }
  }
  return { energy, count };
}

const blockLoudness = (meanSquare: number) => -0.691 + 10 * Math.log10(meanSquare);

/**
 * Integrated loudness (LUFS): 400 ms blocks every 100 ms (75 % overlap), absolute gate at
 * -70 LUFS, relative gate 10 LU below the absolute-gated mean. -Infinity if nothing passes.
 */
export function integratedLoudness(pcm: Pcm): number {
  const { energy, count } = stepEnergies(pcm);
  const blocks: number[] = [];
  for (let j = 0; j + 4 <= energy.length; j++) {
    const e = energy[j] + energy[j + 1] + energy[j + 2] + energy[j + 3];
    const n = count[j] + count[j + 1] + count[j + 2] + count[j + 3];
    blocks.push(e / n);
  }
  const absGated = blocks.filter((z) => z > 0 && blockLoudness(z) > -70);
  if (!absGated.length) return -Infinity;
  const relative = blockLoudness(mean(absGated)) - 10;
  const gated = absGated.filter((z) => blockLoudness(z) > relative);
  return blockLoudness(mean(gated));
}

function mean(xs: number[]): number {
  let s = 0;
  for (const x of xs) s += x;
  return s / xs.length;
}

// 4x oversampling for the true peak: windowed-sinc (Lanczos, 6 lobes) interpolation at the
// three points between two samples; 12 taps per phase, each phase normalised to unity gain.
const TAPS = 12;
const HALF = TAPS / 2;
const PHASES: Float64Array[] = [1, 2, 3].map((p) => {
  const h = new Float64Array(TAPS);
  const frac = p / 4;
  let sum = 0;
  for (let k = 0; k < TAPS; k++) {
    const t = k - (HALF - 1) - frac; // taps at x[n-5] .. x[n+6], the point at n + frac
    h[k] = sinc(t) * sinc(t / HALF);
    sum += h[k];
  }
  for (let k = 0; k < TAPS; k++) h[k] /= sum;
  return h;
});
// Named once here, not destructured per call: interSamplePeak runs for about half the samples,
// and before V8 optimises it (the first clip after start, on the announcement's path) an array
// destructuring per call made truePeak of 3 s of speech take ~20 ms alone, ~100 ms on a busy machine.
const [H1, H2, H3] = PHASES;

function sinc(t: number): number {
  if (t === 0) return 1;
  const x = Math.PI * t;
  return Math.sin(x) / x;
}

/** The largest of the interpolated values between x[n] and x[n+1] (absolute). */
function interSamplePeak(x: Float32Array, n: number): number {
  const first = n - (HALF - 1);
  if (first < 0 || first + TAPS > x.length) return interSamplePeakAtEdge(x, n);
  const h1 = H1;
  const h2 = H2;
  const h3 = H3;
  let y1 = 0;
  let y2 = 0;
  let y3 = 0;
  for (let k = 0; k < TAPS; k++) {
    const v = x[first + k];
    y1 += h1[k] * v;
    y2 += h2[k] * v;
    y3 += h3[k] * v;
  }
  return Math.max(Math.abs(y1), Math.abs(y2), Math.abs(y3));
}

function interSamplePeakAtEdge(x: Float32Array, n: number): number {
  let peak = 0;
  for (const h of PHASES) {
    let y = 0;
    for (let k = 0; k < TAPS; k++) {
      const i = n + k - (HALF - 1);
      if (i >= 0 && i < x.length) y += h[k] * x[i];
    }
    peak = Math.max(peak, Math.abs(y));
  }
  return peak;
}

/**
 * Per sample, the peak (absolute, linear) of every channel at that sample and between it and
 * the next (4x oversampled). Interpolation is only worth it where the signal comes within
 * 6 dB of `floor`: an inter-sample peak does not exceed its neighbours by more in real audio.
 */
function* peakEnvelope(pcm: Pcm, floor: number): Generator<void, Float32Array> {
  const frames = pcm.channels[0]?.length ?? 0;
  const env = new Float32Array(frames);
  const near = floor / 2;
  for (const x of pcm.channels) {
    for (let n = 0; n < frames; n++) {
      let a = Math.abs(x[n]);
      if (n + 1 < frames && (a > near || Math.abs(x[n + 1]) > near)) a = Math.max(a, interSamplePeak(x, n));
      if (a > env[n]) env[n] = a;
      if (n % PEAK_SLICE === PEAK_SLICE - 1) yield;
    }
  }
  return env;
}

/**
 * Samples the interpolating passes (truePeak, peakEnvelope) go through between two of their
 * steps: the heaviest passes of a normalisation, they let the event loop in every slice
 * (normaliseLoudnessAsync) rather than once per pass.
 */
const PEAK_SLICE = 16_384;

/** True peak, dBTP (4x oversampled; interpolated only within 6 dB of the sample peak, see peakEnvelope). */
export function truePeak(pcm: Pcm): number {
  return run(truePeakSteps(pcm));
}

function* truePeakSteps(pcm: Pcm): Generator<void, number> {
  let sample = 0;
  for (const x of pcm.channels) for (let i = 0; i < x.length; i++) sample = Math.max(sample, Math.abs(x[i]));
  if (sample === 0) return -Infinity;
  const near = sample / 2;
  let peak = sample;
  for (const x of pcm.channels) {
    for (let n = 0; n + 1 < x.length; n++) {
      if (Math.abs(x[n]) > near || Math.abs(x[n + 1]) > near) peak = Math.max(peak, interSamplePeak(x, n));
      if (n % PEAK_SLICE === PEAK_SLICE - 1) yield;
    }
  }
  return 20 * Math.log10(peak);
}

/** A generator's result, run to its end in one go. */
function run<T>(steps: Generator<void, T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

export function measureLoudness(pcm: Pcm): Loudness {
  return { integrated: integratedLoudness(pcm), truePeak: truePeak(pcm) };
}

export interface NormaliseResult {
  /** Before the gain. */
  measured: Loudness;
  /** The gain applied, dB (0 for silence). */
  gainDb: number;
  /** Whether the limiter had to act. */
  limited: boolean;
  /** The result's integrated loudness (LUFS). */
  integrated: number;
}

/** Gain is bounded: a near-silent file must not become +40 dB of noise. */
const MAX_GAIN_DB = 40;
/** The limiter aims this far under the ceiling: what its smooth gain lets through between samples. */
const LIMIT_MARGIN_DB = 0.3;

/**
 * The samples brought to the target integrated loudness (new arrays; `pcm` is left as it is).
 * Where the gain would push the true peak over the ceiling a look-ahead limiter (5 ms attack,
 * 50 ms release) holds it there, and the level the limiter took is given back by raising the
 * gain and limiting again, a few rounds, so the result lands on the target. Silence (every
 * block gated) gets no gain.
 */
export function normaliseLoudness(pcm: Pcm, target: LoudnessTarget): Normalised {
  return run(normaliseSteps(pcm, target));
}

/**
 * normaliseLoudness, letting the event loop run between its passes: each pass over a minute of
 * speech takes some milliseconds warm, over ten minutes of stereo media a few hundred, and
 * the hub must go on serving streams meanwhile. Short clips yield too: the first clip after
 * start runs cold (not yet optimised by V8) on the announcement's path, and all its passes in
 * one go measured 100-150 ms on a busy 2-core machine, longer than the PCM a Snapcast feed
 * kept ahead of snapserver (50 ms then, src/drivers/snapcast/feeder.ts): snapserver re-synced,
 * and every client of the music skipped ~100 ms (issue 30). The interpolating passes, the
 * heaviest, yield every PEAK_SLICE samples too. A yield costs microseconds on an idle loop.
 */
export async function normaliseLoudnessAsync(pcm: Pcm, target: LoudnessTarget): Promise<Normalised> {
  const steps = normaliseSteps(pcm, target);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

type Normalised = { pcm: Pcm; result: NormaliseResult };

/** The work of normaliseLoudness, one pass over the samples per step. */
function* normaliseSteps(pcm: Pcm, target: LoudnessTarget): Generator<void, Normalised> {
  const integrated0 = integratedLoudness(pcm);
  yield;
  const measured = { integrated: integrated0, truePeak: yield* truePeakSteps(pcm) };
  yield;
  if (!Number.isFinite(measured.integrated)) {
    return { pcm: copy(pcm), result: { measured, gainDb: 0, limited: false, integrated: measured.integrated } };
  }
  let gainDb = clampGain(target.integrated - measured.integrated);
  if (measured.truePeak + gainDb <= target.truePeak) {
    // Linear all the way: the result's loudness is the measurement plus the gain, exactly.
    const out = scaled(pcm, 10 ** (gainDb / 20));
    return { pcm: out, result: { measured, gainDb, limited: false, integrated: measured.integrated + gainDb } };
  }
  const ceiling = 10 ** ((target.truePeak - LIMIT_MARGIN_DB) / 20);
  // Where the samples may come near the ceiling, with a margin for the rounds that raise the gain.
  const env = yield* peakEnvelope(pcm, ceiling * 10 ** (-Math.min(MAX_GAIN_DB, gainDb + 6) / 20));
  yield;
  const buffers = pcm.channels.map((x) => new Float32Array(x.length));
  let out = pcm;
  let integrated = -Infinity;
  // The limiter eats part of any extra gain, so the next gain is found by the secant through
  // the last two rounds (about 3 rounds to 0.1 LU, where adding the miss took 5 and more).
  let last: { gain: number; lufs: number } | undefined;
  for (let round = 0; round < 6; round++) {
    out = limited(pcm, env, 10 ** (gainDb / 20), ceiling, buffers);
    yield;
    integrated = integratedLoudness(out);
    yield;
    const miss = target.integrated - integrated;
    if (!Number.isFinite(miss) || Math.abs(miss) < 0.1 || gainDb >= MAX_GAIN_DB) break;
    const slope = last && gainDb !== last.gain ? (integrated - last.lufs) / (gainDb - last.gain) : 1;
    last = { gain: gainDb, lufs: integrated };
    // A flat or odd slope (heavy limiting) falls back to adding the miss, capped at 12 dB a round.
    gainDb = clampGain(gainDb + Math.min(12, miss / (slope > 0.05 && slope <= 1.5 ? slope : 1)));
  }
  // The limiter's envelope is smooth, so what gets past it between samples is tiny; scale off any that did.
  const tp = yield* truePeakSteps(out);
  yield;
  if (tp > target.truePeak) {
    const fix = 10 ** ((target.truePeak - tp) / 20);
    for (const x of out.channels) for (let i = 0; i < x.length; i++) x[i] *= fix;
    integrated += target.truePeak - tp;
  }
  return { pcm: out, result: { measured, gainDb, limited: true, integrated } };
}

function clampGain(db: number): number {
  return Math.max(-MAX_GAIN_DB, Math.min(MAX_GAIN_DB, db));
}

function copy(pcm: Pcm): Pcm {
  return { rate: pcm.rate, channels: pcm.channels.map((x) => Float32Array.from(x)) };
}

function scaled(pcm: Pcm, factor: number): Pcm {
  return {
    rate: pcm.rate,
    channels: pcm.channels.map((x) => {
      const y = new Float32Array(x.length);
      for (let i = 0; i < x.length; i++) y[i] = x[i] * factor;
      return y;
    }),
  };
}

/**
 * `pcm` times `gain`, with a gain reduction wherever env * gain would exceed `ceiling`.
 * The reduction never lets a sample through: per sample the needed factor r[n]; the minimum
 * over the next L samples (look-ahead); a one-pole release back towards 1 (never above that
 * minimum); then a moving average over L samples. Every value averaged for sample n is a
 * minimum over a window holding n, so the average is at most r[n]; and the average makes the
 * attack a smooth L-sample ramp instead of a step (which would click).
 */
function limited(pcm: Pcm, env: Float32Array, gain: number, ceiling: number, out: Float32Array[]): Pcm {
  const L = Math.max(1, Math.round(pcm.rate * 0.005));
  const h = heldReduction(env, ceiling / gain, L, 1 - Math.exp(-1 / (pcm.rate * 0.05)));
  for (let c = 0; c < out.length; c++) applyAveraged(pcm.channels[c], h, L, gain, out[c]);
  return { rate: pcm.rate, channels: out };
}

/**
 * For window starts s = 0 .. n+L-2 (sample s-(L-1)): the smallest factor any sample in the
 * window [s-(L-1), s] needs to stay under `over` (a monotonic deque), with a one-pole release.
 */
function heldReduction(env: Float32Array, over: number, L: number, release: number): Float32Array {
  const n = env.length;
  // need[i + L - 1] is the factor sample i needs; 1 before the start and after the end.
  const need = new Float32Array(n + 2 * L).fill(1);
  let any = false;
  for (let i = 0; i < n; i++) {
    if (env[i] > over) {
      need[i + L - 1] = over / env[i];
      any = true;
    }
  }
  const h = new Float32Array(n + L - 1);
  if (!any) return h.fill(1);
  // Only factors under 1 enter the deque: a window without one has a minimum of 1.
  const deque = new Int32Array(n + 2 * L);
  let head = 0;
  let tail = 0;
  let next = 0; // next index into need to look at
  let held = 1;
  for (let s = 0; s < n + L - 1; s++) {
    const last = s + L - 1; // the window is need[s .. s+L-1]
    for (; next <= last; next++) {
      const v = need[next];
      if (v >= 1) continue;
      while (tail > head && need[deque[tail - 1]] >= v) tail--;
      deque[tail++] = next;
    }
    while (head < tail && deque[head] < s) head++;
    const m = head < tail ? need[deque[head]] : 1;
    const up = held + (1 - held) * release;
    held = m < up ? m : up;
    h[s] = held;
  }
  return h;
}

/** out[i] = x[i] * gain * (the mean of h over [i, i+L-1]). */
function applyAveraged(x: Float32Array, h: Float32Array, L: number, gain: number, out: Float32Array): void {
  const n = x.length;
  let sum = 0;
  for (let i = 0; i < L - 1; i++) sum += h[i];
  const k = gain / L;
  for (let at = 0; at < n; at++) {
    sum += h[at + L - 1];
    if (at > 0) sum -= h[at - 1];
    out[at] = x[at] * sum * k;
  }
}

let warmed = false;

/**
 * Runs the measurement and the limiter once on a second of synthetic audio, soon and once per
 * process: V8 compiles these loops on first use, which made the first announcement after a
 * start ~100 ms slower than the next ones.
 */
export function warmUpLoudness(): void {
  if (warmed) return;
  warmed = true;
  setTimeout(() => {
    const rate = 22050;
    const x = new Float32Array(rate);
    for (let i = 0; i < x.length; i++) x[i] = 0.5 * Math.sin((2 * Math.PI * 440 * i) / rate) * (i % 2205 < 50 ? 1.9 : 1);
    normaliseLoudness({ rate, channels: [x] }, { integrated: -10, truePeak: -1 });
  }, 0).unref();
}

/**
 * Tones made and measured, for every lab that plays audio and captures what a speaker played:
 * each zone (or the music, the chime, the speech) plays its own tone, so a narrow band filter
 * (Goertzel) per short window tells which one a player hears, and a window where its own tone
 * (or any sound: RMS) is low is a gap. Over plain mono samples so that every capture fits
 * (leftChannel() takes one channel of an interleaved s16le capture).
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';

/** Mono 16-bit samples of a sine at `hz`; `envelope(t)` (t in seconds) scales it, e.g. a tremolo so it is not a flat tone. */
export function sine(seconds: number, hz: number, rate: number, amplitude = 12000, envelope?: (t: number) => number): Int16Array {
  const s = new Int16Array(Math.round(seconds * rate));
  for (let i = 0; i < s.length; i++) s[i] = Math.round(amplitude * (envelope ? envelope(i / rate) : 1) * Math.sin((2 * Math.PI * hz * i) / rate));
  return s;
}

/** A WAV header saying "as long as it goes" (0xFFFFFFFF sizes), as streaming writers send: 16-bit mono at `rate`. */
export function liveWavHeader(rate = 22050): Buffer {
  const head = Buffer.alloc(44);
  head.write('RIFF', 0);
  head.writeUInt32LE(0xffffffff, 4);
  head.write('WAVEfmt ', 8);
  head.writeUInt32LE(16, 16);
  head.writeUInt16LE(1, 20); // PCM
  head.writeUInt16LE(1, 22); // mono
  head.writeUInt32LE(rate, 24);
  head.writeUInt32LE(rate * 2, 28);
  head.writeUInt16LE(2, 32);
  head.writeUInt16LE(16, 34);
  head.write('data', 36);
  head.writeUInt32LE(0xffffffff, 40);
  return head;
}

/** The first channel of interleaved s16le frames of `bytesPerFrame` bytes. */
export function leftChannel(pcm: Buffer, bytesPerFrame: number): Int16Array {
  const s = new Int16Array(Math.floor(pcm.length / bytesPerFrame));
  for (let i = 0; i < s.length; i++) s[i] = pcm.readInt16LE(i * bytesPerFrame);
  return s;
}

/** A capture's bytes from `from` (rounded down to a whole frame) to its current end. */
export function captureFrom(file: string, from: number, bytesPerFrame: number): Buffer {
  let size = 0;
  try {
    size = statSync(file).size;
  } catch {
    return Buffer.alloc(0);
  }
  const start = from - (from % bytesPerFrame);
  if (size <= start) return Buffer.alloc(0);
  const pcm = Buffer.alloc(size - start);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, pcm, 0, pcm.length, start);
  } finally {
    closeSync(fd);
  }
  return pcm;
}

/** Amplitude (in sample units, a full-scale sine of amplitude A gives about A) of `hz` in `s[from, from+n)`. */
export function toneAmplitude(s: ArrayLike<number>, rate: number, hz: number, from = 0, n = s.length - from): number {
  const c = 2 * Math.cos((2 * Math.PI * hz) / rate);
  let s1 = 0;
  let s2 = 0;
  for (let i = from; i < from + n; i++) {
    const s0 = s[i] + c * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return (2 * Math.sqrt(Math.max(0, s1 * s1 + s2 * s2 - c * s1 * s2))) / (n || 1);
}

/** Per window of `windowMs`: the amplitude of each of `freqs` in it. */
export function toneWindows(s: Int16Array, rate: number, freqs: number[], windowMs = 50): Record<number, number>[] {
  const n = Math.round((rate * windowMs) / 1000);
  const out: Record<number, number>[] = [];
  for (let i = 0; i + n <= s.length; i += n) out.push(Object.fromEntries(freqs.map((f) => [f, toneAmplitude(s, rate, f, i, n)])));
  return out;
}

/** The one of `freqs` strongest over the samples, with its amplitude. */
export function strongest(s: Int16Array, rate: number, freqs: number[], from = 0, n = s.length - from): { hz: number; amplitude: number } {
  let best = { hz: freqs[0], amplitude: -1 };
  for (const hz of freqs) {
    const amplitude = toneAmplitude(s, rate, hz, from, n);
    if (amplitude > best.amplitude) best = { hz, amplitude };
  }
  return best;
}

/**
 * The windows (index, ms from the start of `s`) where `hz` is below `min`: where a player that
 * should go on playing its zone's tone had a gap. Empty when it played throughout.
 */
export function lowWindows(
  s: Int16Array,
  rate: number,
  hz: number,
  min: number,
  windowMs = 50,
): { index: number; atMs: number; amplitude: number }[] {
  return toneWindows(s, rate, [hz], windowMs)
    .map((w, index) => ({ index, atMs: index * windowMs, amplitude: w[hz] }))
    .filter((w) => w.amplitude < min);
}

/** The frequency of a plain tone, from its zero crossings (no window needed, any pitch). */
export function zeroCrossingHz(s: Int16Array, rate: number): number {
  let crossings = 0;
  for (let i = 1; i < s.length; i++) if (s[i - 1] < 0 !== s[i] < 0) crossings++;
  return crossings / 2 / (s.length / rate);
}

/** Windows of `windowMs` (their indexes) whose RMS is below `min`: gaps, whatever the pitch. */
export function lowRms(s: Int16Array, rate: number, min: number, windowMs = 50): number[] {
  const n = Math.round((rate * windowMs) / 1000);
  const out: number[] = [];
  for (let i = 0, w = 0; i + n <= s.length; i += n, w++) {
    let sum = 0;
    for (let j = i; j < i + n; j++) sum += s[j] * s[j];
    if (Math.sqrt(sum / n) < min) out.push(w);
  }
  return out;
}

/** Mono 16-bit samples of `(t) => frequency at t`: a tone whose pitch says where in the media a player is. */
export function steppedTone(seconds: number, freqAt: (t: number) => number, rate = 44100, amplitude = 12000): Int16Array {
  const s = new Int16Array(Math.round(rate * seconds));
  let phase = 0;
  for (let i = 0; i < s.length; i++) {
    phase += (2 * Math.PI * freqAt(i / rate)) / rate;
    s[i] = Math.round(amplitude * Math.sin(phase));
  }
  return s;
}

/**
 * Watches a capture that is written only while a player plays (MPD's pipe output through
 * ffmpeg -re, gmediarender's filesink): a pause or a restart writes no silence there, it stops
 * the file growing. stop() gives the longest time (ms) the file did not grow: a paced writer
 * grows it every write block (ffmpeg: ~0.1 s), a gap shows as a stall as long as the gap; and
 * whether it ever shrank (a recorder that started its file again: the player restarted).
 * A stall is counted from this process's own polls, each at most 3 periods long: when its
 * event loop is held up (a loaded machine, the hub in the same process) the file is not
 * looked at, and that time is not taken for a stall of the player.
 */
export function watchGrowth(size: () => number, everyMs = 20): { stop(): { longestStallMs: number; samples: number; shrank: boolean } } {
  let last = size();
  let lastTick = performance.now();
  let stalled = 0;
  let longest = 0;
  let samples = 0;
  let shrank = false;
  const tick = () => {
    const now = performance.now();
    stalled += Math.min(now - lastTick, 3 * everyMs);
    lastTick = now;
    longest = Math.max(longest, stalled);
    const s = size();
    samples++;
    if (s < last) shrank = true;
    if (s !== last) {
      last = s;
      stalled = 0;
    }
  };
  const timer = setInterval(tick, everyMs);
  timer.unref(); // a test that fails before stop() must not keep jest alive
  return {
    stop() {
      clearInterval(timer);
      tick();
      return { longestStallMs: longest, samples, shrank };
    },
  };
}

/**
 * A tiny additive synthesizer for the bundled sample tracks. Output is deterministic: only
 * float64 arithmetic in a fixed order and V8's Math.sin, Math.exp and ** (fdlibm ports, identical
 * on every platform), so the same score always renders the same samples.
 */

// Global lookups are slow inside vm contexts (jest runs code in one: ~25x here), and the
// render loops make tens of millions of them; module-scope aliases avoid that.
const { abs, exp, floor, max, min, PI, round, sin } = Math;

export type VoiceName = 'bell' | 'flute' | 'pluck';

interface Voice {
  /** [frequency ratio, amplitude] pairs. */
  partials: ReadonlyArray<readonly [number, number]>;
  attack: number;
  /** Exponential decay time constant of the fundamental, seconds; higher partials fade faster. */
  decay: number;
  /** Seconds a note keeps sounding after its written length (a bell rings on). */
  ring: number;
  /** Sustained voices hold until the written length, then release over `ring`. */
  sustained: boolean;
  /** Relative pitch wobble; gives sustained tones life. */
  vibrato: number;
}

const VOICES: Readonly<Record<VoiceName, Voice>> = {
  bell: {
    partials: [
      [1, 1],
      [2, 0.35],
      [3, 0.12],
      [4.16, 0.08],
    ],
    attack: 0.004,
    decay: 0.9,
    ring: 1.4,
    sustained: false,
    vibrato: 0,
  },
  flute: {
    partials: [
      [1, 1],
      [2, 0.22],
      [3, 0.06],
    ],
    attack: 0.07,
    decay: 4,
    ring: 0.15,
    sustained: true,
    vibrato: 0.004,
  },
  pluck: {
    partials: [
      [1, 1],
      [2, 0.5],
      [3, 0.25],
      [4, 0.12],
    ],
    attack: 0.003,
    decay: 0.35,
    ring: 0.4,
    sustained: false,
    vibrato: 0,
  },
};

/** One line of a score: notes like "C5:1 E5:0.5 r:1" (pitch:beats, r = rest). */
export interface Part {
  voice: VoiceName;
  gain: number;
  notes: string;
}

export interface Score {
  bpm: number;
  parts: Part[];
}

/** Seconds of silence-bound decay after the last beat, and the fade that ends it. */
const TAIL_SECONDS = 2;
const FADE_SECONDS = 0.02;
const PEAK = 0.7;

/**
 * One sine period, read with linear interpolation: rendering calls it tens of millions of
 * times, and a table is several times faster than Math.sin at an error near -130 dB.
 */
const TABLE_SIZE = 4096;
const SINE = Float64Array.from({ length: TABLE_SIZE + 1 }, (_, i) => sin((2 * PI * i) / TABLE_SIZE));

/** sin(2π·cycles) for cycles in [0, 1). */
function sine(cycles: number): number {
  const x = cycles * TABLE_SIZE;
  const i = floor(x);
  return SINE[i] + (x - i) * (SINE[i + 1] - SINE[i]);
}

const SEMITONES: Readonly<Record<string, number>> = { C: 0, D: 2, E: 4, F: 5, G: 7, A: 9, B: 11 };

function frequency(note: string): number {
  const m = /^([A-G])(#|b)?(\d)$/.exec(note);
  if (!m) throw new Error(`bad note ${note}`);
  const midi = 12 * (Number(m[3]) + 1) + SEMITONES[m[1]] + (m[2] === '#' ? 1 : m[2] === 'b' ? -1 : 0);
  return 440 * 2 ** ((midi - 69) / 12);
}

interface Note {
  freq: number | undefined;
  beats: number;
}

function parseNotes(notes: string): Note[] {
  return notes
    .trim()
    .split(/\s+/)
    .map((token) => {
      const [pitch, beats] = token.split(':');
      return { freq: pitch === 'r' ? undefined : frequency(pitch), beats: Number(beats) };
    });
}

/** Length of the score in beats (the longest part). */
export function scoreBeats(score: Score): number {
  return max(...score.parts.map((p) => parseNotes(p.notes).reduce((sum, n) => sum + n.beats, 0)));
}

function addNote(out: Float64Array, sampleRate: number, voice: Voice, freq: number, start: number, seconds: number, gain: number): void {
  const length = seconds + voice.ring;
  const first = round(start * sampleRate);
  const count = min(round(length * sampleRate), out.length - first);
  const partials = voice.partials.length;
  const phases = new Float64Array(partials);
  // Phases in cycles, kept in [0, 1).
  const steps = voice.partials.map(([ratio]) => (freq * ratio) / sampleRate);
  const levels = voice.partials.map(([, amp]) => gain * amp);
  // Exponential decay as a per-sample factor; higher partials fade faster, as in real instruments.
  const decays = voice.partials.map(([ratio]) => exp(-(ratio ** 0.7) / (voice.decay * sampleRate)));
  for (let i = 0; i < count; i++) {
    const t = i / sampleRate;
    const attack = t < voice.attack ? t / voice.attack : 1;
    const release = voice.sustained && t > seconds ? max(0, 1 - (t - seconds) / voice.ring) : 1;
    // Every note fades out over its last few milliseconds so none ends in a click.
    const fade = min(1, (length - t) / FADE_SECONDS);
    const wobble = voice.vibrato > 0 ? 1 + voice.vibrato * sin(2 * PI * 5 * t) * min(1, t / 0.3) : 1;
    let sum = 0;
    for (let p = 0; p < partials; p++) {
      sum += levels[p] * sine(phases[p]);
      levels[p] *= decays[p];
      phases[p] += steps[p] * wobble;
      if (phases[p] >= 1) phases[p] -= 1;
    }
    out[first + i] += attack * release * fade * sum;
  }
}

/** Renders a score to 16-bit mono samples, normalized to a comfortable peak. */
export function renderScore(score: Score, sampleRate: number): Int16Array {
  const secondsPerBeat = 60 / score.bpm;
  const mix = new Float64Array(round((scoreBeats(score) * secondsPerBeat + TAIL_SECONDS) * sampleRate));
  for (const part of score.parts) {
    let beat = 0;
    for (const note of parseNotes(part.notes)) {
      if (note.freq !== undefined) {
        addNote(mix, sampleRate, VOICES[part.voice], note.freq, beat * secondsPerBeat, note.beats * secondsPerBeat, part.gain);
      }
      beat += note.beats;
    }
  }
  let peak = 0;
  for (const x of mix) peak = max(peak, abs(x));
  const scale = peak > 0 ? (PEAK * 32767) / peak : 0;
  const fadeStart = mix.length - round(0.5 * sampleRate);
  const out = new Int16Array(mix.length);
  for (let i = 0; i < mix.length; i++) {
    const fade = i > fadeStart ? (mix.length - i) / (mix.length - fadeStart) : 1;
    out[i] = round(mix[i] * scale * fade);
  }
  return out;
}

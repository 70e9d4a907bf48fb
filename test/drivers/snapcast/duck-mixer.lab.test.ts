/**
 * DuckMixer (src/audio/duck-mix.ts), the mix the Snapcast feed runs its PCM through during a
 * ducked announcement: exact sample values for constant music and voice, fed in uneven
 * pieces as the feed hands them over. The same mix on real snapclients: duck.test.ts.
 */
import {
  ANNOUNCEMENT_LUFS,
  DuckMixer,
  duckGain,
  voiceGainDb,
  voicePlacementDb,
  VOICE_MAX_BOOST_DB,
  VOICE_MAX_CUT_DB,
  VOICE_OVER_BED_LU,
  VOICE_UNDER_MUSIC_LU,
} from '../../../src/audio/duck-mix';
import { integratedLoudness } from '../../../src/audio/loudness';
import { MusicLoudness } from '../../../src/audio/music-loudness';

const RATE = 1000;

function constant(frames: number, value: number, bits: 16 | 32 = 16, channels = 2): Buffer {
  const bytes = bits / 8;
  const b = Buffer.alloc(frames * channels * bytes);
  for (let i = 0; i < frames * channels; i++) {
    if (bits === 16) b.writeInt16LE(value, i * 2);
    else b.writeInt32LE(value, i * 4);
  }
  return b;
}

/** Runs `frames` of constant music through the mixer in uneven pieces; the left channel out. */
function run(mixer: DuckMixer, frames: number, music: number, bits: 16 | 32 = 16): number[] {
  const out: number[] = [];
  const sizes = [7, 1, 33, 120, 2];
  let k = 0;
  for (let done = 0; done < frames;) {
    const n = Math.min(sizes[k++ % sizes.length], frames - done);
    const pcm = mixer.process(constant(n, music, bits));
    for (let f = 0; f < n; f++) out.push(bits === 16 ? pcm.readInt16LE(f * 4) : pcm.readInt32LE(f * 8));
    done += n;
  }
  return out;
}

describe('DuckMixer', () => {
  test('the voice starts at once, the music fades to the duck level under it, and back up after it', () => {
    const mixer = new DuckMixer({ format: { rate: RATE, bits: 16, channels: 2 }, levelDb: -20, fadeMs: 100 });
    const events: string[] = [];
    mixer.onVoiceStart = () => events.push('voice');
    mixer.onDone = () => events.push('done');
    mixer.pushVoice(constant(500, 1000));
    mixer.endVoice();
    const out = run(mixer, 1000, 10000);
    expect(out[0]).toBe(11000); // full music, and the voice from the first frame
    expect(out[50]).toBe(Math.round(10000 * (1 + (0.1 - 1) * 0.5)) + 1000);
    for (const f of [100, 300, 499]) expect(out[f]).toBe(2000); // -20 dB music + voice
    expect(out[500]).toBe(1000); // the voice is over; the music starts back up
    expect(out[550]).toBe(Math.round(10000 * (0.1 + 0.9 * 0.5)));
    for (const f of [600, 700, 999]) expect(out[f]).toBe(10000);
    expect(events).toEqual(['voice', 'done']);
    expect(mixer.phase).toBe('done');
    expect(mixer.voiceStartFrame).toBe(0);
    expect(mixer.voiceEndFrame).toBe(500);
  });

  test('32-bit samples, a voice gain, and sums that would overflow clamp', () => {
    const mixer = new DuckMixer({ format: { rate: RATE, bits: 32, channels: 2 }, levelDb: 0, fadeMs: 0, voiceGainDb: 20 * Math.log10(2) });
    mixer.pushVoice(constant(10, 2_000_000_000, 32));
    mixer.endVoice();
    const out = run(mixer, 20, 5, 32);
    expect(out[0]).toBe(2147483647);
    expect(out[15]).toBe(5);
  });

  test('release() cuts the voice short and the music comes back up from where it is', () => {
    const mixer = new DuckMixer({ format: { rate: RATE, bits: 16, channels: 2 }, levelDb: -20, fadeMs: 100 });
    mixer.pushVoice(constant(5000, 100));
    run(mixer, 200, 10000);
    mixer.release();
    const out = run(mixer, 200, 10000);
    expect(out[0]).toBe(1000); // no voice any more; the music at the duck level, rising
    expect(out[150]).toBe(10000);
    expect(mixer.phase).toBe('done');
  });

  test('a late voice keeps the music down, waiting; the voice held ahead is bounded', () => {
    const mixer = new DuckMixer({ format: { rate: RATE, bits: 16, channels: 2 }, levelDb: -20, fadeMs: 10, maxVoiceBytes: 400 });
    expect(run(mixer, 50, 10000).at(-1)).toBe(1000);
    expect(mixer.phase).toBe('voice');
    mixer.pushVoice(constant(100, 500));
    expect(mixer.voiceFull).toBe(true);
    let room = 0;
    mixer.onVoiceRoom = () => room++;
    expect(run(mixer, 10, 10000)[0]).toBe(1500);
    expect(room).toBeGreaterThan(0);
  });

  test('levels and voice gains are bounded', () => {
    expect(duckGain(-60)).toBeCloseTo(0.01);
    expect(duckGain(5)).toBe(1);
    expect(voiceGainDb(undefined, 20)).toBe(0);
    expect(voiceGainDb(40, 20)).toBeCloseTo(6.02, 1);
    expect(voiceGainDb(50, 1)).toBe(12);
    expect(voiceGainDb(1, 50)).toBe(-30);
  });

  test('the voice is placed relative to the music: VOICE_OVER_BED_LU above the ducked music at least, within its clamps', () => {
    expect(VOICE_OVER_BED_LU).toBeGreaterThanOrEqual(6);
    expect(VOICE_OVER_BED_LU).toBeLessThanOrEqual(10);
    // Music at -10 LUFS ducked by 15: the bed at -25, the voice 8 LU above it at -17, 1 dB under the clip's -16.
    expect(voicePlacementDb(-10, -15)).toBeCloseTo(-10 - 15 + VOICE_OVER_BED_LU - ANNOUNCEMENT_LUFS, 6);
    expect(-15 + VOICE_OVER_BED_LU).toBe(VOICE_UNDER_MUSIC_LU);
    // 10 LU louder music: the voice 10 dB louder (both inside the clamps).
    expect(voicePlacementDb(-8, -15) - voicePlacementDb(-18, -15)).toBeCloseTo(10, 6);
    // A deeper duck lowers the music under the voice, not the voice.
    expect(voicePlacementDb(-10, -25)).toBeCloseTo(voicePlacementDb(-10, -15), 6);
    // A shallow duck raises the voice to stay VOICE_OVER_BED_LU above the bed.
    expect(voicePlacementDb(-20, -6) - voicePlacementDb(-20, -15)).toBeCloseTo(9, 6);
    // Loud music lightly ducked: never above the clip + VOICE_MAX_BOOST_DB.
    expect(voicePlacementDb(-3, -3)).toBe(VOICE_MAX_BOOST_DB);
    // Quiet music, and silence or nothing measured yet: never below the clip + VOICE_MAX_CUT_DB.
    expect(voicePlacementDb(-45, -15)).toBe(VOICE_MAX_CUT_DB);
    expect(voicePlacementDb(-Infinity, -15)).toBe(VOICE_MAX_CUT_DB);
    // Another clip loudness shifts the gain by the difference.
    expect(voicePlacementDb(-10, -15, -20) - voicePlacementDb(-10, -15)).toBeCloseTo(4, 6);
  });

  test('DuckMixer plays the voice at the placement plus the Volume gain', () => {
    const voiceOut = (musicLufs: number | undefined, gainDb = 0) => {
      const mixer = new DuckMixer({
        format: { rate: RATE, bits: 16, channels: 2 },
        levelDb: -20,
        fadeMs: 0,
        voiceGainDb: gainDb,
        ...(musicLufs !== undefined ? { musicLufs } : {}),
      });
      mixer.pushVoice(constant(100, 4000));
      mixer.endVoice();
      // Silent music: what comes out is the voice alone.
      return run(mixer, 50, 0)[10];
    };
    expect(voiceOut(undefined)).toBe(4000);
    const loud = voiceOut(-8);
    const quiet = voiceOut(-16);
    expect(db(loud / quiet)).toBeCloseTo(8, 1);
    expect(db(voiceOut(-8, 6) / loud)).toBeCloseTo(6, 1);
    expect(db(voiceOut(-60) / 4000)).toBeCloseTo(VOICE_MAX_CUT_DB, 1);
  });

  test('MusicLoudness: the short-term loudness of what flowed, over its last seconds, as R128 measures it', () => {
    const rate = 48000;
    const tone = (seconds: number, amp: number, hz = 997) => {
      const frames = Math.round(seconds * rate);
      const b = Buffer.alloc(frames * 4);
      const ch = new Float32Array(frames);
      for (let i = 0; i < frames; i++) {
        const v = Math.round(amp * Math.sin((2 * Math.PI * hz * i) / rate));
        b.writeInt16LE(v, i * 4);
        b.writeInt16LE(v, i * 4 + 2);
        ch[i] = v / 32768;
      }
      return { b, pcm: { rate, channels: [ch, ch] } };
    };
    const meter = new MusicLoudness({ rate, bits: 16, channels: 2 });
    expect(meter.lufs).toBe(-Infinity);
    const loud = tone(4, 16000);
    // Odd pieces, split inside frames.
    for (let at = 0; at < loud.b.length; at += 4001) meter.push(loud.b.subarray(at, Math.min(at + 4001, loud.b.length)));
    const reference = integratedLoudness(loud.pcm);
    expect(Math.abs(meter.lufs - reference)).toBeLessThan(0.2);
    // 3 s of a tone 20 dB quieter: the window holds only it now.
    const quiet = tone(3, 1600);
    meter.push(quiet.b);
    expect(Math.abs(meter.lufs - (reference - 20))).toBeLessThan(0.3);
    // Silence: under the gate.
    meter.push(Buffer.alloc(3 * rate * 4));
    expect(meter.lufs).toBe(-Infinity);
  });
});

const db = (x: number) => 20 * Math.log10(x);

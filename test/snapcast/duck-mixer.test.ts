/**
 * DuckMixer (src/media/duck-mix.ts), the mix the Snapcast feed runs its PCM through during a
 * ducked announcement: exact sample values for constant music and voice, fed in uneven
 * pieces as the feed hands them over. The same mix on real snapclients: duck.test.ts.
 */
import { DuckMixer, duckGain, voiceGainDb } from '../../src/media/duck-mix';

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
});

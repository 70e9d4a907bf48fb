/**
 * The ducked-announcement mix (src/audio/duck-mix.ts) on real ffmpeg: music from a position,
 * a real espeak voice on top. The output is decoded and split, window by window, into
 * gain × music + voice (least squares against the two sources): the music is there in every
 * window (no gap), at full level before, DuckLevel lower (±2 dB) under the voice, and the voice
 * is there, whole, only after the fade down.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { duckMixArgs, duckTimes } from '../../src/audio/duck-mix';
import { encodeWav } from '../../src/audio/wav';

const run = promisify(execFile);
const RATE = 48000;

async function pcm(args: string[]): Promise<Float32Array> {
  const { stdout } = await run('ffmpeg', ['-v', 'error', ...args, '-ac', '1', '-ar', String(RATE), '-f', 'f32le', '-'], {
    encoding: 'buffer',
    maxBuffer: 256 * 1024 * 1024,
  });
  const buf = Buffer.from(stdout);
  return new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
}

const dot = (a: Float32Array, b: Float32Array, from: number, to: number, bOff = 0) => {
  let s = 0;
  for (let i = from; i < to; i++) {
    const bi = i - bOff;
    if (bi >= 0 && bi < b.length) s += a[i] * b[bi];
  }
  return s;
};

describe('duck mix (ffmpeg)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'duck-mix-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test.each([-15, -25])('DuckLevel %i dB: music continues, drops by the level ±2 dB under the voice, voice on top', async (levelDb) => {
    // Music: two tones with a slow tremolo, 20 s, mono 48 kHz (no resampling in the mix).
    const n = 20 * RATE;
    const music = new Int16Array(n);
    for (let i = 0; i < n; i++) {
      const t = i / RATE;
      music[i] = Math.round(
        0.25 * (0.8 + 0.2 * Math.sin(2 * Math.PI * 0.5 * t)) * (Math.sin(2 * Math.PI * 440 * t) + 0.5 * Math.sin(2 * Math.PI * 661 * t)) * 32767,
      );
    }
    const musicFile = join(dir, 'music.wav');
    await writeFile(musicFile, encodeWav(music, RATE, { title: 'Music', artist: '', album: '' }));
    const voiceFile = join(dir, 'voice.wav');
    await run('espeak-ng', ['-w', voiceFile, 'Dinner is ready, please come to the table']);
    const { stdout } = await run('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', voiceFile]);
    const voiceDuration = Number(stdout.trim());
    const opts = { music: { input: musicFile, startAt: 5 }, voice: { input: voiceFile, duration: voiceDuration }, levelDb, fadeMs: 500 };
    const { voiceAt, voiceEnd, end } = duckTimes(opts);

    const out = await pcm(duckMixArgs(opts));
    const m = await pcm(['-ss', '5', '-i', musicFile]);
    const v = await pcm(['-i', voiceFile]);
    expect(out.length / RATE).toBeCloseTo(end, 1);
    const vOff = Math.round(voiceAt * RATE);

    // Window by window (50 ms): gain of the music in the mix, and whether what is left is the voice.
    const W = RATE / 20;
    const gains: { t: number; db: number; fit: number }[] = [];
    for (let a = 0; a + W <= out.length; a += W) {
      const resid = new Float32Array(W);
      for (let i = 0; i < W; i++) {
        const vi = a + i - vOff;
        resid[i] = out[a + i] - (vi >= 0 && vi < v.length ? v[vi] : 0);
      }
      const g = dot(resid, m, 0, W, -a) / dot(m, m, a, a + W);
      let err = 0;
      let energy = 0;
      for (let i = 0; i < W; i++) {
        err += (resid[i] - g * m[a + i]) ** 2;
        energy += (g * m[a + i]) ** 2;
      }
      gains.push({ t: a / RATE, db: 20 * Math.log10(Math.max(g, 1e-9)), fit: err / energy });
    }
    // The music is in every window, and the mix is exactly gain × music + voice (no gap, no clipping, voice whole).
    expect(gains.filter((w) => w.db < levelDb - 3)).toEqual([]);
    // Where the gain ramps (ffmpeg steps it per 1024-sample frame) a constant gain fits a window less well.
    const steady = (w: { t: number }) => w.t >= voiceAt + 0.03 && w.t + 0.05 <= voiceEnd - 0.03;
    expect(gains.filter((w) => steady(w) && w.fit > 0.01)).toEqual([]);
    expect(gains.filter((w) => w.fit > 0.2)).toEqual([]);
    // Full level before the fade, DuckLevel under the voice, rising at the end.
    expect(gains[0].db).toBeCloseTo(0, 0);
    const under = gains.filter(steady);
    expect(under.length).toBeGreaterThan(10);
    for (const w of under) expect(Math.abs(w.db - levelDb)).toBeLessThan(2);
    expect(gains.at(-1)!.db).toBeGreaterThan(-3);
    // The voice: the mix minus the ducked music correlates fully with the voice where it plays, and it is loud there.
    const a = vOff;
    const b = Math.round(voiceEnd * RATE);
    const ducked = new Float32Array(b - a);
    const g = 10 ** (levelDb / 20);
    for (let i = a; i < b; i++) ducked[i - a] = out[i] - g * m[i];
    expect(dot(ducked, v, 0, b - a) / dot(v, v, 0, v.length)).toBeCloseTo(1, 1);
  });
});

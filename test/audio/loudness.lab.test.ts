/**
 * The in-process EBU R128 measurement (src/audio/loudness.ts) against ffmpeg's ebur128 filter
 * as the reference, on signals ffmpeg and espeak-ng make: sines at known levels, pink and
 * white noise, speech, silence. Then normalisation: quiet and loud sources brought to the
 * target, as ffmpeg measures the written file, with the true peak under the ceiling.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { integratedLoudness, measureLoudness, normaliseLoudness, normaliseLoudnessAsync, truePeak } from '../../src/audio/loudness';
import { LoudnessNormaliser } from '../../src/audio/loudness-file';
import { decodeWav, encodeWav16, readWavInfo } from '../../src/audio/pcm-wav';
import { ffmpegLoudness, lavfiFile } from '../helpers/ffmpeg-audio';

const run = promisify(execFile);

describe('EBU R128 in process, against ffmpeg ebur128', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'loudness-test-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Makes <dir>/<name>.wav with ffmpeg from a lavfi source, 16-bit PCM WAV. */
  const lavfi = (name: string, source: string, rate: number, channels: number, filter = 'anull') =>
    lavfiFile(join(dir, `${name}.wav`), source, { rate, channels, filter, pcm16: true });

  const signals: Array<[string, () => Promise<string>]> = [
    // lavfi's sine is at 1/8 full scale; volume=0.8 makes it 0.1, -20 dBFS peak.
    // 1 kHz at -20 dBFS peak, mono: -20 - 3.01 (RMS) + 0.69 (K-weighting at 1 kHz) - 0.691 = -23.0 LUFS.
    ['1 kHz sine, -20 dBFS peak, mono 48 kHz', () => lavfi('sine-mono', 'sine=frequency=1000:duration=5', 48000, 1, 'volume=0.8')],
    ['1 kHz sine, -20 dBFS peak, stereo 44.1 kHz', () => lavfi('sine-stereo', 'sine=frequency=1000:duration=5', 44100, 2, 'volume=0.8')],
    ['100 Hz sine, mono 22.05 kHz', () => lavfi('sine-low', 'sine=frequency=100:duration=4', 22050, 1, 'volume=2')],
    ['5 kHz sine, stereo 48 kHz', () => lavfi('sine-high', 'sine=frequency=5000:duration=4', 48000, 2, 'volume=3')],
    ['pink noise, stereo 44.1 kHz', () => lavfi('pink', 'anoisesrc=color=pink:amplitude=0.3:duration=6:seed=7', 44100, 2)],
    ['white noise, mono 22.05 kHz', () => lavfi('white', 'anoisesrc=color=white:amplitude=0.1:duration=6:seed=3', 22050, 1)],
    [
      'speech (espeak-ng), mono 22.05 kHz',
      async () => {
        const file = join(dir, 'speech.wav');
        await run('espeak-ng', ['-v', 'en', '-w', file, 'Someone is at the front door, please open it. The washing machine has finished.']);
        return file;
      },
    ],
    [
      'speech then 3 s of silence (the relative gate drops the silence)',
      async () => {
        const file = join(dir, 'speech-gap.wav');
        await run('espeak-ng', ['-v', 'de', '-w', join(dir, 'de.wav'), 'Das Essen ist fertig']);
        await run('ffmpeg', ['-v', 'error', '-y', '-i', join(dir, 'de.wav'), '-af', 'apad=pad_dur=3', '-c:a', 'pcm_s16le', file]);
        return file;
      },
    ],
  ];

  test.each(signals)('%s: integrated within 0.2 LU, true peak within 0.3 dB', async (_name, make) => {
    const file = await make();
    const pcm = decodeWav(await readFile(file));
    const ours = measureLoudness(pcm);
    const ref = await ffmpegLoudness(file);
    expect(Number.isFinite(ref.integrated)).toBe(true);
    expect(Math.abs(ours.integrated - ref.integrated)).toBeLessThan(0.2);
    expect(Math.abs(ours.truePeak - ref.truePeak)).toBeLessThan(0.3);
  });

  test('the 1 kHz sine at -20 dBFS peak (mono) reads -23.0 LUFS', async () => {
    const pcm = decodeWav(await readFile(await lavfi('sine-ref', 'sine=frequency=1000:duration=5', 48000, 1, 'volume=0.8')));
    expect(integratedLoudness(pcm)).toBeCloseTo(-23.0, 1);
  });

  test('silence, a signal under -70 LUFS and audio shorter than one 400 ms block are gated: no loudness, no gain', async () => {
    const silence = decodeWav(await readFile(await lavfi('silence', 'anullsrc=r=22050:cl=mono', 22050, 1, 'atrim=duration=2')));
    expect(integratedLoudness(silence)).toBe(-Infinity);
    expect(truePeak(silence)).toBe(-Infinity);
    expect((await ffmpegLoudness(join(dir, 'silence.wav'))).integrated).toBe(-Infinity);
    const faint = decodeWav(await readFile(await lavfi('faint', 'sine=frequency=1000:duration=3', 48000, 1, 'volume=-80dB')));
    expect(integratedLoudness(faint)).toBe(-Infinity);
    const short = decodeWav(await readFile(await lavfi('short', 'sine=frequency=1000:duration=0.3', 48000, 1)));
    expect(integratedLoudness(short)).toBe(-Infinity);
    const { pcm, result } = normaliseLoudness(silence, { integrated: -16, truePeak: -1.5 });
    expect(result.gainDb).toBe(0);
    expect(pcm.channels[0].every((x) => x === 0)).toBe(true);
  });

  const target = { integrated: -16, truePeak: -1.5 };
  const sources: Array<[string, string, string]> = [
    ['a quiet sine (-40 dBFS)', 'sine=frequency=440:duration=4', 'volume=0.01/0.125'],
    ['a loud, clipped square-ish tone (0 dBFS, needs the limiter)', 'sine=frequency=220:duration=4', 'volume=30dB,alimiter=limit=1:level=false'],
    ['quiet pink noise with loud clicks (peaky: the limiter)', 'anoisesrc=color=pink:amplitude=0.02:duration=5:seed=5', 'anull'],
  ];
  test.each(sources)('%s is brought to -16 LUFS ±0.3 (ffmpeg measures the written file), true peak <= -1.5 dBTP', async (name, source, filter) => {
    const file = await lavfi(`src-${name.length}`, source, 44100, 1, filter);
    const input = decodeWav(await readFile(file));
    if (name.includes('clicks')) for (let i = 10_000; i < input.channels[0].length; i += 20_000) input.channels[0][i] = 0.99;
    const { pcm, result } = normaliseLoudness(input, target);
    const out = join(dir, `out-${name.length}.wav`);
    await writeFile(out, encodeWav16(pcm));
    const ref = await ffmpegLoudness(out);
    expect({ name, lufs: Math.abs(ref.integrated - target.integrated) < 0.3 }).toEqual({ name, lufs: true });
    expect(ref.truePeak).toBeLessThanOrEqual(target.truePeak + 0.2);
    expect(Math.abs(result.integrated - ref.integrated)).toBeLessThan(0.3);
  });

  test('long audio is normalised without holding the event loop for the whole of it, to the same samples', async () => {
    const input = decodeWav(await readFile(await lavfi('long', 'anoisesrc=color=pink:amplitude=0.03:duration=6:seed=9', 44100, 2)));
    // 6 s of stereo: over the 10 s of mono above which the passes yield. Clicks: the gain up to
    // -16 LUFS needs the limiter, so every pass runs.
    for (let i = 5000; i < input.channels[0].length; i += 30_000) input.channels[0][i] = 0.9;
    let ran = 0;
    let ticking = true;
    const tick = () => {
      ran++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const before = ran;
    const out = await normaliseLoudnessAsync(input, target);
    ticking = false;
    // Other callbacks ran between the passes (a synchronous run lets none in).
    expect(ran - before).toBeGreaterThan(3);
    expect(out.result.limited).toBe(true);
    const sync = normaliseLoudness(input, target);
    // Compared here, not by toEqual: jest walks a typed array of a million samples slowly.
    const same = out.pcm.channels.every((x, c) => x.length === sync.pcm.channels[c].length && x.every((v, i) => v === sync.pcm.channels[c][i]));
    expect(same).toBe(true);
  });

  test('a normalised file is tagged and recognised from its header; anything else is not', async () => {
    const normaliser = new LoudnessNormaliser({ target });
    const speech = join(dir, 'speech-tag.wav');
    await run('espeak-ng', ['-v', 'en', '-w', speech, 'Dinner is ready']);
    expect(await normaliser.isNormalised(speech)).toBe(false);
    const out = join(dir, 'speech-tag-out.wav');
    const { result } = await normaliser.normaliseFile(speech, out);
    expect(result?.gainDb).not.toBe(0);
    expect(await normaliser.isNormalised(out)).toBe(true);
    expect(readWavInfo(await readFile(out))?.comment).toBe(normaliser.tag);
    expect(Math.abs((await ffmpegLoudness(out)).integrated + 16)).toBeLessThan(0.5);
    // Another target is another tag: the file is not at that one.
    expect(await new LoudnessNormaliser({ target: { integrated: -20, truePeak: -1.5 } }).isNormalised(out)).toBe(false);
    // Once done, again is no work: the samples come back as they are.
    const again = join(dir, 'speech-tag-again.wav');
    expect((await normaliser.normaliseFile(out, again)).result).toBeUndefined();
    expect((await readFile(again)).equals(await readFile(out))).toBe(true);
  });

  test('an MP3 is decoded by ffmpeg and normalised', async () => {
    const mp3 = join(dir, 'tone.mp3');
    await lavfiFile(mp3, 'sine=frequency=600:duration=3', { filter: 'volume=0.05', channels: 2 });
    const out = join(dir, 'tone-out.wav');
    await new LoudnessNormaliser({ target }).normaliseFile(mp3, out);
    expect(readWavInfo(await readFile(out))).toMatchObject({ channels: 2, bits: 16 });
    expect(Math.abs((await ffmpegLoudness(out)).integrated + 16)).toBeLessThan(0.5);
  });

  test('not audio: a clear error, no crash', async () => {
    const junk = join(dir, 'junk.wav');
    await writeFile(junk, 'this is not audio at all');
    await expect(new LoudnessNormaliser({ target }).normaliseFile(junk, join(dir, 'junk-out.wav'))).rejects.toThrow(/ffmpeg/);
  });
});

/**
 * AnnouncementClips (src/media/announcement-clip.ts) on its own: parts of one WAV format are
 * joined and normalised in process (no ffmpeg at all: the path to ffmpeg is a missing file),
 * other formats go through ffmpeg, a part already at the target is the clip itself,
 * identical renders at once are one render, and the cache stays within its budgets. Levels
 * and loudness are read back with real ffmpeg (ebur128) as the reference.
 */
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AnnouncementClips, ClipError } from '../../src/media/announcement-clip';
import { ensureChime } from '../../src/audio/chime';
import { LoudnessNormaliser } from '../../src/audio/loudness-file';
import { decodeWav, readWavInfo } from '../../src/audio/pcm-wav';
import { encodeWav } from '../../src/audio/wav';
import { ffmpegLoudness, lavfiFile } from '../helpers/ffmpeg-audio';
import { captureLogger, tempDir } from './helpers';

const run = promisify(execFile);

/** MPEG-1 Layer III frames of silence (128 kbit/s, 44.1 kHz stereo, all-zero side information). */
function silentMp3Frames(frames: number): Buffer {
  const frame = Buffer.alloc(Math.floor((144 * 128_000) / 44_100));
  frame.set([0xff, 0xfb, 0x90, 0x00]);
  return Buffer.concat(Array.from({ length: frames }, () => frame));
}
const NO_FFMPEG = '/nonexistent/ffmpeg';

const ffmpegLufs = async (file: string) => (await ffmpegLoudness(file)).integrated;

/** A 22.05 kHz mono tone at `amplitude`, with a tremolo so it is not a flat sine. */
function tone(seconds: number, freq: number, amplitude: number): Buffer {
  const n = Math.round(seconds * 22050);
  const s = new Int16Array(n);
  for (let i = 0; i < n; i++)
    s[i] = Math.round(amplitude * (0.7 + 0.3 * Math.sin((2 * Math.PI * 3 * i) / 22050)) * Math.sin((2 * Math.PI * freq * i) / 22050) * 32767);
  return encodeWav(s, 22050, { title: 'Tone', artist: 'Test', album: '' });
}

describe('AnnouncementClips', () => {
  let tmp: ReturnType<typeof tempDir>;
  let chime: string;
  let speech: string;
  beforeAll(async () => {
    tmp = tempDir();
    chime = await ensureChime(join(tmp.dir, 'chime.wav'));
    speech = join(tmp.dir, 'speech.wav');
    await run('espeak-ng', ['-v', 'en', '-w', speech, 'The washing machine has finished']);
  });
  afterAll(() => tmp.cleanup());

  /**
   * Each part of a chime-first clip at the target, as ffmpeg measures them cut apart: the chime
   * (its first 0.9 s) and what follows the 300 ms gap (from 1.2 s), in LUFS.
   */
  async function partsLufs(file: string, name: string): Promise<{ chime: number; after: number }> {
    const parts = join(tmp.dir, name);
    await run('mkdir', ['-p', parts]);
    await run('ffmpeg', ['-v', 'error', '-y', '-i', file, '-t', '0.9', join(parts, 'chime.wav')]);
    await run('ffmpeg', ['-v', 'error', '-y', '-ss', '1.2', '-i', file, join(parts, 'after.wav')]);
    return { chime: await ffmpegLufs(join(parts, 'chime.wav')), after: await ffmpegLufs(join(parts, 'after.wav')) };
  }
  /** -16 LUFS, the default target, to ±0.5 LU (toBeCloseTo's second figure: |x + 16| < 0.5). */
  const near16 = expect.closeTo(-16, 0);

  const clips = (name: string, extra: Partial<ConstructorParameters<typeof AnnouncementClips>[0]> = {}) => {
    const log = captureLogger();
    const maker = new AnnouncementClips({ cacheDir: join(tmp.dir, name), logger: log.logger, ...extra });
    const renders = () => log.entries().filter((e) => e.msg === 'announcement clip rendered');
    return { maker, renders };
  };

  test('chime + speech of one format render in process (no ffmpeg to be found): chime, 300 ms gap, speech, each at -16 LUFS', async () => {
    const { maker, renders } = clips('in-process', { ffmpegPath: NO_FFMPEG });
    const clip = await maker.render([{ file: chime }, { file: speech }]);
    expect(renders()).toHaveLength(1);
    const info = readWavInfo(await readFile(clip.file))!;
    expect(info).toMatchObject({ rate: 22050, channels: 1, bits: 16 });
    const pcm = decodeWav(await readFile(clip.file));
    const speechFrames = decodeWav(await readFile(speech)).channels[0].length;
    expect(pcm.channels[0].length).toBe(Math.round(0.9 * 22050) + Math.round(0.3 * 22050) + speechFrames);
    expect(clip.duration).toBeCloseTo(pcm.channels[0].length / 22050, 3);
    // The gap is digital silence.
    const gap = pcm.channels[0].subarray(Math.round(0.9 * 22050) + 10, Math.round(1.2 * 22050) - 10);
    expect(gap.every((x) => x === 0)).toBe(true);
    expect(await partsLufs(clip.file, 'parts')).toEqual({ chime: near16, after: near16 });
  });

  test('a lone part already at the target (a normalised TTS entry) is the clip itself: nothing rendered, nothing cached', async () => {
    const { maker, renders } = clips('lone', { ffmpegPath: NO_FFMPEG });
    const normalised = join(tmp.dir, 'speech-normalised.wav');
    await new LoudnessNormaliser({ target: { integrated: -16, truePeak: -1.5 } }).normaliseFile(speech, normalised);
    const clip = await maker.render([{ file: normalised }]);
    expect(clip.file).toBe(normalised);
    expect(renders()).toHaveLength(0);
    // Raw espeak output is not at the target: that one is rendered.
    expect((await maker.render([{ file: speech }])).file).not.toBe(speech);
    expect(renders()).toHaveLength(1);
  });

  test('parts of different formats: the others are resampled by ffmpeg to the highest rate, mono made stereo at the same loudness', async () => {
    const { maker } = clips('mixed');
    const music = join(tmp.dir, 'music.wav');
    await lavfiFile(music, 'anoisesrc=color=pink:amplitude=0.5:duration=3:seed=1', { rate: 44100, channels: 2 });
    const clip = await maker.render([{ file: chime }, { file: music }]);
    const pcm = decodeWav(await readFile(clip.file));
    expect(pcm.rate).toBe(44100);
    expect(pcm.channels).toHaveLength(2);
    expect(pcm.channels[0].length / 44100).toBeCloseTo(0.9 + 0.3 + 3, 2);
    expect(await partsLufs(clip.file, 'mixed-parts')).toEqual({ chime: near16, after: near16 });
  });

  test('without ffmpeg, a part that needs it (MP3, another rate) fails with a ClipError saying so', async () => {
    const { maker } = clips('no-ffmpeg', { ffmpegPath: NO_FFMPEG });
    const mp3 = join(tmp.dir, 'tone.mp3');
    await lavfiFile(mp3, 'sine=duration=1');
    await expect(maker.render([{ file: chime }, { file: mp3 }])).rejects.toThrow(ClipError);
    await expect(maker.render([{ file: chime }, { file: mp3 }])).rejects.toThrow(/cannot run ffmpeg/);
    const other = join(tmp.dir, 'tone-44k.wav');
    await lavfiFile(other, 'sine=duration=1', { rate: 44100 });
    await expect(maker.render([{ file: chime }, { file: other }])).rejects.toThrow(/cannot run ffmpeg/);
    await expect(maker.render([{ file: join(tmp.dir, 'missing.wav') }])).rejects.toThrow(/no such file/);
  });

  test('identical renders at once are one render (single-flight), and later ones are cache hits', async () => {
    const { maker, renders } = clips('single-flight', { ffmpegPath: NO_FFMPEG });
    const all = await Promise.all(Array.from({ length: 6 }, () => maker.render([{ file: chime }, { file: speech }])));
    expect(new Set(all.map((c) => c.file)).size).toBe(1);
    expect(renders()).toHaveLength(1);
    await maker.render([{ file: chime }, { file: speech }]);
    expect(renders()).toHaveLength(1);
  });

  test('the cache is bounded by entries and by bytes (least recently used go first)', async () => {
    const byCount = clips('bounded-count', { ffmpegPath: NO_FFMPEG, maxCacheEntries: 2 });
    for (let i = 0; i < 5; i++) {
      const part = join(tmp.dir, `tone-${i}.wav`);
      await writeFile(part, tone(1, 300 + 100 * i, 0.3));
      await byCount.maker.render([{ file: chime }, { file: part }]);
      await byCount.maker.idle();
    }
    expect((await readdir(join(tmp.dir, 'bounded-count'))).filter((n) => n.endsWith('.wav'))).toHaveLength(2);
    const byBytes = clips('bounded-bytes', { ffmpegPath: NO_FFMPEG, maxCacheBytes: 100_000 });
    for (let i = 0; i < 3; i++) {
      await byBytes.maker.render([{ file: chime }, { file: join(tmp.dir, `tone-${i}.wav`) }]); // ~95 KB each
      await byBytes.maker.idle();
    }
    expect((await readdir(join(tmp.dir, 'bounded-bytes'))).filter((n) => n.endsWith('.wav'))).toHaveLength(1);
  });

  /** A real ffmpeg behind a script that counts its runs. */
  async function countingFfmpeg(name: string): Promise<{ path: string; runs: () => Promise<number> }> {
    const path = join(tmp.dir, `${name}.sh`);
    const count = join(tmp.dir, `${name}.count`);
    await writeFile(count, '');
    await writeFile(path, `#!/bin/sh\necho run >> '${count}'\nexec ffmpeg "$@"\n`, { mode: 0o755 });
    return { path, runs: async () => (await readFile(count, 'utf8')).split('\n').filter(Boolean).length };
  }

  test('the chime resampled and normalised for one format is kept: the next clip in that format runs no ffmpeg', async () => {
    const ffmpeg = await countingFfmpeg('memo');
    const { maker } = clips('memo', { ffmpegPath: ffmpeg.path });
    for (const [i, freq] of [500, 700].entries()) {
      const speech44 = join(tmp.dir, `speech44-${i}.wav`);
      await lavfiFile(speech44, `sine=frequency=${freq}:duration=2`, { rate: 44100 });
      const clip = await maker.render([{ file: chime }, { file: speech44 }]);
      expect(readWavInfo(await readFile(clip.file))).toMatchObject({ rate: 44100, channels: 1 });
      // The chime (22.05 kHz) is resampled for the first clip only.
      expect(await ffmpeg.runs()).toBe(1);
    }
  });

  test('a web file takes one ffmpeg run (its length is checked as the decode starts); a live stream is refused', async () => {
    const ffmpeg = await countingFfmpeg('web');
    const { maker } = clips('web', { ffmpegPath: ffmpeg.path });
    const body = tone(2, 440, 0.5);
    const server = createServer((req, res) => {
      if (req.url === '/live.wav') {
        res.writeHead(200, { 'Content-Type': 'audio/mpeg' });
        // An endless MP3 stream: frames of silence every 100 ms, no length anywhere.
        const tick = setInterval(() => res.write(silentMp3Frames(4)), 100);
        res.on('close', () => clearInterval(tick));
        return;
      }
      res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': body.length }).end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const clip = await maker.render([{ file: chime }, { url: `${base}/file.wav` }]);
      expect(await ffmpeg.runs()).toBe(1);
      expect(decodeWav(await readFile(clip.file)).channels[0].length / 22050).toBeCloseTo(0.9 + 0.3 + 2, 2);
      await expect(maker.render([{ url: `${base}/live.wav` }])).rejects.toThrow(/no known length|no length/);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  test("loudness 'off': the parts joined as they are, samples unchanged", async () => {
    const { maker } = clips('off', { ffmpegPath: NO_FFMPEG, loudness: 'off' });
    expect(maker.normalises).toBe(false);
    const clip = await maker.render([{ file: chime }, { file: speech }]);
    const out = decodeWav(await readFile(clip.file)).channels[0];
    const original = decodeWav(await readFile(speech)).channels[0];
    const at = Math.round(1.2 * 22050);
    expect(out.subarray(at, at + original.length)).toEqual(original);
  });
});

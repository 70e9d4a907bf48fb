/**
 * The TTS cache with a loudness normaliser (what the hub configures unless
 * announcements.loudness is 'off'): each text is normalised once, when it is synthesized, and
 * a cache hit is the normalised file with no work. Loudness read back by real ffmpeg.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { promisify } from 'node:util';
import { LoudnessNormaliser } from '../../src/audio/loudness-file';
import { readWavInfo } from '../../src/audio/pcm-wav';
import { EspeakProvider } from '../../src/tts/espeak';
import type { TtsProvider } from '../../src/tts/provider';
import { TtsService } from '../../src/tts/service';
import { captureLogger, CountingProvider, silentMp3, tempDir } from './helpers';

const run = promisify(execFile);
const target = { integrated: -16, truePeak: -1.5 };

async function ffmpegLufs(file: string): Promise<number> {
  const { stderr } = await run('ffmpeg', ['-hide_banner', '-nostats', '-i', file, '-af', 'ebur128', '-f', 'null', '-']);
  return Number(/I:\s+(-?[\d.]+) LUFS/.exec(stderr.slice(stderr.lastIndexOf('Summary:')))![1]);
}

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir('tts-normalise');
});
afterEach(() => tmp.remove());

test('three texts in two voices enter the cache at -16 LUFS ±1 (ffmpeg ebur128), tagged; a hit is the same file with no synthesis and no loudness work', async () => {
  const log = captureLogger();
  const provider = new CountingProvider(new EspeakProvider({ mode: 'binary' }));
  const normaliser = new LoudnessNormaliser({ target });
  const tts = new TtsService({ provider, cacheDir: tmp.dir, logger: log.logger, normaliser });
  const texts: Array<[string, string]> = [
    ['Dinner is ready', 'en'],
    ['Someone is at the front door, please open it', 'de'],
    ['Ok', 'en'],
  ];
  for (const [text, voice] of texts) {
    const audio = await tts.speak(text, voice);
    expect(audio.contentType).toBe('audio/wav');
    expect(await normaliser.isNormalised(audio.file)).toBe(true);
    expect({ text, off: Math.abs((await ffmpegLufs(audio.file)) + 16) < 1 }).toEqual({ text, off: true });
  }
  const synthesized = () => (log.text().match(/text synthesized/g) ?? []).length;
  expect(synthesized()).toBe(3);
  expect(log.text()).toContain('"loudnessMs"');
  const first = await tts.speak('Dinner is ready', 'en');
  const size = statSync(first.file).size;
  const again = await tts.speak('Dinner is ready', 'en');
  expect(again.file).toBe(first.file);
  expect(statSync(again.file).size).toBe(size);
  expect(provider.calls).toHaveLength(3);
  expect(synthesized()).toBe(3);
});

test('the loudness target is part of the cache key: another target is another entry, the raw provider output is never reused as normalised', async () => {
  const provider = new CountingProvider(new EspeakProvider({ mode: 'binary' }));
  const { logger } = captureLogger();
  const raw = await new TtsService({ provider, cacheDir: tmp.dir, logger }).speak('Dinner is ready');
  const a = await new TtsService({ provider, cacheDir: tmp.dir, logger, normaliser: new LoudnessNormaliser({ target }) }).speak('Dinner is ready');
  const quieter = new LoudnessNormaliser({ target: { integrated: -23, truePeak: -1.5 } });
  const b = await new TtsService({ provider, cacheDir: tmp.dir, logger, normaliser: quieter }).speak('Dinner is ready');
  expect(new Set([raw.file, a.file, b.file]).size).toBe(3);
  expect(provider.calls).toHaveLength(3);
  expect(readWavInfo(readFileSync(raw.file))?.comment).toBeUndefined();
  expect(Math.abs((await ffmpegLufs(b.file)) + 23)).toBeLessThan(1);
});

test('speech the normaliser cannot read (no ffmpeg for an MP3) is cached as the provider wrote it, and still plays', async () => {
  const mp3: TtsProvider = {
    name: 'fake-mp3',
    format: { ext: 'mp3', contentType: 'audio/mpeg' },
    synthesize: async (_text, _voice, out) => {
      const { writeFile } = await import('node:fs/promises');
      await writeFile(out, silentMp3(1));
    },
  };
  const log = captureLogger();
  const tts = new TtsService({
    provider: mp3,
    cacheDir: tmp.dir,
    logger: log.logger,
    normaliser: new LoudnessNormaliser({ target, ffmpegPath: '/nonexistent/ffmpeg' }),
  });
  const audio = await tts.speak('Hello');
  expect(audio.contentType).toBe('audio/mpeg');
  expect(basename(audio.file)).toMatch(/^[0-9a-f]{64}\.mp3$/);
  expect(log.text()).toContain('synthesized speech not normalised');
  // A hit finds it under its provider's name; no temp file is left behind.
  expect((await tts.speak('Hello')).file).toBe(audio.file);
  expect(readdirSync(tmp.dir)).toEqual([basename(audio.file)]);
});

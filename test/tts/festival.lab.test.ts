/**
 * The festival provider (issue 30): Debian's festival with the HTS voice festvox-us-slt-hts,
 * run as a bounded child (timeout, output cap, killed on abort), text on stdin as plain text.
 * Every test runs the real program (scripts/install-test-deps.sh installs it).
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { HubError } from '../../src/core/errors';
import { LoudnessNormaliser } from '../../src/audio/loudness-file';
import { TtsEngineError } from '../../src/tts/errors';
import { FestivalProvider } from '../../src/tts/festival';
import { createTtsProvider, TtsService } from '../../src/tts/service';
import { captureLogger, speechStats, tempDir } from './helpers';
import { eventually } from '../helpers/wait';

const run = promisify(execFile);
const SENTENCE = 'The doorbell rang at the front door, please have a look.';

let tmp: ReturnType<typeof tempDir>;
beforeAll(() => {
  tmp = tempDir('festival');
});
afterAll(() => tmp.remove());

async function failure(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );
}

/** festival processes that are children of this (jest worker) process. */
function festivalChildren(): string[] {
  const out = execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(process.pid)], { encoding: 'utf8' }).trim();
  return out ? out.split('\n').filter((l) => /festival|text2wave/.test(l)) : [];
}

test('festival and the slt HTS voice are installed (CI installs festival festvox-us-slt-hts)', () => {
  expect(existsSync('/usr/share/festival/voices/us/cmu_us_slt_arctic_hts')).toBe(true);
  expect(() => execFileSync('text2wave', ['-h'], { encoding: 'utf8' })).not.toThrow();
});

test('writes a complete WAV of a sentence: 22.05 kHz mono, seconds long, speech throughout, header sizes right', async () => {
  const out = join(tmp.dir, 'sentence.wav');
  await new FestivalProvider().synthesize(SENTENCE, 'en', out);
  const wav = readFileSync(out);
  expect(wav.toString('latin1', 0, 4)).toBe('RIFF');
  expect(wav.readUInt32LE(4)).toBe(wav.length - 8);
  expect(wav.readUInt32LE(40)).toBe(wav.length - 44);
  const s = speechStats(wav);
  expect(s.rate).toBe(22050);
  // Ten words are 2.5–6 s of speech; most of it voiced, at a level a listener hears.
  expect(s.seconds).toBeGreaterThan(2.5);
  expect(s.seconds).toBeLessThan(6);
  expect(s.voiced).toBeGreaterThan(0.5);
  expect(s.rmsDb).toBeGreaterThan(-35);
  // ffmpeg reads it as festival wrote it, to the same length.
  const { stderr } = await run('ffmpeg', ['-hide_banner', '-i', out, '-f', 'null', '-']);
  expect(stderr).not.toMatch(/error|invalid/i);
});

test('Scheme in the text stays text: spoken, never evaluated', async () => {
  const marker = join(tmp.dir, 'pwned');
  const texts = [
    `")(system "touch ${marker}")`,
    `(system "touch ${marker}")`,
    `"; (system "touch ${marker}") ;`,
    `\\")(system \\"touch ${marker}\\")`,
  ];
  for (const [i, text] of texts.entries()) {
    const out = join(tmp.dir, `inject-${i}.wav`);
    await new FestivalProvider().synthesize(text, 'en', out);
    // The text was read out (the words "system", "touch", the path): seconds of speech.
    expect({ text, seconds: speechStats(readFileSync(out)).seconds > 1 }).toEqual({ text, seconds: true });
  }
  expect(existsSync(marker)).toBe(false);
});

test('a voice that is not a festival voice name is refused before anything runs; one not installed says so', async () => {
  const provider = new FestivalProvider();
  for (const voice of ['en"); (system "touch x")', 'de', '../x', 'Voice_Upper']) {
    const e = await failure(provider.synthesize('hello', voice, join(tmp.dir, 'v.wav')));
    expect(e).toBeInstanceOf(TtsEngineError);
    expect((e as TtsEngineError).code).toBe('TtsVoiceInvalid');
  }
  const missing = await failure(provider.synthesize('hello', 'cmu_us_nobody_hts', join(tmp.dir, 'm.wav')));
  expect((missing as TtsEngineError).code).toBe('TtsVoiceMissing');
  expect((missing as Error).message).toMatch(/cmu_us_nobody_hts is not installed/);
  expect(() => new FestivalProvider({ voice: '(system "x")' })).toThrow(/invalid festival voice/);
});

test('festival not installed: TtsEngineMissing saying how to install it; through the service a TtsFailed HubError', async () => {
  const provider = new FestivalProvider({ binaryPath: '/nonexistent/text2wave' });
  const e = await failure(provider.synthesize('hello', 'en', join(tmp.dir, 'n.wav')));
  expect(e).toBeInstanceOf(TtsEngineError);
  expect((e as TtsEngineError).code).toBe('TtsEngineMissing');
  expect((e as Error).message).toBe(
    'festival is not installed (/nonexistent/text2wave not found); install it: apt-get install festival festvox-us-slt-hts',
  );

  const log = captureLogger();
  const tts = new TtsService({
    provider: createTtsProvider({ provider: 'festival', festival: { binaryPath: '/nonexistent/text2wave' } }),
    cacheDir: tmp.dir,
    logger: log.logger,
  });
  const wrapped = await failure(tts.speak('hello'));
  expect(wrapped).toBeInstanceOf(HubError);
  expect((wrapped as HubError).code).toBe('TtsFailed');
  expect((wrapped as HubError).message).toMatch(/festival is not installed.*apt-get install festival festvox-us-slt-hts/);
  expect(((wrapped as HubError).cause as TtsEngineError).code).toBe('TtsEngineMissing');
  expect(log.text()).toContain('"code":"TtsEngineMissing"');
});

test('bounded: output over the cap and a run over its time are killed with TtsEngineFailed', async () => {
  const capped = await failure(new FestivalProvider({ maxOutputBytes: 10_000 }).synthesize(SENTENCE, 'en', join(tmp.dir, 'c.wav')));
  expect((capped as TtsEngineError).code).toBe('TtsEngineFailed');
  expect((capped as Error).message).toMatch(/wrote more than 10000 bytes/);
  const slow = await failure(new FestivalProvider({ timeoutMs: 30 }).synthesize(SENTENCE, 'en', join(tmp.dir, 't.wav')));
  expect((slow as TtsEngineError).code).toBe('TtsEngineFailed');
  expect((slow as Error).message).toMatch(/timed out after 30 ms/);
  await eventually(() => festivalChildren().length === 0, 5000, 'no festival process left');
});

test('closing the service kills a running synthesis: TtsFailed (cause TtsAborted), no festival process left', async () => {
  const { logger } = captureLogger();
  const tts = new TtsService({ provider: new FestivalProvider(), cacheDir: join(tmp.dir, 'abort'), logger, maxTextLength: 5000 });
  const long = Array.from({ length: 20 }, (_, i) => `This is sentence number ${i + 1} of a long announcement.`).join(' ');
  const speaking = failure(tts.speak(long));
  await eventually(() => festivalChildren().length > 0, 10_000, 'festival running');
  await tts.close();
  const e = (await speaking) as HubError;
  expect(e.code).toBe('TtsFailed');
  expect((e.cause as TtsEngineError).code).toBe('TtsAborted');
  await eventually(() => festivalChildren().length === 0, 5000, 'festival killed');
  // The service works again after a close (a hub started again).
  expect((await tts.speak('Back again.')).duration).toBeGreaterThan(0.3);
});

test('through the service with the loudness normaliser: cached at -16 LUFS ±1 (ffmpeg ebur128), like espeak', async () => {
  const { logger } = captureLogger();
  const normaliser = new LoudnessNormaliser({ target: { integrated: -16, truePeak: -1.5 } });
  const tts = new TtsService({ provider: new FestivalProvider(), cacheDir: join(tmp.dir, 'loud'), logger, normaliser });
  const audio = await tts.speak('Dinner is ready. Please come down.');
  expect(audio.contentType).toBe('audio/wav');
  expect(await normaliser.isNormalised(audio.file)).toBe(true);
  const { stderr } = await run('ffmpeg', ['-hide_banner', '-nostats', '-i', audio.file, '-af', 'ebur128', '-f', 'null', '-']);
  const lufs = Number(/I:\s+(-?[\d.]+) LUFS/.exec(stderr.slice(stderr.lastIndexOf('Summary:')))![1]);
  expect(Math.abs(lufs + 16)).toBeLessThan(1);
});

/**
 * TTS bounds (issue 7 item 8): the cache has a byte budget besides its entry count, and the
 * synthesis queue is bounded: one text too many fails at once with TtsBusy.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { HubError } from '../../src/core/errors';
import { createLogger } from '../../src/logger';
import { EspeakProvider } from '../../src/tts/espeak';
import type { TtsProvider } from '../../src/tts/provider';
import { TtsService } from '../../src/tts/service';
import { tempDir } from './helpers';
import { eventually } from '../helpers/wait';

const logger = createLogger({ level: 'silent' });

/** The real espeak-ng provider behind a gate the test opens: syntheses wait until then. */
class GatedProvider implements TtsProvider {
  private open!: () => void;
  readonly gate = new Promise<void>((r) => (this.open = r));
  started = 0;
  constructor(private readonly inner: TtsProvider) {}
  get name() {
    return this.inner.name;
  }
  get format() {
    return this.inner.format;
  }
  release() {
    this.open();
  }
  async synthesize(text: string, voice: string, out: string): Promise<void> {
    this.started++;
    await this.gate;
    return this.inner.synthesize(text, voice, out);
  }
}

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir('tts-bounds');
});
afterEach(() => tmp.remove());

test('one text more than maxQueue fails at once with TtsBusy; the queued ones finish', async () => {
  const provider = new GatedProvider(new EspeakProvider({ mode: 'binary' }));
  const tts = new TtsService({ provider, cacheDir: tmp.dir, logger, maxQueue: 2 });
  const first = tts.speak('first announcement');
  const second = tts.speak('second announcement');
  // The same text as a queued one joins it instead of taking a place.
  const again = tts.speak('first announcement');
  // Both hold their places once they wait at the provider: each first looks the cache up, and
  // those lookups can finish in any order (a third text asked earlier could take a place).
  await eventually(() => provider.started === 2, 10_000, 'two syntheses waiting at the provider');
  const refused = await tts.speak('third announcement').then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(refused).toBeInstanceOf(HubError);
  expect((refused as HubError).code).toBe('TtsBusy');
  expect((refused as HubError).message).toMatch(/limits\.ttsQueue/);
  provider.release();
  const [a, b, c] = await Promise.all([first, second, again]);
  expect(a.file).toBe(c.file);
  expect(b.file).not.toBe(a.file);
  // With the queue free again the refused text is synthesized.
  await expect(tts.speak('third announcement')).resolves.toMatchObject({ contentType: 'audio/wav' });
});

test('the cache is trimmed to its byte budget, least recently used first', async () => {
  const probe = new TtsService({ provider: new EspeakProvider({ mode: 'binary' }), cacheDir: join(tmp.dir, 'probe'), logger });
  const one = statSync((await probe.speak('Number one is ready.')).file).size;
  // Room for about two and a half files of this size, whatever espeak-ng's exact output.
  const budget = Math.floor(one * 2.5);
  const tts = new TtsService({
    provider: new EspeakProvider({ mode: 'binary' }),
    cacheDir: join(tmp.dir, 'cache'),
    logger,
    maxCacheBytes: budget,
    maxCacheEntries: 100,
  });
  const files: string[] = [];
  for (const n of ['one', 'two', 'six', 'ten', 'owl']) {
    files.push((await tts.speak(`Number ${n} is ready.`)).file);
    await tts.idle();
  }
  const left = readdirSync(join(tmp.dir, 'cache'));
  const bytes = left.reduce((sum, f) => sum + statSync(join(tmp.dir, 'cache', f)).size, 0);
  expect(bytes).toBeLessThanOrEqual(budget);
  expect(left.length).toBeGreaterThanOrEqual(1);
  expect(left.length).toBeLessThan(5);
  // The newest entry is the one kept.
  expect(left).toContain(files[files.length - 1].split('/').pop());
});

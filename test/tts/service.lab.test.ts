import { readdirSync, statSync, utimesSync, existsSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { HubError } from '../../src/core/errors';
import { createLogger } from '../../src/logger';
import { EspeakProvider } from '../../src/tts/espeak';
import { createTtsProvider, TtsService } from '../../src/tts/service';
import { VoiceRssProvider } from '../../src/tts/voicerss';
import { CountingProvider, tempDir } from './helpers';

const logger = createLogger({ level: 'silent' });

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir('tts-service');
});
afterEach(() => tmp.remove());

function service(options: { maxTextLength?: number; maxCacheEntries?: number } = {}) {
  const provider = new CountingProvider(new EspeakProvider({ mode: 'binary' }));
  return { provider, tts: new TtsService({ provider, cacheDir: tmp.dir, logger, ...options }) };
}

async function rejection(p: Promise<unknown>): Promise<HubError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(HubError);
  return e as HubError;
}

test('synthesizes into the cache directory and reports the duration', async () => {
  const { tts } = service();
  const audio = await tts.speak('  The washing machine has finished.  ');
  expect(dirname(audio.file)).toBe(tmp.dir);
  expect(basename(audio.file)).toMatch(/^[0-9a-f]{64}\.wav$/);
  expect(audio.contentType).toBe('audio/wav');
  expect(audio.duration).toBeGreaterThan(0.5);
  // No temp file is left behind.
  expect(readdirSync(tmp.dir)).toEqual([basename(audio.file)]);
});

test('a second request is a cache hit: same file, provider not called again', async () => {
  const { tts, provider } = service();
  const first = await tts.speak('Dinner is ready.');
  const size = statSync(first.file).size;
  const second = await tts.speak('Dinner is ready.  ');
  expect(second).toEqual(first);
  expect(statSync(second.file).size).toBe(size);
  expect(provider.calls).toHaveLength(1);
  // Another voice is another entry.
  const other = await tts.speak('Dinner is ready.', 'en-gb');
  expect(other.file).not.toBe(first.file);
  expect(provider.calls).toEqual([
    { text: 'Dinner is ready.', voice: 'en' },
    { text: 'Dinner is ready.', voice: 'en-gb' },
  ]);
});

test('concurrent identical requests share one synthesis', async () => {
  const { tts, provider } = service();
  const results = await Promise.all([1, 2, 3].map(() => tts.speak('The garage door is open.')));
  expect(provider.calls).toHaveLength(1);
  expect(new Set(results.map((r) => r.file)).size).toBe(1);
});

test('empty text is InvalidParameter naming Text', async () => {
  const { tts, provider } = service();
  for (const text of ['', '   \n\t ']) {
    const e = await rejection(tts.speak(text));
    expect(e.code).toBe('InvalidParameter');
    expect(e.parameter).toBe('Text');
  }
  expect(provider.calls).toHaveLength(0);
});

test('text beyond maxTextLength is TextTooLong; the limit counts trimmed text', async () => {
  const { tts, provider } = service({ maxTextLength: 20 });
  const e = await rejection(tts.speak('a'.repeat(21)));
  expect(e.code).toBe('TextTooLong');
  expect(e.status).toBe(400);
  await expect(tts.speak(`   ${'a'.repeat(20)}   `)).resolves.toHaveProperty('contentType', 'audio/wav');
  expect(provider.calls).toHaveLength(1);
});

test('the default limit is 1000 characters', async () => {
  const { tts } = service();
  expect((await rejection(tts.speak('b'.repeat(1001)))).code).toBe('TextTooLong');
});

test("a provider failure is TtsFailed with the provider's reason and leaves no file", async () => {
  const { tts } = service();
  const e = await rejection(tts.speak('hello', 'zz-nope'));
  expect(e.code).toBe('TtsFailed');
  expect(e.message).toMatch(/espeak.*voice does not exist/);
  expect(readdirSync(tmp.dir)).toEqual([]);
});

test('evicts the least recently used entries beyond maxCacheEntries', async () => {
  const { tts } = service({ maxCacheEntries: 2 });
  const a = await tts.speak('one');
  const b = await tts.speak('two');
  // File times can tie within a fast run; age them explicitly.
  utimesSync(a.file, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
  utimesSync(b.file, new Date(Date.now() - 30_000), new Date(Date.now() - 30_000));
  await tts.speak('one'); // a hit refreshes 'one', so 'two' is now the oldest
  const c = await tts.speak('three');
  await tts.idle();
  expect(existsSync(a.file)).toBe(true);
  expect(existsSync(b.file)).toBe(false);
  expect(existsSync(c.file)).toBe(true);
  expect(readdirSync(tmp.dir)).toHaveLength(2);
});

describe('createTtsProvider', () => {
  test('builds the configured provider, on first use', async () => {
    expect(await createTtsProvider({ provider: 'espeak', espeak: { mode: 'wasm' } }).provider()).toBeInstanceOf(EspeakProvider);
    expect(await createTtsProvider({ provider: 'voicerss', voicerss: { key: 'k' } }).provider()).toBeInstanceOf(VoiceRssProvider);
  });

  test.each([
    ['espeak', { provider: 'espeak' as const }],
    ['festival', { provider: 'festival' as const }],
    ['voicerss', { provider: 'voicerss' as const, voicerss: { key: 'k' } }],
  ])("%s: the name, format and revision known before loading are the real provider's (the cache key)", async (_name, config) => {
    const lazy = createTtsProvider(config);
    const real = await lazy.provider();
    expect({ name: lazy.name, format: lazy.format, revision: lazy.revision }).toEqual({
      name: real.name,
      format: real.format,
      revision: real.revision,
    });
  });

  test('voicerss without a key still builds; speaking fails with TtsFailed saying what is missing', async () => {
    const provider = createTtsProvider({ provider: 'voicerss' });
    const tts = new TtsService({ provider, cacheDir: tmp.dir, logger });
    const e = await rejection(tts.speak('hello'));
    expect(e.code).toBe('TtsFailed');
    expect(e.message).toContain('VoiceRSS needs an application key (tts.voicerss.key)');
  });
});

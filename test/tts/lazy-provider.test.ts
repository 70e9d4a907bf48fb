/**
 * The lazy TTS provider (src/tts/lazy-provider.ts) names its cache key's parts — name, output
 * format, revision — before its engine loads. They must be the real provider's, or a cache hit
 * would be served under the wrong type, or a stale clip after an engine change.
 */
import { createTtsProvider } from '../../src/tts/service';
import { EspeakProvider } from '../../src/tts/espeak';
import { FestivalProvider } from '../../src/tts/festival';
import { VoiceRssProvider } from '../../src/tts/voicerss';
import type { TtsProvider } from '../../src/tts/provider';

const parts = (p: Pick<TtsProvider, 'name' | 'format'> & { revision?: string }) => ({ name: p.name, format: p.format, revision: p.revision });

test.each([
  ['espeak', () => new EspeakProvider({})],
  ['festival', () => new FestivalProvider({})],
  ['voicerss', () => new VoiceRssProvider({ key: 'k' })],
] as const)('%s: the lazy provider names the real one’s cache key parts', (provider, real) => {
  const lazy = createTtsProvider({ provider } as Parameters<typeof createTtsProvider>[0]);
  expect(parts(lazy)).toEqual(parts(real() as unknown as TtsProvider & { revision?: string }));
});

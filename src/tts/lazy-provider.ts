import type { TtsProvider } from './provider';

/**
 * A TTS provider whose engine module loads on its first synthesis, not when the hub starts:
 * a hub that never speaks (most of the time, and the idle RSS figure of `npm run bench`) never
 * loads espeak's, festival's or VoiceRSS's code, nor the spoken-text rules and number-to-words.
 * name, format and revision (the cache key's parts) are known up front, so the cache is
 * consulted without loading anything; test/tts/lazy-provider.test.ts checks they match the
 * real provider's. Bad configuration is still refused at start, by the config schema.
 */
export class LazyTtsProvider implements TtsProvider {
  private real?: Promise<TtsProvider>;

  constructor(
    readonly name: string,
    readonly format: { ext: string; contentType: string },
    readonly revision: string | undefined,
    private readonly load: () => Promise<TtsProvider>,
  ) {}

  /** The real provider, loaded once (a failed load is retried on the next call). */
  provider(): Promise<TtsProvider> {
    this.real ??= this.load().catch((e: unknown) => {
      this.real = undefined;
      throw e;
    });
    return this.real;
  }

  async synthesize(text: string, voice: string, outFile: string, signal?: AbortSignal): Promise<void> {
    const real = await this.provider();
    return real.synthesize(text, voice, outFile, signal);
  }
}

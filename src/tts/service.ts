import { createHash, randomBytes } from 'node:crypto';
import { mkdir, rename, stat, unlink, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { CacheTrimmer } from '../media/cache-trimmer';
import { audioDuration } from '../media/duration';
import type { MetadataReader } from '../media/metadata-reader';
import { HubError } from '../core/errors';
import { messageOf } from '../util/error-message';
import type { Logger } from '../logger';
import { TtsEngineError } from './errors';
import type { EspeakMode } from './espeak';
import { LazyTtsProvider } from './lazy-provider';
import type { TtsAudio, TtsProvider } from './provider';
import { SPOKEN_TEXT_REVISION } from './spoken-text-revision';

export interface TtsServiceOptions {
  provider: TtsProvider;
  cacheDir: string;
  /** Voice used when speak() gets none. Default 'en'. */
  voice?: string;
  maxTextLength?: number;
  maxCacheEntries?: number;
  /** Cache budget in bytes (least recently used files go first). Default 200 MiB. */
  maxCacheBytes?: number;
  /** Texts synthesizing or waiting for it at once; one more fails at once with TtsBusy. Default 16. */
  maxQueue?: number;
  logger: Logger;
  /** The hub's own metadata reader, for durations of non-WAV audio (default: the process-wide one). */
  reader?: MetadataReader;
  /**
   * Brings each synthesized text to the announcement loudness before it enters the cache, so
   * a cache hit is ready to play with no loudness work (src/audio/loudness-file.ts). Entries
   * are then WAV whatever the provider writes.
   */
  normaliser?: TtsNormaliser;
}

/** What the cache needs of src/audio/loudness-file.ts's LoudnessNormaliser. */
export interface TtsNormaliser {
  /** Names the target; part of the cache key. */
  readonly tag: string;
  /** Writes `input` at the target loudness to `output` as WAV; `ms` says where the time went. */
  normaliseFile(input: string, output: string): Promise<{ ms: Record<string, number> }>;
}

/** What a normalised cache entry is, whatever the provider writes. */
const NORMALISED = { ext: 'wav', contentType: 'audio/wav' };

// Finished cache entries only; temp files start with '.' and never match.
const CACHE_FILE = /^[0-9a-f]{64}\.[A-Za-z0-9]+$/;
/** Cache entries whose file, type and duration are kept in memory, so a hit costs one stat (least recently used go first). */
const KNOWN_ENTRIES = 256;

/** Text-to-speech with limits and a file cache in front of a provider. */
export class TtsService {
  private readonly provider: TtsProvider;
  private readonly cacheDir: string;
  private readonly voice: string;
  private readonly maxTextLength: number;
  private readonly maxQueue: number;
  /** Syntheses started and not finished (the provider may run them one at a time). */
  private synthesizing = 0;
  private readonly log: Logger;
  private readonly reader?: MetadataReader;
  private readonly normaliser?: TtsNormaliser;
  private readonly inFlight = new Map<string, Promise<TtsAudio>>();
  /** Entries found or made, by hash, least recently used first (at most KNOWN_ENTRIES). */
  private readonly known = new Map<string, TtsAudio>();
  private readonly trimmer: CacheTrimmer;
  /** Stops the running syntheses (their engines are killed) when the hub stops. */
  private stopping = new AbortController();

  constructor(options: TtsServiceOptions) {
    this.provider = options.provider;
    this.cacheDir = options.cacheDir;
    this.voice = options.voice?.trim() || 'en';
    this.maxTextLength = options.maxTextLength ?? 1000;
    this.trimmer = new CacheTrimmer({
      dir: options.cacheDir,
      files: CACHE_FILE,
      maxEntries: options.maxCacheEntries ?? 500,
      maxBytes: options.maxCacheBytes ?? 200 * 1024 * 1024,
      logger: options.logger,
      what: 'TTS cache',
    });
    this.maxQueue = Math.max(1, options.maxQueue ?? 16);
    this.log = options.logger;
    this.reader = options.reader;
    this.normaliser = options.normaliser;
  }

  /** Throws for text that can never be spoken: empty, or over maxTextLength. */
  validate(text: string): string {
    const spoken = text.trim();
    if (!spoken) throw new HubError('InvalidParameter', 'Text is empty', { parameter: 'Text' });
    if (spoken.length > this.maxTextLength) {
      throw new HubError('TextTooLong', `Text is ${spoken.length} characters; the maximum is ${this.maxTextLength}`, { parameter: 'Text' });
    }
    return spoken;
  }

  async speak(text: string, voice?: string): Promise<TtsAudio> {
    const spoken = this.validate(text);
    const useVoice = voice?.trim() || this.voice;
    const hash = this.hashOf(spoken, useVoice);
    const pending = this.inFlight.get(hash);
    if (pending) return pending;
    const job = this.produce(hash, spoken, useVoice).finally(() => this.inFlight.delete(hash));
    this.inFlight.set(hash, job);
    return job;
  }

  /**
   * The cached audio of a text, or undefined when it would have to be synthesized (or is
   * being synthesized now, or can never be spoken): never starts a synthesis. An entry seen
   * before costs one stat; announcements ask this before they answer, so that a repeated
   * text's clip is servable when the answer goes out.
   */
  async cached(text: string, voice?: string): Promise<TtsAudio | undefined> {
    const spoken = text.trim();
    if (!spoken || spoken.length > this.maxTextLength) return undefined;
    const hash = this.hashOf(spoken, voice?.trim() || this.voice);
    if (this.inFlight.has(hash)) return undefined;
    return this.lookup(hash);
  }

  private hashOf(spoken: string, voice: string): string {
    return createHash('sha256')
      .update(
        `${this.provider.name}\0${voice}\0${spoken}${this.normaliser ? `\0${this.normaliser.tag}` : ''}${this.provider.revision ? `\0${this.provider.revision}` : ''}`,
      )
      .digest('hex');
  }

  /** A finished cache entry (touched: eviction drops the least recently used), or undefined. */
  private async lookup(hash: string): Promise<TtsAudio | undefined> {
    const known = this.known.get(hash);
    if (known) {
      this.known.delete(hash);
      if (await isNonEmptyFile(known.file)) {
        this.remember(hash, known);
        await this.touch(known.file);
        return known;
      }
    }
    // Normalised entries are WAV; one the normaliser failed on stays in the provider's format.
    const names = [...(this.normaliser ? [NORMALISED] : []), this.provider.format];
    for (const { ext, contentType } of names) {
      const file = join(this.cacheDir, `${hash}.${ext}`);
      if (await isNonEmptyFile(file)) {
        await this.touch(file);
        return this.remember(hash, { file, contentType, duration: await this.duration(file), id: `tts:${hash}` });
      }
    }
    return undefined;
  }

  private remember(hash: string, audio: TtsAudio): TtsAudio {
    this.known.delete(hash);
    this.known.set(hash, audio);
    for (const k of this.known.keys()) {
      if (this.known.size <= KNOWN_ENTRIES) break;
      this.known.delete(k);
    }
    return audio;
  }

  /** Touching a hit makes eviction drop the least recently used entries, not the oldest made. */
  private async touch(file: string): Promise<void> {
    const now = new Date();
    await utimes(file, now, now).catch(() => undefined);
  }

  private async produce(hash: string, text: string, voice: string): Promise<TtsAudio> {
    const hit = await this.lookup(hash);
    if (hit) return hit;

    if (this.synthesizing >= this.maxQueue) {
      // Failing now beats a queue of announcements that would all play late.
      throw new HubError(
        'TtsBusy',
        `${this.synthesizing} texts are already being synthesized, the most allowed (limits.ttsQueue); retry in a moment.`,
      );
    }
    this.synthesizing++;
    try {
      return await this.synthesize(hash, text, voice);
    } finally {
      this.synthesizing--;
    }
  }

  private async synthesize(hash: string, text: string, voice: string): Promise<TtsAudio> {
    let { ext, contentType } = this.provider.format;
    await mkdir(this.cacheDir, { recursive: true });
    const temp = join(this.cacheDir, `.${hash}.${randomBytes(4).toString('hex')}.tmp`);
    const started = performance.now();
    let synthMs = 0;
    let loudnessMs: Record<string, number> | undefined;
    try {
      await this.provider.synthesize(text, voice, temp, this.stopping.signal);
      synthMs = Math.round(performance.now() - started);
      if (!(await isNonEmptyFile(temp))) throw new Error('no audio was written');
      let ready = temp;
      if (this.normaliser) {
        const normalised = `${temp}.wav`;
        try {
          loudnessMs = (await this.normaliser.normaliseFile(temp, normalised)).ms;
          await unlink(temp).catch(() => undefined);
          ready = normalised;
          ({ ext, contentType } = NORMALISED);
        } catch (e) {
          // The speech still plays, at the provider's level (an MP3 with no ffmpeg to decode it).
          await unlink(normalised).catch(() => undefined);
          this.log.warn({ provider: this.provider.name, err: messageOf(e) }, 'synthesized speech not normalised; cached as it is');
        }
      }
      // Readers never see a half-written file: it appears under its cache name complete.
      await rename(ready, join(this.cacheDir, `${hash}.${ext}`));
    } catch (e) {
      await unlink(temp).catch(() => undefined);
      const reason = messageOf(e);
      const code = e instanceof TtsEngineError ? e.code : undefined;
      this.log.warn({ provider: this.provider.name, voice, code, reason }, 'text-to-speech failed');
      throw new HubError('TtsFailed', `Text-to-speech (${this.provider.name}) failed: ${reason}`, { cause: e });
    }
    const file = join(this.cacheDir, `${hash}.${ext}`);
    const duration = await this.duration(file);
    this.log.debug(
      { provider: this.provider.name, voice, chars: text.length, ms: Math.round(performance.now() - started), synthMs, loudnessMs, duration },
      'text synthesized',
    );
    this.trimmer.schedule();
    return this.remember(hash, { file, contentType, duration, id: `tts:${hash}` });
  }

  private async duration(file: string): Promise<number | undefined> {
    try {
      return await audioDuration(file, this.reader);
    } catch (e) {
      // Unknown length only costs the playback engine its end-of-media estimate.
      this.log.warn({ file, err: messageOf(e) }, 'could not read TTS audio duration');
      return undefined;
    }
  }

  /** Kills the running syntheses (they fail with TtsFailed, cause TtsAborted) and waits for them to end. */
  async close(): Promise<void> {
    this.stopping.abort();
    await Promise.allSettled([...this.inFlight.values()]);
    // A hub started again synthesizes again.
    this.stopping = new AbortController();
    await this.idle();
  }

  /** Resolves when no cache trim is running (tests, shutdown). */
  idle(): Promise<void> {
    return this.trimmer.idle();
  }
}

async function isNonEmptyFile(file: string): Promise<boolean> {
  const info = await stat(file).catch(() => undefined);
  return !!info && info.isFile() && info.size > 0;
}

export interface TtsConfig {
  provider: 'espeak' | 'voicerss' | 'festival';
  /** The service's default voice; the factory does not need it. */
  voice?: string;
  espeak?: { mode?: EspeakMode; binaryPath?: string };
  festival?: { binaryPath?: string; voice?: string };
  voicerss?: { key?: string; baseUrl?: string };
}

/** What synthesize() writes, per provider: known before the provider's module loads. */
const WAV = { ext: 'wav', contentType: 'audio/wav' };
/** VoiceRSS as the hub configures it: its default codec, MP3. */
const MP3 = { ext: 'mp3', contentType: 'audio/mpeg' };

/**
 * The provider named by the hub's tts config. Its engine module loads on the first synthesis
 * (LazyTtsProvider), so an idle hub does not hold it.
 */
export function createTtsProvider(config: TtsConfig): LazyTtsProvider {
  switch (config.provider) {
    case 'espeak':
      return new LazyTtsProvider('espeak', WAV, SPOKEN_TEXT_REVISION, async () => {
        const { EspeakProvider } = await import('./espeak');
        return new EspeakProvider({ mode: config.espeak?.mode, binaryPath: config.espeak?.binaryPath });
      });
    case 'festival':
      // Built even when festival is not installed: the hub starts and each TTS request fails
      // with TtsFailed (cause TtsEngineMissing) saying how to install it.
      return new LazyTtsProvider('festival', WAV, SPOKEN_TEXT_REVISION, async () => {
        const { FestivalProvider } = await import('./festival');
        return new FestivalProvider({ binaryPath: config.festival?.binaryPath, voice: config.festival?.voice });
      });
    case 'voicerss':
      // Built even without a key: the hub starts and each TTS request fails with TtsFailed saying why.
      return new LazyTtsProvider('voicerss', MP3, undefined, async () => {
        const { VoiceRssProvider } = await import('./voicerss');
        return new VoiceRssProvider({ key: config.voicerss?.key, baseUrl: config.voicerss?.baseUrl });
      });
    default:
      throw new Error(`unknown TTS provider "${(config as { provider: unknown }).provider}"`);
  }
}

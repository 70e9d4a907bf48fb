/** A text-to-speech engine. Providers only synthesize; caching and limits are TtsService's. */
export interface TtsProvider {
  /** Short stable name, part of the cache key: 'espeak', 'voicerss'. */
  readonly name: string;
  /** File extension and MIME type of what synthesize() writes. */
  readonly format: { ext: string; contentType: string };
  /**
   * Part of the cache key when set: a change in what the provider makes of the same text
   * (src/tts/spoken-text.ts's rules) is new audio.
   */
  readonly revision?: string;
  /**
   * Writes the spoken text to outFile. Rejects with an Error whose message says why (a
   * TtsEngineError with a code from the local engines). `signal` stops it (the hub stopping).
   */
  synthesize(text: string, voice: string, outFile: string, signal?: AbortSignal): Promise<void>;
}

/** What TtsService.speak() gives the playback engine. */
export interface TtsAudio {
  file: string;
  contentType: string;
  /** Seconds (fractional), when known. */
  duration?: number;
  /**
   * What the audio is (the cache key: provider, voice, text, loudness target, revision): the
   * same id is the same speech, so the announcement clip cache keys by it instead of reading
   * and hashing the file on every announcement.
   */
  id?: string;
}

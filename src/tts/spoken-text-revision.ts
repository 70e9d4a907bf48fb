/**
 * Part of the TTS cache key: a change to src/tts/spoken-text.ts's rules is new audio for the
 * same text. Its own module so the cache key is known without loading those rules (and
 * number-to-words) before the first synthesis.
 */
export const SPOKEN_TEXT_REVISION = 'spoken-text-1';

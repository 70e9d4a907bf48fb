import path from 'node:path';

/**
 * Audio file extensions the library takes, with the MIME type speakers are told. Renderers
 * (DLNA especially) choose their decoder from this type, so it must name the container.
 */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.mp3': 'audio/mpeg',
  '.m4a': 'audio/mp4',
  '.m4p': 'audio/mp4',
  '.aac': 'audio/aac',
  '.flac': 'audio/flac',
  '.wav': 'audio/wav',
  '.ogg': 'audio/ogg',
  '.oga': 'audio/ogg',
  // Opus files are Ogg streams; renderers know audio/ogg far better than audio/opus.
  '.opus': 'audio/ogg',
  '.wma': 'audio/x-ms-wma',
  '.aif': 'audio/aiff',
  '.aiff': 'audio/aiff',
};

/** The MIME type for an audio file, or undefined when the extension is not an audio one. */
export function audioContentType(file: string): string | undefined {
  return CONTENT_TYPES[path.extname(file).toLowerCase()];
}

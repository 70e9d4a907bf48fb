import { metadataReader, type MetadataReader } from './metadata-reader';
import { wavDuration } from '../audio/wav-duration';

/** Seconds of audio in a file: from the header for WAV, else from the metadata reader. */
export async function audioDuration(file: string, reader: MetadataReader = metadataReader): Promise<number | undefined> {
  if (/\.wav$/i.test(file)) {
    const d = await wavDuration(file).catch(() => undefined);
    if (d !== undefined) return d;
  }
  return (await reader.read(file)).duration;
}

import { wavDurationFromBuffer } from '../../media/wav-duration';

/**
 * How a virtual speaker "receives" audio: it really downloads the URL, as a networked
 * speaker would, and reads the duration from the bytes. A response without Content-Length
 * is a live stream: it is checked for audio and then left, with no end.
 */
export interface ProbeResult {
  status: number;
  contentType: string;
  bytes: number;
  /** Seconds; undefined for live streams or undecodable lengths. */
  duration?: number;
  live: boolean;
}

const MAX_FILE_BYTES = 512 * 1024 * 1024;
const LIVE_SAMPLE_BYTES = 64 * 1024;

export async function probeMedia(url: string, signal: AbortSignal, timeoutMs = 15000): Promise<ProbeResult> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const res = await fetch(url, { signal: AbortSignal.any([signal, timeout]), redirect: 'follow' });
  if (!res.ok || !res.body) {
    await res.body?.cancel().catch(() => undefined);
    throw new Error(`media URL answered HTTP ${res.status}`);
  }
  const contentType = res.headers.get('content-type') ?? 'application/octet-stream';
  const live = res.headers.get('content-length') === null;
  const chunks: Buffer[] = [];
  let bytes = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(Buffer.from(value));
    bytes += value.byteLength;
    if (bytes > MAX_FILE_BYTES) {
      await reader.cancel().catch(() => undefined);
      throw new Error('media is larger than 512 MiB');
    }
    if (live && bytes >= LIVE_SAMPLE_BYTES) {
      await reader.cancel().catch(() => undefined);
      break;
    }
  }
  if (bytes === 0) throw new Error('media URL returned no data');
  let duration: number | undefined;
  if (!live) duration = wavDurationFromBuffer(chunks[0].length >= 4096 ? chunks[0] : Buffer.concat(chunks), bytes);
  if (!live && duration === undefined) {
    // Loaded on first use only: music-metadata brings Node's ESM loader with it.
    const { parseBuffer } = await import('music-metadata');
    try {
      const meta = await parseBuffer(Buffer.concat(chunks), { mimeType: contentType, size: bytes }, { duration: true });
      duration = meta.format.duration;
    } catch {
      duration = undefined;
    }
  }
  return { status: res.status, contentType, bytes, duration, live };
}

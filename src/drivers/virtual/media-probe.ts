import { wavDurationFromBuffer } from '../../audio/wav-duration';
import { redactText } from '../../redact';
import { looksLikeAudio } from './audio-sniff';

/**
 * How a virtual speaker "receives" audio: it really downloads the URL, as a networked
 * speaker would, and reads the duration from the bytes. Downloads are streamed and counted:
 * only the head (HEAD_BYTES) is kept, enough for every header the duration is read from, so a
 * 385 MiB file costs 2 MiB of memory, not 385. One download serves every virtual speaker of a
 * play (MediaDownloads). A response without Content-Length (chunked, as Home Assistant serves
 * its TTS, or a live stream) is checked for audio and then read on, as a speaker decodes it: the
 * end of its body is the end of the media (issue 28), and its duration is read from what came.
 */
export interface ProbeResult {
  status: number;
  contentType: string;
  /** Bytes received so far; for a finite file, the whole length once the download is done. */
  bytes: number;
  /** Seconds; undefined for media of unknown length (until its end) or undecodable lengths. */
  duration?: number;
  /** True when the length was unknown at the start: no Content-Length, and the body went on past the first sample. */
  live: boolean;
  /**
   * Only when `live`: resolves once the body has ended (read to its end, or the connection
   * broke) with the duration of what arrived, undefined if that cannot be decoded (it never
   * rejects). A stream that never ends never resolves it (until every speaker lets go and the
   * download is aborted).
   */
  end?: Promise<number | undefined>;
}

/** Kept in memory per download: ID3v2 tags with cover art, MP4 'moov' of faststart files, Xing headers. */
export const HEAD_BYTES = 2 * 1024 * 1024;
const LIVE_SAMPLE_BYTES = 64 * 1024;

/**
 * Why a fetch failed. The message a client sees is the same for every cause (an HTTP
 * status, a refused connection, a DNS failure): told apart, they would map which loopback
 * ports are open (issue 7, item 11). `detail` is for the log, at debug level.
 */
export class MediaFetchError extends Error {
  constructor(
    readonly detail: string,
    message = MEDIA_FETCH_FAILED,
  ) {
    super(message);
  }
}

/** The one message for every fetch failure: an error status, no answer, an empty or non-audio body. */
export const MEDIA_FETCH_FAILED = 'the media URL could not be fetched or does not serve audio';

interface Download {
  /** Resolves once the head is read and the duration known. */
  result: Promise<ProbeResult>;
  /** Resolves with the total byte count when the body has been read to its end (or given up). */
  done: Promise<number>;
  controller: AbortController;
  users: number;
}

/**
 * Downloads shared by URL: speakers that ask for a URL while it is being fetched join that
 * download. It is aborted when every speaker that joined has let go of it (stopped, replaced).
 */
export class MediaDownloads {
  private readonly active = new Map<string, Download>();

  /**
   * `refuseUrl`, when given, is asked about every redirect target (the first URL was checked
   * by the core): true refuses it, so a public URL cannot redirect into the hub's loopback.
   */
  constructor(
    private readonly timeoutMs = 15000,
    private readonly refuseUrl?: (url: string) => Promise<boolean>,
  ) {}

  /** How many downloads run now (tests check that a party play fetches once). */
  get size(): number {
    return this.active.size;
  }

  fetch(url: string, signal: AbortSignal): { result: Promise<ProbeResult>; done: Promise<number> } {
    let d = this.active.get(url);
    if (!d) {
      const controller = new AbortController();
      const started = startDownload(url, controller.signal, this.timeoutMs, this.refuseUrl);
      d = { ...started, controller, users: 0 };
      const entry = d;
      this.active.set(url, entry);
      const forget = () => {
        if (this.active.get(url) === entry) this.active.delete(url);
      };
      // A failed head ends the sharing at once; a finished body too.
      entry.result.catch(forget);
      void entry.done.then(forget, forget);
    }
    const entry = d;
    entry.users++;
    let left = false;
    const leave = () => {
      if (left) return;
      left = true;
      if (--entry.users === 0) {
        entry.controller.abort();
        if (this.active.get(url) === entry) this.active.delete(url);
      }
    };
    if (signal.aborted) leave();
    else signal.addEventListener('abort', leave, { once: true });
    const result = new Promise<ProbeResult>((resolve, reject) => {
      signal.addEventListener('abort', () => reject(new MediaFetchError('aborted', 'playback was replaced before it started')), { once: true });
      entry.result.then(resolve, reject);
    });
    return { result, done: entry.done };
  }
}

const MAX_REDIRECTS = 5;

/** fetch(), following redirects by hand when each hop must be checked. */
async function fetchChecked(url: string, signal: AbortSignal, refuseUrl?: (url: string) => Promise<boolean>): Promise<Response> {
  if (!refuseUrl) return fetch(url, { signal, redirect: 'follow' });
  let current = url;
  for (let hop = 0; ; hop++) {
    const res = await fetch(current, { signal, redirect: 'manual' });
    const location = res.headers.get('location');
    if (res.status < 300 || res.status >= 400 || !location) return res;
    await res.body?.cancel().catch(() => undefined);
    if (hop >= MAX_REDIRECTS) throw new MediaFetchError('too many redirects');
    current = new URL(location, current).toString();
    if (await refuseUrl(current)) throw new MediaFetchError('redirected to a loopback or link-local address');
  }
}

function startDownload(
  url: string,
  signal: AbortSignal,
  timeoutMs: number,
  refuseUrl?: (url: string) => Promise<boolean>,
): { result: Promise<ProbeResult>; done: Promise<number> } {
  let resolveDone!: (n: number) => void;
  const done = new Promise<number>((r) => (resolveDone = r));
  const result = (async (): Promise<ProbeResult> => {
    // The deadline covers the answer and the head, not the rest of a long file.
    const headTimeout = new AbortController();
    const timer = setTimeout(() => headTimeout.abort(), timeoutMs);
    let bytes = 0;
    try {
      let res: Response;
      try {
        res = await fetchChecked(url, AbortSignal.any([signal, headTimeout.signal]), refuseUrl);
      } catch (e) {
        if (e instanceof MediaFetchError) throw e;
        throw new MediaFetchError(headTimeout.signal.aborted ? `no answer within ${timeoutMs} ms` : causeOf(e));
      }
      if (!res.ok || !res.body) {
        await res.body?.cancel().catch(() => undefined);
        throw new MediaFetchError(`HTTP ${res.status}`);
      }
      const contentType = res.headers.get('content-type') ?? 'application/octet-stream';
      const lengthHeader = res.headers.get('content-length');
      const live = lengthHeader === null;
      const length = live ? undefined : Number(lengthHeader);
      const reader = res.body.getReader();
      const head: Buffer[] = [];
      let headBytes = 0;
      const want = live ? LIVE_SAMPLE_BYTES : HEAD_BYTES;
      let bodyEnded = false;
      try {
        while (headBytes < want) {
          const { done: end, value } = await reader.read();
          if (end) {
            bodyEnded = true;
            break;
          }
          bytes += value.byteLength;
          const room = want - headBytes;
          const part = value.byteLength > room ? value.subarray(0, room) : value;
          head.push(Buffer.from(part));
          headBytes += part.byteLength;
        }
      } catch (e) {
        throw new MediaFetchError(headTimeout.signal.aborted ? `no data within ${timeoutMs} ms` : causeOf(e));
      }
      clearTimeout(timer);
      if (bytes === 0) throw new MediaFetchError('empty body');
      const headBuf = Buffer.concat(head);
      if (!looksLikeAudio(contentType, headBuf)) {
        await reader.cancel().catch(() => undefined);
        throw new MediaFetchError(`not audio: content type ${contentType}, no known audio signature`);
      }
      if (live && bodyEnded) {
        // A short chunked body, whole in the sample: its length is known after all.
        resolveDone(bytes);
        return { status: res.status, contentType, bytes, duration: await durationOf(headBuf, contentType, bytes, true), live: false };
      }
      if (live) {
        // Read on, keeping up to HEAD_BYTES for the duration: when the body ends, so does the media.
        const ended = readToEnd(reader, bytes, headBuf);
        void ended.then((r) => resolveDone(r.bytes));
        // Never rejects: an undecodable end is an unknown duration (the speaker then ends where it is).
        const end = ended.then((r) => durationOf(r.head, contentType, r.bytes, r.bytes <= HEAD_BYTES)).catch(() => undefined);
        return { status: res.status, contentType, bytes, live, end };
      }
      // The rest is read and counted, never kept; it goes on after the play has started.
      const complete = bytes >= (length ?? 0);
      void drain(reader, bytes).then(resolveDone);
      const total = length !== undefined && Number.isFinite(length) && length > 0 ? length : bytes;
      const duration = await durationOf(headBuf, contentType, total, complete);
      return { status: res.status, contentType, bytes, duration, live };
    } catch (e) {
      clearTimeout(timer);
      resolveDone(bytes);
      throw e;
    }
  })();
  result.catch(() => undefined);
  return { result, done };
}

/** Reads a body of unknown length to its end (or break), keeping its first HEAD_BYTES. */
async function readToEnd(reader: ReadableStreamDefaultReader<Uint8Array>, counted: number, sample: Buffer): Promise<{ bytes: number; head: Buffer }> {
  const parts: Buffer[] = [sample];
  let kept = sample.byteLength;
  let bytes = counted;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      if (kept < HEAD_BYTES) {
        const part = value.byteLength > HEAD_BYTES - kept ? value.subarray(0, HEAD_BYTES - kept) : value;
        parts.push(Buffer.from(part));
        kept += part.byteLength;
      }
    }
  } catch {
    // Aborted (every speaker let go) or the connection broke: a speaker's playback ends where its data does.
  }
  return { bytes, head: Buffer.concat(parts) };
}

async function drain(reader: ReadableStreamDefaultReader<Uint8Array>, counted: number): Promise<number> {
  let bytes = counted;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return bytes;
      bytes += value.byteLength;
    }
  } catch {
    return bytes; // aborted (every speaker let go) or the connection broke: counted so far
  }
}

/** Duration from the head: exact when the whole file is in it, else from headers, else estimated from the bitrate. */
async function durationOf(head: Buffer, contentType: string, total: number, complete: boolean): Promise<number | undefined> {
  const wav = wavDurationFromBuffer(head, total);
  if (wav !== undefined) return wav;
  // Loaded on first use only: music-metadata brings Node's ESM loader with it.
  const { parseBuffer } = await import('music-metadata');
  try {
    const meta = await parseBuffer(head, { mimeType: contentType, size: total }, { duration: complete });
    const { duration, bitrate } = meta.format;
    if (complete || !bitrate) return duration;
    // Without a length header (Xing/VBRI, STREAMINFO, mvhd) the parser counted only the head's frames.
    const estimate = (total * 8) / bitrate;
    return duration === undefined || duration < estimate * 0.9 ? estimate : duration;
  } catch {
    return undefined;
  }
}

/** The fault for the log (debug): message, code and, for a refused or failed connection, where to. */
function causeOf(e: unknown): string {
  const err = e as { message?: string; cause?: { code?: string; message?: string; address?: string; port?: number } };
  const where = err.cause?.address ? `${err.cause.address}${err.cause.port ? `:${err.cause.port}` : ''}` : undefined;
  return redactText([err.message, err.cause?.code ?? err.cause?.message, where].filter(Boolean).join(': ') || String(e));
}

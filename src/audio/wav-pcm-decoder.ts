import { get as httpGet, type ClientRequest, type IncomingMessage } from 'node:http';
import { get as httpsGet } from 'node:https';
import { redactUrl } from '../redact';
import type { PcmFormat } from './duck-mix';
import { PcmDecoder, type PcmDecoderOptions, type PcmSink } from './pcm-decoder';
import { readWavInfo, sampleReader, type WavInfo } from './pcm-wav';
import { settleOnce } from '../util/settle-once';

/**
 * What a feed reads PCM from: an ffmpeg decode (PcmDecoder) or a WAV converted in process
 * (WavPcmDecoder); both start at the first PCM and are paced by pause()/resume().
 */
export interface PcmSource {
  readonly exited: boolean;
  readonly paused: boolean;
  start(sink: PcmSink): Promise<void>;
  pause(): void;
  resume(): void;
  stop(): void;
}

/**
 * The largest WAV converted in process (bytes): an announcement clip, a chime (espeak's 22 kHz
 * mono is ~44 KB a second, so this is minutes of speech). Anything larger, a music track kept
 * as WAV, is ffmpeg's, which streams it instead of holding it whole in memory.
 */
export const MAX_IN_PROCESS_WAV_BYTES = 8 << 20;
/** PCM handed on per step (ms of the target format); one step per turn of the event loop. */
const CHUNK_MS = 100;

const WAV_TYPES = new Set(['audio/wav', 'audio/x-wav', 'audio/wave', 'audio/vnd.wave']);

/**
 * Whether a media URL is worth trying in process: an http(s) URL of a WAV by its content type
 * or its path. Whatever turns out not to be a plain PCM WAV still plays, through ffmpeg.
 */
export function inProcessCandidate(url: string, contentType?: string): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return false;
  const type = contentType?.split(';')[0].trim().toLowerCase();
  return (type !== undefined && WAV_TYPES.has(type)) || /\.wav$/i.test(u.pathname);
}

/**
 * A PCM source for `url`: converted in process when it is a WAV (no ffmpeg to spawn, which
 * costs ~100 ms on a busy machine before the first sample of a cached announcement clip),
 * else an ffmpeg decode.
 */
export function pcmSourceFor(opts: PcmDecoderOptions & { contentType?: string }): PcmSource {
  return inProcessCandidate(opts.url, opts.contentType) ? new WavPcmDecoder(opts) : new PcmDecoder(opts);
}

/**
 * A PCM WAV fetched whole (at most MAX_IN_PROCESS_WAV_BYTES) and converted in process to the
 * feed's format: linear-interpolation resampling (ample for speech and chimes, which is what
 * is short enough to come here), channels duplicated or averaged, 16- or 32-bit out, with
 * startAt and padMs as ffmpeg's -ss and apad would do them. Handed on a chunk per turn of the
 * event loop, so a long clip never blocks it. A URL that is not one (another format, too
 * large, an error answer, unreachable) goes to ffmpeg after all, which decodes it or fails
 * with the usual error.
 */
export class WavPcmDecoder implements PcmSource {
  private inner?: PcmDecoder;
  private req?: ClientRequest;
  private stopped = false;
  private _exited = false;
  private _paused = false;
  private next?: () => void;

  constructor(private readonly opts: PcmDecoderOptions) {}

  get exited(): boolean {
    return this.inner ? this.inner.exited : this._exited;
  }

  get paused(): boolean {
    return this.inner ? this.inner.paused : this._paused;
  }

  pause(): void {
    if (this.inner) this.inner.pause();
    else this._paused = true;
  }

  resume(): void {
    if (this.inner) return this.inner.resume();
    if (!this._paused) return;
    this._paused = false;
    if (!this.stopped && !this._exited && this.next) setImmediate(this.next);
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.req?.destroy();
    this.inner?.stop();
  }

  start(sink: PcmSink): Promise<void> {
    const { startTimeoutMs, what } = this.opts;
    const t0 = performance.now();
    return new Promise<void>((resolve, reject) => {
      const settle = settleOnce(resolve, reject, { ms: startTimeoutMs, message: () => `no audio from ${what} within ${startTimeoutMs} ms` }, () =>
        this.stop(),
      );
      this.fetch()
        .then((wav) => {
          if (settle.settled) return;
          if (this.stopped) return settle(new Error('playback was replaced before it started'));
          const info = wav && readWavInfo(wav);
          if (!wav || !info) {
            // Not a PCM WAV after all: ffmpeg's (it has the rest of the start's time).
            this.opts.logger.debug({ url: redactUrl(this.opts.url) }, 'not a plain PCM WAV: decoding it with ffmpeg');
            const left = Math.max(1, startTimeoutMs - (performance.now() - t0));
            this.inner = new PcmDecoder({ ...this.opts, startTimeoutMs: left });
            this.inner.start(sink).then(
              () => settle(),
              (e: Error) => settle(e),
            );
            return;
          }
          const chunks = convertWav(wav, info, this.opts.format, this.opts.startAt ?? 0, this.opts.padMs ?? 0);
          this.opts.logger.debug(
            { url: redactUrl(this.opts.url), from: `${info.rate}:${info.bits}:${info.channels}`, ms: Math.round(performance.now() - t0) },
            'WAV converted in process (no ffmpeg)',
          );
          this.emit(chunks, sink, settle);
        })
        .catch((e: Error) => settle(e));
    });
  }

  /** Hands the chunks on one per turn of the event loop, while not paused. */
  private emit(chunks: Iterator<Buffer>, sink: PcmSink, settle: (e?: Error) => void): void {
    let any = false;
    const step = () => {
      if (this.stopped || this._paused) return;
      const r = chunks.next();
      if (r.done) {
        this._exited = true;
        if (!any) {
          // As ffmpeg does for a start past the end: nothing to play.
          settle(new Error('ffmpeg could not play the media: the media URL could not be fetched or does not serve audio'));
          return;
        }
        sink.end(undefined);
        return;
      }
      any = true;
      if (sink.data(r.value)) settle();
      if (!this._paused) setImmediate(step);
    };
    this.next = step;
    step();
  }

  /** The body of the URL when it answers 200 with at most MAX_IN_PROCESS_WAV_BYTES; undefined otherwise (left to ffmpeg). */
  private fetch(): Promise<Buffer | undefined> {
    return new Promise((resolve) => {
      const get = this.opts.url.startsWith('https:') ? httpsGet : httpGet;
      let req: ClientRequest;
      try {
        req = get(this.opts.url, (res: IncomingMessage) => {
          const length = Number(res.headers['content-length'] ?? NaN);
          if (res.statusCode !== 200 || length > MAX_IN_PROCESS_WAV_BYTES) {
            res.resume();
            req.destroy();
            return resolve(undefined);
          }
          const parts: Buffer[] = [];
          let size = 0;
          res.on('data', (d: Buffer) => {
            size += d.length;
            if (size > MAX_IN_PROCESS_WAV_BYTES) {
              req.destroy();
              return resolve(undefined);
            }
            parts.push(d);
          });
          res.on('end', () => resolve(Buffer.concat(parts)));
          res.on('error', () => resolve(undefined));
          res.on('aborted', () => resolve(undefined));
        });
      } catch {
        return resolve(undefined);
      }
      this.req = req;
      req.on('error', () => resolve(undefined));
    });
  }
}

/**
 * The WAV's samples in `to`'s format, in chunks of CHUNK_MS: from `startAt` seconds on, then
 * `padMs` of silence. Linear interpolation between source frames; a mono source goes to every
 * channel, a mono target gets the average, other counts map channel c to c modulo the source's.
 */
export function* convertWav(wav: Buffer, info: WavInfo, to: PcmFormat, startAt: number, padMs: number): Generator<Buffer> {
  const bytes = info.bits / 8;
  const frameBytes = bytes * info.channels;
  const srcFrames = Math.floor(Math.min(info.dataBytes, wav.length - info.dataOffset) / frameBytes);
  const read = sampleReader(wav, info);
  const at = (frame: number, ch: number) => read(info.dataOffset + frame * frameBytes + ch * bytes);
  const ratio = info.rate / to.rate;
  const total = srcFrames > 0 ? Math.floor((srcFrames - 1) / ratio) + 1 : 0;
  const first = Math.max(0, Math.round(startAt * to.rate));
  const pad = Math.max(0, Math.round((padMs / 1000) * to.rate));
  const outBytes = to.bits / 8;
  const outFrame = outBytes * to.channels;
  const perChunk = Math.max(1, Math.round((CHUNK_MS / 1000) * to.rate));
  const value = (frame: number, ch: number): number => {
    if (to.channels === 1 && info.channels > 1) {
      let sum = 0;
      for (let c = 0; c < info.channels; c++) sum += at(frame, c);
      return sum / info.channels;
    }
    return at(frame, info.channels === 1 ? 0 : ch % info.channels);
  };
  const last = srcFrames - 1;
  for (let i = first; i < total;) {
    const n = Math.min(perChunk, total - i);
    const out = Buffer.alloc(n * outFrame);
    for (let k = 0; k < n; k++, i++) {
      const pos = i * ratio;
      const i0 = Math.floor(pos);
      const frac = pos - i0;
      const i1 = i0 < last ? i0 + 1 : last;
      for (let c = 0; c < to.channels; c++) {
        const a = value(i0, c);
        const v = frac === 0 ? a : a + (value(i1, c) - a) * frac;
        write(out, k * outFrame + c * outBytes, v, to.bits);
      }
    }
    yield out;
  }
  for (let left = pad; left > 0;) {
    const n = Math.min(perChunk, left);
    left -= n;
    yield Buffer.alloc(n * outFrame);
  }
}

function write(out: Buffer, at: number, v: number, bits: 16 | 32): void {
  if (bits === 16) {
    const s = Math.round(v * 32768);
    out.writeInt16LE(s > 32767 ? 32767 : s < -32768 ? -32768 : s, at);
  } else {
    const s = Math.round(v * 2_147_483_648);
    out.writeInt32LE(s > 2_147_483_647 ? 2_147_483_647 : s < -2_147_483_648 ? -2_147_483_648 : s, at);
  }
}

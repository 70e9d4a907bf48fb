import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import type { Socket } from 'node:net';
import type { Logger } from '../../logger';
import { redactUrl } from '../../redact';

/** snapserver's `sampleformat=rate:bits:channels`. */
export interface SampleFormat {
  rate: number;
  bits: 16 | 32;
  channels: number;
}

export const DEFAULT_SAMPLE_FORMAT = '48000:16:2';

export function parseSampleFormat(text: string): SampleFormat {
  const m = /^(\d+):(\d+):(\d+)$/.exec(text.trim());
  if (!m) throw new Error(`cannot parse sample format '${text}'`);
  const [rate, bits, channels] = [Number(m[1]), Number(m[2]), Number(m[3])];
  // 24-bit snapcast samples sit in 4-byte containers, which no ffmpeg raw format writes.
  if (bits !== 16 && bits !== 32) throw new Error(`sample format ${text}: only 16 and 32 bit streams can be fed`);
  if (!(rate >= 8000 && rate <= 384000) || !(channels >= 1 && channels <= 8)) throw new Error(`unsupported sample format '${text}'`);
  return { rate, bits, channels };
}

export function bytesPerSecond(f: SampleFormat): number {
  return f.rate * (f.bits / 8) * f.channels;
}

/** Media URLs carry the media server's capability id; it must reach neither logs nor error texts. */
export function safeUrl(url: string): string {
  return redactUrl(url);
}

/** ffmpeg knows mms only as mmsh/mmst; the spec's 'rstp' is a typo for rtsp. */
function ffmpegUrl(url: string): string {
  return url.replace(/^rstp:/i, 'rtsp:').replace(/^mms:/i, 'mmsh:');
}

export interface FeedOptions {
  url: string;
  /** Seconds into the media (ffmpeg -ss: resume and late joiners). */
  startAt: number;
  format: SampleFormat;
  ffmpegPath: string;
  startTimeoutMs: number;
  logger: Logger;
}

export interface FeedEvents {
  /** The whole media was decoded and handed to snapserver. */
  end: [];
  /** Decoding or writing failed after the feed had started (not 'error': nobody may be listening yet). */
  failed: [error: Error];
}

type Ffmpeg = ChildProcessByStdio<null, Readable, Readable>;

/**
 * One decode of one media into one snapserver source. ffmpeg paces itself (-re) so what
 * was handed over is what snapserver is about to send, which makes "bytes fed" the
 * position. The first PCM is held until attach(): the caller first points the clients at
 * the stream, so nobody misses the start, and a URL that cannot be decoded fails before
 * any group is touched.
 */
export class Feed extends EventEmitter<FeedEvents> {
  private proc?: Ffmpeg;
  private held: Buffer[] = [];
  private sink?: Socket;
  private fed = 0;
  private stderr = '';
  private stopped = false;
  private completed = false;
  private _failure?: Error;
  private exited = false;
  private readonly bps: number;
  private readonly log: Logger;

  constructor(private readonly opts: FeedOptions) {
    super();
    this.bps = bytesPerSecond(opts.format);
    this.log = opts.logger;
  }

  get url(): string {
    return this.opts.url;
  }

  /** Seconds into the media of the last PCM handed to snapserver. */
  get position(): number {
    return this.opts.startAt + this.fed / this.bps;
  }

  /** Why the feed failed after it had started, if it did. */
  get failure(): Error | undefined {
    return this._failure;
  }

  /** Stopped by stop() before its media was completely fed. */
  get aborted(): boolean {
    return this.stopped && !this.completed;
  }

  get running(): boolean {
    return !this.stopped && !this.exited;
  }

  /** Spawns ffmpeg; resolves at the first PCM, rejects if ffmpeg fails, times out or is stopped first. */
  start(): Promise<void> {
    const { url, startAt, format, ffmpegPath } = this.opts;
    const codec = format.bits === 16 ? 's16le' : 's32le';
    const input = ffmpegUrl(url);
    const args = [
      '-hide_banner',
      '-nostdin',
      '-loglevel',
      'error',
      // Network stalls end the play instead of hanging it (microseconds).
      ...(/^https?:/i.test(input) ? ['-rw_timeout', '15000000'] : []),
      '-re',
      ...(startAt > 0 ? ['-ss', startAt.toFixed(3)] : []),
      '-i',
      input,
      '-vn',
      '-sn',
      '-dn',
      '-f',
      codec,
      '-acodec',
      `pcm_${codec}`,
      '-ar',
      String(format.rate),
      '-ac',
      String(format.channels),
      'pipe:1',
    ];
    this.log.debug({ url: safeUrl(url), startAt, format }, 'starting ffmpeg');
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const settle = (error?: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (error) {
          this.stop();
          reject(error);
        } else resolve();
      };
      const timer = setTimeout(() => settle(new Error(`no audio from the media within ${this.opts.startTimeoutMs} ms`)), this.opts.startTimeoutMs);
      let proc: Ffmpeg;
      try {
        proc = spawn(ffmpegPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      } catch (e) {
        settle(new Error(`cannot run ffmpeg: ${(e as Error).message}`));
        return;
      }
      this.proc = proc;
      proc.stderr.setEncoding('utf8');
      proc.stderr.on('data', (d: string) => {
        this.stderr = (this.stderr + d).slice(-2000);
      });
      proc.on('error', (e) => settle(new Error(`cannot run ffmpeg (${ffmpegPath}): ${e.message}`)));
      proc.stdout.on('data', (chunk: Buffer) => {
        if (this.stopped) return;
        if (this.sink) this.write(chunk);
        else this.held.push(chunk);
        settle();
      });
      proc.on('close', (code, signal) => {
        this.exited = true;
        if (this.stopped) {
          settle(new Error('playback was replaced before it started'));
          return;
        }
        if (!settled) {
          // One message for every cause: ffmpeg's own ("Connection refused", "404 Not Found")
          // would tell a client which ports on the hub's machine are open. The cause is logged.
          this.log.debug({ cause: code === 0 ? 'no audio in the media' : this.reason(code, signal) }, 'ffmpeg could not play the media');
          settle(new Error('ffmpeg could not play the media: the media URL could not be fetched or does not serve audio'));
          return;
        }
        if (code === 0) this.finish();
        else this.fail(new Error(`decoding stopped: ${this.reason(code, signal)}`));
      });
    });
  }

  /** Hands the held PCM and everything after it to snapserver. */
  attach(sink: Socket): void {
    if (this.stopped) {
      sink.destroy();
      return;
    }
    this.sink = sink;
    if (sink.destroyed) {
      this.fail(new Error('snapserver closed the source connection'));
      return;
    }
    sink.on('error', (e) => this.fail(new Error(`snapserver source connection failed: ${e.message}`)));
    // snapserver never closes its side of a source connection; an unexpected close means it went away.
    sink.on('close', () => {
      if (!this.stopped && !this.exited) this.fail(new Error('snapserver closed the source connection'));
    });
    const held = this.held;
    this.held = [];
    for (const chunk of held) this.write(chunk);
    if (this.exited) this.finish();
  }

  /** Stops decoding and drops the source connection; no events follow. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.held = [];
    this.proc?.stdout.destroy();
    if (!this.exited) this.proc?.kill('SIGKILL');
    this.sink?.destroy();
  }

  private write(chunk: Buffer): void {
    const sink = this.sink!;
    const ok = sink.write(chunk, (err) => {
      if (!err) this.fed += chunk.length;
    });
    if (!ok && this.proc) {
      const out = this.proc.stdout;
      out.pause();
      sink.once('drain', () => out.resume());
    }
  }

  private finish(): void {
    const sink = this.sink;
    // Not attached yet: attach() will finish once it has written the held PCM.
    if (!sink || this.stopped) return;
    sink.end(() => {
      if (this.stopped) return;
      this.completed = true;
      this.stopped = true;
      sink.destroy();
      this.log.debug({ seconds: this.position }, 'media fed completely');
      this.emit('end');
    });
  }

  private fail(error: Error): void {
    if (this.stopped) return;
    this._failure = error;
    this.stop();
    this.log.warn({ err: error.message }, 'feed failed');
    this.emit('failed', error);
  }

  private reason(code: number | null, signal: NodeJS.Signals | null): string {
    const last = this.stderr.trim().split('\n').filter(Boolean).pop();
    const text = last ? last.split(this.opts.url).join(safeUrl(this.opts.url)) : `exit ${code ?? signal}`;
    return safeUrl(text);
  }
}

import type { Logger } from '../logger';
import { redactUrl } from '../redact';
import type { PcmFormat } from './duck-mix';
import { ffmpegInput, startFfmpeg, type FfmpegRun } from './ffmpeg';
import { settleOnce } from '../util/settle-once';

export { ffmpegInputUrl } from './ffmpeg';

export interface PcmDecoderOptions {
  url: string;
  format: PcmFormat;
  /** Seconds into the media (ffmpeg -ss: resume and late joiners). */
  startAt?: number;
  /** ms of silence after the media. */
  padMs?: number;
  ffmpegPath: string;
  /** The first PCM must come within this long, or start() rejects. */
  startTimeoutMs: number;
  /** What the media is called in the timeout's error ("the media", "the announcement"). */
  what: string;
  logger: Logger;
}

/** Where a decode's PCM goes. */
export interface PcmSink {
  /** A chunk of PCM as ffmpeg wrote it; true once the decode counts as started (start() resolves). */
  data(chunk: Buffer): boolean;
  /** ffmpeg exited by itself after the start: `failure` says why when it did not reach the media's end. */
  end(failure?: string): void;
}

/** ffmpeg's arguments that decode a media URL to raw PCM on its stdout, as fast as it is read. */
export function pcmDecodeArgs(o: Pick<PcmDecoderOptions, 'url' | 'format' | 'startAt' | 'padMs'>): string[] {
  const codec = o.format.bits === 16 ? 's16le' : 's32le';
  return [
    ...ffmpegInput(o.url, o.startAt),
    '-vn',
    '-sn',
    '-dn',
    ...(o.padMs ? ['-af', `apad=pad_dur=${(o.padMs / 1000).toFixed(3)}`] : []),
    '-f',
    codec,
    '-acodec',
    `pcm_${codec}`,
    '-ar',
    String(o.format.rate),
    '-ac',
    String(o.format.channels),
    'pipe:1',
  ];
}

/**
 * One ffmpeg decode of a media URL to raw PCM, for a consumer that paces it (a Snapcast feed,
 * a ducked announcement's voice): start() resolves at the first PCM and rejects, with one
 * message for every cause, when there is none (the URL does not play, ffmpeg is missing, the
 * timeout passed, or the decode was stopped first). pause()/resume() hold ffmpeg back while
 * the consumer has enough (bounded memory whatever the media's length).
 */
export class PcmDecoder {
  private run?: FfmpegRun;
  private stopped = false;
  private _exited = false;

  constructor(private readonly opts: PcmDecoderOptions) {}

  /** ffmpeg has exited (whatever it decoded has been handed to the sink). */
  get exited(): boolean {
    return this._exited;
  }

  get paused(): boolean {
    return this.run?.stdout.isPaused() ?? false;
  }

  pause(): void {
    this.run?.stdout.pause();
  }

  /** Lets ffmpeg go on; nothing once the decode is stopped or ffmpeg has exited. */
  resume(): void {
    if (!this.stopped && !this._exited) this.run?.stdout.resume();
  }

  start(sink: PcmSink): Promise<void> {
    const { url, ffmpegPath, startTimeoutMs } = this.opts;
    return new Promise<void>((resolve, reject) => {
      const settle = settleOnce(
        resolve,
        reject,
        { ms: startTimeoutMs, message: () => `no audio from ${this.opts.what} within ${startTimeoutMs} ms` },
        () => this.stop(),
      );
      let run: FfmpegRun;
      try {
        run = startFfmpeg(pcmDecodeArgs(this.opts), { ffmpegPath });
      } catch (e) {
        settle(new Error(`cannot run ffmpeg: ${(e as Error).message}`));
        return;
      }
      this.run = run;
      const proc = run.proc;
      proc.on('error', (e) => settle(new Error(run.startError(e))));
      proc.stdout.on('data', (chunk: Buffer) => {
        if (this.stopped) return;
        if (sink.data(chunk)) settle();
      });
      proc.on('close', (code, signal) => {
        this._exited = true;
        if (this.stopped) {
          settle(new Error('playback was replaced before it started'));
          return;
        }
        if (!settle.settled) {
          // One message for every cause: ffmpeg's own ("Connection refused", "404 Not Found")
          // would tell a client which ports on the hub's machine are open. The cause is logged.
          this.opts.logger.debug(
            { url: redactUrl(url), cause: code === 0 ? 'no audio in the media' : this.reason(code, signal) },
            'ffmpeg could not play the media',
          );
          settle(new Error('ffmpeg could not play the media: the media URL could not be fetched or does not serve audio'));
          return;
        }
        sink.end(code === 0 ? undefined : this.reason(code, signal));
      });
    });
  }

  /** Ends the decode; nothing more reaches the sink. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.run?.stdout.destroy();
    if (!this._exited) this.run?.kill();
  }

  /** ffmpeg's last error line (the media URL's secrets cut out), or its exit. */
  private reason(code: number | null, signal: NodeJS.Signals | null): string {
    const last = this.run?.lastLine();
    const text = last ? last.split(this.opts.url).join(redactUrl(this.opts.url)) : `exit ${code ?? signal}`;
    return redactUrl(text);
  }
}

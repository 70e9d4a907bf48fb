import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

/**
 * The hub's one way to run ffmpeg (Music Assistant's "one ffmpeg helper"): every decode —
 * Snapcast's and the announcement mixer's PCM, Squeezebox's stream, AirPlay's RTP feed, the
 * clip and loudness reads — starts here, so every one reads an input the same way (URL scheme
 * mapping, network stall timeout, start offset), prints the same way, and keeps a bounded tail
 * of what ffmpeg said.
 */

/** ffmpeg knows mms only as mmsh/mmst; the spec's 'rstp' is a typo for rtsp. */
export function ffmpegInputUrl(url: string): string {
  return url.replace(/^rstp:/i, 'rtsp:').replace(/^mms:/i, 'mmsh:');
}

/** The arguments that read `url` from `startAt` seconds: a network read that stalls for 15 s ends the run instead of hanging it. */
export function ffmpegInput(url: string, startAt = 0): string[] {
  const input = ffmpegInputUrl(url);
  return [
    // Microseconds.
    ...(/^https?:/i.test(input) ? ['-rw_timeout', '15000000'] : []),
    ...(startAt > 0 ? ['-ss', startAt.toFixed(3)] : []),
    '-i',
    input,
  ];
}

export interface FfmpegStart {
  /** The ffmpeg binary (a driver's or the media config's ffmpegPath). */
  ffmpegPath?: string;
  /** 'info' prints the input's header (Duration:), for runs that check it. */
  verbosity?: 'error' | 'info';
  /** Input piped to ffmpeg's stdin. */
  stdin?: boolean;
  /** Characters of stderr kept (its tail). */
  stderrChars?: number;
}

type Proc = ChildProcessByStdio<Writable | null, Readable, Readable>;

/** One running ffmpeg: its process, and the tail of what it printed. */
export class FfmpegRun {
  readonly proc: Proc;
  private err = '';
  private readonly keep: number;
  private onStderr?: (tail: string) => void;

  constructor(
    args: string[],
    readonly o: FfmpegStart = {},
  ) {
    this.keep = o.stderrChars ?? 2000;
    const common = ['-hide_banner', '-nostats', '-v', o.verbosity ?? 'error', ...(o.stdin ? [] : ['-nostdin'])];
    this.proc = spawn(o.ffmpegPath ?? 'ffmpeg', [...common, ...args], { stdio: [o.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] }) as Proc;
    this.proc.stderr.setEncoding('utf8');
    this.proc.stderr.on('data', (d: string) => {
      this.err = (this.err + d).slice(-this.keep);
      this.onStderr?.(this.err);
    });
  }

  get stdout(): Readable {
    return this.proc.stdout;
  }

  get stdin(): Writable | null {
    return this.proc.stdin;
  }

  get exited(): boolean {
    return this.proc.exitCode !== null || this.proc.signalCode !== null;
  }

  /** What ffmpeg printed on stderr so far (its last `stderrChars` characters). */
  stderr(): string {
    return this.err;
  }

  /** Called with stderr's tail as it grows. */
  watchStderr(fn: (tail: string) => void): void {
    this.onStderr = fn;
  }

  /** Its last error line, or undefined when it printed none. */
  lastLine(): string | undefined {
    return this.err.trim().split('\n').filter(Boolean).pop();
  }

  /** The message for a run that could not start ('error' event: no such binary, no permission). */
  startError(e: Error): string {
    return `cannot run ffmpeg (${this.o.ffmpegPath ?? 'ffmpeg'}): ${e.message}`;
  }

  kill(): void {
    if (!this.exited) this.proc.kill('SIGKILL');
  }
}

/** Starts ffmpeg with the hub's common flags before `args`. */
export function startFfmpeg(args: string[], o: FfmpegStart = {}): FfmpegRun {
  return new FfmpegRun(args, o);
}

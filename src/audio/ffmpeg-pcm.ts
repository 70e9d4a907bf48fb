import { startFfmpeg } from './ffmpeg';
import { decodeWav, type Pcm, WavFormatError } from './pcm-wav';

/**
 * ffmpeg for what the hub cannot do in process: decoding compressed audio (MP3, AAC, FLAC,
 * a web URL) and resampling. Both exchange float WAV over pipes, so nothing is written to disk.
 */

export class FfmpegError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FfmpegError';
  }
}

export interface FfmpegOptions {
  ffmpegPath: string;
  timeoutMs: number;
  /** Decoded audio is cut after this many seconds (a live stream has no end). */
  maxSeconds: number;
  /** Bytes of decoded audio read at most (a bound on memory, whatever the source claims). */
  maxBytes: number;
}

/** What decodeWithFfmpeg is told about the input's length. */
export interface LengthCheck {
  /** The input's header must give a length of at most this many seconds (a live stream has none). */
  maxSeconds: number;
  /** ...within this long of ffmpeg starting. */
  withinMs: number;
}

/**
 * Mono or stereo (wider sources are downmixed by ffmpeg) float samples of an input ffmpeg
 * reads. With `length`, the input's header is read as the decode starts, and the decode is
 * stopped at once if it gives no length of at most `length.maxSeconds` (one ffmpeg run where a
 * probe and then a decode took two).
 */
export async function decodeWithFfmpeg(inputArgs: string[], o: FfmpegOptions, length?: LengthCheck): Promise<Pcm> {
  const args = [
    ...inputArgs,
    '-t',
    String(o.maxSeconds),
    '-vn',
    '-af',
    'aformat=channel_layouts=mono|stereo',
    '-c:a',
    'pcm_f32le',
    '-f',
    'wav',
    'pipe:1',
  ];
  if (!length) return pcmOf((await runFfmpeg(args, o)).stdout);
  let known = false;
  const { stdout } = await runFfmpeg(args, o, undefined, {
    // 'info' for the input's header (Duration:); nothing else is printed before the summary.
    verbosity: 'info',
    checkAfterMs: length.withinMs,
    check: (stderr, late) => {
      if (known) return undefined;
      const m = /Duration: (N\/A|(\d+):(\d\d):(\d\d(?:\.\d+)?))/.exec(stderr);
      if (!m) return late ? `the media gave no length within ${length.withinMs} ms` : undefined;
      const seconds = m[2] ? Number(m[2]) * 3600 + Number(m[3]) * 60 + Number(m[4]) : NaN;
      if (!(seconds > 0 && seconds <= length.maxSeconds))
        return `the web media has no known length of at most ${length.maxSeconds} s (a live stream?)`;
      known = true;
      return undefined;
    },
  });
  return pcmOf(stdout);
}

/** The samples resampled to `rate` (ffmpeg's default resampler). */
export async function resampleWithFfmpeg(pcm: Pcm, rate: number, o: FfmpegOptions): Promise<Pcm> {
  const nch = pcm.channels.length;
  const frames = pcm.channels[0]?.length ?? 0;
  const interleaved = new Float32Array(frames * nch);
  for (let c = 0; c < nch; c++) for (let i = 0; i < frames; i++) interleaved[i * nch + c] = pcm.channels[c][i];
  // f32le: the platform's float layout, little-endian on every machine Node runs the hub on.
  const raw = Buffer.from(interleaved.buffer, interleaved.byteOffset, interleaved.byteLength);
  const { stdout } = await runFfmpeg(
    ['-f', 'f32le', '-ar', String(pcm.rate), '-ac', String(nch), '-i', 'pipe:0', '-ar', String(rate), '-c:a', 'pcm_f32le', '-f', 'wav', 'pipe:1'],
    o,
    raw,
  );
  return pcmOf(stdout);
}

function pcmOf(wav: Buffer): Pcm {
  try {
    return decodeWav(wav);
  } catch (e) {
    throw new FfmpegError(e instanceof WavFormatError ? 'ffmpeg decoded no audio' : String(e));
  }
}

/** Watches ffmpeg's stderr while it runs: a string returned stops it and is the error. */
export interface StderrCheck {
  verbosity: 'info' | 'error';
  check(stderr: string, late: boolean): string | undefined;
  /** check() is called once more, with late=true, after this long. */
  checkAfterMs: number;
}

/** Runs ffmpeg with `stdin` piped in; resolves with its stdout (at most maxBytes) and stderr's tail. */
export function runFfmpeg(args: string[], o: FfmpegOptions, stdin?: Buffer, watch?: StderrCheck): Promise<{ stdout: Buffer; stderr: string }> {
  return new Promise((resolve, reject) => {
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let done = false;
    const run = startFfmpeg(['-y', ...args], { ffmpegPath: o.ffmpegPath, verbosity: watch?.verbosity, stdin: !!stdin, stderrChars: 16_384 });
    const proc = run.proc;
    const timer = setTimeout(() => finish(new FfmpegError(`ffmpeg took longer than ${o.timeoutMs} ms`)), o.timeoutMs);
    const late = watch && setTimeout(() => inspect(true), watch.checkAfterMs);
    const finish = (e?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (late) clearTimeout(late);
      if (e) {
        proc.kill('SIGKILL');
        reject(e);
      } else resolve({ stdout: Buffer.concat(out), stderr: err });
    };
    const inspect = (isLate: boolean) => {
      const problem = watch?.check(err, isLate);
      if (problem) finish(new FfmpegError(problem));
    };
    proc.stdout.on('data', (d: Buffer) => {
      outBytes += d.length;
      if (outBytes > o.maxBytes) return finish(new FfmpegError(`ffmpeg's output exceeds ${o.maxBytes} bytes`));
      out.push(d);
    });
    run.watchStderr((tail) => {
      err = tail;
      if (watch) inspect(false);
    });
    if (stdin) {
      // ffmpeg may exit before reading everything (a failure): that is reported by its exit code.
      proc.stdin!.on('error', () => undefined);
      proc.stdin!.end(stdin);
    }
    proc.on('error', (e) => finish(new FfmpegError(run.startError(e))));
    proc.on('close', (code) => {
      if (code === 0) {
        if (watch) inspect(true);
        finish();
      } else finish(new FfmpegError(`ffmpeg failed (exit ${code}): ${err.trim().split('\n').slice(-2).join(' ')}`));
    });
  });
}

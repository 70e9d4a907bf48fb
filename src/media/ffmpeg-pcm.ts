import { spawn } from 'node:child_process';
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

/** Mono or stereo (wider sources are downmixed by ffmpeg) float samples of an input ffmpeg reads. */
export async function decodeWithFfmpeg(inputArgs: string[], o: FfmpegOptions): Promise<Pcm> {
  const { stdout } = await runFfmpeg(
    [...inputArgs, '-t', String(o.maxSeconds), '-vn', '-af', 'aformat=channel_layouts=mono|stereo', '-c:a', 'pcm_f32le', '-f', 'wav', 'pipe:1'],
    o,
  );
  return pcmOf(stdout);
}

/** The samples resampled to `rate` (ffmpeg's default resampler). */
export async function resampleWithFfmpeg(pcm: Pcm, rate: number, o: FfmpegOptions): Promise<Pcm> {
  const nch = pcm.channels.length;
  const frames = pcm.channels[0]?.length ?? 0;
  const raw = Buffer.alloc(frames * nch * 4);
  for (let c = 0; c < nch; c++) for (let i = 0; i < frames; i++) raw.writeFloatLE(pcm.channels[c][i], (i * nch + c) * 4);
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

/** Runs ffmpeg with `stdin` piped in; resolves with its stdout (at most maxBytes) and stderr's tail. */
export function runFfmpeg(args: string[], o: FfmpegOptions, stdin?: Buffer): Promise<{ stdout: Buffer; stderr: string }> {
  return new Promise((resolve, reject) => {
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let done = false;
    const proc = spawn(o.ffmpegPath, ['-hide_banner', '-nostats', '-v', 'error', ...(stdin ? [] : ['-nostdin']), '-y', ...args], {
      stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    const timer = setTimeout(() => finish(new FfmpegError(`ffmpeg took longer than ${o.timeoutMs} ms`)), o.timeoutMs);
    const finish = (e?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (e) {
        proc.kill('SIGKILL');
        reject(e);
      } else resolve({ stdout: Buffer.concat(out), stderr: err });
    };
    proc.stdout!.on('data', (d: Buffer) => {
      outBytes += d.length;
      if (outBytes > o.maxBytes) return finish(new FfmpegError(`ffmpeg's output exceeds ${o.maxBytes} bytes`));
      out.push(d);
    });
    proc.stderr!.on('data', (d: Buffer) => {
      err = (err + d.toString()).slice(-4096);
    });
    if (stdin) {
      // ffmpeg may exit before reading everything (a failure): that is reported by its exit code.
      proc.stdin!.on('error', () => undefined);
      proc.stdin!.end(stdin);
    }
    proc.on('error', (e) => finish(new FfmpegError(`cannot run ffmpeg (${o.ffmpegPath}): ${e.message}`)));
    proc.on('close', (code) => {
      if (code === 0) finish();
      else finish(new FfmpegError(`ffmpeg failed (exit ${code}): ${err.trim().split('\n').slice(-2).join(' ')}`));
    });
  });
}

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, constants, openSync, readSync, statSync, writeSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { encodeWav } from '../../src/media/wav';

/**
 * What every player outputs here: 44.1 kHz, 32-bit, stereo, little endian (`-a 32`). 32 bits
 * rather than 16: squeezelite's start lands on a FIFO page (4 KiB), which is 11.6 ms of
 * 32-bit audio but 23 ms of 16-bit audio.
 */
export const RATE = 44100;
export const FRAME = 8;

export function squeezeliteInstalled(): string | undefined {
  for (const bin of ['squeezelite', 'ffmpeg', 'mkfifo']) {
    if (spawnSync('sh', ['-c', `command -v ${bin}`]).status !== 0) return `${bin} is not installed`;
  }
  return undefined;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string | (() => string)): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      /* not yet */
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A mono 16-bit sine WAV at `amplitude` (of 32767). */
export function toneWav(seconds: number, freq: number, title: string, amplitude = 12000, rate = 44100): Buffer {
  const samples = new Int16Array(Math.round(rate * seconds)).map((_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * freq * i) / rate)));
  return encodeWav(samples, rate, { title, artist: 'Squeezebox Test', album: 'Squeezebox Test' });
}

/** `lead` seconds of silence, then pulses of 10 ms (a 2 kHz burst) every `every` seconds: a marker to align captures. */
export function pulseWav(seconds: number, lead: number, every: number, title: string, rate = 44100): Buffer {
  const s = new Int16Array(Math.round(rate * seconds));
  for (let t = lead; t < seconds; t += every) {
    const i0 = Math.round(t * rate);
    for (let i = 0; i < Math.round(rate * 0.01) && i0 + i < s.length; i++) s[i0 + i] = Math.round(20000 * Math.sin((2 * Math.PI * 2000 * i) / rate));
  }
  return encodeWav(s, rate, { title, artist: 'Squeezebox Test', album: 'Squeezebox Test' });
}

function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * A real squeezelite writing what it plays to stdout (`-o -`). squeezelite does not pace that
 * output itself (it writes as fast as the reader takes), so the capture is read at real time:
 * its stdout is a FIFO read without blocking by exactly the bytes due on the wall clock, and
 * appended to out.raw. Capture byte k is heard at t0 + k/(RATE·FRAME) plus the FIFO's fixed
 * 64 KiB (the same for every player, so it cancels out of skews).
 */
export class SqueezelitePlayer {
  proc?: ChildProcess;
  stderr = '';
  /** Wall ms at which the current capture segment's byte `segmentStart` is heard. */
  t0 = 0;
  segmentStart = 0;
  /** Bytes captured in all. */
  captured = 0;
  /** Ticks on which fewer bytes than due were there (padded with silence). */
  shortReads = 0;
  private fd?: number;
  private outFd?: number;
  private timer?: NodeJS.Timeout;
  private readonly buf = Buffer.alloc(256 * 1024);

  constructor(
    readonly dir: string,
    readonly name: string,
    readonly mac: string,
    public serverPort: number,
    readonly extraArgs: string[] = [],
  ) {}

  static async create(name: string, mac: string, serverPort: number, extraArgs: string[] = []): Promise<SqueezelitePlayer> {
    const dir = await mkdtemp(join(tmpdir(), 'squeezelite-lab-'));
    const p = new SqueezelitePlayer(dir, name, mac, serverPort, extraArgs);
    p.outFd = openSync(p.out, 'a');
    return p;
  }

  get out(): string {
    return join(this.dir, 'out.raw');
  }

  start(): void {
    const fifo = join(this.dir, `fifo-${Date.now()}`);
    if (spawnSync('mkfifo', [fifo]).status !== 0) throw new Error('mkfifo failed');
    this.fd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const w = openSync(fifo, 'w');
    this.stderr = '';
    const proc = spawn(
      'squeezelite',
      ['-s', `127.0.0.1:${this.serverPort}`, '-n', this.name, '-m', this.mac, '-o', '-', '-a', '32', '-d', 'slimproto=info', ...this.extraArgs],
      { stdio: ['ignore', w, 'pipe'] },
    );
    closeSync(w);
    proc.stderr!.on('data', (d) => (this.stderr = (this.stderr + String(d)).slice(-8000)));
    this.proc = proc;
    this.segmentStart = this.captured;
    this.t0 = wallMs();
    let consumed = 0;
    this.timer = setInterval(() => {
      if (this.fd === undefined) return;
      const due = Math.floor(((wallMs() - this.t0) / 1000) * RATE) * FRAME - consumed;
      let want = due;
      while (want > 0) {
        let n: number;
        try {
          n = readSync(this.fd, this.buf, 0, Math.min(want, this.buf.length), null);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'EAGAIN') {
            // Nothing written in time: a sound card would play silence (an underrun), so the
            // capture does too, and byte k stays heard at t0 + k/rate.
            this.shortReads++;
            const pad = want - (want % FRAME);
            writeSync(this.outFd!, Buffer.alloc(pad));
            consumed += pad;
            this.captured += pad;
            break;
          }
          throw e;
        }
        if (n === 0) {
          this.stopReading();
          return;
        }
        writeSync(this.outFd!, this.buf, 0, n);
        consumed += n;
        this.captured += n;
        want -= n;
      }
    }, 2);
  }

  private stopReading(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  /** Wall ms at which capture byte `k` (of the current segment) was heard. */
  heardAt(k: number): number {
    return this.t0 + ((k - this.segmentStart) / FRAME / RATE) * 1000;
  }

  async kill(): Promise<void> {
    const proc = this.proc;
    this.proc = undefined;
    if (proc && proc.exitCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGKILL');
      await exited;
    }
    this.stopReading();
  }

  async destroy(): Promise<void> {
    await this.kill();
    if (this.outFd !== undefined) closeSync(this.outFd);
    this.outFd = undefined;
    await rm(this.dir, { recursive: true, force: true });
  }
}

export function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** Left-channel samples (16-bit scale) of the capture from byte `from` (to `to`). */
export function samples(file: string, from: number, to?: number): Int16Array {
  const size = fileSize(file);
  const start = from - (from % FRAME);
  const end = Math.min(size, to ?? size);
  if (end <= start) return new Int16Array(0);
  const fd = openSync(file, 'r');
  try {
    const len = end - start - ((end - start) % FRAME);
    const buf = Buffer.alloc(len);
    readSync(fd, buf, 0, len, start);
    // Left channel, scaled to 16 bits.
    const out = new Int16Array(len / FRAME);
    for (let i = 0; i < out.length; i++) out[i] = buf.readInt32LE(i * FRAME) >> 16;
    return out;
  } finally {
    closeSync(fd);
  }
}

/** Loudest 50 ms RMS (left channel) from byte `from` to the end. */
export function loudness(file: string, from: number, to?: number): number {
  const s = samples(file, from, to);
  const win = Math.round(RATE * 0.05);
  let best = 0;
  for (let i = 0; i + win <= s.length; i += win) {
    let sum = 0;
    for (let j = i; j < i + win; j++) sum += s[j] * s[j];
    best = Math.max(best, Math.sqrt(sum / win));
  }
  return best;
}

/** Frequency (Hz) of the last `seconds` of the capture that is loud, from zero crossings. */
export function frequency(file: string, seconds = 0.5): number {
  const size = fileSize(file);
  const s = samples(file, Math.max(0, size - Math.round(RATE * seconds) * FRAME));
  let crossings = 0;
  for (let i = 1; i < s.length; i++) if (s[i - 1] < 0 !== s[i] < 0) crossings++;
  return crossings / 2 / (s.length / RATE);
}

/** Byte offset of the first sample at or above `threshold` (absolute) from byte `from`, or -1. */
export function firstLoud(file: string, from: number, threshold: number, to?: number): number {
  const s = samples(file, from, to);
  for (let i = 0; i < s.length; i++) if (Math.abs(s[i]) >= threshold) return from - (from % FRAME) + i * FRAME;
  return -1;
}

export function readAll(file: string): Buffer {
  return readFileSync(file);
}

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeWav } from '../../../src/audio/wav';

/** The suites' shared helpers (test/helpers/net.ts), re-exported for this lab's tests. */
import { freePort } from '../../helpers/net';
import { sine, zeroCrossingHz } from '../../helpers/audio';

export { freePort };

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

/** A mono 16-bit sine WAV at `amplitude` (of 32767). */
export function toneWav(seconds: number, freq: number, title: string, amplitude = 12000, rate = 44100): Buffer {
  const samples = sine(seconds, freq, rate, amplitude);
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

/**
 * The real-time reader of one player's output (a separate process, so that neither the hub nor
 * the test's analysis can stall it): reads the FIFO without blocking, exactly the whole frames
 * due on the monotonic clock since it started, and appends them to the capture. When nothing
 * is there in time it appends silence, as a sound card plays silence on an underrun, so frame
 * f of its segment is heard at t0 + f/RATE. Prints `T0 <ms>` (process.hrtime, the same clock
 * in every process) once it reads, and exits when the player closes its output.
 */
const PACER = `
const fs = require('fs');
const [fifo, out, RATE, FRAME] = [process.argv[1], process.argv[2], 44100, 8];
const fd = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
const outFd = fs.openSync(out, 'a');
const ms = () => Number(process.hrtime.bigint()) / 1e6;
const t0 = ms();
process.stdout.write('T0 ' + t0 + '\\n');
const buf = Buffer.alloc(1 << 20);
let consumed = 0, carry = 0, gotData = false, underruns = 0;
const timer = setInterval(() => {
  let want = Math.floor(((ms() - t0) / 1000) * RATE) * FRAME - consumed;
  while (want > 0) {
    let n;
    try {
      n = fs.readSync(fd, buf, carry, Math.min(want, buf.length - carry), null);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
      n = -1;
    }
    if (n === 0 && gotData) {
      clearInterval(timer);
      process.stdout.write('END ' + underruns + '\\n');
      process.exit(0);
    }
    if (n <= 0) {
      if (carry) break; // the rest of a frame is on its way
      if (gotData) underruns++;
      const pad = want - (want % FRAME);
      fs.writeSync(outFd, Buffer.alloc(pad));
      consumed += pad;
      break;
    }
    gotData = true;
    const have = carry + n;
    const whole = have - (have % FRAME);
    fs.writeSync(outFd, buf, 0, whole);
    buf.copy(buf, 0, whole, have);
    carry = have - whole;
    consumed += whole;
    want -= whole;
  }
}, 1);
`;

/** Monotonic ms (process.hrtime), the clock the pacers stamp their captures with. */
export function monoMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/**
 * A real squeezelite writing what it plays to stdout (`-o -`). squeezelite does not pace that
 * output itself (it writes as fast as the reader takes), so its stdout is a FIFO read at real
 * time by a pacer process (above) into out.raw. Capture byte k is heard at t0 + k/(RATE·FRAME)
 * plus the FIFO's 64 KiB, the same for every player, so it cancels out of skews.
 */
export class SqueezelitePlayer {
  proc?: ChildProcess;
  private pacer?: ChildProcess;
  stderr = '';
  /** Monotonic ms at which the current capture segment's byte `segmentStart` is heard. */
  t0 = 0;
  segmentStart = 0;

  constructor(
    readonly dir: string,
    readonly name: string,
    readonly mac: string,
    public serverPort: number,
    readonly extraArgs: string[] = [],
  ) {}

  static async create(name: string, mac: string, serverPort: number, extraArgs: string[] = []): Promise<SqueezelitePlayer> {
    const dir = await mkdtemp(join(tmpdir(), 'squeezelite-lab-'));
    return new SqueezelitePlayer(dir, name, mac, serverPort, extraArgs);
  }

  get out(): string {
    return join(this.dir, 'out.raw');
  }

  async start(): Promise<void> {
    const fifo = join(this.dir, `fifo-${Date.now()}`);
    if (spawnSync('mkfifo', [fifo]).status !== 0) throw new Error('mkfifo failed');
    this.segmentStart = fileSize(this.out);
    const pacer = spawn(process.execPath, ['-e', PACER, fifo, this.out], { stdio: ['ignore', 'pipe', 'inherit'] });
    this.pacer = pacer;
    this.t0 = await new Promise<number>((resolve, reject) => {
      let text = '';
      pacer.stdout!.on('data', (d) => {
        text += String(d);
        const m = /T0 ([\d.]+)\n/.exec(text);
        if (m) resolve(Number(m[1]));
      });
      pacer.once('exit', () => reject(new Error('the capture pacer exited')));
    });
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
  }

  /** Monotonic ms at which capture byte `k` (of the current segment) was heard. */
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
    const pacer = this.pacer;
    this.pacer = undefined;
    if (pacer && pacer.exitCode === null) {
      const exited = new Promise((r) => pacer.once('exit', r));
      pacer.kill('SIGKILL');
      await exited;
    }
  }

  async destroy(): Promise<void> {
    await this.kill();
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
    const all = new Int32Array(buf.buffer, buf.byteOffset, len / 4);
    const out = new Int16Array(len / FRAME);
    for (let i = 0; i < out.length; i++) out[i] = all[i * 2] >> 16;
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
  return zeroCrossingHz(s, RATE);
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

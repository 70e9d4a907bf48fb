import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeWav } from '../../../src/audio/wav';

/** The suites' shared helpers (test/helpers/net.ts), re-exported for this lab's tests. */
import { freePort } from '../../helpers/net';
import { eventually } from '../../helpers/wait';
import { sine, zeroCrossingHz } from '../../helpers/audio';

export { freePort };

/** The pipe output's format: 44.1 kHz, 16-bit, stereo. */
export const RATE = 44100;
const FRAME = 4;

export function mpdInstalled(): string | undefined {
  for (const bin of ['mpd', 'ffmpeg']) {
    if (spawnSync('sh', ['-c', `command -v ${bin}`]).status !== 0) return `${bin} is not installed`;
  }
  return undefined;
}

/** A mono 16-bit sine WAV. */
export function toneWav(seconds: number, freq: number, title: string, rate = 22050): Buffer {
  const samples = sine(seconds, freq, rate);
  return encodeWav(samples, rate, { title, artist: 'MPD Test', album: 'MPD Test' });
}

export function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

function readFrom(file: string, from: number): Int16Array {
  const size = fileSize(file);
  const start = from - (from % FRAME);
  if (size <= start) return new Int16Array(0);
  const fd = openSync(file, 'r');
  try {
    const len = size - start - ((size - start) % FRAME);
    const buf = Buffer.alloc(len);
    readSync(fd, buf, 0, len, start);
    return new Int16Array(buf.buffer, buf.byteOffset, len / 2);
  } finally {
    closeSync(fd);
  }
}

/** Loudest 50 ms RMS (left channel) from byte `from` to the end. */
export function loudness(file: string, from: number): number {
  const s = readFrom(file, from);
  const win = Math.round(RATE * 0.05);
  let best = 0;
  for (let i = 0; i + win * 2 <= s.length; i += win * 2) {
    let sum = 0;
    for (let j = i; j < i + win * 2; j += 2) sum += s[j] * s[j];
    best = Math.max(best, Math.sqrt(sum / win));
  }
  return best;
}

/** Frequency (Hz) of the last `seconds` of the capture, from its zero crossings (left channel). */
export function frequency(file: string, seconds = 0.5): number {
  const size = fileSize(file);
  const s = readFrom(file, Math.max(0, size - Math.round(RATE * seconds) * FRAME));
  const left = s.filter((_, i) => i % 2 === 0);
  return zeroCrossingHz(left, RATE);
}

/**
 * One protocol exchange on a fresh connection, as another MPD client (the user's app) would
 * do it: a command list, answered as text; rejects on ACK.
 */
export function mpc(port: number, ...commands: string[]): Promise<string> {
  return mpcAt('127.0.0.1', port, ...commands);
}

/** mpc() to an MPD at `host` (another machine: the remote lab's namespace). */
export function mpcAt(host: string, port: number, ...commands: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock: Socket = connect({ host, port });
    let buf = '';
    let greeted = false;
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`mpc ${commands.join(';')}: timeout`));
    }, 5000);
    sock.setEncoding('utf8');
    sock.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    sock.on('data', (d: string) => {
      buf += d;
      if (!greeted) {
        const nl = buf.indexOf('\n');
        if (nl < 0) return;
        greeted = true;
        buf = buf.slice(nl + 1);
        sock.write(['command_list_begin', ...commands, 'command_list_end', ''].join('\n'));
      }
      const m = /(^|\n)(OK|ACK[^\n]*)\n$/.exec(buf);
      if (!m) return;
      clearTimeout(timer);
      sock.destroy();
      if (m[2].startsWith('ACK')) reject(new Error(m[2]));
      else resolve(buf.slice(0, buf.length - m[0].length + m[1].length));
    });
  });
}

export function fields(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const i = line.indexOf(': ');
    if (i > 0 && !(line.slice(0, i) in out)) out[line.slice(0, i)] = line.slice(i + 2);
  }
  return out;
}

export async function mpdStatus(port: number): Promise<Record<string, string>> {
  return fields(await mpc(port, 'status'));
}

/** The queue's file names, in order. */
export async function queue(port: number): Promise<string[]> {
  return (await mpc(port, 'playlist'))
    .split('\n')
    .map((l) => /^\d+:file: (.*)$/.exec(l)?.[1])
    .filter((f): f is string => f !== undefined);
}

/** A real mpd on loopback from its own temp folder; the pipe output is paced by ffmpeg -re into out.raw. */
export class MpdLab {
  proc?: ChildProcess;
  private stderr = '';
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  get out(): string {
    return join(this.dir, 'out.raw');
  }

  static async create(music: Record<string, Buffer>): Promise<MpdLab> {
    const dir = await mkdtemp(join(tmpdir(), 'mpd-lab-'));
    const lab = new MpdLab(dir, await freePort());
    await mkdir(join(dir, 'music'));
    await mkdir(join(dir, 'pl'));
    for (const [name, bytes] of Object.entries(music)) await writeFile(join(dir, 'music', name), bytes);
    await writeFile(
      join(dir, 'mpd.conf'),
      [
        `music_directory "${dir}/music"`,
        `playlist_directory "${dir}/pl"`,
        `db_file "${dir}/db"`,
        `state_file "${dir}/state"`,
        `pid_file "${dir}/pid"`,
        `log_file "${dir}/log"`,
        'bind_to_address "127.0.0.1"',
        `port "${lab.port}"`,
        'audio_output {',
        '  type "pipe"',
        '  name "capture"',
        `  command "ffmpeg -loglevel quiet -re -f s16le -ar 44100 -ac 2 -i - -f s16le - >> ${dir}/out.raw"`,
        '  format "44100:16:2"',
        '  mixer_type "software"',
        '}',
        '',
      ].join('\n'),
    );
    return lab;
  }

  async start(): Promise<void> {
    this.stderr = '';
    const proc = spawn('mpd', ['--no-daemon', join(this.dir, 'mpd.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
    proc.stderr!.on('data', (d) => (this.stderr = (this.stderr + String(d)).slice(-4000)));
    this.proc = proc;
    await eventually(async () => (await mpc(this.port, 'ping')) !== undefined, 10_000, `mpd on ${this.port} (${this.stderr})`);
    await mpc(this.port, 'update');
    await eventually(async () => !('updating_db' in (await mpdStatus(this.port))), 10_000, 'mpd database update');
  }

  async kill(): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGKILL');
    await exited;
    this.proc = undefined;
    // ffmpeg of the pipe output dies with its input.
  }

  async destroy(): Promise<void> {
    await this.kill();
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** A TCP peer that is not an MPD: sends garbage (without end) or nothing at all. */
export async function fakeServer(kind: 'garbage' | 'hang'): Promise<{ port: number; server: Server; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    if (kind === 'garbage') {
      const t = setInterval(() => s.write('\x00\xffGARBAGE'.repeat(512)), 20);
      s.on('close', () => clearInterval(t));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    server,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

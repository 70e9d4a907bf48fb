import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, statSync, readSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The suites' shared helpers (test/helpers/net.ts), re-exported for this lab's tests. */
import { freePort } from '../../helpers/net';
import { eventually } from '../../helpers/wait';

export { freePort };

/**
 * A real snapserver and real snapclients on loopback, in a temp folder, for the Snapcast
 * tests and the offset benchmark. Clients write what they would play to raw PCM files
 * (or stdout); snapserver's own settings file lives in the temp folder too.
 */

export const HUB_STREAM = 'SpeakerHub';
export const IDLE_STREAM = 'Idle';
/** A stream standing for the user's own music (say, a Spotify source). */
export const OTHER_STREAM = 'Other';
export const SAMPLE_FORMAT = { rate: 48000, channels: 2, bytesPerFrame: 4 };

/** True when snapserver, snapclient and ffmpeg are installed (scripts/install-test-deps.sh). */
export function snapcastInstalled(): boolean {
  return ['snapserver', 'snapclient', 'ffmpeg'].every((cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0);
}

/** One JSON-RPC request on a fresh control connection (as another snapcast controller would). */
export function rpc<T = any>(port: number, method: string, params?: Record<string, unknown>): Promise<T> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => {
      s.write(`${JSON.stringify({ id: 1, jsonrpc: '2.0', method, ...(params ? { params } : {}) })}\r\n`);
    });
    let buf = '';
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`${method}: no answer`));
    }, 3000);
    s.setEncoding('utf8');
    s.on('data', (d: string) => {
      buf += d;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const msg = JSON.parse(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        if (msg.id !== 1) continue;
        clearTimeout(timer);
        s.destroy();
        if (msg.error) reject(new Error(`${method}: ${msg.error.message}`));
        else resolve(msg.result as T);
      }
    });
    s.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

function stopProcess(p: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (!p || p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
    }, 3000);
    p.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    p.kill(signal);
  });
}

export interface ClientOptions {
  /** 'file' (default): <dir>/client-N.raw, appended across stream switches; 'stdout': piped to the test. */
  output?: 'file' | 'stdout';
}

export class SnapClientProcess {
  proc?: ChildProcess;
  constructor(
    readonly index: number,
    readonly hostId: string,
    readonly file: string,
    readonly log: string,
  ) {}
}

export class SnapcastEnv {
  readonly clients: SnapClientProcess[] = [];
  private server?: ChildProcess;

  private constructor(
    readonly dir: string,
    readonly controlPort: number,
    readonly streamPort: number,
    readonly sourcePort: number,
  ) {}

  /** snapserver's control address, as the driver's config wants it. */
  get address(): string {
    return `127.0.0.1:${this.controlPort}`;
  }

  /**
   * `hubSource` picks how snapserver takes the hub's PCM: a TCP source in server mode (default) or a FIFO.
   * `streams` declares further hub-fed streams (TCP server mode): the zone pool's (snapcast.zoneStreams)
   * or an announcement stream.
   */
  static async create(tag = 'speakerhub-snapcast-', hubSource: 'tcp' | 'pipe' = 'tcp', streams: string[] = []): Promise<SnapcastEnv> {
    const dir = await mkdtemp(join(tmpdir(), tag));
    const env = new SnapcastEnv(dir, await freePort(), await freePort(), await freePort());
    await mkdir(join(dir, 'data'));
    const extra: string[] = [];
    for (const name of streams) extra.push(`source = tcp://127.0.0.1:${await freePort()}?name=${name}&mode=server`);
    // The idle source comes first: snapserver puts new clients on its first stream.
    await writeFile(
      join(dir, 'snapserver.conf'),
      [
        '[server]',
        `datadir = ${join(dir, 'data')}`,
        '[stream]',
        'bind_to_address = 127.0.0.1',
        `port = ${env.streamPort}`,
        `source = pipe://${join(dir, 'idle-fifo')}?name=${IDLE_STREAM}&mode=create`,
        hubSource === 'tcp'
          ? `source = tcp://127.0.0.1:${env.sourcePort}?name=${HUB_STREAM}&mode=server`
          : `source = pipe://${join(dir, 'hub-fifo')}?name=${HUB_STREAM}&mode=create`,
        `source = pipe://${join(dir, 'other-fifo')}?name=${OTHER_STREAM}&mode=create`,
        ...extra,
        '[http]',
        'enabled = false',
        '[tcp]',
        'enabled = true',
        'bind_to_address = 127.0.0.1',
        `port = ${env.controlPort}`,
        '[logging]',
        'sink = stderr',
        '',
      ].join('\n'),
    );
    return env;
  }

  async startServer(): Promise<void> {
    const log = openSync(join(this.dir, 'snapserver.log'), 'a');
    this.server = spawn('snapserver', ['-c', join(this.dir, 'snapserver.conf')], { stdio: ['ignore', log, log] });
    closeSync(log);
    await eventually(() => rpc(this.controlPort, 'Server.GetRPCVersion').then(() => true), 10_000, 'snapserver to accept control connections');
  }

  /**
   * Times snapserver re-synced a source (a starved machine), from its log. It logs how late it
   * read beyond one chunk, so any entry means a read 20 ms or more behind its schedule; it then
   * re-stamps the stream from that read on, and what its encoder still held (a flac block)
   * shifts every client of the stream by up to that much: each corrects it seconds later,
   * cutting a window (seen: onResync 0.05 ms at an announcement's start, a client of the music
   * 8 ms off 5 s later). Read in snapserver 0.26's server/streamreader/asio_stream.hpp.
   */
  serverResyncs(): number {
    return (readFileSync(join(this.dir, 'snapserver.log'), 'utf8').match(/onResync \(/g) ?? []).length;
  }

  /**
   * Times snapclient N (1-based) corrected its playout by dropping or inserting audio, from its
   * log: a hard sync, or one of its median buffers (mini, short, long) full and off by more than
   * its bound ("pShortBuffer->full() && (abs(shortMedian_) > 5): -8110" is 8 ms cut at once).
   */
  clientCorrections(n: number): number {
    return (readFileSync(this.clients[n - 1].log, 'utf8').match(/Buffer->full\(\)|hard sync/gi) ?? []).length;
  }

  async stopServer(): Promise<void> {
    await stopProcess(this.server, 'SIGTERM');
    this.server = undefined;
  }

  /** Starts client N (1-based); with stdout output the caller reads `proc.stdout`. */
  async startClient(n: number, options: ClientOptions = {}): Promise<SnapClientProcess> {
    let c = this.clients[n - 1];
    if (!c) {
      c = new SnapClientProcess(n, `speakerhub-test-client-${n}`, join(this.dir, `client-${n}.raw`), join(this.dir, `client-${n}.log`));
      this.clients[n - 1] = c;
    }
    const player = options.output === 'stdout' ? 'file:filename=stdout' : `file:filename=${c.file},mode=a`;
    const log = openSync(c.log, 'a');
    c.proc = spawn(
      'snapclient',
      ['-h', '127.0.0.1', '-p', String(this.streamPort), '--hostID', c.hostId, '--player', player, '--logsink', 'stderr'],
      { stdio: ['ignore', options.output === 'stdout' ? 'pipe' : log, log] },
    );
    closeSync(log);
    return c;
  }

  async killClient(n: number): Promise<void> {
    await stopProcess(this.clients[n - 1]?.proc);
  }

  /** Resolves when snapserver lists these clients as connected. */
  async clientsConnected(ids: string[], timeoutMs = 10_000): Promise<void> {
    await eventually(
      async () => {
        const status = await this.status();
        const connected = new Set(
          allClients(status)
            .filter((c: any) => c.connected)
            .map((c: any) => c.id),
        );
        return ids.every((id) => connected.has(id));
      },
      timeoutMs,
      `clients ${ids.join(', ')} to connect`,
    );
  }

  async status(): Promise<any> {
    return (await rpc(this.controlPort, 'Server.GetStatus')).server;
  }

  rpc<T = any>(method: string, params?: Record<string, unknown>): Promise<T> {
    return rpc<T>(this.controlPort, method, params);
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.map((c) => stopProcess(c.proc)));
    await stopProcess(this.server);
    await rm(this.dir, { recursive: true, force: true });
  }
}

export function allClients(status: any): any[] {
  return status.groups.flatMap((g: any) => g.clients);
}

export function groupOf(status: any, clientId: string): any {
  return status.groups.find((g: any) => g.clients.some((c: any) => c.id === clientId));
}

/** Bytes in a client's output file now. */
export function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** Loudest 50 ms window (RMS of 16-bit samples) in a file from byte `from` to its end. */
export function loudness(file: string, from: number): number {
  const size = fileSize(file);
  const start = from - (from % SAMPLE_FORMAT.bytesPerFrame);
  if (size <= start) return 0;
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(size - start);
    readSync(fd, buf, 0, buf.length, start);
    return maxRms(buf);
  } finally {
    closeSync(fd);
  }
}

export function maxRms(pcm: Buffer): number {
  const window = (SAMPLE_FORMAT.rate / 20) * SAMPLE_FORMAT.bytesPerFrame;
  let best = 0;
  for (let o = 0; o + 2 <= pcm.length; o += window) {
    const end = Math.min(pcm.length - (pcm.length % 2), o + window);
    let sum = 0;
    let n = 0;
    for (let i = o; i < end; i += 2) {
      const v = pcm.readInt16LE(i);
      sum += v * v;
      n++;
    }
    if (n) best = Math.max(best, Math.sqrt(sum / n));
  }
  return best;
}

/** One run of 50 ms windows of a client's output: silence, one of the test tones, or '?' (a mix, a transition). */
export interface ToneSegment {
  tone: number | 'silence' | '?';
  windows: number;
}

/**
 * What a client played from byte `from` on, as runs of 50 ms windows classified by level
 * and pitch: a window quieter than `silentRms` is silence; else its zero crossings (left
 * channel) give its frequency, named by the nearest of `tones` (Hz, within 10 %). The test
 * tones are pure sines, so pitch tells the music from an announcement.
 */
export function toneSegments(file: string, from: number, tones: number[], silentRms = 50): ToneSegment[] {
  const size = fileSize(file);
  const start = from - (from % SAMPLE_FORMAT.bytesPerFrame);
  if (size <= start) return [];
  const fd = openSync(file, 'r');
  const pcm = Buffer.alloc(size - start);
  try {
    readSync(fd, pcm, 0, pcm.length, start);
  } finally {
    closeSync(fd);
  }
  const frames = SAMPLE_FORMAT.rate / 20;
  const window = frames * SAMPLE_FORMAT.bytesPerFrame;
  const segments: ToneSegment[] = [];
  for (let o = 0; o + window <= pcm.length; o += window) {
    let sum = 0;
    let crossings = 0;
    let prev = 0;
    for (let i = 0; i < frames; i++) {
      const v = pcm.readInt16LE(o + i * SAMPLE_FORMAT.bytesPerFrame);
      sum += v * v;
      if (i > 0 && prev < 0 !== v < 0) crossings++;
      prev = v;
    }
    let tone: ToneSegment['tone'];
    if (Math.sqrt(sum / frames) < silentRms) tone = 'silence';
    else {
      const hz = crossings / 2 / 0.05;
      tone = tones.find((t) => Math.abs(hz - t) <= t * 0.1) ?? '?';
    }
    const last = segments[segments.length - 1];
    if (last?.tone === tone) last.windows++;
    else segments.push({ tone, windows: 1 });
  }
  return segments;
}

/** The tones (and silences) of `segments` lasting at least `minWindows`, in order, repeats merged. */
export function toneSequence(segments: ToneSegment[], minWindows = 3): (number | 'silence')[] {
  const out: (number | 'silence')[] = [];
  for (const s of segments) {
    if (s.tone === '?' || s.windows < minWindows) continue;
    if (out[out.length - 1] !== s.tone) out.push(s.tone);
  }
  return out;
}

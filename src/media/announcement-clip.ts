import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rename, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger';
import { wavDuration } from './wav-duration';

/**
 * An announcement's audio as ONE clip: the chime, a short gap, then the speech (or media),
 * each part brought to a target loudness (EBU R128), rendered by ffmpeg into a WAV file.
 *
 * Why one clip: with the chime and the speech as two plays, each speaker fetches and starts
 * the speech on its own, so a speaker that starts late cuts off the first word. Why the
 * loudness: espeak, VoiceRSS, a chime and a user's file all come at different levels, and a
 * voice must neither drown in nor shout over the music it interrupts or ducks.
 *
 * Loudness is measured with ffmpeg's ebur128 filter (integrated loudness and true peak) and
 * applied as a linear gain, then a limiter keeps the true peak under the ceiling, then the
 * level the limiter took is given back as far as the ceiling allows. Measure-and-gain instead
 * of ffmpeg's loudnorm: loudnorm needs 3 s of audio and misses by tens of LU on short
 * TTS clips (a 2.4 s espeak sentence came out at -54 LUFS for a -16 target).
 *
 * Results are cached by their inputs (files: path, size, mtime) in a bounded LRU directory
 * like the TTS cache; renders of web media are not reused (the URL's content may change).
 */

export interface LoudnessTarget {
  /** Integrated loudness, LUFS. */
  integrated: number;
  /** True-peak ceiling, dBTP. */
  truePeak: number;
}

export const DEFAULT_LOUDNESS: LoudnessTarget = { integrated: -16, truePeak: -1.5 };

/** A part of the clip: a file on the hub, or a web URL ffmpeg fetches (http/https only). */
export type ClipSource = { file: string } | { url: string };

export interface ClipAudio {
  file: string;
  contentType: 'audio/wav';
  /** Seconds. */
  duration?: number;
}

export interface AnnouncementClipsOptions {
  cacheDir: string;
  logger: Logger;
  ffmpegPath?: string;
  /** undefined/'off': no loudness normalisation (the chime is still joined to the speech). */
  loudness?: LoudnessTarget | 'off';
  /** Silence between the chime and what follows. Default 300 ms. */
  gapMs?: number;
  maxCacheEntries?: number;
  maxCacheBytes?: number;
  /** One ffmpeg run may take this long (a web URL that never ends fails here). Default 20 s. */
  timeoutMs?: number;
  /** A web part is cut after this many seconds (a live stream has no end). Default 600. */
  maxWebSeconds?: number;
  /** Clips rendering at once; one more fails at once (the caller falls back to the parts). Default 8. */
  maxConcurrent?: number;
}

const RATE = 44100;
// Finished entries only; temp files start with '.'.
const CACHE_FILE = /^[0-9a-f]{64}\.wav$/;
// Bump when the rendering changes, so old cache entries are not reused.
const VERSION = 'clip-v1';
/** Parts up to this size are keyed by their content (8 MiB: a minute and a half of CD audio). */
const MAX_HASHED_BYTES = 8 * 1024 * 1024;

export class ClipError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClipError';
  }
}

interface Measurement {
  /** LUFS; -70 (ebur128's floor) for silence. */
  integrated: number;
  /** dBTP. */
  truePeak: number;
}

export class AnnouncementClips {
  private readonly ffmpeg: string;
  private readonly loudness?: LoudnessTarget;
  private readonly gapMs: number;
  private readonly maxEntries: number;
  private readonly maxBytes: number;
  private readonly timeoutMs: number;
  private readonly maxWebSeconds: number;
  private readonly maxConcurrent: number;
  private readonly log: Logger;
  private running = 0;
  private readonly inFlight = new Map<string, Promise<ClipAudio>>();
  private evicting?: Promise<void>;

  constructor(private readonly opts: AnnouncementClipsOptions) {
    this.ffmpeg = opts.ffmpegPath ?? 'ffmpeg';
    this.loudness = opts.loudness === 'off' ? undefined : (opts.loudness ?? DEFAULT_LOUDNESS);
    this.gapMs = Math.max(0, opts.gapMs ?? 300);
    this.maxEntries = Math.max(1, opts.maxCacheEntries ?? 200);
    this.maxBytes = Math.max(1, opts.maxCacheBytes ?? 200 * 1024 * 1024);
    this.timeoutMs = opts.timeoutMs ?? 20_000;
    this.maxWebSeconds = opts.maxWebSeconds ?? 600;
    this.maxConcurrent = Math.max(1, opts.maxConcurrent ?? 8);
    this.log = opts.logger;
  }

  /** Whether render() would change a lone part (false: loudness off, so one part plays as it is). */
  get normalises(): boolean {
    return !!this.loudness;
  }

  /**
   * The parts in order (chime first), joined with the gap after each but the last, each at
   * the target loudness. Rejects with ClipError (ffmpeg missing or failing, too busy, timeout).
   */
  async render(parts: ClipSource[]): Promise<ClipAudio> {
    if (!parts.length) throw new ClipError('nothing to render');
    const key = await this.keyOf(parts);
    const file = join(this.opts.cacheDir, `${key}.wav`);
    const pending = this.inFlight.get(key);
    if (pending) return pending;
    const job = this.produce(parts, file).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, job);
    return job;
  }

  private async keyOf(parts: ClipSource[]): Promise<string> {
    const h = createHash('sha256').update(`${VERSION}\0${JSON.stringify(this.loudness ?? 'off')}\0${this.gapMs}`);
    for (const p of parts) {
      if ('file' in p) {
        const st = await stat(p.file).catch(() => undefined);
        if (!st?.isFile()) throw new ClipError(`no such file: ${p.file}`);
        // By content where that is cheap: the TTS cache touches its files' mtime on every hit
        // (its LRU), which must not make every cached text a new clip.
        if (st.size <= MAX_HASHED_BYTES) h.update('\0content\0').update(await readFile(p.file));
        else h.update(`\0file\0${p.file}\0${st.size}\0${st.mtimeMs}`);
      } else {
        // Never reused: the same URL may serve something else next time.
        h.update(`\0url\0${p.url}\0${randomBytes(16).toString('hex')}`);
      }
    }
    return h.digest('hex');
  }

  private async produce(parts: ClipSource[], file: string): Promise<ClipAudio> {
    const hit = await stat(file).catch(() => undefined);
    if (hit?.isFile() && hit.size > 0) {
      const now = new Date();
      await utimes(file, now, now).catch(() => undefined);
      return { file, contentType: 'audio/wav', duration: await wavDuration(file).catch(() => undefined) };
    }
    if (this.running >= this.maxConcurrent) throw new ClipError(`${this.running} clips are rendering already`);
    this.running++;
    const started = Date.now();
    const temp = join(this.opts.cacheDir, `.${randomBytes(8).toString('hex')}.wav`);
    try {
      // A web part must have an end: a live stream would be read until the timeout, and the
      // announcement would wait for nothing (it then plays as it is, the speaker fetching it).
      for (const p of parts) if ('url' in p) await this.assertFinite(p.url);
      await mkdir(this.opts.cacheDir, { recursive: true });
      const target = this.loudness;
      // Per part: its own gain, so a loud chime does not push a quiet voice down (or up).
      const gains = target ? await Promise.all(parts.map(async (p) => gainFor(await this.measure(p), target))) : parts.map(() => 0);
      const inputs = parts.flatMap((p) => this.input(p));
      if (!target) {
        await this.run([...inputs, '-filter_complex', this.graph(parts.length, gains), '-map', '[out]', ...wavOut(temp)]);
      } else {
        // One run renders and measures what it rendered (a second output through ebur128).
        const graph = `${this.graph(parts.length, gains, '[mixed]')};[mixed]asplit=2[out][tap];[tap]ebur128=peak=true[measured]`;
        const err = await this.run([...inputs, '-filter_complex', graph, '-map', '[out]', ...wavOut(temp), '-map', '[measured]', '-f', 'null', '-']);
        const m = parseSummary(err);
        // The limiter took some level off the loud passages: give it back while the peak allows,
        // as a gain on the samples written (no third ffmpeg run: each costs ~90 ms here).
        const back = Math.min(target.integrated - m.integrated, target.truePeak - m.truePeak);
        if (m.integrated > -70 && Math.abs(back) > 0.2) await scaleWav(temp, 10 ** (back / 20));
      }
      await rename(temp, file);
    } catch (e) {
      await unlink(temp).catch(() => undefined);
      throw e instanceof ClipError ? e : new ClipError(String((e as Error)?.message ?? e));
    } finally {
      this.running--;
    }
    this.log.debug({ parts: parts.length, ms: Date.now() - started }, 'announcement clip rendered');
    this.scheduleEviction();
    return { file, contentType: 'audio/wav', duration: await wavDuration(file).catch(() => undefined) };
  }

  /** ffmpeg input arguments for a part (web parts: http(s) only, cut after maxWebSeconds). */
  private input(p: ClipSource): string[] {
    if ('file' in p) return ['-i', p.file];
    return ['-protocol_whitelist', 'http,https,tcp,tls,crypto', '-t', String(this.maxWebSeconds), '-i', p.url];
  }

  /** Each part resampled to one format, gained, then all concatenated with the gap after each but the last; limited at the ceiling. */
  private graph(n: number, gains: number[], out = '[out]'): string {
    const chains: string[] = [];
    const labels: string[] = [];
    for (let i = 0; i < n; i++) {
      chains.push(`[${i}:a:0]aresample=${RATE},aformat=sample_fmts=fltp:channel_layouts=stereo,volume=${gains[i].toFixed(2)}dB[p${i}]`);
      labels.push(`[p${i}]`);
      if (i < n - 1 && this.gapMs > 0) {
        chains.push(`anullsrc=r=${RATE}:cl=stereo,atrim=duration=${(this.gapMs / 1000).toFixed(3)}[g${i}]`);
        labels.push(`[g${i}]`);
      }
    }
    const limit = this.loudness ? `,alimiter=limit=${dbToLinear(this.loudness.truePeak - 0.5).toFixed(4)}:level=false:attack=5:release=50` : '';
    chains.push(`${labels.join('')}concat=n=${labels.length}:v=0:a=1${limit}${out}`);
    return chains.join(';');
  }

  /** Integrated loudness and true peak of a part (ffmpeg's ebur128 summary). */
  private async measure(p: ClipSource): Promise<Measurement> {
    return parseSummary(await this.run([...this.input(p), '-af', 'ebur128=peak=true', '-f', 'null', '-']));
  }

  /** Rejects unless ffmpeg reads a finite duration of at most maxWebSeconds from the URL's header. */
  private async assertFinite(url: string): Promise<void> {
    // ffmpeg with an input and no output prints the input's header and exits 1.
    // Small probe: the header is enough, and a live stream must not keep the announcement waiting.
    const err = await this.run(['-probesize', '65536', '-analyzeduration', '500000', '-protocol_whitelist', 'http,https,tcp,tls,crypto', '-i', url], {
      timeoutMs: 5000,
      anyExit: true,
    });
    const m = /Duration: (\d+):(\d\d):(\d\d(?:\.\d+)?)/.exec(err);
    const seconds = m ? Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]) : NaN;
    if (!(seconds > 0 && seconds <= this.maxWebSeconds))
      throw new ClipError(`the web media has no known length of at most ${this.maxWebSeconds} s (a live stream?)`);
  }

  /** Runs ffmpeg; resolves with its stderr (bounded), rejects on failure (unless anyExit) or timeout. */
  private run(args: string[], how: { timeoutMs?: number; anyExit?: boolean } = {}): Promise<string> {
    const timeoutMs = how.timeoutMs ?? this.timeoutMs;
    return new Promise((resolve, reject) => {
      let err = '';
      let done = false;
      const proc = spawn(this.ffmpeg, ['-hide_banner', '-nostats', '-nostdin', '-y', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
      const timer = setTimeout(() => {
        proc.kill('SIGKILL');
        finish(new ClipError(`ffmpeg took longer than ${timeoutMs} ms`));
      }, timeoutMs);
      const finish = (e?: Error) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (e) reject(e);
        else resolve(err);
      };
      proc.stderr.on('data', (d: Buffer) => {
        // The summary is at the end: keep the last 16 KiB only.
        err = (err + d.toString()).slice(-16_384);
      });
      proc.on('error', (e) => finish(new ClipError(`cannot run ffmpeg (${this.ffmpeg}): ${e.message}`)));
      proc.on('close', (code) => {
        if (code === 0 || how.anyExit) finish();
        else finish(new ClipError(`ffmpeg failed (exit ${code}): ${err.trim().split('\n').slice(-2).join(' ')}`));
      });
    });
  }

  private scheduleEviction(): void {
    if (this.evicting) return;
    this.evicting = this.evict()
      .catch((e: unknown) => this.log.warn({ err: String(e) }, 'announcement clip cache eviction failed'))
      .finally(() => (this.evicting = undefined));
  }

  /** Resolves when no eviction runs (tests). */
  async idle(): Promise<void> {
    while (this.evicting) await this.evicting;
  }

  /** Least recently used entries go first, while either budget is exceeded; the newest always stays. */
  private async evict(): Promise<void> {
    const dir = this.opts.cacheDir;
    const names = (await readdir(dir)).filter((n) => CACHE_FILE.test(n));
    const entries = await Promise.all(
      names.map(async (name) => {
        const st = await stat(join(dir, name)).catch(() => undefined);
        return { name, mtime: st?.mtimeMs ?? 0, size: st?.size ?? 0 };
      }),
    );
    entries.sort((a, b) => b.mtime - a.mtime);
    let bytes = 0;
    let kept = 0;
    for (const e of entries) {
      bytes += e.size;
      if (kept === 0 || (kept < this.maxEntries && bytes <= this.maxBytes)) {
        kept++;
        continue;
      }
      bytes -= e.size;
      await unlink(join(dir, e.name)).catch(() => undefined);
    }
  }
}

/** The last ebur128 summary in ffmpeg's stderr: integrated loudness and true peak. */
function parseSummary(err: string): Measurement {
  const at = err.lastIndexOf('Summary:');
  if (at < 0) throw new ClipError('ffmpeg measured no loudness');
  const summary = err.slice(at);
  const integrated = Number(/I:\s+(-?[\d.]+|-inf) LUFS/.exec(summary)?.[1]);
  const truePeak = Number(/Peak:\s+(-?[\d.]+|-inf) dBFS/.exec(summary)?.[1]);
  return { integrated: Number.isFinite(integrated) ? integrated : -70, truePeak: Number.isFinite(truePeak) ? truePeak : -100 };
}

/** Multiplies the 16-bit PCM samples of a WAV file ffmpeg wrote (its data chunk) by `factor`, clamped. */
async function scaleWav(file: string, factor: number): Promise<void> {
  const buf = await readFile(file);
  let off = 12;
  while (off + 8 <= buf.length) {
    const id = buf.toString('ascii', off, off + 4);
    const size = buf.readUInt32LE(off + 4);
    if (id === 'data') {
      // ffmpeg writing to a file fills the size in; bounded by the file either way.
      const end = Math.min(buf.length, off + 8 + (size || buf.length));
      for (let i = off + 8; i + 1 < end; i += 2) buf.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(buf.readInt16LE(i) * factor))), i);
      await writeFile(file, buf);
      return;
    }
    off += 8 + size + (size & 1);
  }
  throw new ClipError('the rendered clip has no data chunk');
}

function wavOut(file: string): string[] {
  return ['-ar', String(RATE), '-ac', '2', '-c:a', 'pcm_s16le', '-f', 'wav', file];
}

/** The gain that brings a measurement to the target; none for silence (nothing to bring up). */
function gainFor(m: Measurement, target: LoudnessTarget): number {
  if (m.integrated <= -70) return 0;
  // Bounded: a near-silent file must not become +60 dB of noise.
  return Math.max(-40, Math.min(40, target.integrated - m.integrated));
}

function dbToLinear(db: number): number {
  return Math.min(1, Math.max(0.0625, 10 ** (db / 20)));
}

import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Logger } from '../logger';
import { CacheTrimmer } from './cache-trimmer';
import { decodeWithFfmpeg, resampleWithFfmpeg } from '../audio/ffmpeg-pcm';
import { DEFAULT_LOUDNESS, LoudnessNormaliser, type LoudnessTarget } from '../audio/loudness-file';
import { encodeWav16, type Pcm } from '../audio/pcm-wav';
import { wavDuration } from '../audio/wav-duration';

export { DEFAULT_LOUDNESS, type LoudnessTarget } from '../audio/loudness-file';

/**
 * An announcement's audio as ONE clip: the chime, a short gap, then the speech (or media),
 * each part brought to a target loudness (EBU R128), written as a WAV file.
 *
 * Why one clip: with the chime and the speech as two plays, each speaker fetches and starts
 * the speech on its own, so a speaker that starts late cuts off the first word. Why the
 * loudness: espeak, VoiceRSS, a chime and a user's file all come at different levels, and a
 * voice must neither drown in nor shout over the music it interrupts or ducks.
 *
 * Everything is done in process (src/audio/loudness.ts: BS.1770 measurement, gain, a
 * true-peak limiter; joining PCM): announcements wait for this, and the two ffmpeg runs it
 * took before cost ~200 ms a clip. ffmpeg is still used where only it can help: decoding
 * what is not PCM WAV (MP3, a web URL) and resampling a part whose rate differs from the
 * others'. A lone part already at the target (a TTS cache entry, normalised when it was
 * synthesized) is the clip itself: no work at all.
 *
 * Results are cached by their inputs (content, or path, size and mtime for big files) in a
 * bounded LRU directory like the TTS cache; renders of web media are not reused (the URL's
 * content may change). Identical renders at once share one (single-flight).
 */

/**
 * A part of the clip: a file on the hub, or a web URL ffmpeg fetches (http/https only). A
 * file's `id`, when given, names its content (a TTS cache entry's key): the clip cache keys
 * by it instead of reading and hashing the file.
 */
export type ClipSource = { file: string; id?: string } | { url: string };

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
  /** undefined: DEFAULT_LOUDNESS; 'off': no loudness normalisation (the chime is still joined to the speech). */
  loudness?: LoudnessTarget | 'off';
  /** Silence between the chime and what follows. Default 300 ms. */
  gapMs?: number;
  maxCacheEntries?: number;
  maxCacheBytes?: number;
  /** One ffmpeg run may take this long (a web URL that never ends fails here). Default 20 s. */
  timeoutMs?: number;
  /** A part (web or file) is cut after this many seconds (a live stream has no end). Default 600. */
  maxWebSeconds?: number;
  /** Clips rendering at once; one more fails at once (the caller falls back to the parts). Default 8. */
  maxConcurrent?: number;
  /** Decoded samples (all channels) held by renders at once; a render that would exceed it fails (the parts play as they are). Default 64 Mi (256 MiB). */
  maxSamplesInFlight?: number;
}

// Finished entries only; temp files start with '.'.
const CACHE_FILE = /^[0-9a-f]{64}\.wav$/;
// Bump when the rendering changes, so old cache entries are not reused.
const VERSION = 'clip-v2';
/** Parts up to this size are keyed by their content (8 MiB: a minute and a half of CD audio). */
const MAX_HASHED_BYTES = 8 * 1024 * 1024;
/** Normalised parts kept in memory for the next clip (the chime, in practice): count, and samples in all. */
const MEMO_ENTRIES = 8;
const MEMO_SAMPLES = 4 * 1024 * 1024;
/** Only parts up to this many samples are memoised (30 s of stereo at 48 kHz). */
const MEMO_PART_SAMPLES = 30 * 48_000 * 2;
/** Finished clips (and lone parts that are clips themselves) kept in memory: a hit costs a stat. */
const READY_ENTRIES = 256;
/** Content hashes of files without an id (the chime), by path, size, mtime and inode. */
const CONTENT_IDS = 64;

export class ClipError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClipError';
  }
}

/** What produce() learned about a part while computing the key. */
interface PartKey {
  source: ClipSource;
  /** Stable identity of a file part's content; undefined for web parts (never reused). */
  id?: string;
}

/** Where a render spent its time (ms), for the log: the latency of announcements is made of these. */
interface RenderTimings {
  decode: number;
  convert: number;
  loudness: number;
  join: number;
  write: number;
}

export class AnnouncementClips {
  private readonly loudness?: LoudnessTarget;
  /** Loads parts (WAV in process, the rest through ffmpeg) and normalises them; also for loudness 'off' (then only loading). */
  private readonly audio: LoudnessNormaliser;
  private readonly gapMs: number;
  private readonly maxWebSeconds: number;
  private readonly maxConcurrent: number;
  private readonly maxSamples: number;
  private readonly log: Logger;
  private running = 0;
  private samplesInFlight = 0;
  private readonly inFlight = new Map<string, Promise<ClipAudio>>();
  /** Normalised parts by content id and format, least recently used first. */
  private readonly memo = new Map<string, Float32Array[]>();
  private memoSamples = 0;
  /** Clips found or made, by clip key (or `lone:` and a part's id), least recently used first. */
  private readonly ready = new Map<string, ClipAudio>();
  /** Content ids of id-less file parts, so the chime is hashed once, not on every announcement. */
  private readonly contentIds = new Map<string, string>();
  private readonly trimmer: CacheTrimmer;

  constructor(private readonly opts: AnnouncementClipsOptions) {
    this.loudness = opts.loudness === 'off' ? undefined : (opts.loudness ?? DEFAULT_LOUDNESS);
    this.maxWebSeconds = opts.maxWebSeconds ?? 600;
    this.audio = new LoudnessNormaliser({
      target: this.loudness ?? DEFAULT_LOUDNESS,
      ffmpegPath: opts.ffmpegPath,
      timeoutMs: opts.timeoutMs,
      maxSeconds: this.maxWebSeconds,
    });
    this.gapMs = Math.max(0, opts.gapMs ?? 300);
    this.trimmer = new CacheTrimmer({
      dir: opts.cacheDir,
      files: CACHE_FILE,
      maxEntries: opts.maxCacheEntries ?? 200,
      maxBytes: opts.maxCacheBytes ?? 200 * 1024 * 1024,
      logger: opts.logger,
      what: 'announcement clip cache',
    });
    this.maxConcurrent = Math.max(1, opts.maxConcurrent ?? 8);
    this.maxSamples = Math.max(1, opts.maxSamplesInFlight ?? 64 * 1024 * 1024);
    this.log = opts.logger;
  }

  /** Whether render() would change a lone part (false: loudness off, so one part plays as it is). */
  get normalises(): boolean {
    return !!this.loudness;
  }

  /**
   * The parts in order (chime first), joined with the gap after each but the last, each at
   * the target loudness. Rejects with ClipError (ffmpeg missing or failing where it is
   * needed, too busy, timeout). `leadGap`: the gap before the first part too (the speech
   * that follows its chime as a play of its own: a speaker that starts late loses silence, not
   * the first word, and the chime and the voice stay apart).
   */
  async render(parts: ClipSource[], options: { leadGap?: boolean } = {}): Promise<ClipAudio> {
    if (!parts.length) throw new ClipError('nothing to render');
    const lead = !!options.leadGap && this.gapMs > 0;
    const lone = parts.length === 1 && 'file' in parts[0] ? parts[0] : undefined;
    if (lone && this.loudness && !lead) {
      const ready = await this.loneClip(lone);
      if (ready) return ready;
    }
    const keys = await this.keysOf(parts);
    const key = this.clipKey(keys, lead);
    const pending = this.inFlight.get(key);
    if (pending) return pending;
    const job = this.produce(keys, key, lead).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, job);
    return job;
  }

  /**
   * The clip of these parts if it is made already, else undefined: never renders. A clip seen
   * before costs a stat (its parts named by id, the chime's hash kept), so an announcement of
   * a repeated text can be servable before its request is answered.
   */
  async cached(parts: ClipSource[]): Promise<ClipAudio | undefined> {
    if (!parts.length || parts.some((p) => !('file' in p))) return undefined;
    const lone = parts.length === 1 ? (parts[0] as { file: string; id?: string }) : undefined;
    if (lone && this.loudness) {
      const ready = await this.loneClip(lone);
      if (ready) return ready;
    }
    const keys = await this.keysOf(parts).catch(() => undefined);
    if (!keys) return undefined;
    const key = this.clipKey(keys);
    return this.inFlight.has(key) ? undefined : this.cachedClip(key);
  }

  /** A lone part already at the target (a TTS cache entry) is the clip: nothing to do or to cache. */
  private async loneClip(part: { file: string; id?: string }): Promise<ClipAudio | undefined> {
    const known = part.id ? this.recallReady(`lone:${part.id}`) : undefined;
    if (known && known.file === part.file && (await isNonEmptyFile(part.file))) return known;
    if (!(await this.audio.isNormalised(part.file).catch(() => false))) return undefined;
    const clip: ClipAudio = { file: part.file, contentType: 'audio/wav', duration: await wavDuration(part.file).catch(() => undefined) };
    return part.id ? this.rememberReady(`lone:${part.id}`, clip) : clip;
  }

  /** The cache entry of a clip key (touched: the trimmer drops the least recently used), or undefined. */
  private async cachedClip(key: string): Promise<ClipAudio | undefined> {
    const file = join(this.opts.cacheDir, `${key}.wav`);
    const known = this.recallReady(key);
    if (!(await isNonEmptyFile(file))) return undefined;
    const now = new Date();
    await utimes(file, now, now).catch(() => undefined);
    return known ?? this.rememberReady(key, { file, contentType: 'audio/wav', duration: await wavDuration(file).catch(() => undefined) });
  }

  private recallReady(key: string): ClipAudio | undefined {
    const known = this.ready.get(key);
    if (known) {
      this.ready.delete(key);
      this.ready.set(key, known);
    }
    return known;
  }

  private rememberReady(key: string, clip: ClipAudio): ClipAudio {
    this.ready.delete(key);
    this.ready.set(key, clip);
    for (const k of this.ready.keys()) {
      if (this.ready.size <= READY_ENTRIES) break;
      this.ready.delete(k);
    }
    return clip;
  }

  private async keysOf(parts: ClipSource[]): Promise<PartKey[]> {
    return Promise.all(
      parts.map(async (p): Promise<PartKey> => {
        if (!('file' in p)) return { source: p };
        if (p.id) return { source: p, id: `given:${p.id}` };
        const st = await stat(p.file).catch(() => undefined);
        if (!st?.isFile()) throw new ClipError(`no such file: ${p.file}`);
        if (st.size > MAX_HASHED_BYTES) return { source: p, id: `file:${p.file}\0${st.size}\0${st.mtimeMs}` };
        // By content where that is cheap: the TTS cache touches its files' mtime on every hit
        // (its LRU), which must not make every cached text a new clip. The hash of a file not
        // changed since (same size, mtime and inode: the chime) is kept.
        const seen = `${p.file}\0${st.size}\0${st.mtimeMs}\0${st.ino}`;
        let id = this.contentIds.get(seen);
        if (!id) {
          id = `content:${createHash('sha256')
            .update(await readFile(p.file))
            .digest('hex')}`;
          this.contentIds.set(seen, id);
          for (const k of this.contentIds.keys()) {
            if (this.contentIds.size <= CONTENT_IDS) break;
            this.contentIds.delete(k);
          }
        }
        return { source: p, id };
      }),
    );
  }

  private clipKey(keys: PartKey[], lead = false): string {
    const h = createHash('sha256').update(`${VERSION}\0${JSON.stringify(this.loudness ?? 'off')}\0${this.gapMs}${lead ? '\0lead' : ''}`);
    // A web part is never reused: the same URL may serve something else next time.
    for (const k of keys) h.update(`\0${k.id ?? `url:${randomBytes(16).toString('hex')}`}`);
    return h.digest('hex');
  }

  private async produce(keys: PartKey[], key: string, lead: boolean): Promise<ClipAudio> {
    const hit = await this.cachedClip(key);
    if (hit) return hit;
    const file = join(this.opts.cacheDir, `${key}.wav`);
    if (this.running >= this.maxConcurrent) throw new ClipError(`${this.running} clips are rendering already`);
    this.running++;
    let held = 0;
    const ms: RenderTimings = { decode: 0, convert: 0, loudness: 0, join: 0, write: 0 };
    const started = performance.now();
    let mark = started;
    const lap = (stage: keyof RenderTimings) => {
      const now = performance.now();
      ms[stage] += Math.round((now - mark) * 10) / 10;
      mark = now;
    };
    const temp = join(this.opts.cacheDir, `.${randomBytes(8).toString('hex')}.wav`);
    try {
      // One part after the other, each counted as it comes: a render stops as soon as the
      // renders together would hold more audio than allowed.
      const loaded: Array<{ pcm: Pcm; normalised: boolean }> = [];
      for (const k of keys) {
        const part = await this.load(k);
        loaded.push(part);
        held += samplesOf(part.pcm);
        this.samplesInFlight += samplesOf(part.pcm);
        if (this.samplesInFlight > this.maxSamples) throw new ClipError(`the clips rendering hold too much audio (${this.samplesInFlight} samples)`);
      }
      lap('decode');
      // One format for all: the highest rate and the most channels among the parts. The
      // built-in chime and espeak agree (22.05 kHz mono), so announcements never resample.
      const rate = Math.max(...loaded.map((l) => l.pcm.rate));
      const nch = Math.max(...loaded.map((l) => l.pcm.channels.length));
      const ready: Float32Array[][] = [];
      for (const [i, l] of loaded.entries()) {
        // A part normalised at this format before (the chime) needs neither resampling nor loudness work.
        const memoKey = this.loudness && !l.normalised && keys[i].id ? `${keys[i].id}\0${rate}\0${nch}` : undefined;
        const known = memoKey && this.recall(memoKey);
        if (known) {
          ready.push(known);
          continue;
        }
        let pcm = l.pcm;
        if (pcm.rate !== rate) pcm = await resampleWithFfmpeg(pcm, rate, this.audio.ffmpeg);
        pcm = upmix(pcm, nch);
        lap('convert');
        const channels = this.loudness && !l.normalised ? (await this.audio.normalise(pcm)).pcm.channels : pcm.channels;
        if (memoKey) this.remember(memoKey, channels);
        ready.push(channels);
        lap('loudness');
      }
      const clip = this.joined(ready, rate, nch, lead);
      lap('join');
      await mkdir(this.opts.cacheDir, { recursive: true });
      await writeFile(temp, this.loudness ? this.audio.encode(clip) : encodeWav16(clip));
      await rename(temp, file);
      lap('write');
    } catch (e) {
      await unlink(temp).catch(() => undefined);
      throw e instanceof ClipError ? e : new ClipError(String((e as Error)?.message ?? e));
    } finally {
      this.running--;
      this.samplesInFlight -= held;
    }
    this.log.debug({ parts: keys.length, ms: Math.round(performance.now() - started), stages: ms }, 'announcement clip rendered');
    this.trimmer.schedule();
    return this.rememberReady(key, { file, contentType: 'audio/wav', duration: await wavDuration(file).catch(() => undefined) });
  }

  /**
   * A part's samples: files by the normaliser's loader, web parts by ffmpeg (http/https only,
   * cut after maxWebSeconds). A web part must have an end: a live stream would be read until
   * the timeout, and the announcement would wait for nothing (it then plays as it is, the
   * speaker fetching it); its header is read with a small probe, in the same ffmpeg run.
   */
  private async load(k: PartKey): Promise<{ pcm: Pcm; normalised: boolean }> {
    if ('file' in k.source) return this.audio.load(k.source.file);
    const input = ['-probesize', '65536', '-analyzeduration', '500000', '-protocol_whitelist', 'http,https,tcp,tls,crypto', '-i', k.source.url];
    return { pcm: await decodeWithFfmpeg(input, this.audio.ffmpeg, { maxSeconds: this.maxWebSeconds, withinMs: 5000 }), normalised: false };
  }

  /** A normalised part kept from an earlier clip, now the most recently used. */
  private recall(key: string): Float32Array[] | undefined {
    const known = this.memo.get(key);
    if (known) {
      this.memo.delete(key);
      this.memo.set(key, known);
    }
    return known;
  }

  /** Keeps a small normalised part (the chime, in practice) for the next clip; the least recently used go first. */
  private remember(key: string, channels: Float32Array[]): void {
    const size = samplesOf({ channels });
    if (size > MEMO_PART_SAMPLES || this.memo.has(key)) return;
    this.memo.set(key, channels);
    this.memoSamples += size;
    for (const [k, v] of this.memo) {
      if (this.memo.size <= MEMO_ENTRIES && this.memoSamples <= MEMO_SAMPLES) break;
      this.memo.delete(k);
      this.memoSamples -= samplesOf({ channels: v });
    }
  }

  /** The parts one after the other, with gapMs of silence between each two (and before the first, with `lead`). */
  private joined(parts: Float32Array[][], rate: number, nch: number, lead: boolean): Pcm {
    const gap = Math.round((this.gapMs / 1000) * rate);
    const frames = parts.reduce((n, p) => n + p[0].length, 0) + gap * (parts.length - 1 + (lead ? 1 : 0));
    const channels = Array.from({ length: nch }, () => new Float32Array(frames));
    let at = lead ? gap : 0;
    parts.forEach((p, i) => {
      for (let c = 0; c < nch; c++) channels[c].set(p[c], at);
      at += p[0].length + (i < parts.length - 1 ? gap : 0);
    });
    return { rate, channels };
  }

  /** Resolves when no cache trim runs (tests). */
  idle(): Promise<void> {
    return this.trimmer.idle();
  }
}

async function isNonEmptyFile(file: string): Promise<boolean> {
  const st = await stat(file).catch(() => undefined);
  return !!st?.isFile() && st.size > 0;
}

function samplesOf(pcm: { channels: Float32Array[] }): number {
  return pcm.channels.reduce((n, x) => n + x.length, 0);
}

/**
 * Mono made stereo at the same loudness: both channels at -3 dB (BS.1770 adds the channels'
 * power, so a plain copy would be 3 LU louder than the mono part was measured).
 */
function upmix(pcm: Pcm, nch: number): Pcm {
  if (pcm.channels.length >= nch) return pcm;
  const x = pcm.channels[0];
  const y = new Float32Array(x.length);
  for (let i = 0; i < x.length; i++) y[i] = x[i] * Math.SQRT1_2;
  return { rate: pcm.rate, channels: Array.from({ length: nch }, () => y) };
}

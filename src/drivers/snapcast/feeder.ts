import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import type { Logger } from '../../logger';
import { PcmDecoder } from '../../audio/pcm-decoder';
import { pcmSourceFor, type PcmSource } from '../../audio/wav-pcm-decoder';
import { redactUrl } from '../../redact';
import { CLOSE_TIMEOUT_MS, closingPad, SOURCE_CHUNK_MS, type FeedFollower } from './in-step';

/** snapserver's `sampleformat=rate:bits:channels`. */
export interface SampleFormat {
  rate: number;
  bits: 16 | 32;
  channels: number;
}

export const DEFAULT_SAMPLE_FORMAT = '48000:16:2';

export function parseSampleFormat(text: string): SampleFormat {
  const m = /^(\d+):(\d+):(\d+)$/.exec(text.trim());
  if (!m) throw new Error(`cannot parse sample format '${text}'`);
  const [rate, bits, channels] = [Number(m[1]), Number(m[2]), Number(m[3])];
  // 24-bit snapcast samples sit in 4-byte containers, which no ffmpeg raw format writes.
  if (bits !== 16 && bits !== 32) throw new Error(`sample format ${text}: only 16 and 32 bit streams can be fed`);
  if (!(rate >= 8000 && rate <= 384000) || !(channels >= 1 && channels <= 8)) throw new Error(`unsupported sample format '${text}'`);
  return { rate, bits, channels };
}

export function bytesPerSecond(f: SampleFormat): number {
  return f.rate * (f.bits / 8) * f.channels;
}

/** Media URLs carry the media server's capability id; it must reach neither logs nor error texts. */
export function safeUrl(url: string): string {
  return redactUrl(url);
}

export interface FeedOptions {
  url: string;
  /** Seconds into the media (ffmpeg -ss: resume and late joiners). */
  startAt: number;
  format: SampleFormat;
  ffmpegPath: string;
  startTimeoutMs: number;
  logger: Logger;
  /** ms of PCM kept ahead of snapserver's reading (see FEED_LEAD_MS). */
  leadMs?: number;
  /** ms of silence after the media (a ducked announcement's music fades back up over it). */
  padMs?: number;
  /** The media's content type, when known. */
  contentType?: string;
  /**
   * An announcement (or chime) clip: when it is a WAV it is converted in process, no ffmpeg
   * spawned (bench/first-sound.js: ~100 ms of a busy machine before the first sample). Music
   * stays with ffmpeg, which streams a long file instead of holding it.
   */
  clip?: boolean;
  /**
   * Whether the feed's own stream carries the mix (setMix) now; unset: always. A ducked
   * announcement on some client streams only (issue 30) leaves it unmixed for the others.
   */
  ownMixed?: () => boolean;
  /** Ends the source connection on whole read chunks and codec blocks (closingPad), as every stream fed in step must. */
  padOnClose?: boolean;
  /** Fed in step with client streams (issue 30): see inStep below. */
  inStep?: boolean;
}

export interface FeedEvents {
  /** The whole media was decoded and handed to snapserver. */
  end: [];
  /** Decoding or writing failed after the feed had started (not 'error': nobody may be listening yet). */
  failed: [error: Error];
}

/**
 * PCM handed to snapserver ahead of its reading, ms. snapserver stamps what its source reads
 * with the time it reads it; PCM that comes late makes it resync, and every client then
 * drops or inserts audio to catch up (a gap one can hear). ffmpeg pacing itself (-re) gave
 * no slack: a busy machine or a slow event loop was enough. With this much waiting in the
 * socket, a stall shorter than it is not heard. It is also how much later a change to the
 * PCM (a ducked announcement's mix) is heard, so it stays small. 50 ms was not enough
 * (issue 30): on a busy 2-core machine the hub's event loop stalled 40-90 ms now and then with
 * no hub work to blame (collections, the scheduler), and snapserver re-synced in about one
 * in-place duck in two; at 100 ms, none in the lab's runs. The announcement's own stalls
 * (the clip's loudness pass, the voice's ffmpeg spawn) were removed at their source.
 */
export const FEED_LEAD_MS = 100;
/**
 * The lead while several zones are fed on one server (ZonePool): one hub process paces them
 * all, so a stall of its event loop for one zone's work (a decode starting, an announcement
 * clip rendered in process: ~120 ms were measured on a busy 2-core machine) would make
 * snapserver re-sync every other zone's stream too, and their clients skip. This much in the
 * socket rides such a stall out; a ducked announcement is then heard that much later.
 */
export const MULTI_ZONE_LEAD_MS = 300;
/** A follower joins on a chunk boundary snapserver read at most this long ago (ms; issue 30): the most it plays late. */
const JOIN_SLACK_MS = 2;
/** Chunk boundaries a follower's timer may miss before it joins on one anyway. */
const JOIN_TRIES = 5;
/** Decoded PCM waiting in the hub, at most (seconds): ffmpeg is paused above it. */
const QUEUE_HIGH_S = 2;
const PACE_MS = 10;
/**
 * How much of the PCM handed over a feed keeps for a tap that starts behind (a ducked overlay's
 * copy of the music) and for a follower that starts late (what snapserver has not read yet:
 * up to the longest lead, MULTI_ZONE_LEAD_MS, and a pace).
 */
const RECENT_MS = 400;

/**
 * One decode of one media into one snapserver source. ffmpeg decodes as fast as it is let;
 * the hub paces what it hands to snapserver by the clock, FEED_LEAD_MS ahead, and counts
 * the position from what snapserver has had time to read. The first PCM is held until
 * attach(): the caller first points the clients at the stream, so nobody misses the start,
 * and a URL that cannot be decoded fails before any group is touched.
 */
export class Feed extends EventEmitter<FeedEvents> {
  private decoder?: PcmSource;
  /** Decoded PCM not yet handed to snapserver (whole frames). */
  private queue: Buffer[] = [];
  private queued = 0;
  private sink?: Socket;
  /** Bytes handed to snapserver. */
  private fed = 0;
  /** When the first PCM was handed over (ms, performance clock). */
  private t0?: number;
  private pacer?: NodeJS.Timeout;
  private draining = false;
  private stopped = false;
  private completed = false;
  private finishing = false;
  private _failure?: Error;
  private readonly bps: number;
  private readonly frameBytes: number;
  private leadBytes: number;
  /** The tail of a chunk that ended mid-frame, waiting for the rest of the frame. */
  private partial?: Buffer;
  private mix?: (pcm: Buffer) => Buffer;
  /** Called when the feed is over (ended, failed or stopped): what setMix() set up is taken down. */
  private mixDone?: () => void;
  /** Who wants a copy of the PCM as it is handed over (before any mix): a ducked announcement on another stream. */
  private readonly taps = new Set<(pcm: Buffer) => void>();
  /** Client streams fed in step with this one (follow()). */
  private readonly followers = new Set<FeedFollower>();
  /** The last MUSIC_RECENT_MS of PCM handed over (unmixed), for a tap that starts a little behind (tap's replayMs). */
  private recent: Buffer[] = [];
  private recentBytes = 0;
  private readonly log: Logger;

  constructor(private readonly opts: FeedOptions) {
    super();
    this.bps = bytesPerSecond(opts.format);
    this.frameBytes = (opts.format.bits / 8) * opts.format.channels;
    this.leadBytes = this.frames(((opts.leadMs ?? FEED_LEAD_MS) / 1000) * this.bps);
    this.log = opts.logger;
  }

  /** Changes the lead on the fly: more is handed over at the next pace, or less until the clock has caught up; nothing is heard of it. */
  setLead(ms: number): void {
    this.leadBytes = this.frames((ms / 1000) * this.bps);
  }

  get url(): string {
    return this.opts.url;
  }

  get format(): SampleFormat {
    return this.opts.format;
  }

  /** Seconds into the media that snapserver has read by now (what it sends its clients). */
  get position(): number {
    return this.opts.startAt + Math.min(this.fed, this.due()) / this.bps;
  }

  /** ms of PCM handed over that snapserver has not had time to read yet (about the lead while it runs). */
  get unreadMs(): number {
    return ((this.fed - Math.min(this.fed, this.due())) / this.bps) * 1000;
  }

  /** Whether attach() handed the first PCM over. */
  get attached(): boolean {
    return this.t0 !== undefined;
  }

  /** Why the feed failed after it had started, if it did. */
  get failure(): Error | undefined {
    return this._failure;
  }

  /** Stopped by stop() before its media was completely fed. */
  get aborted(): boolean {
    return this.stopped && !this.completed;
  }

  /** Still feeding: decoding, or handing over what was decoded. */
  get running(): boolean {
    return !this.stopped && !this.completed;
  }

  /**
   * Starts the decode (ffmpeg, or in process for a WAV clip); resolves at the first PCM, rejects if
   * the decode fails, times out or is stopped first.
   */
  start(): Promise<void> {
    const { url, startAt, format } = this.opts;
    this.log.debug({ url: safeUrl(url), startAt, format }, 'starting the decode');
    const o = { ...this.opts, what: 'the media' };
    const decoder = (this.decoder = this.opts.clip ? pcmSourceFor(o) : new PcmDecoder(o));
    return decoder
      .start({
        data: (chunk) => {
          this.enqueue(chunk);
          if (this.queued >= QUEUE_HIGH_S * this.bps) decoder.pause();
          this.pump();
          return this.queued > 0;
        },
        end: (failure) => {
          if (failure === undefined) this.pump();
          else this.fail(new Error(`decoding stopped: ${failure}`));
        },
      })
      .catch((e: unknown) => {
        this.stop();
        throw e;
      });
  }

  /** Hands the held PCM and everything after it to snapserver. */
  attach(sink: Socket): void {
    if (this.stopped) {
      sink.destroy();
      return;
    }
    this.sink = sink;
    if (sink.destroyed) {
      this.fail(new Error('snapserver closed the source connection'));
      return;
    }
    sink.on('error', (e) => this.fail(new Error(`snapserver source connection failed: ${e.message}`)));
    // snapserver never closes its side of a source connection; an unexpected close means it went away.
    sink.on('close', () => {
      if (!this.stopped && !this.completed) this.fail(new Error('snapserver closed the source connection'));
    });
    this.t0 = performance.now();
    this.pacer = setInterval(() => this.pump(), PACE_MS);
    this.pump();
  }

  /**
   * Runs every chunk of PCM through `mix` on its way to snapserver (a ducked announcement,
   * src/audio/duck-mix.ts), from the next chunk on; undefined takes it out again. The decode
   * itself goes on untouched, so the music keeps its place.
   */
  setMix(mix: ((pcm: Buffer) => Buffer) | undefined, done?: () => void): void {
    this.mixDone?.();
    this.mix = mix;
    this.mixDone = done;
    if (this.stopped) this.takeDown();
  }

  /** A copy of every piece of PCM as it is handed to snapserver (the music, unmixed); the returned function stops it. */
  tap(fn: (pcm: Buffer) => void, replayMs = 0): () => void {
    // Starting with the last replayMs already handed over: the copy then runs that far behind.
    const want = this.frames((Math.min(replayMs, RECENT_MS) / 1000) * this.bps);
    if (want > 0 && this.recentBytes > 0) {
      const all = Buffer.concat(this.recent);
      fn(all.subarray(Math.max(0, all.length - want)));
    }
    this.taps.add(fn);
    return () => this.taps.delete(fn);
  }

  /**
   * Feeds `f` every piece of PCM from the moment this feed's own stream reads the next 20 ms
   * chunk boundary on: from then, at the moment this feed hands each piece over, starting with
   * what was handed over that snapserver reads from then on. The follower's stream then stamps
   * each sample as this feed's own stream does, on the same chunk grid (a re-sync of both
   * re-stamps both alike), and their clients play it at the same instants. Before attach()
   * nothing was handed over: it gets the first PCM with the feed's own stream. The returned
   * function stops it (without closing it).
   */
  follow(f: FeedFollower, started?: () => void): () => void {
    if (this.stopped) {
      f.destroy();
      started?.();
      return () => undefined;
    }
    let timer: NodeJS.Timeout | undefined;
    const chunk = this.frames((SOURCE_CHUNK_MS / 1000) * this.bps);
    const slack = this.frames((JOIN_SLACK_MS / 1000) * this.bps);
    const start = (from: number) => {
      const replay = this.fed - Math.min(this.fed, from);
      if (replay > 0 && this.recentBytes > 0) {
        const all = Buffer.concat(this.recent);
        const part = all.subarray(Math.max(0, all.length - replay));
        f.write(part, part);
      }
      this.followers.add(f);
      started?.();
    };
    // The next chunk boundary of what snapserver has read; a timer that fires later than the slack tries the next one (a few times, then joins where snapserver reads, off the grid).
    const schedule = (tries: number) => {
      timer = undefined;
      if (this.stopped) return started?.();
      if (!this.attached) return start(this.fed);
      const read = this.frames(this.due());
      const boundary = Math.ceil(read / chunk) * chunk;
      if (tries === 0) return start(read);
      if (read - Math.floor(read / chunk) * chunk <= slack) return start(Math.floor(read / chunk) * chunk);
      timer = setTimeout(() => schedule(tries - 1), ((boundary - read) / this.bps) * 1000);
    };
    schedule(JOIN_TRIES);
    return () => {
      if (timer) started?.();
      clearTimeout(timer);
      this.followers.delete(f);
    };
  }

  private takeDown(): void {
    const done = this.mixDone;
    this.mixDone = undefined;
    this.taps.clear();
    done?.();
  }

  /** Stops decoding and drops the source connection; no events follow. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.queue = [];
    this.queued = 0;
    clearInterval(this.pacer);
    this.takeDown();
    this.decoder?.stop();
    this.closeSink();
    for (const f of this.followers) f.destroy();
    this.followers.clear();
  }

  /** Drops the source connection, completed to whole blocks first when asked (padOnClose). */
  private closeSink(): void {
    const sink = this.sink;
    if (!sink || sink.destroyed) return;
    const pad = this.opts.padOnClose ? closingPad(this.opts.format, this.fed) : undefined;
    if (!pad?.length || !sink.writable) {
      sink.destroy();
      return;
    }
    // snapserver reads it within the lead; one that does not read at all is not waited for.
    const timer = setTimeout(() => sink.destroy(), CLOSE_TIMEOUT_MS);
    timer.unref();
    sink.end(pad, () => {
      clearTimeout(timer);
      sink.destroy();
    });
  }

  /** ms of silence closingPad adds when the connection closes now. */
  get closingPadMs(): number {
    return this.opts.padOnClose ? (closingPad(this.opts.format, this.fed).length / this.bps) * 1000 : 0;
  }

  /** Bytes snapserver has had time to read since the first was handed over. */
  private due(): number {
    if (this.t0 === undefined) return 0;
    return ((performance.now() - this.t0) / 1000) * this.bps;
  }

  /** Keeps at least RECENT_MS of what was handed over, and little more (whole pieces are dropped). */
  private remember(chunk: Buffer): void {
    this.recent.push(chunk);
    this.recentBytes += chunk.length;
    const keep = (RECENT_MS / 1000) * this.bps;
    while (this.recent.length > 1 && this.recentBytes - this.recent[0].length >= keep) this.recentBytes -= this.recent.shift()!.length;
  }

  private frames(bytes: number): number {
    return Math.floor(bytes / this.frameBytes) * this.frameBytes;
  }

  /** Whole frames into the queue; a partial frame waits for its rest. */
  private enqueue(input: Buffer): void {
    let chunk = this.partial ? Buffer.concat([this.partial, input]) : input;
    this.partial = undefined;
    const rest = chunk.length % this.frameBytes;
    if (rest) {
      this.partial = Buffer.from(chunk.subarray(chunk.length - rest));
      chunk = chunk.subarray(0, chunk.length - rest);
    }
    if (!chunk.length) return;
    this.queue.push(chunk);
    this.queued += chunk.length;
  }

  /** Hands snapserver what is due by the clock (plus the lead), resumes a paused decode, ends at the end. */
  private pump(): void {
    const sink = this.sink;
    if (!sink || this.stopped || this.draining) return;
    // Fed in step (issue 30): a stall longer than the lead starved snapserver, which re-stamps
    // what it reads next with the moment it reads it; so the clock of what it has read goes on
    // from here, and a client stream started later starts where snapserver really reads.
    if (this.opts.inStep && this.due() > this.fed) this.t0! += ((this.due() - this.fed) / this.bps) * 1000;
    let room = this.frames(this.due() + this.leadBytes - this.fed);
    while (room > 0 && this.queue.length) {
      let chunk = this.queue[0];
      if (chunk.length > room) {
        this.queue[0] = chunk.subarray(room);
        chunk = chunk.subarray(0, room);
      } else this.queue.shift();
      this.queued -= chunk.length;
      room -= chunk.length;
      this.fed += chunk.length;
      for (const tap of this.taps) tap(chunk);
      this.remember(chunk);
      const mixed = this.mix ? this.mix(chunk) : chunk;
      for (const f of this.followers) f.write(chunk, mixed);
      if (mixed !== chunk && (this.opts.ownMixed?.() ?? true)) chunk = mixed;
      if (!sink.write(chunk)) {
        // snapserver is not reading: wait for it rather than pile up.
        this.draining = true;
        sink.once('drain', () => {
          this.draining = false;
          this.pump();
        });
        break;
      }
    }
    const decoder = this.decoder;
    if (decoder?.paused && this.queued < (QUEUE_HIGH_S / 2) * this.bps) decoder.resume();
    if (decoder?.exited && !this.queue.length && !this.draining) this.finish();
  }

  /** Everything was handed over: once snapserver has read it (the lead), the feed ends. */
  private finish(): void {
    const sink = this.sink;
    if (!sink || this.stopped || this.finishing) return;
    this.finishing = true;
    clearInterval(this.pacer);
    const wait = Math.max(0, ((this.fed - this.due()) / this.bps) * 1000);
    setTimeout(() => {
      if (this.stopped) return;
      // The client streams end with this one: their last PCM was handed over with its.
      for (const f of this.followers) f.end();
      this.followers.clear();
      const pad = this.opts.padOnClose ? closingPad(this.opts.format, this.fed) : Buffer.alloc(0);
      sink.end(pad, () => {
        if (this.stopped) return;
        this.completed = true;
        this.stopped = true;
        this.takeDown();
        sink.destroy();
        this.log.debug({ seconds: this.position }, 'media fed completely');
        this.emit('end');
      });
    }, wait);
  }

  private fail(error: Error): void {
    if (this.stopped) return;
    this._failure = error;
    this.stop();
    this.log.warn({ err: error.message }, 'feed failed');
    this.emit('failed', error);
  }
}

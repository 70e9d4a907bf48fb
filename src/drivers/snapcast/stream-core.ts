import type { Socket } from 'node:net';
import type { Clock, TimerHandle } from '../../core/clock';
import type { Logger } from '../../logger';
import { syncClockMs, type MediaRequest, type SpeakerPlayState, type StopReason } from '../driver';
import type { ResolvedServerConfig } from './config';
import { MusicLoudness } from '../../audio/music-loudness';
import { Feed, FEED_LEAD_MS, MULTI_ZONE_LEAD_MS, parseSampleFormat } from './feeder';
import { Grouping, type ControlChannel } from './grouping';
import { ClientFeeds } from './client-feeds';
import type { ClientStreamPool } from './client-streams';
import type { ModelChange, ServerModel } from './model';
import { describeSource, openSink } from './sink';
import { streamSource } from './stream-source';
import { checkPhaseChange, phaseOf, type StreamPhase } from './stream-phases';

/**
 * A cross-family start hands the first PCM over this much later than bufferMs before the agreed
 * instant: snapserver stamps its first chunk one chunk (20 ms) before it has read it, and
 * bench/cross-family-skew.js measured the snapclient 8–9 ms ahead of squeezelite without this.
 */
const START_TRIM_MS = 10;
/** A feed with client streams is handed over this long after the regroup (ms; see holdForClientStreams). */
const SETTLE_MS = 60;

/** The speaker as the hub stream sees it: a snapclient whose play state it drives. */
export interface StreamMember {
  readonly id: string;
  readonly clientId: string;
  readonly available: boolean;
  readonly state: SpeakerPlayState;
  changeState(state: SpeakerPlayState, reason?: StopReason, detail?: string): void;
}

export interface HubStreamOptions {
  server: ResolvedServerConfig;
  control: ControlChannel;
  model: ServerModel;
  /** Called with what the hub's own requests changed (the server does not notify their sender). */
  applied: (change: ModelChange) => void;
  ffmpegPath: string;
  startTimeoutMs: number;
  connectTimeoutMs: number;
  clock: Clock;
  logger: Logger;
  /** Called whenever the stream's phase changes (the zone pool takes a stream back when it is free). */
  phaseChanged?: (phase: StreamPhase) => void;
  /** The server's client streams (zone streams only): a zone's clients beyond one get a stream of their own, fed in step. */
  clientStreams?: ClientStreamPool;
}

/** How a play's feed is set up beyond the media itself: a ducked announcement on the announcement stream mixes the music in. */
export interface FeedSetup {
  /** ms of silence after the media. */
  padMs?: number;
  /** Called with the new feed before its first PCM goes out. */
  install(feed: Feed): void;
}

/**
 * The base of a hub-fed stream (see HubStream): its members, the one decode feeding it, the
 * grouping that puts the listening members on it, the start of a feed (at an agreed instant
 * when there is one), the end and failure of a feed, and the phase. The modes built on it
 * (held music, ducking) fill in the hooks below; everything that changes membership or the
 * feed runs one at a time (exclusive).
 */
export abstract class StreamCore {
  protected readonly members = new Map<string, StreamMember>();
  protected feed?: Feed;
  protected media?: MediaRequest;
  /**
   * The zone (MediaRequest.zone) whose music this stream carries, or whose music it holds
   * while an announcement has it; undefined while free, and for a play without one.
   */
  protected zone?: string;
  /** Seconds: where the feed stopped when every member paused. */
  protected pausedAt?: number;
  /** Per member paused alone while others play on. */
  protected readonly pausedPositions = new Map<string, number>();
  /** A start in progress; stop() aborts it rather than waiting up to startTimeoutMs. */
  protected pending?: { feed: Feed; ids: Set<string> };
  protected ending?: TimerHandle;
  /** The running music's short-term loudness (fed by a tap on the feed), where a ducked voice is placed from. */
  protected meter?: MusicLoudness;
  private queue: Promise<unknown> = Promise.resolve();
  private reconcileQueued = false;
  private current: StreamPhase = 'free';
  /** ms of PCM kept in snapserver's source ahead of its reading (ZonePool raises it while several zones play). */
  private leadMs?: number;
  protected readonly grouping: Grouping;
  protected readonly log: Logger;
  /** The client streams this stream's listening clients are on (ClientStreamPool), as of the last regroup. */
  private routed = new Map<string, string>();
  /** Feeds those client streams in step with this one. */
  private readonly clientFeeds?: ClientFeeds;

  constructor(protected readonly opts: HubStreamOptions) {
    this.log = opts.logger;
    this.grouping = new Grouping(opts);
    if (opts.clientStreams) {
      this.clientFeeds = new ClientFeeds({ ...opts, clientStreams: opts.clientStreams, mixedFor: (id) => this.mixedFor(id) });
    }
  }

  /** The client stream a member hears this stream's music on, if it has one (issue 30). */
  routeOf(clientId: string): string | undefined {
    return this.routed.get(clientId);
  }

  /** The listening members that hear this stream's music on the stream itself (no client stream of their own). */
  ownListeners(): string[] {
    return this.listeningIds().filter((id) => !this.routed.has(id));
  }

  /** Whether the stream's own PCM carries the feed's mix now (a ducked announcement); the modes say. */
  protected ownMixed(): boolean {
    return true;
  }

  /** Whether a client stream carries the feed's mix now (a ducked announcement for its client); the modes say. */
  protected mixedFor(_clientId: string): boolean {
    return false;
  }

  /** The id of the snapserver stream this one feeds. */
  get streamId(): string {
    return this.opts.server.stream;
  }

  /** Sets the feed lead for the running feed and those to come (undefined: the feeder's default). */
  setLead(ms: number | undefined): void {
    if (ms === this.leadMs) return;
    this.leadMs = ms;
    this.feed?.setLead(this.lead());
  }

  /**
   * The lead of the running feed: the pool's; while client streams are fed along (issue 30), at
   * least MULTI_ZONE_LEAD_MS: a stall of the hub longer than the lead makes snapserver re-sync
   * every stream, and the streams do not come back on exactly the same sample.
   */
  private lead(): number {
    const ms = this.leadMs ?? FEED_LEAD_MS;
    return this.clientFeeds?.fed().length ? Math.max(ms, MULTI_ZONE_LEAD_MS) : ms;
  }

  /** The zone whose music this stream carries (or holds), if any. */
  get zoneId(): string | undefined {
    return this.current === 'free' ? undefined : this.zone;
  }

  /** What the stream is doing now (see stream-phases.ts). */
  get phase(): StreamPhase {
    return this.current;
  }

  // ---- hooks of the modes built on this base ------------------------------------------

  /** The feed is gone: the ducked announcement mixed into it ends. */
  protected abstract endDuck(): void;
  /** Whether a ducked announcement is mixed into the feed (or a play waits for one). */
  protected abstract get isDucking(): boolean;
  /** Whether music is held while an announcement has the stream. */
  protected abstract get isHolding(): boolean;
  /** Client ids of the held music's members (parked off the stream). */
  protected abstract heldIds(): Set<string>;
  /** Starts the held music again (queued); called when the announcement that held it is over. */
  protected abstract scheduleResumeHeld(): void;
  /** Starts the held music again now (inside exclusive). */
  protected abstract resumeHeld(joining?: StreamMember[]): Promise<void>;

  /** Re-establishes the invariant after the server's topology changed (coalesced). */
  scheduleReconcile(): void {
    if (this.reconcileQueued) return;
    this.reconcileQueued = true;
    this.exclusive(async () => {
      this.reconcileQueued = false;
      await this.reconcile();
    }).catch((e) => this.log.warn({ err: String(e) }, 'could not regroup snapclients'));
  }

  /**
   * Re-reads the phase after a command or event has run, checks the change against the table
   * (an illegal one is logged as the bookkeeping bug it is; playback goes on) and tells the pool.
   */
  protected settlePhase(): void {
    const next = phaseOf({
      members: this.members.size,
      pending: !!this.pending,
      feedRunning: !!this.feed?.running,
      overlay: !!this.media?.overlay,
      ending: !!this.ending,
      held: this.isHolding,
      ducking: this.isDucking,
    });
    const from = this.current;
    if (next === from) return;
    try {
      checkPhaseChange(this.streamId, from, next);
    } catch (e) {
      this.log.error({ err: (e as Error).message, code: 'StreamPhaseError', from, to: next }, 'illegal snapcast stream phase change');
    }
    this.current = next;
    if (next === 'free') this.zone = undefined;
    this.log.debug({ stream: this.streamId, from, to: next, zone: this.zone }, 'stream phase');
    this.opts.phaseChanged?.(next);
  }

  /**
   * Starts a decode and puts `listeners` on the stream: the first PCM is held while the
   * group is arranged, so the clients are listening before any audio reaches the stream.
   */
  protected async startFeed(media: MediaRequest, startAt: number, listeners: StreamMember[], setup?: FeedSetup): Promise<void> {
    const t0 = performance.now();
    const since = () => Math.round((performance.now() - t0) * 10) / 10;
    const { source, format } = streamSource(this.opts.server, this.opts.model);
    const feed = new Feed({
      url: media.url,
      startAt,
      format: parseSampleFormat(format),
      ffmpegPath: this.opts.ffmpegPath,
      startTimeoutMs: this.opts.startTimeoutMs,
      logger: this.log,
      ...(setup?.padMs ? { padMs: setup.padMs } : {}),
      ...(media.overlay ? { clip: true, contentType: media.contentType } : {}),
      ...(this.leadMs !== undefined ? { leadMs: this.leadMs } : {}),
      ownMixed: () => this.ownMixed(),
      // Only where client streams may follow it: without them a stream's connections end as before.
      ...(this.opts.clientStreams?.declared().length ? { padOnClose: true, inStep: true } : {}),
    });
    this.pending = { feed, ids: new Set(listeners.map((m) => m.clientId)) };
    // The source opens while ffmpeg starts; a rejection is handled below, never left dangling.
    const opening = openSink(source, this.opts.connectTimeoutMs);
    opening.catch(() => undefined);
    opening.then(
      () => this.log.debug({ ms: since() }, 'start timing: source connected'),
      () => undefined,
    );
    try {
      await feed.start();
      this.log.debug({ ms: since() }, 'start timing: first PCM decoded');
    } catch (e) {
      opening.then(
        (s) => s.destroy(),
        () => undefined,
      );
      throw e;
    } finally {
      this.pending = undefined;
    }
    let sink: Socket;
    try {
      sink = await opening;
    } catch (e) {
      feed.stop();
      throw e;
    }
    if (feed.aborted) {
      sink.destroy();
      throw feed.failure ?? new Error('playback was replaced before it started');
    }
    for (const m of listeners) {
      if (m.available) this.members.set(m.clientId, m);
    }
    if (!this.members.size) {
      feed.stop();
      sink.destroy();
      throw new Error('snapclient is not connected');
    }
    this.feed = feed;
    this.meter = undefined;
    if (!media.overlay) {
      // The music's loudness, measured all along (a voice starts at once, on what was heard before it).
      const meter = new MusicLoudness(feed.format);
      this.meter = meter;
      feed.tap((pcm) => meter.push(pcm));
    }
    this.watchFeed(feed);
    try {
      // Listening clients are those playing; mark them so before the regroup counts them.
      for (const m of listeners) if (this.members.has(m.clientId)) m.changeState('playing');
      await this.reconcile();
      this.log.debug({ ms: since() }, 'start timing: clients grouped on the stream');
      // Decoding may have failed while the group was arranged.
      if (feed.failure) throw feed.failure;
    } catch (e) {
      this.stopFeed();
      sink.destroy();
      throw e;
    }
    setup?.install(feed);
    await this.holdUntilStartInstant(media, feed);
    await this.holdForClientStreams(feed);
    feed.attach(sink);
    this.log.debug({ source: describeSource(source), format, ms: since() }, 'feeding the snapserver source');
  }

  /**
   * Cross-family start (MediaRequest.startInstant, agreed by the engine with the other drivers
   * of a play): snapserver stamps the first PCM it gets with about its arrival and the clients
   * play it bufferMs later, so the first PCM is handed over bufferMs before the instant (plus
   * START_TRIM_MS). Until then ffmpeg's output is held (at most the driver's startLeadMs of
   * audio). Without an instant, or one too close to make, the feed starts at once as before.
   */
  private async holdUntilStartInstant(media: MediaRequest, feed: Feed): Promise<void> {
    if (media.startInstant === undefined) return;
    const handOver = media.startInstant - this.opts.server.bufferMs + START_TRIM_MS;
    if (handOver <= syncClockMs()) {
      const late = syncClockMs() - handOver;
      if (late > 20) this.log.warn({ lateMs: Math.round(late) }, 'snapcast: the feed started after the start instant agreed with the other speakers');
      return;
    }
    // In short steps, so a feed stopped meanwhile (a stop_play) ends the wait; attach() then hands nothing over.
    for (let left = handOver - syncClockMs(); left > 0 && feed.running; left = handOver - syncClockMs()) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(left, 50)));
    }
    this.log.debug({ lateMs: Math.round((syncClockMs() - handOver) * 10) / 10 }, 'snapcast: feed handed over for the agreed start instant');
  }

  /**
   * With client streams fed along (issue 30): snapserver takes a stream's new connection only
   * once it has read the last one out, and stamps the first PCM it reads with that moment; the
   * feed is handed over once every one of its streams will read it at once, so they start in
   * step (at most the lead, and a margin, after a previous feed of theirs stopped). Streams
   * that one feed's stop closed together (a resume or a seek soon after it) take it over at
   * once instead, before snapserver has read them out: each goes on from where it was, in step
   * as before, and no client has a jump in time to correct later (ClientStreamPool.continuesInStep).
   */
  private async holdForClientStreams(feed: Feed): Promise<void> {
    const pool = this.opts.clientStreams;
    if (!pool || !this.clientFeeds?.fed().length) return;
    const streams = [this.streamId, ...this.clientFeeds.streams()];
    if (pool.continuesInStep(streams)) {
      this.log.debug('snapcast: feed handed over at once, every stream goes on from its last connection');
      return;
    }
    // And a moment after the regroup: snapserver stamps the first PCM when its thread reads it,
    // which it does late while it is still busy telling everyone of the new groups (up to ~30 ms
    // seen); every later joiner is stamped by the hub's clock, so the start must be too.
    const at = Math.max(...streams.map((s) => pool.readyAt(s)), performance.now() + SETTLE_MS);
    for (let left = at - performance.now(); left > 0 && feed.running; left = at - performance.now()) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(left, 50)));
    }
  }

  private watchFeed(feed: Feed): void {
    feed.on('end', () => {
      if (this.feed !== feed) return;
      // What was fed still sits in snapserver's buffer: the media ends for the listener
      // only after that has played, and releasing the group earlier would cut it off.
      this.ending = this.opts.clock.setTimer(() => {
        this.ending = undefined;
        this.exclusive(async () => {
          if (this.feed !== feed) return;
          this.feed = undefined;
          this.media = undefined;
          this.endDuck();
          // Groups are released before the members hear of the end: one that goes on at
          // once elsewhere (back to the music after an announcement) is not caught by this.
          const gone = [...this.members.values()];
          this.members.clear();
          this.pausedPositions.clear();
          this.log.info('media ended');
          try {
            await this.reconcile();
          } finally {
            for (const m of gone) m.changeState('stopped', 'ended');
            // Queued behind whatever the end started at once (the announcement's next item,
            // which keeps the music held) and ahead of the announced clients' way back to the
            // music (the hub restores their volume first), so that they join it in sync.
            if (this.isHolding) this.scheduleResumeHeld();
          }
        }).catch((e) => this.log.warn({ err: String(e) }, 'could not release groups after the end of the media'));
      }, this.opts.server.bufferMs);
    });
    feed.on('failed', (error) => {
      this.exclusive(async () => {
        if (this.feed !== feed) return;
        this.feed = undefined;
        this.media = undefined;
        this.endDuck();
        this.dropMembers('error', error.message);
        if (this.isHolding) await this.resumeHeld();
        else await this.reconcile();
      }).catch((e) => this.log.warn({ err: String(e) }, 'could not release groups after a feed error'));
    });
  }

  /** Every member leaves the stream, stopped for this reason; the feed is the caller's to end. */
  protected dropMembers(reason: StopReason, detail?: string): void {
    const gone = [...this.members.values()];
    this.members.clear();
    this.pausedPositions.clear();
    for (const m of gone) m.changeState('stopped', reason, detail);
  }

  protected stopFeed(): void {
    this.ending?.cancel();
    this.ending = undefined;
    this.endDuck();
    this.clientFeeds?.stopAll();
    if (this.feed?.attached) this.opts.clientStreams?.closed(this.streamId, this.feed.unreadMs + this.feed.closingPadMs, this.feed);
    this.feed?.stop();
    this.feed = undefined;
    // A start in progress has no members yet, but its media is the current one.
    if (!this.members.size && !this.pending) {
      this.media = undefined;
      this.pausedAt = undefined;
    }
  }

  protected clampToDuration(pos: number): number {
    const d = this.media?.duration;
    return d !== undefined ? Math.min(pos, d) : pos;
  }

  /**
   * Makes snapserver's grouping match the members: only the listening ones on the hub stream,
   * or on a client stream of their own (issue 30), fed in step with it.
   */
  protected async reconcile(): Promise<void> {
    const listening = this.listeningIds();
    const routes = this.route(listening);
    // Fed before the client moves there: it hears the zone as soon as its group is on it.
    await this.clientFeeds?.sync(this.feed, routes, new Set(listening));
    if (this.clientFeeds) this.feed?.setLead(this.lead());
    await this.grouping.apply(listening, this.heldIds(), routes);
  }

  private listeningIds(): string[] {
    const members = [...this.members.values()].filter((m) => m.available && this.opts.model.clients.has(m.clientId));
    const hears = (m: StreamMember) => m.state === 'playing';
    const anyPlaying = members.some(hears);
    // While everyone is paused the group stays together (silent); a member paused alone leaves it.
    return members.filter((m) => hears(m) || !anyPlaying).map((m) => m.clientId);
  }

  /** The client streams of the listening members (ClientStreamPool); none for an announcement, nor without the pool. */
  private route(listening: string[]): Map<string, string> {
    const pool = this.opts.clientStreams;
    this.routed = new Map();
    if (!pool) return this.routed;
    let format: string | undefined;
    try {
      format = streamSource(this.opts.server, this.opts.model).format;
    } catch {
      format = undefined;
    }
    if (this.media?.overlay || format === undefined) {
      pool.releaseAll(this);
      return this.routed;
    }
    const routes = pool.routes(this, {
      members: new Set(this.members.keys()),
      listening,
      onZoneStream: (id) => this.opts.model.groupOf(id)?.streamId === this.streamId,
      format,
      starting: !!this.feed?.running && !this.feed.attached,
    });
    for (const id of listening) {
      const r = routes.get(id);
      if (r !== undefined) this.routed.set(id, r);
    }
    return routes;
  }

  /** Runs `fn` after everything queued before it; the phase is re-read when it is done. */
  protected exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const body = async () => {
      try {
        return await fn();
      } finally {
        this.settlePhase();
      }
    };
    const run = this.queue.then(body, body);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

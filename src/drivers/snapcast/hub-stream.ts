import type { Socket } from 'node:net';
import type { Clock, TimerHandle } from '../../core/clock';
import type { Logger } from '../../logger';
import { syncClockMs, type MediaRequest, type SpeakerPlayState, type StopReason } from '../driver';
import type { ResolvedServerConfig } from './config';
import { DuckMixer } from '../../media/duck-mix';
import { MusicLoudness } from '../../media/music-loudness';
import { DuckVoice } from '../../media/duck-voice';
import { Feed, parseSampleFormat, safeUrl } from './feeder';
import { Grouping, type ControlChannel } from './grouping';
import type { ModelChange, ServerModel } from './model';
import { describeSource, openSink } from './sink';
import { streamSource } from './stream-source';

/**
 * A cross-family start hands the first PCM over this much later than bufferMs before the agreed
 * instant: snapserver stamps its first chunk one chunk (20 ms) before it has read it, and
 * bench/cross-family-skew.js measured the snapclient 8–9 ms ahead of squeezelite without this.
 */
const START_TRIM_MS = 10;

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
}

/** How a play's feed is set up beyond the media itself: a ducked announcement on the announcement stream mixes the music in. */
export interface FeedSetup {
  /** ms of silence after the media. */
  padMs?: number;
  /** Called with the new feed before its first PCM goes out. */
  install(feed: Feed): void;
}

/** A speaker joining a playback within this many seconds of the feed's position joins it instead of restarting it. */
const JOIN_TOLERANCE_S = 3;

/**
 * How long a member whose ducked announcement is over keeps listening to the music while it
 * waits to be given back to it (the hub restores its volume first, or plays the next
 * announcement); one nobody claims by then leaves the stream.
 */
const RECLAIM_MS = 15_000;

/** A ducked announcement mixed into the running feed (issue 21). */
interface Ducking {
  mixer: DuckMixer;
  voice: DuckVoice;
  /** The announced members (client ids): the overlay is theirs, the music goes on under it. */
  ids: Set<string>;
  /** After the mix is over: what was fed still plays out of snapserver's buffer before the members hear of the end. */
  ending?: TimerHandle;
}

/**
 * The music, held back while an announcement has the stream (a server without an
 * announcement stream: one stream carries one media). Its members stay playing for the hub
 * (the playback goes on, in time) but are parked off the stream, hearing nothing; when the
 * announcement is over the music starts again where it would be by now, for all of them in
 * one group, and the announced clients rejoin it as the hub gives them back.
 */
interface HeldMusic {
  media: MediaRequest;
  /** Seconds into the media at `since`. */
  position: number;
  /** Clock ms since which it runs on; undefined while every held member is paused. */
  since?: number;
  members: Map<string, StreamMember>;
  /** Where members paused alone stopped (seconds). */
  paused: Map<string, number>;
}

/**
 * The hub's one stream on one snapserver and who listens to it: one decode feeds the
 * stream, and every client playing it sits in one group on it (see Grouping), which is
 * what makes them play sample-synchronously. Members are the speakers carrying the current
 * media, playing or paused. Everything that changes membership or the feed runs one at a
 * time (exclusive).
 */
export class HubStream {
  private readonly members = new Map<string, StreamMember>();
  private feed?: Feed;
  private media?: MediaRequest;
  /** Seconds: where the feed stopped when every member paused. */
  private pausedAt?: number;
  /** Per member paused alone while others play on. */
  private readonly pausedPositions = new Map<string, number>();
  /** A start in progress; stop() aborts it rather than waiting up to startTimeoutMs. */
  private pending?: { feed: Feed; ids: Set<string> };
  private ending?: TimerHandle;
  private queue: Promise<unknown> = Promise.resolve();
  private reconcileQueued = false;
  private resumeBatch?: { ids: Set<string>; done: Promise<void> };
  /** The music while an announcement plays in its place (see HeldMusic). */
  private held?: HeldMusic;
  /** The ducked announcement being mixed into the feed, if any. */
  private ducking?: Ducking;
  /** Music played while a ducked announcement is mixed into the feed: it starts when that is over (deferPlay). */
  private deferred?: { ready: StreamMember[]; media: MediaRequest; startAt: number; since: number };
  /** The running music's short-term loudness (fed by a tap on the feed), where a ducked voice is placed from. */
  private meter?: MusicLoudness;
  /**
   * Members whose ducked announcement is over (stopped, 'ended', for the hub) and who go on
   * listening to the music in place until the hub gives them back to it (a play of the same
   * media), so that coming back is no restart and no regroup: no gap.
   */
  private readonly lent = new Map<string, TimerHandle>();
  private readonly grouping: Grouping;
  private readonly log: Logger;

  constructor(private readonly opts: HubStreamOptions) {
    this.log = opts.logger;
    this.grouping = new Grouping(opts);
  }

  private get streamId(): string {
    return this.opts.server.stream;
  }

  // ---- commands from speakers ------------------------------------------------------

  playGroup(list: StreamMember[], media: MediaRequest, setup?: FeedSetup): Promise<PromiseSettledResult<void>[]> {
    return this.exclusive(async () => {
      const results: PromiseSettledResult<void>[] = list.map(() => ({ status: 'fulfilled', value: undefined }));
      const ready: StreamMember[] = [];
      list.forEach((m, i) => {
        if (m.available) ready.push(m);
        else results[i] = { status: 'rejected', reason: new Error('snapclient is not connected') };
      });
      if (!ready.length) return results;
      const startAt = Math.max(0, media.startAt ?? 0);
      try {
        if (this.canReclaim(ready, media, startAt)) this.reclaim(ready);
        else if (!setup && this.canJoin(ready, media, startAt)) await this.join(ready);
        else await this.start(ready, media, startAt, setup);
      } catch (e) {
        list.forEach((m, i) => {
          if (ready.includes(m)) results[i] = { status: 'rejected', reason: e };
        });
      }
      return results;
    });
  }

  pause(m: StreamMember): Promise<void> {
    const h = this.held;
    if (h?.members.has(m.clientId)) {
      if (m.state !== 'playing') return Promise.resolve();
      // Nothing to stop: the held music only keeps time, and stops keeping it when no one plays it.
      h.paused.set(m.clientId, this.heldPosition(h));
      m.changeState('paused');
      if (![...h.members.values()].some((x) => x.state === 'playing')) {
        h.position = this.heldPosition(h);
        h.since = undefined;
      }
      return Promise.resolve();
    }
    if (m.state !== 'playing' || !this.members.has(m.clientId)) return Promise.resolve();
    // Synchronous, so members paused together (the core pauses all at once) are all
    // paused before the first check below runs, and the feed stops once, not per member.
    this.pausedPositions.set(m.clientId, this.position(m) ?? 0);
    m.changeState('paused');
    return this.exclusive(async () => {
      const playing = [...this.members.values()].some((x) => x.state === 'playing');
      if (!playing && this.feed) {
        this.pausedAt = this.clampToDuration(this.feed.position);
        this.stopFeed();
        this.log.info({ at: this.pausedAt }, 'feed paused');
      }
      await this.reconcile();
    });
  }

  /** Members resumed together form one batch: one feed restart, all back in the group at once. */
  resume(m: StreamMember): Promise<void> {
    const h = this.held;
    if (h?.members.has(m.clientId)) {
      if (m.state !== 'paused') return Promise.resolve();
      // It goes on at the music's (held) position when the announcement is over.
      h.paused.delete(m.clientId);
      h.since ??= this.opts.clock.now();
      m.changeState('playing');
      return Promise.resolve();
    }
    if (m.state !== 'paused' || !this.members.has(m.clientId)) return Promise.resolve();
    if (!this.resumeBatch) {
      const ids = new Set<string>();
      const done = this.exclusive(async () => {
        this.resumeBatch = undefined;
        await this.resumeMembers(ids);
      });
      this.resumeBatch = { ids, done };
    }
    this.resumeBatch.ids.add(m.clientId);
    return this.resumeBatch.done;
  }

  stop(m: StreamMember): Promise<void> {
    if (this.pending?.ids.has(m.clientId)) this.pending.feed.stop();
    return this.exclusive(async () => {
      if (this.dropHeld(m.clientId)) {
        m.changeState('stopped', 'stopped');
        await this.reconcile().catch((e) => this.log.warn({ err: String(e) }, 'could not release the group after stop'));
        return;
      }
      this.unlend(m.clientId);
      this.unduck(m.clientId);
      this.undefer(m.clientId);
      if (!this.members.delete(m.clientId)) {
        if (m.state !== 'stopped') m.changeState('stopped', 'stopped');
        return;
      }
      this.pausedPositions.delete(m.clientId);
      m.changeState('stopped', 'stopped');
      if (!this.members.size) this.stopFeed();
      // The announcement was stopped (cut short, its client gone): the music comes back now.
      if (!this.members.size && this.held) await this.resumeHeld();
      else await this.reconcile().catch((e) => this.log.warn({ err: String(e) }, 'could not release the group after stop'));
    });
  }

  /** Whether the client carries (or is paused in) this stream's media, or in the music held back. */
  has(clientId: string): boolean {
    return this.members.has(clientId) || !!this.held?.members.has(clientId);
  }

  position(m: StreamMember): number | undefined {
    const h = this.held;
    if (m.state !== 'stopped' && h?.members.has(m.clientId)) {
      return m.state === 'paused' ? (h.paused.get(m.clientId) ?? this.heldPosition(h)) : this.heldPosition(h);
    }
    if (m.state === 'stopped' || !this.members.has(m.clientId)) return undefined;
    if (m.state === 'paused') return this.pausedPositions.get(m.clientId) ?? this.pausedAt ?? 0;
    const pos = this.feed?.position ?? this.pausedAt ?? 0;
    return this.clampToDuration(pos);
  }

  // ---- events from the server --------------------------------------------------------

  /** A client went away: it drops out of the playback; the others play on. */
  clientGone(clientId: string, detail: string): void {
    const held = this.held?.members.get(clientId);
    if (held) {
      this.dropHeld(clientId);
      held.changeState('stopped', 'error', detail);
      this.log.warn({ clientId, detail }, 'snapclient dropped out of the playback');
      return;
    }
    const waiting = this.deferred?.ready.find((x) => x.clientId === clientId);
    if (waiting) {
      this.undefer(clientId);
      waiting.changeState('stopped', 'error', detail);
    }
    const m = this.members.get(clientId);
    if (!m) return;
    this.unlend(clientId);
    this.unduck(clientId);
    this.members.delete(clientId);
    this.pausedPositions.delete(clientId);
    m.changeState('stopped', 'error', detail);
    this.log.warn({ clientId, detail }, 'snapclient dropped out of the playback');
    if (!this.members.size) {
      this.pending?.feed.stop();
      this.stopFeed();
      if (this.held) this.scheduleResumeHeld();
    }
    this.scheduleReconcile();
  }

  /** Another controller switched a group the hub plays on to some other stream: its members stop. */
  groupTakenOver(groupId: string, streamId: string): void {
    if (streamId === this.streamId) return;
    const group = this.opts.model.groups.get(groupId);
    const detail = `group switched to stream ${streamId} by another controller`;
    let taken = false;
    for (const id of group?.clientIds ?? []) {
      // A parked client moved by someone else is theirs now: it leaves the held music.
      const held = this.held?.members.get(id);
      if (held && this.dropHeld(id)) held.changeState('stopped', 'stopped', detail);
      const m = this.members.get(id);
      if (!m) continue;
      this.unlend(id);
      this.unduck(id);
      this.members.delete(id);
      this.pausedPositions.delete(id);
      m.changeState('stopped', 'stopped', detail);
      taken = true;
    }
    // Only when it took the last member: a notification about a group the hub does not play
    // on (arriving while a play starts, before it has members) must not end that play.
    if (taken && !this.members.size) {
      this.stopFeed();
      if (this.held) this.scheduleResumeHeld();
    }
  }

  /** The control connection dropped: nothing can be controlled, so every member stops with an error. */
  connectionLost(): void {
    this.dropDeferred('error', 'lost the connection to snapserver');
    this.pending?.feed.stop();
    this.stopFeed();
    this.dropMembers('error', 'lost the connection to snapserver');
    this.dropAllHeld('error', 'lost the connection to snapserver');
  }

  /** Re-establishes the invariant after the server's topology changed (coalesced). */
  scheduleReconcile(): void {
    if (this.reconcileQueued) return;
    this.reconcileQueued = true;
    this.exclusive(async () => {
      this.reconcileQueued = false;
      await this.reconcile();
    }).catch((e) => this.log.warn({ err: String(e) }, 'could not regroup snapclients'));
  }

  /** Stops everything and hands the groups back (hub shutdown). */
  async shutdown(): Promise<void> {
    this.pending?.feed.stop();
    await this.exclusive(async () => {
      this.dropDeferred('stopped');
      this.stopFeed();
      for (const m of this.members.values()) m.changeState('stopped', 'stopped');
      this.members.clear();
      this.dropAllHeld('stopped');
      await this.reconcile().catch((e) => this.log.warn({ err: String(e) }, 'could not release groups at shutdown'));
    });
  }

  // ---- ducked announcements (issue 21) ----------------------------------------------

  /** A copy of the music's PCM as it goes to snapserver, while this feed runs; undefined when nothing is fed. */
  tapMusic(fn: (pcm: Buffer) => void, replayMs = 0): (() => void) | undefined {
    return this.feed?.running ? this.feed.tap(fn, replayMs) : undefined;
  }

  /** The running music's short-term loudness (LUFS; -Infinity for silence or under 400 ms of it); undefined when no music is fed. */
  get musicLufs(): number | undefined {
    return this.feed?.running ? this.meter?.lufs : undefined;
  }

  /** The running feed's sample format. */
  get feedFormat(): Feed['format'] | undefined {
    return this.feed?.running ? this.feed.format : undefined;
  }

  /** Client ids that hear this stream's music now: playing members, and those lent to a ducked announcement that is over. */
  listeners(): string[] {
    if (!this.feed?.running) return [];
    return [...this.members.values()].filter((m) => m.state === 'playing' || this.lent.has(m.clientId)).map((m) => m.clientId);
  }

  /**
   * Mixes an announcement into the running music for `list`, who are all its listeners (the
   * caller checks): the music fades down by the duck level, the voice plays over it, the
   * music fades back up, in the PCM on its way to snapserver. The decode goes on untouched
   * and nobody changes group, so the music neither stops nor loses its place. Resolves once
   * the voice is decoding; the members stop ('ended') when the mix is over and has played
   * out of snapserver's buffer, and go on hearing the music until they are given back to it.
   */
  duck(list: StreamMember[], media: MediaRequest, voiceGainDb: number): Promise<PromiseSettledResult<void>[]> {
    return this.exclusive(async () => {
      try {
        await this.startDuck(list, media, voiceGainDb);
        return list.map((): PromiseSettledResult<void> => ({ status: 'fulfilled', value: undefined }));
      } catch (e) {
        return list.map((): PromiseSettledResult<void> => ({ status: 'rejected', reason: e }));
      }
    });
  }

  private async startDuck(list: StreamMember[], media: MediaRequest, voiceGainDb: number): Promise<void> {
    const feed = this.feed;
    const duck = media.duck;
    if (!duck) throw new Error('not a ducked announcement');
    if (!feed?.running) throw new Error('the music stopped before the announcement could be mixed into it');
    const prev = this.ducking;
    const mixer = new DuckMixer({
      format: feed.format,
      levelDb: duck.levelDb,
      fadeMs: duck.fadeMs,
      voiceGainDb,
      ...(this.meter ? { musicLufs: this.meter.lufs } : {}),
      // Taking over from a duck still under way: the music goes on from where its fade is.
      startGain: prev?.mixer.gain ?? 1,
    });
    const voice = new DuckVoice({
      url: media.url,
      format: feed.format,
      ffmpegPath: this.opts.ffmpegPath,
      startTimeoutMs: this.opts.startTimeoutMs,
      logger: this.log,
    });
    await voice.start(mixer);
    if (this.feed !== feed || !feed.running) {
      voice.stop();
      throw new Error('the music stopped before the announcement could be mixed into it');
    }
    if (prev) {
      prev.voice.stop();
      prev.ending?.cancel();
    }
    const d: Ducking = { mixer, voice, ids: new Set(list.map((m) => m.clientId)) };
    for (const m of list) {
      this.unlend(m.clientId);
      m.changeState('playing');
    }
    this.mixInto(feed, d);
    this.log.info(
      {
        url: safeUrl(media.url),
        clients: [...d.ids],
        levelDb: duck.levelDb,
        fadeMs: duck.fadeMs,
        voiceGainDb: Number(voiceGainDb.toFixed(1)),
        musicLufs: this.meter ? Number(this.meter.lufs.toFixed(1)) : undefined,
        placementDb: Number(mixer.placementDb.toFixed(1)),
      },
      'announcement mixed into the music (ducked)',
    );
  }

  /** Runs `feed`'s PCM through the duck's mixer until the mix is over (then, once it has played out of snapserver's buffer, duckOver). */
  private mixInto(feed: Feed, d: Ducking): void {
    this.ducking = d;
    d.mixer.onDone = () => {
      if (this.ducking !== d) return;
      feed.setMix(undefined);
      d.ending = this.opts.clock.setTimer(() => {
        d.ending = undefined;
        this.exclusive(async () => this.duckOver(d)).catch((e) => this.log.warn({ err: String(e) }, 'could not end the ducked announcement'));
      }, this.opts.server.bufferMs);
    };
    feed.setMix((pcm) => d.mixer.process(pcm));
  }

  /**
   * New music played (on clients of this server the announcement did not take) while a ducked
   * announcement is mixed into the music: one stream carries one feed, so starting it now
   * would cut the voice short, and mixing the voice into it would play the announcement to
   * clients it was not for. So the play waits until the announcement is over, as music played
   * during an interrupting announcement does (holdPlay): its clients are playing for the hub,
   * silently, and it starts where it would be by then.
   */
  private deferPlay(ready: StreamMember[], media: MediaRequest, startAt: number): void {
    const prev = this.deferred;
    const wanted = new Set(ready.map((m) => m.clientId));
    if (prev) for (const m of prev.ready) if (!wanted.has(m.clientId) && m.state !== 'stopped') m.changeState('stopped', 'stopped');
    this.deferred = { ready, media, startAt, since: this.opts.clock.now() };
    for (const m of ready) m.changeState('playing');
    this.log.info(
      { url: safeUrl(media.url), clients: [...wanted] },
      'a ducked announcement is mixed into the music: the new music starts when it is over',
    );
  }

  /** Every client waiting for a deferred play stops (shutdown, lost connection). */
  private dropDeferred(reason: StopReason, detail?: string): void {
    const p = this.deferred;
    this.deferred = undefined;
    for (const m of p?.ready ?? []) if (m.state !== 'stopped') m.changeState('stopped', reason, detail);
  }

  /** A client waiting for a deferred play leaves it (stopped, gone). */
  private undefer(clientId: string): void {
    const p = this.deferred;
    if (!p) return;
    p.ready = p.ready.filter((m) => m.clientId !== clientId);
    if (!p.ready.length) this.deferred = undefined;
  }

  /** The ducked announcement is over (or the music it was mixed into is gone): a play that waited for it starts now. */
  private scheduleDeferred(): void {
    const p = this.deferred;
    if (!p) return;
    this.deferred = undefined;
    this.exclusive(async () => {
      const ready = p.ready.filter((m) => m.available && m.state === 'playing');
      if (!ready.length) return;
      const at = p.startAt + (this.opts.clock.now() - p.since) / 1000;
      try {
        await this.start(ready, p.media, p.media.duration !== undefined ? Math.min(at, p.media.duration) : at);
      } catch (e) {
        for (const m of ready) if (m.state !== 'stopped') m.changeState('stopped', 'error', String(e));
        throw e;
      }
    }).catch((e) => this.log.warn({ err: String(e) }, 'the music played during a ducked announcement could not start'));
  }

  /** The ducked announcement has played out: its members stop for the hub ('ended') and keep hearing the music, lent, until reclaimed. */
  private duckOver(d: Ducking): void {
    if (this.ducking !== d) return;
    this.ducking = undefined;
    d.voice.stop();
    for (const id of d.ids) {
      const m = this.members.get(id);
      if (!m || m.state !== 'playing') continue;
      this.lent.set(
        id,
        this.opts.clock.setTimer(() => {
          this.exclusive(() => this.unclaimed(id)).catch((e) =>
            this.log.warn({ err: String(e) }, 'could not release a client after its announcement'),
          );
        }, RECLAIM_MS),
      );
      m.changeState('stopped', 'ended');
    }
    this.log.info({ clients: [...d.ids] }, 'ducked announcement over; the music is back at full level');
    this.scheduleDeferred();
  }

  /** Nobody gave the member back to the music in time: it leaves the stream. */
  private async unclaimed(clientId: string): Promise<void> {
    if (!this.lent.has(clientId)) return;
    this.lent.delete(clientId);
    this.members.delete(clientId);
    this.log.info({ clientId }, 'a client was not given back to the music after its ducked announcement; it leaves the stream');
    if (!this.members.size) this.stopFeed();
    await this.reconcile();
  }

  /** The members being given back are lent ones, and the play is the music they still hear: nothing to do but say so. */
  private canReclaim(ready: StreamMember[], media: MediaRequest, startAt: number): boolean {
    if (media.overlay || !this.feed?.running || this.media?.url !== media.url) return false;
    if (!ready.every((m) => this.lent.has(m.clientId) && this.members.has(m.clientId))) return false;
    return Math.abs(this.feed.position - startAt) <= JOIN_TOLERANCE_S;
  }

  private reclaim(ready: StreamMember[]): void {
    for (const m of ready) {
      this.unlend(m.clientId);
      m.changeState('playing');
    }
    this.log.info({ clients: ready.map((m) => m.clientId) }, 'back to the music after a ducked announcement (it never stopped)');
  }

  private unlend(clientId: string): void {
    this.lent.get(clientId)?.cancel();
    this.lent.delete(clientId);
  }

  /** A member leaves the ducked announcement (stopped, gone); with the last one, the music fades back up. */
  private unduck(clientId: string): void {
    const d = this.ducking;
    if (!d?.ids.delete(clientId) || d.ids.size) return;
    d.voice.stop();
    d.mixer.release();
  }

  /** The feed is gone: no mix, no lent members (they leave with it). */
  private endDuck(): void {
    const d = this.ducking;
    this.ducking = undefined;
    this.scheduleDeferred();
    if (d) {
      d.voice.stop();
      d.ending?.cancel();
    }
    for (const [id, timer] of this.lent) {
      timer.cancel();
      this.members.delete(id);
    }
    this.lent.clear();
  }

  // ---- internals ---------------------------------------------------------------------

  private canJoin(ready: StreamMember[], media: MediaRequest, startAt: number): boolean {
    // A list holding a current member is a new play (maybe the same track again): restart.
    if (!this.feed?.running || this.media?.url !== media.url) return false;
    if (ready.some((m) => this.members.has(m.clientId))) return false;
    return Math.abs(this.feed.position - startAt) <= JOIN_TOLERANCE_S;
  }

  private async join(ready: StreamMember[]): Promise<void> {
    // Playing before the regroup, which puts only playing members in the group.
    for (const m of ready) {
      this.members.set(m.clientId, m);
      m.changeState('playing');
    }
    try {
      await this.reconcile();
    } catch (e) {
      for (const m of ready) {
        this.members.delete(m.clientId);
        m.changeState('stopped', 'error', String(e));
      }
      throw e;
    }
    this.log.info({ clients: ready.map((m) => m.clientId) }, 'joined the running feed');
  }

  /**
   * Replaces whatever plays with a new decode of `media` at `startAt` for `ready`. An overlay
   * (announcement) holds the music of the members it does not take back (HeldMusic); music
   * played while an overlay has the stream is held until it is over.
   */
  private async start(ready: StreamMember[], media: MediaRequest, startAt: number, setup?: FeedSetup): Promise<void> {
    const wanted = new Set(ready.map((m) => m.clientId));
    if (!media.overlay && this.media?.overlay && this.members.size && ready.every((m) => !this.members.has(m.clientId))) {
      this.holdPlay(ready, media, startAt);
      return;
    }
    if (!media.overlay && !this.members.size && this.held && this.continuesHeld(this.held, media, startAt)) {
      // Given back to the held music before it started again: it starts now, with them in it.
      await this.resumeHeld(ready);
      return;
    }
    if (!media.overlay && !setup && this.ducking && this.feed?.running && ready.every((m) => !this.ducking!.ids.has(m.clientId))) {
      this.deferPlay(ready, media, startAt);
      return;
    }
    if (media.overlay) this.holdMusic(wanted);
    else this.dropAllHeld('stopped', undefined, wanted);
    this.stopFeed();
    for (const [id, m] of this.members) {
      if (wanted.has(id)) continue;
      this.members.delete(id);
      m.changeState('stopped', 'stopped');
    }
    this.pausedPositions.clear();
    this.pausedAt = undefined;
    this.media = media;
    try {
      await this.startFeed(media, startAt, ready, setup);
    } catch (e) {
      this.media = undefined;
      for (const m of ready) {
        if (this.members.delete(m.clientId) && m.state !== 'stopped') m.changeState('stopped', 'stopped');
      }
      // An announcement that cannot start gives the stream back to the music it held.
      if (!this.members.size && this.held) await this.resumeHeld();
      else await this.reconcile().catch((err) => this.log.warn({ err: String(err) }, 'could not release groups after a failed start'));
      throw e;
    }
    this.log.info({ url: safeUrl(media.url), startAt, clients: ready.map((m) => m.clientId), overlay: !!media.overlay }, 'playing on snapcast');
  }

  /**
   * An overlay takes the stream: music members it does not take (the rest of a party) keep
   * their playback, held, and are parked off the stream until it is over. The ones it takes
   * leave the held music (the hub gives them back to the music afterwards).
   */
  private holdMusic(overlay: Set<string>): void {
    const music = this.media && !this.media.overlay ? this.media : undefined;
    const keep = [...this.members.values()].filter((m) => !overlay.has(m.clientId));
    if (music && keep.length) {
      const running = !!this.feed?.running;
      const position = this.clampToDuration(running ? this.feed!.position : (this.pausedAt ?? 0));
      const held: HeldMusic = { media: music, position, since: running ? this.opts.clock.now() : undefined, members: new Map(), paused: new Map() };
      for (const m of keep) {
        held.members.set(m.clientId, m);
        this.members.delete(m.clientId);
        const at = this.pausedPositions.get(m.clientId);
        if (at !== undefined) held.paused.set(m.clientId, at);
      }
      // Someone paused alone while others played: the held music runs on for the others.
      if (keep.some((m) => m.state === 'playing')) held.since ??= this.opts.clock.now();
      this.held = held;
      this.log.info(
        { clients: keep.map((m) => m.clientId), at: position },
        'no announcement stream: the music is held for the other clients (parked, silent) until the announcement is over',
      );
    }
    for (const id of overlay) this.dropHeld(id);
  }

  /** Music played while an overlay has the stream: held (playing for the hub) until the overlay is over. */
  private holdPlay(ready: StreamMember[], media: MediaRequest, startAt: number): void {
    const h = this.held;
    if (!h || !this.continuesHeld(h, media, startAt)) {
      const wanted = new Set(ready.map((m) => m.clientId));
      this.dropAllHeld('stopped', undefined, wanted);
      this.held = { media, position: startAt, since: this.opts.clock.now(), members: new Map(), paused: new Map() };
    }
    for (const m of ready) {
      this.held!.members.set(m.clientId, m);
      this.held!.paused.delete(m.clientId);
      m.changeState('playing');
    }
    this.scheduleReconcile();
    this.log.info(
      { url: safeUrl(media.url), clients: ready.map((m) => m.clientId) },
      'an announcement has the stream: the music starts when it is over',
    );
  }

  /** Whether a play of `media` at `startAt` is the held music (a speaker joining it). */
  private continuesHeld(h: HeldMusic, media: MediaRequest, startAt: number): boolean {
    return h.media.url === media.url && Math.abs(this.heldPosition(h) - startAt) <= JOIN_TOLERANCE_S;
  }

  /** Seconds into the held music now. */
  private heldPosition(h: HeldMusic): number {
    const running = h.since !== undefined ? (this.opts.clock.now() - h.since) / 1000 : 0;
    const pos = h.position + running;
    return h.media.duration !== undefined ? Math.min(pos, h.media.duration) : pos;
  }

  /** Takes a client out of the held music; true when it was in it. */
  private dropHeld(clientId: string): boolean {
    const h = this.held;
    if (!h?.members.delete(clientId)) return false;
    h.paused.delete(clientId);
    if (!h.members.size) this.held = undefined;
    return true;
  }

  /** Ends the held music for all its members but `keep` (taken over by a new play). */
  private dropAllHeld(reason: StopReason, detail?: string, keep: Set<string> = new Set()): void {
    const h = this.held;
    if (!h) return;
    this.held = undefined;
    for (const m of h.members.values()) if (!keep.has(m.clientId)) m.changeState('stopped', reason, detail);
  }

  private scheduleResumeHeld(): void {
    this.exclusive(() => this.resumeHeld()).catch((e) => this.log.warn({ err: String(e) }, 'could not bring the music back after the announcement'));
  }

  /**
   * The announcement is over: the held music starts again where it is by now, for its
   * playing members in one group (paused ones wait on the stream, as paused members do),
   * with `joining` (speakers given back to it) in that group too. Runs inside `exclusive`,
   * with no member on the stream; rejects only when `joining` could not start.
   */
  private async resumeHeld(joining: StreamMember[] = []): Promise<void> {
    const h = this.held;
    if (!h || this.members.size) return;
    this.held = undefined;
    const live = [...h.members.values()].filter((m) => m.available && m.state !== 'stopped');
    if (!live.length && !joining.length) return this.reconcile();
    const at = this.heldPosition(h);
    if (h.media.duration !== undefined && at >= h.media.duration - 0.5) {
      this.log.info('the held music ended during the announcement');
      await this.reconcile().catch((e) => this.log.warn({ err: String(e) }, 'could not release groups'));
      for (const m of live) m.changeState('stopped', 'ended');
      if (joining.length) throw new Error('the media has ended');
      return;
    }
    const playing = [...live.filter((m) => m.state === 'playing'), ...joining.filter((m) => !h.members.has(m.clientId))];
    this.media = h.media;
    for (const m of live) {
      if (m.state !== 'paused') continue;
      this.members.set(m.clientId, m);
      this.pausedPositions.set(m.clientId, h.paused.get(m.clientId) ?? at);
    }
    if (!playing.length) {
      // Everyone paused: nothing to feed; resume starts the decode at this position.
      this.pausedAt = at;
      await this.reconcile();
      return;
    }
    try {
      await this.startFeed(h.media, at, playing);
    } catch (e) {
      const error = e instanceof Error ? e : new Error(String(e));
      this.log.warn({ err: error.message }, 'the music could not start again after the announcement');
      this.media = undefined;
      this.pausedPositions.clear();
      for (const m of [...live, ...joining]) m.changeState('stopped', 'error', error.message);
      this.members.clear();
      await this.reconcile().catch((err) => this.log.warn({ err: String(err) }, 'could not release groups'));
      if (joining.length) throw error;
      return;
    }
    this.log.info({ at, clients: playing.map((m) => m.clientId) }, 'the music is back after the announcement');
  }

  /**
   * Starts a decode and puts `listeners` on the stream: the first PCM is held while the
   * group is arranged, so the clients are listening before any audio reaches the stream.
   */
  private async startFeed(media: MediaRequest, startAt: number, listeners: StreamMember[], setup?: FeedSetup): Promise<void> {
    const { source, format } = streamSource(this.opts.server, this.opts.model);
    const feed = new Feed({
      url: media.url,
      startAt,
      format: parseSampleFormat(format),
      ffmpegPath: this.opts.ffmpegPath,
      startTimeoutMs: this.opts.startTimeoutMs,
      logger: this.log,
      ...(setup?.padMs ? { padMs: setup.padMs } : {}),
    });
    this.pending = { feed, ids: new Set(listeners.map((m) => m.clientId)) };
    // The source opens while ffmpeg starts; a rejection is handled below, never left dangling.
    const opening = openSink(source, this.opts.connectTimeoutMs);
    opening.catch(() => undefined);
    try {
      await feed.start();
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
      // Decoding may have failed while the group was arranged.
      if (feed.failure) throw feed.failure;
    } catch (e) {
      this.stopFeed();
      sink.destroy();
      throw e;
    }
    setup?.install(feed);
    await this.holdUntilStartInstant(media, feed);
    feed.attach(sink);
    this.log.debug({ source: describeSource(source), format }, 'feeding the snapserver source');
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
            if (this.held) this.scheduleResumeHeld();
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
        if (this.held) await this.resumeHeld();
        else await this.reconcile();
      }).catch((e) => this.log.warn({ err: String(e) }, 'could not release groups after a feed error'));
    });
  }

  private async resumeMembers(ids: Set<string>): Promise<void> {
    const batch = [...ids].map((id) => this.members.get(id)).filter((m): m is StreamMember => !!m && m.state === 'paused');
    if (!batch.length) return;
    if (!this.feed?.running) {
      if (!this.media) throw new Error('nothing to resume');
      const at = this.pausedAt ?? 0;
      this.pausedAt = undefined;
      for (const m of batch) this.pausedPositions.delete(m.clientId);
      try {
        await this.startFeed(this.media, at, batch);
      } catch (e) {
        this.pausedAt = at;
        if (this.feed === undefined) for (const m of batch) if (m.state === 'playing') m.changeState('paused');
        throw e;
      }
      this.log.info({ at }, 'feed resumed');
      return;
    }
    // The feed runs for others: a member paused alone rejoins at the live position.
    for (const m of batch) {
      this.pausedPositions.delete(m.clientId);
      m.changeState('playing');
    }
    await this.reconcile();
  }

  /** Every member leaves the stream, stopped for this reason; the feed is the caller's to end. */
  private dropMembers(reason: StopReason, detail?: string): void {
    const gone = [...this.members.values()];
    this.members.clear();
    this.pausedPositions.clear();
    for (const m of gone) m.changeState('stopped', reason, detail);
  }

  private stopFeed(): void {
    this.ending?.cancel();
    this.ending = undefined;
    this.endDuck();
    this.feed?.stop();
    this.feed = undefined;
    // A start in progress has no members yet, but its media is the current one.
    if (!this.members.size && !this.pending) {
      this.media = undefined;
      this.pausedAt = undefined;
    }
  }

  private clampToDuration(pos: number): number {
    const d = this.media?.duration;
    return d !== undefined ? Math.min(pos, d) : pos;
  }

  /** Makes snapserver's grouping match the members: only the listening ones on the hub stream. */
  private async reconcile(): Promise<void> {
    const members = [...this.members.values()].filter((m) => m.available && this.opts.model.clients.has(m.clientId));
    // A member lent to a ducked announcement that is over still hears the music (see lent).
    const hears = (m: StreamMember) => m.state === 'playing' || this.lent.has(m.clientId);
    const anyPlaying = members.some(hears);
    // While everyone is paused the group stays together (silent); a member paused alone leaves it.
    const listening = members.filter((m) => hears(m) || !anyPlaying).map((m) => m.clientId);
    await this.grouping.apply(listening, new Set(this.held?.members.keys()));
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

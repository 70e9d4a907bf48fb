import type { MediaRequest } from '../driver';
import { safeUrl } from './feeder';
import { DuckingStream } from './duck-stream';
import { JOIN_TOLERANCE_S } from './held-music';
import type { FeedSetup, StreamMember } from './stream-core';

export type { FeedSetup, HubStreamOptions, StreamMember } from './stream-core';

/**
 * One hub-fed stream on one snapserver and who listens to it: one decode feeds the stream,
 * and every client playing it sits in one group on it (see Grouping), which is what makes
 * them play sample-synchronously. Members are the speakers carrying the current media,
 * playing or paused. A stream carries one zone at a time (the zone pool hands it out); the
 * modes it can be in are layered: StreamCore (feed, grouping, phase), HeldMusicStream (an
 * announcement holding the music), DuckingStream (an announcement mixed into it), and this
 * class, which takes the commands and events and picks the mode. Everything that changes
 * membership or the feed runs one at a time (exclusive).
 */
export class HubStream extends DuckingStream {
  private resumeBatch?: { ids: Set<string>; done: Promise<void> };

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
        if (!setup && this.canJoin(ready, media, startAt)) await this.join(ready);
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

  /**
   * The clients that carry this stream's zone for the hub: members of its music (playing or
   * paused, starting, or waiting for a ducked announcement to end) and of the music held back;
   * not clients an announcement borrowed (the overlay's own, and the ducked ones: a new zone
   * that claims them while the voice plays takes the stream, its play waiting for the mix). The pool hands a stream to a new
   * zone only when every carrier is among that zone's speakers.
   */
  carriers(): Set<string> {
    const out = new Set<string>();
    if (!this.media?.overlay) {
      for (const id of this.members.keys()) if (!this.ducking?.ids.has(id)) out.add(id);
      for (const id of this.pending?.ids ?? []) out.add(id);
    }
    for (const id of this.held?.members.keys() ?? []) out.add(id);
    for (const m of this.deferred?.ready ?? []) out.add(m.clientId);
    return out;
  }

  /** Whether what it feeds now is an announcement (an overlay), not a zone's music. */
  get playsOverlay(): boolean {
    return !!this.media?.overlay;
  }

  /** The URL of the media fed (or paused, or starting) now, if any. */
  get mediaUrl(): string | undefined {
    return this.media?.url;
  }

  /** Every client this stream has: members, starting, held, waiting for a ducked announcement to end. */
  clients(): Set<string> {
    return new Set([...this.members.keys(), ...(this.pending?.ids ?? []), ...this.heldIds(), ...(this.deferred?.ready ?? []).map((m) => m.clientId)]);
  }

  /** Whether a stop of the client concerns this stream: it is a member, held, starting or waiting here. */
  involves(clientId: string): boolean {
    return this.has(clientId) || !!this.pending?.ids.has(clientId) || !!this.deferred?.ready.some((m) => m.clientId === clientId);
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
      this.settlePhase();
      return;
    }
    const waiting = this.deferred?.ready.find((x) => x.clientId === clientId);
    if (waiting) {
      this.undefer(clientId);
      waiting.changeState('stopped', 'error', detail);
    }
    const m = this.members.get(clientId);
    if (!m) return;
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
      // On its own client stream (issue 30): that is where the hub put it.
      if (this.routeOf(id) === streamId) continue;
      // A parked client moved by someone else is theirs now: it leaves the held music.
      const held = this.held?.members.get(id);
      if (held && this.dropHeld(id)) held.changeState('stopped', 'stopped', detail);
      const m = this.members.get(id);
      if (!m) continue;
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
    this.settlePhase();
  }

  /** The control connection dropped: nothing can be controlled, so every member stops with an error. */
  connectionLost(): void {
    this.dropDeferred('error', 'lost the connection to snapserver');
    this.pending?.feed.stop();
    this.stopFeed();
    this.dropMembers('error', 'lost the connection to snapserver');
    this.dropAllHeld('error', 'lost the connection to snapserver');
    this.settlePhase();
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

  // ---- internals ---------------------------------------------------------------------

  private canJoin(ready: StreamMember[], media: MediaRequest, startAt: number): boolean {
    // A list holding a current member is a new play (maybe the same track again): restart.
    if (!this.feed?.running) return false;
    if (ready.some((m) => this.members.has(m.clientId))) return false;
    // The engine names the zone a speaker joins. An announcement has none (a second speaker
    // of one joins it by URL and position), nor has a play of an embedder's.
    if (!media.overlay && (media.zone !== undefined || this.zone !== undefined)) return !this.media?.overlay && media.zone === this.zone;
    return this.media?.url === media.url && Math.abs(this.feed.position - startAt) <= JOIN_TOLERANCE_S;
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
  protected async start(ready: StreamMember[], media: MediaRequest, startAt: number, setup?: FeedSetup): Promise<void> {
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
    // An announcement keeps the zone whose music it holds (or whose speakers it took): a
    // speaker given back to that zone comes to this stream.
    if (!media.overlay) this.zone = media.zone;
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
}

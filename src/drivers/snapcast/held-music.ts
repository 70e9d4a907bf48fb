import type { MediaRequest, StopReason } from '../driver';
import { safeUrl } from './feeder';
import { StreamCore, type StreamMember } from './stream-core';

/** A play within this many seconds of the feed's position, without a zone to tell by, joins it instead of restarting it. */
export const JOIN_TOLERANCE_S = 3;

/**
 * The music, held back while an announcement has the stream (a server without an
 * announcement stream: one stream carries one media). Its members stay playing for the hub
 * (the playback goes on, in time) but are parked off the stream, hearing nothing; when the
 * announcement is over the music starts again where it would be by now, for all of them in
 * one group, and the announced clients rejoin it as the hub gives them back.
 */
interface HeldMusic {
  media: MediaRequest;
  /** The zone (MediaRequest.zone) the music plays for: a play for it continues it. */
  zone?: string;
  /** Seconds into the media at `since`. */
  position: number;
  /** Clock ms since which it runs on; undefined while every held member is paused. */
  since?: number;
  members: Map<string, StreamMember>;
  /** Where members paused alone stopped (seconds). */
  paused: Map<string, number>;
}

/**
 * The held-music mode of a hub stream (a server without an announcement stream): an
 * announcement takes the stream, the music of the members it does not take is held, and
 * comes back when the announcement is over.
 */
export abstract class HeldMusicStream extends StreamCore {
  /** The music while an announcement plays in its place (see HeldMusic). */
  protected held?: HeldMusic;

  protected get isHolding(): boolean {
    return !!this.held;
  }

  protected heldIds(): Set<string> {
    return new Set(this.held?.members.keys());
  }

  /**
   * An overlay takes the stream: music members it does not take (the rest of a party) keep
   * their playback, held, and are parked off the stream until it is over. The ones it takes
   * leave the held music (the hub gives them back to the music afterwards).
   */
  protected holdMusic(overlay: Set<string>): void {
    const music = this.media && !this.media.overlay ? this.media : undefined;
    const keep = [...this.members.values()].filter((m) => !overlay.has(m.clientId));
    if (music && keep.length) {
      const running = !!this.feed?.running;
      const position = this.clampToDuration(running ? this.feed!.position : (this.pausedAt ?? 0));
      const held: HeldMusic = {
        media: music,
        zone: this.zone,
        position,
        since: running ? this.opts.clock.now() : undefined,
        members: new Map(),
        paused: new Map(),
      };
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
  protected holdPlay(ready: StreamMember[], media: MediaRequest, startAt: number): void {
    const h = this.held;
    if (!h || !this.continuesHeld(h, media, startAt)) {
      const wanted = new Set(ready.map((m) => m.clientId));
      this.dropAllHeld('stopped', undefined, wanted);
      this.held = { media, zone: media.zone, position: startAt, since: this.opts.clock.now(), members: new Map(), paused: new Map() };
      this.zone = media.zone;
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

  /**
   * Whether a play of `media` at `startAt` is the held music (a speaker joining it, or given
   * back to it): the engine names the zone it plays for; a play without one (an embedder's)
   * is recognised by URL and position.
   */
  protected continuesHeld(h: HeldMusic, media: MediaRequest, startAt: number): boolean {
    if (media.zone !== undefined || h.zone !== undefined) return media.zone === h.zone;
    return h.media.url === media.url && Math.abs(this.heldPosition(h) - startAt) <= JOIN_TOLERANCE_S;
  }

  /** Seconds into the held music now. */
  protected heldPosition(h: HeldMusic): number {
    const running = h.since !== undefined ? (this.opts.clock.now() - h.since) / 1000 : 0;
    const pos = h.position + running;
    return h.media.duration !== undefined ? Math.min(pos, h.media.duration) : pos;
  }

  /** Takes a client out of the held music; true when it was in it. */
  protected dropHeld(clientId: string): boolean {
    const h = this.held;
    if (!h?.members.delete(clientId)) return false;
    h.paused.delete(clientId);
    if (!h.members.size) this.held = undefined;
    return true;
  }

  /** Ends the held music for all its members but `keep` (taken over by a new play). */
  protected dropAllHeld(reason: StopReason, detail?: string, keep: Set<string> = new Set()): void {
    const h = this.held;
    if (!h) return;
    this.held = undefined;
    for (const m of h.members.values()) if (!keep.has(m.clientId)) m.changeState('stopped', reason, detail);
  }

  protected scheduleResumeHeld(): void {
    this.exclusive(() => this.resumeHeld()).catch((e) => this.log.warn({ err: String(e) }, 'could not bring the music back after the announcement'));
  }

  /**
   * The announcement is over: the held music starts again where it is by now, for its
   * playing members in one group (paused ones wait on the stream, as paused members do),
   * with `joining` (speakers given back to it) in that group too. Runs inside `exclusive`,
   * with no member on the stream; rejects only when `joining` could not start.
   */
  protected async resumeHeld(joining: StreamMember[] = []): Promise<void> {
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
    this.zone = h.zone;
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
}

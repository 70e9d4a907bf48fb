import { HubError } from './errors';
import type { Clock } from './clock';
import type { HubEventBus } from './events';
import type { SpeakerRegistry } from './speaker-registry';
import { ZoneBook } from './zone-book';
import type { EarlyEnd } from './speaker-starter';
import { elapsed, hasMember, isEmpty, members, rejoinAt, type PlayableMedia, type Playback, type Target } from './playback';
import type { MediaRequest, OverlayHandle, OverlayRequest, Speaker } from '../drivers/driver';
import { mixesOverlays } from '../drivers/capabilities';
import type { Logger } from '../logger';
import { clip, redactUrl } from '../redact';

export { DEFAULT_PRIORITY, type PlayableMedia, type Target } from './playback';

/** Why overlays must end now. */
export type OverlayEndReason = 'stop_play' | 'shutdown';

/**
 * The engine's one request to the overlays (announcements), handed to it by the layer that
 * runs them (onEndOverlays): end the overlays on these speakers (every overlay when
 * undefined) now, volumes and mutes back, transports stopped; resolves when that is done.
 */
export type EndOverlays = (why: OverlayEndReason, speakerIds?: ReadonlySet<string>) => Promise<void>;

export interface PlaybackEngineOptions {
  /** Speakers that come back (or appear) while a party play runs join it. Default true. */
  partyRejoin?: boolean;
}

/** What a stop covers: a playback, the playbacks of some speakers, or (neither) everything. */
export interface StopScope {
  playbackId?: string;
  deviceIds?: string[];
}

/**
 * The playbacks (zones): many run at once, each a set of speakers playing one media item in
 * sync with its own state, position and priority; a speaker is a member of one at most. A
 * play on some speakers takes them out of whatever they played (that playback goes on, on its
 * other speakers, or ends 'interrupted' when none is left); Priority is compared per speaker.
 * Which playback a client's pause, resume, stop and status mean is the session layer's
 * business (src/core/session-scopes.ts); the engine acts on the playback it is named.
 *
 * Overlays (announcements, src/core/announcements.ts) use speakers in three steps, each one
 * word: an overlay *reserves* a speaker (from then on no music starts on it; the engine's
 * per-speaker record is `reserved`), *sets it aside* from the music it carries (it stays an
 * idle member of its playback while the others play on), and when it is done the speaker
 * *rejoins* its playback at the current position (restarts a web stream), or stays parked
 * while the playback is paused; a speaker with no playback to rejoin is *released*.
 * Coupling runs one way: the overlays call the engine (reserve, setAside, playOverlay, rejoin,
 * release), the engine never calls them but to ask, at stop_play and shutdown, that overlays
 * end (EndOverlays, a function they hand it).
 *
 * Commands run one after another per speaker (SpeakerLocks): two zones never wait for each
 * other. Media loading (TTS synthesis) happens before a play queues, so a slow synthesis
 * never holds up stop_play.
 */
export class PlaybackEngine extends ZoneBook {
  private endOverlays: EndOverlays = async () => undefined;
  private readonly partyRejoin: boolean;

  constructor(registry: SpeakerRegistry, clock: Clock, events: HubEventBus, logger: Logger, options: PlaybackEngineOptions = {}) {
    super(registry, clock, events, logger);
    this.partyRejoin = options.partyRejoin ?? true;
    // A speaker that comes back (or is discovered) while a party play runs joins it, unless it plays in another zone.
    events.on('device', (e) => {
      if (e.reason !== 'DeviceAvailable' || !this.partyRejoin) return;
      const id = e.device.DeviceID;
      if (this.playbackOf(id)) return;
      const party = [...this.playbacks.values()].reverse().find((p) => p.target === 'party' && p.state === 'PlayerStatePlaying');
      if (!party) return;
      this.join(party.id, [id]).catch((err) => this.logger.warn({ deviceId: id, err: String(err) }, 'party rejoin failed'));
    });
  }

  /** The overlays' answer to "end overlays" (stop_play, shutdown); one overlay layer per engine. */
  onEndOverlays(end: EndOverlays): void {
    this.endOverlays = end;
  }

  // ---- commands ------------------------------------------------------------------------

  /**
   * Plays media on a target as a new playback and answers its id. Target and priority are
   * checked before the media is loaded (so a refused announcement is not synthesized) and
   * again once it is. The target's speakers leave the playbacks they were in; those go on.
   */
  async play(
    target: Target,
    priority: number,
    load: () => Promise<PlayableMedia>,
    options: { owner?: string; startAt?: number } = {},
  ): Promise<string> {
    const startAt = Math.max(0, options.startAt ?? 0);
    this.checkPriority(this.resolveTarget(target), priority);
    const media = await load();
    const ids = new Set(this.targetIds(target));
    // A play with at least the priority of one still starting on its speakers does not wait behind it.
    this.starter.cancel(priority, ids);
    return this.locks.run(ids, async () => {
      const targets = this.resolveTarget(target);
      this.checkPriority(targets, priority);
      // Speakers an overlay reserved become idle members now and start when they rejoin.
      const speakers = targets.filter((s) => !this.reserved.has(s.id));
      const reserved = targets.filter((s) => this.reserved.has(s.id));
      // What each speaker carried, so that a play that starts nowhere lets it rejoin that (nothing is lost).
      const carried = new Map<string, Playback>();
      for (const s of speakers) {
        const was = this.playbackOf(s.id);
        const p = was !== undefined ? this.playbacks.get(was) : undefined;
        if (p && p.speakers.has(s.id) && p.state === 'PlayerStatePlaying') carried.set(s.id, p);
      }
      // They switch media directly: detached from their old playbacks, not stopped.
      const emptied = this.takeOut(new Set(targets.map((s) => s.id)), 'interrupted', true);
      const id = `pb-${++this.seq}`;
      let started: Speaker[];
      try {
        started = speakers.length ? await this.starter.start(id, speakers, media, startAt, false, priority) : [];
      } catch (e) {
        await this.rejoinCarried(carried);
        for (const p of emptied) if (isEmpty(p)) this.finish(p, 'interrupted');
        throw e;
      }
      for (const p of emptied) if (isEmpty(p)) this.finish(p, 'interrupted');
      const p: Playback = {
        id,
        owner: options.owner,
        media,
        priority,
        target: target.kind,
        state: 'PlayerStatePlaying',
        speakers: new Map(),
        idle: new Map(reserved.map((s) => [s.id, s])),
        offset: startAt,
        startedAt: this.clock.now(),
        since: new Date().toISOString(),
      };
      this.playbacks.set(p.id, p);
      for (const s of started) {
        // Reserved while it was starting: it is the overlay's now.
        if (this.reserved.has(s.id)) p.idle.set(s.id, s);
        else this.watch(p, s);
      }
      this.logger.info(
        {
          playback: p.id,
          kind: media.kind,
          // What plays, as a person names it: the title, the web URL (without its secrets), the spoken text (cut short).
          title: clip(media.kind === 'web' ? redactUrl(media.url) : (media.title ?? ''), 120),
          ...(media.persistentId ? { persistentId: media.persistentId } : {}),
          priority,
          target: target.kind,
          speakers: started.map((s) => s.id),
          reserved: reserved.map((s) => s.id),
        },
        'playback started',
      );
      this.changed(p);
      this.scheduleTick(p);
      return p.id;
    });
  }

  /**
   * A play that started on none of its speakers (a web URL that answers 404): each speaker it
   * took from a playing playback rejoins it, at its current position (a web stream from its
   * start), as after an overlay — the music it played is not lost to a failed play.
   */
  private async rejoinCarried(carried: Map<string, Playback>): Promise<void> {
    for (const [sid, p] of carried) {
      const s = this.registry.find(sid);
      if (!s?.available || this.playbacks.get(p.id) !== p || p.state !== 'PlayerStatePlaying' || hasMember(p, sid)) continue;
      const joined = await this.starter.start(p.id, [s], p.media, this.rejoinPosition(p), true).catch(() => []);
      for (const j of joined) this.watch(p, j);
      if (joined.length) {
        this.logger.info({ deviceId: sid, playback: p.id }, 'the new play failed; the speaker is back in the playback it played');
        this.changed(p);
      }
    }
  }

  /**
   * Where a speaker rejoining a playback starts: its position; a web stream (no known length)
   * from its start — and when no other speaker carries it, the playback's clock starts again
   * with it, so that its status counts what is heard.
   */
  private rejoinPosition(p: Playback): number {
    const at = rejoinAt(p, this.clock.now());
    if (at === 0 && p.media.kind === 'web' && p.speakers.size === 0) {
      p.offset = 0;
      p.startedAt = this.clock.now();
      this.scheduleTick(p);
    }
    return at;
  }

  /** Pauses a playback (hub media); web media and TTS stop for good, as the spec says. */
  async pause(id: string | undefined): Promise<void> {
    const first = id !== undefined ? this.playbacks.get(id) : undefined;
    if (!first) throw new HubError('NotPlaying', 'Nothing is playing.');
    await this.locks.run(members(first), async () => {
      const p = this.playbacks.get(first.id);
      if (!p) throw new HubError('NotPlaying', 'Nothing is playing.');
      if (p.state === 'PlayerStatePaused') return;
      if (p.media.kind !== 'hub') {
        await this.stopSpeakers(p);
        this.finish(p, 'stopped');
        return;
      }
      const banked = elapsed(p, this.clock.now());
      const results = await Promise.allSettled([...p.speakers.values()].map(({ speaker }) => speaker.pause()));
      this.starter.logFailures('pause', [...p.speakers.keys()], results);
      p.offset = banked;
      p.state = 'PlayerStatePaused';
      p.tick?.cancel();
      this.changed(p);
    });
  }

  /**
   * Resumes paused hub media with that PersistentID on a target (which may differ from
   * before): the playback `id` when it is that paused media, else the latest paused playback
   * of it. Speakers of the target taken from other playbacks leave those.
   */
  async resume(persistentId: string, target: Target, id?: string): Promise<void> {
    const pick = (): Playback => {
      const named = id !== undefined ? this.playbacks.get(id) : undefined;
      const fits = (p: Playback | undefined) => p?.state === 'PlayerStatePaused' && p.media.kind === 'hub';
      if (named && fits(named) && named.media.persistentId === persistentId) return named;
      const paused = [...this.playbacks.values()].reverse().filter(fits);
      const p = paused.find((x) => x.media.persistentId === persistentId);
      if (p) return p;
      if (!paused.length) throw new HubError('NotResumable', 'No hub media is paused.');
      throw new HubError('NotResumable', `The paused media is not PersistentID ${persistentId}.`, { parameter: 'PersistentID' });
    };
    const first = pick();
    await this.locks.run([...members(first), ...this.targetIds(target)], async () => {
      const p = pick();
      const wanted = this.resolveTarget(target);
      this.checkPriority(
        wanted.filter((s) => !hasMember(p, s.id)),
        p.priority,
      );
      const wantedIds = new Set(wanted.map((s) => s.id));
      for (const [sid, entry] of p.speakers) {
        if (wantedIds.has(sid)) continue;
        entry.unwatch();
        p.speakers.delete(sid);
        entry.speaker.stop().catch((e) => this.logger.warn({ deviceId: sid, err: String(e) }, 'stop failed'));
      }
      for (const sid of [...p.idle.keys()]) if (!wantedIds.has(sid)) p.idle.delete(sid);
      this.takeOut(new Set(wanted.filter((s) => !hasMember(p, s.id)).map((s) => s.id)), 'interrupted');
      // Reserved speakers stay idle members and start when their overlay lets them rejoin.
      for (const s of wanted) if (this.reserved.has(s.id) && !p.speakers.has(s.id)) p.idle.set(s.id, s);
      const fresh = wanted.filter((s) => !p.speakers.has(s.id) && !this.reserved.has(s.id));
      const resumed = await Promise.allSettled([...p.speakers.values()].map(({ speaker }) => speaker.resume()));
      [...p.speakers.values()].forEach(({ speaker, unwatch }, i) => {
        if (resumed[i].status === 'rejected') {
          unwatch();
          p.speakers.delete(speaker.id);
          this.logger.warn({ deviceId: speaker.id, err: String((resumed[i] as PromiseRejectedResult).reason) }, 'resume failed');
        }
      });
      for (const s of fresh) p.idle.delete(s.id);
      const joined = fresh.length ? await this.starter.start(p.id, fresh, p.media, p.offset, p.speakers.size > 0 || p.idle.size > 0) : [];
      for (const s of joined) this.watch(p, s);
      if (isEmpty(p)) {
        this.finish(p, 'error');
        throw new HubError('PlaybackFailed', 'No target speaker could resume the media.');
      }
      p.state = 'PlayerStatePlaying';
      p.startedAt = this.clock.now();
      this.changed(p);
      this.scheduleTick(p);
    });
  }

  /**
   * stop_play: stops the playbacks in scope (everything without one), ends the overlays on
   * their speakers (announcements: volumes go back), and stops any speaker in scope still
   * playing that no playback holds (what another app or a crashed hub left playing), so that
   * "stop" means silence there.
   */
  async stop(scope: StopScope = {}): Promise<void> {
    const whole = scope.playbackId === undefined && scope.deviceIds === undefined;
    const chosen = (): Playback[] =>
      [...this.playbacks.values()].filter((p) => whole || p.id === scope.playbackId || (scope.deviceIds ?? []).some((d) => hasMember(p, d)));
    const area = new Set<string>(scope.deviceIds ?? []);
    for (const p of chosen()) for (const m of members(p)) area.add(m);
    this.starter.cancel(Infinity, whole ? undefined : area);
    const lockIds = whole ? [...this.registry.all().map((s) => s.id), ...this.locks.busy()] : [...area];
    await this.locks.run(lockIds, async () => {
      for (const p of chosen()) {
        for (const m of members(p)) area.add(m);
        await this.stopSpeakers(p);
        this.finish(p, 'stopped');
      }
    });
    await this.endOverlays('stop_play', whole ? undefined : area);
    await this.stopStrays(whole ? undefined : area);
  }

  /** Speakers joining a playback (added to a session, party mode) start at its current position. */
  async join(id: string | undefined, speakerIds: string[]): Promise<void> {
    const first = id !== undefined ? this.playbacks.get(id) : undefined;
    if (!first) return;
    await this.locks.run([...members(first), ...speakerIds], async () => {
      const p = this.playbacks.get(first.id);
      if (!p || p.state !== 'PlayerStatePlaying') return;
      const candidates = speakerIds.map((sid) => this.registry.find(sid)).filter((s): s is Speaker => !!s && s.available && !p.speakers.has(s.id));
      this.takeOut(new Set(candidates.filter((s) => !hasMember(p, s.id)).map((s) => s.id)), 'interrupted');
      for (const s of candidates) if (this.reserved.has(s.id)) p.idle.set(s.id, s);
      const fresh = candidates.filter((s) => !this.reserved.has(s.id));
      if (!fresh.length) return;
      for (const s of fresh) p.idle.delete(s.id);
      const joined = await this.starter.start(p.id, fresh, p.media, elapsed(p, this.clock.now()), true);
      if (this.playbacks.get(p.id) !== p) {
        for (const s of joined) s.stop().catch(() => undefined);
        return;
      }
      for (const s of joined) this.watch(p, s);
      if (joined.length) this.changed(p);
    });
  }

  /** A speaker leaves its playback and stops; the others play on (the last one leaving ends it). */
  async leave(speakerId: string): Promise<void> {
    await this.locks.run([speakerId], async () => {
      const id = this.playbackOf(speakerId);
      const p = id !== undefined ? this.playbacks.get(id) : undefined;
      if (!p) return;
      if (p.idle.delete(speakerId)) {
        if (isEmpty(p)) this.finish(p, 'stopped');
        else this.changed(p);
        return;
      }
      const entry = p.speakers.get(speakerId);
      if (!entry) return;
      entry.unwatch();
      p.speakers.delete(speakerId);
      await entry.speaker.stop().catch((e) => this.logger.warn({ deviceId: speakerId, err: String(e) }, 'stop failed'));
      if (isEmpty(p)) this.finish(p, 'stopped');
      else this.changed(p);
    });
  }

  /** Stops everything; used at hub shutdown. The final states go out with reason 'shutdown'. */
  async shutdown(): Promise<void> {
    this.starter.cancel(Infinity);
    await this.locks.run([...this.registry.all().map((s) => s.id), ...this.locks.busy()], async () => {
      for (const p of [...this.playbacks.values()]) {
        await this.stopSpeakers(p);
        this.finish(p, 'shutdown');
      }
    });
    await this.endOverlays('shutdown');
  }

  // ---- overlays (announcements) ----------------------------------------------------------

  /**
   * An overlay reserves speakers, at once when it decides to take them (before it reads their
   * snapshots): from now on a play, join or resume keeps them as idle members instead of
   * starting on them, and stop_play leaves them to the overlay. Idempotent.
   */
  reserve(speakerIds: string[]): void {
    for (const id of speakerIds) this.reserved.add(id);
  }

  /** The overlay is done with a speaker that did not rejoin a playback (rejoin said 'none'). Idempotent. */
  release(speakerId: string): void {
    this.reserved.delete(speakerId);
  }

  /**
   * An overlay sets speakers (reserved by it) aside from the music: they stop carrying their
   * playbacks but stay idle members; the others play on untouched. A play still starting on
   * them is cancelled when `priority` is at least its own, else awaited.
   */
  async setAside(speakerIds: string[], priority: number): Promise<void> {
    const ids = new Set(speakerIds);
    if (this.starter.startingOn(ids)) {
      this.starter.cancel(priority, ids);
      await this.locks.run(ids, async () => undefined);
    }
    for (const p of this.playbacks.values()) {
      for (const id of ids) {
        const entry = p.speakers.get(id);
        if (!entry) continue;
        entry.unwatch();
        p.speakers.delete(id);
        p.idle.set(id, entry.speaker);
      }
    }
  }

  /**
   * An overlay is done with a speaker and lets it rejoin its music: if it is still a member
   * of a playing playback it rejoins in sync at the current position (hub media and TTS) or
   * restarts the stream (web media); while the playback is paused it stays parked and starts
   * on resume. Resolves once the speaker plays again (or it is clear it will not). Rejoined
   * or parked, the reservation ends with it (in the same step, so no play sees it in
   * between); on 'none' the speaker stays reserved until the overlay has put back what it
   * played and calls release().
   */
  async rejoin(speakerId: string): Promise<'rejoined' | 'parked' | 'none'> {
    return this.locks.run([speakerId], async () => {
      const id = this.playbackOf(speakerId);
      const p = id !== undefined ? this.playbacks.get(id) : undefined;
      const speaker = p?.idle.get(speakerId);
      if (!p || !speaker) return 'none';
      if (p.state === 'PlayerStatePaused') {
        this.reserved.delete(speakerId);
        return 'parked';
      }
      if (p.media.duration !== undefined && elapsed(p, this.clock.now()) >= p.media.duration - 0.5) {
        p.idle.delete(speakerId);
        if (isEmpty(p)) this.finish(p, 'ended');
        return 'none';
      }
      p.idle.delete(speakerId);
      this.reserved.delete(speakerId);
      const joined = speaker.available ? await this.starter.start(p.id, [speaker], p.media, this.rejoinPosition(p), true).catch(() => []) : [];
      if (this.playbacks.get(p.id) !== p) {
        for (const s of joined) s.stop().catch(() => undefined);
        return 'none';
      }
      for (const s of joined) this.watch(p, s);
      if (!joined.length) {
        this.logger.warn({ deviceId: speakerId, playback: p.id }, 'speaker could not rejoin the playback after an overlay');
        if (isEmpty(p)) this.finish(p, 'error');
        else this.changed(p);
        return 'none';
      }
      return 'rejoined';
    });
  }

  /** SpeakerStarter.claimEnd, for an overlay's owner that follows the speaker now. */
  claimEnd(s: Speaker, stillFollowed: () => boolean, onEnd: (end: EarlyEnd) => void): void {
    this.starter.claimEnd(s, stillFollowed, onEnd);
  }

  /** Plays on speakers outside the music playback (for overlays): same grouping as plays. */
  playOverlay(speakers: Speaker[], request: MediaRequest): Promise<PromiseSettledResult<void>[]> {
    return this.starter.playAll(speakers, request);
  }

  /**
   * Whether an overlay on this speaker can be its driver's (SpeakerDriver.overlay, mixed over
   * the music): the driver declares it (capabilities.duck), and the speaker carries a playing
   * playback (a member that carries it, reserved or not): there is music to mix into, and the
   * speaker stays in its playback the whole time. Otherwise the overlay sets the speaker aside
   * (setAside) and lets it rejoin after.
   */
  mixesOn(speakerId: string): boolean {
    const s = this.registry.find(speakerId);
    if (!s || !mixesOverlays(s, this.registry.driverOf(s))) return false;
    const id = this.playbackOf(speakerId);
    const p = id !== undefined ? this.playbacks.get(id) : undefined;
    return !!p && p.state === 'PlayerStatePlaying' && p.speakers.has(speakerId);
  }

  /**
   * A driver's overlay (mixed over the music) on speakers that stay in their playbacks (check
   * mixesOn first): one call per driver, results in the order of `speakers`.
   */
  async mixOverlay(speakers: Speaker[], request: OverlayRequest): Promise<PromiseSettledResult<OverlayHandle>[]> {
    const byDriver = this.registry.byDriver(speakers);
    const settled = new Map<Speaker, PromiseSettledResult<OverlayHandle>>();
    await Promise.all(
      [...byDriver].map(async ([driver, group]) => {
        let results: PromiseSettledResult<OverlayHandle>[];
        try {
          if (!driver?.overlay) throw new Error('the driver plays no overlays');
          results = await driver.overlay(group, request);
        } catch (e) {
          results = group.map(() => ({ status: 'rejected', reason: e }));
        }
        group.forEach((s, i) =>
          settled.set(s, results[i] ?? { status: 'rejected', reason: new Error('the driver gave no answer for this speaker') }),
        );
      }),
    );
    return speakers.map((s) => settled.get(s)!);
  }
}

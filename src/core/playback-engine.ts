import { HubError } from './errors';
import type { Clock } from './clock';
import type { HubEventBus, PlaybackEndReason, PlaybackSnapshot, PlaybackState } from './events';
import type { SpeakerRegistry } from './speaker-registry';
import { SpeakerLocks } from './speaker-locks';
import { SpeakerStarter } from './speaker-starter';
import { elapsed, hasMember, isEmpty, members, rejoinAt, snapshotOf, type PlayableMedia, type Playback, type Target } from './playback';
import type { MediaRequest, Speaker, SpeakerPlayState, StopReason } from '../drivers/driver';
import type { Logger } from '../logger';
import { clip, redactUrl } from '../redact';

export { DEFAULT_PRIORITY, type PlayableMedia, type Target } from './playback';

/** Seconds a playback waits, after its first speaker reports the end of the media, for the others to end too. */
const END_GRACE_MS = 2000;

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
 * Overlays (announcements, src/core/announcements.ts) borrow speakers: a borrowed speaker stays
 * a member of its playback (idle), the others play on, and when it is given back it rejoins at
 * the current position (restarts a web stream), or stays parked while the playback is paused.
 * Coupling runs one way: the overlays call the engine (reserve, lend, playOverlay, giveBack,
 * release), the engine never calls them but to ask, at stop_play and shutdown, that overlays
 * end (EndOverlays, a function they hand it).
 *
 * Commands run one after another per speaker (SpeakerLocks): two zones never wait for each
 * other. Media loading (TTS synthesis) happens before a play queues, so a slow synthesis
 * never holds up stop_play.
 */
export class PlaybackEngine {
  /** Live playbacks by id, in the order they started. */
  private readonly playbacks = new Map<string, Playback>();
  private seq = 0;
  private readonly locks = new SpeakerLocks();
  private readonly starter: SpeakerStarter;
  /** Speakers reserved by an overlay: the music does not start on them until they are released (or given back into it). */
  private readonly lent = new Set<string>();
  private endOverlays: EndOverlays = async () => undefined;
  private readonly partyRejoin: boolean;

  constructor(
    private readonly registry: SpeakerRegistry,
    private readonly clock: Clock,
    private readonly events: HubEventBus,
    private readonly logger: Logger,
    options: PlaybackEngineOptions = {},
  ) {
    this.partyRejoin = options.partyRejoin ?? true;
    this.starter = new SpeakerStarter(registry, logger);
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

  // ---- queries -------------------------------------------------------------------------

  /** The playback with this id, if it is still live. */
  has(id: string): boolean {
    return this.playbacks.has(id);
  }

  status(id?: string): { state: PlaybackState; timeElapsed: number } {
    const p = id !== undefined ? this.playbacks.get(id) : undefined;
    if (!p) return { state: 'PlayerStateStopped', timeElapsed: -1 };
    return { state: p.state, timeElapsed: Math.floor(elapsed(p, this.clock.now())) };
  }

  /** Whether that playback plays (not paused); without an id, whether any does. */
  isPlaying(id?: string): boolean {
    if (id !== undefined) return this.playbacks.get(id)?.state === 'PlayerStatePlaying';
    for (const p of this.playbacks.values()) if (p.state === 'PlayerStatePlaying') return true;
    return false;
  }

  /** One playback as front ends see it; without an id (or a live one), Stopped. */
  snapshot(id?: string): PlaybackSnapshot {
    return snapshotOf(id !== undefined ? this.playbacks.get(id) : undefined, this.clock.now());
  }

  /** The most recently started live playback (Stopped when none): the hub's playback to a client that names none. */
  latestSnapshot(): PlaybackSnapshot {
    return this.snapshot(this.latest());
  }

  /** Every live playback, oldest first. */
  list(): PlaybackSnapshot[] {
    const now = this.clock.now();
    return [...this.playbacks.values()].map((p) => snapshotOf(p, now));
  }

  /** The playback the most recently started of those still live (a client that never chose speakers sees this one). */
  latest(): string | undefined {
    let last: string | undefined;
    for (const id of this.playbacks.keys()) last = id;
    return last;
  }

  /** The playback a speaker is a member of (carrying it, or lent/parked), if any. */
  playbackOf(speakerId: string): string | undefined {
    for (const p of this.playbacks.values()) if (hasMember(p, speakerId)) return p.id;
    return undefined;
  }

  /** Media URLs of every live playback: the media host keeps them reachable. */
  mediaInUse(): Set<string> {
    return new Set([...this.playbacks.values()].map((p) => p.media.url));
  }

  // ---- commands ------------------------------------------------------------------------

  /**
   * Plays media on a target as a new playback and answers its id. Target and priority are
   * checked before the media is loaded (so a refused announcement is not synthesized) and
   * again once it is. The target's speakers leave the playbacks they were in; those go on.
   */
  async play(target: Target, priority: number, load: () => Promise<PlayableMedia>, options: { owner?: string } = {}): Promise<string> {
    this.checkPriority(this.resolveTarget(target), priority);
    const media = await load();
    const ids = new Set(this.targetIds(target));
    // A play with at least the priority of one still starting on its speakers does not wait behind it.
    this.starter.cancel(priority, ids);
    return this.locks.run(ids, async () => {
      const targets = this.resolveTarget(target);
      this.checkPriority(targets, priority);
      // Speakers lent to an overlay become members now and join when it gives them back.
      const speakers = targets.filter((s) => !this.lent.has(s.id));
      const lent = targets.filter((s) => this.lent.has(s.id));
      // They switch media directly: detached from their old playbacks, not stopped.
      this.takeOut(new Set(targets.map((s) => s.id)), 'interrupted');
      const id = `pb-${++this.seq}`;
      const started = speakers.length ? await this.starter.start(id, speakers, media, 0, false, priority) : [];
      const p: Playback = {
        id,
        owner: options.owner,
        media,
        priority,
        target: target.kind,
        state: 'PlayerStatePlaying',
        speakers: new Map(),
        idle: new Map(lent.map((s) => [s.id, s])),
        offset: 0,
        startedAt: this.clock.now(),
        since: new Date().toISOString(),
      };
      this.playbacks.set(p.id, p);
      for (const s of started) {
        // Lent while it was starting: it is the overlay's now.
        if (this.lent.has(s.id)) p.idle.set(s.id, s);
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
          lent: lent.map((s) => s.id),
        },
        'playback started',
      );
      this.changed(p);
      this.scheduleTick(p);
      return p.id;
    });
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
      // Lent speakers stay members and join when their overlay gives them back.
      for (const s of wanted) if (this.lent.has(s.id) && !p.speakers.has(s.id)) p.idle.set(s.id, s);
      const fresh = wanted.filter((s) => !p.speakers.has(s.id) && !this.lent.has(s.id));
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
      for (const s of candidates) if (this.lent.has(s.id)) p.idle.set(s.id, s);
      const fresh = candidates.filter((s) => !this.lent.has(s.id));
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

  /** Whether the speaker is a member of a playback (carrying it, or lent/parked). */
  isMember(speakerId: string): boolean {
    return this.playbackOf(speakerId) !== undefined;
  }

  /** Priority of the playback the speaker plays now, if it plays one. */
  priorityOn(speakerId: string): number | undefined {
    for (const p of this.playbacks.values()) if (p.state === 'PlayerStatePlaying' && p.speakers.has(speakerId)) return p.priority;
    return undefined;
  }

  /**
   * An overlay reserves speakers, at once when it decides to take them (before it reads their
   * snapshots): from now on a play, join or resume keeps them as idle members instead of
   * starting on them, and stop_play leaves them to the overlay. Idempotent.
   */
  reserve(speakerIds: string[]): void {
    for (const id of speakerIds) this.lent.add(id);
  }

  /** The overlay is done with a speaker it did not give back into the playback (giveBack said 'none'). Idempotent. */
  release(speakerId: string): void {
    this.lent.delete(speakerId);
  }

  /**
   * An overlay takes speakers (reserved by it): they stop carrying their playbacks but stay
   * members; the others play on untouched. A play still starting on them is cancelled when
   * `priority` is at least its own, else awaited.
   */
  async lend(speakerIds: string[], priority: number): Promise<void> {
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
   * An overlay gives a speaker back: if it is still a member of a playing playback it
   * rejoins in sync at the current position (hub media and TTS) or restarts the stream (web
   * media); while the playback is paused it stays parked and starts on resume. Resolves
   * once the speaker plays again (or it is clear it will not). Rejoined or parked, the loan
   * ends with it (in the same step, so no play sees it in between); on 'none' the speaker
   * stays reserved until the overlay has put back what it played and calls release().
   */
  async giveBack(speakerId: string): Promise<'rejoined' | 'parked' | 'none'> {
    return this.locks.run([speakerId], async () => {
      const id = this.playbackOf(speakerId);
      const p = id !== undefined ? this.playbacks.get(id) : undefined;
      const speaker = p?.idle.get(speakerId);
      if (!p || !speaker) return 'none';
      if (p.state === 'PlayerStatePaused') {
        this.lent.delete(speakerId);
        return 'parked';
      }
      if (p.media.duration !== undefined && elapsed(p, this.clock.now()) >= p.media.duration - 0.5) {
        p.idle.delete(speakerId);
        if (isEmpty(p)) this.finish(p, 'ended');
        return 'none';
      }
      p.idle.delete(speakerId);
      this.lent.delete(speakerId);
      const joined = speaker.available ? await this.starter.start(p.id, [speaker], p.media, rejoinAt(p, this.clock.now()), true).catch(() => []) : [];
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

  /** Plays on speakers outside the music playback (for overlays): same grouping as plays. */
  playOverlay(speakers: Speaker[], request: MediaRequest): Promise<PromiseSettledResult<void>[]> {
    return this.starter.playAll(speakers, request);
  }

  // ---- internals -----------------------------------------------------------------------

  /**
   * Takes speakers out of the playbacks they are members of (they are about to play
   * something else, so they are not stopped); a playback left with none ends with `reason`.
   */
  private takeOut(ids: ReadonlySet<string>, reason: PlaybackEndReason): void {
    if (!ids.size) return;
    for (const p of [...this.playbacks.values()]) {
      let touched = false;
      for (const id of ids) {
        const entry = p.speakers.get(id);
        if (entry) {
          entry.unwatch();
          p.speakers.delete(id);
          touched = true;
        }
        if (p.idle.delete(id)) touched = true;
      }
      if (!touched) continue;
      if (isEmpty(p)) this.finish(p, reason);
      else this.changed(p);
    }
  }

  /** Stops speakers that play although no playback and no overlay holds them (within `area`, if given). */
  private async stopStrays(area?: ReadonlySet<string>): Promise<void> {
    const strays = this.registry
      .available()
      .filter((s) => (!area || area.has(s.id)) && s.state !== 'stopped' && !this.isMember(s.id) && !this.lent.has(s.id));
    if (!strays.length) return;
    this.logger.info({ speakers: strays.map((s) => s.id) }, 'stopping speakers that play outside any playback');
    const results = await Promise.allSettled(strays.map((s) => s.stop()));
    this.starter.logFailures(
      'stop',
      strays.map((s) => s.id),
      results,
    );
  }

  /** Every speaker a target names (before availability), for locking. */
  private targetIds(target: Target): string[] {
    return target.kind === 'party' ? this.registry.all().map((s) => s.id) : target.deviceIds;
  }

  private resolveTarget(target: Target): Speaker[] {
    let candidates: Speaker[];
    if (target.kind === 'session') {
      if (!target.deviceIds.length)
        throw new HubError('NoSpeakerSelected', 'No speaker is in the playback session; add one with add_device_to_session or set_party_mode.');
      candidates = target.deviceIds.map((id) => this.registry.find(id)).filter((s): s is Speaker => !!s);
    } else if (target.kind === 'party') {
      candidates = this.registry.all();
    } else {
      candidates = target.deviceIds.map((id) => {
        const s = this.registry.find(id);
        if (!s) throw new HubError('DeviceNotFound', `No speaker has DeviceID ${id}.`, { parameter: 'DeviceIDList' });
        return s;
      });
    }
    const available = candidates.filter((s) => s.available);
    if (!available.length) throw new HubError('NoSpeakerAvailable', 'None of the target speakers is available.');
    return available;
  }

  /** Priority arbitrates per speaker: a play may take a speaker from a playing playback of at most its priority. */
  private checkPriority(speakers: Speaker[], priority: number): void {
    for (const p of this.playbacks.values()) {
      if (p.state !== 'PlayerStatePlaying' || priority >= p.priority) continue;
      if (!speakers.some((s) => hasMember(p, s.id))) continue;
      throw new HubError('PriorityTooLow', `A playback with Priority ${p.priority} is playing; this play has Priority ${priority}.`, {
        parameter: 'Priority',
      });
    }
  }

  private watch(p: Playback, speaker: Speaker): void {
    const onState = (state: SpeakerPlayState, reason?: StopReason) => {
      if (state === 'stopped') this.lost(p, speaker.id, reason ?? 'stopped');
    };
    const onAvailability = (available: boolean) => {
      if (!available) this.lost(p, speaker.id, 'error');
    };
    const onOwnPlayState = (state: 'playing' | 'paused') => this.followOwnControl(p, speaker, state);
    speaker.on('state', onState);
    speaker.on('availability', onAvailability);
    speaker.on('ownPlayState', onOwnPlayState);
    p.speakers.set(speaker.id, {
      speaker,
      unwatch: () => {
        speaker.off('state', onState);
        speaker.off('availability', onAvailability);
        speaker.off('ownPlayState', onOwnPlayState);
      },
    });
  }

  /**
   * A speaker carrying the playback was paused or resumed by its own means (its app). The
   * playback shows Paused once every speaker carrying it is paused (TimeElapsed where the
   * speaker stopped), and Playing again as soon as one of them plays it again; a speaker
   * paused alone in a bigger playback leaves the playback Playing (the others play on).
   */
  private followOwnControl(p: Playback, speaker: Speaker, state: 'playing' | 'paused'): void {
    void this.locks.run(members(p), async () => {
      if (this.playbacks.get(p.id) !== p || !p.speakers.has(speaker.id)) return;
      const at = speaker.position();
      const position = at !== undefined && Number.isFinite(at) && at >= 0 ? at : elapsed(p, this.clock.now());
      if (state === 'paused') {
        if (p.state !== 'PlayerStatePlaying' || ![...p.speakers.values()].every((e) => e.speaker.state === 'paused')) return;
        p.offset = p.media.duration !== undefined ? Math.min(position, p.media.duration) : position;
        p.state = 'PlayerStatePaused';
        p.tick?.cancel();
      } else {
        if (p.state !== 'PlayerStatePaused') return;
        p.offset = position;
        p.startedAt = this.clock.now();
        p.state = 'PlayerStatePlaying';
        this.scheduleTick(p);
      }
      this.logger.info(
        { deviceId: speaker.id, playback: p.id, state },
        `playback ${state === 'paused' ? 'paused' : 'resumed'} from the speaker's own app`,
      );
      this.changed(p);
    });
  }

  /** A speaker left the playback by itself: the media ended, it failed, or it vanished. */
  private lost(p: Playback, id: string, reason: StopReason): void {
    const entry = p.speakers.get(id);
    if (!entry || this.playbacks.get(p.id) !== p) return;
    entry.unwatch();
    p.speakers.delete(id);
    if (reason === 'ended') {
      // The media ended: the playback is over once every speaker has ended. Speakers report
      // the end one by one; the others get a grace period, so that clients see one Stopped
      // rather than a Playing with a shrinking device list per speaker.
      if (p.speakers.size === 0) {
        this.finish(p, 'ended');
        return;
      }
      p.ending ??= this.clock.setTimer(() => {
        p.ending = undefined;
        if (this.playbacks.get(p.id) === p) this.changed(p);
      }, END_GRACE_MS);
      return;
    }
    this.logger.warn({ deviceId: id, playback: p.id, reason }, 'speaker dropped out of the playback');
    // Lent speakers keep the playback alive: it goes on (in time) and they rejoin it.
    if (isEmpty(p)) this.finish(p, reason === 'error' ? 'error' : 'stopped');
    else if (!p.ending) this.changed(p);
  }

  /** Detaches every speaker from the playback and stops them. */
  private async stopSpeakers(p: Playback): Promise<void> {
    const all = [...p.speakers.values()];
    for (const e of all) e.unwatch();
    p.speakers.clear();
    const results = await Promise.allSettled(all.map((e) => e.speaker.stop()));
    this.starter.logFailures(
      'stop',
      all.map((e) => e.speaker.id),
      results,
    );
  }

  /** Ends a playback; its speakers are the caller's to stop. */
  private finish(p: Playback, reason: PlaybackEndReason): void {
    if (this.playbacks.get(p.id) !== p) return;
    p.tick?.cancel();
    p.ending?.cancel();
    for (const e of p.speakers.values()) e.unwatch();
    const last = snapshotOf(p, this.clock.now(), reason);
    this.playbacks.delete(p.id);
    this.logger.info({ playback: p.id, reason }, 'playback stopped');
    this.events.emit('playbackState', last);
  }

  /** Emits playbackTime each time the whole-second count moves on. */
  private scheduleTick(p: Playback): void {
    p.tick?.cancel();
    if (p.state !== 'PlayerStatePlaying' || this.playbacks.get(p.id) !== p) return;
    const ms = (p.offset * 1000 + (this.clock.now() - p.startedAt)) % 1000;
    p.tick = this.clock.setTimer(
      () => {
        if (this.playbacks.get(p.id) !== p || p.state !== 'PlayerStatePlaying') return;
        // Every member lent to an overlay: no speaker reports the end, the clock does.
        if (p.speakers.size === 0 && p.media.duration !== undefined && elapsed(p, this.clock.now()) >= p.media.duration) {
          this.finish(p, 'ended');
          return;
        }
        this.events.emit('playbackTime', { timeElapsed: Math.floor(elapsed(p, this.clock.now())), deviceIds: members(p), playbackId: p.id });
        this.scheduleTick(p);
        // A few ms past the boundary: timers may fire a hair early and floor() would repeat a second.
      },
      1000 - ms + 5,
    );
  }

  private changed(p: Playback): void {
    this.events.emit('playbackState', snapshotOf(p, this.clock.now()));
  }
}

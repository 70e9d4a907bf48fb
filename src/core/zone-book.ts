import { HubError } from './errors';
import type { Clock } from './clock';
import type { HubEventBus, PlaybackEndReason, PlaybackSnapshot, PlaybackState } from './events';
import type { SpeakerRegistry } from './speaker-registry';
import { SpeakerLocks } from './speaker-locks';
import { SpeakerStarter } from './speaker-starter';
import { elapsed, hasMember, isEmpty, members, snapshotOf, type Playback, type Target } from './playback';
import type { Speaker, SpeakerPlayState, StopReason } from '../drivers/driver';
import type { Logger } from '../logger';

/** Seconds a playback waits, after its first speaker reports the end of the media, for the others to end too. */
const END_GRACE_MS = 2000;

/**
 * The book of live playbacks (zones) the engine (playback-engine.ts) keeps: who is a member
 * of which, what each looks like to front ends, and how a playback follows its speakers (the
 * end of the media, a speaker that fails or vanishes, its own app's pause), ends, and ticks.
 * The commands that change zones are the engine's.
 */
export abstract class ZoneBook {
  /** Live playbacks by id, in the order they started. */
  protected readonly playbacks = new Map<string, Playback>();
  protected seq = 0;
  protected readonly locks = new SpeakerLocks();
  protected readonly starter: SpeakerStarter;
  /** Speakers an overlay reserved (PlaybackEngine.reserve): no music starts on them until they rejoin it or are released. */
  protected readonly reserved = new Set<string>();

  constructor(
    protected readonly registry: SpeakerRegistry,
    protected readonly clock: Clock,
    protected readonly events: HubEventBus,
    protected readonly logger: Logger,
  ) {
    this.starter = new SpeakerStarter(registry, logger);
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

  /** The playback a speaker is a member of (carrying it, or idle: set aside for an overlay, or parked), if any. */
  playbackOf(speakerId: string): string | undefined {
    for (const p of this.playbacks.values()) if (hasMember(p, speakerId)) return p.id;
    return undefined;
  }

  /** Media URLs of every live playback: the media host keeps them reachable. */
  mediaInUse(): Set<string> {
    return new Set([...this.playbacks.values()].map((p) => p.media.url));
  }

  /** Whether the speaker is a member of a playback (carrying it, or idle: set aside for an overlay, or parked). */
  isMember(speakerId: string): boolean {
    return this.playbackOf(speakerId) !== undefined;
  }

  /** Priority of the playback the speaker plays now, if it plays one. */
  priorityOn(speakerId: string): number | undefined {
    for (const p of this.playbacks.values()) if (p.state === 'PlayerStatePlaying' && p.speakers.has(speakerId)) return p.priority;
    return undefined;
  }

  // ---- internals -----------------------------------------------------------------------

  /**
   * Takes speakers out of the playbacks they are members of (they are about to play
   * something else, so they are not stopped); a playback left with none ends with `reason`,
   * unless `keepEmpty` (a play not yet sure to start): those are returned, live, for the
   * caller to end or to let the speakers rejoin.
   */
  protected takeOut(ids: ReadonlySet<string>, reason: PlaybackEndReason, keepEmpty = false): Playback[] {
    const emptied: Playback[] = [];
    if (!ids.size) return emptied;
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
      if (isEmpty(p) && keepEmpty) emptied.push(p);
      else if (isEmpty(p)) this.finish(p, reason);
      else this.changed(p);
    }
    return emptied;
  }

  /** Stops speakers that play although no playback and no overlay holds them (within `area`, if given). */
  protected async stopStrays(area?: ReadonlySet<string>): Promise<void> {
    const strays = this.registry
      .available()
      .filter((s) => (!area || area.has(s.id)) && s.state !== 'stopped' && !this.isMember(s.id) && !this.reserved.has(s.id));
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
  protected targetIds(target: Target): string[] {
    return target.kind === 'party' ? this.registry.all().map((s) => s.id) : target.deviceIds;
  }

  protected resolveTarget(target: Target): Speaker[] {
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
  protected checkPriority(speakers: Speaker[], priority: number): void {
    for (const p of this.playbacks.values()) {
      if (p.state !== 'PlayerStatePlaying' || priority >= p.priority) continue;
      if (!speakers.some((s) => hasMember(p, s.id))) continue;
      throw new HubError('PriorityTooLow', `A playback with Priority ${p.priority} is playing; this play has Priority ${priority}.`, {
        parameter: 'Priority',
      });
    }
  }

  protected watch(p: Playback, speaker: Speaker): void {
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
    const entry = {
      speaker,
      unwatch: () => {
        speaker.off('state', onState);
        speaker.off('availability', onAvailability);
        speaker.off('ownPlayState', onOwnPlayState);
      },
    };
    p.speakers.set(speaker.id, entry);
    // An end reported between the speaker's play resolving and now counts once the caller has
    // finished setting the playback up.
    this.starter.claimEnd(
      speaker,
      () => p.speakers.get(speaker.id) === entry,
      (end) => this.lost(p, speaker.id, end.reason ?? 'stopped'),
    );
  }

  /**
   * A speaker carrying the playback was paused or resumed by its own means (its app). The
   * playback shows Paused once every speaker carrying it is paused (TimeElapsed where the
   * speaker stopped), and Playing again as soon as one of them plays it again; a speaker
   * paused alone in a bigger playback leaves the playback Playing (the others play on).
   */
  protected followOwnControl(p: Playback, speaker: Speaker, state: 'playing' | 'paused'): void {
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
  protected lost(p: Playback, id: string, reason: StopReason): void {
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
    // Idle members (set aside for an overlay) keep the playback alive: it goes on (in time) and they rejoin it.
    if (isEmpty(p)) this.finish(p, reason === 'error' ? 'error' : 'stopped');
    else if (!p.ending) this.changed(p);
  }

  /** Detaches every speaker from the playback and stops them. */
  protected async stopSpeakers(p: Playback): Promise<void> {
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
  protected finish(p: Playback, reason: PlaybackEndReason): void {
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
  protected scheduleTick(p: Playback): void {
    p.tick?.cancel();
    if (p.state !== 'PlayerStatePlaying' || this.playbacks.get(p.id) !== p) return;
    const ms = (p.offset * 1000 + (this.clock.now() - p.startedAt)) % 1000;
    p.tick = this.clock.setTimer(
      () => {
        if (this.playbacks.get(p.id) !== p || p.state !== 'PlayerStatePlaying') return;
        // Every member set aside for an overlay: no speaker reports the end, the clock does.
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

  protected changed(p: Playback): void {
    this.events.emit('playbackState', snapshotOf(p, this.clock.now()));
  }
}

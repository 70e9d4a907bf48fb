import { HubError } from './errors';
import type { Clock, TimerHandle } from './clock';
import type { HubEventBus, MediaKind, PlaybackEndReason, PlaybackSnapshot, PlaybackState } from './events';
import type { Selection } from './selection';
import type { SpeakerRegistry } from './speaker-registry';
import { syncClockMs, type MediaRequest, type Speaker, type SpeakerDriver, type SpeakerPlayState, type StopReason } from '../drivers/driver';
import type { Logger } from '../logger';
import { clip, redactUrl } from '../redact';

/** Where a play goes: the playback session, every speaker, or a DeviceIDList. */
export type Target = { kind: 'session' } | { kind: 'party' } | { kind: 'selected'; deviceIds: string[] };

export interface PlayableMedia {
  kind: MediaKind;
  url: string;
  contentType?: string;
  title?: string;
  /** Seconds, when known. */
  duration?: number;
  persistentId?: string;
}

export const DEFAULT_PRIORITY = 100;

/** Seconds a playback waits, after its first speaker reports the end of the media, for the others to end too. */
const END_GRACE_MS = 2000;

/** Why every overlay must end now. */
export type OverlayEndReason = 'stop_play' | 'shutdown';

/**
 * The engine's one request to the overlays (announcements), handed to it by the layer that
 * runs them (onEndOverlays): end every overlay now, volumes and mutes back, transports
 * stopped; resolves when that is done.
 */
export type EndOverlays = (why: OverlayEndReason) => Promise<void>;

export interface PlaybackEngineOptions {
  /** Speakers that come back (or appear) while a party play runs join it. Default true. */
  partyRejoin?: boolean;
}

interface Playback {
  media: PlayableMedia;
  priority: number;
  target: Target['kind'];
  state: Exclude<PlaybackState, 'PlayerStateStopped'>;
  /** Speakers carrying the playback now, with the listener that watches each. */
  speakers: Map<string, { speaker: Speaker; unwatch: () => void }>;
  /**
   * Members that do not carry the media now: lent to an overlay (an announcement), or given
   * back while the playback is paused. They rejoin when given back / on resume.
   */
  idle: Map<string, Speaker>;
  /** Pending end-of-media settlement (the first speaker reported the end). */
  ending?: TimerHandle;
  /** Seconds banked before the last (re)start. */
  offset: number;
  /** Clock ms of the last (re)start. */
  startedAt: number;
  tick?: TimerHandle;
}

interface Starting {
  speakers: Speaker[];
  cancelled: boolean;
  /** Priority of the play being started; undefined for joins and rejoins, which are never cancelled by a play. */
  priority?: number;
}

/**
 * The music playback: one at a time, hub-wide, as on the original hub: a new play (with
 * enough Priority) replaces the current one, whichever speakers either uses.
 *
 * Overlays (announcements, src/core/announcements.ts) borrow speakers from it for a while:
 * a borrowed speaker stays a member of the playback (idle), the others play on, and when
 * it is given back it rejoins at the current position (restarts a web stream), or stays
 * parked while the playback is paused. The spec's operations act on this playback only.
 *
 * Coupling runs one way: the overlays call the engine (reserve, lend, playOverlay, giveBack,
 * release), the engine never calls them. It keeps the loans itself (`lent`), so deciding
 * whether a play may start on a speaker needs no question upwards; the only thing it asks
 * of them is EndOverlays at stop_play and shutdown, a function they hand it.
 *
 * State changes run one after another through `exclusive`; media loading (TTS synthesis)
 * happens before a play joins that queue so a slow synthesis never holds up stop_play.
 */
export class PlaybackEngine {
  private current?: Playback;
  private queue: Promise<unknown> = Promise.resolve();
  /** Speakers a play is starting on; stop_play and stronger plays stop them at once instead of waiting. */
  private starting?: Starting;
  /** Speakers reserved by an overlay: the music does not start on them until they are released (or given back into it). */
  private readonly lent = new Set<string>();
  private endOverlays: EndOverlays = async () => undefined;
  private readonly partyRejoin: boolean;

  constructor(
    private readonly registry: SpeakerRegistry,
    private readonly selection: Selection,
    private readonly clock: Clock,
    private readonly events: HubEventBus,
    private readonly logger: Logger,
    options: PlaybackEngineOptions = {},
  ) {
    this.partyRejoin = options.partyRejoin ?? true;
    // A speaker that comes back (or is discovered) while a party play runs joins it.
    events.on('device', (e) => {
      if (e.reason !== 'DeviceAvailable' || !this.partyRejoin) return;
      const p = this.current;
      if (!p || p.target !== 'party' || p.state !== 'PlayerStatePlaying' || p.speakers.has(e.device.DeviceID)) return;
      this.join([e.device.DeviceID]).catch((err) => this.logger.warn({ deviceId: e.device.DeviceID, err: String(err) }, 'party rejoin failed'));
    });
  }

  /** The overlays' answer to "end every overlay" (stop_play, shutdown); one overlay layer per engine. */
  onEndOverlays(end: EndOverlays): void {
    this.endOverlays = end;
  }

  // ---- queries -------------------------------------------------------------------------

  status(): { state: PlaybackState; timeElapsed: number } {
    const p = this.current;
    if (!p) return { state: 'PlayerStateStopped', timeElapsed: -1 };
    return { state: p.state, timeElapsed: Math.floor(this.elapsed(p)) };
  }

  /** The media of the current playback (playing or paused), if any. */
  get currentMedia(): PlayableMedia | undefined {
    return this.current?.media;
  }

  isPlaying(): boolean {
    return this.current?.state === 'PlayerStatePlaying';
  }

  snapshot(reason?: PlaybackEndReason): PlaybackSnapshot {
    const p = this.current;
    const { state, timeElapsed } = this.status();
    if (!p) return { state, timeElapsed, deviceIds: [], ...(reason ? { reason } : {}) };
    return {
      state,
      timeElapsed,
      kind: p.media.kind,
      persistentId: p.media.persistentId,
      // Events go to every front end and its logs: the URL without its secrets.
      url: p.media.kind === 'web' ? redactUrl(p.media.url) : undefined,
      title: p.media.title,
      priority: p.priority,
      deviceIds: this.members(p),
      ...(reason ? { reason } : {}),
    };
  }

  // ---- commands ------------------------------------------------------------------------

  /**
   * Plays media on a target. Target and priority are checked before the media is loaded
   * (so a refused announcement is not synthesized) and again once it is.
   */
  async play(target: Target, priority: number, load: () => Promise<PlayableMedia>): Promise<void> {
    this.resolveTarget(target);
    this.checkPriority(priority);
    const media = await load();
    // A play with at least the priority of one still starting does not wait behind it.
    this.cancelStart(priority);
    await this.exclusive(async () => {
      const targets = this.resolveTarget(target);
      this.checkPriority(priority);
      // Speakers lent to an overlay become members now and join when it gives them back.
      const speakers = targets.filter((s) => !this.isBusy(s.id));
      const lent = targets.filter((s) => this.isBusy(s.id));
      if (this.current) {
        // Speakers of the new target switch media directly; the others are stopped first.
        await this.stopSpeakers(this.current, new Set(speakers.map((s) => s.id)));
        this.finish('interrupted');
      }
      const started = speakers.length ? await this.startOn(speakers, media, 0, false, priority) : [];
      const p: Playback = {
        media,
        priority,
        target: target.kind,
        state: 'PlayerStatePlaying',
        speakers: new Map(),
        idle: new Map(lent.map((s) => [s.id, s])),
        offset: 0,
        startedAt: this.clock.now(),
      };
      this.current = p;
      for (const s of started) {
        // Lent while it was starting: it is the overlay's now.
        if (this.isBusy(s.id)) p.idle.set(s.id, s);
        else this.watch(p, s);
      }
      this.logger.info(
        {
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
      this.changed();
      this.scheduleTick(p);
    });
  }

  async pause(): Promise<void> {
    await this.exclusive(async () => {
      const p = this.current;
      if (!p) throw new HubError('NotPlaying', 'Nothing is playing.');
      if (p.state === 'PlayerStatePaused') return;
      if (p.media.kind !== 'hub') {
        // Spec: web media and TTS cannot be paused; pause_play stops them for good.
        await this.stopSpeakers(p);
        this.finish('stopped');
        return;
      }
      const banked = this.elapsed(p);
      const results = await Promise.allSettled([...p.speakers.values()].map(({ speaker }) => speaker.pause()));
      this.logFailures('pause', [...p.speakers.keys()], results);
      p.offset = banked;
      p.state = 'PlayerStatePaused';
      p.tick?.cancel();
      this.changed();
    });
  }

  /** Resumes paused hub media with that PersistentID on a target (which may differ from before). */
  async resume(persistentId: string, target: Target): Promise<void> {
    await this.exclusive(async () => {
      const p = this.current;
      if (!p || p.state !== 'PlayerStatePaused' || p.media.kind !== 'hub') {
        throw new HubError('NotResumable', 'No hub media is paused.');
      }
      if (p.media.persistentId !== persistentId) {
        throw new HubError('NotResumable', `The paused media is not PersistentID ${persistentId}.`, { parameter: 'PersistentID' });
      }
      const wanted = this.resolveTarget(target);
      const wantedIds = new Set(wanted.map((s) => s.id));
      for (const [id, entry] of p.speakers) {
        if (wantedIds.has(id)) continue;
        entry.unwatch();
        p.speakers.delete(id);
        entry.speaker.stop().catch((e) => this.logger.warn({ deviceId: id, err: String(e) }, 'stop failed'));
      }
      for (const id of [...p.idle.keys()]) if (!wantedIds.has(id)) p.idle.delete(id);
      // Lent speakers stay members and join when their overlay gives them back.
      for (const s of wanted) if (this.isBusy(s.id) && !p.speakers.has(s.id)) p.idle.set(s.id, s);
      const fresh = wanted.filter((s) => !p.speakers.has(s.id) && !this.isBusy(s.id));
      const resumed = await Promise.allSettled([...p.speakers.values()].map(({ speaker }) => speaker.resume()));
      [...p.speakers.values()].forEach(({ speaker, unwatch }, i) => {
        if (resumed[i].status === 'rejected') {
          unwatch();
          p.speakers.delete(speaker.id);
          this.logger.warn({ deviceId: speaker.id, err: String((resumed[i] as PromiseRejectedResult).reason) }, 'resume failed');
        }
      });
      for (const s of fresh) p.idle.delete(s.id);
      const joined = fresh.length ? await this.startOn(fresh, p.media, p.offset, p.speakers.size > 0 || p.idle.size > 0) : [];
      for (const s of joined) this.watch(p, s);
      if (p.speakers.size === 0 && p.idle.size === 0) {
        this.finish('error');
        throw new HubError('PlaybackFailed', 'No target speaker could resume the media.');
      }
      p.state = 'PlayerStatePlaying';
      p.startedAt = this.clock.now();
      this.changed();
      this.scheduleTick(p);
    });
  }

  /**
   * stop_play: stops the playback, ends every overlay (announcements: volumes go back), and
   * stops any speaker still playing that no playback holds (what another app or a crashed
   * hub left playing on a renderer), so that "stop" means silence.
   */
  async stop(): Promise<void> {
    this.cancelStart(Infinity);
    await this.exclusive(async () => {
      const p = this.current;
      if (!p) return;
      await this.stopSpeakers(p);
      this.finish('stopped');
    });
    await this.endOverlays('stop_play');
    await this.stopStrays();
  }

  /** A speaker added to the playback session joins what is playing, at the current position. */
  async join(speakerIds: string[]): Promise<void> {
    await this.exclusive(async () => {
      const p = this.current;
      if (!p || p.state !== 'PlayerStatePlaying') return;
      const candidates = speakerIds.map((id) => this.registry.find(id)).filter((s): s is Speaker => !!s && s.available && !p.speakers.has(s.id));
      for (const s of candidates) if (this.isBusy(s.id)) p.idle.set(s.id, s);
      const fresh = candidates.filter((s) => !this.isBusy(s.id));
      if (!fresh.length) return;
      for (const s of fresh) p.idle.delete(s.id);
      const joined = await this.startOn(fresh, p.media, this.elapsed(p), true);
      if (this.current !== p) {
        for (const s of joined) s.stop().catch(() => undefined);
        return;
      }
      for (const s of joined) this.watch(p, s);
      if (joined.length) this.changed();
    });
  }

  /** A speaker removed from the playback session stops; the others play on. */
  async leave(speakerId: string): Promise<void> {
    await this.exclusive(async () => {
      const p = this.current;
      if (!p) return;
      if (p.idle.delete(speakerId)) {
        if (p.speakers.size === 0 && p.idle.size === 0) this.finish('stopped');
        else this.changed();
        return;
      }
      const entry = p.speakers.get(speakerId);
      if (!entry) return;
      entry.unwatch();
      p.speakers.delete(speakerId);
      await entry.speaker.stop().catch((e) => this.logger.warn({ deviceId: speakerId, err: String(e) }, 'stop failed'));
      if (p.speakers.size === 0 && p.idle.size === 0) this.finish('stopped');
      else this.changed();
    });
  }

  /** Stops everything; used at hub shutdown. The final state goes out with reason 'shutdown'. */
  async shutdown(): Promise<void> {
    this.cancelStart(Infinity);
    await this.exclusive(async () => {
      const p = this.current;
      if (!p) return;
      await this.stopSpeakers(p);
      this.finish('shutdown');
    });
    await this.endOverlays('shutdown');
  }

  // ---- overlays (announcements) ----------------------------------------------------------

  /** Whether the speaker is a member of the playback (carrying it, or lent/parked). */
  isMember(speakerId: string): boolean {
    const p = this.current;
    return !!p && (p.speakers.has(speakerId) || p.idle.has(speakerId));
  }

  /** Priority of the playback the speaker plays now, if it plays one. */
  priorityOn(speakerId: string): number | undefined {
    const p = this.current;
    return p && p.state === 'PlayerStatePlaying' && p.speakers.has(speakerId) ? p.priority : undefined;
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
   * An overlay takes speakers (reserved by it): they stop carrying the playback
   * but stay its members; the others play on untouched. A play still starting on them is
   * cancelled when `priority` is at least its own, else awaited.
   */
  async lend(speakerIds: string[], priority: number): Promise<void> {
    const ids = new Set(speakerIds);
    const s = this.starting;
    if (s && s.speakers.some((sp) => ids.has(sp.id))) {
      this.cancelStart(priority);
      await this.exclusive(async () => undefined);
    }
    const p = this.current;
    if (!p) return;
    for (const id of ids) {
      const entry = p.speakers.get(id);
      if (!entry) continue;
      entry.unwatch();
      p.speakers.delete(id);
      p.idle.set(id, entry.speaker);
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
    return this.exclusive(async () => {
      const p = this.current;
      const speaker = p?.idle.get(speakerId);
      if (!p || !speaker) return 'none';
      if (p.state === 'PlayerStatePaused') {
        this.lent.delete(speakerId);
        return 'parked';
      }
      if (p.media.duration !== undefined && this.elapsed(p) >= p.media.duration - 0.5) {
        p.idle.delete(speakerId);
        if (p.speakers.size === 0 && p.idle.size === 0) this.finish('ended');
        return 'none';
      }
      p.idle.delete(speakerId);
      this.lent.delete(speakerId);
      const joined = speaker.available ? await this.startOn([speaker], p.media, this.rejoinAt(p), true).catch(() => []) : [];
      if (this.current !== p) {
        for (const s of joined) s.stop().catch(() => undefined);
        return 'none';
      }
      for (const s of joined) this.watch(p, s);
      if (!joined.length) {
        this.logger.warn({ deviceId: speakerId }, 'speaker could not rejoin the playback after an overlay');
        if (p.speakers.size === 0 && p.idle.size === 0) this.finish('error');
        else this.changed();
        return 'none';
      }
      return 'rejoined';
    });
  }

  /** Plays on speakers outside the music playback (for overlays): same grouping as plays. */
  playOverlay(speakers: Speaker[], request: MediaRequest): Promise<PromiseSettledResult<void>[]> {
    return this.playAll(speakers, request);
  }

  // ---- internals -----------------------------------------------------------------------

  private isBusy(id: string): boolean {
    return this.lent.has(id);
  }

  private members(p: Playback): string[] {
    return [...p.speakers.keys(), ...p.idle.keys()];
  }

  /** Where a speaker joining now starts: the current position, or the live edge of a web stream. */
  private rejoinAt(p: Playback): number {
    return p.media.kind === 'web' && p.media.duration === undefined ? 0 : this.elapsed(p);
  }

  /**
   * Cancels a play still starting when `priority` is at least its own (stop_play passes
   * Infinity): its speakers are stopped, which makes their pending starts fail at once.
   */
  private cancelStart(priority: number): void {
    const s = this.starting;
    // stop_play and shutdown (Infinity) cancel any start, joins and resumes included.
    if (!s || s.cancelled || (priority !== Infinity && (s.priority === undefined || priority < s.priority))) return;
    s.cancelled = true;
    this.logger.info({ speakers: s.speakers.map((x) => x.id), priority: s.priority }, 'cancelling a play still starting');
    for (const sp of s.speakers) sp.stop().catch(() => undefined);
  }

  /** Stops speakers that play although no playback and no overlay holds them. */
  private async stopStrays(): Promise<void> {
    const strays = this.registry.available().filter((s) => s.state !== 'stopped' && !this.isMember(s.id) && !this.isBusy(s.id));
    if (!strays.length) return;
    this.logger.info({ speakers: strays.map((s) => s.id) }, 'stopping speakers that play outside any playback');
    const results = await Promise.allSettled(strays.map((s) => s.stop()));
    this.logFailures(
      'stop',
      strays.map((s) => s.id),
      results,
    );
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private resolveTarget(target: Target): Speaker[] {
    let candidates: Speaker[];
    if (target.kind === 'session') {
      const ids = this.selection.list();
      if (!ids.length)
        throw new HubError('NoSpeakerSelected', 'No speaker is in the playback session; add one with add_device_to_session or set_party_mode.');
      candidates = ids.map((id) => this.registry.find(id)).filter((s): s is Speaker => !!s);
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

  private checkPriority(priority: number): void {
    const p = this.current;
    if (p?.state === 'PlayerStatePlaying' && priority < p.priority) {
      throw new HubError('PriorityTooLow', `A playback with Priority ${p.priority} is playing; this play has Priority ${priority}.`, {
        parameter: 'Priority',
      });
    }
  }

  /**
   * Starts media on speakers in parallel. Returns those that started; throws PlaybackFailed
   * when none did (unless `lenient`, for speakers joining a playback that goes on anyway).
   */
  private async startOn(speakers: Speaker[], media: PlayableMedia, startAt: number, lenient = false, priority?: number): Promise<Speaker[]> {
    const starting: Starting = { speakers, cancelled: false, priority };
    this.starting = starting;
    const request = { url: media.url, contentType: media.contentType, title: media.title, duration: media.duration, startAt };
    const results = await this.playAll(speakers, request);
    if (this.starting === starting) this.starting = undefined;
    const started = speakers.filter((_, i) => results[i].status === 'fulfilled');
    const failures = this.logFailures(
      'play',
      speakers.map((s) => s.id),
      results,
    );
    if (starting.cancelled) {
      for (const s of started) s.stop().catch(() => undefined);
      throw new HubError('PlaybackFailed', 'The playback was stopped before it started.');
    }
    if (!started.length && !lenient) {
      throw new HubError('PlaybackFailed', `No target speaker could play the media: ${failures.join('; ')}`);
    }
    return started;
  }

  /** Plays on every speaker at once; drivers that can start a group together do so. */
  private async playAll(speakers: Speaker[], request: MediaRequest): Promise<PromiseSettledResult<void>[]> {
    const byDriver = new Map<SpeakerDriver | undefined, Speaker[]>();
    for (const s of speakers) {
      const d = this.registry.driverOf(s);
      const group = d?.playGroup ? d : undefined;
      byDriver.set(group, [...(byDriver.get(group) ?? []), s]);
    }
    const timed = this.agreeStartInstant(byDriver, request);
    const settled = new Map<Speaker, PromiseSettledResult<void>>();
    await Promise.all(
      [...byDriver].map(async ([driver, group]) => {
        const results = driver
          ? await driver.playGroup!(group, driver.startLeadMs ? timed : request)
          : await Promise.allSettled(group.map((s) => s.play(request)));
        group.forEach((s, i) => settled.set(s, results[i]));
      }),
    );
    return speakers.map((s) => settled.get(s)!);
  }

  /**
   * One start instant for a play that spans several drivers that each start their speakers in
   * sync (their startLeadMs): the latest lead any of them needs from now, so the families are
   * heard together rather than each when its own protocol is ready.
   */
  private agreeStartInstant(byDriver: Map<SpeakerDriver | undefined, Speaker[]>, request: MediaRequest): MediaRequest {
    const timed = [...byDriver].filter(([d]) => d?.startLeadMs);
    if (timed.length < 2 || request.startInstant !== undefined) return request;
    const lead = Math.max(...timed.map(([d, group]) => d!.startLeadMs!(group)));
    return { ...request, startInstant: syncClockMs() + lead };
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
    void this.exclusive(async () => {
      if (this.current !== p || !p.speakers.has(speaker.id)) return;
      const at = speaker.position();
      const position = at !== undefined && Number.isFinite(at) && at >= 0 ? at : this.elapsed(p);
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
      this.logger.info({ deviceId: speaker.id, state }, `playback ${state === 'paused' ? 'paused' : 'resumed'} from the speaker's own app`);
      this.changed();
    });
  }

  /** A speaker left the playback by itself: the media ended, it failed, or it vanished. */
  private lost(p: Playback, id: string, reason: StopReason): void {
    const entry = p.speakers.get(id);
    if (!entry || this.current !== p) return;
    entry.unwatch();
    p.speakers.delete(id);
    if (reason === 'ended') {
      // The media ended: the playback is over once every speaker has ended. Speakers report
      // the end one by one; the others get a grace period, so that clients see one Stopped
      // rather than a Playing with a shrinking device list per speaker.
      if (p.speakers.size === 0) {
        this.finish('ended');
        return;
      }
      p.ending ??= this.clock.setTimer(() => {
        p.ending = undefined;
        if (this.current === p) this.changed();
      }, END_GRACE_MS);
      return;
    }
    this.logger.warn({ deviceId: id, reason }, 'speaker dropped out of the playback');
    // Lent speakers keep the playback alive: it goes on (in time) and they rejoin it.
    if (p.speakers.size === 0 && p.idle.size === 0) this.finish(reason === 'error' ? 'error' : 'stopped');
    else if (!p.ending) this.changed();
  }

  /** Detaches every speaker from the playback and stops those not in `keep`. */
  private async stopSpeakers(p: Playback, keep: Set<string> = new Set()): Promise<void> {
    const all = [...p.speakers.values()];
    for (const e of all) e.unwatch();
    p.speakers.clear();
    const entries = all.filter((e) => !keep.has(e.speaker.id));
    const results = await Promise.allSettled(entries.map((e) => e.speaker.stop()));
    this.logFailures(
      'stop',
      entries.map((e) => e.speaker.id),
      results,
    );
  }

  /** Ends the current playback, if any; its speakers are the caller's to stop. */
  private finish(reason: PlaybackEndReason): void {
    const p = this.current;
    if (!p) return;
    p.tick?.cancel();
    p.ending?.cancel();
    for (const e of p.speakers.values()) e.unwatch();
    this.current = undefined;
    this.logger.info({ reason }, 'playback stopped');
    this.changed(reason);
  }

  private elapsed(p: Playback): number {
    const running = p.state === 'PlayerStatePlaying' ? (this.clock.now() - p.startedAt) / 1000 : 0;
    const t = p.offset + running;
    return p.media.duration !== undefined ? Math.min(t, p.media.duration) : t;
  }

  /** Emits playbackTime each time the whole-second count moves on. */
  private scheduleTick(p: Playback): void {
    p.tick?.cancel();
    if (p.state !== 'PlayerStatePlaying' || this.current !== p) return;
    const ms = (p.offset * 1000 + (this.clock.now() - p.startedAt)) % 1000;
    p.tick = this.clock.setTimer(
      () => {
        if (this.current !== p || p.state !== 'PlayerStatePlaying') return;
        // Every member lent to an overlay: no speaker reports the end, the clock does.
        if (p.speakers.size === 0 && p.media.duration !== undefined && this.elapsed(p) >= p.media.duration) {
          this.finish('ended');
          return;
        }
        this.events.emit('playbackTime', { timeElapsed: Math.floor(this.elapsed(p)), deviceIds: this.members(p) });
        this.scheduleTick(p);
        // A few ms past the boundary: timers may fire a hair early and floor() would repeat a second.
      },
      1000 - ms + 5,
    );
  }

  private changed(reason?: PlaybackEndReason): void {
    this.events.emit('playbackState', this.snapshot(reason));
  }

  private logFailures(what: string, ids: string[], results: PromiseSettledResult<unknown>[]): string[] {
    const messages: string[] = [];
    results.forEach((r, i) => {
      if (r.status === 'rejected') {
        const msg = r.reason instanceof Error ? r.reason.message : String(r.reason);
        messages.push(`${ids[i]}: ${msg}`);
        this.logger.warn({ deviceId: ids[i], err: r.reason }, `speaker ${what} failed`); // the error itself: its cause reaches the log
      }
    });
    return messages;
  }
}

import { HubError } from './errors';
import type { Clock, TimerHandle } from './clock';
import type { HubEventBus, MediaKind, PlaybackSnapshot, PlaybackState } from './events';
import type { Selection } from './selection';
import type { SpeakerRegistry } from './speaker-registry';
import type { MediaRequest, Speaker, SpeakerDriver, SpeakerPlayState, StopReason } from '../drivers/driver';
import type { Logger } from '../logger';
import { redactUrl } from '../redact';

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

interface Playback {
  media: PlayableMedia;
  priority: number;
  target: Target['kind'];
  state: Exclude<PlaybackState, 'PlayerStateStopped'>;
  /** Speakers carrying the playback now, with the listener that watches each. */
  speakers: Map<string, { speaker: Speaker; unwatch: () => void }>;
  /** Seconds banked before the last (re)start. */
  offset: number;
  /** Clock ms of the last (re)start. */
  startedAt: number;
  tick?: TimerHandle;
}

/**
 * One playback at a time, hub-wide, as on the original hub: a new play (with enough
 * Priority) replaces the current one, whichever speakers either uses.
 *
 * State changes run one after another through `exclusive`; media loading (TTS synthesis)
 * happens before a play joins that queue so a slow synthesis never holds up stop_play.
 */
export class PlaybackEngine {
  private current?: Playback;
  private queue: Promise<unknown> = Promise.resolve();
  /** Speakers a play is starting on; stop_play stops them at once instead of waiting. */
  private starting?: { speakers: Speaker[]; cancelled: boolean };

  constructor(
    private readonly registry: SpeakerRegistry,
    private readonly selection: Selection,
    private readonly clock: Clock,
    private readonly events: HubEventBus,
    private readonly logger: Logger,
  ) {}

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

  snapshot(reason?: string): PlaybackSnapshot {
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
      deviceIds: [...p.speakers.keys()],
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
    await this.exclusive(async () => {
      const speakers = this.resolveTarget(target);
      this.checkPriority(priority);
      if (this.current) {
        // Speakers of the new target switch media directly; the others are stopped first.
        await this.stopSpeakers(this.current, new Set(speakers.map((s) => s.id)));
        this.finish('interrupted');
      }
      const started = await this.startOn(speakers, media, 0);
      this.current = {
        media,
        priority,
        target: target.kind,
        state: 'PlayerStatePlaying',
        speakers: new Map(),
        offset: 0,
        startedAt: this.clock.now(),
      };
      for (const s of started) this.watch(this.current, s);
      this.logger.info({ kind: media.kind, priority, target: target.kind, speakers: started.map((s) => s.id) }, 'playback started');
      this.changed();
      this.scheduleTick(this.current);
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
      const fresh = wanted.filter((s) => !p.speakers.has(s.id));
      const resumed = await Promise.allSettled([...p.speakers.values()].map(({ speaker }) => speaker.resume()));
      [...p.speakers.values()].forEach(({ speaker, unwatch }, i) => {
        if (resumed[i].status === 'rejected') {
          unwatch();
          p.speakers.delete(speaker.id);
          this.logger.warn({ deviceId: speaker.id, err: String((resumed[i] as PromiseRejectedResult).reason) }, 'resume failed');
        }
      });
      const joined = fresh.length ? await this.startOn(fresh, p.media, p.offset, p.speakers.size > 0) : [];
      for (const s of joined) this.watch(p, s);
      if (p.speakers.size === 0) {
        this.finish('error');
        throw new HubError('PlaybackFailed', 'No target speaker could resume the media.');
      }
      p.state = 'PlayerStatePlaying';
      p.startedAt = this.clock.now();
      this.changed();
      this.scheduleTick(p);
    });
  }

  async stop(): Promise<void> {
    if (this.starting) {
      this.starting.cancelled = true;
      for (const s of this.starting.speakers) s.stop().catch(() => undefined);
    }
    await this.exclusive(async () => {
      const p = this.current;
      if (!p) return;
      await this.stopSpeakers(p);
      this.finish('stopped');
    });
  }

  /** A speaker added to the playback session joins what is playing, at the current position. */
  async join(speakerIds: string[]): Promise<void> {
    await this.exclusive(async () => {
      const p = this.current;
      if (!p || p.state !== 'PlayerStatePlaying') return;
      const fresh = speakerIds
        .map((id) => this.registry.find(id))
        .filter((s): s is Speaker => !!s && s.available && !p.speakers.has(s.id));
      if (!fresh.length) return;
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
      const entry = p?.speakers.get(speakerId);
      if (!p || !entry) return;
      entry.unwatch();
      p.speakers.delete(speakerId);
      await entry.speaker.stop().catch((e) => this.logger.warn({ deviceId: speakerId, err: String(e) }, 'stop failed'));
      if (p.speakers.size === 0) this.finish('stopped');
      else this.changed();
    });
  }

  /** Stops everything; used at hub shutdown. */
  async shutdown(): Promise<void> {
    await this.stop();
  }

  // ---- internals -----------------------------------------------------------------------

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private resolveTarget(target: Target): Speaker[] {
    let candidates: Speaker[];
    if (target.kind === 'session') {
      const ids = this.selection.list();
      if (!ids.length) throw new HubError('NoSpeakerSelected', 'No speaker is in the playback session; add one with add_device_to_session or set_party_mode.');
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
  private async startOn(speakers: Speaker[], media: PlayableMedia, startAt: number, lenient = false): Promise<Speaker[]> {
    const starting = { speakers, cancelled: false };
    this.starting = starting;
    const request = { url: media.url, contentType: media.contentType, title: media.title, duration: media.duration, startAt };
    const results = await this.playAll(speakers, request);
    this.starting = undefined;
    const started = speakers.filter((_, i) => results[i].status === 'fulfilled');
    const failures = this.logFailures('play', speakers.map((s) => s.id), results);
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
    const settled = new Map<Speaker, PromiseSettledResult<void>>();
    await Promise.all(
      [...byDriver].map(async ([driver, group]) => {
        const results = driver ? await driver.playGroup!(group, request) : await Promise.allSettled(group.map((s) => s.play(request)));
        group.forEach((s, i) => settled.set(s, results[i]));
      }),
    );
    return speakers.map((s) => settled.get(s)!);
  }

  private watch(p: Playback, speaker: Speaker): void {
    const onState = (state: SpeakerPlayState, reason?: StopReason) => {
      if (state === 'stopped') this.lost(p, speaker.id, reason ?? 'stopped');
    };
    const onAvailability = (available: boolean) => {
      if (!available) this.lost(p, speaker.id, 'error');
    };
    speaker.on('state', onState);
    speaker.on('availability', onAvailability);
    p.speakers.set(speaker.id, {
      speaker,
      unwatch: () => {
        speaker.off('state', onState);
        speaker.off('availability', onAvailability);
      },
    });
  }

  /** A speaker left the playback by itself: the media ended, it failed, or it vanished. */
  private lost(p: Playback, id: string, reason: StopReason): void {
    const entry = p.speakers.get(id);
    if (!entry || this.current !== p) return;
    entry.unwatch();
    p.speakers.delete(id);
    if (reason !== 'ended') this.logger.warn({ deviceId: id, reason }, 'speaker dropped out of the playback');
    if (p.speakers.size === 0) this.finish(reason === 'ended' ? 'ended' : reason === 'error' ? 'error' : 'stopped');
    else this.changed();
  }

  /** Detaches every speaker from the playback and stops those not in `keep`. */
  private async stopSpeakers(p: Playback, keep: Set<string> = new Set()): Promise<void> {
    const all = [...p.speakers.values()];
    for (const e of all) e.unwatch();
    p.speakers.clear();
    const entries = all.filter((e) => !keep.has(e.speaker.id));
    const results = await Promise.allSettled(entries.map((e) => e.speaker.stop()));
    this.logFailures('stop', entries.map((e) => e.speaker.id), results);
  }

  /** Ends the current playback, if any; its speakers are the caller's to stop. */
  private finish(reason: string): void {
    const p = this.current;
    if (!p) return;
    p.tick?.cancel();
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
    p.tick = this.clock.setTimer(() => {
      if (this.current !== p || p.state !== 'PlayerStatePlaying') return;
      this.events.emit('playbackTime', { timeElapsed: Math.floor(this.elapsed(p)), deviceIds: [...p.speakers.keys()] });
      this.scheduleTick(p);
      // A few ms past the boundary: timers may fire a hair early and floor() would repeat a second.
    }, 1000 - ms + 5);
  }

  private changed(reason?: string): void {
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

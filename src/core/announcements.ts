import { randomBytes } from 'node:crypto';
import { HubError } from './errors';
import type { Clock } from './clock';
import type { AnnouncementEvent, AnnouncementState, HubEventBus } from './events';
import type { OverlayEndReason, PlaybackEngine, PlayableMedia } from './playback-engine';
import type { SpeakerRegistry } from './speaker-registry';
import {
  ANNOUNCEMENT_STATE_OF,
  ANNOUNCEMENT_TRANSITIONS,
  LANE_TRANSITIONS,
  transition,
  type AnnouncementPhase,
  type AnnouncementTrigger,
  type LanePhase,
  type LaneTrigger,
} from './announcement-states';
import { endsDone, reasonText, type AnnouncementReason, type AnnouncementReasonCode } from './announcement-reasons';
import type { Speaker, SpeakerPlayState, SpeakerSnapshot, StopReason } from '../drivers/driver';
import type { Logger } from '../logger';

/**
 * Announcements: overlays on top of the music playback. An announcement borrows its
 * speakers, plays (chime, then speech or media) at its own volume, and puts every speaker
 * back exactly as it was: in the music playback again (in sync, at the current position),
 * or what another app had on it (snapshot from the speaker itself), its volume and mute.
 *
 * Per speaker a lane runs announcements one after another (by Priority, then arrival); the
 * snapshot is taken before the first and restored once, after the last. An announcement to
 * several speakers starts when it is first in line on all of them, so they start together.
 * A higher Priority cuts in: what played is interrupted, the restore stays the first one's.
 *
 * States and their transitions: src/core/announcement-states.ts (every change goes through
 * its transition()); reasons: src/core/announcement-reasons.ts.
 *
 * Coupling runs one way: this manager uses the PlaybackEngine (reserve/lend a speaker, play
 * on it, give it back, release it); the engine holds no reference to announcements. Its one
 * request upwards, "end every overlay" at stop_play and shutdown, is a function this manager
 * hands it (engine.onEndOverlays).
 */

export interface AnnounceRequest {
  /** Loads the announcement's media items in order (chime, speech): synthesis happens here, before any speaker is touched. */
  load: () => Promise<PlayableMedia[]>;
  /** Targets; undefined = every available speaker. */
  deviceIds?: string[];
  /** The level on each target while it announces (0–50); undefined keeps each speaker's own. */
  volume?: number;
  priority: number;
  /** interrupt (default): the music stops on the targets and comes back after; duck: it goes on, lowered, under the voice. */
  mode?: AnnouncementMode;
  /** duck: dB the music goes down (-40..0; default -15). */
  duckLevel?: number;
  /** duck: fade time in ms (default 500). */
  fadeMs?: number;
}

export type AnnouncementMode = 'interrupt' | 'duck';
export const DEFAULT_DUCK_LEVEL = -15;
export const DEFAULT_FADE_MS = 500;

export interface AnnouncementStatus {
  id: string;
  state: AnnouncementState;
  deviceIds: string[];
  priority: number;
  volume?: number;
  /** The mode it plays in: duck only if every target's driver can mix. */
  mode: AnnouncementMode;
  /** Why it plays in a mode other than the one asked for (duck asked, a target cannot mix). */
  modeReason?: string;
  /** Why it failed, or what interrupted it (wire text, made from reasonCode). */
  reason?: string;
  reasonCode?: AnnouncementReasonCode;
  createdAt: number;
  startedAt?: number;
  endedAt?: number;
  restoredAt?: number;
}

export interface AnnouncementLimits {
  /** Announcements waiting on one speaker (beyond the one playing). */
  maxQueuedPerSpeaker: number;
  /** Announcements not yet finished, hub-wide. */
  maxPending: number;
  /** Finished announcements kept for announcement_status. */
  maxHistory: number;
}

export const DEFAULT_ANNOUNCEMENT_LIMITS: AnnouncementLimits = { maxQueuedPerSpeaker: 16, maxPending: 256, maxHistory: 1000 };

interface Announcement {
  id: string;
  phase: AnnouncementPhase;
  seq: number;
  deviceIds: string[];
  priority: number;
  volume?: number;
  mode: AnnouncementMode;
  modeReason?: string;
  /** Set in mode duck. */
  duck?: { levelDb: number; fadeMs: number };
  reason?: AnnouncementReason;
  createdAt: number;
  startedAt?: number;
  endedAt?: number;
  restoredAt?: number;
  media?: PlayableMedia[];
  /** Speakers it still plays on. */
  playing: Set<string>;
  /** Speakers that have not yet been restored after it (or dropped from it). */
  unrestored: Set<string>;
  /** Listeners on the speakers it plays, by speaker. */
  unwatch: Map<string, () => void>;
  /** Index of the media item playing. */
  step: number;
  /** Speakers that finished the current step. */
  stepDone: Set<string>;
  /** Speakers a higher-Priority announcement cut in on. */
  interrupted: string[];
  /** At least one speaker started it. */
  played: boolean;
}

interface Lane {
  /** The speaker's id. */
  id: string;
  phase: LanePhase;
  speaker: Speaker;
  queue: Announcement[];
  /** The announcement playing (or starting) here; set only in phase announcing. */
  current?: Announcement;
  /** Taken before the first announcement of a run; put back after the last. */
  snapshot?: { volume: number; muted?: boolean; member: boolean; transport?: SpeakerSnapshot };
  /** Announcements that played here and wait for this lane's restore. */
  owed: Set<Announcement>;
  /** Set in phase restoring. */
  restoring?: Promise<void>;
  /**
   * The last announcement's taking of this speaker (snapshot, lend, volume). The next taking
   * (a cut-in) and the restore wait for it, so that a stop_play or a cut-in during the start
   * cannot have the announcement's volume land after the restore.
   */
  taking?: Promise<void>;
  /** The volume the announcement set (restore only touches a volume the announcement changed). */
  setVolume?: number;
}

export class AnnouncementManager {
  private readonly lanes = new Map<string, Lane>();
  private readonly pending = new Map<string, Announcement>();
  private readonly history = new Map<string, AnnouncementStatus>();
  private seq = 0;
  private pumping = false;
  private pumpAgain = false;
  /** stop_play in progress: lanes get their volume back but not their transport. */
  private stopping = false;

  constructor(
    private readonly registry: SpeakerRegistry,
    private readonly engine: PlaybackEngine,
    private readonly clock: Clock,
    private readonly events: HubEventBus,
    private readonly logger: Logger,
    private readonly limits: AnnouncementLimits = DEFAULT_ANNOUNCEMENT_LIMITS,
  ) {
    engine.onEndOverlays((why, ids) => this.stopAll(why, ids));
  }

  /** Media URLs of the announcements not finished yet (queued or playing): the media host keeps them. */
  mediaInUse(): Set<string> {
    const urls = new Set<string>();
    for (const a of this.pending.values()) for (const m of a.media ?? []) urls.add(m.url);
    return urls;
  }

  // ---- commands and queries -------------------------------------------------------------

  /**
   * Accepts an announcement and returns its id at once; it plays in the background. Targets
   * and Priority are checked now (DeviceNotFound, NoSpeakerAvailable, PriorityTooLow,
   * AnnouncementQueueFull); a TTS failure shows later as state failed.
   */
  announce(req: AnnounceRequest): AnnouncementStatus {
    const speakers = this.targets(req.deviceIds);
    for (const s of speakers) {
      const music = this.engine.priorityOn(s.id);
      if (music !== undefined && req.priority < music) {
        throw new HubError(
          'PriorityTooLow',
          `A playback with Priority ${music} is playing on ${s.id}; this announcement has Priority ${req.priority}.`,
          {
            parameter: 'Priority',
          },
        );
      }
    }
    if (this.pending.size >= this.limits.maxPending) {
      throw new HubError('AnnouncementQueueFull', `${this.limits.maxPending} announcements are already waiting or playing.`);
    }
    for (const s of speakers) {
      const lane = this.lanes.get(s.id);
      if (lane && lane.queue.length >= this.limits.maxQueuedPerSpeaker) {
        throw new HubError('AnnouncementQueueFull', `${lane.queue.length} announcements already wait for speaker ${s.id}.`, {
          parameter: 'DeviceIDList',
        });
      }
    }
    const mode = modeFor(req.mode ?? 'interrupt', speakers);
    const a: Announcement = {
      id: randomBytes(9).toString('base64url'),
      phase: 'loading',
      seq: ++this.seq,
      deviceIds: speakers.map((s) => s.id),
      priority: req.priority,
      volume: req.volume,
      mode: mode.mode,
      ...(mode.reason ? { modeReason: mode.reason } : {}),
      ...(mode.mode === 'duck' ? { duck: { levelDb: req.duckLevel ?? DEFAULT_DUCK_LEVEL, fadeMs: req.fadeMs ?? DEFAULT_FADE_MS } } : {}),
      createdAt: this.clock.now(),
      playing: new Set(),
      unrestored: new Set(speakers.map((s) => s.id)),
      unwatch: new Map(),
      step: 0,
      stepDone: new Set(),
      interrupted: [],
      played: false,
    };
    this.pending.set(a.id, a);
    for (const s of speakers) {
      const lane = this.lane(s);
      lane.queue.push(a);
      lane.queue.sort(order);
    }
    this.logger.info(
      { announcement: a.id, speakers: a.deviceIds, priority: a.priority, mode: a.mode, modeReason: a.modeReason },
      'announcement queued',
    );
    req.load().then(
      (media) =>
        this.guard('load', () => {
          // Cancelled (stop_play) while it loaded: nothing more to do.
          if (a.phase !== 'loading') return;
          a.media = media;
          this.move(a, 'loaded');
          this.pump();
        }),
      (e: unknown) =>
        this.guard('load', () => {
          if (a.phase !== 'loading') return;
          const err = e as { message?: string; code?: string };
          this.cancel(a, { code: 'load_failed', message: err.message ?? String(e), errorCode: err.code });
        }),
    );
    return this.statusOf(a);
  }

  status(id: string): AnnouncementStatus {
    const a = this.pending.get(id);
    if (a) return this.statusOf(a);
    const done = this.history.get(id);
    if (done) return { ...done };
    throw new HubError('AnnouncementNotFound', `No announcement has AnnouncementID ${id} (or it is too old to be remembered).`, {
      parameter: 'AnnouncementID',
    });
  }

  /**
   * Ends the announcements on some speakers (every one when `ids` is undefined; the engine
   * asks at stop_play and shutdown): queued ones fail, started ones end; volumes and mutes go
   * back, transports stay stopped (stop means silence). An announcement that touches none of
   * the speakers (another zone's) goes on.
   */
  private async stopAll(why: OverlayEndReason, ids?: ReadonlySet<string>): Promise<void> {
    const reason: AnnouncementReason = why === 'shutdown' ? { code: 'hub_shutdown' } : { code: 'stopped_by_play' };
    const hit = (a: Announcement) => !ids || a.deviceIds.some((d) => ids.has(d));
    const ended = new Set<string>(ids ?? []);
    this.stopping = true;
    try {
      // Queued ones first, so that ending the playing ones starts none of them.
      // (Guarded one by one: a fault in one must not keep the others' speakers from coming back.)
      for (const a of [...this.pending.values()]) {
        if ((a.phase === 'loading' || a.phase === 'queued') && hit(a)) this.guard('stop', () => this.cancel(a, reason));
      }
      for (const a of [...this.pending.values()]) {
        if ((a.phase !== 'starting' && a.phase !== 'playing') || !hit(a)) continue;
        for (const d of a.deviceIds) ended.add(d);
        a.reason ??= reason;
        this.guard('stop', () => this.endOn(a));
      }
      const lanes = [...this.lanes.values()].filter((l) => l.phase !== 'free' && (!ids || ended.has(l.id)));
      await Promise.all(lanes.map((lane) => this.restoreLane(lane)));
    } finally {
      this.stopping = false;
    }
    // Announcements queued elsewhere, held while this ran, may start now.
    if (ids) this.pump();
  }

  // ---- scheduling -------------------------------------------------------------------------

  private targets(deviceIds?: string[]): Speaker[] {
    const candidates = deviceIds
      ? deviceIds.map((id) => {
          const s = this.registry.find(id);
          if (!s) throw new HubError('DeviceNotFound', `No speaker has DeviceID ${id}.`, { parameter: 'DeviceIDList' });
          return s;
        })
      : this.registry.all();
    const available = candidates.filter((s) => s.available);
    if (!available.length) throw new HubError('NoSpeakerAvailable', 'None of the target speakers is available.');
    return available;
  }

  private lane(speaker: Speaker): Lane {
    let lane = this.lanes.get(speaker.id);
    if (!lane) {
      lane = { id: speaker.id, phase: 'free', speaker, queue: [], owed: new Set() };
      this.lanes.set(speaker.id, lane);
    }
    return lane;
  }

  /** Starts every announcement that is first in line on all its speakers (or may cut in). */
  private pump(): void {
    if (this.stopping) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        const waiting = [...this.pending.values()].filter((a) => a.phase === 'queued').sort(order);
        for (const a of waiting) {
          if (a.phase !== 'queued') continue;
          const lanes = a.deviceIds.map((id) => this.lanes.get(id)).filter((l): l is Lane => !!l);
          const go = lanes.every((l) => l.phase !== 'restoring' && l.queue[0] === a && (!l.current || l.current.priority < a.priority));
          if (go) this.start(a, lanes).catch((e: unknown) => this.fault('start', e));
        }
      } while (this.pumpAgain);
    } finally {
      this.pumping = false;
    }
  }

  private async start(a: Announcement, lanes: Lane[]): Promise<void> {
    this.move(a, 'start');
    a.startedAt = this.clock.now();
    for (const lane of lanes) {
      lane.queue.shift();
      if (lane.current) this.cutIn(lane, a);
      lane.current = a;
      this.moveLane(lane, 'take');
    }
    // The engine starts no music on them from now on, until they are released after the restore.
    this.engine.reserve(lanes.map((l) => l.id));
    const usable = lanes.filter((l) => l.speaker.available);
    for (const lane of lanes) if (!lane.speaker.available) this.leaveLane(lane, a, 'speaker unavailable');
    const taking = this.take(a, usable);
    for (const l of usable) l.taking = taking;
    await taking;
    // stop_play, a cut-in or a failure may have ended it while its speakers were being taken.
    if (a.phase !== 'starting') return;
    const speakers = usable.filter((l) => l.current === a).map((l) => l.speaker);
    for (const s of speakers) a.playing.add(s.id);
    this.move(a, 'speak');
    this.emit(a, 'started');
    this.logger.info({ announcement: a.id, speakers: speakers.map((s) => s.id) }, 'announcement playing');
    await this.playStep(a);
  }

  /** Snapshots what each speaker does before touching it (only the first of a run), lends it, sets the announcement's volume. */
  private async take(a: Announcement, usable: Lane[]): Promise<void> {
    // After the taking of an announcement this one cut in on: snapshots and volumes in order.
    await Promise.all(usable.map((l) => l.taking));
    try {
      const fresh = usable.filter((l) => !l.snapshot);
      await Promise.all(fresh.map((l) => this.takeSnapshot(l)));
      await this.engine.lend(
        fresh.map((l) => l.id),
        a.priority,
      );
      // Ducking leaves the speaker's level alone (the music goes on at it); the driver sets the voice's.
      if (a.volume !== undefined && !a.duck) {
        await Promise.all(
          usable.map(async (l) => {
            try {
              if (l.speaker.isMuted?.()) await l.speaker.setMute!(false);
              await l.speaker.setVolume(a.volume!);
              l.setVolume = a.volume;
            } catch (e) {
              this.logger.warn({ deviceId: l.id, err: String(e) }, 'announcement volume not set');
            }
          }),
        );
      }
    } catch (e) {
      this.logger.warn({ announcement: a.id, err: String(e) }, 'announcement could not take its speakers');
    }
  }

  /** Plays the current media item on every speaker still in the announcement. */
  private async playStep(a: Announcement): Promise<void> {
    const item = a.media![a.step];
    const speakers = [...a.playing].map((id) => this.lanes.get(id)!.speaker);
    if (!item || !speakers.length) return this.endOn(a);
    a.stepDone.clear();
    const results = await this.engine.playOverlay(speakers, {
      url: item.url,
      contentType: item.contentType,
      title: item.title,
      duration: item.duration,
      startAt: 0,
      overlay: true,
      ...(a.duck ? { duck: { ...a.duck, ...(a.volume !== undefined ? { voiceVolume: a.volume } : {}) } } : {}),
    });
    const failures: string[] = [];
    speakers.forEach((s, i) => {
      if (!a.playing.has(s.id)) {
        // Stopped or cut in while it was starting.
        return;
      }
      const r = results[i];
      if (r.status === 'rejected') {
        const msg = r.reason instanceof Error ? r.reason.message : String(r.reason);
        failures.push(`${s.info().name} (${s.id}): ${msg}`);
        this.dropSpeaker(a, s.id, true);
        return;
      }
      a.played = true;
      this.watch(a, s);
    });
    if (failures.length) {
      this.logger.warn({ announcement: a.id, failures }, 'announcement could not play on some speakers');
      if (!a.reason && a.playing.size === 0) a.reason = { code: 'play_failed', failures };
    }
    this.checkStep(a);
  }

  private watch(a: Announcement, s: Speaker): void {
    a.unwatch.get(s.id)?.();
    const onState = (state: SpeakerPlayState, reason?: StopReason) =>
      this.guard('speaker state', () => {
        if (state !== 'stopped') return;
        if (reason === 'ended') {
          a.unwatch.get(s.id)?.();
          a.unwatch.delete(s.id);
          a.stepDone.add(s.id);
          this.checkStep(a);
        } else {
          this.dropSpeaker(a, s.id, true);
        }
      });
    const onAvailability = (available: boolean) =>
      this.guard('speaker availability', () => {
        if (!available) this.dropSpeaker(a, s.id, true);
      });
    s.on('state', onState);
    s.on('availability', onAvailability);
    a.unwatch.set(s.id, () => {
      s.off('state', onState);
      s.off('availability', onAvailability);
    });
  }

  /** When every speaker of the announcement has finished the item: the next item, or the end. */
  private checkStep(a: Announcement): void {
    if (a.phase !== 'playing') return;
    if ([...a.playing].some((id) => !a.stepDone.has(id))) return;
    a.step += 1;
    if (a.step < (a.media?.length ?? 0) && a.playing.size > 0) {
      this.playStep(a).catch((e: unknown) => this.fault('next media item', e));
      return;
    }
    this.endOn(a);
  }

  /** The announcement stops on one speaker: it failed, vanished, was stopped, or cut in on. */
  private dropSpeaker(a: Announcement, id: string, checkEnd: boolean): void {
    a.unwatch.get(id)?.();
    a.unwatch.delete(id);
    if (!a.playing.delete(id)) return;
    const lane = this.lanes.get(id);
    if (lane?.current === a) this.leaveLane(lane, a);
    if (checkEnd) {
      if (a.playing.size === 0) this.endOn(a);
      else this.checkStep(a);
    }
  }

  /** A higher-Priority announcement takes a lane over from the one playing there. */
  private cutIn(lane: Lane, by: Announcement): void {
    const old = lane.current!;
    old.interrupted.push(lane.id);
    old.reason = { code: 'interrupted', by: by.id, deviceIds: [...old.interrupted] };
    old.unwatch.get(lane.id)?.();
    old.unwatch.delete(lane.id);
    old.playing.delete(lane.id);
    lane.current = undefined;
    lane.owed.add(old);
    if (old.playing.size === 0) this.endOn(old);
    else this.checkStep(old);
  }

  /** The announcement is over on this lane: the next one goes on, or the lane is restored. */
  private leaveLane(lane: Lane, a: Announcement, reason?: string): void {
    if (lane.current === a) lane.current = undefined;
    lane.queue = lane.queue.filter((x) => x !== a);
    a.playing.delete(lane.id);
    if (reason) this.logger.warn({ announcement: a.id, deviceId: lane.id, reason }, 'speaker left the announcement');
    lane.owed.add(a);
    this.settleLane(lane);
  }

  /** A taken lane without an announcement playing: straight on to the next one, or its restore. */
  private settleLane(lane: Lane): void {
    if (lane.current || (lane.phase !== 'announcing' && lane.phase !== 'between')) return;
    if (lane.queue.length) {
      // Straight on to the next announcement, no restore in between.
      if (lane.phase === 'announcing') this.moveLane(lane, 'handover');
      this.pump();
      return;
    }
    this.restoreLane(lane).catch((e: unknown) => this.fault('restore', e));
  }

  /** Over on every speaker: each lane it holds moves on; it is done once every one is restored. */
  private endOn(a: Announcement): void {
    if (a.phase !== 'starting' && a.phase !== 'playing') return;
    this.move(a, 'end');
    for (const id of [...a.playing]) {
      a.unwatch.get(id)?.();
      a.unwatch.delete(id);
      a.playing.delete(id);
    }
    a.endedAt = this.clock.now();
    this.emit(a, 'ended');
    for (const id of a.deviceIds) {
      if (!a.unrestored.has(id)) continue;
      const lane = this.lanes.get(id);
      if (!lane) a.unrestored.delete(id);
      else if (lane.current === a) this.leaveLane(lane, a);
    }
    this.maybeDone(a);
  }

  // ---- snapshot and restore ----------------------------------------------------------------

  private async takeSnapshot(lane: Lane): Promise<void> {
    const s = lane.speaker;
    const member = this.engine.isMember(s.id);
    let transport: SpeakerSnapshot | undefined;
    // Read from the speaker itself: what another app plays (the hub may not know), and the
    // exact volume and mute in the protocol's own terms.
    if (s.snapshot) {
      try {
        transport = await s.snapshot();
      } catch (e) {
        this.logger.warn({ deviceId: s.id, err: String(e) }, 'could not read what the speaker plays; it will not be restored');
      }
    }
    lane.snapshot = { volume: transport?.volume ?? s.volume, muted: transport?.muted ?? s.isMuted?.(), member, transport };
  }

  /**
   * Puts a lane's speaker back: volume and mute first (so the music does not come back at
   * the announcement's level), then the music playback, or what another app played (not
   * during stop_play: stop means silence).
   */
  private restoreLane(lane: Lane): Promise<void> {
    if (lane.restoring) return lane.restoring;
    this.moveLane(lane, 'release');
    const transport = !this.stopping;
    const run = (async () => {
      // The announcement's own taking of the speaker first (a stop_play during its start).
      await lane.taking;
      const s = lane.speaker;
      const snap = lane.snapshot;
      if (snap) {
        const t = snap.transport;
        if (t && s.restore && s.available) {
          if (lane.setVolume !== undefined || !!t.muted !== !!s.isMuted?.()) {
            await s.restore(t, { volumeOnly: true }).catch((e) => this.logger.warn({ deviceId: s.id, err: String(e) }, 'volume not restored'));
          }
        } else {
          if (lane.setVolume !== undefined && s.volume !== snap.volume) await this.putVolume(s, snap.volume);
          if (snap.muted && s.setMute && !s.isMuted?.())
            await s.setMute(true).catch((e) => this.logger.warn({ deviceId: s.id, err: String(e) }, 'mute not restored'));
        }
        // The music playback, if the speaker is (still, or now) one of its members.
        const back = await this.engine.giveBack(s.id);
        // What no hub playback holds: the driver puts back what it read (another app's media,
        // a Snapcast client's group and stream); a snapshot of a stopped speaker stops it.
        if (back === 'none' && transport && !snap.member && t && s.restore && s.available) {
          await s.restore(t).catch((e) => this.logger.warn({ deviceId: s.id, err: String(e) }, 'what the speaker played could not be restored'));
        } else if (back === 'none' && s.state !== 'stopped' && s.available) {
          await s.stop().catch(() => undefined);
        }
      }
    })();
    lane.restoring = run.finally(() =>
      this.guard('restored', () => {
        this.engine.release(lane.id);
        lane.restoring = undefined;
        lane.taking = undefined;
        lane.snapshot = undefined;
        lane.setVolume = undefined;
        this.moveLane(lane, 'restored');
        const owed = [...lane.owed];
        lane.owed.clear();
        for (const a of owed) this.restored(a, lane.id);
        if (lane.queue.length) this.pump();
        else this.lanes.delete(lane.id);
      }),
    );
    return lane.restoring;
  }

  /** Sets a volume back; on an unavailable speaker, as soon as it is back. */
  private async putVolume(s: Speaker, volume: number): Promise<void> {
    if (!s.available) {
      const onBack = (available: boolean) => {
        if (!available) return;
        s.off('availability', onBack);
        s.setVolume(volume).catch(() => undefined);
      };
      s.on('availability', onBack);
      return;
    }
    await s.setVolume(volume).catch((e) => this.logger.warn({ deviceId: s.id, err: String(e) }, 'volume not restored'));
  }

  private restored(a: Announcement, id: string): void {
    a.unrestored.delete(id);
    this.maybeDone(a);
  }

  /** Over everywhere and every speaker restored: done, or failed when it played nowhere (with the reason). */
  private maybeDone(a: Announcement): void {
    if (a.phase !== 'waiting_restore' || a.unrestored.size) return;
    const done = endsDone(a.played, a.reason);
    if (!done) a.reason ??= { code: 'never_played' };
    this.move(a, done ? 'restored' : 'unplayed');
    a.restoredAt = this.clock.now();
    this.retire(a);
    this.emit(a, done ? 'restored' : 'failed');
    this.logger.info({ announcement: a.id, state: a.phase }, 'announcement over; speakers restored');
  }

  /** Before it started (its media failed, or stop_play): failed; a lane that waited for it moves on. */
  private cancel(a: Announcement, reason: AnnouncementReason): void {
    this.move(a, 'cancel');
    a.reason = reason;
    a.endedAt = this.clock.now();
    this.logger.warn(
      { announcement: a.id, reason: reasonText(reason), code: reason.code === 'load_failed' ? reason.errorCode : undefined },
      'announcement failed',
    );
    for (const id of a.deviceIds) {
      const lane = this.lanes.get(id);
      if (!lane) continue;
      lane.queue = lane.queue.filter((x) => x !== a);
      // A lane that waited for this one after an earlier announcement is restored at once.
      if (lane.phase === 'between') this.settleLane(lane);
      else if (lane.phase === 'free' && !lane.queue.length) this.lanes.delete(id);
    }
    this.retire(a);
    this.emit(a, 'failed');
    this.pump();
  }

  private retire(a: Announcement): void {
    this.pending.delete(a.id);
    this.history.set(a.id, this.statusOf(a));
    if (this.history.size > this.limits.maxHistory) this.history.delete(this.history.keys().next().value!);
  }

  // ---- state, status and events ------------------------------------------------------------

  private move(a: Announcement, trigger: AnnouncementTrigger): void {
    const from = a.phase;
    transition('announcement', ANNOUNCEMENT_TRANSITIONS, a, trigger);
    this.logger.debug({ announcement: a.id, from, trigger, to: a.phase }, 'announcement state');
  }

  private moveLane(lane: Lane, trigger: LaneTrigger): void {
    transition('lane', LANE_TRANSITIONS, lane, trigger);
  }

  private statusOf(a: Announcement): AnnouncementStatus {
    return {
      id: a.id,
      state: ANNOUNCEMENT_STATE_OF[a.phase],
      deviceIds: [...a.deviceIds],
      priority: a.priority,
      ...(a.volume !== undefined ? { volume: a.volume } : {}),
      mode: a.mode,
      ...(a.modeReason ? { modeReason: a.modeReason } : {}),
      ...(a.reason ? { reason: reasonText(a.reason), reasonCode: a.reason.code } : {}),
      createdAt: a.createdAt,
      ...(a.startedAt !== undefined ? { startedAt: a.startedAt } : {}),
      ...(a.endedAt !== undefined ? { endedAt: a.endedAt } : {}),
      ...(a.restoredAt !== undefined ? { restoredAt: a.restoredAt } : {}),
    };
  }

  private emit(a: Announcement, phase: AnnouncementEvent['phase']): void {
    this.events.emit('announcement', {
      announcementId: a.id,
      phase,
      state: ANNOUNCEMENT_STATE_OF[a.phase],
      deviceIds: [...a.deviceIds],
      priority: a.priority,
      ...(a.reason ? { reason: reasonText(a.reason) } : {}),
    });
  }

  /**
   * Runs a reaction to something outside (a speaker's event, a load, a restore's end): a
   * fault in it (an illegal transition is a bug) is logged, never thrown into a driver's
   * event emitter or left as an unhandled rejection.
   */
  private guard(what: string, fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.fault(what, e);
    }
  }

  private fault(what: string, e: unknown): void {
    this.logger.error({ err: e instanceof Error ? { message: e.message, stack: e.stack } : String(e), what }, 'announcement scheduling fault');
  }
}

/** Higher Priority first, then arrival. */
function order(x: Announcement, y: Announcement): number {
  return y.priority - x.priority || x.seq - y.seq;
}

/**
 * The mode an announcement plays in. Duck needs every target to mix (a driver that produces
 * the speaker's audio, capabilities.duck): the targets start together, so one that cannot
 * makes the whole announcement interrupt, and the reason names the speakers and their
 * drivers (never a silent fallback).
 */
export function modeFor(asked: AnnouncementMode, speakers: Speaker[]): { mode: AnnouncementMode; reason?: string } {
  if (asked !== 'duck') return { mode: asked };
  const ids = speakers.map((s) => s.id);
  // A speaker says why it cannot mix now (Speaker.duckUnavailable) — whether its driver never
  // mixes for a reason worth telling (Squeezebox) or mixes but not in this case (Snapcast).
  const explained: string[] = [];
  const cannot: Speaker[] = [];
  for (const s of speakers) {
    const why = s.duckUnavailable?.(ids);
    if (why) explained.push(`${s.info().name} (${s.driver}): ${why}`);
    else if (!s.capabilities?.duck) cannot.push(s);
  }
  if (!cannot.length && !explained.length) return { mode: 'duck' };
  if (!cannot.length) {
    return {
      mode: 'interrupt',
      reason: `duck cannot mix the announcement into the music here: ${explained.join('; ')}; so the music stops and comes back after`,
    };
  }
  const byDriver = new Map<string, string[]>();
  for (const s of cannot) byDriver.set(s.driver, [...(byDriver.get(s.driver) ?? []), s.info().name]);
  const list = [...byDriver].map(([driver, names]) => `${names.join(', ')} (${driver})`).join('; ');
  const also = explained.length ? `; and ${explained.join('; ')}` : '';
  return {
    mode: 'interrupt',
    reason: `duck needs every target to mix the announcement into its music; the driver of ${list} cannot (it plays the media itself, as a whole)${also}; so the music stops and comes back after`,
  };
}

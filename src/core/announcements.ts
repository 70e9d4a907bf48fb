import { randomBytes } from 'node:crypto';
import { HubError } from './errors';
import type { Clock } from './clock';
import type { HubEventBus } from './events';
import type { OverlayEndReason, PlaybackEngine } from './playback-engine';
import type { SpeakerRegistry } from './speaker-registry';
import type { AnnouncementReason } from './announcement-reasons';
import { OverlayUnavailable, type MediaRequest, type OverlayHandle, type Speaker } from '../drivers/driver';
import { isMuted, mixesOverlays, muteOf } from '../drivers/capabilities';
import type { Logger } from '../logger';
import { AnnouncementLanes } from './announcement-lanes';
import {
  DEFAULT_ANNOUNCEMENT_LIMITS,
  DEFAULT_DUCK_LEVEL,
  DEFAULT_FADE_MS,
  modeFor,
  order,
  type AnnounceRequest,
  type Announcement,
  type AnnouncementLimits,
  type AnnouncementStatus,
  type Lane,
} from './announcement-types';

export {
  DEFAULT_ANNOUNCEMENT_LIMITS,
  DEFAULT_DUCK_LEVEL,
  DEFAULT_FADE_MS,
  modeFor,
  type AnnounceRequest,
  type AnnouncementLimits,
  type AnnouncementMode,
  type AnnouncementStatus,
} from './announcement-types';

/**
 * Announcements: overlays on top of the music playback. An announcement takes its
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
 * Coupling runs one way: this manager uses the PlaybackEngine (reserve a speaker, set it aside
 * from the music, play on it, let it rejoin, release it); the engine holds no reference to announcements. Its one
 * request upwards, "end every overlay" at stop_play and shutdown, is a function this manager
 * hands it (engine.onEndOverlays).
 */
export class AnnouncementManager extends AnnouncementLanes {
  private pumping = false;
  private pumpAgain = false;

  constructor(
    registry: SpeakerRegistry,
    engine: PlaybackEngine,
    clock: Clock,
    events: HubEventBus,
    logger: Logger,
    limits: AnnouncementLimits = DEFAULT_ANNOUNCEMENT_LIMITS,
  ) {
    super(registry, engine, clock, events, logger, limits);
    engine.onEndOverlays((why, ids) => this.stopAll(why, ids));
  }

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
    const mode = modeFor(req.mode ?? 'interrupt', speakers, (s) => mixesOverlays(s, this.registry.driverOf(s)));
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
      overlays: new Map(),
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
          a.media = media.items;
          if (media.later) this.follow(a, media.later);
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
  protected pump(): void {
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

  /**
   * Snapshots what each speaker does before touching it (only the first of a run), sets it aside,
   * sets the announcement's volume. In mode duck a speaker whose driver mixes overlays and
   * that carries playing music is not taken at all: it stays in its playback (kept), and the
   * driver plays the announcement over the music.
   */
  private async take(a: Announcement, usable: Lane[]): Promise<void> {
    // After the taking of an announcement this one cut in on: snapshots and volumes in order.
    await Promise.all(usable.map((l) => l.taking));
    try {
      for (const l of usable) if (a.duck && !l.snapshot && !l.kept && this.engine.mixesOn(l.id)) l.kept = true;
      // An interrupting announcement after (or cutting in on) a kept run takes the speaker after all.
      const fresh = usable.filter((l) => !l.snapshot && !(a.duck && l.kept));
      for (const l of fresh) l.kept = undefined;
      await Promise.all(fresh.map((l) => this.takeSnapshot(l)));
      await this.engine.setAside(
        fresh.map((l) => l.id),
        a.priority,
      );
      // Ducking leaves the speaker's level alone (the music goes on at it); the driver sets the voice's.
      if (a.volume !== undefined && !a.duck) {
        // Never the music louder: a speaker still sounding what it played is silenced before its
        // level goes up for the announcement (AirPlay receivers played a burst of the music at
        // the announcement's level, up to 40 dB above it, before the voice). The announcement
        // replaces that audio anyway, and the restore brings it back.
        const louder = fresh.filter((l) => l.speaker.state === 'playing' && a.volume! > l.speaker.volume);
        await Promise.all(louder.map((l) => l.speaker.stop().catch((e) => this.logger.warn({ deviceId: l.id, err: String(e) }, 'not silenced'))));
        await Promise.all(
          usable.map(async (l) => {
            try {
              const mute = muteOf(l.speaker);
              if (mute && isMuted(l.speaker)) await mute.setMute(false);
              // At that level already (read from the speaker just now, or set by the run's last
              // announcement): no round trip before the play (a UPnP SetVolume is one).
              if ((l.setVolume ?? (fresh.includes(l) ? l.snapshot?.transport?.volume : undefined)) === a.volume) return;
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

  /**
   * Plays the current media item on every speaker still in the announcement: over the music
   * by the driver on kept speakers (mode duck), as a play of its own on the others.
   */
  private async playStep(a: Announcement): Promise<void> {
    const item = a.media![a.step];
    const speakers = [...a.playing].map((id) => this.lanes.get(id)!.speaker);
    if (!item || !speakers.length) return this.endOn(a);
    a.stepDone.clear();
    const media = { url: item.url, contentType: item.contentType, title: item.title, duration: item.duration };
    const duck = a.duck ? { ...a.duck, ...(a.volume !== undefined ? { voiceVolume: a.volume } : {}) } : undefined;
    const mixed = duck ? speakers.filter((s) => this.lanes.get(s.id)?.kept) : [];
    const plain = speakers.filter((s) => !mixed.includes(s));
    const [over, played] = await Promise.all([
      mixed.length ? this.engine.mixOverlay(mixed, { ...media, duck: duck! }) : Promise.resolve([]),
      plain.length ? this.engine.playOverlay(plain, { ...media, startAt: 0, overlay: true }) : Promise.resolve([]),
    ]);
    // Drivers that cannot mix in place here (a Snapcast client sharing its zone's stream with
    // others) still can over a copy of the music: the speaker is taken for it, as without overlays.
    const unmixed = mixed.filter((s, i) => a.playing.has(s.id) && (over[i] as PromiseRejectedResult).reason instanceof OverlayUnavailable);
    const retried = unmixed.length ? await this.takeForOverlay(a, unmixed, { ...media, startAt: 0, overlay: true, duck }) : [];
    const failures: string[] = [];
    const settle = (s: Speaker, r: PromiseSettledResult<unknown>): boolean => {
      // Stopped or cut in while it was starting: a handle the driver gave is stopped at once.
      if (!a.playing.has(s.id)) {
        if (r.status === 'fulfilled' && r.value) (r.value as OverlayHandle).stop().catch(() => undefined);
        return false;
      }
      if (r.status === 'rejected') {
        const msg = r.reason instanceof Error ? r.reason.message : String(r.reason);
        failures.push(`${s.info().name} (${s.id}): ${msg}`);
        this.dropSpeaker(a, s.id, true);
        return false;
      }
      a.played = true;
      return true;
    };
    mixed.forEach((s, i) => {
      const r = over[i];
      if (unmixed.includes(s)) return;
      if (settle(s, r)) this.watchOverlay(a, s, (r as PromiseFulfilledResult<OverlayHandle>).value);
    });
    plain.forEach((s, i) => {
      if (settle(s, played[i])) this.watch(a, s);
    });
    unmixed.forEach((s, i) => {
      if (settle(s, retried[i])) this.watch(a, s);
    });
    if (failures.length) {
      this.logger.warn({ announcement: a.id, failures }, 'announcement could not play on some speakers');
      if (!a.reason && a.playing.size === 0) a.reason = { code: 'play_failed', failures };
    }
    this.checkStep(a);
  }

  /** The fallback for kept speakers whose driver cannot mix in place: taken (snapshot, set aside) and played to. */
  private async takeForOverlay(a: Announcement, speakers: Speaker[], request: MediaRequest): Promise<PromiseSettledResult<void>[]> {
    const lanes = speakers.map((s) => this.lanes.get(s.id)!);
    for (const l of lanes) l.kept = undefined;
    await Promise.all(lanes.map((l) => this.takeSnapshot(l)));
    await this.engine.setAside(
      speakers.map((s) => s.id),
      a.priority,
    );
    return this.engine.playOverlay(speakers, request);
  }

  /** When every speaker of the announcement has finished the item: the next item, or the end. */
  protected checkStep(a: Announcement): void {
    if (a.phase !== 'playing') return;
    if ([...a.playing].some((id) => !a.stepDone.has(id))) return;
    // The next item is still being made (the speech, while the chime played): its arrival comes back here.
    if (a.later && a.step + 1 >= (a.media?.length ?? 0) && a.playing.size > 0) return;
    a.step += 1;
    if (a.step < (a.media?.length ?? 0) && a.playing.size > 0) {
      this.playStep(a).catch((e: unknown) => this.fault('next media item', e));
      return;
    }
    this.endOn(a);
  }

  /** The announcement stops on one speaker: it failed, vanished, was stopped, or cut in on. */
  protected dropSpeaker(a: Announcement, id: string, checkEnd: boolean): void {
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
  protected settleLane(lane: Lane): void {
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
}

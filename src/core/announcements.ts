import { randomBytes } from 'node:crypto';
import { HubError } from './errors';
import type { Clock } from './clock';
import type { AnnouncementEvent, AnnouncementState, HubEventBus } from './events';
import type { OverlayHost, PlaybackEngine, PlayableMedia } from './playback-engine';
import type { SpeakerRegistry } from './speaker-registry';
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
 */

export interface AnnounceRequest {
  /** Loads the announcement's media items in order (chime, speech): synthesis happens here, before any speaker is touched. */
  load: () => Promise<PlayableMedia[]>;
  /** Targets; undefined = every available speaker. */
  deviceIds?: string[];
  /** The level on each target while it announces (0–50); undefined keeps each speaker's own. */
  volume?: number;
  priority: number;
}

export interface AnnouncementStatus {
  id: string;
  state: AnnouncementState;
  deviceIds: string[];
  priority: number;
  volume?: number;
  /** Why it failed, or what interrupted it. */
  reason?: string;
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
  status: AnnouncementStatus;
  seq: number;
  media?: PlayableMedia[];
  /** Set once load() settled. */
  ready: boolean;
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
  interrupted: string[];
  ended: boolean;
  /** At least one speaker started it. */
  played: boolean;
}

interface Lane {
  speaker: Speaker;
  queue: Announcement[];
  current?: Announcement;
  /** Taken before the first announcement of a run; put back after the last. */
  snapshot?: { volume: number; muted?: boolean; member: boolean; transport?: SpeakerSnapshot };
  /** Announcements that played here and wait for this lane's restore. */
  owed: Set<Announcement>;
  restoring?: Promise<void>;
  /** The volume the announcement set (restore only touches a volume the announcement changed). */
  setVolume?: number;
  /** Taken by a run of announcements (from its start until its restore completes). */
  taken: boolean;
}

export class AnnouncementManager implements OverlayHost {
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
    engine.attachOverlays(this);
  }

  /** Media URLs of the announcements not finished yet (queued or playing): the media host keeps them. */
  mediaInUse(): Set<string> {
    const urls = new Set<string>();
    for (const a of this.pending.values()) for (const m of a.media ?? []) urls.add(m.url);
    return urls;
  }

  // ---- OverlayHost ---------------------------------------------------------------------

  busy(speakerId: string): boolean {
    const lane = this.lanes.get(speakerId);
    return !!lane && (lane.taken || !!lane.restoring);
  }

  async stopAll(reason: string): Promise<void> {
    this.stopping = true;
    try {
      // Queued ones first, so that ending the playing ones starts none of them.
      for (const a of [...this.pending.values()]) if (a.status.state === 'queued') this.fail(a, reason);
      for (const a of [...this.pending.values()]) {
        a.status.reason ??= reason;
        this.endOn(a);
      }
      // Volumes and mutes go back; transports stay stopped (stop means silence).
      await Promise.all([...this.lanes.values()].filter((l) => l.taken || l.restoring).map((lane) => this.restoreLane(lane, false)));
    } finally {
      this.stopping = false;
    }
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
    const a: Announcement = {
      status: {
        id: randomBytes(9).toString('base64url'),
        state: 'queued',
        deviceIds: speakers.map((s) => s.id),
        priority: req.priority,
        volume: req.volume,
        createdAt: this.clock.now(),
      },
      seq: ++this.seq,
      ready: false,
      playing: new Set(),
      unrestored: new Set(speakers.map((s) => s.id)),
      unwatch: new Map(),
      step: 0,
      stepDone: new Set(),
      interrupted: [],
      ended: false,
      played: false,
    };
    this.pending.set(a.status.id, a);
    for (const s of speakers) {
      const lane = this.lane(s);
      lane.queue.push(a);
      lane.queue.sort(order);
    }
    this.logger.info({ announcement: a.status.id, speakers: a.status.deviceIds, priority: a.status.priority }, 'announcement queued');
    req.load().then(
      (media) => {
        a.media = media;
        a.ready = true;
        this.pump();
      },
      (e: unknown) => {
        a.ready = true;
        const err = e as { message?: string; code?: string };
        this.fail(a, err.message ?? String(e), err.code);
      },
    );
    return { ...a.status };
  }

  status(id: string): AnnouncementStatus {
    const a = this.pending.get(id);
    if (a) return { ...a.status };
    const done = this.history.get(id);
    if (done) return { ...done };
    throw new HubError('AnnouncementNotFound', `No announcement has AnnouncementID ${id} (or it is too old to be remembered).`, {
      parameter: 'AnnouncementID',
    });
  }

  /** Resolves when nothing is queued, playing or restoring (tests, bench). */
  async idle(): Promise<void> {
    while (this.pending.size || [...this.lanes.values()].some((l) => l.restoring)) {
      await new Promise((r) => setTimeout(r, 10));
    }
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
      lane = { speaker, queue: [], owed: new Set(), taken: false };
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
        const waiting = [...this.pending.values()].filter((a) => a.status.state === 'queued').sort(order);
        for (const a of waiting) {
          if (!a.ready || a.status.state !== 'queued') continue;
          const lanes = a.status.deviceIds.map((id) => this.lanes.get(id)).filter((l): l is Lane => !!l);
          const go = lanes.every((l) => !l.restoring && l.queue[0] === a && (!l.current || l.current.status.priority < a.status.priority));
          if (go) void this.start(a, lanes);
        }
      } while (this.pumpAgain);
    } finally {
      this.pumping = false;
    }
  }

  private async start(a: Announcement, lanes: Lane[]): Promise<void> {
    a.status.state = 'playing';
    a.status.startedAt = this.clock.now();
    for (const lane of lanes) {
      lane.queue.shift();
      if (lane.current) this.cutIn(lane, a);
      lane.current = a;
      lane.taken = true;
    }
    const usable = lanes.filter((l) => l.speaker.available);
    for (const lane of lanes) if (!lane.speaker.available) this.leaveLane(lane, a, 'speaker unavailable');
    try {
      // Snapshot what each speaker does before touching it (only the first of a run).
      const fresh = usable.filter((l) => !l.snapshot);
      await Promise.all(fresh.map((l) => this.takeSnapshot(l)));
      await this.engine.lend(
        fresh.map((l) => l.speaker.id),
        a.status.priority,
      );
      if (a.status.volume !== undefined) {
        await Promise.all(
          usable.map(async (l) => {
            try {
              if (l.speaker.isMuted?.()) await l.speaker.setMute!(false);
              await l.speaker.setVolume(a.status.volume!);
              l.setVolume = a.status.volume;
            } catch (e) {
              this.logger.warn({ deviceId: l.speaker.id, err: String(e) }, 'announcement volume not set');
            }
          }),
        );
      }
    } catch (e) {
      this.logger.warn({ announcement: a.status.id, err: String(e) }, 'announcement could not take its speakers');
    }
    // stop_play (or a failure) may have ended it while its speakers were being taken.
    if (a.ended) return;
    const speakers = usable.filter((l) => l.current === a).map((l) => l.speaker);
    for (const s of speakers) a.playing.add(s.id);
    this.emit(a, 'started');
    this.logger.info({ announcement: a.status.id, speakers: speakers.map((s) => s.id) }, 'announcement playing');
    await this.playStep(a);
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
      this.logger.warn({ announcement: a.status.id, failures }, 'announcement could not play on some speakers');
      if (!a.status.reason && a.playing.size === 0) a.status.reason = `No speaker could play the announcement: ${failures.join('; ')}`;
    }
    this.checkStep(a);
  }

  private watch(a: Announcement, s: Speaker): void {
    a.unwatch.get(s.id)?.();
    const onState = (state: SpeakerPlayState, reason?: StopReason) => {
      if (state !== 'stopped') return;
      if (reason === 'ended') {
        a.unwatch.get(s.id)?.();
        a.unwatch.delete(s.id);
        a.stepDone.add(s.id);
        this.checkStep(a);
      } else {
        this.dropSpeaker(a, s.id, true);
      }
    };
    const onAvailability = (available: boolean) => {
      if (!available) this.dropSpeaker(a, s.id, true);
    };
    s.on('state', onState);
    s.on('availability', onAvailability);
    a.unwatch.set(s.id, () => {
      s.off('state', onState);
      s.off('availability', onAvailability);
    });
  }

  /** When every speaker of the announcement has finished the item: the next item, or the end. */
  private checkStep(a: Announcement): void {
    if (a.ended || a.status.state !== 'playing') return;
    if ([...a.playing].some((id) => !a.stepDone.has(id))) return;
    a.step += 1;
    if (a.step < (a.media?.length ?? 0) && a.playing.size > 0) {
      void this.playStep(a);
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
    old.interrupted.push(lane.speaker.id);
    old.status.reason = `Interrupted by announcement ${by.status.id} (higher Priority) on ${old.interrupted.join(', ')}.`;
    old.unwatch.get(lane.speaker.id)?.();
    old.unwatch.delete(lane.speaker.id);
    old.playing.delete(lane.speaker.id);
    lane.current = undefined;
    lane.owed.add(old);
    if (old.playing.size === 0) this.endOn(old);
    else this.checkStep(old);
  }

  /** The announcement is over on this lane: the next one goes on, or the lane is restored. */
  private leaveLane(lane: Lane, a: Announcement, reason?: string): void {
    if (lane.current === a) lane.current = undefined;
    lane.queue = lane.queue.filter((x) => x !== a);
    a.playing.delete(lane.speaker.id);
    if (reason) this.logger.warn({ announcement: a.status.id, deviceId: lane.speaker.id, reason }, 'speaker left the announcement');
    lane.owed.add(a);
    this.settleLane(lane);
  }

  private settleLane(lane: Lane): void {
    if (lane.current || lane.restoring) return;
    if (lane.queue.length) {
      // Straight on to the next announcement, no restore in between.
      this.pump();
      return;
    }
    void this.restoreLane(lane, !this.stopping);
  }

  private endOn(a: Announcement): void {
    if (a.ended) return;
    a.ended = true;
    for (const id of [...a.playing]) {
      a.unwatch.get(id)?.();
      a.unwatch.delete(id);
      a.playing.delete(id);
    }
    a.status.endedAt = this.clock.now();
    this.emit(a, 'ended');
    for (const id of a.status.deviceIds) {
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
   * the announcement's level), then the music playback, or what another app played.
   */
  private restoreLane(lane: Lane, transport: boolean): Promise<void> {
    if (lane.restoring) return lane.restoring;
    const run = (async () => {
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
    lane.restoring = run.finally(() => {
      lane.restoring = undefined;
      lane.taken = false;
      lane.snapshot = undefined;
      lane.setVolume = undefined;
      const owed = [...lane.owed];
      lane.owed.clear();
      for (const a of owed) this.restored(a, lane.speaker.id);
      if (lane.queue.length || lane.current) this.pump();
      else this.lanes.delete(lane.speaker.id);
    });
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

  /** done = played out and every speaker restored (visible through the API). */
  private maybeDone(a: Announcement): void {
    if (a.unrestored.size || !a.ended || a.status.state === 'done' || a.status.state === 'failed') return;
    // Played nowhere (every target failed or vanished before it started): failed, with the reason.
    a.status.state = a.played || a.status.reason?.includes('stop_play') ? 'done' : 'failed';
    a.status.reason ??= a.played ? undefined : 'No target speaker could play the announcement.';
    if (a.status.reason === undefined) delete a.status.reason;
    a.status.restoredAt = this.clock.now();
    this.retire(a);
    this.emit(a, a.status.state === 'done' ? 'restored' : 'failed');
    this.logger.info({ announcement: a.status.id }, 'announcement done; speakers restored');
  }

  private fail(a: Announcement, reason: string, code?: string): void {
    if (a.status.state === 'done' || a.status.state === 'failed') return;
    a.status.state = 'failed';
    a.status.reason = reason;
    a.ended = true;
    a.status.endedAt = this.clock.now();
    this.logger.warn({ announcement: a.status.id, reason, code }, 'announcement failed');
    for (const id of a.status.deviceIds) {
      const lane = this.lanes.get(id);
      if (!lane) continue;
      lane.queue = lane.queue.filter((x) => x !== a);
      // A lane that waited for this one after an earlier announcement is restored at once.
      if (lane.taken && !lane.current) this.settleLane(lane);
      else if (!lane.taken && !lane.current && !lane.queue.length && !lane.restoring) this.lanes.delete(id);
    }
    this.retire(a);
    this.emit(a, 'failed');
    this.pump();
  }

  private retire(a: Announcement): void {
    this.pending.delete(a.status.id);
    this.history.set(a.status.id, a.status);
    if (this.history.size > this.limits.maxHistory) this.history.delete(this.history.keys().next().value!);
  }

  private emit(a: Announcement, phase: AnnouncementEvent['phase']): void {
    this.events.emit('announcement', {
      announcementId: a.status.id,
      phase,
      state: a.status.state,
      deviceIds: [...a.status.deviceIds],
      priority: a.status.priority,
      ...(a.status.reason ? { reason: a.status.reason } : {}),
    });
  }
}

/** Higher Priority first, then arrival. */
function order(x: Announcement, y: Announcement): number {
  return y.status.priority - x.status.priority || x.seq - y.seq;
}

import type { Clock } from './clock';
import type { AnnouncementEvent, HubEventBus } from './events';
import type { PlayableMedia, PlaybackEngine } from './playback-engine';
import type { SpeakerRegistry } from './speaker-registry';
import {
  ANNOUNCEMENT_STATE_OF,
  ANNOUNCEMENT_TRANSITIONS,
  LANE_TRANSITIONS,
  transition,
  type AnnouncementTrigger,
  type LaneTrigger,
} from './announcement-states';
import { endsDone, reasonText, type AnnouncementReason } from './announcement-reasons';
import type { OverlayEnd, OverlayHandle, Speaker, SpeakerPlayState, SpeakerSnapshot, StopReason } from '../drivers/driver';
import { isMuted, muteOf, snapshotsOf } from '../drivers/capabilities';
import type { Logger } from '../logger';
import type { Announcement, AnnouncementLimits, AnnouncementStatus, Lane } from './announcement-types';

/**
 * The announcements' book (announcements.ts runs the commands and the scheduling): lanes,
 * pending announcements and history; taking a speaker's snapshot and putting it back; the
 * state moves, status and events.
 */
export abstract class AnnouncementLanes {
  protected readonly lanes = new Map<string, Lane>();
  protected readonly pending = new Map<string, Announcement>();
  protected readonly history = new Map<string, AnnouncementStatus>();
  protected seq = 0;
  /** stop_play in progress: lanes get their volume back but not their transport. */
  protected stopping = false;

  constructor(
    protected readonly registry: SpeakerRegistry,
    protected readonly engine: PlaybackEngine,
    protected readonly clock: Clock,
    protected readonly events: HubEventBus,
    protected readonly logger: Logger,
    protected readonly limits: AnnouncementLimits,
  ) {}

  /** Starts every announcement that is first in line on all its speakers (the scheduler's). */
  protected abstract pump(): void;
  /** A lane whose announcement left it: the next one, or the restore (the scheduler's). */
  protected abstract settleLane(lane: Lane): void;
  /** The announcement stops on one speaker (the scheduler's). */
  protected abstract dropSpeaker(a: Announcement, id: string, checkEnd: boolean): void;
  /** When every speaker has finished the item: the next, or the end (the scheduler's). */
  protected abstract checkStep(a: Announcement): void;

  // ---- following what plays -----------------------------------------------------------------

  /** Follows a speaker playing the announcement itself: the end of the media is the step's end there; a stop or a loss drops it. */
  protected watch(a: Announcement, s: Speaker): void {
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
    const unwatch = () => {
      s.off('state', onState);
      s.off('availability', onAvailability);
    };
    a.unwatch.set(s.id, unwatch);
    // A clip that ended on this speaker while others were still starting.
    this.engine.claimEnd(
      s,
      () => a.unwatch.get(s.id) === unwatch,
      (end) => onState('stopped', end.reason),
    );
  }

  /** Follows a driver's overlay on a kept speaker: its end is the step's end there; dropping the speaker stops it. */
  protected watchOverlay(a: Announcement, s: Speaker, handle: OverlayHandle): void {
    a.unwatch.get(s.id)?.();
    a.overlays.set(s.id, handle);
    a.unwatch.set(s.id, () => {
      if (a.overlays.get(s.id) !== handle) return;
      a.overlays.delete(s.id);
      handle.stop().catch((e: unknown) => this.logger.warn({ deviceId: s.id, err: String(e) }, 'overlay not stopped'));
    });
    void handle.ended.then(
      (end: OverlayEnd) =>
        this.guard('overlay ended', () => {
          if (a.overlays.get(s.id) !== handle) return;
          a.overlays.delete(s.id);
          a.unwatch.delete(s.id);
          if (end.reason === 'ended') {
            a.stepDone.add(s.id);
            this.checkStep(a);
          } else {
            if (end.detail) this.logger.warn({ announcement: a.id, deviceId: s.id, reason: end.reason, detail: end.detail }, 'overlay ended early');
            this.dropSpeaker(a, s.id, true);
          }
        }),
      (e: unknown) => this.fault('overlay end', e),
    );
  }

  // ---- snapshot and restore ----------------------------------------------------------------

  protected async takeSnapshot(lane: Lane): Promise<void> {
    const s = lane.speaker;
    const member = this.engine.isMember(s.id);
    let transport: SpeakerSnapshot | undefined;
    // Read from the speaker itself: what another app plays (the hub may not know), and the
    // exact volume and mute in the protocol's own terms.
    const snapshots = snapshotsOf(s);
    if (snapshots) {
      try {
        transport = await snapshots.snapshot();
      } catch (e) {
        this.logger.warn({ deviceId: s.id, err: String(e) }, 'could not read what the speaker plays; it will not be restored');
      }
    }
    lane.snapshot = { volume: transport?.volume ?? s.volume, muted: transport?.muted ?? (muteOf(s) ? isMuted(s) : undefined), member, transport };
  }

  /**
   * Puts a lane's speaker back: volume and mute first (so the music does not come back at
   * the announcement's level), then the music playback, or what another app played (not
   * during stop_play: stop means silence).
   */
  protected restoreLane(lane: Lane): Promise<void> {
    if (lane.restoring) return lane.restoring;
    this.moveLane(lane, 'release');
    const transport = !this.stopping;
    const run = (async () => {
      // The announcement's own taking of the speaker first (a stop_play during its start).
      await lane.taking;
      const s = lane.speaker;
      const snap = lane.snapshot;
      if (!snap && lane.kept) {
        // It stayed in its playback under the driver's overlays: nothing to put back. A play
        // made meanwhile holds it as an idle member (reserved): that one starts on it now.
        await this.engine.rejoin(s.id);
      }
      if (snap) {
        const t = snap.transport;
        const snapshots = snapshotsOf(s);
        const mute = muteOf(s);
        if (t && snapshots && s.available) {
          if (lane.setVolume !== undefined || !!t.muted !== isMuted(s)) {
            await snapshots
              .restore(t, { volumeOnly: true })
              .catch((e) => this.logger.warn({ deviceId: s.id, err: String(e) }, 'volume not restored'));
          }
        } else {
          if (lane.setVolume !== undefined && s.volume !== snap.volume) await this.putVolume(s, snap.volume);
          if (snap.muted && mute && !mute.isMuted())
            await mute.setMute(true).catch((e) => this.logger.warn({ deviceId: s.id, err: String(e) }, 'mute not restored'));
        }
        // The music playback, if the speaker is (still, or now) one of its members.
        const back = await this.engine.rejoin(s.id);
        // What no hub playback holds: the driver puts back what it read (another app's media,
        // a Snapcast client's group and stream); a snapshot of a stopped speaker stops it.
        if (back === 'none' && transport && !snap.member && t && snapshots && s.available) {
          await snapshots
            .restore(t)
            .catch((e) => this.logger.warn({ deviceId: s.id, err: String(e) }, 'what the speaker played could not be restored'));
        } else if (back === 'none' && s.available && (s.state !== 'stopped' || snap.member)) {
          // A member of a zone that ended meanwhile is stopped even when it reads stopped: a
          // ducked speaker reads so while the music it heard under the voice may still play.
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
        lane.kept = undefined;
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
  protected async putVolume(s: Speaker, volume: number): Promise<void> {
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

  protected restored(a: Announcement, id: string): void {
    a.unrestored.delete(id);
    this.maybeDone(a);
  }

  /** Over everywhere and every speaker restored: done, or failed when it played nowhere (with the reason). */
  protected maybeDone(a: Announcement): void {
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
  protected cancel(a: Announcement, reason: AnnouncementReason): void {
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

  protected retire(a: Announcement): void {
    this.pending.delete(a.id);
    this.history.set(a.id, this.statusOf(a));
    if (this.history.size > this.limits.maxHistory) this.history.delete(this.history.keys().next().value!);
  }

  // ---- state, status and events ------------------------------------------------------------

  protected move(a: Announcement, trigger: AnnouncementTrigger): void {
    const from = a.phase;
    transition('announcement', ANNOUNCEMENT_TRANSITIONS, a, trigger);
    this.logger.debug({ announcement: a.id, from, trigger, to: a.phase }, 'announcement state');
  }

  protected moveLane(lane: Lane, trigger: LaneTrigger): void {
    transition('lane', LANE_TRANSITIONS, lane, trigger);
  }

  protected statusOf(a: Announcement): AnnouncementStatus {
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

  protected emit(a: Announcement, phase: AnnouncementEvent['phase']): void {
    this.events.emit('announcement', {
      announcementId: a.id,
      phase,
      state: ANNOUNCEMENT_STATE_OF[a.phase],
      deviceIds: [...a.deviceIds],
      priority: a.priority,
      ...(a.reason ? { reason: reasonText(a.reason) } : {}),
    });
  }

  /** Items made while the first ones play (the speech during the chime): appended, or the announcement fails with the reason. */
  protected follow(a: Announcement, later: Promise<PlayableMedia[]>): void {
    a.later = later;
    const arrived = (items: PlayableMedia[], e?: unknown) =>
      this.guard('load', () => {
        if (a.later !== later) return;
        a.later = undefined;
        if (a.phase !== 'queued' && a.phase !== 'starting' && a.phase !== 'playing') return;
        if (e === undefined) a.media = [...(a.media ?? []), ...items];
        else {
          const err = e as { message?: string; code?: string };
          const reason: AnnouncementReason = { code: 'load_failed', message: err.message ?? String(e), errorCode: err.code };
          if (a.phase === 'queued') return this.cancel(a, reason);
          a.reason ??= reason;
        }
        // A step that waited for them goes on (or, after a failure, the announcement ends).
        this.checkStep(a);
      });
    later.then(
      (items) => arrived(items),
      (e: unknown) => arrived([], e ?? new Error('the media could not be made')),
    );
  }

  /**
   * Runs a reaction to something outside (a speaker's event, a load, a restore's end): a
   * fault in it (an illegal transition is a bug) is logged, never thrown into a driver's
   * event emitter or left as an unhandled rejection.
   */
  protected guard(what: string, fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.fault(what, e);
    }
  }

  protected fault(what: string, e: unknown): void {
    this.logger.error({ err: e instanceof Error ? { message: e.message, stack: e.stack } : String(e), what }, 'announcement scheduling fault');
  }
}

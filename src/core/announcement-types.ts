import type { AnnouncementState } from './events';
import type { PlayableMedia } from './playback-engine';
import type { AnnouncementPhase, LanePhase } from './announcement-states';
import type { AnnouncementReason, AnnouncementReasonCode } from './announcement-reasons';
import type { OverlayHandle, Speaker, SpeakerSnapshot } from '../drivers/driver';

/** What announcements are made of (announcements.ts runs them; announcement-lanes.ts restores). */

/**
 * An announcement's media items in order. `later`: items still being made when the first ones
 * can play (the speech of a new text, synthesized while its chime plays); they follow the
 * others, and the announcement waits for them at the end of its last item in hand.
 */
export interface AnnouncementMedia {
  items: PlayableMedia[];
  later?: Promise<PlayableMedia[]>;
}

export interface AnnounceRequest {
  /** Loads the announcement's media items in order (chime, speech): synthesis starts here, before any speaker is touched. */
  load: () => Promise<AnnouncementMedia>;
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

export interface Announcement {
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
  /** Media items still being made (AnnouncementMedia.later): the step after the last item waits for them. */
  later?: Promise<PlayableMedia[]>;
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
  /** Its overlays that drivers play over the music (mode duck on speakers kept in their playbacks), by speaker. */
  overlays: Map<string, OverlayHandle>;
}

export interface Lane {
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
   * The last announcement's taking of this speaker (snapshot, set aside, volume). The next taking
   * (a cut-in) and the restore wait for it, so that a stop_play or a cut-in during the start
   * cannot have the announcement's volume land after the restore.
   */
  taking?: Promise<void>;
  /** The volume the announcement set (restore only touches a volume the announcement changed). */
  setVolume?: number;
  /**
   * The speaker stayed in its playback, its driver mixing the announcements over the music
   * (mode duck, SpeakerDriver.overlay): nothing was read or taken, so nothing is put back.
   * An interrupting announcement that follows takes it after all (and clears this).
   */
  kept?: boolean;
}

/** Higher Priority first, then arrival. */
export function order(x: Announcement, y: Announcement): number {
  return y.priority - x.priority || x.seq - y.seq;
}

/**
 * The mode an announcement plays in. Duck needs every target to mix (a driver that produces
 * the speaker's audio, capabilities.duck): the targets start together, so one that cannot
 * makes the whole announcement interrupt, and the reason names the speakers and their
 * drivers (never a silent fallback).
 */
export function modeFor(
  asked: AnnouncementMode,
  speakers: Speaker[],
  canMix: (s: Speaker) => boolean = (s) => !!s.capabilities?.duck,
): { mode: AnnouncementMode; reason?: string } {
  if (asked !== 'duck') return { mode: asked };
  const ids = speakers.map((s) => s.id);
  // A speaker says why it cannot mix now (Speaker.duckUnavailable) — whether its driver never
  // mixes for a reason worth telling (Squeezebox) or mixes but not in this case (Snapcast).
  const explained: string[] = [];
  const cannot: Speaker[] = [];
  for (const s of speakers) {
    const why = s.duckUnavailable?.(ids);
    if (why) explained.push(`${s.info().name} (${s.driver}): ${why}`);
    else if (!canMix(s)) cannot.push(s);
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

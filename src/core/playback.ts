import type { TimerHandle } from './clock';
import type { MediaKind, PlaybackEndReason, PlaybackSnapshot, PlaybackState } from './events';
import type { Speaker } from '../drivers/driver';
import { redactUrl } from '../redact';

/**
 * One playback (a zone): a set of speakers playing one media item in sync, with its own
 * state, position and priority. Many run at once; a speaker is a member of one at most.
 */

/** Where a play goes: given speakers (a session's selection or a DeviceIDList), or every speaker. */
export type Target = { kind: 'party' } | { kind: 'session' | 'selected'; deviceIds: string[] };

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

export interface Playback {
  /** Stable while the playback lives: "pb-<n>", handed to clients (playback_list, events). */
  id: string;
  /** Who started it: the starting session's public label, if a session did. */
  owner?: string;
  media: PlayableMedia;
  priority: number;
  target: Target['kind'];
  state: Exclude<PlaybackState, 'PlayerStateStopped'>;
  /** Speakers carrying the playback now, with the listener that watches each. */
  speakers: Map<string, { speaker: Speaker; unwatch: () => void }>;
  /**
   * Members that do not carry the media now: set aside for an overlay (an announcement), or
   * parked (the overlay let them rejoin while the playback was paused). They start when they
   * rejoin / on resume.
   */
  idle: Map<string, Speaker>;
  /** Pending end-of-media settlement (the first speaker reported the end). */
  ending?: TimerHandle;
  /** Seconds banked before the last (re)start. */
  offset: number;
  /** Clock ms of the last (re)start. */
  startedAt: number;
  /** Wall-clock time the play was asked for (ISO 8601), for listings. */
  since: string;
  tick?: TimerHandle;
}

export function members(p: Playback): string[] {
  return [...p.speakers.keys(), ...p.idle.keys()];
}

export function hasMember(p: Playback, id: string): boolean {
  return p.speakers.has(id) || p.idle.has(id);
}

export function isEmpty(p: Playback): boolean {
  return p.speakers.size === 0 && p.idle.size === 0;
}

/** Seconds from the start of the media, capped at its length. */
export function elapsed(p: Playback, now: number): number {
  const running = p.state === 'PlayerStatePlaying' ? (now - p.startedAt) / 1000 : 0;
  const t = p.offset + running;
  return p.media.duration !== undefined ? Math.min(t, p.media.duration) : t;
}

/** Where a speaker joining now starts: the current position, or the live edge of a web stream. */
export function rejoinAt(p: Playback, now: number): number {
  return p.media.kind === 'web' && p.media.duration === undefined ? 0 : elapsed(p, now);
}

/** What front ends see of a playback (events, listings); no playback: Stopped, -1. */
export function snapshotOf(p: Playback | undefined, now: number, reason?: PlaybackEndReason): PlaybackSnapshot {
  if (!p) return { state: 'PlayerStateStopped', timeElapsed: -1, deviceIds: [], ...(reason ? { reason } : {}) };
  const stopped = reason !== undefined;
  return {
    playbackId: p.id,
    state: stopped ? 'PlayerStateStopped' : p.state,
    timeElapsed: stopped ? -1 : Math.floor(elapsed(p, now)),
    kind: p.media.kind,
    persistentId: p.media.persistentId,
    // Events go to every front end and its logs: the URL without its secrets.
    url: p.media.kind === 'web' ? redactUrl(p.media.url) : undefined,
    title: p.media.title,
    priority: p.priority,
    deviceIds: members(p),
    ...(p.owner ? { owner: p.owner } : {}),
    since: p.since,
    ...(reason ? { reason } : {}),
  };
}

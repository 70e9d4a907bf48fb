import type { AnnouncementState } from './events';

/**
 * The announcement lifecycle as two small state machines: one per announcement, one per
 * speaker lane. Every state change goes through `transition()`, which only allows what the
 * tables below list and throws AnnouncementStateError on anything else, so a scheduling bug
 * shows as a typed error (in the tests, and in the log) instead of a silently odd state.
 *
 * Announcement:
 *
 *   loading ─loaded─▶ queued ─start─▶ starting ─speak─▶ playing
 *      │                │                 │                │
 *    cancel           cancel             end              end
 *      ▼                ▼                 ▼                ▼
 *    failed           failed        waiting_restore ◀──────┘
 *                                     │          │
 *                                  restored   unplayed
 *                                     ▼          ▼
 *                                   done       failed
 *
 * - loading: accepted; its media (TTS) is being prepared; no speaker touched.
 * - queued: ready, waiting to be first in line on every one of its speakers.
 * - starting: taking its speakers (snapshot, setting them aside from the music, its volume).
 * - playing: speaking on the speakers it still has.
 * - waiting_restore: finished on every speaker (played out, stopped, interrupted, or every
 *   speaker dropped out), but not every speaker has been put back yet: the restore runs, or
 *   waits behind announcements queued on the same speaker (one restore after the last).
 * - done: every speaker restored after it played (or stop_play ended it).
 * - failed: it never played anywhere, or was cancelled before it started.
 */
export type AnnouncementPhase = 'loading' | 'queued' | 'starting' | 'playing' | 'waiting_restore' | 'done' | 'failed';

export type AnnouncementTrigger =
  /** load() resolved with the media. */
  | 'loaded'
  /** load() failed, or stop_play/shutdown came before it started. */
  | 'cancel'
  /** First in line on all its speakers (or cutting in): it takes them. */
  | 'start'
  /** Its speakers are taken: the first media item goes out. */
  | 'speak'
  /** Over on every speaker. */
  | 'end'
  /** Every speaker restored, and it played (or was stopped by stop_play): done. */
  | 'restored'
  /** Every speaker restored, but it never played anywhere: failed. */
  | 'unplayed';

export const ANNOUNCEMENT_TRANSITIONS: Readonly<Record<AnnouncementPhase, Partial<Record<AnnouncementTrigger, AnnouncementPhase>>>> = {
  loading: { loaded: 'queued', cancel: 'failed' },
  queued: { start: 'starting', cancel: 'failed' },
  starting: { speak: 'playing', end: 'waiting_restore' },
  playing: { end: 'waiting_restore' },
  waiting_restore: { restored: 'done', unplayed: 'failed' },
  done: {},
  failed: {},
};

/** What announcement_status and the events show (the wire vocabulary). */
export const ANNOUNCEMENT_STATE_OF: Readonly<Record<AnnouncementPhase, AnnouncementState>> = {
  loading: 'queued',
  queued: 'queued',
  starting: 'playing',
  playing: 'playing',
  waiting_restore: 'waiting_restore',
  done: 'done',
  failed: 'failed',
};

/**
 * A speaker lane (one per speaker that has announcements):
 *
 *   free ──take──▶ announcing ──handover──▶ between ──take──▶ announcing
 *                   │    ▲ take (cut-in)       │
 *                   │    └─────┘               │
 *                   └──────release──▶ restoring ◀──release──┘
 *                                        │
 *                   free ◀──restored─────┘
 *
 * - free: not taken; announcements may wait in its queue (still loading, or waiting for
 *   other speakers).
 * - announcing: taken, an announcement plays on it (`current`).
 * - between: taken, the last one is over here and the next queued one has not started yet
 *   (waits for its other speakers or its media): no restore in between.
 * - restoring: its speaker is being put back (volume, mute, music or what it played).
 * From `take` on the speaker is reserved in the playback engine (no music starts on it);
 * the reservation ends when the restore lets it rejoin the music, or at the restore's end.
 */
export type LanePhase = 'free' | 'announcing' | 'between' | 'restoring';

export type LaneTrigger = 'take' | 'handover' | 'release' | 'restored';

export const LANE_TRANSITIONS: Readonly<Record<LanePhase, Partial<Record<LaneTrigger, LanePhase>>>> = {
  free: { take: 'announcing' },
  announcing: { take: 'announcing', handover: 'between', release: 'restoring' },
  between: { take: 'announcing', release: 'restoring' },
  restoring: { restored: 'free' },
};

/** An illegal transition: a bug in the scheduling, never a user error. */
export class AnnouncementStateError extends Error {
  readonly code = 'AnnouncementStateError';
  constructor(
    readonly machine: 'announcement' | 'lane',
    readonly subject: string,
    readonly from: string,
    readonly trigger: string,
  ) {
    super(`Illegal ${machine} transition for ${subject}: '${trigger}' in state '${from}'.`);
    this.name = 'AnnouncementStateError';
  }
}

/** The state a trigger leads to from `from`, or undefined when the table has no such transition. */
export function nextPhase<P extends string, T extends string>(table: Readonly<Record<P, Partial<Record<T, P>>>>, from: P, trigger: T): P | undefined {
  return table[from][trigger];
}

/** Moves `subject` along `table`; throws AnnouncementStateError when the transition is not in it. */
export function transition<P extends string, T extends string>(
  machine: 'announcement' | 'lane',
  table: Readonly<Record<P, Partial<Record<T, P>>>>,
  subject: { id: string; phase: P },
  trigger: T,
): P {
  const to = nextPhase(table, subject.phase, trigger);
  if (to === undefined) throw new AnnouncementStateError(machine, subject.id, subject.phase, trigger);
  subject.phase = to;
  return to;
}

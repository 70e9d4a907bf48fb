/**
 * What one hub-fed snapserver stream is doing, as an explicit phase. A HubStream multiplexes
 * several modes (plain music, a pause, an announcement on the stream holding the music of the
 * other clients, a ducked announcement mixed into the music, the drain after the end of the
 * media); the phase names which one holds now, and every change of it is checked against
 * the table below, so a mode mix-up shows in the log as an illegal transition instead of
 * passing silently. The zone pool (zone-pool.ts) hands out only 'free' streams.
 *
 *            ┌──────────────────────────────────────────────┐
 *            ▼                                              │
 *   free ─▶ starting ─▶ playing ◀─▶ paused                  │
 *     │        │          │  ▲                              │ (stop, end, failure,
 *     │        │          ▼  │                              │  lost connection)
 *     │        │        ducking          ending ◀── playing/ducking/announcing
 *     │        ▼                                            │
 *     └──▶ announcing ◀─▶ holding ─▶ starting/playing/paused ┘
 *
 * - free: nothing fed, no member, nothing held: the stream belongs to no zone.
 * - starting: a decode is starting; its members are not on the stream yet.
 * - playing: a zone's music is fed; its playing members are in the stream's group.
 * - paused: members, none playing: no feed; resume restarts the decode where it stopped.
 * - ducking: the music is fed with an announcement mixed in (or a play waits for that mix).
 * - announcing: an announcement (overlay) is fed and no music is held behind it.
 * - holding: music is held (its members parked, keeping time) while an announcement has
 *   the stream, or waits to be started again once it is over.
 * - ending: the feed reached the end of its media; snapserver's buffer is still playing out.
 */
export type StreamPhase = 'free' | 'starting' | 'playing' | 'paused' | 'ducking' | 'announcing' | 'holding' | 'ending';

const ALL: readonly StreamPhase[] = ['free', 'starting', 'playing', 'paused', 'ducking', 'announcing', 'holding', 'ending'];
const except = (...no: StreamPhase[]): StreamPhase[] => ALL.filter((p) => !no.includes(p));

/**
 * The phases each phase may change to, as observed after every command or event has run.
 * Starts are observed from wherever a new play may replace what plays; what is not listed is
 * a bug (a mode left half set up): free never goes straight to ducking or ending (a mix and
 * an end need a feed), paused never to ending (no feed runs), and nothing ducks while an
 * announcement holds the music or while no music plays.
 */
export const STREAM_TRANSITIONS: Readonly<Record<StreamPhase, readonly StreamPhase[]>> = {
  free: ['starting', 'playing', 'paused', 'announcing', 'holding'],
  starting: except('starting', 'ducking', 'ending'),
  playing: except('playing'),
  paused: except('paused', 'ducking', 'ending'),
  ducking: except('ducking', 'holding'),
  announcing: except('announcing', 'ducking'),
  holding: except('holding', 'ducking'),
  ending: except('ending', 'ducking'),
};

/** An illegal phase change: a bug in the stream's bookkeeping, never a user error. */
export class StreamPhaseError extends Error {
  readonly code = 'StreamPhaseError';
  constructor(
    readonly stream: string,
    readonly from: StreamPhase,
    readonly to: StreamPhase,
  ) {
    super(`Illegal phase change of snapserver stream '${stream}': ${from} → ${to}.`);
    this.name = 'StreamPhaseError';
  }
}

/** Checks a phase change against STREAM_TRANSITIONS; staying in a phase is always allowed. */
export function checkPhaseChange(stream: string, from: StreamPhase, to: StreamPhase): void {
  if (from === to) return;
  if (!STREAM_TRANSITIONS[from].includes(to)) throw new StreamPhaseError(stream, from, to);
}

/** What a stream holds, as far as its phase goes (see HubStream.phase). */
export interface PhaseFacts {
  members: number;
  pending: boolean;
  feedRunning: boolean;
  /** The fed media is an overlay (an announcement). */
  overlay: boolean;
  ending: boolean;
  held: boolean;
  /** A ducked announcement is mixed into the music, or a play waits for one. */
  ducking: boolean;
}

/** The phase these facts add up to (the modes are checked from the most specific down). */
export function phaseOf(f: PhaseFacts): StreamPhase {
  if (f.pending) return 'starting';
  if (f.held) return 'holding';
  if (f.ending) return 'ending';
  if (f.feedRunning) {
    if (f.ducking) return 'ducking';
    return f.overlay ? 'announcing' : 'playing';
  }
  if (f.members > 0) return 'paused';
  return 'free';
}

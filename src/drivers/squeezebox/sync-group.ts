import type { MediaRequest } from '../driver';
import { hubMs } from './connection';

export type GroupState = 'starting' | 'playing' | 'paused' | 'ended';

/**
 * One play shared by one or more players, on one timeline: `anchor` is the hub time at which
 * the media position `startAt` is heard (every member's start is planned against it), so a
 * member that joins later, or drifts, is placed by the same rule. Pausing moves the anchor.
 */
export class SyncGroup {
  state: GroupState = 'starting';
  /** Hub ms at which media position startAt plays (set when the start moment is agreed). */
  anchor = 0;
  private pausedPosition = 0;
  /** The agreed moment of a resume in progress (members resumed together get the same one). */
  resumeAt?: number;
  readonly members = new Set<unknown>();

  constructor(
    readonly media: MediaRequest,
    readonly startAt: number,
  ) {}

  /** The zone (PlaybackID) this group plays for; undefined for an overlay's group. */
  get zone(): string | undefined {
    return this.media.zone;
  }

  get url(): string {
    return this.media.url;
  }

  /** Seconds into the media heard at hub time `at` (now by default). */
  position(at = hubMs()): number {
    if (this.state === 'paused' || this.state === 'ended') return this.pausedPosition;
    if (this.state === 'starting' || !this.anchor) return this.startAt;
    return Math.max(this.startAt, this.startAt + (at - this.anchor) / 1000);
  }

  begin(anchor: number): void {
    this.anchor = anchor;
    this.state = 'playing';
  }

  /** Hub time at which a member whose stream starts at media `offset` must start playing. */
  startTimeFor(offset: number): number {
    return this.anchor + (offset - this.startAt) * 1000;
  }

  pause(): void {
    if (this.state !== 'playing') return;
    this.pausedPosition = this.position();
    this.state = 'paused';
    this.resumeAt = undefined;
  }

  /**
   * The moment members resumed now start again: a resume of several members (the core resumes
   * each speaker) shares one moment, on a 100 ms grid `leadMs` ahead.
   */
  resume(leadMs: number): number {
    const now = hubMs();
    if (this.state === 'playing' && this.resumeAt !== undefined && this.resumeAt > now + 20) return this.resumeAt;
    if (this.state !== 'paused') return now;
    const at = Math.ceil((now + leadMs) / 100) * 100;
    this.anchor = at - (this.pausedPosition - this.startAt) * 1000;
    this.state = 'playing';
    this.resumeAt = at;
    return at;
  }

  end(): void {
    if (this.state === 'ended') return;
    this.pausedPosition = this.position();
    this.state = 'ended';
  }
}

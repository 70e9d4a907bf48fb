import { HubError } from './errors';
import type { SpeakerRegistry } from './speaker-registry';
import type { PlayableMedia } from './playback';
import { syncClockMs, type MediaRequest, type Speaker, type SpeakerDriver, type SpeakerPlayState, type StopReason } from '../drivers/driver';
import type { Logger } from '../logger';

/** A 'stopped' a speaker reported after its play had resolved. */
export interface EarlyEnd {
  reason?: StopReason;
  detail?: string;
}

interface EndCatch {
  listen: (state: SpeakerPlayState, reason?: StopReason, detail?: string) => void;
  end?: EarlyEnd;
}

interface Starting {
  speakers: Speaker[];
  cancelled: boolean;
  /** Priority of the play being started; undefined for joins and rejoins, which are never cancelled by a play. */
  priority?: number;
}

/**
 * Starts media on speakers for the playback engine: in parallel, grouped by driver where a
 * driver starts its speakers in sync, on one start instant where families mix. Keeps the
 * starts in flight (several zones may be starting at once) so that a stronger play or
 * stop_play on the same speakers can cancel one that hangs (a web URL that never answers).
 */
export class SpeakerStarter {
  private readonly starting = new Set<Starting>();
  /**
   * Speakers whose play resolved and whose owner (a playback, an announcement) does not follow
   * them yet: it starts following only once every speaker of the start has settled, and a short
   * clip can end on one speaker while another is still starting (MPD reports a clip its output
   * took whole as over within ms). Such an end is kept here for claimEnd(), so it is not lost.
   * One entry per speaker at most: the next play on it replaces it.
   */
  private readonly ends = new Map<Speaker, EndCatch>();

  constructor(
    private readonly registry: SpeakerRegistry,
    private readonly logger: Logger,
  ) {}

  /**
   * Starts media on speakers. Returns those that started; throws PlaybackFailed when none did
   * (unless `lenient`, for speakers joining a playback that goes on anyway) or when the start
   * was cancelled.
   */
  async start(zone: string, speakers: Speaker[], media: PlayableMedia, startAt: number, lenient = false, priority?: number): Promise<Speaker[]> {
    const starting: Starting = { speakers, cancelled: false, priority };
    this.starting.add(starting);
    const request = { url: media.url, contentType: media.contentType, title: media.title, duration: media.duration, startAt, zone };
    let results: PromiseSettledResult<void>[];
    try {
      results = await this.playAll(speakers, request);
    } finally {
      this.starting.delete(starting);
    }
    const started = speakers.filter((_, i) => results[i].status === 'fulfilled');
    const failures = this.logFailures(
      'play',
      speakers.map((s) => s.id),
      results,
    );
    if (starting.cancelled) {
      for (const s of started) s.stop().catch(() => undefined);
      throw new HubError('PlaybackFailed', 'The playback was stopped before it started.');
    }
    if (!started.length && !lenient) {
      throw new HubError('PlaybackFailed', `No target speaker could play the media: ${failures.join('; ')}`);
    }
    return started;
  }

  /** Whether a start is in flight on any of these speakers. */
  startingOn(ids: ReadonlySet<string>): boolean {
    for (const s of this.starting) if (s.speakers.some((sp) => ids.has(sp.id))) return true;
    return false;
  }

  /**
   * Cancels the starts in flight on `ids` (every start when ids is undefined) whose priority
   * `priority` reaches (stop_play passes Infinity, which also cancels joins and resumes): their
   * speakers are stopped, which makes their pending starts fail at once.
   */
  cancel(priority: number, ids?: ReadonlySet<string>): void {
    for (const s of this.starting) {
      if (s.cancelled || (priority !== Infinity && (s.priority === undefined || priority < s.priority))) continue;
      if (ids && !s.speakers.some((sp) => ids.has(sp.id))) continue;
      s.cancelled = true;
      this.logger.info({ speakers: s.speakers.map((x) => x.id), priority: s.priority }, 'cancelling a play still starting');
      for (const sp of s.speakers) sp.stop().catch(() => undefined);
    }
  }

  /** Plays on every speaker at once; drivers that can start a group together do so. */
  async playAll(speakers: Speaker[], request: MediaRequest): Promise<PromiseSettledResult<void>[]> {
    const byDriver = this.registry.byDriver(speakers, (d) => !!d.playGroup);
    const timed = agreeStartInstant(byDriver, request);
    const settled = new Map<Speaker, PromiseSettledResult<void>>();
    await Promise.all(
      [...byDriver].map(async ([driver, group]) => {
        for (const s of group) this.release(s);
        const results = driver
          ? await driver.playGroup!(group, driver.startLeadMs ? timed : request)
          : await Promise.allSettled(group.map((s) => s.play(request).then(() => this.catchEnd(s))));
        group.forEach((s, i) => {
          settled.set(s, results[i]);
          if (driver && results[i].status === 'fulfilled') this.catchEnd(s);
        });
      }),
    );
    return speakers.map((s) => settled.get(s)!);
  }

  /**
   * For the owner (a playback, an announcement) that starts following a speaker now: stops
   * keeping its end (from here on the owner's own listener hears it), and hands an end it
   * reported since its play resolved to `onEnd` once the caller has finished setting up (a
   * microtask later), if the owner still follows it then.
   */
  claimEnd(s: Speaker, stillFollowed: () => boolean, onEnd: (end: EarlyEnd) => void): void {
    const end = this.ends.get(s)?.end;
    this.release(s);
    if (end)
      queueMicrotask(() => {
        if (stillFollowed()) onEnd(end);
      });
  }

  private catchEnd(s: Speaker): void {
    this.release(s);
    const c: EndCatch = {
      listen: (state, reason, detail) => {
        if (state !== 'stopped') return;
        c.end = { reason, detail };
        s.off('state', c.listen);
      },
    };
    s.on('state', c.listen);
    this.ends.set(s, c);
  }

  private release(s: Speaker): void {
    const c = this.ends.get(s);
    if (!c) return;
    s.off('state', c.listen);
    this.ends.delete(s);
  }

  logFailures(what: string, ids: string[], results: PromiseSettledResult<unknown>[]): string[] {
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

/**
 * One start instant for a play that spans several drivers that each start their speakers in
 * sync (their startLeadMs): the latest lead any of them needs from now, so the families are
 * heard together rather than each when its own protocol is ready.
 */
function agreeStartInstant(byDriver: Map<SpeakerDriver | undefined, Speaker[]>, request: MediaRequest): MediaRequest {
  const timed = [...byDriver].filter(([d]) => d?.startLeadMs);
  if (timed.length < 2 || request.startInstant !== undefined) return request;
  const lead = Math.max(...timed.map(([d, group]) => d!.startLeadMs!(group)));
  return { ...request, startInstant: syncClockMs() + lead };
}

import { HubError } from './errors';
import type { HubEventBus } from './events';
import type { PlaybackEngine } from './playback-engine';
import type { SpeakerRegistry } from './speaker-registry';

/** What the hub keeps of one session beyond its token: its playback session and its last play. */
interface Scope {
  /** The playback session: speakers selected for session-target plays (spec: "the session holds" them). */
  selected: Set<string>;
  /** The playback this session started last (it may have ended since). */
  playback?: string;
  /** The speakers that play targeted. */
  played: string[];
}

/** Scopes kept beyond the live sessions before a prune (closed and expired sessions' are dropped then). */
const PRUNE_SLACK = 256;

/**
 * Sessions and zones. Each session holds its own playback session (the speakers it
 * selected), so two clients selecting two rooms play two zones. Which playback a session's
 * pause_play, resume_hub_media*, stop_play, playback_status and is_playing act on:
 *
 * 1. the playback the session started last, while it lives (on whatever speakers it has left);
 * 2. else the most recently started playback on the session's speakers (those it selected,
 *    and those its last play targeted);
 * 3. else, for a session that has no speakers of its own (it never selected nor played:
 *    a client that only watches or stops), the most recently started playback of the hub,
 *    which is what the original hub's one playback was to such a client.
 *
 * Kept in memory only (the spec: when the hub starts no speaker is selected), bounded by the
 * session table (scopes of sessions gone are pruned).
 */
export class SessionScopes {
  private readonly scopes = new Map<string, Scope>();
  /** Size at which the next prune runs (doubling: amortised O(1) per new scope). */
  private pruneAt = PRUNE_SLACK;

  constructor(
    private readonly registry: SpeakerRegistry,
    private readonly engine: PlaybackEngine,
    private readonly events: HubEventBus,
    /** Whether a session key is still in the session table. */
    private readonly live: (key: string) => boolean,
  ) {}

  /** A session's public name (events, playback listings): a prefix of its key, which is the token's SHA-256, never the token. */
  static label(key: string): string {
    return `s-${key.slice(0, 10)}`;
  }

  selection(key: string): string[] {
    return [...(this.scopes.get(key)?.selected ?? [])];
  }

  add(key: string, id: string): void {
    const speaker = this.registry.get(id);
    if (!speaker.available) throw new HubError('DeviceUnavailable', `Speaker ${id} is not available.`, { parameter: 'DeviceID' });
    const scope = this.scope(key);
    if (scope.selected.has(id)) return;
    scope.selected.add(id);
    this.changed(key, scope);
  }

  remove(key: string, id: string): void {
    this.registry.get(id);
    const scope = this.scopes.get(key);
    if (scope?.selected.delete(id)) this.changed(key, scope);
  }

  /** Adds every available speaker; returns the ones that were not selected before. */
  addAll(key: string): string[] {
    const scope = this.scope(key);
    const added = this.registry
      .available()
      .map((s) => s.id)
      .filter((id) => !scope.selected.has(id));
    for (const id of added) scope.selected.add(id);
    if (added.length) this.changed(key, scope);
    return added;
  }

  /** The session started this playback on these speakers. */
  played(key: string, playbackId: string, deviceIds: string[]): void {
    const scope = this.scope(key);
    scope.playback = playbackId;
    scope.played = deviceIds;
  }

  /** The speakers that are this session's own: selected, or targeted by its last play. Empty: rule 3 applies. */
  area(key: string): string[] {
    const scope = this.scopes.get(key);
    if (!scope) return [];
    return [...new Set([...scope.selected, ...scope.played])];
  }

  /** The playback the session's transport and status operations act on (rules above), if any. */
  playbackFor(key: string | undefined): string | undefined {
    if (key === undefined) return this.engine.latest();
    const scope = this.scopes.get(key);
    if (scope?.playback !== undefined && this.engine.has(scope.playback)) return scope.playback;
    const area = scope ? this.area(key) : [];
    if (!area.length) return this.engine.latest();
    let best: string | undefined;
    for (const id of area) {
      const pb = this.engine.playbackOf(id);
      if (pb !== undefined && (best === undefined || order(pb) > order(best))) best = pb;
    }
    return best;
  }

  /** A closed session's scope goes with it. */
  forget(key: string): void {
    this.scopes.delete(key);
  }

  private scope(key: string): Scope {
    let scope = this.scopes.get(key);
    if (!scope) {
      if (this.scopes.size >= this.pruneAt) {
        for (const k of this.scopes.keys()) if (!this.live(k)) this.scopes.delete(k);
        this.pruneAt = this.scopes.size * 2 + PRUNE_SLACK;
      }
      scope = { selected: new Set(), played: [] };
      this.scopes.set(key, scope);
    }
    return scope;
  }

  private changed(key: string, scope: Scope): void {
    this.events.emit('selection', { deviceIds: [...scope.selected], session: SessionScopes.label(key) });
  }
}

/** Start order of a playback id ("pb-<n>"). */
function order(id: string): number {
  return Number(id.slice(3));
}

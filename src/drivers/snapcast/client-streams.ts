import type { Logger } from '../../logger';
import type { ResolvedServerConfig } from './config';
import type { ServerModel } from './model';
import { SOURCE_CHUNK_MS } from './in-step';
import { streamSource } from './stream-source';

/**
 * Beyond the PCM a closed connection still held by the hub's clock: snapserver may read behind it
 * (each re-sync of a stream sets its reading that much later; a few ms to tens of ms are logged
 * on a busy machine).
 */
const DRAIN_MARGIN_MS = 40;

/** What a zone stream tells the pool when it regroups (StreamCore.reconcile). */
export interface RouteAsk {
  /** Every client of the zone's music, playing or paused. */
  members: ReadonlySet<string>;
  /** The clients that hear it now, in the order the zone has them. */
  listening: readonly string[];
  /** Whether the client's group sits on the zone's own stream now: it is not moved off it mid-play. */
  onZoneStream(clientId: string): boolean;
  /** The zone stream's sample format (snapserver's `sampleformat`): a client stream must have the same. */
  format: string;
  /**
   * Whether the zone's feed is about to start (not handed over yet): client streams are given
   * out only then, when every stream of the zone starts together. A client joining a running
   * feed goes on the zone's own stream: a client stream started late was measured 10-27 ms off
   * the zone's (more the longer the zone had played), one on the zone's stream is exact.
   */
  starting: boolean;
}

/**
 * The client streams of one snapserver (snapcast.clientStreams, issue 30): hub-fed streams that
 * give a client of a zone a stream of its own, fed the zone's PCM in step (Feed.follow), so
 * that an announcement ducked on some of a zone's clients is mixed in place on their streams
 * alone. snapserver 0.26 cannot add streams at run time: the pool is what snapserver.conf
 * declares of the list, apart from the zone pool so that zones never compete with it.
 *
 * Assignment, per zone stream (an owner), when its feed starts (a play, a resume, a seek, the
 * next media: every stream of the zone starts together, in step): while two or more of its
 * listening clients have no client stream, the one already on the zone stream (else the first)
 * stays there and each other one not on it yet takes a free client stream; a client already on
 * the zone stream is never moved mid-play (a move costs a snapclient ~0.9 s of audio). A client
 * keeps its client stream while it listens (all paused together too); it is given back when it
 * leaves the zone, is paused alone, or the zone ends, and a client joining a running feed goes
 * on the zone's stream (RouteAsk.starting).
 * Bounded by the declared streams: one client each.
 */
export class ClientStreamPool {
  /** client id → its client stream and the zone stream (owner) that gave it. */
  private readonly byClient = new Map<string, { owner: object; stream: string }>();
  private readonly warned = new Set<string>();
  /**
   * Per stream fed before (client streams and zone streams): when snapserver will have read its
   * last connection out by the hub's clock (performance clock, ms; it may read later, never
   * sooner), and the feed that connection carried.
   */
  private readonly lastClose = new Map<string, { end: number; feed: object }>();

  constructor(
    private readonly server: ResolvedServerConfig,
    private readonly model: ServerModel,
    private readonly log: Logger,
  ) {}

  /** Whether the id is one of the client streams (declared or not). */
  isClientStream(id: string): boolean {
    return this.server.clientStreams.includes(id);
  }

  /** The client streams snapserver declares now. */
  declared(): string[] {
    return this.server.clientStreams.filter((id) => this.model.streams.has(id));
  }

  /** The client stream a client is on, if any (whoever's zone it is in). */
  streamOf(clientId: string): string | undefined {
    return this.byClient.get(clientId)?.stream;
  }

  /** Client id → client stream for `owner`'s listening clients, after giving back those of clients no longer its members. */
  routes(owner: object, ask: RouteAsk): Map<string, string> {
    // A client that stopped listening (left the zone, paused alone) gives its stream back: it comes back on the zone's stream.
    const listening = new Set(ask.listening);
    for (const [id, r] of this.byClient) {
      if (r.owner === owner && !listening.has(id)) this.giveBack(id, r.stream);
    }
    const out = new Map<string, string>();
    for (const id of ask.members) {
      const r = this.byClient.get(id);
      if (!r) continue;
      // It came over from another zone whose stream has not regrouped yet: its client stream comes with it.
      if (r.owner !== owner) r.owner = owner;
      out.set(id, r.stream);
    }
    const unrouted = ask.listening.filter((id) => !out.has(id));
    if (!ask.starting || unrouted.length < 2) return out;
    const stays = unrouted.find((id) => ask.onZoneStream(id)) ?? unrouted[0];
    for (const id of unrouted) {
      if (id === stays || ask.onZoneStream(id)) continue;
      const free = this.free(ask.format);
      if (!free) break;
      this.byClient.set(id, { owner, stream: free });
      out.set(id, free);
      this.log.info({ clientId: id, stream: free }, 'client takes a client stream of its own (its zone is fed to it in step)');
    }
    return out;
  }

  /**
   * A connection to a stream's source closed with `unreadMs` of PCM in it: snapserver reads
   * that out at its pace and only then takes the next connection, whose first PCM it stamps
   * with the moment it reads it. A feed that must be in step waits for readyAt(). Bounded by
   * the streams of the server.
   */
  closed(stream: string, unreadMs: number, feed: object): void {
    this.lastClose.set(stream, { end: performance.now() + unreadMs, feed });
  }

  /** When snapserver reads a new connection to the stream as soon as PCM arrives (performance clock, ms). */
  readyAt(stream: string): number {
    const c = this.lastClose.get(stream);
    return c ? c.end + DRAIN_MARGIN_MS : 0;
  }

  /**
   * Whether a feed handed over now to every one of `streams` takes up each stream's time where
   * its last connection leaves it, in step as they were: they were all closed by the stop of one
   * feed (a pause, a seek) on the same PCM, and snapserver is still reading what they held, a
   * read chunk at least. It takes a connection waiting behind the one it reads when that one
   * ends and stamps its first PCM then, which is where the stream's time was (no jump a client
   * would correct seconds later by cutting or inserting audio, issue 30's resume case). Past
   * that moment each stream starts afresh when its new PCM is read: readyAt().
   */
  continuesInStep(streams: readonly string[], now = performance.now()): boolean {
    const last = streams.map((s) => this.lastClose.get(s));
    const first = last[0];
    if (!first || last.some((c) => c === undefined || c.feed !== first.feed || Math.abs(c.end - first.end) >= 1)) return false;
    return now < first.end - SOURCE_CHUNK_MS;
  }

  /** Every client stream `owner` has is given back (its zone is over, or plays an announcement). */
  releaseAll(owner: object): void {
    for (const [id, r] of this.byClient) if (r.owner === owner) this.giveBack(id, r.stream);
  }

  private giveBack(clientId: string, stream: string): void {
    this.byClient.delete(clientId);
    this.log.info({ clientId, stream }, 'client stream given back');
  }

  /** A declared client stream no client has, fed in `format`; undefined when none is left. */
  private free(format: string): string | undefined {
    const taken = new Set([...this.byClient.values()].map((r) => r.stream));
    // Never fed first, then the one closed longest ago: its last connection is read out.
    const order = this.declared().sort((a, b) => (this.lastClose.get(a)?.end ?? -Infinity) - (this.lastClose.get(b)?.end ?? -Infinity));
    for (const id of order) {
      if (taken.has(id)) continue;
      let why: string | undefined;
      try {
        const f = streamSource({ ...this.server, stream: id, source: undefined }, this.model).format;
        if (f !== format) why = `its sample format (${f}) is not the zone's (${format})`;
      } catch (e) {
        why = (e as Error).message;
      }
      if (why === undefined) return id;
      if (!this.warned.has(id)) {
        this.warned.add(id);
        this.log.warn({ stream: id, reason: why }, 'a client stream cannot be fed: skipped');
      }
    }
    return undefined;
  }
}

import { HubError } from '../../core/errors';
import type { Logger } from '../../logger';
import type { ResolvedServerConfig } from './config';
import { HubStream, type HubStreamOptions } from './hub-stream';
import type { ServerModel } from './model';
import { MULTI_ZONE_LEAD_MS } from './feeder';
import { DEFAULT_TCP_SOURCE_PORT } from './sink';

/**
 * The hub-fed streams of one snapserver, one per zone that plays there at the same time
 * (issue 27). snapserver 0.26 cannot add streams at run time, so the pool is what
 * snapserver.conf declares of `stream` and `zoneStreams`. A zone (MediaRequest.zone) takes a
 * stream for as long as it plays and gives it back when the stream is free again (its
 * clients stopped or left it); different zones never share a stream, so a play, stop or
 * announcement in one never switches or re-syncs the clients of another.
 */
export class ZonePool {
  readonly streams: HubStream[];
  /** The stream each zone plays on; an entry whose stream went free (and is not starting) is stale. */
  private readonly byZone = new Map<string, HubStream>();
  /** Streams handed out whose command has not run yet: still 'free' by their phase, but taken. */
  private readonly inFlight = new Map<HubStream, Set<{ clientIds: readonly string[] }>>();
  private readonly paced: HubStream[] = [];
  private readonly log: Logger;

  constructor(
    private readonly server: ResolvedServerConfig,
    private readonly model: ServerModel,
    options: Omit<HubStreamOptions, 'server' | 'phaseChanged'>,
  ) {
    this.log = options.logger;
    const ids = [server.stream, ...server.zoneStreams];
    this.streams = ids.map((id, i) => {
      const stream: HubStream = new HubStream({
        ...options,
        // `source` names where the first stream is fed; the others are read from their URIs.
        server: i === 0 ? server : { ...server, stream: id, source: undefined },
        logger: i === 0 ? options.logger : options.logger.child({ stream: id }),
        phaseChanged: (phase) => {
          if (phase === 'free') this.released(stream);
          this.pace();
        },
      });
      return stream;
    });
    this.paced.push(...this.streams);
  }

  /**
   * Streams paced along with the pool's (the announcement stream): while several zones
   * play, all of them keep the longer lead (MULTI_ZONE_LEAD_MS).
   */
  alsoPace(stream: HubStream): void {
    this.paced.push(stream);
    this.pace();
  }

  /** One zone: the feeder's default lead (ducking reacts fastest); several: the lead that rides out a stall of the hub. */
  private pace(): void {
    const busy = this.streams.filter((s) => s.phase !== 'free').length;
    for (const s of this.paced) s.setLead(busy >= 2 ? MULTI_ZONE_LEAD_MS : undefined);
  }

  /** The pool's streams snapserver declares now (the others cannot be fed). */
  declared(): HubStream[] {
    return this.streams.filter((s) => this.model.streams.has(s.streamId));
  }

  /** The stream a client is a member of (carrying, paused, held, borrowed), if any. */
  streamOf(clientId: string): HubStream | undefined {
    return this.streams.find((s) => s.has(clientId));
  }

  /**
   * The stream for a play of `zone` on `targets` (client ids): the zone's own; else one whose
   * zone these speakers take over whole (it restarts in place: no client changes stream);
   * else a free one; else one only announcements hold (today's single-stream behaviour: the
   * play waits for them there). Throws PlaybackFailed naming what to declare when none is left.
   */
  forPlay(zone: string | undefined, targets: ReadonlySet<string>): HubStream {
    this.dropStale();
    const usable = this.declared();
    const own = zone !== undefined ? this.byZone.get(zone) : undefined;
    if (own && usable.includes(own)) return own;
    const takenOver = usable
      .map((s) => ({ s, carriers: s.carriers() }))
      .filter(({ s, carriers }) => !this.isFree(s) && carriers.size > 0 && [...carriers].every((id) => targets.has(id)))
      .sort((a, b) => b.carriers.size - a.carriers.size)[0]?.s;
    const free = usable.find((s) => this.isFree(s));
    const borrowed = usable.find((s) => !this.inFlight.has(s) && s.carriers().size === 0);
    const pick = takenOver ?? free ?? borrowed;
    if (!pick) throw this.exhausted(zone, usable);
    this.assign(zone, pick);
    return pick;
  }

  /**
   * The stream for an announcement when snapserver has no announcement stream: the one most
   * of its clients carry (their zone's music is held there while it plays, as before zones),
   * else a free one, else one only announcements hold.
   */
  forOverlay(targets: ReadonlySet<string>, left: readonly HubStream[] = []): HubStream {
    this.dropStale();
    const usable = this.declared();
    const count = (s: HubStream) => [...targets].filter((id) => s.has(id)).length;
    const best = usable.filter((s) => count(s) > 0).sort((a, b) => count(b) - count(a))[0];
    // Targets just stopped (silenced before a louder announcement) go where their music still plays for others.
    const wasOn = left.find((s) => usable.includes(s) && s.mediaUrl !== undefined);
    const pick = best ?? wasOn ?? usable.find((s) => this.isFree(s)) ?? usable.find((s) => !this.inFlight.has(s) && s.carriers().size === 0);
    if (!pick) throw this.exhausted(undefined, usable);
    return pick;
  }

  /** A declared stream no zone has and no command is on its way to, if any. */
  freeStream(): HubStream | undefined {
    return this.declared().find((s) => this.isFree(s));
  }

  /** The clients a stream has, and those a play is taking to it. */
  occupants(stream: HubStream): Set<string> {
    const out = stream.clients();
    for (const r of this.inFlight.get(stream) ?? []) for (const id of r.clientIds) out.add(id);
    return out;
  }

  /**
   * Runs a play of `clientIds` on a stream handed out by forPlay/forOverlay, keeping the
   * stream taken (and the clients known to be on their way to it) until the play has run.
   */
  async run<T>(stream: HubStream, clientIds: readonly string[], fn: () => Promise<T>): Promise<T> {
    const entry = { clientIds };
    const runs = this.inFlight.get(stream) ?? new Set();
    runs.add(entry);
    this.inFlight.set(stream, runs);
    try {
      return await fn();
    } finally {
      runs.delete(entry);
      if (!runs.size) this.inFlight.delete(stream);
      this.dropStale();
    }
  }

  /** Whether a play of the client on this stream is under way (queued behind its other commands): a stop must reach it there. */
  playingTowards(stream: HubStream, clientId: string): boolean {
    return [...(this.inFlight.get(stream) ?? [])].some((r) => r.clientIds.includes(clientId));
  }

  /** A stream went free (phaseChanged): its zone gives it back. */
  released(stream: HubStream): void {
    if (this.inFlight.has(stream)) return;
    for (const [zone, s] of this.byZone) {
      if (s !== stream) continue;
      this.byZone.delete(zone);
      this.log.info({ zone, stream: stream.streamId }, 'zone over: its snapserver stream is free again');
    }
  }

  /** Which zone plays on which stream, for the log and the tests. */
  zones(): Record<string, string> {
    this.dropStale();
    return Object.fromEntries([...this.byZone].map(([zone, s]) => [zone, s.streamId]));
  }

  private isFree(s: HubStream): boolean {
    return s.phase === 'free' && !this.inFlight.has(s);
  }

  private assign(zone: string | undefined, stream: HubStream): void {
    for (const [z, s] of this.byZone) if (s === stream && z !== zone) this.byZone.delete(z);
    if (zone === undefined || this.byZone.get(zone) === stream) return;
    this.byZone.set(zone, stream);
    this.log.info({ zone, stream: stream.streamId }, 'zone takes a snapserver stream');
  }

  private dropStale(): void {
    for (const [zone, s] of this.byZone) if (this.isFree(s)) this.byZone.delete(zone);
  }

  /**
   * Every declared stream carries another zone: the play fails and says how to declare one
   * more (the snapserver.conf line, and the config key when the name is not listed there yet).
   */
  private exhausted(zone: string | undefined, usable: HubStream[]): HubError {
    const { server } = this;
    const all = [server.stream, ...server.zoneStreams];
    const undeclared = all.find((id) => !this.model.streams.has(id));
    let n = all.length + 1;
    while (all.includes(`${server.stream}${n}`) || this.model.streams.has(`${server.stream}${n}`)) n++;
    const next = undeclared ?? `${server.stream}${n}`;
    const index = undeclared !== undefined ? all.indexOf(undeclared) : all.length;
    // Ports as in the docs' example (docs/drivers/snapcast.md): the music's 4953, announcements' 4954, then one per zone stream.
    const port = DEFAULT_TCP_SOURCE_PORT + (index === 0 ? 0 : index + 1);
    const line = `source = tcp://0.0.0.0:${port}?name=${next}&mode=server`;
    const key = undeclared !== undefined ? '' : ` and add '${next}' to snapcast.zoneStreams`;
    const inUse = usable.map((s) => s.streamId).join(', ') || 'none';
    this.log.warn({ zone, streams: inUse, declare: line }, 'no free snapserver stream for one more zone');
    return new HubError(
      'PlaybackFailed',
      `snapserver ${server.address} has no free stream for one more zone: its ${usable.length} hub stream(s) (${inUse}) play other zones. ` +
        `Declare one more in snapserver.conf (${line})${key}, then restart snapserver.`,
    );
  }
}

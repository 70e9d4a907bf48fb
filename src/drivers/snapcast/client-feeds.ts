import type { Socket } from 'node:net';
import type { Logger } from '../../logger';
import type { ClientStreamPool } from './client-streams';
import type { ResolvedServerConfig } from './config';
import { bytesPerSecond, type Feed } from './feeder';
import { CLOSE_TIMEOUT_MS, closingPad } from './in-step';
import type { ServerModel } from './model';
import { describeSource, openSink } from './sink';
import { streamSource } from './stream-source';

/** PCM a client stream's socket may hold unread, at most (seconds): beyond it snapserver is not reading, and the follower is dropped. */
const MAX_UNREAD_S = 2;

export interface ClientFeedsOptions {
  server: ResolvedServerConfig;
  model: ServerModel;
  connectTimeoutMs: number;
  logger: Logger;
  /** Where the drain of each stream's last connection is kept. */
  clientStreams: ClientStreamPool;
  /** Whether the client's stream carries the feed's mix now (a ducked announcement for it). */
  mixedFor(clientId: string): boolean;
}

/** One client stream fed in step with the zone's feed. */
interface Follower {
  stream: string;
  feed: Feed;
  sink: Socket;
  /** Bytes written to the connection. */
  written: number;
  unfollow(): void;
}

/**
 * The client streams one zone stream feeds (issue 30, see ClientStreamPool): per routed client
 * that listens, a connection to its client stream's source that gets the zone feed's PCM at the
 * moment the feed hands it to the zone's own stream (Feed.follow), mixed (a ducked announcement
 * for that client) or not. A follower lives as long as its feed, its route, and its client
 * listening; sync() makes that so after every regroup.
 */
export class ClientFeeds {
  private readonly out = new Map<string, Follower>();
  private readonly log: Logger;

  constructor(private readonly opts: ClientFeedsOptions) {
    this.log = opts.logger;
  }

  /** The client ids fed on a client stream now. */
  fed(): string[] {
    return [...this.out.keys()];
  }

  /**
   * Stops the followers that no longer fit (another feed, another route, the client not
   * listening) and starts one for each routed listening client of the running `feed`.
   */
  async sync(feed: Feed | undefined, routes: ReadonlyMap<string, string>, listening: ReadonlySet<string>): Promise<void> {
    for (const [id, f] of [...this.out]) {
      if (f.feed === feed && feed?.running && routes.get(id) === f.stream && listening.has(id)) continue;
      this.drop(id);
    }
    if (!feed?.running) return;
    for (const [id, stream] of routes) {
      if (!listening.has(id) || this.out.has(id)) continue;
      await this.start(feed, id, stream);
    }
  }

  /** Every follower stops (the feed is gone). */
  stopAll(): void {
    for (const id of [...this.out.keys()]) this.drop(id);
  }

  /** The client streams fed now. */
  streams(): string[] {
    return [...this.out.values()].map((f) => f.stream);
  }

  private drop(clientId: string): void {
    const f = this.out.get(clientId);
    if (!f) return;
    this.out.delete(clientId);
    f.unfollow();
    this.close(f);
  }

  /**
   * Its connection closes on whole read chunks and codec blocks (closingPad: what it left in
   * snapserver's encoder would delay the stream's next connection), and the pool knows when
   * snapserver will have read it out.
   */
  private close(f: Follower): void {
    const pad = closingPad(f.feed.format, f.written);
    const padMs = (pad.length / bytesPerSecond(f.feed.format)) * 1000;
    this.opts.clientStreams.closed(f.stream, (f.feed.attached ? f.feed.unreadMs : 0) + padMs, f.feed);
    if (!pad.length || !f.sink.writable) {
      f.sink.destroy();
      return;
    }
    const timer = setTimeout(() => f.sink.destroy(), CLOSE_TIMEOUT_MS);
    timer.unref();
    f.sink.end(pad, () => {
      clearTimeout(timer);
      f.sink.destroy();
    });
  }

  private async start(feed: Feed, clientId: string, stream: string): Promise<void> {
    let source;
    try {
      source = streamSource({ ...this.opts.server, stream, source: undefined }, this.opts.model).source;
    } catch (e) {
      this.log.warn({ clientId, stream, err: (e as Error).message }, 'client stream cannot be fed');
      return;
    }
    let sink: Socket;
    try {
      sink = await openSink(source, this.opts.connectTimeoutMs);
    } catch (e) {
      this.log.warn({ clientId, stream, err: (e as Error).message }, 'could not connect to the client stream');
      return;
    }
    // Joining a running feed: snapserver stamps the first PCM it reads of this connection with the
    // moment it reads it, and it reads it only once the stream's last connection is read out. So
    // the PCM goes over then, starting with what the zone's stream reads at that moment (follow()).
    // A feed not attached yet waits for it instead (StreamCore.startFeed).
    const wait = this.opts.clientStreams.readyAt(stream) - performance.now();
    if (feed.attached && wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    // The feed stopped, or another sync started one, while this one connected.
    if (!feed.running || this.out.has(clientId)) {
      sink.destroy();
      return;
    }
    const maxUnread = MAX_UNREAD_S * bytesPerSecond(feed.format);
    const f: Follower = { stream, feed, sink, written: 0, unfollow: () => undefined };
    this.out.set(clientId, f);
    sink.on('close', () => {
      if (this.out.get(clientId) !== f) return;
      this.out.delete(clientId);
      f.unfollow();
      this.log.warn({ clientId, stream }, 'snapserver closed the client stream source: that client hears nothing until it plays again');
    });
    let first!: () => void;
    const started = new Promise<void>((resolve) => (first = resolve));
    f.unfollow = feed.follow(
      {
        write: (raw, mixed) => {
          if (sink.destroyed) return;
          if (sink.writableLength > maxUnread) {
            this.log.warn({ clientId, stream }, 'snapserver does not read the client stream: dropped');
            sink.destroy();
            return;
          }
          f.written += raw.length;
          sink.write(this.opts.mixedFor(clientId) ? mixed : raw);
        },
        end: () => {
          if (this.out.get(clientId) === f) this.out.delete(clientId);
          this.close(f);
        },
        destroy: () => {
          if (this.out.get(clientId) === f) this.out.delete(clientId);
          this.close(f);
        },
      },
      first,
    );
    // The regroup waits for its first PCM: snapserver stamps it when its thread reads it, late while it is busy with group changes.
    await started;
    this.log.debug({ clientId, stream, source: describeSource(source) }, 'feeding a client stream in step with the zone');
  }
}

import { SpeakerHubClient } from '../rest-client/client';
import { HubEventStream } from '../rest-client/event-stream';
import { isHubError } from '../core/errors';
import type { WireEvent } from '../extensions/wire-events';
import { HUB_EVENT_NAMES } from '../core/events';
import type { Logger } from '../logger';
import { HubUnreachableError, ListenerFanout, type HubConnection, type HubListener } from './connection';
import { needsSession } from './run';

export interface RemoteOptions {
  /** The hub's origin, http://host:port */
  url: string;
  token?: string;
  logger: Logger;
  timeoutMs?: number;
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Connection state of the event stream, for a status display. */
  onState?(state: 'connected' | 'reconnecting', detail?: string): void;
}

const EVENT_TYPES: ReadonlySet<string> = new Set(HUB_EVENT_NAMES);

/**
 * A hub elsewhere: operations through the library client (a session opened on first use and
 * renewed on SessionNotFound), events from its SSE stream (open while someone follows),
 * reconnecting with backoff and asking the listeners to resync after every (re)connect.
 */
export class RemoteConnection implements HubConnection {
  readonly mode = 'remote' as const;
  readonly ready: Promise<void>;
  private readonly client?: SpeakerHubClient;
  private readonly origin?: URL;
  private readonly fanout: ListenerFanout;
  private events?: HubEventStream;

  constructor(private readonly options: RemoteOptions) {
    this.fanout = new ListenerFanout(
      () => this.openStream(),
      () => {
        this.events?.close();
        this.events = undefined;
      },
      (e) => options.logger.error({ err: String(e) }, 'a front end failed handling a hub event'),
    );
    try {
      const origin = new URL(options.url);
      if (origin.protocol !== 'http:' && origin.protocol !== 'https:') throw new Error('not http(s)');
      this.origin = origin;
    } catch {
      this.ready = Promise.reject(
        new HubUnreachableError(`The hub URL ${JSON.stringify(options.url)} is not an http(s) origin such as http://192.168.1.20:8090.`),
      );
      this.ready.catch(() => undefined);
      return;
    }
    this.client = new SpeakerHubClient({ baseUrl: this.origin.origin, token: options.token || undefined, timeoutMs: options.timeoutMs });
    this.ready = Promise.resolve();
  }

  async run(operation: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    await this.ready;
    try {
      // By name as the front end gives it; the hub validates (UnknownOperation otherwise).
      return await this.client!.callRemote(operation, params as Record<string, string>, { needsSession: needsSession(operation) });
    } catch (e) {
      if (isHubError(e)) throw e;
      const cause = e instanceof Error ? ((e.cause as Error | undefined)?.message ?? e.message) : String(e);
      throw new HubUnreachableError(`The hub at ${this.options.url} did not answer ${operation}: ${cause}`, { cause: e });
    }
  }

  follow(listener: HubListener): () => void {
    return this.fanout.add(listener);
  }

  private openStream(): void {
    if (!this.origin || this.events) return;
    this.events = new HubEventStream({
      url: new URL('/api/v1/events', this.origin).href,
      token: this.options.token || undefined,
      minBackoffMs: this.options.minBackoffMs,
      maxBackoffMs: this.options.maxBackoffMs,
      onState: (state, detail) => {
        this.options.onState?.(state, detail);
        if (state === 'connected') this.fanout.resync();
        else {
          this.options.logger.warn({ detail }, 'hub event stream lost; reconnecting');
          this.fanout.lost();
        }
      },
      // Only the hub's own event types (a newer hub's unknown ones are skipped).
      onEvent: (e) => {
        if (EVENT_TYPES.has(e.type)) this.fanout.event(e as WireEvent);
      },
    });
    this.events.start();
  }

  async close(): Promise<void> {
    this.events?.close();
    this.events = undefined;
    await this.client?.close().catch(() => undefined);
  }
}

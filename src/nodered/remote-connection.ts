import { SpeakerHubClient } from '../client/client';
import { isHubError } from '../core/errors';
import { OPERATIONS_BY_NAME } from '../operations/table';
import type { Logger } from '../logger';
import { EventFanout, HubUnreachableError, type HubConnection, type HubWireEvent } from './connection';
import { HubEventStream } from '../client/event-stream';

export interface RemoteOptions {
  /** The hub's origin, http://host:port */
  url: string;
  token?: string;
  logger: Logger;
  onState?(state: 'connected' | 'reconnecting', detail?: string): void;
}

/**
 * A hub elsewhere, through the library client (which opens a session on first use and
 * renews it on SessionNotFound) and the SSE stream (opened while a node listens).
 */
export class RemoteConnection implements HubConnection {
  readonly mode = 'remote' as const;
  readonly ready: Promise<void>;
  private readonly client: SpeakerHubClient;
  private readonly fanout: EventFanout;
  private sse?: HubEventStream;

  constructor(private readonly options: RemoteOptions) {
    let origin: URL;
    try {
      origin = new URL(options.url);
      if (origin.protocol !== 'http:' && origin.protocol !== 'https:') throw new Error('not http(s)');
    } catch {
      this.client = undefined as never;
      this.fanout = undefined as never;
      this.ready = Promise.reject(
        new HubUnreachableError(`The hub URL ${JSON.stringify(options.url)} is not an http(s) origin such as http://192.168.1.20:8090.`),
      );
      this.ready.catch(() => undefined);
      return;
    }
    this.client = new SpeakerHubClient({ baseUrl: origin.origin, token: options.token || undefined });
    this.ready = Promise.resolve();
    this.fanout = new EventFanout(
      () => {
        this.sse = new HubEventStream({
          url: new URL('/api/v1/events', origin).href,
          token: options.token || undefined,
          onEvent: (e) => this.fanout.emit(e),
          onState: (state, detail) => {
            if (state === 'reconnecting') options.logger.warn({ detail }, 'hub event stream lost; reconnecting');
            options.onState?.(state, detail);
          },
        });
        this.sse.start();
      },
      () => {
        this.sse?.close();
        this.sse = undefined;
      },
      (e) => options.logger.error({ err: String(e) }, 'a node failed handling a hub event'),
    );
  }

  async run(operation: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    await this.ready;
    try {
      // By name as the flow gives it; the hub validates (UnknownOperation otherwise).
      return await this.client.callRemote(operation, params as Record<string, string>, {
        needsSession: OPERATIONS_BY_NAME.get(operation)?.needsSession ?? true,
      });
    } catch (e) {
      if (isHubError(e)) throw e;
      const cause = e instanceof Error ? ((e.cause as Error | undefined)?.message ?? e.message) : String(e);
      throw new HubUnreachableError(`The hub at ${this.options.url} did not answer ${operation}: ${cause}`, { cause: e });
    }
  }

  subscribe(handler: (event: HubWireEvent) => void): () => void {
    if (!this.fanout) return () => undefined;
    return this.fanout.add(handler);
  }

  async close(): Promise<void> {
    this.sse?.close();
    this.sse = undefined;
    await this.client?.close().catch(() => undefined);
  }
}

import { OPERATIONS_BY_NAME } from '../operations/table';
import { SpeakerHubClient } from '../client/client';
import { HubEventStream } from '../client/event-stream';
import type { HubConnection, HubListener, HubWireEvent, OperationParams } from './hub-connection';
import type { Logging } from './homebridge-api';

const EVENT_TYPES = new Set(['playbackState', 'playbackTime', 'device', 'volume', 'selection']);
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 30_000;

export interface RemoteOptions {
  url: string;
  token?: string;
  log: Logging;
}

/**
 * A hub running elsewhere: operations through the library client, events from its
 * server-sent event stream, reconnecting with backoff (and asking for a resync after each
 * reconnect, since events may have been missed).
 */
export class RemoteConnection implements HubConnection {
  readonly mode = 'remote';
  private readonly client: SpeakerHubClient;
  private events?: HubEventStream;

  constructor(private readonly options: RemoteOptions) {
    this.client = new SpeakerHubClient({ baseUrl: options.url, token: options.token, timeoutMs: 10_000 });
  }

  async start(listener: HubListener): Promise<void> {
    this.follow(listener);
  }

  call(operation: string, params: OperationParams = {}): Promise<Record<string, unknown>> {
    // By name as the plugin's config gives it; the hub validates (UnknownOperation otherwise).
    return this.client.callRemote(operation, params, { needsSession: OPERATIONS_BY_NAME.get(operation)?.needsSession ?? true });
  }

  async stop(): Promise<void> {
    this.events?.close();
    this.events = undefined;
    await this.client.close().catch(() => undefined);
  }

  /** Follows the hub's event stream; after every (re)connect the accessories re-read the hub (events may have been missed). */
  private follow(listener: HubListener): void {
    this.events = new HubEventStream({
      url: new URL('/api/v1/events', this.options.url).href,
      token: this.options.token,
      minBackoffMs: BACKOFF_MIN_MS,
      maxBackoffMs: BACKOFF_MAX_MS,
      onState: (state, detail) => {
        if (state === 'connected') {
          this.options.log.info(`Following the hub's events at ${this.options.url}`);
          listener.resync();
        } else {
          listener.lost?.();
          this.options.log.warn(`Hub events at ${this.options.url} unavailable (${detail}); retrying`);
        }
      },
      onEvent: (e) => {
        if (EVENT_TYPES.has(e.type)) listener.event(e as HubWireEvent);
      },
    });
    this.events.start();
  }
}

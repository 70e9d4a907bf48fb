import { OPERATIONS_BY_NAME } from '../operations/table';
import { SpeakerHubClient } from '../client/client';
import type { HubConnection, HubListener, HubWireEvent, OperationParams } from './hub-connection';
import type { Logging } from './homebridge-api';

const EVENT_TYPES = new Set(['playbackState', 'playbackTime', 'device', 'volume', 'selection']);
/** An SSE event larger than this is junk (a device list is a few hundred bytes): drop the connection. */
const MAX_EVENT_BYTES = 1 << 20;
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
  private abort?: AbortController;
  private stopped = false;

  constructor(private readonly options: RemoteOptions) {
    this.client = new SpeakerHubClient({ baseUrl: options.url, token: options.token, timeoutMs: 10_000 });
  }

  async start(listener: HubListener): Promise<void> {
    this.stopped = false;
    void this.follow(listener);
  }

  call(operation: string, params: OperationParams = {}): Promise<Record<string, unknown>> {
    // By name as the plugin's config gives it; the hub validates (UnknownOperation otherwise).
    return this.client.callRemote(operation, params, { needsSession: OPERATIONS_BY_NAME.get(operation)?.needsSession ?? true });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort?.abort();
    await this.client.close().catch(() => undefined);
  }

  private async follow(listener: HubListener): Promise<void> {
    let delay = BACKOFF_MIN_MS;
    while (!this.stopped) {
      this.abort = new AbortController();
      try {
        const res = await fetch(new URL('/api/v1/events', this.options.url), {
          headers: { Accept: 'text/event-stream', ...(this.options.token ? { Authorization: `Bearer ${this.options.token}` } : {}) },
          signal: this.abort.signal,
        });
        if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
        this.options.log.info(`Following the hub's events at ${this.options.url}`);
        delay = BACKOFF_MIN_MS;
        // Events may have been missed while disconnected (or the hub was down at start): re-read.
        listener.resync();
        await this.read(res.body, listener);
        if (!this.stopped) this.options.log.warn('The hub closed its event stream; reconnecting');
        if (!this.stopped) listener.lost?.();
      } catch (e) {
        if (this.stopped) return;
        listener.lost?.();
        this.options.log.warn(
          `Hub events at ${this.options.url} unavailable (${e instanceof Error ? e.message : String(e)}); retrying in ${Math.round(delay / 1000)} s`,
        );
      }
      if (this.stopped) return;
      await new Promise((r) => setTimeout(r, delay).unref());
      delay = Math.min(delay * 2, BACKOFF_MAX_MS);
    }
  }

  /** Parses `event:`/`data:` blocks (the hub sends one data line per event). */
  private async read(body: ReadableStream<Uint8Array>, listener: HubListener): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    let type = '';
    let data = '';
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      if (buffer.length > MAX_EVENT_BYTES) throw new Error('an event larger than 1 MB');
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl).replace(/\r$/, '');
        buffer = buffer.slice(nl + 1);
        if (line === '') {
          if (type && data && EVENT_TYPES.has(type)) {
            try {
              listener.event({ type, data: JSON.parse(data) } as HubWireEvent);
            } catch (e) {
              this.options.log.warn(`Ignoring a malformed ${type} event: ${e instanceof Error ? e.message : String(e)}`);
            }
          }
          type = '';
          data = '';
        } else if (line.startsWith('event:')) type = line.slice(6).trim();
        else if (line.startsWith('data:')) data += line.slice(5).trim();
      }
    }
  }
}

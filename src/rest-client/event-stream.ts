import { Backoff } from '../util/backoff';

/** An event as the hub's stream names it (`event:`) with its parsed JSON (`data:`). */
export interface StreamEvent {
  type: string;
  data: unknown;
}

export interface EventStreamOptions {
  /** The hub's event stream: `<origin>/api/v1/events`. */
  url: string;
  token?: string;
  onEvent(event: StreamEvent): void;
  /** Connection state changes: 'connected' after every (re)connect — events may have been missed meanwhile. */
  onState?(state: 'connected' | 'reconnecting', detail?: string): void;
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

/** The longest event (or line) accepted; a stream sending more is broken and is reconnected. */
const MAX_EVENT_CHARS = 1 << 20;

/**
 * Follows a remote hub's server-sent event stream (/api/v1/events), reconnecting with
 * exponential backoff after any failure until close(). Built on fetch so the bearer token
 * goes in a header, never in a URL that proxies log. The Node-RED config node and the
 * Homebridge plugin follow a remote hub with it.
 */
export class HubEventStream {
  private abort?: AbortController;
  private closed = false;
  private timer?: NodeJS.Timeout;
  private readonly backoff: Backoff;

  constructor(private readonly options: EventStreamOptions) {
    this.backoff = new Backoff(options.minBackoffMs ?? 250, options.maxBackoffMs ?? 10_000);
  }

  start(): void {
    void this.connect();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.abort?.abort();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const abort = (this.abort = new AbortController());
    try {
      const res = await fetch(this.options.url, {
        headers: { Accept: 'text/event-stream', ...(this.options.token ? { Authorization: `Bearer ${this.options.token}` } : {}) },
        signal: abort.signal,
      });
      if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
      this.backoff.reset();
      this.options.onState?.('connected');
      await this.read(res.body);
      throw new Error('the hub closed the event stream');
    } catch (e) {
      if (this.closed) return;
      this.options.onState?.('reconnecting', e instanceof Error ? e.message : String(e));
      this.timer = setTimeout(() => void this.connect(), this.backoff.next());
    } finally {
      abort.abort();
    }
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    let event = 'message';
    let data: string[] = [];
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      if (buffer.length > MAX_EVENT_CHARS) throw new Error('an event stream line exceeded 1 MiB');
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl).replace(/\r$/, '');
        buffer = buffer.slice(nl + 1);
        if (line === '') {
          if (data.length) this.dispatch(event, data.join('\n'));
          event = 'message';
          data = [];
        } else if (line.startsWith('event:')) {
          event = line.slice(6).trim();
        } else if (line.startsWith('data:')) {
          data.push(line.slice(5).replace(/^ /, ''));
        }
        // comments (": keep-alive") and other fields are ignored
      }
    }
  }

  private dispatch(type: string, raw: string): void {
    let data: unknown;
    try {
      data = JSON.parse(raw);
    } catch {
      data = raw;
    }
    this.options.onEvent({ type, data });
  }
}

import type { WireEvent } from '../extensions/wire-events';

/** A core event as every front end receives it (the same shape as the hub's SSE stream). */
export type HubWireEvent = WireEvent;

/** What a front end follows on a connection. */
export interface HubListener {
  event(e: HubWireEvent): void;
  /** Events may have been missed (a (re)connect, a queue overflow): re-read the full state. */
  resync?(): void;
  /** The hub cannot be reached (remote): its speakers count as unavailable until the next resync. */
  lost?(): void;
}

/**
 * The one way a front end reaches a hub, whichever hub it is: the hub it runs in (an
 * extension's context), a hub it starts itself (Node-RED's and Homebridge's embedded mode) or
 * a hub elsewhere (REST + SSE). Sessions are the connection's business: a front end only runs
 * operations by name and follows events.
 */
export interface HubConnection {
  readonly mode: 'local' | 'embedded' | 'remote';
  /** Resolves once the hub can take operations; rejects (HubUnreachableError) with why it cannot. */
  readonly ready: Promise<void>;
  /** Runs an operation of the table (parameters by API name, validated by the hub); rejects with a HubError, or HubUnreachableError when the hub is out of reach. */
  run(operation: string, params?: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Follows the hub's events until the returned function is called; resync() is called after every (re)connect. */
  follow(listener: HubListener): () => void;
  /** Stops everything the connection started (hub, sockets, timers). Idempotent. */
  close(): Promise<void>;
}

/** A failure of the path to the hub rather than of the operation (hub down, refused, not started). */
export class HubUnreachableError extends Error {
  readonly code = 'HubUnreachable';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'HubUnreachableError';
  }
}

/** Fans events out to the listeners of one connection; a throwing listener never stops the others. */
export class ListenerFanout {
  private readonly listeners = new Set<HubListener>();
  /** Between a resync and a loss: events flow. A listener added then resyncs at once (it missed what came before). */
  private live = false;

  constructor(
    private readonly onFirst: () => void,
    private readonly onLast: () => void,
    private readonly onError: (e: unknown) => void,
  ) {}

  get size(): number {
    return this.listeners.size;
  }

  add(listener: HubListener): () => void {
    // Wrapped, so one listener added twice is two followers (two nodes with one handler).
    const own: HubListener = {
      event: (e) => listener.event(e),
      resync: () => listener.resync?.(),
      lost: () => listener.lost?.(),
    };
    this.listeners.add(own);
    if (this.listeners.size === 1) this.onFirst();
    else if (this.live)
      setImmediate(() => {
        if (!this.listeners.has(own)) return;
        try {
          own.resync?.();
        } catch (e) {
          this.onError(e);
        }
      });
    return () => {
      if (this.listeners.delete(own) && this.listeners.size === 0) {
        this.live = false;
        this.onLast();
      }
    };
  }

  event(e: HubWireEvent): void {
    this.each((l) => l.event(e));
  }

  resync(): void {
    this.live = true;
    this.each((l) => l.resync?.());
  }

  lost(): void {
    this.live = false;
    this.each((l) => l.lost?.());
  }

  private each(fn: (l: HubListener) => void): void {
    for (const l of this.listeners) {
      try {
        fn(l);
      } catch (e) {
        this.onError(e);
      }
    }
  }
}

/** A hub event as front ends see it: the core's event name and its payload. */
export interface HubWireEvent {
  type: string;
  data: unknown;
}

/**
 * What the Node-RED nodes need from a hub, in both config modes: run an operation (the
 * session is the connection's business) and follow the hub's events. `remote` talks REST +
 * SSE to a running hub; `embedded` runs a hub inside Node-RED and reaches its core through
 * the extension context.
 */
export interface HubConnection {
  readonly mode: 'remote' | 'embedded';
  /** Resolves once the hub can take operations; rejects with why it cannot. */
  readonly ready: Promise<void>;
  /** Runs an operation (parameters by API name, validated by the hub); rejects with a HubError-like error carrying `code`. */
  run(operation: string, params: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Follows the hub's events until the returned function is called. */
  subscribe(handler: (event: HubWireEvent) => void): () => void;
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

/** Fans events out to the subscribed nodes; a throwing node never stops the others. */
export class EventFanout {
  private readonly handlers = new Set<(e: HubWireEvent) => void>();

  constructor(
    private readonly onFirst: () => void,
    private readonly onLast: () => void,
    private readonly onError: (e: unknown) => void,
  ) {}

  get size(): number {
    return this.handlers.size;
  }

  add(handler: (e: HubWireEvent) => void): () => void {
    const wrapped = (e: HubWireEvent) => handler(e);
    this.handlers.add(wrapped);
    if (this.handlers.size === 1) this.onFirst();
    return () => {
      if (this.handlers.delete(wrapped) && this.handlers.size === 0) this.onLast();
    };
  }

  emit(event: HubWireEvent): void {
    for (const h of this.handlers) {
      try {
        h(event);
      } catch (e) {
        this.onError(e);
      }
    }
  }
}

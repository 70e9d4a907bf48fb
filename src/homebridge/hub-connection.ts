import type { WireEvent } from '../extensions/wire-events';

/** A core event as front ends receive it (the same shape as the hub's SSE stream). */
export type HubWireEvent = WireEvent;

export type OperationParams = Record<string, string | number | string[]>;

export interface HubListener {
  event(e: HubWireEvent): void;
  /** Events may have been missed (a reconnect, a queue overflow): re-read the full state. */
  resync(): void;
  /** The hub cannot be reached (remote): its speakers count as unavailable until the next resync. */
  lost?(): void;
}

/**
 * The one way the plugin reaches a hub, embedded in Homebridge or remote: run an operation
 * of the operation table, and receive the core's events.
 */
export interface HubConnection {
  readonly mode: 'embedded' | 'remote';
  start(listener: HubListener): Promise<void>;
  /** Resolves with the operation's response body; rejects with a HubError. */
  call(operation: string, params?: OperationParams): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

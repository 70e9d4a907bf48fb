import type { Server as HttpServer } from 'node:http';
import type { HubConfig } from '../hub-config';
import type { Logger } from '../logger';
import type { LibraryAccess } from '../media/types';
import type { DispatchResult, SessionMemo } from '../operations/dispatch';
import type { Operation } from '../operations/table';
import type { SubscribeOptions, WireEvent, WireSubscription } from './wire-events';

/**
 * A front end of the hub (REST, MQTT, cloud link, Node-RED, HomeKit). The hub starts its
 * extensions in order after the core and stops them in reverse; a front end reaches the
 * core only through this context, so the core never depends on a front end.
 */
export interface HubExtension {
  /** Short name for logs ('rest', 'mqtt', 'cloud-link', …). */
  readonly name: string;
  start(ctx: ExtensionContext): Promise<void>;
  stop(): Promise<void>;
}

export interface ExtensionContext {
  /** The hub's UUID (HKWHubUUID on the wire). */
  readonly uuid: string;
  /** The whole validated configuration; each front end reads its own section. */
  readonly config: HubConfig;
  /** A child logger tagged with the extension's name. */
  readonly logger: Logger;
  readonly version: string;
  /** Runs an operation exactly as every front end does: lookup, session check, validation, typed errors. Never rejects. */
  dispatch(operation: string, params: Record<string, unknown>): Promise<DispatchResult>;
  /**
   * dispatch() for an operation already looked up, answering synchronously when the handler
   * is synchronous (the REST fast path answers most traffic without a promise round trip).
   * memo: one per client connection, so its session token is hashed once (SessionMemo).
   */
  run(op: Operation, params: Record<string, unknown>, memo?: SessionMemo): DispatchResult | Promise<DispatchResult>;
  /** A SessionToken for a trusted front end: it never expires and is never evicted. Close it with close_session at stop. */
  openTrustedSession(): string;
  /**
   * The core's events as wire events, delivered asynchronously (never on the emitter's
   * stack) through a bounded per-subscriber queue; on overflow the subscription closes and
   * onOverflow is called, so a slow consumer never grows the hub's memory.
   */
  subscribe(handler: (e: WireEvent) => void, options?: SubscribeOptions): WireSubscription;
  /** The media library, its items' stable URLs and covers (the DLNA MediaServer); absent in a hub without one. */
  readonly library?: LibraryAccess;
  /** The REST extension's HTTP server, once it listens (WebSocket upgrades on its port). */
  readonly httpServer?: HttpServer;
}

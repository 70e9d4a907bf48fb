import type { Server } from 'node:http';
import type { HubConfig } from '../config/schema';
import type { Logger } from '../logger';
import { dispatch, type DispatchResult } from '../operations/dispatch';
import type { SpeakerHub } from '../hub';
import type { HubWireEvent } from './hub-connection';

// TEMPORARY until the coordinator's "Extensions scaffold" (src/extensions/extension.ts) is on
// main: the contract's types and a minimal host. Replaced by hub.use(ext) after the merge.

export interface ExtensionContext {
  readonly uuid: string;
  readonly config: HubConfig;
  readonly logger: Logger;
  readonly version: string;
  dispatch(operation: string, params: Record<string, unknown>): Promise<DispatchResult>;
  openTrustedSession(): string;
  subscribe(handler: (e: HubWireEvent) => void, options?: { maxQueued?: number; onOverflow?: () => void }): { close(): void };
  readonly httpServer?: Server;
}

export interface HubExtension {
  readonly name: string;
  start(ctx: ExtensionContext): Promise<void>;
  stop(): Promise<void>;
}

const EVENT_TYPES = ['playbackState', 'playbackTime', 'device', 'volume', 'selection'] as const;

/** Starts the hub, then the extension; the extension stops before the hub does. */
export async function startExtension(hub: SpeakerHub, ext: HubExtension): Promise<void> {
  await hub.start();
  const core = hub.core;
  const ctx: ExtensionContext = {
    uuid: core.uuid,
    config: hub.config,
    logger: hub.logger.child({ ext: ext.name }),
    version: '',
    dispatch: async (op, params) => dispatch(core, op, params),
    openTrustedSession: () => core.sessions.create(),
    subscribe(handler, options = {}) {
      const queue: HubWireEvent[] = [];
      const max = options.maxQueued ?? 1000;
      let scheduled = false;
      let closed = false;
      const drain = () => {
        scheduled = false;
        for (const e of queue.splice(0)) {
          if (closed) return;
          try {
            handler(e);
          } catch (err) {
            ctx.logger.error({ err: String(err) }, 'event handler failed');
          }
        }
      };
      const listeners = EVENT_TYPES.map((type) => [type, (data: unknown) => {
        if (closed) return;
        if (queue.length >= max) {
          close();
          options.onOverflow?.();
          return;
        }
        queue.push({ type, data } as HubWireEvent);
        if (!scheduled) {
          scheduled = true;
          setImmediate(drain);
        }
      }] as const);
      for (const [t, fn] of listeners) core.events.on(t, fn as never);
      const close = () => {
        closed = true;
        for (const [t, fn] of listeners) core.events.off(t, fn as never);
      };
      return { close };
    },
  };
  const stopHub = hub.stop.bind(hub);
  hub.stop = async () => {
    await ext.stop().catch(() => undefined);
    await stopHub();
  };
  await ext.start(ctx);
}

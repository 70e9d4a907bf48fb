import type { HubEventBus, HubEvents } from '../core/events';

export type WireEvent = { [K in keyof HubEvents]: { type: K; data: HubEvents[K][0] } }[keyof HubEvents];

export interface SubscribeOptions {
  /** Events waiting for the handler; beyond this the subscription closes. Default 1,000. */
  maxQueued?: number;
  onOverflow?: () => void;
}

export type Subscribe = (handler: (e: WireEvent) => void, options?: SubscribeOptions) => { close(): void };

const EVENT_NAMES: (keyof HubEvents)[] = ['playbackState', 'playbackTime', 'device', 'volume', 'selection'];

/**
 * The core's events for one consumer, delivered asynchronously (never on the stack of the
 * request that caused them) through a bounded queue: a consumer that falls `maxQueued`
 * events behind is dropped and told so through onOverflow. Same contract as the extension
 * context's subscribe(); the REST server uses this one while it is not an extension.
 */
export function subscribeBounded(events: HubEventBus, handler: (e: WireEvent) => void, options: SubscribeOptions = {}): { close(): void } {
  const maxQueued = options.maxQueued ?? 1000;
  let queue: WireEvent[] = [];
  let scheduled = false;
  let closed = false;
  const deliver = () => {
    scheduled = false;
    const batch = queue;
    queue = [];
    for (const e of batch) {
      if (closed) return;
      try {
        handler(e);
      } catch {
        /* a consumer's fault is its own; the core and other consumers go on */
      }
    }
  };
  const listeners = EVENT_NAMES.map((type) => {
    const fn = (data: unknown) => {
      if (closed) return;
      if (queue.length >= maxQueued) {
        close();
        options.onOverflow?.();
        return;
      }
      queue.push({ type, data } as WireEvent);
      if (!scheduled) {
        scheduled = true;
        setImmediate(deliver);
      }
    };
    events.on(type, fn as never);
    return [type, fn] as const;
  });
  const close = () => {
    if (closed) return;
    closed = true;
    queue = [];
    for (const [type, fn] of listeners) events.off(type, fn as never);
  };
  return { close };
}

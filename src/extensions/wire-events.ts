import { HUB_EVENT_NAMES, type HubEventBus, type HubEvents, type PlaybackSnapshot } from '../core/events';

/**
 * The one mapping of core events to wire events that every front end publishes (SSE, MQTT,
 * the cloud link, Node-RED, HomeKit): `{type, data}` with the core's wire-shaped payload.
 */
export type WireEvent = { [K in keyof HubEvents]: { type: K; data: HubEvents[K][0] } }[keyof HubEvents];
export type WireEventType = WireEvent['type'];

export interface SubscribeOptions {
  /** Events waiting for delivery before the subscriber counts as stalled (default 1,000). */
  maxQueued?: number;
  /** Called (once, asynchronously) when the subscription was closed because its queue overflowed. */
  onOverflow?: () => void;
  /** Deliver the current playback state first, so a new subscriber needs no poll to start. */
  initial?: boolean;
}

export interface WireSubscription {
  close(): void;
  readonly closed: boolean;
}

const DEFAULT_MAX_QUEUED = 1000;

interface Subscriber {
  handler: (e: WireEvent) => void;
  queue: WireEvent[];
  maxQueued: number;
  onOverflow?: () => void;
  closed: boolean;
  scheduled: boolean;
}

/**
 * Fans the core's events out to front-end subscribers. The core emits inside state changes;
 * here an event is only queued, and each subscriber's queue is drained on a later turn of
 * the event loop, so no front end runs (or blocks, or throws) inside a core operation.
 */
export class WireEventFeed {
  private readonly subscribers = new Set<Subscriber>();
  private readonly detach: () => void;

  constructor(
    bus: HubEventBus,
    /** The live playbacks (zones), oldest first; none: one Stopped snapshot. */
    private readonly playbackSnapshots: () => PlaybackSnapshot[],
    private readonly onFault: (err: unknown) => void = () => undefined,
  ) {
    const listeners = HUB_EVENT_NAMES.map((type) => {
      const fn = (data: unknown) => this.publish({ type, data } as WireEvent);
      bus.on(type, fn as never);
      return [type, fn] as const;
    });
    this.detach = () => {
      for (const [type, fn] of listeners) bus.off(type, fn as never);
    };
  }

  get size(): number {
    return this.subscribers.size;
  }

  subscribe(handler: (e: WireEvent) => void, options: SubscribeOptions = {}): WireSubscription {
    const sub: Subscriber = {
      handler,
      queue: [],
      maxQueued: Math.max(1, options.maxQueued ?? DEFAULT_MAX_QUEUED),
      onOverflow: options.onOverflow,
      closed: false,
      scheduled: false,
    };
    this.subscribers.add(sub);
    if (options.initial) {
      const all = this.playbackSnapshots();
      const initial: PlaybackSnapshot[] = all.length ? all : [{ state: 'PlayerStateStopped', timeElapsed: -1, deviceIds: [] }];
      for (const data of initial) this.enqueue(sub, { type: 'playbackState', data });
    }
    return {
      close: () => this.remove(sub),
      get closed() {
        return sub.closed;
      },
    };
  }

  /** Ends every subscription (hub stop). */
  close(): void {
    this.detach();
    for (const sub of this.subscribers) this.remove(sub);
  }

  private publish(e: WireEvent): void {
    for (const sub of this.subscribers) this.enqueue(sub, e);
  }

  private enqueue(sub: Subscriber, e: WireEvent): void {
    if (sub.queue.length >= sub.maxQueued) {
      this.remove(sub);
      if (sub.onOverflow) setImmediate(() => this.guard(sub.onOverflow!));
      return;
    }
    sub.queue.push(e);
    if (!sub.scheduled) {
      sub.scheduled = true;
      setImmediate(() => this.drain(sub));
    }
  }

  private drain(sub: Subscriber): void {
    sub.scheduled = false;
    const batch = sub.queue;
    sub.queue = [];
    for (const e of batch) {
      if (sub.closed) return;
      this.guard(() => sub.handler(e));
    }
  }

  private remove(sub: Subscriber): void {
    sub.closed = true;
    sub.queue = [];
    this.subscribers.delete(sub);
  }

  private guard(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.onFault(err);
    }
  }
}

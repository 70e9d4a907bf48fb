import type { Logger } from '../logger';

/**
 * The seam between the MQTT front end (bridge, channel, speaker topics, discovery) and a
 * broker. Two links implement it and nothing above them knows which one runs:
 * - EmbeddedLink (embedded-link.ts): the hub attaches to its own in-process aedes broker
 *   directly, with no MQTT client, no packets and no socket in between;
 * - ClientLink (client-link.ts): an mqtt.js client to an external broker (loaded only then).
 */
export interface BrokerLink {
  /** Whether publications reach the broker now. */
  readonly connected: boolean;
  /** The last connection failure, until the next successful connect. */
  readonly lastError?: Error;
  onMessage(handler: MessageHandler): void;
  /** reconnect is false for the first connection of this start. */
  onConnect(listener: (reconnect: boolean) => void): void;
  onOffline(listener: () => void): void;
  /** Connects; resolves once connected or after the first failure (an external link then retries with backoff). */
  start(): Promise<void>;
  /** Publishes when connected; nothing piles up while offline or while the broker does not keep up (see MAX_UNACKED). */
  publish(topic: string, payload: string, options?: { retain?: boolean; qos?: 0 | 1 }): void;
  /** Publishes and waits until the broker took it (QoS 1). */
  publishAsync(topic: string, payload: string, retain?: boolean): Promise<void>;
  /** Stops after publishing `last` (retained, e.g. bridge/state offline), each step bounded. */
  stop(last?: { topic: string; payload: string }): Promise<void>;
}

export type MessageHandler = (topic: string, payload: Buffer) => Promise<void> | void;

/** Hub publications the broker has not taken yet beyond which new ones are dropped (counted, logged). */
export const MAX_UNACKED = 5000;

/** How long each step of a clean stop may wait for the broker. */
export const STOP_STEP_MS = 2000;

/**
 * Runs incoming messages, at most `max` at once: a message is admitted (and the broker told it
 * was taken: `done`) at once while a slot is free; beyond that its admission waits for a slot,
 * so the broker keeps the rest and a flood of commands never grows the hub's memory.
 */
export class CommandSlots {
  private inflight = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly max: number,
    private readonly logger: Logger,
  ) {}

  admit(topic: string, payload: Buffer, handler: MessageHandler, done: () => void): void {
    const run = () => {
      this.inflight++;
      let result: Promise<void> | void = undefined;
      try {
        result = handler(topic, payload);
      } catch (e) {
        this.logger.error({ err: (e as Error).message, topic }, 'MQTT message handler failed');
      }
      const finish = () => {
        this.inflight--;
        this.waiting.shift()?.();
      };
      if (result instanceof Promise) {
        result.then(finish, (e: Error) => {
          this.logger.error({ err: e.message, topic }, 'MQTT message handler failed');
          finish();
        });
      } else finish();
      done();
    };
    if (this.inflight < this.max) run();
    else this.waiting.push(run);
  }
}

/** Counts and logs (at most every 5 s) the hub publications dropped because the broker did not keep up. */
export class DropLog {
  private dropped = 0;
  private last = 0;

  constructor(private readonly logger: Logger) {}

  drop(fields: Record<string, unknown>): void {
    this.dropped++;
    const now = Date.now();
    if (now - this.last <= 5000) return;
    this.last = now;
    this.logger.warn({ dropped: this.dropped, ...fields }, 'MQTT broker does not keep up; hub messages dropped');
  }
}

/** The promise's value, or undefined once `ms` passed without it. */
export function bounded<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
    timer.unref();
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

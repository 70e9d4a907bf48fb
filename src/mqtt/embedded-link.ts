import type { Logger } from '../logger';
import { bounded, CommandSlots, DropLog, MAX_UNACKED, STOP_STEP_MS, type BrokerLink, type MessageHandler } from './broker-link';
import type { Deliver, EmbeddedBroker } from './broker';

export interface EmbeddedLinkOptions {
  broker: EmbeddedBroker;
  /** Topics the hub listens to. */
  subscriptions: string[];
  /** Messages handled at once; the broker holds the next one back until a slot frees. */
  maxConcurrent: number;
  logger: Logger;
}

/**
 * The hub attached directly to its own in-process aedes broker: its publications enter the
 * broker as the broker's own (retained kept, QoS 1 queued for persistent QoS 1 subscribers,
 * then forwarded to clients as over TCP), and its subscriptions are the broker's in-process
 * listeners. No MQTT client, packet codec or stream pair sits in between (mqtt.js is not even
 * loaded: ~1.5 MB of an idle hub's memory).
 *
 * What the mqtt.js link needed and this one does not: a will, a persistent session and
 * reconnects (broker and hub share one process, so the link never breaks; a clean stop says
 * offline itself), and redelivery checks (nothing is resent). Retained messages are not
 * replayed to the hub when it subscribes: the broker starts empty with the hub, and the hub
 * publishes its own state itself.
 *
 * Bounds as on the wire: a message waiting for a command slot holds the broker's delivery,
 * and aedes reads no further packets from its publisher meanwhile (it finishes a read batch
 * before the next); the hub's own publications the broker has not finished are capped at
 * MAX_UNACKED, beyond which they are dropped (counted, logged), as a stalled external broker's.
 *
 * Order: aedes numbers each publication when it is handed over, and each client drops a
 * message numbered below one it already got (its dedupe of clustered brokers). A retained or
 * QoS 1 message passes through the broker's persistence (promises) before it is forwarded, a
 * plain QoS 0 one is forwarded at once: handed over in the same turn, the later one overtook
 * the earlier and the earlier was lost (a speaker's availability after a channel event). So
 * after a message that goes through the persistence, the next is handed over only on the next
 * turn of the event loop, when the in-memory persistence has finished with it.
 */
export class EmbeddedLink implements BrokerLink {
  private handler: MessageHandler = () => {};
  private readonly connectListeners: ((reconnect: boolean) => void)[] = [];
  private readonly slots: CommandSlots;
  private readonly drops: DropLog;
  private readonly deliver: Deliver;
  private attached = false;
  /** Publications taken and not yet finished by the broker (queued ones included): at most MAX_UNACKED. */
  private pending = 0;
  private readonly queue: { topic: string; payload: Buffer; qos: 0 | 1; retain: boolean; done: (e?: Error) => void }[] = [];
  private waitingTurn = false;
  readonly lastError?: Error;

  constructor(private readonly options: EmbeddedLinkOptions) {
    this.slots = new CommandSlots(options.maxConcurrent, options.logger);
    this.drops = new DropLog(options.logger);
    this.deliver = (topic, payload, done) => this.slots.admit(topic, payload, this.handler, done);
  }

  get connected(): boolean {
    return this.attached;
  }

  onMessage(handler: MessageHandler): void {
    this.handler = handler;
  }

  onConnect(listener: (reconnect: boolean) => void): void {
    this.connectListeners.push(listener);
  }

  /** The in-process link never goes offline while the hub runs. */
  onOffline(): void {}

  async start(): Promise<void> {
    const { broker, subscriptions } = this.options;
    await Promise.all(subscriptions.map((t) => broker.subscribe(t, this.deliver)));
    this.attached = true;
    for (const l of this.connectListeners) l(false);
  }

  publish(topic: string, payload: string, options: { retain?: boolean; qos?: 0 | 1 } = {}): void {
    void this.send(topic, payload, options.qos ?? 0, options.retain ?? false);
  }

  async publishAsync(topic: string, payload: string, retain = true): Promise<void> {
    await this.send(topic, payload, 1, retain);
  }

  async stop(last?: { topic: string; payload: string }): Promise<void> {
    if (!this.attached) return;
    if (last) await bounded(this.publishAsync(last.topic, last.payload, true), STOP_STEP_MS);
    this.attached = false;
    const { broker, subscriptions } = this.options;
    await bounded(Promise.all(subscriptions.map((t) => broker.unsubscribe(t, this.deliver))), STOP_STEP_MS);
  }

  /** Resolves once the broker has taken the message (stored if retained, forwarded); never rejects. */
  private send(topic: string, payload: string, qos: 0 | 1, retain: boolean): Promise<void> {
    if (!this.attached) return Promise.resolve();
    if (this.pending >= MAX_UNACKED) {
      this.drops.drop({ unacked: this.pending });
      return Promise.resolve();
    }
    this.pending++;
    return new Promise((resolve) => {
      const done = (e?: Error) => {
        this.pending--;
        if (e && this.attached) this.options.logger.debug({ err: e.message, topic }, 'MQTT publish failed');
        resolve();
      };
      this.queue.push({ topic, payload: Buffer.from(payload), qos, retain, done });
      this.handOver();
    });
  }

  /** Hands queued publications to the broker in order (see the class comment). */
  private handOver(): void {
    while (!this.waitingTurn && this.queue.length) {
      const p = this.queue.shift()!;
      this.options.broker.publish(p.topic, p.payload, p.qos, p.retain).then(() => p.done(), p.done);
      if (p.retain || p.qos > 0) {
        this.waitingTurn = true;
        setImmediate(() => {
          this.waitingTurn = false;
          this.handOver();
        });
      }
    }
  }
}

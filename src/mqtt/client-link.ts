import { readFileSync } from 'node:fs';
import { Backoff } from '../util/backoff';
import { connect, type IClientOptions, type IPublishPacket, type MqttClient } from 'mqtt';
import type { Logger } from '../logger';
import { bounded, CommandSlots, DropLog, MAX_UNACKED, STOP_STEP_MS, type BrokerLink, type MessageHandler } from './broker-link';

export interface ClientLinkOptions {
  /** The external broker's URL. */
  url: string;
  clientId: string;
  username?: string;
  password?: string;
  caFile?: string;
  rejectUnauthorized?: boolean;
  /** Published by the broker when the hub's link dies (zigbee2mqtt's bridge/state offline). */
  will: { topic: string; payload: string };
  /** Topics the hub listens to, (re)subscribed at QoS 1 on every connect. */
  subscriptions: string[];
  reconnectMinMs: number;
  reconnectMaxMs: number;
  /** Messages handled at once; the next one is not read from the broker before a slot frees. */
  maxConcurrent: number;
  logger: Logger;
}

/** Bound on what the hub's client may hold unsent for a broker that does not keep up. */
const MAX_UNSENT_BYTES = 4 * 1024 * 1024;

/**
 * The hub's MQTT client (mqtt.js) to an external broker (the embedded one is attached to
 * directly: embedded-link.ts): a persistent session (clean: false, QoS 1) so commands published
 * while the hub was away are delivered when it is back, reconnects with exponential backoff,
 * TCP_NODELAY re-applied on every connect, and bounded work: nothing is queued while offline.
 */
export class ClientLink implements BrokerLink {
  private client?: MqttClient;
  private readonly backoff: Backoff;
  private timer?: NodeJS.Timeout;
  private stopping = false;
  private readonly slots: CommandSlots;
  private readonly drops: DropLog;
  private handler: MessageHandler = () => {};
  private connectedOnce = false;
  private unacked = 0;
  private wasConnected = false;
  /** The last connection failure, until the next successful connect. */
  lastError?: Error;
  private readonly connectListeners: ((reconnect: boolean) => void)[] = [];
  private readonly offlineListeners: (() => void)[] = [];

  constructor(private readonly options: ClientLinkOptions) {
    this.backoff = new Backoff(options.reconnectMinMs, options.reconnectMaxMs);
    this.slots = new CommandSlots(options.maxConcurrent, options.logger);
    this.drops = new DropLog(options.logger);
  }

  get connected(): boolean {
    return !!this.client?.connected;
  }

  onMessage(handler: MessageHandler): void {
    this.handler = handler;
  }

  /** reconnect is false for the first connection of this start. */
  onConnect(listener: (reconnect: boolean) => void): void {
    this.connectListeners.push(listener);
  }

  onOffline(listener: () => void): void {
    this.offlineListeners.push(listener);
  }

  /** Connects; resolves at the first CONNACK or after the first failure (then it retries with backoff). */
  start(): Promise<void> {
    const o = this.options;
    const opts: IClientOptions = {
      clientId: o.clientId,
      username: o.username,
      password: o.password,
      clean: false,
      protocolVersion: 4,
      keepalive: 30,
      connectTimeout: 10_000,
      // Reconnects are ours (exponential backoff); mqtt.js only knows a fixed period.
      reconnectPeriod: 0,
      queueQoSZero: false,
      resubscribe: false,
      // mqtt-packet would otherwise pre-build a Buffer for each of the 65,536 packet ids (about
      // 6 MB of heap); a hub writes few packets, so the two bytes are allocated when written.
      writeCache: false,
      will: { topic: o.will.topic, payload: Buffer.from(o.will.payload), qos: 1, retain: true },
      rejectUnauthorized: o.rejectUnauthorized,
      ...(o.caFile ? { ca: readFileSync(o.caFile) } : {}),
    };
    const client = connect(o.url, opts);
    this.client = client;
    client.handleMessage = (packet: IPublishPacket, done: (e?: Error) => void) => this.admit(packet, done);
    return new Promise((resolve) => {
      let settled = false;
      client.on('connect', () => {
        // Nagle holds back small packets ~40 ms waiting for an ACK: every hop of a QoS 1 command.
        (client.stream as unknown as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
        this.backoff.reset();
        // What is still unacknowledged now is what mqtt.js resends from the session.
        this.unacked = Object.keys((client as unknown as { outgoing?: object }).outgoing ?? {}).length;
        client.subscribe(
          o.subscriptions.map((t) => t),
          { qos: 1 },
          (err) => {
            if (err) o.logger.warn({ err: err.message }, 'MQTT subscribe failed');
          },
        );
        const reconnect = this.connectedOnce;
        this.connectedOnce = true;
        this.wasConnected = true;
        this.lastError = undefined;
        if (!settled) {
          settled = true;
          resolve();
        }
        for (const l of this.connectListeners) l(reconnect);
      });
      client.on('error', (err: Error & { code?: unknown }) => {
        // A refused CONNECT (code 1-5) is a configuration problem: say so plainly, keep retrying.
        const refused = typeof err.code === 'number';
        o.logger[refused || !this.connectedOnce ? 'error' : 'warn'](
          { err: err.message, code: err.code },
          refused ? 'MQTT broker refused the hub (check mqtt.username/mqtt.password and the broker ACL)' : 'MQTT link error',
        );
        this.lastError = err;
      });
      client.on('close', () => {
        if (this.stopping) return;
        if (this.wasConnected) {
          this.wasConnected = false;
          for (const l of this.offlineListeners) l();
        }
        this.scheduleReconnect();
        if (!settled) {
          // The hub runs on without its broker; the link keeps trying in the background.
          settled = true;
          resolve();
        }
      });
    });
  }

  /**
   * Publishes when connected; while offline nothing piles up (state is republished on
   * reconnect), and neither does it while the broker does not keep up: beyond
   * MAX_UNSENT_BYTES unsent or MAX_UNACKED unacknowledged messages, messages are dropped
   * (counted, logged at most every 5 s) rather than buffered without bound.
   */
  publish(topic: string, payload: string, options: { retain?: boolean; qos?: 0 | 1 } = {}): void {
    const c = this.client;
    if (!c?.connected) return;
    const backlog = (c.stream as unknown as { writableLength?: number }).writableLength ?? 0;
    if (backlog > MAX_UNSENT_BYTES || this.unacked >= MAX_UNACKED) return this.drops.drop({ backlog, unacked: this.unacked });
    if ((options.qos ?? 0) > 0) this.unacked++;
    c.publish(topic, payload, { qos: options.qos ?? 0, retain: options.retain ?? false }, (err) => {
      if ((options.qos ?? 0) > 0) this.unacked = Math.max(0, this.unacked - 1);
      if (err && !this.stopping) this.options.logger.debug({ err: err.message, topic }, 'MQTT publish failed');
    });
  }

  /** Publishes and waits for the broker's acknowledgement (QoS 1). */
  publishAsync(topic: string, payload: string, retain = true): Promise<void> {
    const c = this.client;
    if (!c?.connected) return Promise.resolve();
    return c.publishAsync(topic, payload, { qos: 1, retain }).then(
      () => undefined,
      () => undefined,
    );
  }

  /**
   * Stops after publishing `last` (retained, e.g. bridge/state offline) so that subscribers
   * see a clean shutdown rather than waiting for the will.
   */
  async stop(last?: { topic: string; payload: string }): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    const c = this.client;
    if (!c) return;
    // A stalled or vanished broker never acknowledges: the goodbye and the clean end are each
    // bounded, then the connection is dropped (the broker's will says offline instead).
    if (last && c.connected) await bounded(this.publishAsync(last.topic, last.payload, true), STOP_STEP_MS);
    const ended = await bounded(new Promise<boolean>((resolve) => c.end(false, {}, () => resolve(true))), STOP_STEP_MS);
    if (!ended) await new Promise<void>((resolve) => c.end(true, {}, () => resolve()));
  }

  private scheduleReconnect(): void {
    if (this.timer || this.stopping) return;
    const wait = this.backoff.next();
    this.options.logger.info({ inMs: wait }, 'MQTT link lost; reconnecting');
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.stopping) this.client?.reconnect();
    }, wait);
    this.timer.unref();
  }

  /** Message ids of the QoS 1 messages run lately (the broker reuses an id only after it was acknowledged). */
  private readonly recentIds = new Set<number>();

  private remember(id: number): void {
    this.recentIds.delete(id);
    this.recentIds.add(id);
    if (this.recentIds.size > RECENT_IDS) this.recentIds.delete(this.recentIds.values().next().value as number);
  }

  /**
   * A message is acknowledged at once while a command slot is free; beyond that the
   * acknowledgement (and with it mqtt.js's reading) waits for a slot (CommandSlots).
   */
  private admit(packet: IPublishPacket, done: (e?: Error) => void): void {
    // A QoS 1 message the broker sends again (dup) after a lost acknowledgement was run
    // already: acknowledged, not run twice. The ids of the session's recent ones are kept.
    const id = packet.qos > 0 ? packet.messageId : undefined;
    if (id !== undefined && packet.dup && this.recentIds.has(id)) {
      this.options.logger.debug({ messageId: id, topic: packet.topic.slice(0, 200) }, 'MQTT redelivery of a message already run: not run again');
      return done();
    }
    if (id !== undefined) this.remember(id);
    const payload = Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload);
    this.slots.admit(packet.topic, payload, this.handler, () => done());
  }
}

/** How many recent QoS 1 message ids are kept to recognise a redelivery. */
const RECENT_IDS = 1024;

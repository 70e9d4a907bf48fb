import { randomBytes } from 'node:crypto';
import Redis, { type ChainableCommander } from 'ioredis';
import type { Logger } from '../../logger';
import { EVENTS_CHANNEL, instanceChannel } from './keys';
import { parseBusMessage, type BusMessage } from './messages';
import { SCRIPTS, type ClusterScripts, type ClusterScriptsQueued } from './scripts';

type Listener = (m: BusMessage) => void;

/**
 * One cloud instance's connection to the cluster's Redis: a command connection and a
 * subscriber connection (Redis reserves a subscribed connection for messages). It
 * subscribes to its own instance channel (requests and answers addressed to it) and to the
 * events channel. Commands fail at once while Redis is unreachable (no offline queue): a
 * relay request must be answered now, not when Redis returns. ioredis reconnects by itself
 * and resubscribes; `up` tells whether both connections are ready.
 */
export class ClusterBus {
  /** Random per process: a restarted instance is a new one (its old leases are not its own). */
  readonly instanceId = randomBytes(9).toString('base64url');
  readonly redis: Redis;
  private readonly sub: Redis;
  private readonly listeners = new Set<Listener>();
  private readonly upListeners = new Set<(up: boolean) => void>();
  private wasUp = false;

  constructor(
    url: string,
    private readonly logger: Logger,
  ) {
    const options = {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 2000,
      // Reconnect quickly but never give up: Redis coming back must heal the instance by itself.
      retryStrategy: (attempt: number) => Math.min(100 * 2 ** Math.min(attempt, 5), 2000),
      lazyConnect: true,
    };
    this.redis = new Redis(url, { ...options, connectionName: `speakerhub-cloud-${this.instanceId}` });
    this.sub = new Redis(url, { ...options, connectionName: `speakerhub-cloud-sub-${this.instanceId}` });
    for (const [name, lua] of Object.entries(SCRIPTS)) this.redis.defineCommand(name, { numberOfKeys: 1, lua });
    for (const c of [this.redis, this.sub]) {
      // Errors are reported by the state changes below; ioredis would otherwise print each retry.
      c.on('error', () => undefined);
      c.on('ready', () => this.checkUp());
      c.on('close', () => this.checkUp());
      c.on('end', () => this.checkUp());
    }
    this.sub.on('messageBuffer', (_channel: Buffer, message: Buffer) => {
      const m = parseBusMessage(message.toString('utf8'));
      if (!m) return;
      for (const l of this.listeners) l(m);
    });
  }

  /** Connects both connections; rejects when Redis cannot be reached now (a start must fail cleanly). */
  async start(): Promise<void> {
    await Promise.all([this.redis.connect(), this.sub.connect()]);
    await this.sub.subscribe(instanceChannel(this.instanceId), EVENTS_CHANNEL);
    this.checkUp();
  }

  /** The Lua scripts as commands on the command connection. */
  get scripts(): ClusterScripts {
    return this.redis as unknown as ClusterScripts;
  }

  /** A pipeline (or, with `atomic`, a MULTI transaction) that can queue the scripts too. */
  batch(atomic = false): ChainableCommander & ClusterScriptsQueued {
    return (atomic ? this.redis.multi() : this.redis.pipeline()) as ChainableCommander & ClusterScriptsQueued;
  }

  get up(): boolean {
    return this.redis.status === 'ready' && this.sub.status === 'ready';
  }

  onMessage(l: Listener): void {
    this.listeners.add(l);
  }

  /** Called with true when both connections are ready again, false when one is lost. */
  onUp(l: (up: boolean) => void): void {
    this.upListeners.add(l);
  }

  /** Publishes; resolves with the number of instances that received it (0: nobody listens there). */
  async publish(channel: string, m: BusMessage): Promise<number> {
    return this.redis.publish(channel, JSON.stringify(m));
  }

  /** How many subscribers an instance channel has: 0 once that instance's process is gone. */
  async listening(instanceId: string): Promise<boolean> {
    const r = (await this.redis.pubsub('NUMSUB', instanceChannel(instanceId))) as [string, number];
    return Number(r[1]) > 0;
  }

  async ping(): Promise<boolean> {
    if (!this.up) return false;
    try {
      return (await this.redis.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.listeners.clear();
    this.upListeners.clear();
    this.redis.disconnect();
    this.sub.disconnect();
  }

  private checkUp(): void {
    const up = this.up;
    if (up === this.wasUp) return;
    this.wasUp = up;
    if (up) this.logger.info({ instance: this.instanceId }, 'cluster: Redis reachable');
    else this.logger.warn({ instance: this.instanceId }, 'cluster: Redis unreachable; hubs on other instances answer HubOffline until it returns');
    for (const l of this.upListeners) l(up);
  }
}

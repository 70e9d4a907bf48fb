import { EventEmitter } from 'node:events';
import { connect } from 'node:net';
import type { Clock, TimerHandle } from '../../core/clock';
import type { Logger } from '../../logger';
import { RpcConnection } from './rpc';
import { readServerAnswer, type RawServer } from './model';

export interface ServerConnectionOptions {
  host: string;
  port: number;
  clock: Clock;
  logger: Logger;
  requestTimeoutMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
}

export interface ServerConnectionEvents {
  /** Connected (again) and read Server.GetStatus: the full picture, to replace any older one. */
  up: [status: RawServer];
  down: [reason: string];
  notification: [method: string, params: unknown];
}

/**
 * How long to wait before the next connection attempt, `downForMs` into an outage: a quarter
 * of the time already down, within [minMs, maxMs]. So a reconnect comes at most ~25 % after
 * the server is back (an 8 s snapserver restart costs ≤ 2 s more, not the 7.5 s a doubling
 * backoff did), while a long outage still thins the attempts out to one per maxMs.
 */
export function reconnectDelay(downForMs: number, minMs: number, maxMs: number): number {
  return Math.round(Math.min(maxMs, Math.max(minMs, downForMs / 4)));
}

/**
 * The control connection to one snapserver, kept up for the hub's lifetime: it reconnects
 * with a proportional backoff (reconnectDelay) whenever it drops (server restart, network)
 * and re-reads the whole status on every reconnect, because notifications sent while it was
 * down are lost. A successful connect resets the backoff.
 */
export class ServerConnection extends EventEmitter<ServerConnectionEvents> {
  private rpc?: RpcConnection;
  private ready = false;
  private stopped = true;
  /** Clock ms the current outage began (the first failure since the last successful connect). */
  private downSince?: number;
  private retry?: TimerHandle;
  private attempt?: Promise<void>;
  private readonly log: Logger;

  constructor(private readonly opts: ServerConnectionOptions) {
    super();
    this.log = opts.logger;
  }

  get connected(): boolean {
    return this.ready;
  }

  /** Starts connecting; resolves after the first attempt, whether it succeeded or not. */
  start(): Promise<void> {
    if (!this.stopped) return this.attempt ?? Promise.resolve();
    this.stopped = false;
    this.attempt = this.connectOnce();
    return this.attempt;
  }

  stop(): void {
    this.stopped = true;
    this.retry?.cancel();
    this.retry = undefined;
    this.rpc?.close();
    this.rpc = undefined;
  }

  request<T = unknown>(method: string, params?: Record<string, unknown>): Promise<T> {
    if (!this.rpc || !this.ready) return Promise.reject(new Error(`${method}: not connected to snapserver ${this.opts.host}:${this.opts.port}`));
    return this.rpc.request<T>(method, params);
  }

  private async connectOnce(): Promise<void> {
    const { host, port } = this.opts;
    let rpc: RpcConnection;
    try {
      rpc = await new Promise<RpcConnection>((resolve, reject) => {
        const socket = connect({ host, port });
        const timer = setTimeout(() => socket.destroy(new Error('connect timed out')), this.opts.requestTimeoutMs);
        socket.once('connect', () => {
          clearTimeout(timer);
          socket.removeListener('error', reject);
          socket.setKeepAlive(true, 10_000);
          resolve(new RpcConnection(socket, this.opts.requestTimeoutMs));
        });
        socket.once('error', (e) => {
          clearTimeout(timer);
          reject(e);
        });
      });
    } catch (e) {
      this.scheduleRetry(`connect failed: ${(e as Error).message}`);
      return;
    }
    if (this.stopped) {
      rpc.close();
      return;
    }
    this.rpc = rpc;
    rpc.on('notification', (method, params) => {
      // Until the status is read, a notification would be applied to nothing; the status covers it.
      if (this.ready) this.emit('notification', method, params);
    });
    rpc.once('close', (error) => {
      if (this.rpc !== rpc) return;
      this.rpc = undefined;
      const wasReady = this.ready;
      this.ready = false;
      const reason = error ? error.message : 'connection closed';
      if (wasReady) this.emit('down', reason);
      if (!this.stopped) this.scheduleRetry(reason);
    });
    try {
      const status = readServerAnswer(await rpc.request('Server.GetStatus'));
      if (this.rpc !== rpc) return;
      this.ready = true;
      this.downSince = undefined;
      this.log.info({ host, port, version: status.server?.snapserver?.version }, 'connected to snapserver');
      this.emit('up', status);
    } catch (e) {
      if (!this.stopped) this.log.warn({ err: (e as Error).message }, 'Server.GetStatus failed; reconnecting');
      rpc.close();
    }
  }

  private scheduleRetry(reason: string): void {
    if (this.stopped || this.retry) return;
    const now = this.opts.clock.now();
    this.downSince ??= now;
    const downForMs = now - this.downSince;
    const delay = reconnectDelay(downForMs, this.opts.reconnectMinMs, this.opts.reconnectMaxMs);
    this.log.warn({ reason, retryInMs: delay, downForMs }, 'snapserver control connection unavailable');
    this.retry = this.opts.clock.setTimer(() => {
      this.retry = undefined;
      if (!this.stopped) this.attempt = this.connectOnce();
    }, delay);
  }
}

import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../logger';
import { GENA_NT, grantedSeconds, headerValue, parsePropertySet, timeoutHeader } from './gena';
import { httpRequest, NetworkError } from './http-client';

/**
 * GENA as a subscriber (the upnp driver; the messages: gena.ts): we SUBSCRIBE to a service
 * with a callback URL, and the renderer NOTIFYs it with changed state variables (LastChange
 * for AVTransport and RenderingControl).
 */

/** What the subscriptions need of a clock (the hub's Clock is one; tests give a fake). */
export interface Timers {
  /** Runs fn once after ms; the returned handle cancels it. */
  setTimer(fn: () => void, ms: number): TimerHandle;
}
export interface TimerHandle {
  cancel(): void;
}

export type EventHandler = (sid: string | undefined, seq: number, properties: Record<string, string>) => void;

const MAX_NOTIFY_BYTES = 512 * 1024;
/** Wait before retrying a subscription the renderer refused or did not answer. */
const RETRY_MS = 30_000;

/** The callback server: one per driver, one random path per subscription. */
export class GenaServer {
  private server?: Server;
  private readonly routes = new Map<string, EventHandler>();

  constructor(private readonly options: { address?: string; port: number; logger: Logger }) {}

  async start(): Promise<void> {
    const server = createServer((req, res) => this.handle(req, res));
    // Renderers send one NOTIFY per connection; idle sockets need not linger.
    server.keepAliveTimeout = 1000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.address ?? '0.0.0.0', () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    this.options.logger.info({ bind: `${this.options.address ?? '0.0.0.0'}:${this.port}` }, 'GENA callback server listening');
  }

  get port(): number {
    const a = this.server?.address() as AddressInfo | null | undefined;
    if (!a) throw new Error('GENA server is not started');
    return a.port;
  }

  /** Registers a handler under a fresh unguessable path; returns the path and its remover. */
  route(handler: EventHandler): { path: string; remove: () => void } {
    const path = `/gena/${randomBytes(12).toString('base64url')}`;
    this.routes.set(path, handler);
    return { path, remove: () => void this.routes.delete(path) };
  }

  callbackUrl(host: string, path: string): string {
    return `http://${host}:${this.port}${path}`;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    if (req.method !== 'NOTIFY') {
      res.writeHead(405, { Allow: 'NOTIFY', 'Content-Length': 0 });
      res.end();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_NOTIFY_BYTES) chunks.push(c);
    });
    req.on('error', () => undefined);
    req.on('end', () => {
      // Every NOTIFY gets 200, even one we cannot use: some renderers cancel a subscription
      // (or stop eventing altogether) after a single non-200 answer.
      res.writeHead(200, { 'Content-Length': 0 });
      res.end();
      const handler = this.routes.get((req.url ?? '').split('?', 1)[0]);
      if (!handler || size > MAX_NOTIFY_BYTES) return;
      const sid = headerValue(req.headers.sid);
      const seq = Number(headerValue(req.headers.seq) ?? '0');
      let properties: Record<string, string>;
      try {
        properties = parsePropertySet(Buffer.concat(chunks).toString('utf8'));
      } catch (e) {
        this.options.logger.debug({ err: (e as Error).message }, 'unparseable GENA event ignored');
        return;
      }
      try {
        handler(sid, Number.isFinite(seq) ? seq : 0, properties);
      } catch (e) {
        this.options.logger.warn({ err: (e as Error).message }, 'GENA event handler failed');
      }
    });
  }
}

export interface SubscriptionOptions {
  server: GenaServer;
  eventSubUrl: string;
  /** Our address as the renderer reaches it. */
  callbackHost: string;
  timeoutSeconds: number;
  requestTimeoutMs: number;
  localAddress?: string;
  clock: Timers;
  logger: Logger;
  /** Changed state variables, in the order the renderer sent them. */
  onEvent: (properties: Record<string, string>) => void;
  /** The renderer did not answer a renewal: it is probably gone. */
  onLost: (err: Error) => void;
}

/** The renderer answered SUBSCRIBE with an error status. */
export class SubscribeError extends Error {
  constructor(readonly status: number) {
    super(`SUBSCRIBE answered HTTP ${status}`);
    this.name = 'SubscribeError';
  }
}

/**
 * One subscription, kept alive: renewed at half its granted lifetime; when the renderer has
 * forgotten it (412 Precondition Failed after a restart), subscribed again under a new SID.
 */
export class GenaSubscription {
  private sid?: string;
  private renewTimer?: TimerHandle;
  private readonly route: { path: string; remove: () => void };
  private closed = false;
  private refusals = 0;

  constructor(private readonly o: SubscriptionOptions) {
    this.route = o.server.route((sid, _seq, properties) => {
      // Before the SUBSCRIBE answer arrives the SID is unknown: the initial event may overtake it.
      if (this.closed || (this.sid && sid && sid !== this.sid)) return;
      this.o.onEvent(properties);
    });
  }

  get id(): string | undefined {
    return this.sid;
  }

  /** Subscribes anew (new SID). Throws NetworkError or SubscribeError. */
  async subscribe(): Promise<void> {
    this.renewTimer?.cancel();
    this.sid = undefined;
    const res = await httpRequest(this.o.eventSubUrl, {
      method: 'SUBSCRIBE',
      headers: {
        CALLBACK: `<${this.o.server.callbackUrl(this.o.callbackHost, this.route.path)}>`,
        NT: GENA_NT,
        TIMEOUT: timeoutHeader(this.o.timeoutSeconds),
      },
      timeoutMs: this.o.requestTimeoutMs,
      localAddress: this.o.localAddress,
    });
    const sid = headerValue(res.headers.sid);
    if (res.status !== 200 || !sid) throw new SubscribeError(res.status);
    if (this.closed) {
      void this.release(sid);
      return;
    }
    this.sid = sid;
    this.refusals = 0;
    this.scheduleRenewal(grantedSeconds(headerValue(res.headers.timeout), this.o.timeoutSeconds));
  }

  /**
   * Renews now. A renderer that forgot us (restart) gets a fresh subscription; one that does
   * not answer is reported through onLost.
   */
  async renew(): Promise<void> {
    if (this.closed) return;
    this.renewTimer?.cancel();
    try {
      if (!this.sid) {
        await this.subscribe();
        return;
      }
      const res = await httpRequest(this.o.eventSubUrl, {
        method: 'SUBSCRIBE',
        headers: { SID: this.sid, TIMEOUT: timeoutHeader(this.o.timeoutSeconds) },
        timeoutMs: this.o.requestTimeoutMs,
        localAddress: this.o.localAddress,
      });
      if (this.closed) return;
      if (res.status === 200) {
        this.refusals = 0;
        this.scheduleRenewal(grantedSeconds(headerValue(res.headers.timeout), this.o.timeoutSeconds));
        return;
      }
      this.o.logger.info({ status: res.status }, 'GENA renewal refused; subscribing again');
      await this.subscribe();
    } catch (e) {
      if (this.closed) return;
      if (e instanceof NetworkError) {
        // Gone for good, the owner closes this subscription; a hiccup, the retry below mends it.
        this.o.onLost(e);
      } else {
        // A renderer that never takes subscriptions would otherwise warn every 30 s forever.
        const level = this.refusals++ === 0 ? 'warn' : 'debug';
        this.o.logger[level]({ err: (e as Error).message }, 'GENA subscription failed; retrying in 30 s');
      }
      if (!this.closed) this.renewTimer = this.o.clock.setTimer(() => void this.renew(), RETRY_MS);
    }
  }

  /** Tries again in a while: for a first SUBSCRIBE the renderer refused. */
  retryLater(): void {
    if (this.closed) return;
    this.renewTimer?.cancel();
    this.renewTimer = this.o.clock.setTimer(() => void this.renew(), RETRY_MS);
  }

  /** Stops renewing and tells the renderer (best effort, when it is still there). */
  async close(notify: boolean): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.renewTimer?.cancel();
    this.route.remove();
    const sid = this.sid;
    this.sid = undefined;
    if (notify && sid) await this.release(sid);
  }

  private async release(sid: string): Promise<void> {
    try {
      await httpRequest(this.o.eventSubUrl, {
        method: 'UNSUBSCRIBE',
        headers: { SID: sid },
        timeoutMs: Math.min(this.o.requestTimeoutMs, 1500),
        localAddress: this.o.localAddress,
      });
    } catch {
      /* the renderer drops it at expiry anyway */
    }
  }

  private scheduleRenewal(granted: number): void {
    this.renewTimer?.cancel();
    const ms = Math.max(5, granted / 2) * 1000;
    this.renewTimer = this.o.clock.setTimer(() => void this.renew(), ms);
  }
}

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../logger';
import type { AllowList } from '../net/allow-list';
import { installConnectionLimits } from '../net/connection-limits';
import { LimitedLog } from '../logging/limited-log';
import { KeyedBuckets } from '../net/token-bucket';
import { Turns } from '../util/turns';
import type { GenaAnswer } from '../protocols/upnp/gena-publisher';
import type { ServiceName } from './scpd';
import { MAX_SOAP_BYTES } from '../protocols/upnp/soap';

/**
 * The renderers' one HTTP server (node:http): device descriptions, SCPDs, the icon, SOAP
 * control and GENA subscriptions. Bounded: request heads of 8 KiB, bodies of MAX_SOAP_BYTES
 * (413 beyond, read no further), header and request deadlines, and connection limits per
 * address and in all (src/net/connection-limits).
 */

export interface DlnaRoutes {
  description(slug: string): string | undefined;
  scpd(service: string): string | undefined;
  icon(): Buffer;
  control(slug: string, service: RoutedService, body: string, soapAction: string | undefined): Promise<{ status: number; body: string } | undefined>;
  event(method: string, slug: string, service: RoutedService, req: IncomingMessage): GenaAnswer | undefined;
  /** Other GETs (the MediaServer's covers); undefined: 404. */
  resource?(path: string): Promise<{ type: string; body: Buffer } | undefined>;
}

/** The renderers' services and the MediaServer's ContentDirectory. */
export type RoutedService = ServiceName | 'ContentDirectory';

export const HTTP_LIMITS = {
  maxConnections: 256,
  maxConnectionsPerAddress: 32,
  maxHeaderSize: 8 * 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 15_000,
  /**
   * SOAP actions (POSTs, the requests with bodies) a second from one address (burst:
   * actionBurst). A control point sends a few a second per renderer, polling ones a few more;
   * a host sending thousands of 64 KB bodies gets 503 before its body is read.
   */
  actionsPerSecond: 200,
  actionBurst: 400,
  /**
   * SOAP body bytes a second from one address (burst: bodyBurstBytes), counted from
   * Content-Length before the body is read (a chunked body counts as the largest allowed).
   * The parse work is what a LAN host can make the hub do: real actions are 1–4 KB (hundreds
   * a second fit), a flood of 64 KB bodies gets sixteen a second.
   */
  bodyBytesPerSecond: 1024 * 1024,
  bodyBurstBytes: 2 * 1024 * 1024,
};

const SERVICE_RE = /^\/r\/([A-Za-z0-9_-]{1,64})\/(AVTransport|RenderingControl|ConnectionManager|ContentDirectory)\/(control|event)$/;

export class DlnaHttpServer {
  private server?: Server;
  private readonly rate = new KeyedBuckets(HTTP_LIMITS.actionBurst, HTTP_LIMITS.actionsPerSecond, 1024);
  private readonly bodyBytes = new KeyedBuckets(HTTP_LIMITS.bodyBurstBytes, HTTP_LIMITS.bodyBytesPerSecond, 1024);
  private readonly throttled: LimitedLog;
  private readonly turns = new Turns(HTTP_LIMITS.maxConnections);

  constructor(
    private readonly routes: DlnaRoutes,
    private readonly serverHeader: string,
    private readonly log: Logger,
    /** dlna.allow: connections from other hosts are reset before any byte is read. */
    private readonly allow?: AllowList,
  ) {
    this.throttled = new LimitedLog(log, 'DLNA: SOAP action refused (rate limit per address)');
  }

  async listen(host: string, port: number): Promise<AddressInfo> {
    const server = createServer(
      { maxHeaderSize: HTTP_LIMITS.maxHeaderSize, headersTimeout: HTTP_LIMITS.headersTimeoutMs, requestTimeout: HTTP_LIMITS.requestTimeoutMs },
      (req, res) => {
        this.handle(req, res).catch((e: Error) => {
          this.log.warn({ err: e.message }, 'DLNA: request failed');
          if (!res.headersSent) this.reply(res, 500, 'text/plain', 'error');
          else res.destroy();
        });
      },
    );
    server.keepAliveTimeout = 5000;
    server.on('clientError', (_e, socket) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      else socket.destroy();
    });
    const allow = this.allow;
    // An address out of SOAP actions (a flood of bodies) is reset at accept until its bucket
    // refills: cheaper than reading its requests to answer 503, and a real control point
    // never gets there.
    const admits = (a: string) => (!allow || allow.allows(a)) && this.rate.could(a);
    installConnectionLimits(server, { ...HTTP_LIMITS, admits }, this.log, 'DLNA');
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    return server.address() as AddressInfo;
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    await new Promise<void>((resolve) => {
      s.close(() => resolve());
      s.closeAllConnections();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    const method = req.method ?? 'GET';
    const from = req.socket.remoteAddress ?? '?';
    if (method === 'POST' && !this.admitAction(from, bodyCost(req))) {
      // Answered without reading the body, and the connection is not kept.
      this.throttled.warn({ from, method, path: path.slice(0, 100) });
      res.setHeader('Connection', 'close');
      res.setHeader('Retry-After', '1');
      this.reply(res, 503, 'text/plain', 'too many requests from this address');
      req.socket.destroySoon?.();
      return;
    }
    if (method === 'GET' || method === 'HEAD') {
      req.resume();
      const desc = /^\/r\/([A-Za-z0-9_-]{1,64})\/description\.xml$/.exec(path);
      if (desc) {
        const xml = this.routes.description(desc[1]);
        return xml ? this.reply(res, 200, 'text/xml; charset="utf-8"', xml) : this.reply(res, 404, 'text/plain', 'not found');
      }
      const scpd = /^\/scpd\/([A-Za-z]{1,32})\.xml$/.exec(path);
      if (scpd) {
        const xml = this.routes.scpd(scpd[1]);
        return xml ? this.reply(res, 200, 'text/xml; charset="utf-8"', xml) : this.reply(res, 404, 'text/plain', 'not found');
      }
      if (path === '/icon.png') return this.reply(res, 200, 'image/png', this.routes.icon());
      const other = path.length <= 256 ? await this.routes.resource?.(path) : undefined;
      if (other) return this.reply(res, 200, other.type, other.body, { 'Cache-Control': 'max-age=3600' });
      return this.reply(res, 404, 'text/plain', 'not found');
    }
    const m = SERVICE_RE.exec(path);
    if (!m) {
      req.resume();
      return this.reply(res, 404, 'text/plain', 'not found');
    }
    const [, slug, service, kind] = m as unknown as [string, string, RoutedService, 'control' | 'event'];
    if (kind === 'event') {
      req.resume();
      if (method !== 'SUBSCRIBE' && method !== 'UNSUBSCRIBE') return this.reply(res, 405, 'text/plain', 'method not allowed');
      const answer = this.routes.event(method, slug, service, req);
      if (!answer) return this.reply(res, 404, 'text/plain', 'not found');
      res.writeHead(answer.status, {
        ...answer.headers,
        DATE: new Date().toUTCString(),
        ...(answer.headers['CONTENT-LENGTH'] ? {} : { 'CONTENT-LENGTH': '0' }),
      });
      res.end();
      return;
    }
    if (method !== 'POST') {
      req.resume();
      return this.reply(res, 405, 'text/plain', 'method not allowed');
    }
    const body = await readBody(req, MAX_SOAP_BYTES);
    if (body === undefined) {
      // Oversized: answered without reading the rest, and the connection is not kept.
      res.setHeader('Connection', 'close');
      this.reply(res, 413, 'text/plain', 'request body too large');
      req.socket.destroySoon?.();
      return;
    }
    // Parsing is the CPU a LAN host can make the hub spend: one body per event-loop turn.
    if (!(await this.turns.take())) {
      res.setHeader('Retry-After', '1');
      return this.reply(res, 503, 'text/plain', 'busy');
    }
    const soapAction = req.headers.soapaction;
    const out = await this.routes.control(slug, service, body, Array.isArray(soapAction) ? soapAction[0] : soapAction);
    if (!out) return this.reply(res, 404, 'text/plain', 'not found');
    this.reply(res, out.status, 'text/xml; charset="utf-8"', out.body, { EXT: '' });
  }

  /**
   * A SOAP action's two budgets, both or neither: one action and its body's bytes. Checked
   * before either is spent, so a body refused for bytes costs its sender no action (else a
   * host over its byte budget drained its action budget too, and was reset at accept).
   */
  private admitAction(from: string, cost: number): boolean {
    const actions = this.rate.get(from);
    const bytes = this.bodyBytes.get(from);
    if (!actions?.has(1) || !bytes?.has(cost)) return false;
    return actions.take() && bytes.take(cost);
  }

  private reply(res: ServerResponse, status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}): void {
    const b = typeof body === 'string' ? Buffer.from(body) : body;
    res.writeHead(status, { 'Content-Type': type, 'Content-Length': b.length, Server: this.serverHeader, ...extra });
    res.end(res.req.method === 'HEAD' ? undefined : b);
  }
}

/** What a body counts against its sender's byte budget: its announced length (at least 1 KB), or the most allowed. */
function bodyCost(req: IncomingMessage): number {
  const declared = Number(req.headers['content-length']);
  return Number.isFinite(declared) && declared >= 0 ? Math.min(Math.max(declared, 1024), MAX_SOAP_BYTES) : MAX_SOAP_BYTES;
}

/** The body as text, or undefined when it is longer than max bytes (announced or actual). */
function readBody(req: IncomingMessage, max: number): Promise<string | undefined> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > max) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > max) {
        over = true;
        parts.length = 0;
        req.pause();
        resolve(undefined);
        return;
      }
      parts.push(c);
    });
    req.on('end', () => {
      if (!over) resolve(Buffer.concat(parts).toString('utf8'));
    });
    req.on('error', reject);
  });
}

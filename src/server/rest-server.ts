import type { FastifyInstance, FastifyReply } from 'fastify';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { HubError, errorBody } from '../core/errors';
import type { DispatchResult, SessionMemo } from '../operations/dispatch';
import type { Socket } from 'node:net';
import type { ExtensionContext } from '../extensions/extension';
import type { Logger } from '../logger';
import { clip } from '../redact';
import { BearerAuth } from './auth';
import { installConnectionLimits } from '../net/connection-limits';
import { DEFAULT_REST_LIMITS, maxHeaderBytes, type RestLimits } from '../http/limits';
export { DEFAULT_REST_LIMITS, maxHeaderBytes, type RestLimits };
import { registerSampleRoute, SAMPLE_ROUTE } from './sample-route';
import { streamEvents } from './event-stream';
import { LimitedLog } from '../logging/limited-log';
import {
  apiCorsOptions,
  operationAnswer,
  operationParams,
  operationRoutes,
  resolveOperationPath,
  unroutedError,
  type OperationRoute,
} from '../http/operation-routes';
import { installRequestLineRepair } from '../http/request-line-repair';
import { buildOpenApi } from '../http/openapi';
import { BROWSER_CLIENT_PATHS, registerBrowserClient } from '../web-client/routes';

export interface RestServerOptions {
  host: string;
  port: number;
  /** The API token; null turns authentication off (trusted LANs only). */
  token: string | null;
  /** Access-Control-Allow-Origin; '*' by default because the sample clients call from other origins. */
  corsOrigin: string;
  logger: Logger;
  version: string;
  limits?: Partial<RestLimits>;
}

/** Where a connection keeps its SessionMemo (the session token it last presented, hashed once). */
const SESSION_MEMO = Symbol('speakerhub.sessionMemo');

const OPENAPI_PATHS = ['/api/v1/openapi.json', '/v1/openapi.json', '/openapi.json'];
/** Served without a token: the API description and the health check. */
const PUBLIC_PATHS = new Set([...OPENAPI_PATHS, '/healthz']);

export class RestServer {
  /** The HTTP server: operation GETs are answered on it directly (fastPath), the rest by fastify. */
  readonly server: Server;
  private readonly auth: BearerAuth | null;
  readonly limits: RestLimits;
  private readonly startedAt = Date.now();
  private healthSession?: string;
  private readonly refusals: LimitedLog;
  private readonly slowStreams: LimitedLog;
  private readonly timeouts: LimitedLog;
  private readonly busyStreams: LimitedLog;
  /** Requests are logged one by one only at debug level (speed; URLs carry session tokens). */
  private readonly accessLog: boolean;
  private readonly operationRoutes = operationRoutes();
  private readonly headerBytes: number;
  /** fastHeaders' answer, reused: read at once by the request handler, so one object serves every request. */
  private readonly headers: FastHeaders = {};
  /**
   * fastify serves everything but authorized operation GETs (CORS preflights, refusals, the
   * event stream, OpenAPI, the browser page, unknown paths). It is built on the first such
   * request: a hub that only answers operations (an automation polling it) never loads it.
   */
  private app?: Promise<{ app: FastifyInstance; handle: (req: IncomingMessage, res: ServerResponse) => void }>;
  private closing = false;

  constructor(
    private readonly ctx: ExtensionContext,
    private readonly options: RestServerOptions,
  ) {
    this.auth = options.token ? new BearerAuth(options.token) : null;
    const limits = (this.limits = { ...DEFAULT_REST_LIMITS, ...options.limits });
    this.refusals = new LimitedLog(options.logger, 'request refused: no API token, or a wrong one (Authorization: Bearer)');
    this.slowStreams = new LimitedLog(options.logger, 'event stream closed: its client does not read');
    this.timeouts = new LimitedLog(options.logger, 'connection closed: request not received within the header/request timeout');
    this.busyStreams = new LimitedLog(options.logger, 'event stream refused: limits.maxEventStreams reached');
    this.accessLog = options.logger.isLevelEnabled('debug');
    const headerBytes = (this.headerBytes = maxHeaderBytes(limits.maxTextLength));
    const server = (this.server = createServer(
      {
        maxHeaderSize: headerBytes,
        headersTimeout: limits.headersTimeoutMs,
        requestTimeout: limits.requestTimeoutMs,
        // Answered below with the API's error shape instead of Node's bare 400.
        requireHostHeader: false,
        keepAlive: true,
        keepAliveInitialDelay: 30_000,
        // Timeouts are enforced by this periodic check (default every 30 s): make it match them.
        connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
      },
      (req, res) => {
        // From the raw header list: reading req.headers would build the whole header object,
        // a measurable share of an operation GET that needs only these two.
        const { host, authorization } = fastHeaders(req.rawHeaders, this.headers);
        if (!host && req.httpVersionMinor >= 1) {
          res.setHeader('Connection', 'close');
          return this.send(res, 400, errorBody(new HubError('InvalidParameter', 'HTTP/1.1 requests need a Host header.')));
        }
        if (this.accessLog) this.logAccess(req, res);
        if (!this.fastPath(req, res, authorization)) this.toFastify(req, res);
      },
    ));
    installRequestLineRepair(server, { timeoutMs: limits.headersTimeoutMs, maxBytes: headerBytes });
    installConnectionLimits(server, limits, options.logger, 'REST server');
    // A request Node cannot parse at all still gets the API's error shape.
    server.on('clientError', (err, socket) => this.clientError(err, socket));
  }

  private clientError(err: Error, socket: import('node:stream').Duplex): void {
    if (!socket.writable) return void socket.destroy();
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      // limits.headersTimeoutSeconds / requestTimeoutSeconds: a trickling or stalled client.
      this.timeouts.warn({ ip: (socket as import('node:net').Socket).remoteAddress });
      return void socket.end('HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    }
    const body = JSON.stringify(
      errorBody(
        code === 'HPE_HEADER_OVERFLOW'
          ? new HubError('InvalidParameter', `The request head is over ${this.headerBytes} bytes (room for a Text of tts.maxTextLength characters).`)
          : new HubError('InvalidParameter', `Malformed HTTP request (${clip(code ?? err.message, 80)}).`),
      ),
    );
    socket.end(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }

  /** Hands a request to fastify, building it first if this is the first one. */
  private toFastify(req: IncomingMessage, res: ServerResponse): void {
    this.app ??= this.buildApp();
    this.app.then(
      ({ handle }) => handle(req, res),
      (e: unknown) => {
        this.options.logger.error({ err: e instanceof Error ? e.message : String(e) }, 'the REST routes could not be built');
        this.send(res, 500, errorBody(new HubError('InternalError', 'The hub hit an unexpected fault; it has been logged.')));
      },
    );
  }

  private async buildApp(): Promise<{ app: FastifyInstance; handle: (req: IncomingMessage, res: ServerResponse) => void }> {
    const [{ default: Fastify }, { default: cors }] = await Promise.all([import('fastify'), import('@fastify/cors')]);
    const options = this.options;
    let handle: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
    const app = Fastify({
      // Fastify's own request logging stays off; the access log (debug) and faults are ours.
      logger: false,
      // HEAD of an operation would run it (a play!) and drop the answer: GET only.
      exposeHeadRoutes: false,
      routerOptions: { ignoreDuplicateSlashes: true, ignoreTrailingSlash: true, maxParamLength: 500 },
      // fastify routes requests of the server the fast path owns; it never listens itself.
      serverFactory: (handler) => {
        handle = handler;
        return this.server;
      },
      // Our own clientError listener answers (it is on the server from the start).
      clientErrorHandler: () => undefined,
      // A path the router cannot decode (a malformed %-sequence) too; no hook runs for it.
      frameworkErrors: (err, _req, reply) => {
        const e =
          (err.statusCode ?? 500) < 500
            ? new HubError('InvalidParameter', `Malformed request path (${err.code}).`)
            : new HubError('InternalError', 'The hub hit an unexpected fault; it has been logged.');
        return (reply as FastifyReply).code(e.status).header('Access-Control-Allow-Origin', options.corsOrigin).send(errorBody(e));
      },
    });
    app.register(cors, apiCorsOptions(options.corsOrigin));
    this.routes(app);
    await app.ready();
    if (this.closing) await app.close();
    return { app, handle: handle! };
  }

  /** A new API token (rotation); only when authentication is on. */
  setToken(token: string): void {
    this.auth?.replace(token);
  }

  get url(): string {
    const addr = this.server.address();
    if (!addr || typeof addr === 'string') throw new Error('server is not listening');
    const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
    return `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${addr.port}`;
  }

  async start(): Promise<string> {
    const server = this.server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: this.options.host, port: this.options.port }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return this.url;
  }

  /** Ends open event streams (fastify's preClose), then stops listening and closes idle connections. */
  async stop(): Promise<void> {
    this.closing = true;
    const built = await this.app?.catch(() => undefined);
    await built?.app.close();
    const server = this.server;
    if (!server.listening) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    await closed;
  }

  private routes(app: FastifyInstance): void {
    app.addHook('onRequest', async (req, reply) => {
      const routeUrl = req.routeOptions.url ?? '';
      if (!this.auth || req.method === 'OPTIONS' || PUBLIC_PATHS.has(routeUrl) || routeUrl === SAMPLE_ROUTE || BROWSER_CLIENT_PATHS.has(routeUrl))
        return;
      const queryToken = req.routeOptions.url === '/api/v1/events' ? (req.query as Record<string, string>).access_token : undefined;
      if (!this.authorized(req.raw, queryToken)) {
        // Only the path, cut short: a query can carry secrets, and a 15 KB path must not cost 15 KB of log.
        this.refusals.warn({ path: clip(req.url.split('?')[0], 100), ip: req.ip });
        reply.header('WWW-Authenticate', 'Bearer realm="SpeakerHub"');
        return this.fail(
          reply,
          new HubError('Unauthorized', 'A valid "Authorization: Bearer <token>" header is required; the token is printed when the hub starts.'),
        );
      }
    });

    const openapi = buildOpenApi(this.options.version);
    for (const path of OPENAPI_PATHS) app.get(path, async () => openapi);
    app.get('/healthz', async () => this.health());
    registerSampleRoute(app, this.ctx.config.dataDir);
    registerBrowserClient(app, () => ({ mode: 'local' }));
    // Open event streams never end by themselves: close() ends them, or it would wait for every client.
    const streams = new Set<ServerResponse>();
    app.addHook('preClose', async () => {
      for (const res of streams) res.end();
    });
    app.get('/api/v1/events', (req, reply) => {
      if (streams.size >= this.limits.maxEventStreams) {
        this.busyStreams.warn({ open: streams.size, ip: req.ip });
        return this.fail(
          reply,
          new HubError('Busy', `${streams.size} event streams are open, the most this hub allows (limits.maxEventStreams); retry later.`),
        );
      }
      reply.hijack();
      const res = reply.raw;
      streams.add(res);
      res.on('close', () => streams.delete(res));
      streamEvents(res, {
        subscribe: this.ctx.subscribe,
        uuid: this.ctx.uuid,
        corsOrigin: this.options.corsOrigin,
        limits: { maxQueuedEvents: this.limits.eventStreamMaxQueued, maxBufferedBytes: this.limits.eventStreamBufferBytes },
        onSlow: () => this.slowStreams.warn({ ip: req.ip }),
      });
    });

    // Operations have no fastify routes: every authorized GET of one is answered by fastPath
    // (both dialects, doubled and trailing slashes); what reaches fastify is a refusal or unrouted.

    app.setNotFoundHandler((req, reply) => {
      const e = unroutedError(req.method, req.url);
      if (e.code === 'MethodNotAllowed') reply.header('Allow', 'GET, OPTIONS');
      return this.fail(reply, e);
    });

    app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
      const status = err.statusCode ?? 500;
      if (status >= 500) this.options.logger.error({ err: clip(err.message, 300), path: clip(req.url.split('?')[0], 100) }, 'request failed');
      const e =
        status < 500
          ? new HubError('InvalidParameter', `Malformed request: ${clip(err.message, 200)}`)
          : new HubError('InternalError', 'The hub hit an unexpected fault; it has been logged.');
      return reply.code(status < 500 ? status : 500).send(errorBody(e));
    });
  }

  /**
   * Authorized operation GETs — nearly all traffic — are answered here, and only here, before
   * fastify's request lifecycle (hooks, router, reply), which costs more than the operation
   * itself. Anything else (CORS preflights, refused auth, other methods, unknown paths, events,
   * OpenAPI, the browser client) goes on to fastify, which answers refusals and unrouted
   * requests in the same error shape.
   */
  private fastPath(req: IncomingMessage, res: ServerResponse, authorization: string | undefined): boolean {
    if (req.method !== 'GET') return false;
    const url = req.url ?? '';
    const found = resolveOperationPath(this.operationRoutes, url);
    if (!found || (this.auth && !this.auth.check(authorization))) return false;
    const { route, legacy } = found;
    const socket = req.socket as Socket & { [SESSION_MEMO]?: SessionMemo };
    const result = this.ctx.run(route.op, operationParams(route, url), (socket[SESSION_MEMO] ??= {}));
    if (result instanceof Promise) result.then((r) => this.answer(res, route, legacy, r));
    else this.answer(res, route, legacy, result);
    return true;
  }

  /** The one bearer check of every request, the fast path's and fastify's (events may carry the token in the query). */
  private authorized(req: IncomingMessage, queryToken?: string): boolean {
    return !this.auth || this.auth.check(req.headers.authorization, queryToken);
  }

  /** The access log (debug level) of every request, whichever path answers it: only the path, cut short (queries carry tokens). */
  private logAccess(req: IncomingMessage, res: ServerResponse): void {
    const t0 = performance.now();
    const method = req.method;
    const path = clip((req.url ?? '').split('?')[0], 100);
    res.once('finish', () => this.options.logger.debug({ method, path, status: res.statusCode, ms: Math.round(performance.now() - t0) }, 'request'));
  }

  /** GET /healthz: for monitors and container health checks, no token needed. */
  private async health(): Promise<Record<string, unknown>> {
    // Through the operation dispatch like every front end, on a trusted session of its own.
    this.healthSession ??= this.ctx.openTrustedSession();
    const r = await this.ctx.dispatch('device_list', { SessionToken: this.healthSession });
    const list = r.ok ? ((r.body.DeviceList as { Active: boolean }[] | undefined) ?? []) : [];
    return {
      status: r.ok ? 'ok' : 'degraded',
      version: this.options.version,
      uptime: Math.floor((Date.now() - this.startedAt) / 1000),
      speakers: { total: list.length, available: list.filter((d) => d.Active).length },
    };
  }

  /** Sends a dispatch result; a success in the current dialect (nearly every answer) goes out as it is. */
  private answer(res: ServerResponse, route: OperationRoute, legacy: boolean, result: DispatchResult): void {
    if (result.ok && !legacy) return this.send(res, 200, result.body);
    const a = operationAnswer(route, legacy, result);
    this.send(res, a.status, a.body);
  }

  private send(res: ServerResponse, status: number, body: unknown): void {
    const json = JSON.stringify(body);
    res.writeHead(status, {
      'access-control-allow-origin': this.options.corsOrigin,
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(json),
    });
    res.end(json);
  }

  private fail(reply: FastifyReply, e: HubError): FastifyReply {
    return reply.code(e.status).send(errorBody(e));
  }
}

/**
 * The Host and Authorization headers from the raw list, as req.headers has them: a repeated
 * one counts once, the first (Node drops the repeats of both).
 */
export function fastHeaders(raw: readonly string[], out: FastHeaders = {}): FastHeaders {
  let host: string | undefined;
  let authorization: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    // Length first: only a name that can match is lower-cased (an allocation).
    if (name.length === 4 && host === undefined && name.toLowerCase() === 'host') host = raw[i + 1];
    else if (name.length === 13 && authorization === undefined && name.toLowerCase() === 'authorization') authorization = raw[i + 1];
  }
  out.host = host;
  out.authorization = authorization;
  return out;
}

export interface FastHeaders {
  host?: string;
  authorization?: string;
}

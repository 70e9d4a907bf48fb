import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import cors from '@fastify/cors';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { HubError, errorBody } from '../core/errors';
import type { ExtensionContext } from '../extensions/extension';
import { SESSION_PARAM_ALIASES, type DispatchResult } from '../operations/dispatch';
import { OPERATIONS, parameterNames, type Operation } from '../operations/table';
import type { Logger } from '../logger';
import { BearerAuth } from './auth';
import { streamEvents } from './event-stream';
import { parseLenientQuery } from './lenient-query';
import { installRequestLineRepair } from './request-line-repair';
import { buildOpenApi } from './openapi';

export interface RestServerOptions {
  host: string;
  port: number;
  /** The API token; null turns authentication off (trusted LANs only). */
  token: string | null;
  /** Access-Control-Allow-Origin; '*' by default because the sample clients call from other origins. */
  corsOrigin: string;
  logger: Logger;
  version: string;
}

/** Both API dialects: the current one and the first version's (compatibility.md, Older clients). */
const DIALECTS = [
  { prefix: '/api/v1', legacy: false },
  { prefix: '/v1', legacy: true },
] as const;

/** Names that never belong to a free-text value even when the operation does not take them. */
const ALWAYS_KNOWN = ['Priority', 'access_token', '_', ...SESSION_PARAM_ALIASES];

const PUBLIC_PATHS = new Set(['/api/v1/openapi.json', '/openapi.json']);

interface Answer {
  status: number;
  body: unknown;
}

interface OperationRoute {
  op: Operation;
  /** Parameter names that end a free-text value in the lenient query parser. */
  known: ReadonlySet<string>;
}

export class RestServer {
  readonly app: FastifyInstance;
  private readonly auth: BearerAuth | null;
  private readonly operationRoutes = new Map<string, OperationRoute>(
    OPERATIONS.map((op) => [op.name, { op, known: new Set([...parameterNames(op), ...ALWAYS_KNOWN]) }]),
  );

  constructor(
    private readonly ctx: ExtensionContext,
    private readonly options: RestServerOptions,
  ) {
    this.auth = options.token ? new BearerAuth(options.token) : null;
    this.app = Fastify({
      // Requests are not logged one by one (speed, and URLs carry session tokens); faults are.
      logger: false,
      // HEAD of an operation would run it (a play!) and drop the answer: GET only.
      exposeHeadRoutes: false,
      routerOptions: { ignoreDuplicateSlashes: true, ignoreTrailingSlash: true, maxParamLength: 500 },
      serverFactory: (handler) => {
        const server = createServer((req, res) => {
          if (!this.fastPath(req, res)) handler(req, res);
        });
        installRequestLineRepair(server);
        return server;
      },
      // A request Node cannot parse at all still gets the API's error shape.
      clientErrorHandler: (err, socket) => {
        if (!socket.writable) return socket.destroy();
        const body = JSON.stringify(errorBody(new HubError('InvalidParameter', `Malformed HTTP request (${(err as NodeJS.ErrnoException).code ?? err.message}).`)));
        socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
      },
      // A path the router cannot decode (a malformed %-sequence) too; no hook runs for it.
      frameworkErrors: (err, _req, reply) => {
        const e = (err.statusCode ?? 500) < 500 ? new HubError('InvalidParameter', `Malformed request path (${err.code}).`) : new HubError('InternalError', 'The hub hit an unexpected fault; it has been logged.');
        return (reply as FastifyReply).code(e.status).header('Access-Control-Allow-Origin', options.corsOrigin).send(errorBody(e));
      },
    });
    this.routes();
  }

  get url(): string {
    const addr = this.app.server.address();
    if (!addr || typeof addr === 'string') throw new Error('server is not listening');
    const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
    return `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${addr.port}`;
  }

  async start(): Promise<string> {
    await this.app.listen({ host: this.options.host, port: this.options.port });
    return this.url;
  }

  async stop(): Promise<void> {
    await this.app.close();
  }

  private routes(): void {
    const app = this.app;
    app.register(cors, {
      origin: this.options.corsOrigin,
      methods: ['GET', 'HEAD', 'OPTIONS'],
      allowedHeaders: ['Authorization', 'Content-Type', 'Cache-Control', 'X-Requested-With'],
      maxAge: 600,
    });

    app.addHook('onRequest', async (req, reply) => {
      if (!this.auth || req.method === 'OPTIONS' || PUBLIC_PATHS.has(req.routeOptions.url ?? '')) return;
      const queryToken = req.routeOptions.url === '/api/v1/events' ? (req.query as Record<string, string>).access_token : undefined;
      if (!this.auth.check(req.headers.authorization, queryToken)) {
        // Only the path: a query can carry secrets under names a redaction pattern misses (Session%54oken=...).
        this.options.logger.warn({ path: req.url.split('?')[0], ip: req.ip }, 'request refused: missing or wrong bearer token');
        reply.header('WWW-Authenticate', 'Bearer realm="SpeakerHub"');
        return this.fail(reply, new HubError('Unauthorized', 'A valid "Authorization: Bearer <token>" header is required; the token is printed when the hub starts.'));
      }
    });

    const openapi = buildOpenApi(this.options.version);
    for (const path of PUBLIC_PATHS) app.get(path, async () => openapi);
    // Open event streams never end by themselves: close() ends them, or it would wait for every client.
    const streams = new Set<ServerResponse>();
    app.addHook('preClose', async () => {
      for (const res of streams) res.end();
    });
    app.get('/api/v1/events', (req, reply) => {
      streams.add(reply.raw);
      reply.raw.on('close', () => streams.delete(reply.raw));
      streamEvents(this.ctx, req, reply, this.options.corsOrigin);
    });

    for (const route of this.operationRoutes.values()) {
      for (const d of DIALECTS) {
        app.get(`${d.prefix}/${route.op.name}`, async (req, reply) => {
          const { status, body } = await this.run(route, d.legacy, req.url);
          return reply.code(status).send(body);
        });
      }
    }

    app.setNotFoundHandler((req, reply) => {
      if (req.method !== 'GET' && req.method !== 'OPTIONS') {
        reply.header('Allow', 'GET, OPTIONS');
        return this.fail(reply, new HubError('MethodNotAllowed', `${req.method} is not supported; operations are GET requests.`));
      }
      const name = req.url.split('?')[0].split('/').filter(Boolean).pop() ?? '';
      return this.fail(reply, new HubError('UnknownOperation', `No operation at ${req.method} ${req.url.split('?')[0]} (${name || 'empty'}); see /api/v1/openapi.json.`));
    });

    app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
      const status = err.statusCode ?? 500;
      if (status >= 500) this.options.logger.error({ err: err.message, path: req.url.split('?')[0] }, 'request failed');
      const e = status < 500 ? new HubError('InvalidParameter', `Malformed request: ${err.message}`) : new HubError('InternalError', 'The hub hit an unexpected fault; it has been logged.');
      return reply.code(status < 500 ? status : 500).send(errorBody(e));
    });
  }

  /** Runs an operation for a request URL; shared by the fast path and the fastify routes. */
  private run(route: OperationRoute, legacy: boolean, url: string): Answer | Promise<Answer> {
    const result = this.ctx.run(route.op, parseLenientQuery(url, route.known));
    return result instanceof Promise ? result.then((r) => this.answer(route, legacy, r)) : this.answer(route, legacy, result);
  }

  private answer(route: OperationRoute, legacy: boolean, result: DispatchResult): Answer {
    if (!result.ok) return { status: result.error.status, body: errorBody(result.error) };
    if (legacy && route.op.name === 'init_session') {
      // The first API version named the token SessionID.
      const { SessionToken, ...rest } = result.body;
      return { status: 200, body: { SessionID: SessionToken, ...rest } };
    }
    return { status: 200, body: result.body };
  }

  /**
   * Authorized operation GETs — nearly all traffic — are answered here, before fastify's
   * request lifecycle (hooks, router, reply), which costs more than the operation itself.
   * Same auth, parser, dispatch and response headers as the routes; anything else (CORS
   * preflights, failed auth, unknown paths, events, OpenAPI) goes on to fastify.
   */
  private fastPath(req: IncomingMessage, res: ServerResponse): boolean {
    if (req.method !== 'GET') return false;
    const url = req.url ?? '';
    const q = url.indexOf('?');
    let path = q < 0 ? url : url.slice(0, q);
    if (path.includes('//')) path = path.replace(/\/{2,}/g, '/');
    if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
    const legacy = path.startsWith('/v1/');
    if (!legacy && !path.startsWith('/api/v1/')) return false;
    const route = this.operationRoutes.get(path.slice(legacy ? 4 : 8));
    if (!route || (this.auth && !this.auth.check(req.headers.authorization))) return false;
    const answer = this.run(route, legacy, url);
    if (answer instanceof Promise) answer.then((a) => this.send(res, a.status, a.body));
    else this.send(res, answer.status, answer.body);
    return true;
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

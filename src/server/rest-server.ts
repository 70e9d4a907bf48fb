import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import cors from '@fastify/cors';
import { createServer } from 'node:http';
import { HubError, errorBody } from '../core/errors';
import type { HubCore } from '../core/hub-core';
import { dispatch, SESSION_PARAM_ALIASES } from '../operations/dispatch';
import { OPERATIONS, parameterNames, type Operation } from '../operations/table';
import { redactUrl, type Logger } from '../logger';
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

export class RestServer {
  readonly app: FastifyInstance;
  private readonly auth: BearerAuth | null;

  constructor(
    private readonly hub: HubCore,
    private readonly options: RestServerOptions,
  ) {
    this.auth = options.token ? new BearerAuth(options.token) : null;
    this.app = Fastify({
      // Requests are not logged one by one (speed, and URLs carry session tokens); faults are.
      logger: false,
      routerOptions: { ignoreDuplicateSlashes: true, ignoreTrailingSlash: true, maxParamLength: 500 },
      serverFactory: (handler) => {
        const server = createServer(handler);
        installRequestLineRepair(server);
        return server;
      },
      // A request Node cannot parse at all still gets the API's error shape.
      clientErrorHandler: (err, socket) => {
        if (!socket.writable) return socket.destroy();
        const body = JSON.stringify(errorBody(new HubError('InvalidParameter', `Malformed HTTP request (${(err as NodeJS.ErrnoException).code ?? err.message}).`)));
        socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
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
        this.options.logger.warn({ url: redactUrl(req.url), ip: req.ip }, 'request refused: missing or wrong bearer token');
        reply.header('WWW-Authenticate', 'Bearer realm="SpeakerHub"');
        return this.fail(reply, new HubError('Unauthorized', 'A valid "Authorization: Bearer <token>" header is required; the token is printed when the hub starts.'));
      }
    });

    const openapi = buildOpenApi(this.options.version);
    for (const path of PUBLIC_PATHS) app.get(path, async () => openapi);
    app.get('/api/v1/events', (req, reply) => streamEvents(this.hub, req, reply, this.options.corsOrigin));

    for (const op of OPERATIONS) {
      const known = new Set([...parameterNames(op), ...ALWAYS_KNOWN]);
      for (const d of DIALECTS) {
        app.get(`${d.prefix}/${op.name}`, (req, reply) => this.run(op, known, d.legacy, req, reply));
      }
    }

    app.setNotFoundHandler((req, reply) => {
      const name = req.url.split('?')[0].split('/').filter(Boolean).pop() ?? '';
      return this.fail(reply, new HubError('UnknownOperation', `No operation at ${req.method} ${redactUrl(req.url).split('?')[0]} (${name || 'empty'}); see /api/v1/openapi.json.`));
    });

    app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
      const status = err.statusCode ?? 500;
      if (status >= 500) this.options.logger.error({ err: err.message, url: redactUrl(req.url) }, 'request failed');
      const e = status < 500 ? new HubError('InvalidParameter', `Malformed request: ${err.message}`) : new HubError('InternalError', 'The hub hit an unexpected fault; it has been logged.');
      return reply.code(status < 500 ? status : 500).send(errorBody(e));
    });
  }

  private async run(op: Operation, known: ReadonlySet<string>, legacy: boolean, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const raw = parseLenientQuery(req.url, known);
    const result = await dispatch(this.hub, op.name, raw);
    if (!result.ok) return this.fail(reply, result.error);
    if (legacy && op.name === 'init_session') {
      // The first API version named the token SessionID.
      const { SessionToken, ...rest } = result.body;
      return { SessionID: SessionToken, ...rest };
    }
    return result.body;
  }

  private fail(reply: FastifyReply, e: HubError): FastifyReply {
    return reply.code(e.status).send(errorBody(e));
  }
}

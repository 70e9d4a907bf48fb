import cors from '@fastify/cors';
import Fastify, { type FastifyInstance } from 'fastify';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:http';
import { HubError, errorBody } from '../core/errors';
import { systemClock, type Clock } from '../core/clock';
import { createLogger, type Logger } from '../logger';
import { apiCorsOptions, unroutedError } from '../http/operation-routes';
import { buildOpenApi } from '../http/openapi';
import { installRequestLineRepair } from '../http/request-line-repair';
import { DEFAULT_REST_LIMITS, maxHeaderBytes } from '../http/limits';
import { VERSION } from '../version';
import { registerBrowserClient } from '../web-client/routes';
import { Accounts } from './accounts/accounts';
import { Clients, WEB_CLIENT_ID } from './accounts/clients';
import { LinkTokens } from './accounts/link-tokens';
import { WebSessions } from './accounts/web-sessions';
import type { CloudContext } from './context';
import { adminRoutes, removeAdminInfo, runningCloud, writeAdminInfo } from './admin';
import { accountApi } from './http/account-api';
import { oauthRoutes } from './http/oauth-routes';
import { RateLimiter, type RateLimit } from './http/rate-limit';
import { webRoutes } from './http/web-routes';
import { CodeStore } from './oauth/code-store';
import { createOAuthServer } from './oauth/model';
import { TokenStore } from './oauth/token-store';
import { HubRegistry } from './relay/hub-registry';
import { LinkServer, type LinkServerOptions } from './relay/link-server';
import { relayFastPath, relayRoutes } from './relay/relay-routes';
import type { Database } from './storage/database';
import { openDatabase } from './storage/open';

export interface CloudOptions {
  host?: string;
  port?: number;
  dataDir: string;
  /** The origin browsers and hubs use (e.g. https://cloud.example.org); default http://host:port. */
  publicUrl?: string;
  /** postgres://… for PostgreSQL; default: the embedded SQLite file in dataDir. */
  database?: string;
  /** Behind a reverse proxy: take the client address from X-Forwarded-For (for the rate limits). */
  trustProxy?: boolean;
  clock?: Clock;
  logger?: Logger;
  link?: Partial<LinkServerOptions> & { recentlyOnlineMs?: number; reconnectWaitMs?: number };
  rateLimits?: Partial<Record<'signinByAddress' | 'signinByUser' | 'token' | 'signup', RateLimit>>;
}

const DEFAULT_LIMITS: Record<'signinByAddress' | 'signinByUser' | 'token' | 'signup', RateLimit> = {
  signinByAddress: { burst: 30, perSecond: 0.5 },
  signinByUser: { burst: 10, perSecond: 0.1 },
  token: { burst: 60, perSecond: 2 },
  signup: { burst: 10, perSecond: 0.05 },
};

/**
 * SpeakerHub Cloud: accounts, OAuth 2.0, hubs' links and the relay of API requests to
 * them, and the browser client. `speakerhub cloud` runs one.
 */
export class CloudServer {
  readonly app: FastifyInstance;
  private ctx?: CloudContext;
  private links?: LinkServer;
  private db?: Database;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private adminToken?: string;
  private housekeeping?: NodeJS.Timeout;

  constructor(private readonly options: CloudOptions) {
    this.logger = options.logger ?? createLogger();
    this.clock = options.clock ?? systemClock;
    this.app = Fastify({
      logger: false,
      exposeHeadRoutes: false,
      trustProxy: options.trustProxy ?? false,
      bodyLimit: 64 * 1024,
      routerOptions: { ignoreDuplicateSlashes: true, ignoreTrailingSlash: true, maxParamLength: 500 },
      serverFactory: (handler) => {
        const server = createServer((req, res) => {
          if (!this.ctx || !relayFastPath(this.ctx, req, res)) handler(req, res);
        });
        installRequestLineRepair(server, {
          timeoutMs: DEFAULT_REST_LIMITS.headersTimeoutMs,
          maxBytes: maxHeaderBytes(DEFAULT_REST_LIMITS.maxTextLength),
        });
        return server;
      },
    });
  }

  get url(): string {
    const addr = this.app.server.address();
    if (!addr || typeof addr === 'string') throw new Error('the cloud is not listening');
    const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
    return `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${addr.port}`;
  }

  get context(): CloudContext {
    if (!this.ctx) throw new Error('the cloud is not started');
    return this.ctx;
  }

  async start(): Promise<string> {
    const o = this.options;
    await mkdir(o.dataDir, { recursive: true });
    const other = await runningCloud(o.dataDir);
    if (other) throw new Error(`Another cloud (process ${other.pid}, ${other.url}) is using the data folder ${o.dataDir}.`);
    const db = await openDatabase({ dataDir: o.dataDir, database: o.database });
    this.db = db;
    const accounts = new Accounts(db);
    const clients = new Clients(db);
    const codes = new CodeStore(db, this.clock);
    const tokens = new TokenStore(db, this.clock);
    const limits = { ...DEFAULT_LIMITS, ...o.rateLimits };
    const ctx: CloudContext = {
      db,
      accounts,
      clients,
      codes,
      tokens,
      linkTokens: new LinkTokens(db),
      webSessions: new WebSessions(db, this.clock),
      oauth: createOAuthServer({ accounts, clients, codes, tokens, clock: this.clock }),
      registry: new HubRegistry({
        recentlyOnlineMs: o.link?.recentlyOnlineMs ?? 60_000,
        reconnectWaitMs: o.link?.reconnectWaitMs ?? 5_000,
        maxWaiting: 10_000,
      }),
      clock: this.clock,
      logger: this.logger,
      limits: {
        signinByAddress: new RateLimiter(limits.signinByAddress, this.clock),
        signinByUser: new RateLimiter(limits.signinByUser, this.clock),
        token: new RateLimiter(limits.token, this.clock),
        signup: new RateLimiter(limits.signup, this.clock),
      },
      publicUrl: () => (o.publicUrl ?? this.url).replace(/\/+$/, ''),
    };
    this.ctx = ctx;
    this.routes(ctx);
    try {
      await this.app.listen({ host: o.host ?? '127.0.0.1', port: o.port ?? 8080 });
      await clients.registerWebClient(`${ctx.publicUrl()}/`);
      this.adminToken = (await writeAdminInfo(o.dataDir, this.url)).token;
      // Expired codes, tokens and web sessions would otherwise pile up forever.
      this.housekeeping = setInterval(() => void this.purgeExpired(), 10 * 60_000);
      this.housekeeping.unref();
      await this.purgeExpired();
      this.links = new LinkServer(this.app.server, ctx, {
        heartbeatMs: o.link?.heartbeatMs ?? 15_000,
        requestTimeoutMs: o.link?.requestTimeoutMs ?? 30_000,
        maxLinks: o.link?.maxLinks ?? 100_000,
        maxPayload: o.link?.maxPayload ?? 16 * 1024 * 1024,
      });
    } catch (e) {
      await this.stop();
      throw e;
    }
    this.logger.info({ url: this.url, publicUrl: ctx.publicUrl(), engine: db.engine }, 'cloud started');
    return this.url;
  }

  async stop(): Promise<void> {
    clearInterval(this.housekeeping);
    this.links?.close();
    this.links = undefined;
    if (this.adminToken) await removeAdminInfo(this.options.dataDir);
    this.adminToken = undefined;
    await this.app.close();
    await this.db?.close();
    this.db = undefined;
  }

  /** Deletes what can no longer be used; failures are logged and retried next time. */
  async purgeExpired(): Promise<void> {
    const db = this.db;
    if (!db) return;
    const now = this.clock.now();
    try {
      await db.transaction(async (q) => {
        await q.run('DELETE FROM auth_codes WHERE expires_at < $1', [now]);
        await q.run('DELETE FROM access_tokens WHERE expires_at < $1', [now]);
        await q.run('DELETE FROM refresh_tokens WHERE expires_at < $1', [now]);
        await q.run('DELETE FROM web_sessions WHERE expires_at < $1', [now]);
        await q.run('DELETE FROM token_families WHERE NOT EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.family_id = token_families.id)');
      });
    } catch (e) {
      this.logger.warn({ err: (e as Error).message }, 'purging expired tokens failed');
    }
  }

  private routes(ctx: CloudContext): void {
    const app = this.app;
    // The API's CORS exactly as the local server's; the token endpoint also allows POST
    // (browser clients on other origins exchange codes there).
    const api = apiCorsOptions('*');
    const tokenEndpoint = apiCorsOptions('*', ['POST', 'OPTIONS']);
    app.register(cors, {
      delegator: (req, cb) => cb(null, (req.url ?? '').startsWith('/oauth/token') ? tokenEndpoint : api),
    });
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    });
    const openapi = buildOpenApi(VERSION);
    app.get('/api/v1/openapi.json', async () => openapi);
    relayRoutes(app, ctx);
    oauthRoutes(app, ctx);
    webRoutes(app, ctx);
    accountApi(app, ctx);
    adminRoutes(app, ctx.clients, () => this.adminToken);
    registerBrowserClient(app, () => ({
      mode: 'cloud',
      clientId: WEB_CLIENT_ID,
      redirectUri: `${ctx.publicUrl()}/`,
      authorizeUrl: '/oauth/authorize',
      tokenUrl: '/oauth/token',
    }));
    app.setNotFoundHandler((req, reply) => {
      const e = unroutedError(req.method, req.url);
      if (e.code === 'MethodNotAllowed') reply.header('Allow', 'GET, OPTIONS');
      return reply.code(e.status).send(errorBody(e));
    });
    app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
      const status = err.statusCode ?? 500;
      if (status >= 500) this.logger.error({ err: err.message, path: req.url.split('?')[0] }, 'request failed');
      const e =
        status < 500
          ? new HubError('InvalidParameter', `Malformed request: ${err.message}`)
          : new HubError('InternalError', 'The cloud hit an unexpected fault; it has been logged.');
      return reply.code(status < 500 ? status : 500).send(errorBody(e));
    });
  }
}

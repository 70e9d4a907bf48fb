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
import { LocalSigninMemory, SigninGuard } from './accounts/signin-guard';
import { WebSessions } from './accounts/web-sessions';
import type { CloudContext } from './context';
import { adminRoutes, removeAdminInfo, runningCloud, writeAdminInfo } from './admin';
import { accountApi } from './http/account-api';
import { oauthRoutes } from './http/oauth-routes';
import { RateLimiter, type Limiter, type RateLimit } from './http/rate-limit';
import type { LimitName } from './context';
import { installConnectionLimits, type ConnectionLimits } from '../net/connection-limits';
import type { ClusterBus } from './cluster/bus';
import type { ClusterRelay } from './cluster/cluster-relay';
import type { ClusterHubs } from './cluster/cluster-hubs';
import { webRoutes } from './http/web-routes';
import { CodeStore } from './oauth/code-store';
import { createOAuthServer } from './oauth/model';
import { TokenStore } from './oauth/token-store';
import { HubRegistry, localHubs, type HubDirectory, type HubRouter } from './relay/hub-registry';
import { EVENTS_CHANNEL } from './cluster/keys';
import { LinkServer, type LinkServerOptions } from './relay/link-server';
import { relayFastPath, relayRoutes } from './relay/relay-routes';
import { isDatabaseUnavailable, type Database } from './storage/database';
import { LimitedLog } from '../logging/limited-log';
import { openDatabase } from './storage/open';
import { healthRoutes, unavailableBody, UNAVAILABLE_RETRY_S } from './http/health-routes';
import { fastifyTrustProxy, isTrustedProxy, parseTrustProxy } from './http/trust-proxy';

export interface CloudOptions {
  host?: string;
  port?: number;
  dataDir: string;
  /** The origin browsers and hubs use (e.g. https://cloud.example.org); default http://host:port. */
  publicUrl?: string;
  /** postgres://… for PostgreSQL; default: the embedded SQLite file in dataDir. */
  database?: string;
  /**
   * Behind a reverse proxy: which hops' X-Forwarded-For entries give the client address (for
   * the rate limits): `true` or a number = that many hops (true = 1), else the proxies'
   * addresses/CIDRs. See trust-proxy.ts; a client-written X-Forwarded-For never counts.
   */
  trustProxy?: boolean | number | string | string[];
  clock?: Clock;
  logger?: Logger;
  link?: Partial<LinkServerOptions> & { recentlyOnlineMs?: number; reconnectWaitMs?: number };
  rateLimits?: Partial<Record<LimitName, RateLimit>>;
  /**
   * redis://… : this process is one instance of a cluster (with a PostgreSQL `database`):
   * hub links are found through Redis wherever they landed, rate limits and revocations are
   * shared. Without it the cloud runs on one node, as always.
   */
  redis?: string;
  /** Cluster tuning (tests shorten the lease). */
  cluster?: { leaseMs?: number };
  /** Open connections in total and per address, and how long a request head / whole request may take. */
  connections?: Partial<CloudConnectionLimits>;
}

export interface CloudConnectionLimits extends ConnectionLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** Hub links one account may hold at once; a further one replaces its oldest. */
  maxLinksPerAccount: number;
}

export const DEFAULT_CONNECTION_LIMITS: CloudConnectionLimits = {
  maxConnections: 10_000,
  maxConnectionsPerAddress: 200,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  maxLinksPerAccount: 10,
};

const DEFAULT_LIMITS: Record<Exclude<LimitName, 'relay'>, RateLimit> = {
  signinByAddress: { burst: 30, perSecond: 0.5 },
  signinByUser: { burst: 10, perSecond: 0.1 },
  // Whatever the address: 400 guesses from 40 addresses meet this one (about one a minute after the
  // burst). Only addresses the user never signed in from draw on it (signin-guard.ts).
  signinByUsername: { burst: 20, perSecond: 1 / 60 },
  token: { burst: 60, perSecond: 2 },
  signup: { burst: 10, perSecond: 0.05 },
};

/** Relayed requests per user: off unless configured (`speakerhub cloud` sets --relay-limit, default 1000/s). */
const NO_LIMIT: Limiter = { take: () => 0 };

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
  private bus?: ClusterBus;
  private clusterRelay?: ClusterRelay;
  private clusterHubs?: ClusterHubs;
  readonly connectionLimits: CloudConnectionLimits;
  private readonly dbDown: LimitedLog;
  private stopping = false;

  constructor(private readonly options: CloudOptions) {
    this.logger = options.logger ?? createLogger();
    this.clock = options.clock ?? systemClock;
    const conn = (this.connectionLimits = { ...DEFAULT_CONNECTION_LIMITS, ...options.connections });
    const trust = parseTrustProxy(options.trustProxy);
    const fromProxy = isTrustedProxy(trust);
    this.dbDown = new LimitedLog(this.logger, 'request failed: the database is unreachable');
    this.app = Fastify({
      logger: false,
      exposeHeadRoutes: false,
      trustProxy: fastifyTrustProxy(trust),
      bodyLimit: 64 * 1024,
      routerOptions: { ignoreDuplicateSlashes: true, ignoreTrailingSlash: true, maxParamLength: 500 },
      serverFactory: (handler) => {
        const server = createServer(
          {
            headersTimeout: conn.headersTimeoutMs,
            requestTimeout: conn.requestTimeoutMs,
            // Timeouts are enforced by this periodic check (default every 30 s): make it match them.
            connectionsCheckingInterval: Math.min(1000, conn.headersTimeoutMs),
          },
          (req, res) => {
            if (!this.ctx || !relayFastPath(this.ctx, req, res)) handler(req, res);
          },
        );
        installRequestLineRepair(server, {
          timeoutMs: conn.headersTimeoutMs,
          maxBytes: maxHeaderBytes(DEFAULT_REST_LIMITS.maxTextLength),
        });
        // Behind a balancer (--trust-proxy) its connections carry many clients: only the total applies
        // to them, and the balancer caps each client (docs/cloud-cluster.md). The loopback address
        // is a proxy on the same machine (or the operator): exempt as well.
        installConnectionLimits(server, { ...conn, perAddressExempt: (a) => fromProxy(a) || isLocalHost(a) }, this.logger, 'cloud');
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
    if (o.redis && !/^postgres(ql)?:\/\//i.test(o.database ?? ''))
      throw new Error('A cluster (--redis) keeps its accounts and tokens in PostgreSQL: give --database postgres://… too.');
    const db = await openDatabase({ dataDir: o.dataDir, database: o.database });
    this.db = db;
    let bus: ClusterBus | undefined;
    if (o.redis) {
      // ioredis loads only for a cluster, as pg only for PostgreSQL.
      const { ClusterBus } = await import('./cluster/bus');
      bus = this.bus = new ClusterBus(o.redis, this.logger);
      try {
        await bus.start();
      } catch (e) {
        await this.stop();
        throw new Error(`Redis at ${redactUrl(o.redis)} cannot be reached: ${(e as Error).message}`);
      }
    }
    const accounts = new Accounts(db);
    const clients = new Clients(db);
    const codes = new CodeStore(db, this.clock);
    const tokens = new TokenStore(db, this.clock);
    const limits = { ...DEFAULT_LIMITS, ...o.rateLimits };
    const { RedisRateLimiter } = bus ? await import('./cluster/redis-rate-limit') : { RedisRateLimiter: undefined };
    const limiter = (name: LimitName): Limiter => {
      const limit = (limits as Partial<Record<LimitName, RateLimit>>)[name];
      if (!limit) return NO_LIMIT;
      if (!bus || !RedisRateLimiter) return new RateLimiter(limit, this.clock);
      return new RedisRateLimiter(name, limit, bus, this.clock, this.logger);
    };
    const registry = new HubRegistry({
      recentlyOnlineMs: o.link?.recentlyOnlineMs ?? 60_000,
      reconnectWaitMs: o.link?.reconnectWaitMs ?? 5_000,
      maxWaiting: 10_000,
      maxLinksPerUser: this.connectionLimits.maxLinksPerAccount,
    });
    let router: HubRouter = registry;
    let hubs: HubDirectory = localHubs(registry);
    if (bus) {
      const { ClusterHubs } = await import('./cluster/cluster-hubs');
      hubs = this.clusterHubs = new ClusterHubs(bus, registry, this.logger, {
        leaseMs: o.cluster?.leaseMs ?? 60_000,
        maxLinksPerUser: this.connectionLimits.maxLinksPerAccount,
        listTimeoutMs: 2_000,
      });
      const { ClusterRelay } = await import('./cluster/cluster-relay');
      router = this.clusterRelay = new ClusterRelay(bus, registry, this.logger, {
        leaseMs: o.cluster?.leaseMs ?? 60_000,
        requestTimeoutMs: o.link?.requestTimeoutMs ?? 30_000,
        reconnectWaitMs: o.link?.reconnectWaitMs ?? 5_000,
        recentlyOnlineMs: o.link?.recentlyOnlineMs ?? 60_000,
        maxPending: 20_000,
        maxWaiting: 10_000,
      });
      // A revocation on one instance evicts the token on all (pub/sub is at most once: while
      // Redis is away the cache is off, and it starts empty when Redis is back).
      const b = bus;
      tokens.onFamilyDropped = (familyId) =>
        void b
          .publish(EVENTS_CHANNEL, { t: 'revoked', familyId })
          .catch((e: Error) => this.logger.warn({ err: e.message }, 'cluster: revocation not broadcast'));
      bus.onMessage((m) => m.t === 'revoked' && tokens.evictFamily(m.familyId));
      bus.onUp((up) => {
        tokens.clearCache();
        tokens.cacheEnabled = up;
      });
    }
    const rl: Record<LimitName, Limiter> = {
      signinByAddress: limiter('signinByAddress'),
      signinByUser: limiter('signinByUser'),
      signinByUsername: limiter('signinByUsername'),
      token: limiter('token'),
      signup: limiter('signup'),
      relay: limiter('relay'),
    };
    const ctx: CloudContext = {
      db,
      accounts,
      clients,
      codes,
      tokens,
      linkTokens: new LinkTokens(db),
      webSessions: new WebSessions(db, this.clock),
      oauth: createOAuthServer({ accounts, clients, codes, tokens, clock: this.clock }),
      registry,
      router,
      hubs,
      clock: this.clock,
      logger: this.logger,
      limits: rl,
      signin: new SigninGuard(
        { byAddress: rl.signinByAddress, byUser: rl.signinByUser, byUsername: rl.signinByUsername },
        bus ? new (await import('./cluster/redis-signin-memory')).RedisSigninMemory(bus, this.clock, this.logger) : new LocalSigninMemory(this.clock),
        this.clock,
      ),
      linksRevoked: (userId, keep) => {
        registry.closeRevoked(userId, keep);
        void bus
          ?.publish(EVENTS_CHANNEL, { t: 'links-revoked', userId, keep })
          .catch((e: Error) => this.logger.warn({ err: e.message }, 'cluster: link revocation not broadcast'));
      },
      publicUrl: () => (o.publicUrl ?? this.url).replace(/\/+$/, ''),
    };
    bus?.onMessage((m) => m.t === 'links-revoked' && registry.closeRevoked(m.userId, m.keep));
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
        maxLinks: o.link?.maxLinks ?? this.connectionLimits.maxConnections,
        maxPayload: o.link?.maxPayload ?? 16 * 1024 * 1024,
        probeMs: o.link?.probeMs,
      });
    } catch (e) {
      await this.stop();
      throw e;
    }
    this.logger.info({ url: this.url, publicUrl: ctx.publicUrl(), engine: db.engine, instance: bus?.instanceId, cluster: !!bus }, 'cloud started');
    return this.url;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.housekeeping);
    this.links?.close();
    this.links = undefined;
    this.clusterRelay?.close();
    this.clusterRelay = undefined;
    this.clusterHubs?.close();
    this.clusterHubs = undefined;
    if (this.adminToken) await removeAdminInfo(this.options.dataDir);
    this.adminToken = undefined;
    await this.app.close();
    await this.bus?.close();
    this.bus = undefined;
    await this.db?.close();
    this.db = undefined;
  }

  /** Whether this instance can serve now: its database answers, and (in a cluster) Redis too. */
  async healthy(): Promise<{ ok: boolean; database: boolean; redis?: boolean }> {
    const db = this.db;
    const database = db
      ? await Promise.race([
          db.all('SELECT 1 AS one').then(
            () => true,
            () => false,
          ),
          new Promise<boolean>((r) => setTimeout(() => r(false), 2000).unref()),
        ])
      : false;
    if (!this.options.redis) return { ok: database, database };
    const redis = (await this.bus?.ping()) ?? false;
    return { ok: database && redis, database, redis };
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
    healthRoutes(app, {
      dependencies: () => this.healthy(),
      links: () => ctx.registry.count,
      instance: () => this.bus?.instanceId,
      stopping: () => this.stopping,
    });
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
      if (isDatabaseUnavailable(err)) {
        const path = req.url.split('?')[0];
        this.dbDown.warn({ path });
        return reply.code(503).header('retry-after', String(UNAVAILABLE_RETRY_S)).header('cache-control', 'no-store').send(unavailableBody(path));
      }
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

/** A URL without its password, for messages and logs. */
function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(an unparsable URL)';
  }
}

/** The host's own loopback address (not all of 127/8: other 127.x addresses count as clients). */
function isLocalHost(address: string): boolean {
  return address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1';
}

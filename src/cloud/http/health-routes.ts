import type { FastifyInstance } from 'fastify';
import { HubError, errorBody } from '../../core/errors';

/** What the health endpoints ask the instance. */
export interface HealthProbe {
  /** Its database answers, and (in a cluster) Redis too; `redis` undefined on a single node. */
  dependencies(): Promise<{ database: boolean; redis?: boolean }>;
  /** Hub links held here. */
  links(): number;
  /** The cluster instance id, if any. */
  instance(): string | undefined;
  /** True once the instance is shutting down (no new work). */
  stopping(): boolean;
}

/**
 * Three health endpoints, no token needed, never cached:
 * - `/livez`: the process answers (liveness: restart it when this fails).
 * - `/readyz`: the instance takes work (the balancer's check): 200 also while Redis or
 *   PostgreSQL is away, because it still relays for cached tokens and the hub links it holds
 *   and answers what it cannot do with a JSON 503 + Retry-After; 503 only while it shuts
 *   down. Taking every instance out of the balancer for a database outage would turn every
 *   request into the balancer's own error page.
 * - `/healthz`: as before (compatibility, monitoring): 200 only while every dependency answers.
 */
export function healthRoutes(app: FastifyInstance, probe: HealthProbe): void {
  app.get('/livez', async (_req, reply) => reply.header('cache-control', 'no-store').send({ status: 'ok' }));

  app.get('/readyz', async (_req, reply) => {
    const stopping = probe.stopping();
    if (stopping) reply.header('retry-after', '5');
    return reply
      .code(stopping ? 503 : 200)
      .header('cache-control', 'no-store')
      .send({
        status: stopping ? 'stopping' : 'ready',
        ...(probe.instance() ? { instance: probe.instance() } : {}),
        links: probe.links(),
      });
  });

  app.get('/healthz', async (_req, reply) => {
    const d = await probe.dependencies();
    const ok = d.database && d.redis !== false;
    return reply
      .code(ok ? 200 : 503)
      .header('cache-control', 'no-store')
      .send({
        status: ok ? 'ok' : 'unavailable',
        database: d.database ? 'ok' : 'unreachable',
        ...(d.redis === undefined ? {} : { redis: d.redis ? 'ok' : 'unreachable', instance: probe.instance() }),
        // Where hubs landed, for operators (and the cluster test): a count, nothing about whose.
        links: probe.links(),
      });
  });
}

/** Seconds a client is told to wait when a dependency is away (the next request tries it again). */
export const UNAVAILABLE_RETRY_S = 5;

/**
 * The answer for a request that needs the database while it is unreachable: JSON in the
 * shape of the API asked (OAuth and account API: `temporarily_unavailable`; the rest: the
 * operation API's `Busy`), always 503 with Retry-After.
 */
export function unavailableBody(path: string): Record<string, unknown> {
  const text = 'The cloud cannot reach its database now; retry shortly.';
  if (path.startsWith('/oauth/') || path.startsWith('/api/account/')) return { error: 'temporarily_unavailable', error_description: text };
  return { ...errorBody(new HubError('Busy', text)) };
}

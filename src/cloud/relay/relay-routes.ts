import type { FastifyInstance, FastifyReply } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HubError, errorBody } from '../../core/errors';
import {
  DIALECTS,
  operationAnswer,
  operationParams,
  operationRoutes,
  resolveOperationPath,
  type Answer,
  type OperationRoute,
} from '../../http/operation-routes';
import type { CloudContext } from '../context';
import { isDatabaseUnavailable } from '../storage/database';
import { UNAVAILABLE_RETRY_S } from '../http/health-routes';

const ROUTES = operationRoutes();

/** The user an OAuth access token belongs to, if the token is live. */
export async function bearerUser(ctx: CloudContext, authorization: string | undefined): Promise<string | undefined> {
  const m = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
  if (!m) return undefined;
  return (await ctx.tokens.access(m[1]))?.userId;
}

/**
 * The cloud's API: every operation of the table in both dialects, parsed exactly as the
 * local server parses it, forwarded over the link to the token user's hub, answered with
 * the hub's response (plus ResponseOf on the operations the spec lists).
 */
export function relayRoutes(app: FastifyInstance, ctx: CloudContext): void {
  for (const route of ROUTES.values()) {
    for (const d of DIALECTS) {
      app.get(`${d.prefix}/${route.op.name}`, async (req, reply) => {
        const userId = await bearerUser(ctx, req.headers.authorization);
        if (!userId) return unauthorized(reply);
        const a = await forward(ctx, userId, route, d.legacy, req.url);
        // Unavailable (hub offline, the cluster or database away) is temporary: say when to retry.
        if (a.status === 503) reply.header('retry-after', String(UNAVAILABLE_RETRY_S));
        return reply.code(a.status).send(a.body);
      });
    }
  }
}

export function unauthorized(reply: FastifyReply): FastifyReply {
  reply.header('www-authenticate', 'Bearer realm="SpeakerHub Cloud", error="invalid_token"');
  return reply
    .code(401)
    .send(
      errorBody(
        new HubError(
          'Unauthorized',
          'A valid "Authorization: Bearer <access token>" header is required (POST /oauth/token gives one; it lasts an hour).',
        ),
      ),
    );
}

async function forward(ctx: CloudContext, userId: string, route: OperationRoute, legacy: boolean, url: string): Promise<Answer> {
  const wait = await ctx.limits.relay.take(userId);
  if (wait) return { status: 429, body: errorBody(new HubError('HubBusy', `Too many requests for your hubs; retry in ${wait} s.`)) };
  const r = await ctx.router.request(userId, route.op.name, operationParams(route, url));
  const a = operationAnswer(route, legacy, r.ok ? { ok: true, op: route.op, body: r.body } : { ok: false, op: route.op, error: r.error });
  if (route.op.cloudResponseOf) a.body = { ...(a.body as Record<string, unknown>), ResponseOf: route.op.name };
  return a;
}

/**
 * Authorized operation GETs whose token is cached (nearly all relay traffic) are answered
 * here, before fastify's request lifecycle, as the local server's fast path does; the
 * same parsing, answer and headers as the routes. Anything else goes on to fastify.
 */
export function relayFastPath(ctx: CloudContext, req: IncomingMessage, res: ServerResponse): boolean {
  if (req.method !== 'GET') return false;
  const url = req.url ?? '';
  const found = resolveOperationPath(ROUTES, url);
  if (!found) return false;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  const grant = m ? ctx.tokens.cachedAccess(m[1]) : undefined;
  if (!grant) return false;
  const failed = (e: unknown): Answer => {
    if (isDatabaseUnavailable(e))
      return { status: 503, body: errorBody(new HubError('Busy', 'The cloud cannot reach its database now; retry shortly.')) };
    ctx.logger.error({ err: e instanceof Error ? e.message : String(e) }, 'relay failed');
    return { status: 500, body: errorBody(new HubError('InternalError', 'The cloud hit an unexpected fault; it has been logged.')) };
  };
  forward(ctx, grant.userId, found.route, found.legacy, url)
    .catch(failed)
    .then((a) => {
      const json = JSON.stringify(a.body);
      res.writeHead(a.status, {
        'access-control-allow-origin': '*',
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(json),
        ...(a.status === 503 ? { 'retry-after': String(UNAVAILABLE_RETRY_S) } : {}),
      });
      res.end(json);
    });
  return true;
}

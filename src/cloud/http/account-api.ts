import type { FastifyInstance } from 'fastify';
import { AccountError } from '../accounts/accounts';
import type { CloudContext } from '../context';
import { bearerUser } from '../relay/relay-routes';
import { digest } from '../secrets';

type Body = Record<string, unknown>;

/**
 * The JSON account API the hub application uses (`speakerhub account signup|signin`):
 * POST /api/account/signup {username,email,password} → 201 {username};
 * POST /api/account/signin {username,password[,revoke_other_links: true]} → {username,
 * link_token[, revoked_link_tokens]} (the hub's link credential; with revoke_other_links every
 * other link token of the account is deleted and the links opened with them close); GET /api/account/hubs (OAuth bearer) → the user's connected hubs
 * (cluster-wide; `partial: true` when only the answering instance's could be listed).
 * Errors: {error, error_description, field?}.
 */
export function accountApi(app: FastifyInstance, ctx: CloudContext): void {
  app.post('/api/account/signup', async (req, reply) => {
    const b = (req.body ?? {}) as Body;
    const wait = await ctx.limits.signup.take(req.ip);
    if (wait)
      return reply
        .code(429)
        .header('retry-after', String(wait))
        .send({ error: 'rate_limited', error_description: `Too many sign-ups; retry in ${wait} s.` });
    try {
      const user = await ctx.accounts.signup(b);
      return reply.code(201).send({ username: user.username });
    } catch (e) {
      if (!(e instanceof AccountError)) throw e;
      return reply.code(e.code === 'username_taken' ? 409 : 400).send({ error: e.code, error_description: e.message, field: e.field });
    }
  });

  app.post('/api/account/signin', async (req, reply) => {
    const b = (req.body ?? {}) as Body;
    const username = String(b.username ?? '');
    const wait = await ctx.signin.delay(req.ip, username);
    if (wait)
      return reply
        .code(429)
        .header('retry-after', String(wait))
        .send({ error: 'rate_limited', error_description: `Too many sign-in attempts; retry in ${wait} s.` });
    try {
      const user = await ctx.accounts.signin(b.username, b.password);
      await ctx.signin.record(req.ip, username, true);
      const linkToken = await ctx.linkTokens.create(user.id);
      // The remedy for a leaked link token: only this new one stays valid, other links close.
      if (b.revoke_other_links === true) {
        const revoked = await ctx.linkTokens.revokeOthers(user.id, linkToken);
        ctx.linksRevoked(user.id, digest(linkToken));
        return reply.header('cache-control', 'no-store').send({ username: user.username, link_token: linkToken, revoked_link_tokens: revoked });
      }
      return reply.header('cache-control', 'no-store').send({ username: user.username, link_token: linkToken });
    } catch (e) {
      if (!(e instanceof AccountError)) throw e;
      await ctx.signin.record(req.ip, username, false);
      return reply.code(401).send({ error: e.code, error_description: e.message });
    }
  });

  app.get('/api/account/hubs', async (req, reply) => {
    const userId = await bearerUser(ctx, req.headers.authorization);
    if (!userId)
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer realm="SpeakerHub Cloud", error="invalid_token"')
        .send({ error: 'invalid_token', error_description: 'A valid access token is required.' });
    const user = await ctx.accounts.byId(userId);
    const list = await ctx.hubs.list(userId);
    return {
      username: user?.username,
      hubs: list.hubs.map((h) => ({ HKWHubUUID: h.uuid, connectedAt: new Date(h.connectedAt).toISOString() })),
      // Only in a cluster that cannot be reached now: the hubs linked to the instance that answered.
      ...(list.partial ? { partial: true } : {}),
    };
  });
}

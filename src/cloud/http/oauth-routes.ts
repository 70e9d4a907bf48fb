import { OAuthError, Request, Response } from '@node-oauth/oauth2-server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { WebSessions } from '../accounts/web-sessions';
import type { CloudContext } from '../context';
import { isDatabaseUnavailable } from '../storage/database';
import { ACCESS_TOKEN_LIFETIME_S } from '../oauth/lifetimes';
import { errorLine, esc, hidden, page, signinForm } from './html';
import { html, webUser } from './web-routes';

type Form = Record<string, string | undefined>;

/** RFC 6749 §5.1: token responses (and their errors) must never be cached. */
function noStore(reply: FastifyReply): FastifyReply {
  return reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
}

function oauthError(reply: FastifyReply, status: number, error: string, description: string): FastifyReply {
  return noStore(reply).code(status).send({ error, error_description: description });
}

/** The library's Request/Response objects for a fastify request. */
function libRequest(req: FastifyRequest, body: Form, query: Form = {}): Request {
  return new Request({ method: req.method, query: query as Record<string, string>, headers: req.headers as Record<string, string>, body });
}

/**
 * POST /oauth/token (password, authorization_code, refresh_token grants) and the
 * authorization-code consent page, GET/POST /oauth/authorize.
 */
export function oauthRoutes(app: FastifyInstance, ctx: CloudContext): void {
  app.post('/oauth/token', async (req, reply) => {
    const body = req.body && typeof req.body === 'object' ? (req.body as Form) : {};
    if (!/^application\/x-www-form-urlencoded\b/i.test(req.headers['content-type'] ?? '')) {
      return oauthError(reply, 400, 'invalid_request', 'The token request must be application/x-www-form-urlencoded.');
    }
    const wait = await ctx.limits.token.take(req.ip);
    const password = body.grant_type === 'password';
    const userWait = password && !wait ? await ctx.signin.delay(req.ip, String(body.username ?? '')) : 0;
    if (wait || userWait) {
      reply.header('retry-after', String(Math.max(wait, userWait)));
      return oauthError(reply, 429, 'invalid_request', `Too many token requests; retry in ${Math.max(wait, userWait)} s.`);
    }
    try {
      const token = await ctx.oauth.token(libRequest(req, body), new Response({ headers: {} }));
      if (password) await ctx.signin.record(req.ip, String(body.username ?? ''), true);
      return noStore(reply).send({
        token_type: 'bearer',
        access_token: token.accessToken,
        expires_in: ACCESS_TOKEN_LIFETIME_S,
        refresh_token: token.refreshToken,
      });
    } catch (e) {
      if (!(e instanceof OAuthError)) throw e;
      if (isDatabaseUnavailable(e)) {
        reply.header('retry-after', '5');
        return oauthError(reply, 503, 'temporarily_unavailable', 'The cloud cannot reach its database now; retry shortly.');
      }
      // A wrong password (invalid_grant on the password grant) counts toward the backoff.
      if (password && e.name === 'invalid_grant') await ctx.signin.record(req.ip, String(body.username ?? ''), false);
      // RFC 6749 §5.2 names a redirect_uri differing from the authorization request's invalid_grant.
      if (e.name === 'invalid_request' && /redirect_uri/.test(e.message) && body.grant_type === 'authorization_code') {
        return oauthError(reply, 400, 'invalid_grant', 'redirect_uri does not match the one of the authorization request.');
      }
      // RFC 6749 §5.2: invalid_client answers 401 when the client tried Basic authentication.
      if (e.name === 'invalid_client' && req.headers.authorization) reply.header('www-authenticate', 'Basic realm="SpeakerHub Cloud"');
      const status = e.name === 'invalid_client' ? (req.headers.authorization ? 401 : 400) : e.name === 'server_error' ? 500 : 400;
      if (status === 500) ctx.logger.error({ err: e.message }, 'token endpoint failed');
      return oauthError(reply, status, e.name, describe(e));
    }
  });

  app.get('/oauth/authorize', async (req, reply) => {
    const q = req.query as Form;
    const check = await checkAuthorizeRequest(ctx, q);
    if ('page' in check) return html(reply, 400, check.page);
    if ('redirect' in check) return reply.redirect(check.redirect, 303);
    const me = await webUser(ctx, req);
    const here = req.url;
    if (!me) {
      return html(
        reply,
        200,
        page(
          'Sign in to continue',
          `<p><strong>${esc(check.clientName)}</strong> asks to control your speakers through SpeakerHub Cloud. Sign in first.</p>${signinForm(here)}`,
        ),
      );
    }
    const user = await ctx.accounts.byId(me.userId);
    return html(
      reply,
      200,
      page(
        'Authorize access',
        `<p>Signed in as <strong>${esc(user?.username)}</strong>.</p>
<p><strong>${esc(check.clientName)}</strong> wants to control your speakers (play audio, change volume) through your hub.</p>
<form method="post" action="/oauth/authorize">${hidden({ ...q, csrf: WebSessions.csrf(me.session) })}
<button type="submit" name="decision" value="allow" id="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary" id="deny">Deny</button></form>`,
      ),
    );
  });

  app.post('/oauth/authorize', async (req, reply) => {
    const f = (req.body ?? {}) as Form;
    const { csrf, decision, ...q } = f;
    const check = await checkAuthorizeRequest(ctx, q);
    if ('page' in check) return html(reply, 400, check.page);
    if ('redirect' in check) return reply.redirect(check.redirect, 303);
    const me = await webUser(ctx, req);
    if (!me) return reply.redirect(`/oauth/authorize?${new URLSearchParams(q as Record<string, string>)}`, 303);
    if (csrf !== WebSessions.csrf(me.session))
      return html(reply, 403, page('Authorize access', errorLine('The form expired; go back and try again.')));
    if (decision !== 'allow')
      return reply.redirect(
        withParams(q.redirect_uri!, { error: 'access_denied', error_description: 'The user denied access.', state: q.state, iss: ctx.publicUrl() }),
        303,
      );
    const response = new Response({ headers: {} });
    try {
      await ctx.oauth.authorize(libRequest(req, {}, q), response, {
        authenticateHandler: { handle: () => ({ id: me.userId }) },
      });
    } catch (e) {
      if (!(e instanceof OAuthError)) throw e;
      return reply.redirect(
        withParams(q.redirect_uri!, { error: e.name, error_description: describe(e), state: q.state, iss: ctx.publicUrl() }),
        303,
      );
    }
    // RFC 9207: the issuer in every authorization response, so a client talking to several
    // servers can tell which one answered (mix-up attacks).
    return reply.redirect(withParams(String(response.headers?.location ?? response.get('location')), { iss: ctx.publicUrl() }), 303);
  });
}

type AuthorizeCheck = { clientName: string } | { page: string } | { redirect: string };

/**
 * RFC 6749 §4.1.2.1: an unknown client or a redirect URI not registered for it is shown
 * to the user (never redirected to); other problems go back to the client's redirect URI.
 */
async function checkAuthorizeRequest(ctx: CloudContext, q: Form): Promise<AuthorizeCheck> {
  const bad = (msg: string) => ({ page: page('Authorization failed', errorLine(msg)) });
  if (!q.client_id) return bad('The request has no client_id.');
  const client = await ctx.clients.find(q.client_id);
  if (!client) return bad('Unknown client_id: this application is not registered with SpeakerHub Cloud.');
  if (!q.redirect_uri || !client.redirectUris.includes(q.redirect_uri)) return bad('The redirect_uri is not one registered for this application.');
  const back = (error: string, description: string) => ({
    redirect: withParams(q.redirect_uri!, { error, error_description: description, state: q.state, iss: ctx.publicUrl() }),
  });
  if (q.response_type !== 'code') return back('unsupported_response_type', 'response_type must be "code".');
  if (client.isPublic && !q.code_challenge) return back('invalid_request', 'PKCE is required: send code_challenge and code_challenge_method=S256.');
  if (q.code_challenge && (q.code_challenge_method ?? 'plain') !== 'S256') return back('invalid_request', 'code_challenge_method must be S256.');
  return { clientName: client.name };
}

function withParams(uri: string, params: Record<string, string | undefined>): string {
  const u = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
  return u.toString();
}

/** The library's messages start with "Invalid grant: …"; the error field already says that. */
function describe(e: OAuthError): string {
  return e.message.replace(/^(Invalid (grant|client|request|argument)|Unsupported grant type|Unauthorized client|Server error): /, '');
}

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AccountError } from '../accounts/accounts';
import { WebSessions } from '../accounts/web-sessions';
import type { CloudContext } from '../context';
import { readCookie, safeNext, SESSION_COOKIE, sessionCookie } from './cookies';
import { errorLine, esc, hidden, page, signinForm, signupForm } from './html';

type Form = Record<string, string | undefined>;

/** The signed-in web user (cookie), if any, with the session token for CSRF checks. */
export async function webUser(ctx: CloudContext, req: FastifyRequest): Promise<{ userId: string; session: string } | undefined> {
  const session = readCookie(req.headers.cookie, SESSION_COOKIE);
  const userId = await ctx.webSessions.user(session);
  return userId && session ? { userId, session } : undefined;
}

export function html(reply: FastifyReply, status: number, body: string): FastifyReply {
  return (
    reply
      .code(status)
      .header('content-type', 'text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('x-frame-options', 'DENY')
      // Page URLs carry authorization requests (state, code_challenge): never leak them onward.
      .header('referrer-policy', 'no-referrer')
      .header(
        'content-security-policy',
        "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; form-action 'self' http: https:",
      )
      .send(body)
  );
}

/**
 * Login CSRF: a browser posting our sign-in or sign-up form from another site says so in
 * Origin (and Sec-Fetch-Site); such posts are refused, so no other site can sign a visitor
 * in to an account of its choosing. Clients that are not browsers send neither header.
 */
export function crossSiteForm(ctx: CloudContext, req: FastifyRequest): boolean {
  // Browsers that send Sec-Fetch-Site say it outright; with our no-referrer policy their
  // Origin on a same-origin post is "null", so it is the header to trust when present.
  const site = req.headers['sec-fetch-site'];
  if (site) return site === 'cross-site' || site === 'same-site';
  const origin = req.headers.origin;
  if (origin === undefined || origin === 'null') return false;
  try {
    // The cloud's public origin, or the host the browser addressed (an instance reached directly).
    return new URL(ctx.publicUrl()).origin !== origin && new URL(origin).host !== req.headers.host;
  } catch {
    return true;
  }
}

/** Sign-up, sign-in and account pages (client registration) on the cloud's web site. */
export function webRoutes(app: FastifyInstance, ctx: CloudContext): void {
  const secure = () => ctx.publicUrl().startsWith('https:');

  const startSession = async (reply: FastifyReply, userId: string) => {
    const token = await ctx.webSessions.create(userId);
    reply.header('set-cookie', sessionCookie(token, secure(), 7 * 24 * 3600));
  };

  app.get('/signup', async (req, reply) => html(reply, 200, page('Sign up', signupForm(safeNext((req.query as Form).next)))));
  app.post('/signup', async (req, reply) => {
    const f = (req.body ?? {}) as Form;
    const next = safeNext(f.next);
    if (crossSiteForm(ctx, req)) return html(reply, 403, page('Sign up', signupForm(next, 'This form was sent from another site; sign up here.')));
    const wait = await ctx.limits.signup.take(req.ip);
    if (wait)
      return html(
        reply.header('retry-after', String(wait)),
        429,
        page('Sign up', signupForm(next, `Too many sign-ups from your address; try again in ${wait} s.`, f)),
      );
    try {
      const user = await ctx.accounts.signup(f);
      await startSession(reply, user.id);
      return reply.redirect(next, 303);
    } catch (e) {
      if (!(e instanceof AccountError)) throw e;
      return html(reply, e.code === 'username_taken' ? 409 : 400, page('Sign up', signupForm(next, e.message, f)));
    }
  });

  app.get('/signin', async (req, reply) => html(reply, 200, page('Sign in', signinForm(safeNext((req.query as Form).next)))));
  app.post('/signin', async (req, reply) => {
    const f = (req.body ?? {}) as Form;
    const next = safeNext(f.next);
    if (crossSiteForm(ctx, req)) return html(reply, 403, page('Sign in', signinForm(next, 'This form was sent from another site; sign in here.')));
    const wait = await ctx.signin.delay(req.ip, f.username ?? '');
    if (wait)
      return html(
        reply.header('retry-after', String(wait)),
        429,
        page('Sign in', signinForm(next, `Too many sign-in attempts; try again in ${wait} s.`, f.username)),
      );
    try {
      const user = await ctx.accounts.signin(f.username, f.password);
      await ctx.signin.record(req.ip, f.username ?? '', true);
      await startSession(reply, user.id);
      return reply.redirect(next, 303);
    } catch (e) {
      if (!(e instanceof AccountError)) throw e;
      await ctx.signin.record(req.ip, f.username ?? '', false);
      return html(reply, 401, page('Sign in', signinForm(next, e.message, f.username)));
    }
  });

  app.post('/signout', async (req, reply) => {
    const session = readCookie(req.headers.cookie, SESSION_COOKIE);
    if (session) await ctx.webSessions.destroy(session);
    reply.header('set-cookie', sessionCookie('', secure(), 0));
    return reply.redirect('/signin', 303);
  });

  app.get('/account', async (req, reply) => {
    const me = await webUser(ctx, req);
    if (!me) return reply.redirect('/signin?next=/account', 303);
    return html(reply, 200, await accountPage(ctx, me));
  });

  app.post('/account/clients', async (req, reply) => {
    const me = await webUser(ctx, req);
    if (!me) return reply.redirect('/signin?next=/account', 303);
    const f = (req.body ?? {}) as Form;
    if (f.csrf !== WebSessions.csrf(me.session))
      return html(reply, 403, page('Account', errorLine('The form expired; reload the page and try again.')));
    try {
      const uris = (f.redirect_uris ?? '').split(/\s+/).filter(Boolean);
      const c = await ctx.clients.register({ name: f.name ?? '', redirectUris: uris, ownerId: me.userId });
      const shown = `<p role="status">Client registered. Copy the secret now: it is shown only once.</p>
<dl><dt>client_id</dt><dd><code id="client-id">${esc(c.client_id)}</code></dd><dt>client_secret</dt><dd><code id="client-secret">${esc(c.client_secret)}</code></dd></dl>`;
      return html(reply, 201, await accountPage(ctx, me, shown));
    } catch (e) {
      if (!(e instanceof AccountError)) throw e;
      return html(reply, 400, await accountPage(ctx, me, errorLine(e.message)));
    }
  });
}

async function accountPage(ctx: CloudContext, me: { userId: string; session: string }, notice = ''): Promise<string> {
  const user = await ctx.accounts.byId(me.userId);
  const clients = await ctx.clients.ownedBy(me.userId);
  const { hubs, partial } = await ctx.hubs.list(me.userId);
  const list = clients.length
    ? `<ul>${clients.map((c) => `<li>${esc(c.name)}: <code>${esc(c.id)}</code> → ${c.redirectUris.map((u) => `<code>${esc(u)}</code>`).join(', ')}</li>`).join('')}</ul>`
    : '<p>No clients registered yet.</p>';
  return page(
    `Account ${user?.username ?? ''}`,
    `${notice}<p>Hubs online: ${hubs.length ? hubs.map((h) => `<code>${esc(h.uuid || 'hub')}</code>`).join(', ') : 'none'}.</p>${
      partial ? '<p role="status" id="hubs-partial">The list may be incomplete: the cloud cannot reach its cluster right now.</p>' : ''
    }
<h2>Your OAuth clients</h2>${list}
<h2>Register a client</h2><form method="post" action="/account/clients">${hidden({ csrf: WebSessions.csrf(me.session) })}
<label for="name">Name</label><input id="name" name="name" required maxlength="100">
<label for="redirect_uris">Redirect URIs (one per line)</label><textarea id="redirect_uris" name="redirect_uris" rows="3" required></textarea>
<button type="submit">Register</button></form>
<form method="post" action="/signout"><button class="secondary" type="submit">Sign out</button></form>`,
  );
}

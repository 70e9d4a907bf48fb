/**
 * OAuth 2.0 on the cloud, end to end over loopback HTTP: the password grant (Basic client
 * authentication, no-store headers), the authorization-code grant through the consent
 * page (confidential clients, and the public browser client with PKCE), refresh rotation
 * with reuse detection, lifetimes on an injected clock, RFC 6749 §5.2 errors, rate limits.
 */
import { ManualClock } from '../../src/core/clock';
import { WEB_CLIENT_ID } from '../../src/cloud/accounts/clients';
import {
  authorize,
  basic,
  onCluster,
  passwordGrant,
  pkcePair,
  postForm,
  registerClient,
  signup,
  startCloud,
  webSignin,
  PASSWORD,
  type TestCloud,
} from './helpers';

const REDIRECT = 'https://app.example.org/callback';
let t: TestCloud;
let clock: ManualClock;
let client: { client_id: string; client_secret: string };
let other: { client_id: string; client_secret: string };

beforeAll(async () => {
  clock = new ManualClock(Date.now());
  t = await startCloud({ clock });
  await signup(t.base, 'alice');
  client = await registerClient(t, REDIRECT);
  other = await registerClient(t, 'https://other.example.org/cb');
}, 30_000);
afterAll(() => t.close());

const hubs = (token: string) => fetch(`${t.base}/api/account/hubs`, { headers: { authorization: `Bearer ${token}` } });
const token = (form: Record<string, string>, headers: Record<string, string> = {}) => postForm(`${t.base}/oauth/token`, form, headers);

function expectTokenResponse(r: { status: number; body: any; headers: Headers }) {
  expect(r.status).toBe(200);
  expect(Object.keys(r.body).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'token_type']);
  expect(r.body.token_type).toBe('bearer');
  expect(r.body.expires_in).toBe(3600);
  expect(r.body.access_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(r.body.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(r.headers.get('cache-control')).toBe('no-store');
  expect(r.headers.get('pragma')).toBe('no-cache');
}

function expectOAuthError(r: { status: number; body: any }, status: number, error: string) {
  expect({ status: r.status, error: r.body.error }).toEqual({ status, error });
  expect(typeof r.body.error_description).toBe('string');
}

describe('password grant', () => {
  test('Basic client credentials give a bearer token pair with no-store headers; the token authorizes', async () => {
    const r = await passwordGrant(t.base, client, 'alice');
    expectTokenResponse(r);
    expect((await hubs(r.body.access_token)).status).toBe(200);
    expect((await hubs('not-a-token')).status).toBe(401);
  });

  test('wrong password → invalid_grant; wrong client secret over Basic → 401 invalid_client with WWW-Authenticate', async () => {
    expectOAuthError(await passwordGrant(t.base, client, 'alice', 'wrong horse battery'), 400, 'invalid_grant');
    expectOAuthError(await passwordGrant(t.base, client, 'nobody'), 400, 'invalid_grant');
    const bad = await passwordGrant(t.base, { ...client, client_secret: 'nope' }, 'alice');
    expectOAuthError(bad, 401, 'invalid_client');
    expect(bad.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect(bad.headers.get('cache-control')).toBe('no-store');
  });

  test('the public browser client may not use the password grant', async () => {
    const r = await token({ grant_type: 'password', username: 'alice', password: PASSWORD, client_id: WEB_CLIENT_ID });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(['invalid_client', 'unauthorized_client', 'invalid_request']).toContain(r.body.error);
  });

  test('browsers on other origins may POST to the token endpoint (CORS preflight)', async () => {
    const res = await fetch(`${t.base}/oauth/token`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.org', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-methods')).toMatch(/POST/);
  });

  test('RFC 6749 §5.2 errors: unsupported grant type, missing parameters, wrong content type', async () => {
    expectOAuthError(
      await token({ grant_type: 'magic' }, { authorization: basic(client.client_id, client.client_secret) }),
      400,
      'unsupported_grant_type',
    );
    const missing = await token({ grant_type: 'password', username: 'alice' }, { authorization: basic(client.client_id, client.client_secret) });
    expectOAuthError(missing, 400, 'invalid_request');
    expect(missing.body.error_description).toMatch(/password/);
    const json = await fetch(`${t.base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basic(client.client_id, client.client_secret) },
      body: '{"grant_type":"password"}',
    });
    expectOAuthError({ status: json.status, body: await json.json() }, 400, 'invalid_request');
  });
});

describe('authorization code grant', () => {
  let cookie: string;
  beforeAll(async () => {
    cookie = await webSignin(t.base, 'alice');
  });

  const codeFrom = (location: string | null) => new URL(location!).searchParams.get('code')!;

  test('consent page → redirect with code → exchange with credentials in the body; the code cannot be replayed', async () => {
    const a = await authorize(t.base, cookie, { response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, state: 'xyz' });
    expect(a.status).toBe(303);
    expect(a.location!.startsWith(`${REDIRECT}?`)).toBe(true);
    expect(new URL(a.location!).searchParams.get('state')).toBe('xyz');
    const code = codeFrom(a.location);
    const form = { grant_type: 'authorization_code', code, client_id: client.client_id, client_secret: client.client_secret, redirect_uri: REDIRECT };
    const r = await token(form);
    expectTokenResponse(r);
    expect((await hubs(r.body.access_token)).status).toBe(200);
    expectOAuthError(await token(form), 400, 'invalid_grant');
  });

  test('client credentials in a Basic header work for the code grant too', async () => {
    const code = codeFrom((await authorize(t.base, cookie, { response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT })).location);
    expectTokenResponse(
      await token(
        { grant_type: 'authorization_code', code, redirect_uri: REDIRECT },
        { authorization: basic(client.client_id, client.client_secret) },
      ),
    );
  });

  test('the authorization page refuses an unregistered redirect URI or unknown client without redirecting', async () => {
    const wrong = await authorize(t.base, cookie, {
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: 'https://evil.example.org/cb',
    });
    expect(wrong.status).toBe(400);
    expect(wrong.location).toBeNull();
    expect(wrong.page).toMatch(/redirect_uri is not one registered/);
    const unknown = await authorize(t.base, cookie, { response_type: 'code', client_id: 'nope', redirect_uri: REDIRECT });
    expect(unknown.status).toBe(400);
    expect(unknown.page).toMatch(/Unknown client_id/);
  });

  test('deny → access_denied; wrong response_type → unsupported_response_type (both redirected)', async () => {
    const denied = await authorize(t.base, cookie, { response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT }, 'deny');
    expect(new URL(denied.location!).searchParams.get('error')).toBe('access_denied');
    const token = await authorize(t.base, cookie, { response_type: 'token', client_id: client.client_id, redirect_uri: REDIRECT });
    expect(token.status).toBe(303);
    expect(new URL(token.location!).searchParams.get('error')).toBe('unsupported_response_type');
  });

  test('the exchange fails for another client, another redirect URI, and an expired code (1 minute)', async () => {
    const get = async () =>
      codeFrom((await authorize(t.base, cookie, { response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT })).location);
    expectOAuthError(
      await token({
        grant_type: 'authorization_code',
        code: await get(),
        client_id: other.client_id,
        client_secret: other.client_secret,
        redirect_uri: REDIRECT,
      }),
      400,
      'invalid_grant',
    );
    expectOAuthError(
      await token({
        grant_type: 'authorization_code',
        code: await get(),
        client_id: client.client_id,
        client_secret: client.client_secret,
        redirect_uri: 'https://app.example.org/other',
      }),
      400,
      'invalid_grant',
    );
    expectOAuthError(
      await token({ grant_type: 'authorization_code', code: await get(), client_id: client.client_id, client_secret: 'wrong' }),
      400,
      'invalid_client',
    );
    const late = await get();
    clock.advance(59_000);
    const inTime = await get();
    expectTokenResponse(
      await token({
        grant_type: 'authorization_code',
        code: inTime,
        client_id: client.client_id,
        client_secret: client.client_secret,
        redirect_uri: REDIRECT,
      }),
    );
    clock.advance(2_000);
    const r = await token({
      grant_type: 'authorization_code',
      code: late,
      client_id: client.client_id,
      client_secret: client.client_secret,
      redirect_uri: REDIRECT,
    });
    expectOAuthError(r, 400, 'invalid_grant');
    expect(r.body.error_description).toMatch(/expired/);
  });

  test('public client: PKCE S256 is required, a wrong or missing verifier fails, the right one succeeds', async () => {
    const redirect = `${t.base}/`;
    const base = { response_type: 'code', client_id: WEB_CLIENT_ID, redirect_uri: redirect };
    const noPkce = await authorize(t.base, cookie, base);
    expect(new URL(noPkce.location!).searchParams.get('error')).toBe('invalid_request');
    const plain = await authorize(t.base, cookie, { ...base, code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' });
    expect(new URL(plain.location!).searchParams.get('error')).toBe('invalid_request');
    const { verifier, challenge } = pkcePair();
    const code = async () =>
      codeFrom((await authorize(t.base, cookie, { ...base, code_challenge: challenge, code_challenge_method: 'S256' })).location);
    expectOAuthError(
      await token({ grant_type: 'authorization_code', code: await code(), client_id: WEB_CLIENT_ID, redirect_uri: redirect }),
      400,
      'invalid_client',
    );
    expectOAuthError(
      await token({
        grant_type: 'authorization_code',
        code: await code(),
        client_id: WEB_CLIENT_ID,
        redirect_uri: redirect,
        code_verifier: pkcePair().verifier,
      }),
      400,
      'invalid_grant',
    );
    const r = await token({
      grant_type: 'authorization_code',
      code: await code(),
      client_id: WEB_CLIENT_ID,
      redirect_uri: redirect,
      code_verifier: verifier,
    });
    expectTokenResponse(r);
    // …and refreshes with its client_id alone.
    expectTokenResponse(await token({ grant_type: 'refresh_token', refresh_token: r.body.refresh_token, client_id: WEB_CLIENT_ID }));
  });

  test('without a web session the authorization page asks to sign in first', async () => {
    const res = await fetch(
      `${t.base}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT })}`,
    );
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toMatch(/Sign in first/);
    expect(html).toMatch(/action="\/signin"/);
  });
});

describe('refresh grant', () => {
  const refresh = (refresh_token: string, c = client, where: 'body' | 'basic' = 'body') =>
    where === 'body'
      ? token({ grant_type: 'refresh_token', refresh_token, client_id: c.client_id, client_secret: c.client_secret })
      : token({ grant_type: 'refresh_token', refresh_token }, { authorization: basic(c.client_id, c.client_secret) });

  test('rotation: a new pair each time; the old access token stops working', async () => {
    const first = (await passwordGrant(t.base, client, 'alice')).body;
    const second = await refresh(first.refresh_token);
    expectTokenResponse(second);
    expect(second.body.refresh_token).not.toBe(first.refresh_token);
    expect(second.body.access_token).not.toBe(first.access_token);
    expect((await hubs(first.access_token)).status).toBe(401);
    expect((await hubs(second.body.access_token)).status).toBe(200);
    const third = await refresh(second.body.refresh_token, client, 'basic');
    expectTokenResponse(third);
  });

  test('reuse of an old refresh token revokes the whole family (RFC 9700)', async () => {
    const first = (await passwordGrant(t.base, client, 'alice')).body;
    const second = (await refresh(first.refresh_token)).body;
    const reused = await refresh(first.refresh_token);
    expectOAuthError(reused, 400, 'invalid_grant');
    // The legitimate holder's newer tokens are gone too.
    expect((await hubs(second.access_token)).status).toBe(401);
    expectOAuthError(await refresh(second.refresh_token), 400, 'invalid_grant');
    // An unrelated family of the same user is untouched.
    const unrelated = (await passwordGrant(t.base, client, 'alice')).body;
    expect((await hubs(unrelated.access_token)).status).toBe(200);
  });

  test('another client cannot use the refresh token; a confidential client must authenticate', async () => {
    const first = (await passwordGrant(t.base, client, 'alice')).body;
    expectOAuthError(await refresh(first.refresh_token, other), 400, 'invalid_grant');
    expectOAuthError(
      await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: client.client_id }),
      400,
      'invalid_client',
    );
  });

  test('lifetimes: access tokens expire after 3600 s, refresh tokens after a year', async () => {
    const pair = (await passwordGrant(t.base, client, 'alice')).body;
    clock.advance(3599_000);
    expect((await hubs(pair.access_token)).status).toBe(200);
    clock.advance(2_000);
    expect((await hubs(pair.access_token)).status).toBe(401);
    const next = (await refresh(pair.refresh_token)).body;
    expect((await hubs(next.access_token)).status).toBe(200);
    clock.advance(366 * 24 * 3600_000);
    const r = await refresh(next.refresh_token);
    expectOAuthError(r, 400, 'invalid_grant');
    expect(r.body.error_description).toMatch(/expired/);
  });
});

describe('web pages', () => {
  test('sign-up shows clear errors and signs the new user in', async () => {
    const taken = await postForm(`${t.base}/signup`, { username: 'ALICE', email: 'a@example.org', password: PASSWORD });
    expect(taken.status).toBe(409);
    expect(taken.body).toMatch(/username &quot;ALICE&quot; is taken/);
    const weak = await postForm(`${t.base}/signup`, { username: 'henry', email: 'h@example.org', password: 'short' });
    expect(weak.status).toBe(400);
    expect(weak.body).toMatch(/password is too weak/);
    expect(weak.body).toMatch(/value="henry"/); // the form keeps what was typed
    const ok = await postForm(`${t.base}/signup`, { username: 'henry', email: 'h@example.org', password: PASSWORD, next: '/account' });
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe('/account');
    expect(ok.headers.get('set-cookie')).toMatch(/^shcloud=[^;]+; Path=\/; HttpOnly; SameSite=Lax/);
    const bad = await postForm(`${t.base}/signin`, { username: 'henry', password: 'wrong horse battery' });
    expect(bad.status).toBe(401);
    expect(bad.body).toMatch(/Wrong username or password/);
    // Only same-site paths are followed after a sign-in.
    const evil = await postForm(`${t.base}/signin`, { username: 'henry', password: PASSWORD, next: '//evil.example.org/' });
    expect(evil.headers.get('location')).toBe('/account');
  });

  test('a client registered on the account page (CSRF-protected) works for the code grant', async () => {
    const cookie = await webSignin(t.base, 'alice');
    const page = await (await fetch(`${t.base}/account`, { headers: { cookie } })).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1];
    const forged = await postForm(`${t.base}/account/clients`, { name: 'Forged', redirect_uris: 'https://x.example.org/cb' }, { cookie });
    expect(forged.status).toBe(403);
    const badUri = await postForm(`${t.base}/account/clients`, { csrf, name: 'Bad', redirect_uris: 'https://x.example.org/cb#frag' }, { cookie });
    expect(badUri.status).toBe(400);
    expect(badUri.body).toMatch(/must not contain a fragment/);
    const reg = await postForm(
      `${t.base}/account/clients`,
      { csrf, name: 'Web app', redirect_uris: 'https://web.example.org/cb\nhttps://web.example.org/cb2' },
      { cookie },
    );
    expect(reg.status).toBe(201);
    const id = /id="client-id">([^<]+)</.exec(reg.body)![1];
    const secret = /id="client-secret">([^<]+)</.exec(reg.body)![1];
    const a = await authorize(t.base, cookie, { response_type: 'code', client_id: id, redirect_uri: 'https://web.example.org/cb2' });
    const code = new URL(a.location!).searchParams.get('code')!;
    expectTokenResponse(
      await token({ grant_type: 'authorization_code', code, client_id: id, client_secret: secret, redirect_uri: 'https://web.example.org/cb2' }),
    );
    // The page lists it afterwards, without the secret.
    const after = await (await fetch(`${t.base}/account`, { headers: { cookie } })).text();
    expect(after).toContain(id);
    expect(after).not.toContain(secret);
  });
});

describe('rate limits', () => {
  test('the token endpoint and sign-in answer 429 with Retry-After once the budget is spent', async () => {
    const limited = await startCloud({ rateLimits: { token: { burst: 3, perSecond: 0.01 }, signinByUser: { burst: 2, perSecond: 0.01 } } });
    try {
      const c = await registerClient(limited);
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await passwordGrant(limited.base, c, 'nobody', 'whatever-password')).status);
      expect(statuses.slice(0, 2)).toEqual([400, 400]);
      const last = await passwordGrant(limited.base, c, 'nobody', 'whatever-password');
      expect(last.status).toBe(429);
      expect(Number(last.headers.get('retry-after'))).toBeGreaterThan(0);
      const signins: number[] = [];
      for (let i = 0; i < 3; i++) signins.push((await postForm(`${limited.base}/api/account/signin`, { username: 'zed', password: 'x' })).status);
      expect(signins).toEqual([401, 401, 429]);
    } finally {
      await limited.close();
    }
  });

  test('behind a proxy (trustProxy) the limits apply per forwarded client address', async () => {
    const limited = await startCloud({ trustProxy: true, rateLimits: { token: { burst: 1, perSecond: 0.01 } } });
    try {
      const c = await registerClient(limited);
      const from = (ip: string) =>
        postForm(
          `${limited.base}/oauth/token`,
          { grant_type: 'password', username: 'x', password: 'y' },
          { authorization: basic(c.client_id, c.client_secret), 'x-forwarded-for': ip },
        );
      expect((await from('192.0.2.1')).status).toBe(400);
      expect((await from('192.0.2.1')).status).toBe(429);
      // Straight to the instance (one hop: this test is the proxy) the entry counts; through the
      // cluster's HAProxy it is the client's own writing, left of the address HAProxy appends: ignored.
      expect((await from('192.0.2.2')).status).toBe(onCluster() ? 429 : 400);
    } finally {
      await limited.close();
    }
  });
});

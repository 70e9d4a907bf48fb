'use strict';
/*
 * The page's credentials: the cloud's sign-in (OAuth 2.0 authorization code + PKCE S256, its
 * tokens refreshed when they expire) and the bearer token each REST call carries (the cloud's
 * access token, or the local hub's API token). The pub/sub keys of an MQTT sign-in are api.js's.
 */
(function () {
  const page = window.SpeakerHubPage;
  const { store, state, show } = page;

  function b64url(bytes) {
    let s = '';
    for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
    return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }

  async function startCloudSignin() {
    const { config } = state;
    const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
    const nonce = b64url(crypto.getRandomValues(new Uint8Array(16)));
    const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
    store.setItem('sh.pkce', JSON.stringify({ verifier, state: nonce }));
    const q = new URLSearchParams({
      response_type: 'code',
      client_id: config.clientId,
      redirect_uri: config.redirectUri,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: nonce,
    });
    location.assign(`${config.authorizeUrl}?${q}`);
  }

  async function tokenRequest(form) {
    const res = await fetch(state.config.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
    });
    const body = await res.json();
    if (!res.ok) throw new Error(body.error_description || body.error || `HTTP ${res.status}`);
    store.setItem('sh.tokens', JSON.stringify({ access: body.access_token, refresh: body.refresh_token }));
  }

  /** Back from the consent page with ?code=…: exchange it (with the PKCE verifier). */
  async function finishCloudSignin() {
    const { config } = state;
    const q = new URLSearchParams(location.search);
    if (!q.has('code') && !q.has('error')) return;
    history.replaceState(null, '', location.pathname);
    const pkce = JSON.parse(store.getItem('sh.pkce') || 'null');
    store.removeItem('sh.pkce');
    if (q.has('error')) return show(`Sign-in failed: ${q.get('error_description') || q.get('error')}`);
    if (!pkce || q.get('state') !== pkce.state) return show('Sign-in failed: the answer does not belong to this page (state mismatch). Try again.');
    try {
      await tokenRequest({
        grant_type: 'authorization_code',
        code: q.get('code'),
        redirect_uri: config.redirectUri,
        client_id: config.clientId,
        code_verifier: pkce.verifier,
      });
    } catch (e) {
      show(`Sign-in failed: ${e.message}`);
    }
  }

  function bearer() {
    if (state.config.mode === 'cloud') return (JSON.parse(store.getItem('sh.tokens') || 'null') || {}).access;
    return store.getItem('sh.apiToken');
  }

  async function refreshTokens() {
    const t = JSON.parse(store.getItem('sh.tokens') || 'null');
    if (!t || !t.refresh) return false;
    try {
      await tokenRequest({ grant_type: 'refresh_token', refresh_token: t.refresh, client_id: state.config.clientId });
      return true;
    } catch {
      store.removeItem('sh.tokens');
      return false;
    }
  }

  /** The sign-in was refused: what to tell the person, per way of signing in. */
  function refusedText() {
    if (state.config.mode === 'cloud') return 'SpeakerHub Cloud did not accept your sign-in (it may have expired). Please sign in again.';
    return 'The hub refused this API token. Copy the token the hub printed when it started (or its data folder’s file api-token) and try again.';
  }

  Object.assign(page, { startCloudSignin, finishCloudSignin, bearer, refreshTokens, refusedText });
})();

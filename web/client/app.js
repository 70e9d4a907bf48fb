'use strict';
/*
 * SpeakerHub sample client: plain JavaScript, no build step. The same page runs on the
 * cloud (sign-in: OAuth 2.0 authorization code + PKCE S256; tokens refreshed when they
 * expire) and on a local hub (sign-in: the hub's API token, or the pub/sub keys over
 * MQTT-over-WebSocket). It calls the Speaker Control Service API on its own origin:
 * /api/v1/<operation> over REST, or the same operations on the MQTT channel (mqtt-transport.js).
 */
(function () {
  const $ = (id) => document.getElementById(id);
  const store = window.sessionStorage;
  let config = { mode: 'local' };
  let session = null;
  let lastMedia = null;
  let pollTimer = null;
  let mqttLink = null; // the MQTT transport when signed in with the pub/sub keys
  let announceTimer = null;
  const selected = new Set(JSON.parse(store.getItem('sh.selected') || '[]'));

  function show(text, ok) {
    const m = $('message');
    m.textContent = text;
    m.className = ok ? 'ok' : '';
    m.hidden = !text;
  }

  // ---- credentials --------------------------------------------------------------------

  function b64url(bytes) {
    let s = '';
    for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
    return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }

  async function startCloudSignin() {
    const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
    const state = b64url(crypto.getRandomValues(new Uint8Array(16)));
    const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
    store.setItem('sh.pkce', JSON.stringify({ verifier, state }));
    const q = new URLSearchParams({
      response_type: 'code',
      client_id: config.clientId,
      redirect_uri: config.redirectUri,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state,
    });
    location.assign(`${config.authorizeUrl}?${q}`);
  }

  async function tokenRequest(form) {
    const res = await fetch(config.tokenUrl, {
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
    if (config.mode === 'cloud') return (JSON.parse(store.getItem('sh.tokens') || 'null') || {}).access;
    return store.getItem('sh.apiToken');
  }

  async function refreshTokens() {
    const t = JSON.parse(store.getItem('sh.tokens') || 'null');
    if (!t || !t.refresh) return false;
    try {
      await tokenRequest({ grant_type: 'refresh_token', refresh_token: t.refresh, client_id: config.clientId });
      return true;
    } catch {
      store.removeItem('sh.tokens');
      return false;
    }
  }

  // ---- API ----------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(code, message) {
      super(message);
      this.code = code;
    }
  }

  /** Signed in with the pub/sub keys: (re)opens the MQTT transport. */
  async function mqttTransport() {
    if (!mqttLink) {
      const keys = JSON.parse(store.getItem('sh.mqtt') || 'null');
      if (!keys) throw new ApiError('Unauthorized', 'Not signed in.');
      mqttLink = await window.SpeakerHubMqtt.open(keys);
    }
    return mqttLink;
  }

  async function api(op, params = {}, retried = false) {
    const p = { ...params };
    if (op !== 'init_session') {
      if (!session) session = (await api('init_session')).SessionToken;
      p.SessionToken = session;
    }
    let body;
    if (store.getItem('sh.mqtt')) {
      body = await (await mqttTransport()).call(op, p);
    } else {
      const res = await fetch(`/api/v1/${op}?${new URLSearchParams(p)}`, { headers: { authorization: `Bearer ${bearer()}` } });
      body = await res.json().catch(() => ({}));
      if (res.status === 401 && !retried && config.mode === 'cloud' && (await refreshTokens())) return api(op, params, true);
      if (res.status === 401) {
        signedOut('Please sign in again.');
        throw new ApiError('Unauthorized', 'Not signed in.');
      }
    }
    if (body.ErrorCode === 'SessionNotFound' && !retried) {
      session = null;
      return api(op, params, true);
    }
    if (body.Result === 'false') throw new ApiError(body.ErrorCode, body.ErrorMessage || body.ErrorCode);
    return body;
  }

  async function act(label, fn) {
    try {
      await fn();
      show(`${label}: done.`, true);
    } catch (e) {
      show(`${label}: ${e.message}`);
    }
    poll();
  }

  // ---- views --------------------------------------------------------------------------

  function signedOut(text) {
    clearInterval(pollTimer);
    clearTimeout(announceTimer);
    session = null;
    if (mqttLink) mqttLink.close();
    mqttLink = null;
    store.removeItem('sh.mqtt');
    $('app').hidden = true;
    $('signin').hidden = false;
    $('signin-cloud').hidden = config.mode !== 'cloud';
    $('signin-local').hidden = config.mode === 'cloud';
    $('signin-mqtt').hidden = config.mode === 'cloud';
    if (text) show(text);
  }

  async function signedIn() {
    $('where').textContent =
      `${config.mode === 'cloud' ? 'SpeakerHub Cloud' : 'Local hub'} · ${location.host}${store.getItem('sh.mqtt') ? ' · over MQTT' : ''}`;
    $('signin').hidden = true;
    $('app').hidden = false;
    await loadSpeakers();
    await loadMedia();
    poll();
    clearInterval(pollTimer);
    pollTimer = setInterval(poll, 1000);
  }

  async function loadSpeakers() {
    const { DeviceList } = await api('device_list');
    const list = $('speakers');
    list.textContent = '';
    let sum = 0;
    let n = 0;
    for (const d of DeviceList) {
      const li = document.createElement('li');
      const id = `spk-${d.DeviceID}`;
      li.innerHTML = `<div class="head"><label class="inline"><input type="checkbox" id="${id}"> <span></span></label>
        <span class="badge"></span></div>
        <label for="${id}-vol">Volume <output for="${id}-vol"></output></label>
        <input type="range" id="${id}-vol" min="0" max="50" step="1">`;
      li.querySelector('span').textContent = d.DeviceName;
      const badge = li.querySelector('.badge');
      badge.textContent = !d.Active ? 'unavailable' : d.IsPlaying ? 'playing' : 'ready';
      badge.className = `badge ${d.Active ? 'on' : 'off'}`;
      const box = li.querySelector('input[type=checkbox]');
      box.checked = selected.has(d.DeviceID);
      box.disabled = !d.Active;
      box.addEventListener('change', () =>
        act(box.checked ? `Add ${d.DeviceName}` : `Remove ${d.DeviceName}`, async () => {
          await api(box.checked ? 'add_device_to_session' : 'remove_device_from_session', { DeviceID: d.DeviceID });
          if (box.checked) selected.add(d.DeviceID);
          else selected.delete(d.DeviceID);
          store.setItem('sh.selected', JSON.stringify([...selected]));
        }),
      );
      const slider = li.querySelector('input[type=range]');
      const out = li.querySelector('output');
      slider.value = out.textContent = d.Volume;
      slider.setAttribute('aria-label', `Volume of ${d.DeviceName}`);
      slider.addEventListener('input', () => (out.textContent = slider.value));
      slider.addEventListener('change', () =>
        act(`Volume of ${d.DeviceName}`, () => api('set_volume_device', { DeviceID: d.DeviceID, Volume: slider.value })),
      );
      list.appendChild(li);
      if (d.Active) {
        sum += d.Volume;
        n++;
      }
    }
    const master = $('master-volume');
    master.value = $('master-volume-value').textContent = n ? Math.round(sum / n) : 0;
  }

  async function loadMedia() {
    const { MediaList } = await api('media_list');
    const sel = $('media');
    sel.textContent = '';
    for (const m of MediaList) {
      const o = document.createElement('option');
      o.value = m.PersistentID;
      o.textContent = `${m.Title}${m.Artist ? ` — ${m.Artist}` : ''}`;
      sel.appendChild(o);
    }
  }

  const fmt = (s) => `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
  const STATES = { PlayerStatePlaying: 'Playing', PlayerStatePaused: 'Paused', PlayerStateStopped: 'Stopped' };

  let ticks = 0;
  /** Speaker badges follow playback (every other second; the list itself is not rebuilt). */
  async function refreshBadges() {
    const { DeviceList } = await api('device_list');
    for (const d of DeviceList) {
      const box = document.getElementById(`spk-${d.DeviceID}`);
      const badge = box && box.closest('li').querySelector('.badge');
      if (!badge) continue;
      badge.textContent = !d.Active ? 'unavailable' : d.IsPlaying ? 'playing' : 'ready';
      badge.className = `badge ${d.Active ? 'on' : 'off'}`;
      box.disabled = !d.Active;
    }
  }

  async function poll() {
    try {
      if (ticks++ % 2 === 0) await refreshBadges();
      const s = await api('playback_status');
      $('state').textContent = STATES[s.PlaybackState] || s.PlaybackState;
      const t = Number(s.TimeElapsed);
      $('time').textContent = t >= 0 ? fmt(t) : '';
    } catch {
      /* shown by the next action; polling goes on */
    }
  }

  const target = () => document.querySelector('input[name=target]:checked').value;

  /** Follows one announcement (queued → playing → done/failed) until it ends; a newer one replaces it. */
  function followAnnouncement(id) {
    clearTimeout(announceTimer);
    const out = $('announce-status');
    const shown = (state, reason) => {
      out.dataset.state = state;
      out.textContent = `Announcement: ${state}${reason ? ` (${reason})` : ''}`;
    };
    shown('queued'); // what announce answers at once
    const step = async () => {
      try {
        const s = await api('announcement_status', { AnnouncementID: id });
        shown(s.State, s.Reason);
        if (s.State === 'done' || s.State === 'failed') return;
      } catch (e) {
        if (e.code === 'AnnouncementNotFound' || e.code === 'Unauthorized') return shown('failed', e.message);
        /* a lost answer: ask again */
      }
      announceTimer = setTimeout(step, 500);
    };
    announceTimer = setTimeout(step, 250);
  }

  async function announce() {
    const params = { Text: $('announce-text').value };
    const vol = $('announce-volume').value.trim();
    if (vol !== '') params.Volume = vol;
    if ($('announce-chime').checked) params.Chime = 'true';
    if (document.querySelector('input[name=announce-target]:checked').value === 'selected') {
      const ids = [...document.querySelectorAll('#speakers input[type=checkbox]:checked')].map((b) => b.id.replace(/^spk-/, ''));
      if (!ids.length) throw new Error('tick at least one speaker, or choose “All speakers”.');
      params.DeviceIDList = ids.join(',');
    }
    const { AnnouncementID } = await api('announce', params);
    followAnnouncement(AnnouncementID);
  }

  function wire() {
    $('cloud-signin').addEventListener('click', () => startCloudSignin().catch((e) => show(`Sign-in failed: ${e.message}`)));
    $('signin-local').addEventListener('submit', (ev) => {
      ev.preventDefault();
      store.removeItem('sh.mqtt');
      store.setItem('sh.apiToken', $('api-token').value.trim());
      show('');
      signedIn().catch((e) => show(e.message));
    });
    $('signin-mqtt').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const keys = { subscribeKey: $('sub-key').value.trim(), publishKey: $('pub-key').value.trim(), channel: $('channel').value.trim() };
      store.removeItem('sh.apiToken');
      store.setItem('sh.mqtt', JSON.stringify(keys));
      show('');
      signedIn().catch((e) => {
        signedOut(`Sign-in failed: ${e.message}`);
      });
    });
    $('announce').addEventListener('submit', (ev) => {
      ev.preventDefault();
      act('Announce', announce);
    });
    $('signout').addEventListener('click', () => {
      store.removeItem('sh.tokens');
      store.removeItem('sh.apiToken');
      signedOut('Signed out.');
    });
    $('refresh').addEventListener('click', () => act('Refresh', loadSpeakers));
    $('pause').addEventListener('click', () => act('Pause', () => api('pause_play')));
    $('stop').addEventListener('click', () => act('Stop', () => api('stop_play')));
    $('resume').addEventListener('click', () =>
      act('Resume', () =>
        api(target() === 'party' ? 'resume_hub_media_party_mode' : 'resume_hub_media', { PersistentID: lastMedia || $('media').value }),
      ),
    );
    const master = $('master-volume');
    master.addEventListener('input', () => ($('master-volume-value').textContent = master.value));
    master.addEventListener('change', () =>
      act('Volume', async () => {
        await api('set_volume', { Volume: master.value });
        await loadSpeakers();
      }),
    );
    $('play-media').addEventListener('submit', (ev) => {
      ev.preventDefault();
      lastMedia = $('media').value;
      act('Play', () => api(target() === 'party' ? 'play_hub_media_party_mode' : 'play_hub_media', { PersistentID: lastMedia }));
    });
    $('play-web').addEventListener('submit', (ev) => {
      ev.preventDefault();
      act('Play web media', () => api(target() === 'party' ? 'play_web_media_party_mode' : 'play_web_media', { MediaUrl: $('web-url').value }));
    });
    $('play-tts').addEventListener('submit', (ev) => {
      ev.preventDefault();
      act('Speak', () => api(target() === 'party' ? 'play_tts_party_mode' : 'play_tts', { Text: $('tts-text').value }));
    });
  }

  async function main() {
    wire();
    config = await (await fetch('/client/config.json')).json();
    $('where').textContent = config.mode === 'cloud' ? `SpeakerHub Cloud · ${location.host}` : `Local hub · ${location.host}`;
    if (config.mode === 'cloud') await finishCloudSignin();
    if (!bearer() && !store.getItem('sh.mqtt')) return signedOut();
    try {
      await signedIn();
    } catch (e) {
      if (e.code === 'HubOffline') show(`${e.message}`);
      else if (e.code !== 'Unauthorized') show(e.message);
    }
  }

  main();
})();

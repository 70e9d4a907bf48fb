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
  /** Step log for whoever hunts a slow step (the browser test sets SPEAKERHUB_DEBUG): off by default. */
  const debug = (...what) => {
    if (window.SPEAKERHUB_DEBUG) console.debug('[page]', ...what);
  };

  /**
   * Shows a result next to the control that caused it (a banner at the top of the page is out
   * of sight on a phone): kind 'ok', 'error' or 'info'; an empty text hides it.
   */
  function say(out, text, kind = 'error') {
    clearTimeout(out.fade);
    out.textContent = text || '';
    out.dataset.kind = kind;
    out.hidden = !text;
    // A success is news for a moment (a stale "Stopped." under a playing track misleads); an error stays until the next try.
    if (kind === 'ok' && text) out.fade = setTimeout(() => (out.hidden = true), 8000);
  }
  /** Sign-in messages: at the top of the sign-in form, which is all the page shows then. */
  const show = (text, ok) => say($('signin-result'), text, ok ? 'ok' : 'error');

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

  /** What the page says for an error code: plain words for people, not the API's names. */
  const PLAIN = {
    HubUnreachable: 'The hub cannot be reached. Is it running? The page keeps trying.',
    HubTimeout: 'The hub did not answer in time. Try again.',
    HubOffline: 'Your hub is not connected to the cloud right now. Is it running and online?',
    HubBusy: 'The hub is busy. Try again in a moment.',
    Busy: 'The hub is busy. Try again in a moment.',
    NoSpeakerSelected: 'No speaker is ticked. Tick one under Speakers, or choose “All speakers”.',
    NoSpeakerAvailable: 'None of these speakers is available right now.',
    DeviceUnavailable: 'This speaker is not available right now.',
    DeviceNotFound: 'The hub no longer knows this speaker. Press Refresh.',
    MediaNotFound: 'This track is no longer in the library. Reload the page.',
    PriorityTooLow: 'Something more important is playing. Try again when it has ended.',
    NotPlaying: 'Nothing is playing, so there is nothing to pause.',
    NotResumable: 'There is nothing paused to resume (only music from the hub can be resumed).',
    PlaybackFailed: 'The speakers could not play it. Is the address right, and can the speakers reach it?',
    SpeakerError: 'A speaker did not carry out the command.',
    TtsFailed: 'The text could not be turned into speech.',
    TtsBusy: 'Too many texts are waiting to be spoken. Try again in a moment.',
    TextTooLong: 'The text is too long for this hub.',
    UnsupportedScheme: 'The address must start with http:// or https://.',
    MediaUrlRefused: 'This hub does not play addresses on its own machine or network link.',
    AnnouncementQueueFull: 'Too many announcements are waiting. Try again shortly.',
    AnnouncementNotFound: 'The hub no longer knows this announcement.',
    InternalError: 'The hub ran into a problem (it is described in the hub’s log).',
    InvalidParameter: 'The hub did not accept that value.',
  };
  const plain = (e) => PLAIN[e.code] || e.message;

  let unreachable = false;
  /** The hub could not be reached (or can again): said in "Now playing", on every screen size. */
  function reachable(ok, why) {
    // Unreachable again for another reason (a timeout, then the link down): the newer reason is said.
    if (ok && !unreachable) return;
    unreachable = !ok;
    say($('hub-link'), ok ? '' : why || PLAIN.HubUnreachable);
    if (!ok) {
      $('state').textContent = 'Hub unreachable';
      $('time').textContent = '';
      model.markUnreachable(); // every speaker reads as unavailable until the next full list
    } else showPlayback(shownPlayback());
  }

  let mqttOpening = null; // one open at a time: the poll must not start a second link beside the sign-in's
  let keysAccepted = false; // the hub took these keys once since sign-in

  /** Signed in with the pub/sub keys: (re)opens the MQTT transport. */
  async function mqttTransport() {
    if (mqttLink) return mqttLink;
    const keys = JSON.parse(store.getItem('sh.mqtt') || 'null');
    if (!keys) throw new ApiError('Unauthorized', 'Not signed in.');
    if (!mqttOpening) {
      const opening = window.SpeakerHubMqtt.open(keys).then(
        (link) => {
          if (mqttOpening !== opening) {
            link.close(); // signed out meanwhile
            throw new ApiError('Unauthorized', 'Not signed in.');
          }
          mqttOpening = null;
          keysAccepted = true;
          link.onEvent(mqttEvent);
          return (mqttLink = link);
        },
        (e) => {
          if (mqttOpening === opening) mqttOpening = null;
          // Until the hub has taken these keys once, any failure is a failed sign-in (wrong keys, no
          // MQTT at this address), said at the sign-in form. After that (or once the hub took the
          // keys and then went away mid-sign-in) the hub is only out of reach, and the poll keeps trying.
          if (e.code === 'KeysRefused' && keysAccepted) {
            signedOut('The hub refused these keys. Sign in again with the keys it printed.');
            throw new ApiError('Unauthorized', e.message);
          }
          if (!keysAccepted && !e.accepted) throw new ApiError('SignInFailed', e.message);
          keysAccepted = true;
          throw new ApiError('HubUnreachable', PLAIN.HubUnreachable);
        },
      );
      mqttOpening = opening;
    }
    return mqttOpening;
  }

  /** The sign-in was refused: what to tell the person, per way of signing in. */
  function refusedText() {
    if (config.mode === 'cloud') return 'SpeakerHub Cloud did not accept your sign-in (it may have expired). Please sign in again.';
    return 'The hub refused this API token. Copy the token the hub printed when it started (or its data folder’s file api-token) and try again.';
  }

  async function api(op, params = {}, retried = false) {
    debug('api', op);
    const p = { ...params };
    if (op !== 'init_session') {
      if (!session) session = (await api('init_session')).SessionToken;
      p.SessionToken = session;
    }
    let body;
    if (store.getItem('sh.mqtt')) {
      body = await (await mqttTransport()).call(op, p);
    } else {
      let res;
      try {
        res = await fetch(`/api/v1/${op}?${new URLSearchParams(p)}`, { headers: { authorization: `Bearer ${bearer()}` } });
      } catch {
        // fetch rejects only when no answer came at all: the hub (or the cloud) is down or out of reach.
        throw new ApiError('HubUnreachable', PLAIN.HubUnreachable);
      }
      body = await res.json().catch(() => ({}));
      if (res.status === 401 && !retried && config.mode === 'cloud' && (await refreshTokens())) return api(op, params, true);
      if (res.status === 401) {
        signedOut(refusedText());
        throw new ApiError('Unauthorized', refusedText());
      }
      // A proxy in front of a stopped hub answers 502/504 without our JSON.
      if (res.status >= 500 && !body.ErrorCode) throw new ApiError('HubUnreachable', PLAIN.HubUnreachable);
    }
    if (body.ErrorCode === 'SessionNotFound' && !retried) {
      session = null;
      return api(op, params, true);
    }
    if (body.Result === 'false') throw new ApiError(body.ErrorCode, body.ErrorMessage || body.ErrorCode);
    return body;
  }

  /**
   * Runs what a control asks for and shows the outcome next to it, in plain words: `done`
   * (a text, or a function of the answer) on success, the error's plain text otherwise.
   */
  async function act(out, done, fn) {
    say(out, 'Working…', 'info');
    try {
      const answer = await fn();
      say(out, typeof done === 'function' ? done(answer) : done, 'ok');
      out.title = '';
    } catch (e) {
      if (e.code === 'Unauthorized') return; // signed out, with the reason at the sign-in form
      say(out, plain(e), 'error');
      // The API's own words stay reachable (a tooltip) for whoever reports a problem.
      out.title = e.code ? `${e.code}: ${e.message}` : '';
      if (e.code === 'HubUnreachable') reachable(false);
    }
    poll();
  }

  // ---- views --------------------------------------------------------------------------

  function signedOut(text) {
    debug('signed out', text || '');
    clearInterval(pollTimer);
    clearTimeout(announceTimer);
    session = null;
    loaded = false;
    if (mqttLink) mqttLink.close();
    mqttLink = null;
    mqttOpening = null; // an open still under way closes its link when it ends
    keysAccepted = false;
    stopEvents();
    reachable(true);
    // Nothing of this sign-in stays on the page: a later sign-in shows only what its hub says
    // (answers still on their way to this one are dropped: see current()).
    signins++;
    model = newModel();
    $('speakers').textContent = '';
    for (const id of ['state', 'time', 'now-title', 'now-where']) $(id).textContent = '';
    store.removeItem('sh.mqtt');
    if (config.mode !== 'cloud') store.removeItem('sh.apiToken');
    $('app').hidden = true;
    $('signin').hidden = false;
    $('signin-cloud').hidden = config.mode !== 'cloud';
    $('signin-local').hidden = config.mode === 'cloud';
    $('signin-mqtt').hidden = config.mode === 'cloud';
    if (text) show(text);
  }

  let signins = 0;
  /** A guard for an answer: false once the person signed out after asking (its hub may not be the next one's). */
  function current() {
    const at = signins;
    return () => at === signins;
  }

  let loaded = false;
  async function signedIn() {
    debug('signing in');
    $('where').textContent =
      `${config.mode === 'cloud' ? 'SpeakerHub Cloud' : 'Local hub'} · ${location.host}${store.getItem('sh.mqtt') ? ' · over MQTT' : ''}`;
    $('signin').hidden = true;
    $('app').hidden = false;
    clearInterval(pollTimer);
    pollTimer = setInterval(poll, 1000);
    startEvents();
    try {
      await load();
    } catch (e) {
      // Signed in but the hub is out of reach: "Now playing" says so, and the poll loads the page once it is back.
      if (e.code !== 'HubUnreachable' && e.code !== 'HubOffline') throw e;
      reachable(false, plain(e));
      return;
    }
    poll();
  }

  /** The speaker list and the library; again after the hub was unreachable at sign-in. */
  async function load() {
    const still = current();
    await loadSpeakers();
    await loadMedia();
    if (still()) loaded = true;
  }

  // ---- the read model ------------------------------------------------------------------
  //
  // What the page shows of the hub is the hub's own read model (src/hub-client/read-model-state.ts,
  // served compiled at /client/read-model.js), the one MQTT and HomeKit show: fed by the hub's
  // wire events (its event stream on a local hub, the channel's events over MQTT) and by the
  // full reads of the poll (device_list, session_status), which also resync it after a reconnect.
  // The view follows the model's changes; only the ticks (this page's own session) are not in it.

  const { ReadModelState, APPLIED_EVENT_TYPES } = window.SpeakerHubReadModel;
  const newModel = () => new ReadModelState(changed);
  let model = newModel();
  const busy = new Set(); // speakers whose tick is being sent: the poll leaves those boxes alone
  const setting = new Set(); // speakers whose volume is being sent: their slider is the person's until then
  let edits = 0; // volume changes sent from this page: a list read across one is not current

  function changed(c) {
    if (c.kind === 'device') showDevice(c.device);
    else if (c.kind === 'missing') document.getElementById(`spk-${c.deviceId}`)?.closest('li').remove();
    else if (c.kind === 'synced') {
      // A speaker the list does not show yet (added to the hub): the list is built again.
      if (c.devices.some((d) => !document.getElementById(`spk-${d.DeviceID}`))) {
        buildList(c.devices);
        for (const d of model.all()) showDevice(d); // the ticks follow with the next session_status
      }
      showMaster();
    } else if (c.kind === 'playback') showPlayback(shownPlayback());
    else if (c.kind === 'time' && (sessionZone === undefined || c.playbackId === undefined || c.playbackId === sessionZone)) showTime(c.timeElapsed);
  }

  /** One speaker's badge, availability and volume, as the model has it. */
  function showDevice(d) {
    const box = document.getElementById(`spk-${d.DeviceID}`);
    if (!box) return;
    const li = box.closest('li');
    const badge = li.querySelector('.badge');
    // busy: it plays media the hub did not start (an MPD's own queue); the same reading as the CLI's.
    const busy = d.Active && !model.announcing(d.DeviceID) && model.busy(d.DeviceID);
    badge.textContent = !d.Active ? 'unavailable' : model.announcing(d.DeviceID) ? 'announcing' : busy ? 'busy' : d.IsPlaying ? 'playing' : 'ready';
    badge.title = busy
      ? `playing ${/^MPD\b/.test(d.ModelName) ? 'its own queue' : 'media the hub did not start'}, not the hub's (a play from the hub takes it over)`
      : '';
    badge.className = `badge ${d.Active ? 'on' : 'off'}`;
    box.disabled = !d.Active;
    if (!setting.has(d.DeviceID)) li.querySelector('input[type=range]').value = li.querySelector('output').textContent = d.Volume;
  }

  /** The master slider: the available speakers' mean volume. */
  function showMaster() {
    const on = model.all().filter((d) => d.Active);
    const master = $('master-volume');
    master.value = $('master-volume-value').textContent = on.length ? Math.round(on.reduce((sum, d) => sum + d.Volume, 0) / on.length) : 0;
  }

  const fmt = (s) => `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
  const STATES = { PlayerStatePlaying: 'Playing', PlayerStatePaused: 'Paused', PlayerStateStopped: 'Stopped' };
  const ids = (list) => (list ? list.split(',').filter(Boolean) : []);

  function showTime(t) {
    if (!unreachable) $('time').textContent = t >= 0 ? fmt(t) : '';
  }

  /** "Now playing": what plays and where, as the model has it (the hub's state words while it is out of reach). */
  function showPlayback(pb) {
    if (unreachable) return;
    $('state').textContent = STATES[pb.state] || pb.state;
    showTime(pb.timeElapsed);
    // As session_status says it: a title only while something plays or is paused.
    const title = pb.state === 'PlayerStateStopped' ? undefined : pb.title;
    const what = title === undefined ? '' : pb.kind === 'tts' ? `Speech: “${title}”` : pb.kind === 'web' ? title : `“${title}”`;
    $('now-title').textContent = what;
    const where = pb.deviceIds.map((id) => (model.device(id) || {}).DeviceName || id);
    $('now-where').textContent = what && where.length ? `on ${where.join(', ')}` : '';
    if (pb.persistentId) lastMedia = pb.persistentId;
  }

  /** The list's items (no values: showDevice() fills them from the model). */
  function buildList(devices) {
    const list = $('speakers');
    list.textContent = '';
    for (const d of devices) {
      const li = document.createElement('li');
      const id = `spk-${d.DeviceID}`;
      li.innerHTML = `<div class="head"><label class="inline"><input type="checkbox" id="${id}"> <span></span></label>
        <span class="badge"></span></div>
        <label for="${id}-vol">Volume <output for="${id}-vol"></output></label>
        <input type="range" id="${id}-vol" min="0" max="50" step="1">
        <p id="${id}-result" class="result" role="status" aria-live="polite" hidden></p>`;
      li.querySelector('span').textContent = d.DeviceName;
      const out = li.querySelector('.result');
      const box = li.querySelector('input[type=checkbox]');
      // The tick is the hub's playback session, as session_status reports it (poll()).
      box.addEventListener('change', () => {
        const add = box.checked;
        busy.add(d.DeviceID);
        act(out, add ? `${d.DeviceName} is now in the session.` : `${d.DeviceName} left the session.`, async () => {
          try {
            await api(add ? 'add_device_to_session' : 'remove_device_from_session', { DeviceID: d.DeviceID });
          } catch (e) {
            box.checked = !add; // the hub's session did not change
            throw e;
          } finally {
            busy.delete(d.DeviceID);
          }
        });
      });
      const slider = li.querySelector('input[type=range]');
      const shown = li.querySelector('output');
      slider.setAttribute('aria-label', `Volume of ${d.DeviceName}`);
      slider.addEventListener('input', () => (shown.textContent = slider.value));
      slider.addEventListener('change', () => {
        edits++;
        setting.add(d.DeviceID);
        act(out, `${d.DeviceName}: volume ${slider.value}.`, async () => {
          try {
            await api('set_volume_device', { DeviceID: d.DeviceID, Volume: slider.value });
          } finally {
            setting.delete(d.DeviceID);
          }
        });
      });
      list.appendChild(li);
    }
  }

  /** The speaker list, built again from the hub's (sign-in, Refresh, every speaker's volume set). */
  async function loadSpeakers() {
    const still = current();
    const { DeviceList } = await api('device_list');
    if (!still()) return;
    buildList(DeviceList);
    model.replaceDevices(DeviceList);
    for (const d of model.all()) showDevice(d);
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

  let ticks = 0;
  /** The full speaker list into the model (every other second, and at once after the hub was out of reach). */
  async function resyncSpeakers() {
    const before = edits;
    const still = current();
    const { DeviceList } = await api('device_list');
    if (still() && edits === before) model.replaceDevices(DeviceList); // else a volume sent meanwhile may be missing from it: the next read
  }

  /**
   * The playback (zone) this page's session acts on, as session_status last named it: "Now
   * playing" shows that one, not whichever room changed last (other rooms play on their own).
   */
  let sessionZone;
  function shownPlayback() {
    if (sessionZone === undefined) return model.playback;
    return model.playbacks().find((z) => z.playbackId === sessionZone) || { state: 'PlayerStateStopped', timeElapsed: -1, deviceIds: [] };
  }

  /** session_status as a playback snapshot of the model (the poll's full read of what plays). */
  const snapshotOf = (s) => ({
    ...(s.PlaybackID ? { playbackId: s.PlaybackID } : {}),
    state: s.PlaybackState,
    timeElapsed: Number(s.TimeElapsed),
    deviceIds: ids(s.PlayingDeviceIDList),
    ...(s.Title !== undefined ? { title: s.Title } : {}),
    ...(s.MediaKind ? { kind: s.MediaKind } : {}),
    ...(s.PersistentID ? { persistentId: s.PersistentID } : {}),
  });

  /** The session's speakers are the ticks; what plays goes to the model, which "Now playing" follows. */
  function showSession(s) {
    const selected = new Set(ids(s.SelectedDeviceIDList));
    for (const box of document.querySelectorAll('#speakers input[type=checkbox]')) {
      const id = box.id.replace(/^spk-/, '');
      if (!busy.has(id)) box.checked = selected.has(id);
    }
    const prev = sessionZone;
    sessionZone = s.PlaybackID;
    // Without the hub's event stream (cloud, MQTT) the poll alone feeds the model, which then holds
    // the session's zone only: one the session has left is gone from it.
    if (!events && prev && prev !== s.PlaybackID)
      model.setPlayback({ playbackId: prev, state: 'PlayerStateStopped', timeElapsed: -1, deviceIds: [] });
    // A stopped session names no zone: its snapshot says Stopped without touching the other rooms'.
    if (s.PlaybackID) model.setPlayback(snapshotOf(s));
    else showPlayback(shownPlayback());
  }

  let polling = false;
  async function poll() {
    if (polling) return debug('poll skipped: one still runs'); // a slow hub: one poll at a time
    polling = true;
    const still = current();
    try {
      if (!loaded) await load();
      else if (unreachable || ticks++ % 2 === 0) await resyncSpeakers();
      const s = await api('session_status');
      if (!still()) return;
      // The ticks, then "Now playing" (held while the hub was away, the events' state included), in one go.
      showSession(s);
      reachable(true);
      if (events && events.readyState === 2) startEvents(); // the stream gave up while the hub was away
    } catch (e) {
      debug('poll failed', e.code, e.message);
      if (!still()) return; // signed out meanwhile: not this page's news any more
      if (e.code === 'HubUnreachable' || e.code === 'HubOffline' || e.code === 'HubTimeout') reachable(false, plain(e));
      /* other faults are shown by the control that meets them; polling goes on */
    } finally {
      polling = false;
    }
  }

  // ---- the hub's events -----------------------------------------------------------------

  let events = null; // the local hub's event stream (REST sign-in)

  /**
   * On a local hub signed in with the API token: the hub's wire events (/api/v1/events; an
   * EventSource sends no header, so the token goes in the query, as that route allows). The
   * stream opens with the current playback; after a reconnect the speaker list is read again.
   * Over MQTT the channel's events come through the transport (mqttEvent); the cloud relays
   * no event stream, so there the poll alone feeds the model.
   */
  function startEvents() {
    stopEvents();
    if (config.mode === 'cloud' || store.getItem('sh.mqtt') || !window.EventSource) return;
    const es = new EventSource(`/api/v1/events?${new URLSearchParams({ access_token: bearer() || '' })}`);
    events = es;
    es.addEventListener('open', () => {
      debug('events open');
      // Events may have been missed (a reconnect): the list is read again. Whether the hub is
      // back is the poll's to say, with the session's ticks read in the same go.
      if (loaded) resyncSpeakers().catch(() => undefined);
    });
    for (const type of APPLIED_EVENT_TYPES) {
      es.addEventListener(type, (ev) => {
        let data;
        try {
          data = JSON.parse(ev.data);
        } catch {
          return; // not ours to show
        }
        model.apply({ type, data });
      });
    }
  }

  function stopEvents() {
    if (events) events.close();
    events = null;
  }

  /**
   * The channel's events over MQTT. They carry less than the wire events (no speaker record, no
   * title), so the model is not fed half a state: the time ticks go in as they are, a playback or
   * speaker change has the page read the hub now, and a hub (back) online has it read everything.
   */
  function mqttEvent(m) {
    if (m.Event === 'PlaybackTimeChanged')
      model.apply({ type: 'playbackTime', data: { timeElapsed: Number(m.PlaybackTime), deviceIds: ids(m.DeviceIDList) } });
    else if (m.Event === 'PlaybackStateChanged' || m.Event === 'HubOnline') poll();
    else if (m.Event === 'DeviceStateUpdated' && loaded) resyncSpeakers().catch(() => undefined);
  }

  const target = () => document.querySelector('input[name=target]:checked').value;
  const onWhat = () => (target() === 'party' ? 'on all speakers' : 'on the selected speakers');

  /** Follows one announcement (queued → playing → done/failed) until it ends; a newer one replaces it. */
  function followAnnouncement(id) {
    clearTimeout(announceTimer);
    const out = $('announce-status');
    const shown = (state, reason, modeReason) => {
      out.dataset.state = state;
      out.textContent = `Announcement: ${state}${reason ? ` (${reason})` : ''}`;
      // Duck asked for and not possible on some target: say so, never silently.
      if (modeReason) out.title = `The music was interrupted, not ducked: ${modeReason}`;
      else out.removeAttribute('title');
    };
    shown('queued'); // what announce answers at once
    const step = async () => {
      try {
        const s = await api('announcement_status', { AnnouncementID: id });
        shown(s.State, s.Reason, s.ModeReason);
        if (s.State === 'done' || s.State === 'failed') return;
      } catch (e) {
        if (e.code === 'AnnouncementNotFound' || e.code === 'Unauthorized') return shown('failed', plain(e));
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
    if ($('announce-duck').checked) params.Mode = 'duck';
    if (document.querySelector('input[name=announce-target]:checked').value === 'selected') {
      const ticked = [...document.querySelectorAll('#speakers input[type=checkbox]:checked')].map((b) => b.id.replace(/^spk-/, ''));
      if (!ticked.length) throw new Error('No speaker is ticked. Tick one under Speakers, or choose “All speakers”.');
      params.DeviceIDList = ticked.join(',');
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
      signedIn().catch((e) => {
        if (e.code !== 'Unauthorized') show(plain(e)); // else signedOut() said the token was refused
      });
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
      act($('announce-result'), 'Announcement sent.', announce);
    });
    $('signout').addEventListener('click', () => {
      store.removeItem('sh.tokens');
      store.removeItem('sh.apiToken');
      signedOut('Signed out.');
      $('signin-result').dataset.kind = 'ok';
    });
    const status = $('status-result');
    $('refresh').addEventListener('click', () => act($('speakers-result'), 'Speaker list updated.', loadSpeakers));
    $('pause').addEventListener('click', () => act(status, 'Paused.', () => api('pause_play')));
    $('stop').addEventListener('click', () => act(status, 'Stopped.', () => api('stop_play')));
    $('resume').addEventListener('click', () =>
      act(status, 'Playing again.', () =>
        api(target() === 'party' ? 'resume_hub_media_party_mode' : 'resume_hub_media', { PersistentID: lastMedia || $('media').value }),
      ),
    );
    const master = $('master-volume');
    master.addEventListener('input', () => ($('master-volume-value').textContent = master.value));
    master.addEventListener('change', () =>
      act(status, `Every speaker at volume ${master.value}.`, async () => {
        edits++;
        await api('set_volume', { Volume: master.value });
        await resyncSpeakers();
      }),
    );
    $('play-media').addEventListener('submit', (ev) => {
      ev.preventDefault();
      lastMedia = $('media').value;
      const title = $('media').selectedOptions[0]?.textContent || 'the track';
      act($('play-media-result'), `Playing “${title}” ${onWhat()}.`, () =>
        api(target() === 'party' ? 'play_hub_media_party_mode' : 'play_hub_media', { PersistentID: lastMedia }),
      );
    });
    $('play-web').addEventListener('submit', (ev) => {
      ev.preventDefault();
      act($('play-web-result'), `Playing the web address ${onWhat()}.`, () =>
        api(target() === 'party' ? 'play_web_media_party_mode' : 'play_web_media', { MediaUrl: $('web-url').value }),
      );
    });
    $('play-tts').addEventListener('submit', (ev) => {
      ev.preventDefault();
      act($('play-tts-result'), `Speaking ${onWhat()}.`, () =>
        api(target() === 'party' ? 'play_tts_party_mode' : 'play_tts', { Text: $('tts-text').value }),
      );
    });
  }

  async function main() {
    wire();
    try {
      config = await (await fetch('/client/config.json')).json();
    } catch {
      /* the page came from this server a moment ago: assume a local hub and say it is unreachable below */
    }
    $('where').textContent = config.mode === 'cloud' ? `SpeakerHub Cloud · ${location.host}` : `Local hub · ${location.host}`;
    if (config.mode === 'cloud') await finishCloudSignin();
    if (!bearer() && !store.getItem('sh.mqtt')) return signedOut();
    try {
      await signedIn();
    } catch (e) {
      if (e.code !== 'Unauthorized') show(plain(e));
    }
  }

  main();
})();

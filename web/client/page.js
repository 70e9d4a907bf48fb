'use strict';
/*
 * SpeakerHub sample client: plain JavaScript, no build step. The same page runs on the
 * cloud (sign-in: OAuth 2.0 authorization code + PKCE S256; tokens refreshed when they
 * expire) and on a local hub (sign-in: the hub's API token, or the pub/sub keys over
 * MQTT-over-WebSocket). It calls the Speaker Control Service API on its own origin:
 * /api/v1/<operation> over REST, or the same operations on the MQTT channel (mqtt-transport.js).
 *
 * The page is a few plain scripts (index.html loads them in order, all deferred), each adding
 * what it holds to one object, window.SpeakerHubPage: this file (the shared state and the
 * helpers every part uses), signin.js (credentials), api.js (the API call), views/ (what the
 * page shows), events.js (the hub's events), lifecycle.js (sign in, poll, sign out) and app.js
 * (the controls' wiring, then main()). A part calls another's functions through the object at
 * call time, so the order of the files matters only for what runs as they load.
 */
(function () {
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
  const $ = (id) => document.getElementById(id);

  window.SpeakerHubPage = {
    $,
    store: window.sessionStorage,
    debug,
    say,
    /** Sign-in messages: at the top of the sign-in form, which is all the page shows then. */
    show: (text, ok) => say($('signin-result'), text, ok ? 'ok' : 'error'),
    /** What more than one part reads or changes; what only one part needs stays in its file. */
    state: {
      config: { mode: 'local' }, // /client/config.json: the local hub or the cloud
      model: null, // the hub's read model (views/model.js); a new one at each sign-out
      loaded: false, // the speaker list and the library are in (lifecycle.js load())
      unreachable: false, // the hub could not be reached at the last try (api.js reachable())
      lastMedia: null, // the hub track played or shown last: what Resume resumes
      edits: 0, // volume changes sent from this page: a list read across one is not current
      busy: new Set(), // speakers whose tick is being sent: the poll leaves those boxes alone
      setting: new Set(), // speakers whose volume is being sent: their slider is the person's until then
      sessionZone: undefined, // the playback (zone) this page's session acts on (views/now-playing.js)
      events: null, // the local hub's event stream (REST sign-in; events.js)
    },
  };
})();

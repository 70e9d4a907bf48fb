'use strict';
/*
 * The API call: one operation over REST (/api/v1/<operation>, with the bearer token) or over
 * the MQTT channel (mqtt-transport.js, signed in with the pub/sub keys), its errors as codes
 * and plain words, and whether the hub can be reached. act() runs what a control asks for and
 * shows the outcome next to it.
 */
(function () {
  const page = window.SpeakerHubPage;
  const { $, store, state, debug, say } = page;
  let session = null; // the API session token (init_session)
  let mqttLink = null; // the MQTT transport when signed in with the pub/sub keys
  let mqttOpening = null; // one open at a time: the poll must not start a second link beside the sign-in's
  let keysAccepted = false; // the hub took these keys once since sign-in

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

  /** The hub could not be reached (or can again): said in "Now playing", on every screen size. */
  function reachable(ok, why) {
    // Unreachable again for another reason (a timeout, then the link down): the newer reason is said.
    if (ok && !state.unreachable) return;
    state.unreachable = !ok;
    say($('hub-link'), ok ? '' : why || PLAIN.HubUnreachable);
    if (!ok) {
      $('state').textContent = 'Hub unreachable';
      $('time').textContent = '';
      state.model.markUnreachable(); // every speaker reads as unavailable until the next full list
    } else page.showPlayback(page.shownPlayback());
  }

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
          link.onEvent(page.mqttEvent);
          return (mqttLink = link);
        },
        (e) => {
          if (mqttOpening === opening) mqttOpening = null;
          // Until the hub has taken these keys once, any failure is a failed sign-in (wrong keys, no
          // MQTT at this address), said at the sign-in form. After that (or once the hub took the
          // keys and then went away mid-sign-in) the hub is only out of reach, and the poll keeps trying.
          if (e.code === 'KeysRefused' && keysAccepted) {
            page.signedOut('The hub refused these keys. Sign in again with the keys it printed.');
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

  /** Signed out: the API session and the MQTT link go (an open still under way closes its link when it ends). */
  function forgetLink() {
    session = null;
    if (mqttLink) mqttLink.close();
    mqttLink = null;
    mqttOpening = null;
    keysAccepted = false;
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
        res = await fetch(`/api/v1/${op}?${new URLSearchParams(p)}`, { headers: { authorization: `Bearer ${page.bearer()}` } });
      } catch {
        // fetch rejects only when no answer came at all: the hub (or the cloud) is down or out of reach.
        throw new ApiError('HubUnreachable', PLAIN.HubUnreachable);
      }
      body = await res.json().catch(() => ({}));
      if (res.status === 401 && !retried && state.config.mode === 'cloud' && (await page.refreshTokens())) return api(op, params, true);
      if (res.status === 401) {
        page.signedOut(page.refusedText());
        throw new ApiError('Unauthorized', page.refusedText());
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
    page.poll();
  }

  Object.assign(page, { plain, reachable, forgetLink, api, act });
})();

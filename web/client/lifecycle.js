'use strict';
/*
 * A sign-in's life on the page: signed in (the app shown, the list and library loaded, the
 * poll and the event stream started), the poll every second, and signed out (everything of
 * that sign-in gone, the sign-in form shown with the reason).
 */
(function () {
  const page = window.SpeakerHubPage;
  const { $, store, state, debug, show } = page;
  let pollTimer = null;
  let signins = 0;
  let ticks = 0;
  let polling = false;

  function signedOut(text) {
    const { config } = state;
    debug('signed out', text || '');
    clearInterval(pollTimer);
    page.stopFollowing();
    state.loaded = false;
    page.forgetLink(); // the API session and the MQTT link
    page.stopEvents();
    page.reachable(true);
    // Nothing of this sign-in stays on the page: a later sign-in shows only what its hub says
    // (answers still on their way to this one are dropped: see current()).
    signins++;
    state.model = page.newModel();
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

  /** A guard for an answer: false once the person signed out after asking (its hub may not be the next one's). */
  function current() {
    const at = signins;
    return () => at === signins;
  }

  async function signedIn() {
    const { config } = state;
    debug('signing in');
    $('where').textContent =
      `${config.mode === 'cloud' ? 'SpeakerHub Cloud' : 'Local hub'} · ${location.host}${store.getItem('sh.mqtt') ? ' · over MQTT' : ''}`;
    $('signin').hidden = true;
    $('app').hidden = false;
    clearInterval(pollTimer);
    pollTimer = setInterval(poll, 1000);
    page.startEvents();
    try {
      await load();
    } catch (e) {
      // Signed in but the hub is out of reach: "Now playing" says so, and the poll loads the page once it is back.
      if (e.code !== 'HubUnreachable' && e.code !== 'HubOffline') throw e;
      page.reachable(false, page.plain(e));
      return;
    }
    poll();
  }

  /** The speaker list and the library; again after the hub was unreachable at sign-in. */
  async function load() {
    const still = current();
    await page.loadSpeakers();
    await page.loadMedia();
    if (still()) state.loaded = true;
  }

  async function poll() {
    if (polling) return debug('poll skipped: one still runs'); // a slow hub: one poll at a time
    polling = true;
    const still = current();
    try {
      if (!state.loaded) await load();
      else if (state.unreachable || ticks++ % 2 === 0) await page.resyncSpeakers();
      const s = await page.api('session_status');
      if (!still()) return;
      // The ticks, then "Now playing" (held while the hub was away, the events' state included), in one go.
      page.showSession(s);
      page.reachable(true);
      if (state.events && state.events.readyState === 2) page.startEvents(); // the stream gave up while the hub was away
    } catch (e) {
      debug('poll failed', e.code, e.message);
      if (!still()) return; // signed out meanwhile: not this page's news any more
      if (e.code === 'HubUnreachable' || e.code === 'HubOffline' || e.code === 'HubTimeout') page.reachable(false, page.plain(e));
      /* other faults are shown by the control that meets them; polling goes on */
    } finally {
      polling = false;
    }
  }

  Object.assign(page, { signedIn, signedOut, current, poll });
})();

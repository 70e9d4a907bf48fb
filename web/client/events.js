'use strict';
/*
 * The hub's events into the model: the local hub's event stream (REST sign-in) or the
 * channel's events over MQTT. The cloud relays no event stream: there the poll alone feeds it.
 */
(function () {
  const page = window.SpeakerHubPage;
  const { store, state, debug } = page;

  /**
   * On a local hub signed in with the API token: the hub's wire events (/api/v1/events; an
   * EventSource sends no header, so the token goes in the query, as that route allows). The
   * stream opens with the current playback; after a reconnect the speaker list is read again.
   * Over MQTT the channel's events come through the transport (mqttEvent); the cloud relays
   * no event stream, so there the poll alone feeds the model.
   */
  function startEvents() {
    stopEvents();
    if (state.config.mode === 'cloud' || store.getItem('sh.mqtt') || !window.EventSource) return;
    const es = new EventSource(`/api/v1/events?${new URLSearchParams({ access_token: page.bearer() || '' })}`);
    state.events = es;
    es.addEventListener('open', () => {
      debug('events open');
      // Events may have been missed (a reconnect): the list is read again. Whether the hub is
      // back is the poll's to say, with the session's ticks read in the same go.
      if (state.loaded) page.resyncSpeakers().catch(() => undefined);
    });
    for (const type of page.APPLIED_EVENT_TYPES) {
      es.addEventListener(type, (ev) => {
        let data;
        try {
          data = JSON.parse(ev.data);
        } catch {
          return; // not ours to show
        }
        state.model.apply({ type, data });
      });
    }
  }

  function stopEvents() {
    if (state.events) state.events.close();
    state.events = null;
  }

  /**
   * The channel's events over MQTT. They carry less than the wire events (no speaker record, no
   * title), so the model is not fed half a state: the time ticks go in as they are, a playback or
   * speaker change has the page read the hub now, and a hub (back) online has it read everything.
   */
  function mqttEvent(m) {
    if (m.Event === 'PlaybackTimeChanged')
      state.model.apply({ type: 'playbackTime', data: { timeElapsed: Number(m.PlaybackTime), deviceIds: page.ids(m.DeviceIDList) } });
    else if (m.Event === 'PlaybackStateChanged' || m.Event === 'HubOnline') page.poll();
    else if (m.Event === 'DeviceStateUpdated' && state.loaded) page.resyncSpeakers().catch(() => undefined);
  }

  Object.assign(page, { startEvents, stopEvents, mqttEvent });
})();

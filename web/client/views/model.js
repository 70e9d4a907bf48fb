'use strict';
/*
 * What the page shows of the hub is the hub's own read model (src/hub-client/read-model-state.ts,
 * served compiled at /client/read-model.js), the one MQTT and HomeKit show: fed by the hub's
 * wire events (its event stream on a local hub, the channel's events over MQTT; events.js) and by
 * the full reads of the poll (device_list, session_status), which also resync it after a reconnect.
 * The view follows the model's changes (here, to views/speakers.js and views/now-playing.js);
 * only the ticks (this page's own session) are not in it.
 */
(function () {
  const page = window.SpeakerHubPage;
  const { state } = page;
  const { ReadModelState, APPLIED_EVENT_TYPES } = window.SpeakerHubReadModel;

  function changed(c) {
    if (c.kind === 'device') page.showDevice(c.device);
    else if (c.kind === 'missing') document.getElementById(`spk-${c.deviceId}`)?.closest('li').remove();
    else if (c.kind === 'synced') {
      // A speaker the list does not show yet (added to the hub): the list is built again.
      if (c.devices.some((d) => !document.getElementById(`spk-${d.DeviceID}`))) {
        page.buildList(c.devices);
        for (const d of state.model.all()) page.showDevice(d); // the ticks follow with the next session_status
      }
      page.showMaster();
    } else if (c.kind === 'playback') page.showPlayback(page.shownPlayback());
    else if (c.kind === 'time' && (state.sessionZone === undefined || c.playbackId === undefined || c.playbackId === state.sessionZone))
      page.showTime(c.timeElapsed);
  }

  const newModel = () => new ReadModelState(changed);
  state.model = newModel();

  Object.assign(page, { newModel, APPLIED_EVENT_TYPES });
})();

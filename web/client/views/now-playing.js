'use strict';
/*
 * "Now playing": the state, time, title and speakers of the playback (zone) this page's
 * session acts on, as the model has it; and the session as session_status reads it (the
 * speaker ticks, and which zone is the session's).
 */
(function () {
  const page = window.SpeakerHubPage;
  const { $, state } = page;

  const fmt = (s) => `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
  const STATES = { PlayerStatePlaying: 'Playing', PlayerStatePaused: 'Paused', PlayerStateStopped: 'Stopped' };
  const ids = (list) => (list ? list.split(',').filter(Boolean) : []);

  function showTime(t) {
    if (!state.unreachable) $('time').textContent = t >= 0 ? fmt(t) : '';
  }

  /** "Now playing": what plays and where, as the model has it (the hub's state words while it is out of reach). */
  function showPlayback(pb) {
    if (state.unreachable) return;
    $('state').textContent = STATES[pb.state] || pb.state;
    showTime(pb.timeElapsed);
    // As session_status says it: a title only while something plays or is paused.
    const title = pb.state === 'PlayerStateStopped' ? undefined : pb.title;
    const what = title === undefined ? '' : pb.kind === 'tts' ? `Speech: “${title}”` : pb.kind === 'web' ? title : `“${title}”`;
    $('now-title').textContent = what;
    const where = pb.deviceIds.map((id) => (state.model.device(id) || {}).DeviceName || id);
    $('now-where').textContent = what && where.length ? `on ${where.join(', ')}` : '';
    if (pb.persistentId) state.lastMedia = pb.persistentId;
  }

  /**
   * The playback (zone) this page's session acts on, as session_status last named it: "Now
   * playing" shows that one, not whichever room changed last (other rooms play on their own).
   */
  function shownPlayback() {
    if (state.sessionZone === undefined) return state.model.playback;
    return state.model.playbacks().find((z) => z.playbackId === state.sessionZone) || { state: 'PlayerStateStopped', timeElapsed: -1, deviceIds: [] };
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
      if (!state.busy.has(id)) box.checked = selected.has(id);
    }
    const prev = state.sessionZone;
    state.sessionZone = s.PlaybackID;
    // Without the hub's event stream (cloud, MQTT) the poll alone feeds the model, which then holds
    // the session's zone only: one the session has left is gone from it.
    if (!state.events && prev && prev !== s.PlaybackID)
      state.model.setPlayback({ playbackId: prev, state: 'PlayerStateStopped', timeElapsed: -1, deviceIds: [] });
    // A stopped session names no zone: its snapshot says Stopped without touching the other rooms'.
    if (s.PlaybackID) state.model.setPlayback(snapshotOf(s));
    else showPlayback(shownPlayback());
  }

  Object.assign(page, { ids, showTime, showPlayback, shownPlayback, showSession });
})();

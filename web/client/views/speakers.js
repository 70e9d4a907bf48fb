'use strict';
/*
 * The speaker list: one item per speaker with its tick (in this page's playback session or
 * not), badge, availability and volume slider; the master slider; and the hub's library in
 * the Play section's list. Read from the hub (device_list, media_list), drawn from the model.
 */
(function () {
  const page = window.SpeakerHubPage;
  const { $, state } = page;

  /** One speaker's badge, availability and volume, as the model has it. */
  function showDevice(d) {
    const { model, setting } = state;
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
    const on = state.model.all().filter((d) => d.Active);
    const master = $('master-volume');
    master.value = $('master-volume-value').textContent = on.length ? Math.round(on.reduce((sum, d) => sum + d.Volume, 0) / on.length) : 0;
  }

  /** The list's items (no values: showDevice() fills them from the model). */
  function buildList(devices) {
    const { busy, setting } = state;
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
        page.act(out, add ? `${d.DeviceName} is now in the session.` : `${d.DeviceName} left the session.`, async () => {
          try {
            await page.api(add ? 'add_device_to_session' : 'remove_device_from_session', { DeviceID: d.DeviceID });
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
        state.edits++;
        setting.add(d.DeviceID);
        page.act(out, `${d.DeviceName}: volume ${slider.value}.`, async () => {
          try {
            await page.api('set_volume_device', { DeviceID: d.DeviceID, Volume: slider.value });
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
    const still = page.current();
    const { DeviceList } = await page.api('device_list');
    if (!still()) return;
    buildList(DeviceList);
    state.model.replaceDevices(DeviceList);
    for (const d of state.model.all()) showDevice(d);
  }

  async function loadMedia() {
    const { MediaList } = await page.api('media_list');
    const sel = $('media');
    sel.textContent = '';
    for (const m of MediaList) {
      const o = document.createElement('option');
      o.value = m.PersistentID;
      o.textContent = `${m.Title}${m.Artist ? ` — ${m.Artist}` : ''}`;
      sel.appendChild(o);
    }
  }

  /** The full speaker list into the model (every other second, and at once after the hub was out of reach). */
  async function resyncSpeakers() {
    const before = state.edits;
    const still = page.current();
    const { DeviceList } = await page.api('device_list');
    if (still() && state.edits === before) state.model.replaceDevices(DeviceList); // else a volume sent meanwhile may be missing from it: the next read
  }

  Object.assign(page, { showDevice, showMaster, buildList, loadSpeakers, loadMedia, resyncSpeakers });
})();

'use strict';
/*
 * The Announce section: sends an announcement (text, volume, chime, duck; to the ticked
 * speakers or all) and follows it (queued → playing → done/failed) until it ends.
 */
(function () {
  const page = window.SpeakerHubPage;
  const { $ } = page;
  let announceTimer = null;

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
        const s = await page.api('announcement_status', { AnnouncementID: id });
        shown(s.State, s.Reason, s.ModeReason);
        if (s.State === 'done' || s.State === 'failed') return;
      } catch (e) {
        if (e.code === 'AnnouncementNotFound' || e.code === 'Unauthorized') return shown('failed', page.plain(e));
        /* a lost answer: ask again */
      }
      announceTimer = setTimeout(step, 500);
    };
    announceTimer = setTimeout(step, 250);
  }

  /** Signed out: the announcement followed is no longer this page's news. */
  const stopFollowing = () => clearTimeout(announceTimer);

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
    const { AnnouncementID } = await page.api('announce', params);
    followAnnouncement(AnnouncementID);
  }

  Object.assign(page, { announce, stopFollowing });
})();

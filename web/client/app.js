'use strict';
/*
 * The page's controls wired to what they do, then main(): the server's config, the cloud's
 * sign-in answer if the page came back from the consent page, and the sign-in kept in this
 * tab (or the sign-in form). Loaded last: every part is on window.SpeakerHubPage by then.
 */
(function () {
  const page = window.SpeakerHubPage;
  const { $, store, state, show } = page;
  const { api, act, plain } = page;

  const target = () => document.querySelector('input[name=target]:checked').value;
  const onWhat = () => (target() === 'party' ? 'on all speakers' : 'on the selected speakers');

  function wire() {
    $('cloud-signin').addEventListener('click', () => page.startCloudSignin().catch((e) => show(`Sign-in failed: ${e.message}`)));
    $('signin-local').addEventListener('submit', (ev) => {
      ev.preventDefault();
      store.removeItem('sh.mqtt');
      store.setItem('sh.apiToken', $('api-token').value.trim());
      show('');
      page.signedIn().catch((e) => {
        if (e.code !== 'Unauthorized') show(plain(e)); // else signedOut() said the token was refused
      });
    });
    $('signin-mqtt').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const keys = { subscribeKey: $('sub-key').value.trim(), publishKey: $('pub-key').value.trim(), channel: $('channel').value.trim() };
      store.removeItem('sh.apiToken');
      store.setItem('sh.mqtt', JSON.stringify(keys));
      show('');
      page.signedIn().catch((e) => {
        page.signedOut(`Sign-in failed: ${e.message}`);
      });
    });
    $('announce').addEventListener('submit', (ev) => {
      ev.preventDefault();
      act($('announce-result'), 'Announcement sent.', page.announce);
    });
    $('signout').addEventListener('click', () => {
      store.removeItem('sh.tokens');
      store.removeItem('sh.apiToken');
      page.signedOut('Signed out.');
      $('signin-result').dataset.kind = 'ok';
    });
    const status = $('status-result');
    $('refresh').addEventListener('click', () => act($('speakers-result'), 'Speaker list updated.', page.loadSpeakers));
    $('pause').addEventListener('click', () => act(status, 'Paused.', () => api('pause_play')));
    $('stop').addEventListener('click', () => act(status, 'Stopped.', () => api('stop_play')));
    $('resume').addEventListener('click', () =>
      act(status, 'Playing again.', () =>
        api(target() === 'party' ? 'resume_hub_media_party_mode' : 'resume_hub_media', { PersistentID: state.lastMedia || $('media').value }),
      ),
    );
    const master = $('master-volume');
    master.addEventListener('input', () => ($('master-volume-value').textContent = master.value));
    master.addEventListener('change', () =>
      act(status, `Every speaker at volume ${master.value}.`, async () => {
        state.edits++;
        await api('set_volume', { Volume: master.value });
        await page.resyncSpeakers();
      }),
    );
    $('play-media').addEventListener('submit', (ev) => {
      ev.preventDefault();
      state.lastMedia = $('media').value;
      const title = $('media').selectedOptions[0]?.textContent || 'the track';
      act($('play-media-result'), `Playing “${title}” ${onWhat()}.`, () =>
        api(target() === 'party' ? 'play_hub_media_party_mode' : 'play_hub_media', { PersistentID: state.lastMedia }),
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
      state.config = await (await fetch('/client/config.json')).json();
    } catch {
      /* the page came from this server a moment ago: assume a local hub and say it is unreachable below */
    }
    const { config } = state;
    $('where').textContent = config.mode === 'cloud' ? `SpeakerHub Cloud · ${location.host}` : `Local hub · ${location.host}`;
    if (config.mode === 'cloud') await page.finishCloudSignin();
    if (!page.bearer() && !store.getItem('sh.mqtt')) return page.signedOut();
    try {
      await page.signedIn();
    } catch (e) {
      if (e.code !== 'Unauthorized') show(plain(e));
    }
  }

  main();
})();

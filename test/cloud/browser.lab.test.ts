/**
 * The browser sample client in a real headless Chromium (Debian's, through playwright-core):
 * on the cloud it signs up, signs in through the consent page (authorization code + PKCE),
 * plays TTS on a virtual speaker, moves a volume slider and announces, all checked on the hub
 * itself; on a local hub it signs in with the API token and makes an announcement (followed to
 * done, confirmed by the hub over REST); on a hub with the MQTT extension it signs in with the
 * pub/sub keys over MQTT-over-WebSocket, moves a volume slider and announces to all speakers.
 * On a hub of its own: the speaker ticks are the hub's playback session (changed from elsewhere,
 * changed from the page), "Now playing" names the title or URL, each control's result shows
 * next to it in plain words, a wrong token is called refused, and a stopped hub is called
 * unreachable until it is back.
 * UPDATE_SCREENSHOTS=1 refreshes the docs' screenshot (docs/images/browser-client.png).
 */
import { type Browser, type Page } from 'playwright-core';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromiumMissing, launchChromium } from '../helpers/chromium';
import { labSuite } from '../helpers/labs';
import { startHub, TEST_TOKEN, type TestHub } from '../helpers/hub';
import { startCloud, PASSWORD, type TestCloud } from './helpers';
import { startLinkedHub, type LinkedHub } from './hub';
import { Probe, startMqttHub, type MqttTestHub } from '../mqtt/helpers';

let browser: Browser;
let t: TestCloud;
let hub: LinkedHub | undefined;
let mqttHub: MqttTestHub | undefined;

labSuite('Chromium', chromiumMissing())('browser client', () => {
  beforeAll(async () => {
    browser = await launchChromium();
    t = await startCloud();
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
    await hub?.close();
    await mqttHub?.close();
    await t?.close();
  });

  /**
   * The steps of a walk with their times, the page's debug lines (SPEAKERHUB_DEBUG) and the hub's
   * warnings: printed only when the walk fails (or always with STEP_LOG=1), so an intermittent
   * failure says which step waited.
   */
  function stepLog(page: Page, hubLogs: () => string[] = () => []) {
    const start = Date.now();
    const lines: string[] = [];
    const at = () => `+${String(Date.now() - start).padStart(6)} ms`;
    void page.addInitScript(() => ((globalThis as any).SPEAKERHUB_DEBUG = true));
    page.on('console', (m) => lines.push(`${at()}   ${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => lines.push(`${at()}   page error: ${e.message}`));
    return {
      step: (what: string) => lines.push(`${at()} ${what}`),
      /** Runs the walk; on failure (or the test's timeout, `ms` before it) prints the log. */
      async run(walk: () => Promise<void>, timeoutMs: number): Promise<void> {
        const dump = (why: string) =>
          console.log(
            `${why}\n${lines.join('\n')}\nhub warnings:\n${hubLogs()
              .filter((l) => /"level":(40|50|60)|MQTT link/.test(l))
              .join('\n')}`,
          );
        const guard = setTimeout(() => dump('the walk is about to time out'), timeoutMs - 1000);
        try {
          await walk();
          if (process.env.STEP_LOG === '1') dump('the walk passed (STEP_LOG=1)');
        } catch (e) {
          dump(`the walk failed: ${(e as Error).message}`);
          throw e;
        } finally {
          clearTimeout(guard);
        }
      },
    };
  }

  /** Waits until check() holds, polling the hub (a positive signal; the test timeout bounds it). */
  async function until(check: () => boolean | Promise<boolean>): Promise<void> {
    while (!(await check())) await new Promise((r) => setTimeout(r, 25));
  }

  test('cloud: sign up, sign in through the consent page, play TTS on a virtual speaker, move a volume slider, announce', async () => {
    const page: Page = await browser.newPage({ viewport: { width: 420, height: 1100 } });
    // Sign up on the web site, then sign out: the client's sign-in must go through the consent page.
    await page.goto(`${t.base}/signup`);
    await page.fill('#username', 'browser.user');
    await page.fill('#email', 'browser@example.org');
    await page.fill('#password', PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForURL(`${t.base}/account`);
    await page.click('text=Sign out');
    await page.waitForURL(`${t.base}/signin`);

    // The user's hub links with the new account.
    hub = await startLinkedHub(t.base, 'browser.user', { speakers: 2 });
    await hub.waitFor('online');

    await page.goto(`${t.base}/`);
    await page.click('#cloud-signin');
    await page.waitForURL(/\/oauth\/authorize\?/);
    expect(await page.textContent('main')).toMatch(/Sign in first/);
    await page.fill('#username', 'browser.user');
    await page.fill('#password', PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForSelector('#allow');
    await page.click('#allow');
    await page.waitForURL(`${t.base}/`);
    await page.waitForSelector('#speakers li');
    expect(await page.locator('#speakers li').count()).toBe(2);

    const ids = await page.locator('#speakers input[type=checkbox]').evaluateAll((els) => els.map((e) => e.id.replace('spk-', '')));
    const first = ids[0];
    await page.check(`#spk-${first}`);
    await page.locator(`#spk-${first}-result[data-kind=ok]`, { hasText: 'is now in the session' }).waitFor();
    await page.fill('#tts-text', 'Hello from the browser. This sentence is long enough to keep playing while the test looks at the hub.');
    await page.click('#speak');

    await page.waitForFunction(() => (globalThis as any).document.getElementById('state')?.textContent === 'Playing');
    const status = hub.hub.core.playback.latestSnapshot();
    expect(status.state).toBe('PlayerStatePlaying');
    expect(status.kind).toBe('tts');
    expect(status.deviceIds).toEqual([first]);

    await page.locator(`#spk-${first}-vol`).fill('35');
    await until(() => hub!.hub.core.volume.of(first) === 35);
    expect(await page.textContent(`output[for="spk-${first}-vol"]`)).toBe('35');

    // Hub media on every speaker, then pause, resume and stop from the page.
    const state = (text: string) => page.waitForFunction((t) => (globalThis as any).document.getElementById('state')?.textContent === t, text);
    await page.check('input[name=target][value=party]');
    // Each control's result shows next to it (on a phone the top of the page is out of sight).
    const done = (where: string, text: string) => page.locator(`#${where}[data-kind=ok]`, { hasText: text }).waitFor();
    await page.click('#play-media button[type=submit]');
    await done('play-media-result', 'on all speakers');
    await state('Playing');
    expect(hub.hub.core.playback.latestSnapshot()).toMatchObject({ kind: 'hub', deviceIds: ids });
    await page.click('#pause');
    await done('status-result', 'Paused.');
    await state('Paused');
    expect(hub.hub.core.playback.latestSnapshot().state).toBe('PlayerStatePaused');
    await page.click('#resume');
    await done('status-result', 'Playing again.');
    await state('Playing');
    await page.locator('#master-volume').fill('30');
    await until(() => ids.every((id) => hub!.hub.core.volume.of(id) === 30));
    await page.click('#stop');
    await done('status-result', 'Stopped.');
    await state('Stopped');
    expect(hub.hub.core.playback.latestSnapshot().state).toBe('PlayerStateStopped');
    await page.check('input[name=target][value=session]');
    await page.fill('#tts-text', 'Hello from the browser. This sentence is long enough to keep playing while the test looks at the hub.');
    await page.click('#speak');
    await done('play-tts-result', 'Speaking on the selected speakers.');
    await state('Playing');
    await page.locator('#speakers li', { hasText: 'playing' }).first().waitFor(); // the badges follow playback

    // An announcement over the music through the cloud, followed on the page until it is done.
    await page.fill('#announce-text', 'Doorbell');
    await page.click('#announce-send');
    await done('announce-result', 'Announcement sent.');
    await page.waitForSelector('#announce-status[data-state=done]');
    expect(await page.textContent('#announce-status')).toBe('Announcement: done');

    // The docs' picture is refreshed on request only, so test runs leave the tree clean.
    const shot =
      process.env.UPDATE_SCREENSHOTS === '1'
        ? join(__dirname, '../../docs/images/browser-client.png')
        : join(tmpdir(), `speakerhub-client-${process.pid}.png`);
    await page.screenshot({ path: shot, fullPage: true });
    if (process.env.UPDATE_SCREENSHOTS !== '1') await rm(shot, { force: true });
    await page.close();
  }, 60_000);

  test('local hub: the same client at / signs in with the API token, lists the speakers and announces on one of them', async () => {
    const page = await browser.newPage();
    await page.goto(`${hub!.base}/`);
    await page.waitForSelector('#signin-local:not([hidden])');
    // This hub runs no MQTT: the keys' sign-in says so instead of waiting forever.
    await page.fill('#sub-key', 'sub-0123456789abcdef');
    await page.fill('#pub-key', 'pub-0123456789abcdef');
    await page.click('#signin-mqtt button[type=submit]');
    await page.locator('#signin-result', { hasText: 'cannot reach the hub over MQTT' }).waitFor();
    await page.fill('#api-token', TEST_TOKEN);
    await page.click('#signin-local button[type=submit]');
    await page.waitForSelector('#speakers li');
    expect(await page.locator('#speakers li').count()).toBe(2);
    expect(await page.textContent('#where')).toMatch(/Local hub/);

    // The second speaker only (the first may still be in the session from the cloud test).
    const ids = await page.locator('#speakers input[type=checkbox]').evaluateAll((els) => els.map((e) => e.id.replace('spk-', '')));
    for (const id of ids) if (await page.isChecked(`#spk-${id}`)) await page.uncheck(`#spk-${id}`);
    await page.check(`#spk-${ids[1]}`);
    await page.locator(`#spk-${ids[1]}-result[data-kind=ok]`).waitFor();
    await page.fill('#announce-text', 'Dinner is ready');
    await page.fill('#announce-volume', '25');
    await page.check('#announce-chime');
    await page.check('#announce-duck');
    const answer = page.waitForResponse((r) => r.url().includes('/api/v1/announce?'));
    await page.click('#announce-send');
    const { AnnouncementID } = await (await answer).json();
    expect(AnnouncementID).toEqual(expect.any(String));
    await page.waitForSelector('#announce-status[data-state=done]');
    expect(await page.textContent('#announce-status')).toBe('Announcement: done');

    // The hub agrees, over REST.
    const get = async (path: string) => (await fetch(hub!.base + path, { headers: { Authorization: `Bearer ${TEST_TOKEN}` } })).json();
    const { SessionToken } = await get('/api/v1/init_session');
    const status = await get(`/api/v1/announcement_status?${new URLSearchParams({ SessionToken, AnnouncementID })}`);
    expect(status).toMatchObject({
      AnnouncementID,
      State: 'done',
      DeviceIDList: ids[1],
      Mode: 'interrupt',
      ModeReason: expect.stringContaining('(virtual)'),
    });
    // The page says why the music was interrupted rather than ducked.
    expect(await page.getAttribute('#announce-status', 'title')).toContain('interrupted, not ducked');

    // "All speakers" needs no ticks; an empty selection with "Selected speakers" is refused on the page.
    await page.uncheck(`#spk-${ids[1]}`);
    await page.locator(`#spk-${ids[1]}-result[data-kind=ok]`, { hasText: 'left the session' }).waitFor();
    await page.click('#announce-send');
    await page.locator('#announce-result[data-kind=error]', { hasText: 'No speaker is ticked' }).waitFor();
    await page.close();
  }, 30_000);

  test("local hub: the ticks are the page's session, now playing names the title or URL, results show next to their control in plain words, a refused token and a stopped hub say so", async () => {
    const names = ['Kitchen', 'Office', 'Living Room'];
    let own: TestHub | undefined = await startHub({ speakers: { virtual: { count: 3, names } } });
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    try {
      await page.goto(`${own.base}/`);
      // A wrong token: the page says the hub refused it (not just "Not signed in") and stays at the sign-in form.
      await page.fill('#api-token', 'not-the-token-of-this-hub');
      await page.click('#signin-local button[type=submit]');
      await page.locator('#signin-result', { hasText: 'The hub refused this API token' }).waitFor();
      expect(await page.isVisible('#signin-local')).toBe(true);
      await page.fill('#api-token', TEST_TOKEN);
      await page.click('#signin-local button[type=submit]');
      await page.waitForSelector('#speakers li');
      const { DeviceList } = await own.op('device_list');
      const id = (name: string): string => DeviceList.find((d: { DeviceName: string }) => d.DeviceName === name).DeviceID;
      const ticked = () =>
        page.locator('#speakers input[type=checkbox]:checked').evaluateAll((els) => els.map((e) => e.id.replace('spk-', '')).sort());

      // Playing with no speaker in the session: the error shows under the Play button, in plain words.
      await page.click('#play-media button[type=submit]');
      await page.locator('#play-media-result[data-kind=error]', { hasText: 'No speaker is ticked' }).waitFor();
      expect(await page.getAttribute('#play-media-result', 'title')).toMatch(/^NoSpeakerSelected: /); // the API's words, as a tooltip

      // Someone else (another client, over REST) plays on every speaker: the page's ticks stay its own
      // session's (empty: zones, each client its own), and "Now playing" (a page with no speakers of
      // its own follows the hub's latest playback) names the title and the speakers without a reload.
      const { MediaList } = await own.op('media_list');
      await own.op('play_hub_media_party_mode', { PersistentID: MediaList[0].PersistentID });
      await page.locator('#now-title', { hasText: `“${MediaList[0].Title}”` }).waitFor();
      expect(await page.textContent('#now-where')).toBe('on Kitchen, Office, Living Room');
      expect(await ticked()).toEqual([]);

      // Ticking puts speakers in the page's session; unticking one takes it out of the playback it
      // plays in with the session (the others play on).
      for (const n of ['Kitchen', 'Living Room']) {
        await page.check(`#spk-${id(n)}`);
        await page.locator(`#spk-${id(n)}-result[data-kind=ok]`, { hasText: `${n} is now in the session.` }).waitFor();
      }
      expect(await ticked()).toEqual([id('Kitchen'), id('Living Room')].sort());
      await page.uncheck(`#spk-${id('Living Room')}`);
      await page.locator(`#spk-${id('Living Room')}-result[data-kind=ok]`, { hasText: 'Living Room left the session.' }).waitFor();
      await page.locator('#now-where', { hasText: 'on Kitchen, Office' }).waitFor();
      expect(await ticked()).toEqual([id('Kitchen')]);

      // Web media on the page's speakers: a zone of its own ("Now playing" shows its URL), while the
      // other client's music plays on in the other room.
      const url = `${own.base}/samples/sample-tone-2-little-waltz.wav`;
      await page.fill('#web-url', url);
      await page.click('#play-web button[type=submit]');
      await page.locator('#play-web-result[data-kind=ok]', { hasText: 'Playing the web address on the selected speakers.' }).waitFor();
      await page.locator('#now-title', { hasText: url }).waitFor();
      await page.locator('#now-where', { hasText: 'on Kitchen' }).waitFor();
      await page.locator('#state', { hasText: 'Playing' }).waitFor();
      const zones = (await own.op('playback_list')).PlaybackList;
      expect(zones.map((z: { DeviceIDList: string[]; MediaKind: string }) => [z.DeviceIDList, z.MediaKind])).toEqual([
        [[id('Office')], 'hub'],
        [[id('Kitchen')], 'web'],
      ]);

      // The hub stops: the page says it is unreachable (no stale "Playing"); it comes back on the same port and the page recovers.
      const port = new URL(own.base).port;
      await own.close();
      own = undefined;
      await page.locator('#hub-link', { hasText: 'The hub cannot be reached' }).waitFor();
      expect(await page.textContent('#state')).toBe('Hub unreachable');
      await page.click('#stop');
      await page.locator('#status-result[data-kind=error]', { hasText: 'The hub cannot be reached' }).waitFor();
      own = await startHub({ speakers: { virtual: { count: 3, names } }, server: { port: Number(port) } });
      await page.locator('#state', { hasText: 'Stopped' }).waitFor();
      expect(await page.isHidden('#hub-link')).toBe(true);
      expect(await ticked()).toEqual([]); // the new hub's session is empty, and the ticks say so
      await page.check(`#spk-${id('Kitchen')}`);
      await page.locator(`#spk-${id('Kitchen')}-result[data-kind=ok]`, { hasText: 'Kitchen is now in the session.' }).waitFor();
      // The page's session holds Kitchen: its play goes there (and nowhere else).
      await page.click('#play-media button[type=submit]');
      await page.locator('#play-media-result[data-kind=ok]').waitFor();
      expect((await own.op('playback_list')).PlaybackList.map((z: { DeviceIDList: string[] }) => z.DeviceIDList)).toEqual([[id('Kitchen')]]);
    } finally {
      await page.close();
      await own?.close();
    }
  }, 60_000);

  test("local hub: the page shows the hub's read model, fed by its events: another client's announcement and volume show on the speaker without the page asking", async () => {
    const names = ['Kitchen', 'Office'];
    const own = await startHub({ speakers: { virtual: { count: 2, names } } });
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    const asked: string[] = [];
    page.on('request', (r) => asked.push(new URL(r.url()).pathname));
    try {
      await page.goto(`${own.base}/`);
      await page.fill('#api-token', TEST_TOKEN);
      await page.click('#signin-local button[type=submit]');
      await page.waitForSelector('#speakers li');
      // The page loads the hub's own read model (the compiled src/hub-client/read-model-state.ts).
      expect(await page.evaluate(() => typeof (globalThis as any).SpeakerHubReadModel.ReadModelState)).toBe('function');
      const { DeviceList } = await own.op('device_list');
      const office: string = DeviceList.find((d: { DeviceName: string }) => d.DeviceName === 'Office').DeviceID;
      const badge = page.locator(`#spk-${office}`).locator('xpath=ancestor::li').locator('.badge');
      await badge.filter({ hasText: 'ready' }).waitFor();

      // Another client announces on Office: the badge says so while it speaks, then goes back, and
      // the page never asked about that announcement (its state came as the hub's events).
      const { AnnouncementID } = await own.op('announce', {
        DeviceIDList: office,
        Text: 'This announcement comes from another client and is long enough to be seen while it is spoken.',
      });
      await badge.filter({ hasText: 'announcing' }).waitFor();
      await badge.filter({ hasText: 'ready' }).waitFor();
      expect((await own.op('announcement_status', { AnnouncementID })).State).toBe('done');
      expect(asked.filter((p) => p.endsWith('/announcement_status'))).toEqual([]);
      expect(asked).toContain('/api/v1/events');

      // Another client's volume: the slider and its number follow.
      const target = DeviceList.find((d: { DeviceID: string }) => d.DeviceID === office).Volume === 23 ? 24 : 23;
      await own.op('set_volume_device', { DeviceID: office, Volume: String(target) });
      await page.locator(`output[for="spk-${office}-vol"]`, { hasText: String(target) }).waitFor();
      expect(await page.inputValue(`#spk-${office}-vol`)).toBe(String(target));
    } finally {
      await page.close();
      await own.close();
    }
  }, 60_000);

  test('MQTT: the client signs in with the pub/sub keys over WebSocket at /mqtt, lists the speakers, moves a volume slider and announces to all', async () => {
    mqttHub = await startMqttHub();
    const page = await browser.newPage({ viewport: { width: 420, height: 1100 } });
    const hubLogs = mqttHub.logs; // kept after the hub stops
    const log = stepLog(page, () => hubLogs);
    const { step } = log;
    await log.run(async () => {
      const external: string[] = [];
      page.on('request', (r) => {
        if (!r.url().startsWith(mqttHub!.base)) external.push(r.url());
      });
      step('open the page');
      await page.goto(`${mqttHub!.base}/`);
      await page.waitForSelector('#signin-mqtt:not([hidden])');
      await page.fill('#sub-key', mqttHub!.keys.subscribeKey);
      await page.fill('#pub-key', mqttHub!.keys.publishKey);
      step('sign in with the keys');
      await page.click('#signin-mqtt button[type=submit]');
      await page.waitForSelector('#speakers li');
      expect(await page.textContent('#where')).toMatch(/over MQTT/);
      const { DeviceList } = await mqttHub!.rest('device_list');
      expect(await page.locator('#speakers li').count()).toBe(DeviceList.length);

      // A read-only listener on the channel sees the page's command and the hub's answer.
      step('probe connects');
      const probe = await Probe.connect(mqttHub!.url!, { username: mqttHub!.keys.subscribeKey });
      await probe.client.subscribeAsync('speakerhub/channel');
      const id: string = DeviceList[0].DeviceID;
      const target = DeviceList[0].Volume === 37 ? '36' : '37';
      step(`move the slider to ${target}`);
      await page.locator(`#spk-${id}-vol`).fill(target);
      await page.locator(`#spk-${id}-result[data-kind=ok]`, { hasText: `volume ${Number(target)}.` }).waitFor();
      step('the hub has the volume?');
      await until(async () => String((await mqttHub!.rest('get_volume_device', { DeviceID: id })).Volume) === target);
      const command = (await probe.wait((m) => m.json?.Command === 'set_volume_device')).json;
      expect(command).toMatchObject({ HKWHubUUID: mqttHub!.uuid, DeviceID: id, Volume: target, SessionToken: expect.any(String) });
      const response = (await probe.wait((m) => m.json?.ResponseOf === 'set_volume_device' && m.json.transaction === command.transaction)).json;
      expect(response).toMatchObject({ HKWHubUUID: mqttHub!.uuid, Result: 'true' });

      // Nothing came over REST: the page never sent an API token, and loaded nothing from elsewhere.
      expect(await page.evaluate(() => (globalThis as any).sessionStorage.getItem('sh.apiToken'))).toBeNull();
      expect(external.filter((u) => !u.startsWith('ws://'))).toEqual([]);

      // An announcement to every speaker over MQTT, followed to done; the hub agrees over REST.
      step('announce');
      await page.check('input[name=announce-target][value=all]');
      await page.fill('#announce-text', 'Hello over MQTT');
      await page.click('#announce-send');
      const sent = (await probe.wait((m) => m.json?.ResponseOf === 'announce' && m.json.HKWHubUUID === mqttHub!.uuid)).json;
      step('announcement followed to done?');
      await page.waitForSelector('#announce-status[data-state=done]');
      const announced = await mqttHub!.rest('announcement_status', { AnnouncementID: sent.AnnouncementID });
      expect(announced.State).toBe('done');
      expect(announced.DeviceIDList.split(',').sort()).toEqual(DeviceList.map((d: { DeviceID: string }) => d.DeviceID).sort());
      await probe.end();

      // The bundle is the installed mqtt package's browser build, served without a token.
      const res = await fetch(`${mqttHub!.base}/client/mqtt.min.js`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/javascript/);
      expect(await res.text()).toBe(await readFile(join(dirname(require.resolve('mqtt/package.json')), 'dist', 'mqtt.min.js'), 'utf8'));

      // Wrong keys are refused with a clear message.
      step('sign out, wrong keys');
      await page.click('#signout');
      await page.fill('#sub-key', mqttHub!.keys.subscribeKey);
      await page.fill('#pub-key', 'not-the-publish-key');
      await page.click('#signin-mqtt button[type=submit]');
      await page.locator('#signin-result', { hasText: 'refused these keys' }).waitFor();

      // Signed in over MQTT, the hub stops: the page says it cannot be reached instead of the last state.
      step('sign in again');
      await page.fill('#pub-key', mqttHub!.keys.publishKey);
      await page.click('#signin-mqtt button[type=submit]');
      // Signed in for real before the hub stops: the list and the state come from this sign-in (signing
      // out empties them; a "Stopped" left from before once let the hub stop mid-sign-in, and the page
      // then went back to the sign-in form instead of saying the hub cannot be reached).
      await page.waitForSelector('#speakers li');
      await page.locator('#state', { hasText: 'Stopped' }).waitFor();
      step('stop the hub');
      await mqttHub!.close();
      mqttHub = undefined;
      step('the page says unreachable?');
      await page.locator('#hub-link', { hasText: 'The hub cannot be reached' }).waitFor();
      expect(await page.textContent('#state')).toBe('Hub unreachable');
      step('done');
    }, 60_000);
    await page.close();
  }, 60_000);
});

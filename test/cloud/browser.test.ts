/**
 * The browser sample client in a real headless Chromium (Debian's, through playwright-core):
 * on the cloud it signs up, signs in through the consent page (authorization code + PKCE),
 * plays TTS on a virtual speaker, moves a volume slider and announces, all checked on the hub
 * itself; on a local hub it signs in with the API token and makes an announcement (followed to
 * done, confirmed by the hub over REST); on a hub with the MQTT extension it signs in with the
 * pub/sub keys over MQTT-over-WebSocket, moves a volume slider and announces to all speakers.
 * UPDATE_SCREENSHOTS=1 refreshes the README's screenshot (docs/images/browser-client.png).
 */
import { type Browser, type Page } from 'playwright-core';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromiumMissing, launchChromium } from '../helpers/chromium';
import { labSuite } from '../helpers/labs';
import { TEST_TOKEN } from '../helpers/hub';
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
    await page.waitForSelector('#message.ok');
    await page.fill('#tts-text', 'Hello from the browser. This sentence is long enough to keep playing while the test looks at the hub.');
    await page.click('#speak');

    await page.waitForFunction(() => (globalThis as any).document.getElementById('state')?.textContent === 'Playing');
    const status = hub.hub.core.playback.snapshot();
    expect(status.state).toBe('PlayerStatePlaying');
    expect(status.kind).toBe('tts');
    expect(status.deviceIds).toEqual([first]);

    await page.locator(`#spk-${first}-vol`).fill('35');
    await until(() => hub!.hub.core.volume.of(first) === 35);
    expect(await page.textContent(`output[for="spk-${first}-vol"]`)).toBe('35');

    // Hub media on every speaker, then pause, resume and stop from the page.
    const state = (text: string) => page.waitForFunction((t) => (globalThis as any).document.getElementById('state')?.textContent === t, text);
    await page.check('input[name=target][value=party]');
    const done = (label: string) => page.locator('#message.ok', { hasText: `${label}: done.` }).waitFor();
    await page.click('#play-media button[type=submit]');
    await done('Play');
    await state('Playing');
    expect(hub.hub.core.playback.snapshot()).toMatchObject({ kind: 'hub', deviceIds: ids });
    await page.click('#pause');
    await done('Pause');
    await state('Paused');
    expect(hub.hub.core.playback.snapshot().state).toBe('PlayerStatePaused');
    await page.click('#resume');
    await done('Resume');
    await state('Playing');
    await page.locator('#master-volume').fill('30');
    await until(() => ids.every((id) => hub!.hub.core.volume.of(id) === 30));
    await page.click('#stop');
    await done('Stop');
    await state('Stopped');
    expect(hub.hub.core.playback.snapshot().state).toBe('PlayerStateStopped');
    await page.check('input[name=target][value=session]');
    await page.fill('#tts-text', 'Hello from the browser. This sentence is long enough to keep playing while the test looks at the hub.');
    await page.click('#speak');
    await done('Speak');
    await state('Playing');
    await page.locator('#speakers li', { hasText: 'playing' }).first().waitFor(); // the badges follow playback

    // An announcement over the music through the cloud, followed on the page until it is done.
    await page.fill('#announce-text', 'Doorbell');
    await page.click('#announce-send');
    await done('Announce');
    await page.waitForSelector('#announce-status[data-state=done]');
    expect(await page.textContent('#announce-status')).toBe('Announcement: done');

    // The README's picture is refreshed on request only, so test runs leave the tree clean.
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
    await page.locator('#message', { hasText: 'cannot reach the hub over MQTT' }).waitFor();
    await page.fill('#api-token', TEST_TOKEN);
    await page.click('#signin-local button[type=submit]');
    await page.waitForSelector('#speakers li');
    expect(await page.locator('#speakers li').count()).toBe(2);
    expect(await page.textContent('#where')).toMatch(/Local hub/);

    // The second speaker only (the first may still be in the session from the cloud test).
    const ids = await page.locator('#speakers input[type=checkbox]').evaluateAll((els) => els.map((e) => e.id.replace('spk-', '')));
    for (const id of ids) if (await page.isChecked(`#spk-${id}`)) await page.uncheck(`#spk-${id}`);
    await page.check(`#spk-${ids[1]}`);
    await page.locator('#message.ok', { hasText: 'done.' }).waitFor();
    await page.fill('#announce-text', 'Dinner is ready');
    await page.fill('#announce-volume', '25');
    await page.check('#announce-chime');
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
    expect(status).toMatchObject({ AnnouncementID, State: 'done', DeviceIDList: ids[1] });

    // "All speakers" needs no ticks; an empty selection with "Selected speakers" is refused on the page.
    await page.uncheck(`#spk-${ids[1]}`);
    await page.locator('#message.ok', { hasText: `Remove` }).waitFor();
    await page.click('#announce-send');
    await page.locator('#message:not(.ok)', { hasText: 'tick at least one speaker' }).waitFor();
    await page.close();
  }, 30_000);

  test('MQTT: the client signs in with the pub/sub keys over WebSocket at /mqtt, lists the speakers, moves a volume slider and announces to all', async () => {
    mqttHub = await startMqttHub();
    const page = await browser.newPage({ viewport: { width: 420, height: 1100 } });
    const external: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(mqttHub!.base)) external.push(r.url());
    });
    await page.goto(`${mqttHub.base}/`);
    await page.waitForSelector('#signin-mqtt:not([hidden])');
    await page.fill('#sub-key', mqttHub.keys.subscribeKey);
    await page.fill('#pub-key', mqttHub.keys.publishKey);
    await page.click('#signin-mqtt button[type=submit]');
    await page.waitForSelector('#speakers li');
    expect(await page.textContent('#where')).toMatch(/over MQTT/);
    const { DeviceList } = await mqttHub.rest('device_list');
    expect(await page.locator('#speakers li').count()).toBe(DeviceList.length);

    // A read-only listener on the channel sees the page's command and the hub's answer.
    const probe = await Probe.connect(mqttHub.url!, { username: mqttHub.keys.subscribeKey });
    await probe.client.subscribeAsync('speakerhub/channel');
    const id: string = DeviceList[0].DeviceID;
    const target = DeviceList[0].Volume === 37 ? '36' : '37';
    await page.locator(`#spk-${id}-vol`).fill(target);
    await page.locator('#message.ok', { hasText: 'done.' }).waitFor();
    await until(async () => String((await mqttHub!.rest('get_volume_device', { DeviceID: id })).Volume) === target);
    const command = (await probe.wait((m) => m.json?.Command === 'set_volume_device')).json;
    expect(command).toMatchObject({ HKWHubUUID: mqttHub.uuid, DeviceID: id, Volume: target, SessionToken: expect.any(String) });
    const response = (await probe.wait((m) => m.json?.ResponseOf === 'set_volume_device' && m.json.transaction === command.transaction)).json;
    expect(response).toMatchObject({ HKWHubUUID: mqttHub.uuid, Result: 'true' });

    // Nothing came over REST: the page never sent an API token, and loaded nothing from elsewhere.
    expect(await page.evaluate(() => (globalThis as any).sessionStorage.getItem('sh.apiToken'))).toBeNull();
    expect(external.filter((u) => !u.startsWith('ws://'))).toEqual([]);

    // An announcement to every speaker over MQTT, followed to done; the hub agrees over REST.
    await page.check('input[name=announce-target][value=all]');
    await page.fill('#announce-text', 'Hello over MQTT');
    await page.click('#announce-send');
    const sent = (await probe.wait((m) => m.json?.ResponseOf === 'announce' && m.json.HKWHubUUID === mqttHub!.uuid)).json;
    await page.waitForSelector('#announce-status[data-state=done]');
    const announced = await mqttHub.rest('announcement_status', { AnnouncementID: sent.AnnouncementID });
    expect(announced.State).toBe('done');
    expect(announced.DeviceIDList.split(',').sort()).toEqual(DeviceList.map((d: { DeviceID: string }) => d.DeviceID).sort());
    await probe.end();

    // The bundle is the installed mqtt package's browser build, served without a token.
    const res = await fetch(`${mqttHub.base}/client/mqtt.min.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(await res.text()).toBe(await readFile(join(dirname(require.resolve('mqtt/package.json')), 'dist', 'mqtt.min.js'), 'utf8'));

    // Wrong keys are refused with a clear message.
    await page.click('#signout');
    await page.fill('#sub-key', mqttHub.keys.subscribeKey);
    await page.fill('#pub-key', 'not-the-publish-key');
    await page.click('#signin-mqtt button[type=submit]');
    await page.locator('#message', { hasText: 'refused these keys' }).waitFor();
    await page.close();
  }, 30_000);
});

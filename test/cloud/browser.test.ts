/**
 * The browser sample client in a real headless Chromium (Debian's, through playwright-core):
 * on the cloud it signs up, signs in through the consent page (authorization code + PKCE),
 * plays TTS on a virtual speaker and moves a volume slider, all checked on the hub itself;
 * on a local hub it signs in with the API token. UPDATE_SCREENSHOTS=1 refreshes the README's
 * screenshot (docs/images/browser-client.png).
 */
import { chromium, type Browser, type Page } from 'playwright-core';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { labSuite } from '../helpers/labs';
import { TEST_TOKEN } from '../helpers/hub';
import { startCloud, PASSWORD, type TestCloud } from './helpers';
import { startLinkedHub, type LinkedHub } from './hub';

const LAB_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-default-apps',
  '--disable-domain-reliability',
  '--metrics-recording-only',
  '--no-default-browser-check',
  '--disable-features=MediaRouter,OptimizationHints,Translate',
];

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
let browser: Browser;
let t: TestCloud;
let hub: LinkedHub | undefined;

labSuite('Chromium', existsSync(CHROMIUM) ? undefined : `no browser at ${CHROMIUM} (Debian package chromium)`)('browser client', () => {
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: LAB_FLAGS });
    t = await startCloud();
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
    await hub?.close();
    await t?.close();
  });

  /** Waits until check() holds, polling the hub (a positive signal; the test timeout bounds it). */
  async function until(check: () => boolean | Promise<boolean>): Promise<void> {
    while (!(await check())) await new Promise((r) => setTimeout(r, 25));
  }

  test('cloud: sign up, sign in through the consent page, play TTS on a virtual speaker, move a volume slider', async () => {
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

    // The README's picture is refreshed on request only, so test runs leave the tree clean.
    const shot =
      process.env.UPDATE_SCREENSHOTS === '1'
        ? join(__dirname, '../../docs/images/browser-client.png')
        : join(tmpdir(), `speakerhub-client-${process.pid}.png`);
    await page.screenshot({ path: shot, fullPage: true });
    if (process.env.UPDATE_SCREENSHOTS !== '1') await rm(shot, { force: true });
    await page.close();
  }, 60_000);

  test('local hub: the same client at / signs in with the API token and lists the speakers', async () => {
    const page = await browser.newPage();
    await page.goto(`${hub!.base}/`);
    await page.waitForSelector('#signin-local:not([hidden])');
    await page.fill('#api-token', TEST_TOKEN);
    await page.click('#signin-local button[type=submit]');
    await page.waitForSelector('#speakers li');
    expect(await page.locator('#speakers li').count()).toBe(2);
    expect(await page.textContent('#where')).toMatch(/Local hub/);
    await page.close();
  }, 30_000);
});

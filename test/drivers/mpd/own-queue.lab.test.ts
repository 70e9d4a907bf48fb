/**
 * Issue 31 item 11: an MPD playing its own queue (started from its own app, not the hub). One
 * reading everywhere: the speaker plays (device_list/device_info IsPlaying true) but the hub
 * plays nothing on it, so it is "busy: playing its own queue" — in the CLI's `speakers` and
 * `status` (run as a child process) and on the web page's badge (the page's read model).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cliResult, ensureBuilt, killAll, runCli, waitForBanner, within, type Cli } from '../../helpers/cli';
import { chromiumMissing, launchChromium } from '../../helpers/chromium';
import { labSuite } from '../../helpers/labs';
import { MpdLab, mpc, mpdInstalled, mpdStatus, toneWav } from './harness';
import { eventually } from '../../helpers/wait';

const describeIf = labSuite('the MPD lab', mpdInstalled());

describeIf('an MPD playing its own queue reads as busy everywhere', () => {
  let lab: MpdLab;
  let hub: Cli;
  let url: string;
  let token: string;
  const dirs: string[] = [];
  const speaker = 'MPD 127.0.0.1';

  beforeAll(async () => {
    await ensureBuilt();
    lab = await MpdLab.create({ 'own.wav': toneWav(60, 440, 'Own Song') });
    await lab.start();
    const data = mkdtempSync(path.join(tmpdir(), 'mpd-own-'));
    dirs.push(data);
    hub = runCli([
      'hub',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--data',
      data,
      '--mpd',
      `127.0.0.1:${lab.port}`,
      '--mqtt',
      'off',
      '--log-level',
      'warn',
    ]);
    url = (await waitForBanner(hub)).base;
    token = readFileSync(path.join(data, 'api-token'), 'utf8').trim();
    // The user's own app plays the MPD's queue.
    await mpc(lab.port, 'clear', 'add own.wav', 'play 0');
    await eventually(async () => (await mpdStatus(lab.port)).state === 'play', 10_000, 'the MPD playing its own queue');
  }, 120_000);

  afterAll(async () => {
    if (hub && hub.child.exitCode === null) {
      hub.child.kill('SIGTERM');
      await within(hub.exit, 15_000, 'hub exit').catch(() => undefined);
    }
    killAll();
    await lab?.destroy();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  const cli = (...args: string[]) => cliResult([...args, '--url', url], { SPEAKERHUB_TOKEN: token }, 30_000);

  test('device_list: IsPlaying true (the speaker plays); the CLI speakers: busy (its own queue)', async () => {
    await eventually(async () => (await cli('speakers', '--json')).stdout.includes('"IsPlaying": true'), 10_000, 'IsPlaying in device_list');
    const r = await cli('speakers');
    expect(r.code).toBe(0);
    const row = r.stdout.split('\n').find((l) => l.startsWith(speaker))!;
    expect(row).toMatch(/\bbusy\b/);
    expect(row).not.toMatch(/\byes\s+\d/);
    expect(r.stdout).toContain('busy: playing its own queue, not the hub');
  });

  test('status: the hub plays nothing, and the MPD is busy playing its own queue', async () => {
    const r = await cli('status');
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(/Stopped on MPD/);
    expect(r.stdout).toContain(`Busy: ${speaker} is playing its own queue (not the hub's)`);
  });

  const browserTest = chromiumMissing() && process.env.SPEAKERHUB_SKIP_LABS === '1' ? test.skip : test;
  browserTest(
    "the web page's badge: busy (with why), not ready; after a hub play and its stop, busy again",
    async () => {
      const missing = chromiumMissing();
      if (missing)
        throw new Error(`the page test cannot run: ${missing}. Run scripts/install-test-deps.sh (as root), or set SPEAKERHUB_SKIP_LABS=1.`);
      const browser = await launchChromium();
      try {
        const page = await browser.newPage();
        await page.goto(`${url}/`);
        await page.waitForSelector('#signin-local:not([hidden])');
        await page.fill('#api-token', token);
        await page.click('#signin-local button[type=submit]');
        const badge = page.locator('#speakers li', { hasText: speaker }).locator('.badge');
        await badge.filter({ hasText: /^busy$/ }).waitFor({ timeout: 15_000 });
        expect(await badge.getAttribute('title')).toContain("playing its own queue, not the hub's");
        // A hub play takes it over (playing), its stop leaves it stopped (ready): the badge follows.
        expect((await cli('play', 'Little Waltz', '--speakers', speaker)).code).toBe(0);
        await badge
          .filter({ hasText: /^playing$/ })
          .waitFor({ timeout: 15_000 })
          .catch(async (e) => {
            throw new Error(
              `${(e as Error).message}\nbadge ${await badge.textContent()}\n${(await cli('status')).stdout}${(await cli('speakers')).stdout}`,
            );
          });
        expect((await cli('stop')).code).toBe(0);
        await badge.filter({ hasText: /^ready$/ }).waitFor({ timeout: 15_000 });
        // The user's app plays its queue again: busy once more (a playback event elsewhere does not hide it).
        await mpc(lab.port, 'play 0');
        await badge.filter({ hasText: /^busy$/ }).waitFor({ timeout: 15_000 });
      } finally {
        await browser.close();
      }
    },
    90_000,
  );
});

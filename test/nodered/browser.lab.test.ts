/// <reference lib="dom" />
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser } from 'playwright-core';
import { OPERATIONS } from '../../src/operations/table';
import { DRIVER_NAMES } from '../../src/drivers/registry';
import { launchChromium } from '../helpers/chromium';
import { startHub, TEST_TOKEN, type TestHub } from '../helpers/hub';
import { ADMIN, ensureRuntimes, ROOT, startNodeRed, type NodeRed } from './runtime';

/**
 * The Node-RED editor in headless Chromium (Debian's chromium, driven by playwright-core):
 * the palette has the SpeakerHub nodes, an operation node's edit dialog lists the hub's
 * speakers, no console errors; and it takes the docs' screenshot (docs/node-red.md) of an example flow.
 */

let hub: TestHub;
let nr: NodeRed;
let browser: Browser;

beforeAll(async () => {
  ensureRuntimes();
  hub = await startHub({ speakers: { virtual: { count: 3, names: ['Kitchen', 'Living room', 'Office'] } } });
  nr = await startNodeRed(4);
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await nr?.stop();
  await hub?.close();
}, 60_000);

test('the editor shows the SpeakerHub palette, fills the speaker dropdown from the hub, without console errors; screenshot of the example flow', async () => {
  const example = JSON.parse(readFileSync(join(ROOT, 'examples', 'Door sensor announcement.json'), 'utf8')) as Record<string, any>[];
  for (const n of example) if (n.type === 'speakerhub-config') Object.assign(n, { url: hub.base, credentials: { token: TEST_TOKEN } });
  const flows = [
    ...example,
    { id: 'test_tab', type: 'tab', label: 'Editor test' },
    { id: 'dev_info', type: 'speakerhub-device_info', z: 'test_tab', hub: 'sh_cfg', name: '', DeviceID: '', x: 200, y: 100, wires: [[]] },
  ];
  await nr.deploy(flows);

  const page = await browser.newPage({ viewport: { width: 1280, height: 520 } });
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${nr.base}/admin/`);
  // Node-RED asks for a login (adminAuth): the suites' admin user.
  await page.waitForSelector('#node-dialog-login-username', { timeout: 30_000 });
  await page.fill('#node-dialog-login-username', ADMIN.username);
  await page.fill('#node-dialog-login-password', ADMIN.password);
  await page.click('#node-dialog-login-submit');
  await page.waitForSelector('.red-ui-palette-node[data-palette-type="speakerhub-device_info"]', { timeout: 30_000 });
  // Before the login the editor's first request is refused (401) by design: count from here.
  expect(errors.filter((e) => !/401 \(Unauthorized\)/.test(e))).toEqual([]);
  errors.length = 0;

  // Every operation has its node in the palette, plus events and announce.
  const types = await page.$$eval('.red-ui-palette-node[data-palette-type^="speakerhub-"]', (els) =>
    els.map((e) => e.getAttribute('data-palette-type')),
  );
  expect(types.sort()).toEqual([...new Set(['speakerhub-announce', 'speakerhub-events', ...OPERATIONS.map((o) => `speakerhub-${o.name}`)])].sort());
  expect(
    await page.$eval('.red-ui-palette-node[data-palette-type="speakerhub-play_tts_party_mode"]', (e) => e.textContent?.replace(/\s+/g, ' ').trim()),
  ).toBe('play tts party mode');

  // Open the device_info node's edit dialog: its DeviceID dropdown lists the hub's speakers.
  await page.evaluate(() => {
    const RED = (window as any).RED;
    RED.workspaces.show('test_tab');
    RED.editor.edit(RED.nodes.node('dev_info'));
  });
  await page.waitForFunction(() => document.querySelectorAll('#node-input-DeviceID option').length >= 4, null, { timeout: 15_000 });
  const options = await page.$$eval('#node-input-DeviceID option', (els) =>
    els.map((e) => ({ value: (e as HTMLOptionElement).value, text: e.textContent })),
  );
  const devices = (await hub.op('device_list')).DeviceList as { DeviceID: string; DeviceName: string }[];
  expect(options.slice(1).map((o) => o.value)).toEqual(devices.map((d) => d.DeviceID));
  expect(options.map((o) => o.text).join('|')).toContain('Kitchen');
  // Choosing a speaker and saving stores its DeviceID on the node.
  await page.selectOption('#node-input-DeviceID', devices[1].DeviceID);
  await page.click('#node-dialog-ok');
  expect(await page.evaluate(() => (window as any).RED.nodes.node('dev_info').DeviceID)).toBe(devices[1].DeviceID);

  // The announce node's speaker list (a multiple choice) comes from the hub as well.
  await page.evaluate(() => {
    const RED = (window as any).RED;
    RED.workspaces.show('door_tab');
    RED.editor.edit(RED.nodes.node('door_announce'));
  });
  const ids = devices.map((d) => d.DeviceID);
  await page.waitForFunction(
    (want) =>
      JSON.stringify(Array.from(document.querySelectorAll('#node-input-targets option')).map((o) => (o as HTMLOptionElement).value)) ===
      JSON.stringify(want),
    ids,
    { timeout: 15_000 },
  );
  expect(await page.$$eval('#node-input-targets option', (els) => els.map((e) => (e as HTMLOptionElement).value))).toEqual(
    devices.map((d) => d.DeviceID),
  );
  await page.click('#node-dialog-cancel');
  await page.waitForSelector('#node-dialog-cancel', { state: 'detached', timeout: 10_000 });
  // The config node's dialog: the embedded fields show only in embedded mode.
  await page.evaluate(() => (window as any).RED.editor.editConfig('', 'speakerhub-config', 'sh_cfg'));
  await page.waitForSelector('#node-config-input-mode', { timeout: 10_000 });
  expect(await page.isVisible('#node-config-input-url')).toBe(true);
  expect(await page.isVisible('#speakerhub-drivers')).toBe(false);
  await page.selectOption('#node-config-input-mode', 'embedded');
  expect(await page.isVisible('#speakerhub-drivers')).toBe(true);
  expect(await page.isVisible('#node-config-input-url')).toBe(false);
  await page.click('#node-config-dialog-cancel');
  await page.waitForSelector('#node-config-dialog-cancel', { state: 'detached', timeout: 10_000 });

  // The docs' screenshot (docs/node-red.md): the door sensor example flow.
  await page.waitForSelector('#node-dialog-ok', { state: 'detached', timeout: 10_000 });
  await page.evaluate(() => {
    const RED = (window as any).RED;
    RED.workspaces.show('door_tab');
    RED.menu.setSelected('menu-item-sidebar', false);
    // The SpeakerHub category at the top of the palette.
    const header = Array.from(document.querySelectorAll('.red-ui-palette-header')).find((h) => h.textContent?.trim() === 'SpeakerHub');
    header?.closest('.red-ui-palette-category')?.scrollIntoView();
  });
  await page.waitForSelector('#red-ui-sidebar', { state: 'hidden', timeout: 5_000 }).catch(() => undefined);
  await page.waitForTimeout(300); // the sidebar's slide animation: only the picture waits for it
  await mkdir(join(ROOT, 'docs', 'images'), { recursive: true });
  await page.screenshot({ path: join(ROOT, 'docs', 'images', 'nodered-example.png') });

  // After the picture (these edits make the flow unsaved): the config node's dialog in embedded
  // mode. Its dropdowns show their longest option whole; the operation node's speaker dropdown too.
  await page.evaluate(() => (window as any).RED.editor.editConfig('', 'speakerhub-config', 'sh_cfg'));
  await page.waitForSelector('#node-config-input-mode', { timeout: 10_000 });
  await page.selectOption('#node-config-input-mode', 'embedded');
  const cutOff = (selector: string) =>
    page.$$eval(selector, (els) =>
      els.flatMap((el) => {
        const s = el as HTMLSelectElement;
        const cs = getComputedStyle(s);
        const ctx = document.createElement('canvas').getContext('2d')!;
        ctx.font = `${cs.fontStyle} ${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
        // The text box: the width inside the padding, less the arrow (about 20 px in Chromium).
        const room = s.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 20;
        return Array.from(s.options)
          .filter((o) => ctx.measureText(o.text).width > room)
          .map((o) => `${s.id}: "${o.text}" needs ${Math.ceil(ctx.measureText(o.text).width)} px, has ${room}`);
      }),
    );
  expect(await cutOff('.speakerhub-config-form select')).toEqual([]);
  // The drivers are a choice list from the registry (not a text field); ticking writes the drivers property.
  const offered = await page.$$eval('#speakerhub-drivers input[type=checkbox]', (els) => els.map((e) => (e as HTMLInputElement).value));
  expect(offered).toEqual([...DRIVER_NAMES]);
  expect(await page.isChecked('#speakerhub-drivers input[value=virtual]')).toBe(true);
  await page.check('#speakerhub-drivers input[value=snapcast]');
  await page.fill('#node-config-input-name', '');
  await page.click('#node-config-dialog-ok');
  await page.waitForSelector('#node-config-dialog-ok', { state: 'detached', timeout: 10_000 });
  const saved = await page.evaluate(() => {
    const RED = (window as any).RED;
    const n = RED.nodes.node('sh_cfg');
    return { drivers: n.drivers, mode: n.mode, label: RED.utils.getNodeLabel(n) };
  });
  // Without a name, the label says which hub it is (the "Hub" dropdowns and the config sidebar show it).
  expect(saved).toEqual({ drivers: 'virtual,snapcast', mode: 'embedded', label: 'embedded hub (virtual, snapcast)' });
  await page.evaluate(() => {
    const RED = (window as any).RED;
    Object.assign(RED.nodes.node('sh_cfg'), { mode: 'remote', name: '' });
  });
  expect(await page.evaluate(() => (window as any).RED.utils.getNodeLabel((window as any).RED.nodes.node('sh_cfg')))).toBe(
    `hub at ${new URL(hub.base).host}`,
  );
  await page.evaluate(() => {
    const RED = (window as any).RED;
    RED.workspaces.show('test_tab');
    RED.editor.edit(RED.nodes.node('dev_info'));
  });
  await page.waitForFunction(() => document.querySelectorAll('#node-input-DeviceID option').length >= 4, null, { timeout: 15_000 });
  expect(await cutOff('#node-input-DeviceID')).toEqual([]);
  await page.click('#node-dialog-cancel');
  await page.close();

  // The only console errors allowed: none.
  expect(errors).toEqual([]);
}, 90_000);

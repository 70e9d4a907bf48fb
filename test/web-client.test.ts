/**
 * The browser page's read model is the hub's: /client/read-model.js is the compiled
 * src/hub-client/read-model-state.ts, served without a token, and it runs with nothing but a
 * `window` (no require, no node: module). Fed the same wire events as HubReadModel (which MQTT
 * and Homebridge use), it reads the same. The page itself on that model: test/cloud/browser.lab.test.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { runInNewContext } from 'node:vm';
import { startHub, type TestHub } from './helpers/hub';
import { HubReadModel } from '../src/hub-client/read-model';
import type { DeviceRecord } from '../src/core/events';
import type { WireEvent } from '../src/extensions/wire-events';

let hub: TestHub;
beforeAll(async () => {
  hub = await startHub({ speakers: { virtual: { count: 2, names: ['Kitchen', 'Office'] } } });
});
afterAll(() => hub?.close());

/** The served script, run as a browser runs a plain <script>: only `window` is there. */
async function loadServed(): Promise<{ ReadModelState: new (onChange?: (c: { kind: string }) => void) => any; STOPPED: unknown }> {
  const res = await fetch(`${hub.base}/client/read-model.js`); // no token: the page loads it before signing in
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/javascript/);
  const window: Record<string, any> = {};
  runInNewContext(await res.text(), { window });
  return window.SpeakerHubReadModel;
}

test('the served read model runs in a bare script context and reads what HubReadModel reads from the same events', async () => {
  const { ReadModelState } = await loadServed();
  const changes: string[] = [];
  const page = new ReadModelState((c) => changes.push(c.kind));
  const node = new HubReadModel();
  const { DeviceList } = (await hub.op('device_list')) as { DeviceList: DeviceRecord[] };
  const [kitchen, office] = DeviceList;
  const events: WireEvent[] = [
    { type: 'playbackState', data: { state: 'PlayerStatePlaying', timeElapsed: 0, deviceIds: [kitchen.DeviceID], title: 'Waltz', kind: 'hub' } },
    { type: 'volume', data: { deviceId: office.DeviceID, volume: 7 } },
    { type: 'mute', data: { deviceId: office.DeviceID, muted: true } },
    {
      type: 'announcement',
      data: { announcementId: 'a1', phase: 'started', state: 'playing', deviceIds: [office.DeviceID], priority: 5 },
    },
    { type: 'playbackTime', data: { timeElapsed: 3, deviceIds: [kitchen.DeviceID] } },
  ];
  for (const m of [page, node]) {
    m.replaceDevices(DeviceList);
    for (const e of events) m.apply(e);
  }
  const view = (m: typeof node) => ({
    devices: m.all(),
    playback: m.playback,
    muted: m.muted(office.DeviceID),
    announcing: m.announcing(office.DeviceID),
    kitchenPlays: m.isPlaying(kitchen.DeviceID),
    party: m.partyOn(),
  });
  // Compared as JSON: the page's objects come from another realm.
  expect(JSON.parse(JSON.stringify(view(page)))).toEqual(JSON.parse(JSON.stringify(view(node))));
  expect(view(node)).toMatchObject({ muted: true, announcing: 'a1', kitchenPlays: true, party: false, playback: { timeElapsed: 3 } });
  expect(node.device(office.DeviceID)?.Volume).toBe(7);
  expect(changes).toEqual(expect.arrayContaining(['synced', 'device', 'playback', 'time']));

  // The announcement ends: the speaker no longer reads as announcing, on both.
  const ended: WireEvent = {
    type: 'announcement',
    data: { announcementId: 'a1', phase: 'ended', state: 'done', deviceIds: [office.DeviceID], priority: 5 },
  };
  page.apply(ended);
  node.apply(ended);
  expect(page.announcing(office.DeviceID)).toBeUndefined();
  expect(node.announcing(office.DeviceID)).toBeUndefined();
});

const CLIENT_DIR = join(__dirname, '..', 'web', 'client');
/** web/client's files, relative to it, at any depth. */
const clientFiles = (dir = CLIENT_DIR): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? clientFiles(join(dir, e.name)) : [relative(CLIENT_DIR, join(dir, e.name)).split(sep).join('/')],
  );

test('every file of the browser page is under 500 lines (small files named for what they hold, as in src/)', () => {
  const long = clientFiles()
    .map((f) => ({ f, lines: readFileSync(join(CLIENT_DIR, f), 'utf8').split('\n').length }))
    .filter(({ lines }) => lines > 500);
  expect(long).toEqual([]);
});

test('every script of web/client is on the page and served without a token, in the order index.html names', async () => {
  const html = await (await fetch(`${hub.base}/`)).text();
  const scripts = [...html.matchAll(/<script src="([^"]+)" defer><\/script>/g)].map((m) => m[1]);
  // The page's own files, plus the read model the server builds from src/hub-client.
  expect(scripts.filter((s) => s !== '/client/read-model.js').sort()).toEqual(
    clientFiles()
      .filter((f) => f.endsWith('.js'))
      .map((f) => `/client/${f}`)
      .sort(),
  );
  // page.js makes window.SpeakerHubPage before the parts that fill it; app.js runs main() once they all have.
  expect(scripts[scripts.indexOf('/client/read-model.js') + 1]).toBe('/client/page.js');
  expect(scripts.at(-1)).toBe('/client/app.js');
  for (const src of scripts) {
    const res = await fetch(`${hub.base}${src}`);
    expect({ src, status: res.status, type: res.headers.get('content-type') }).toEqual({ src, status: 200, type: 'text/javascript; charset=utf-8' });
    expect(res.headers.get('content-security-policy')).toMatch(/^default-src 'self';/);
  }
});

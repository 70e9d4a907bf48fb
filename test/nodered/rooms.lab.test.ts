import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { startHub, type TestHub, TEST_TOKEN } from '../helpers/hub';
import { longMediaFolder } from '../homebridge/rest';
import { HubRest, until } from './hub-rest';
import { ensureRuntimes, nodeRedDir, ROOT } from './runtime';

/**
 * Issue 27: Node-RED's pause_play and stop_play nodes configured with a DeviceID act on that
 * speaker's zone and leave the other rooms playing. Node-RED 4's runtime (the one
 * scripts/install-nodered.sh installs) in this process through node-red-node-test-helper,
 * with Node-RED's own inject node in front of the speakerhub nodes, against a real hub on
 * loopback (remote mode). Two REST clients start a zone each, as two rooms' apps would.
 */

ensureRuntimes();

const helper = require('node-red-node-test-helper');
helper.init(join(nodeRedDir(4), 'lib', 'red.js'));

const injectNode = require(join(dirname(nodeRedDir(4)), '@node-red', 'nodes', 'core', 'common', '20-inject.js'));
const configNode = require(join(ROOT, 'nodes', 'speakerhub-config.js'));
const operationNodes = require(join(ROOT, 'nodes', 'speakerhub-operations.js'));

interface Zone {
  PlaybackID: string;
  PlaybackState: string;
  DeviceIDList: string[];
}

let hub: TestHub;
let media: string;
let devices: string[];
let pid: string;
let watcher: HubRest;

beforeAll(async () => {
  // A five-minute track, so that no zone ends by itself while a test looks at it.
  media = await longMediaFolder();
  hub = await startHub({ speakers: { virtual: { count: 3 } }, media: { samples: false, folders: [media] } });
  watcher = new HubRest(hub.base, TEST_TOKEN);
  devices = (await watcher.op('device_list')).DeviceList.map((d: any) => d.DeviceID);
  pid = (await watcher.op('media_list')).MediaList[0].PersistentID;
});
afterAll(async () => {
  await hub?.close();
  if (media) await rm(media, { recursive: true, force: true });
});

beforeEach((done) => {
  helper.startServer(done);
});
afterEach(async () => {
  await helper.unload();
  await new Promise((r) => helper.stopServer(r));
  // A session that never played stops every zone: each test starts from a quiet hub.
  await watcher.op('stop_play');
  await until(
    'no zones left',
    () => zones(),
    (l) => l.length === 0,
  );
});

const zones = async (): Promise<Zone[]> => (await watcher.op('playback_list')).PlaybackList;
const isPlaying = async (): Promise<boolean[]> => {
  const list: { DeviceID: string; IsPlaying: boolean }[] = (await watcher.op('device_list')).DeviceList;
  return devices.map((id) => list.find((d) => d.DeviceID === id)!.IsPlaying);
};

/** Zone A on speaker 1 and zone B on speakers 2 and 3, each from its own REST session. */
async function twoZones(): Promise<{ a: Zone; b: Zone }> {
  const [clientA, clientB] = [new HubRest(hub.base, TEST_TOKEN), new HubRest(hub.base, TEST_TOKEN)];
  expect((await clientA.op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: devices[0] })).Result).toBe('true');
  expect((await clientB.op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: `${devices[1]},${devices[2]}` })).Result).toBe(
    'true',
  );
  const list = await until(
    'two zones playing',
    () => zones(),
    (l) => l.length === 2 && l.every((z) => z.PlaybackState === 'PlayerStatePlaying'),
  );
  const a = list.find((z) => z.DeviceIDList.includes(devices[0]))!;
  const b = list.find((z) => z.DeviceIDList.includes(devices[1]))!;
  expect(a.DeviceIDList).toEqual([devices[0]]);
  expect([...b.DeviceIDList].sort()).toEqual([devices[1], devices[2]].sort());
  return { a, b };
}

/**
 * Loads inject → speakerhub-<type> (configured with DeviceID) → helper, and returns a trigger
 * that presses the inject button and resolves with the operation node's output (or rejects
 * with the error it reported).
 */
async function injectFlow(type: string, deviceId: string): Promise<() => Promise<any>> {
  const flow = [
    { id: 'cfg', type: 'speakerhub-config', mode: 'remote', url: hub.base },
    { id: 'inj', type: 'inject', props: [{ p: 'payload' }], payload: '', payloadType: 'date', repeat: '', once: false, wires: [['op']] },
    { id: 'op', type, hub: 'cfg', DeviceID: deviceId, wires: [['out']] },
    { id: 'out', type: 'helper' },
  ];
  await helper.load([injectNode, configNode, operationNodes], flow, { cfg: { token: TEST_TOKEN } });
  const [inj, op, out] = [helper.getNode('inj'), helper.getNode('op'), helper.getNode('out')];
  // One listener each (Node-RED keeps its own handler list; once() would leave stale ones).
  let waiter: { resolve(m: unknown): void; reject(e: unknown): void } | undefined;
  out.on('input', (m: unknown) => waiter?.resolve(m));
  op.on('call:error', (c: any) => waiter?.reject(c.args[0]));
  return () =>
    new Promise((resolve, reject) => {
      waiter = { resolve, reject };
      // What the editor's inject button does (POST /inject/:id): an input to the inject node.
      inj.receive({});
    });
}

test('a stop_play node with DeviceID stops only that speaker’s zone; the other zone plays on', async () => {
  const press = await injectFlow('speakerhub-stop_play', devices[0]);
  const { a, b } = await twoZones();
  expect((await press()).payload).toEqual({ Result: 'true' });
  const left = await until(
    'zone A gone',
    () => zones(),
    (l) => !l.some((z) => z.PlaybackID === a.PlaybackID),
  );
  // Zone B is the same playback, still on both its speakers (not restarted, not shrunk).
  expect(left).toHaveLength(1);
  expect(left[0]).toMatchObject({ PlaybackID: b.PlaybackID, PlaybackState: 'PlayerStatePlaying' });
  expect([...left[0].DeviceIDList].sort()).toEqual([devices[1], devices[2]].sort());
  expect(await isPlaying()).toEqual([false, true, true]);
});

test('a stop_play node naming a speaker of the shared zone stops that zone; the lone room plays on', async () => {
  const press = await injectFlow('speakerhub-stop_play', devices[2]);
  const { a, b } = await twoZones();
  expect((await press()).payload).toEqual({ Result: 'true' });
  const left = await until(
    'zone B gone',
    () => zones(),
    (l) => !l.some((z) => z.PlaybackID === b.PlaybackID),
  );
  expect(left).toEqual([expect.objectContaining({ PlaybackID: a.PlaybackID, PlaybackState: 'PlayerStatePlaying', DeviceIDList: [devices[0]] })]);
  expect(await isPlaying()).toEqual([true, false, false]);
});

test('a pause_play node with DeviceID pauses only that speaker’s zone; the other zone plays on', async () => {
  // Zone A, the one started first: without its DeviceID the node's session (which never
  // played) would mean the hub's latest zone, B, so a node that dropped DeviceID fails here.
  const press = await injectFlow('speakerhub-pause_play', devices[0]);
  const { a, b } = await twoZones();
  expect((await press()).payload).toEqual({ Result: 'true' });
  const list = await until(
    'zone A paused',
    () => zones(),
    (l) => l.find((z) => z.PlaybackID === a.PlaybackID)?.PlaybackState === 'PlayerStatePaused',
  );
  expect(list).toHaveLength(2);
  expect(list.find((z) => z.PlaybackID === a.PlaybackID)!.DeviceIDList).toEqual([devices[0]]);
  const zoneB = list.find((z) => z.PlaybackID === b.PlaybackID)!;
  expect(zoneB.PlaybackState).toBe('PlayerStatePlaying');
  expect([...zoneB.DeviceIDList].sort()).toEqual([devices[1], devices[2]].sort());
  expect(await isPlaying()).toEqual([false, true, true]);
});

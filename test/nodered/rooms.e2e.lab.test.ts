import { rm } from 'node:fs/promises';
import { longMediaFolder } from '../homebridge/rest';
import { embeddedConfig, TAB } from './flows';
import { HubRest, until } from './hub-rest';
import { ensureRuntimes, freePort, startNodeRed, type NodeRed } from './runtime';

/**
 * Issue 27 end to end: a Node-RED 4 process with the package installed through the palette
 * manager, a flow deployed through the admin API whose config node embeds the hub, and
 * inject nodes (pressed as the editor's button does, POST /admin/inject/:id) in front of a
 * stop_play and a pause_play node each configured with a DeviceID. Two REST clients start a
 * zone each; the pressed node acts on its speaker's zone and the other zone plays on.
 * (rooms.test.ts covers the same nodes in-process against a remote hub, in milliseconds.)
 */

const TOKEN = 'nodered-rooms-token-0123456789';

jest.setTimeout(60_000);

interface Zone {
  PlaybackID: string;
  PlaybackState: string;
  DeviceIDList: string[];
}

let nr: NodeRed;
let media: string;
let watcher: HubRest;
let restBase: string;

beforeAll(async () => {
  ensureRuntimes();
  // A five-minute track, so that no zone ends by itself while the test looks at it.
  media = await longMediaFolder();
  nr = await startNodeRed(4);
  restBase = `http://127.0.0.1:${await freePort()}`;
  watcher = new HubRest(restBase, TOKEN);
}, 180_000);

afterAll(async () => {
  await nr?.stop();
  if (media) await rm(media, { recursive: true, force: true });
}, 60_000);

const zones = async (): Promise<Zone[]> => (await watcher.op('playback_list')).PlaybackList;

test('inject → stop_play (DeviceID) stops only that zone, inject → pause_play (DeviceID) pauses only that zone; the other zone plays on', async () => {
  const cfg = embeddedConfig('cfg1', Number(new URL(restBase).port), TOKEN, { samples: false, mediaFolders: media });
  // The hub starts with the config node: deploy it alone first to learn its speakers' IDs.
  await nr.deploy([TAB, cfg]);
  const devices: string[] = (
    await until(
      'the embedded hub listing three speakers',
      () => watcher.op('device_list'),
      (r) => r.DeviceList?.length === 3,
      30_000,
    )
  ).DeviceList.map((d: { DeviceID: string }) => d.DeviceID);
  const pid = (await watcher.op('media_list')).MediaList[0].PersistentID as string;

  const node = (id: string, type: string, deviceId: string) => [
    {
      id: `inj-${id}`,
      type: 'inject',
      z: TAB.id,
      props: [{ p: 'payload' }],
      payload: '',
      payloadType: 'date',
      repeat: '',
      once: false,
      wires: [[id]],
    },
    { id, type, z: TAB.id, hub: 'cfg1', DeviceID: deviceId, wires: [[]] },
  ];
  // stop on a speaker of the shared zone B, pause on zone A's: A is started first, so a node
  // that ignored its DeviceID (meaning the session's or the hub's latest zone) would miss it.
  await nr.deploy([TAB, cfg, ...node('stop', 'speakerhub-stop_play', devices[2]), ...node('pause', 'speakerhub-pause_play', devices[0])]);
  const flows = await nr.request('/admin/flows');
  expect((flows.body as { type: string }[]).filter((n) => /^speakerhub-(stop|pause)_play$/.test(n.type))).toHaveLength(2);
  // A full deploy may restart the embedded hub (sessions and all): a new client waits until
  // it answers again, with the same speakers.
  watcher = new HubRest(restBase, TOKEN);
  await until(
    'the hub after the deploy',
    () => watcher.op('device_list'),
    (r) => r.DeviceList?.length === 3,
    30_000,
  );
  expect((await watcher.op('device_list')).DeviceList.map((d: { DeviceID: string }) => d.DeviceID)).toEqual(devices);

  const [clientA, clientB] = [new HubRest(restBase, TOKEN), new HubRest(restBase, TOKEN)];
  const playA = () => clientA.op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: devices[0] });
  const playB = () => clientB.op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: `${devices[1]},${devices[2]}` });
  const isPlaying = async () => {
    const list: { DeviceID: string; IsPlaying: boolean }[] = (await watcher.op('device_list')).DeviceList;
    return devices.map((id) => list.find((d) => d.DeviceID === id)!.IsPlaying);
  };
  const press = async (id: string) => expect((await nr.request(`/admin/inject/inj-${id}`, { method: 'POST' })).status).toBe(200);

  expect((await playA()).Result).toBe('true');
  expect((await playB()).Result).toBe('true');
  let list = await until(
    'two zones playing',
    () => zones(),
    (l) => l.length === 2 && l.every((z) => z.PlaybackState === 'PlayerStatePlaying'),
  );
  const a = list.find((z) => z.DeviceIDList.includes(devices[0]))!;
  const b = list.find((z) => z.DeviceIDList.includes(devices[1]))!;
  expect([...b.DeviceIDList].sort()).toEqual([devices[1], devices[2]].sort());

  // The stop node: zone B (its speaker's) ends; zone A is the same playback, still playing.
  await press('stop');
  list = await until(
    'zone B stopped',
    () => zones(),
    (l) => !l.some((z) => z.PlaybackID === b.PlaybackID),
  );
  expect(list).toEqual([expect.objectContaining({ PlaybackID: a.PlaybackID, PlaybackState: 'PlayerStatePlaying', DeviceIDList: [devices[0]] })]);
  expect(await isPlaying()).toEqual([true, false, false]);

  // Zone B again; the pause node: zone A pauses, the new zone B plays on both its speakers.
  expect((await playB()).Result).toBe('true');
  const b2 = (await until(
    'zone B playing again',
    () => zones(),
    (l) => l.some((z) => z.DeviceIDList.includes(devices[1]) && z.PlaybackState === 'PlayerStatePlaying'),
  ))!.find((z) => z.DeviceIDList.includes(devices[1]))!;
  await press('pause');
  list = await until(
    'zone A paused',
    () => zones(),
    (l) => l.find((z) => z.PlaybackID === a.PlaybackID)?.PlaybackState === 'PlayerStatePaused',
  );
  expect(list).toHaveLength(2);
  const zoneB = list.find((z) => z.PlaybackID === b2.PlaybackID)!;
  expect(zoneB.PlaybackState).toBe('PlayerStatePlaying');
  expect([...zoneB.DeviceIDList].sort()).toEqual([devices[1], devices[2]].sort());
  expect(await isPlaying()).toEqual([false, true, true]);
  // Neither node reported an error (a refused DeviceID would be logged by Node-RED).
  expect(
    nr
      .output()
      .split('\n')
      .filter((l) => /\[error\]/.test(l)),
  ).toEqual([]);
});

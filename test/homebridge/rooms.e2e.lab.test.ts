import {
  Controller,
  HAP,
  installHomebridgeDeps,
  freePort,
  removePluginDir,
  until,
  VERSIONS,
  type ControllerAccessory,
  type HomebridgeRun,
  accessoryNamed,
  embeddedPlatform,
  startEmbedded,
  tearDown,
} from './helpers';
import { longMediaFolder, Rest } from './rest';

// Issue 27: HomeKit's per-speaker On acts on that speaker's own zone and leaves every other
// room alone. A real Homebridge (1.x on Node 20, 2.x on Node 24) with the hub embedded; two
// REST clients (two sessions) start a zone each, and a paired HomeKit controller turns
// speakers off and on. Outcomes are read both over REST (playback_list, device_list) and
// through the controller (On of every speaker), so a plugin that reads stale state fails too.

const TOKEN = 'hb-rooms-token-0123456789abcdef';
const NAMES = ['Study', 'Den', 'Hall'];

jest.setTimeout(45_000);
beforeAll(() => installHomebridgeDeps(), 10 * 60_000);
afterAll(() => removePluginDir());

interface Zone {
  PlaybackID: string;
  PlaybackState: string;
  TimeElapsed: number;
  DeviceIDList: string[];
}

describe.each(VERSIONS)('zones through HomeKit in $label', ({ major }) => {
  let run: HomebridgeRun;
  let ctrl: Controller;
  let media: string;
  let watcher: Rest;
  let accessories: ControllerAccessory[];
  const byName = (n: string) => accessoryNamed(accessories, n);

  beforeAll(async () => {
    media = await longMediaFolder();
    const restPort = await freePort();
    ({ run, ctrl, accessories } = await startEmbedded(major, embeddedPlatform({ names: NAMES, media, restPort, token: TOKEN }), 1 + NAMES.length));
    // The watcher only reads (playback_list and device_list are the hub's, not a session's).
    watcher = new Rest(`http://127.0.0.1:${restPort}`, TOKEN);
  });

  afterAll(() => tearDown({ ctrl, run, media }));

  const zones = async (): Promise<Zone[]> => (await watcher.op('playback_list')).PlaybackList;
  const zone = async (id: string): Promise<Zone | undefined> => (await zones()).find((z) => z.PlaybackID === id);
  const playing = async (): Promise<Record<string, boolean>> => Object.fromEntries((await watcher.devices()).map((d) => [d.DeviceName, d.IsPlaying]));
  /** What the controller reads for each speaker's On, by name. */
  const onReads = async (): Promise<Record<string, boolean>> => {
    const out: Record<string, boolean> = {};
    for (const n of NAMES) out[n] = await ctrl.isOn(byName(n).aid, byName(n).iid[HAP.On]);
    return out;
  };
  const same = (a: Record<string, boolean>, b: Record<string, boolean>) => JSON.stringify(a) === JSON.stringify(b);
  const setOn = (name: string, on: boolean) => ctrl.write(byName(name).aid, byName(name).iid[HAP.On], on);

  test('Off pauses a speaker alone in its zone, takes a sharing one out of its zone; On resumes; the other zone plays on', async () => {
    const [study, den, hall] = [await watcher.idOf('Study'), await watcher.idOf('Den'), await watcher.idOf('Hall')];
    const pid = (await watcher.op('media_list')).MediaList[0].PersistentID;
    // Two clients, two sessions, two zones: A on Study, B on Den and Hall.
    const clientA = new Rest(watcher.base, TOKEN);
    const clientB = new Rest(watcher.base, TOKEN);
    expect((await clientA.op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: study })).Result).toBe('true');
    expect((await clientB.op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: `${den},${hall}` })).Result).toBe('true');
    let list: Zone[] = [];
    await until(async () => (list = await zones()).length === 2 && list.every((z) => z.PlaybackState === 'PlayerStatePlaying'), 'two zones playing');
    const a = list.find((z) => z.DeviceIDList.includes(study))!;
    const b = list.find((z) => z.DeviceIDList.includes(den))!;
    expect(a.DeviceIDList).toEqual([study]);
    expect([...b.DeviceIDList].sort()).toEqual([den, hall].sort());
    // Homebridge follows the hub's events: every speaker reads On before anything is turned off.
    await until(async () => same(await onReads(), { Study: true, Den: true, Hall: true }), 'every speaker reading On');
    // A second of play, so that a resume from the start (not from the pause) shows.
    await until(async () => ((await zone(a.PlaybackID))?.TimeElapsed ?? 0) >= 1, "a second of zone A's playback");

    // Study off: alone in zone A, so zone A pauses; zone B is not touched.
    await setOn('Study', false);
    let pausedA: Zone | undefined;
    await until(async () => (pausedA = await zone(a.PlaybackID))?.PlaybackState === 'PlayerStatePaused', 'zone A paused');
    expect(await zone(b.PlaybackID)).toMatchObject({ PlaybackState: 'PlayerStatePlaying', DeviceIDList: expect.arrayContaining([den, hall]) });
    expect((await zone(b.PlaybackID))!.DeviceIDList).toHaveLength(2);
    expect(await playing()).toEqual({ Study: false, Den: true, Hall: true });
    await until(async () => same(await onReads(), { Study: false, Den: true, Hall: true }), 'the controller reading Study off, Den and Hall on');

    // Den off: it shares zone B, so it leaves it; Hall plays on in zone B; zone A stays paused.
    await setOn('Den', false);
    await until(async () => (await zone(b.PlaybackID))?.DeviceIDList.join() === hall, 'Den out of zone B');
    expect(await zone(b.PlaybackID)).toMatchObject({ PlaybackState: 'PlayerStatePlaying', DeviceIDList: [hall] });
    expect(await zone(a.PlaybackID)).toMatchObject({ PlaybackState: 'PlayerStatePaused', DeviceIDList: [study] });
    expect(await playing()).toEqual({ Study: false, Den: false, Hall: true });
    await until(async () => same(await onReads(), { Study: false, Den: false, Hall: true }), 'the controller reading only Hall on');

    // Study on: zone A resumes where it paused (same zone, on Study only); zone B is untouched
    // and Den, which left, stays out of everything.
    await setOn('Study', true);
    let resumedA: Zone | undefined;
    await until(
      async () => (resumedA = (await zones()).find((z) => z.DeviceIDList.includes(study)))?.PlaybackState === 'PlayerStatePlaying',
      'Study playing again',
    );
    expect(resumedA).toMatchObject({ PlaybackID: a.PlaybackID, DeviceIDList: [study] });
    expect(resumedA!.TimeElapsed).toBeGreaterThanOrEqual(pausedA!.TimeElapsed);
    expect(await zone(b.PlaybackID)).toMatchObject({ PlaybackState: 'PlayerStatePlaying', DeviceIDList: [hall] });
    expect((await zones()).length).toBe(2);
    expect(await playing()).toEqual({ Study: true, Den: false, Hall: true });
    await until(async () => same(await onReads(), { Study: true, Den: false, Hall: true }), 'the controller reading Study and Hall on, Den off');

    // Hall off: now alone in zone B, so zone B pauses; zone A plays on.
    await setOn('Hall', false);
    await until(async () => (await zone(b.PlaybackID))?.PlaybackState === 'PlayerStatePaused', 'zone B paused');
    expect(await zone(a.PlaybackID)).toMatchObject({ PlaybackState: 'PlayerStatePlaying', DeviceIDList: [study] });
    expect(await playing()).toEqual({ Study: true, Den: false, Hall: false });
    await until(async () => same(await onReads(), { Study: true, Den: false, Hall: false }), 'the controller reading only Study on');

    // Stopping everything: a session that never selected nor played stops every zone.
    expect((await watcher.op('stop_play')).Result).toBe('true');
    await until(async () => (await zones()).length === 0, 'no zones left');
  });
});

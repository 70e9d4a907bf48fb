import type { EsphomeExtension } from '../../src/esphome/extension';
import { startHub, virtualOf, type TestHub } from '../helpers/hub';
import { mediaServer } from './media-server';
import { eventually } from '../helpers/wait';

/**
 * The hub's ESPHome native API (plaintext) against @2colors/esphome-native-api, the client
 * behind node-red-contrib-esphome (written by others, from ESPHome's api.proto). The virtual
 * speakers really fetch what they play, so a play is proven by the speaker's download.
 */
const { Client } = require('@2colors/esphome-native-api');
const { pb } = require('@2colors/esphome-native-api/lib/utils/messages');

const IDLE = 1;
const PLAYING = 2;
const ANNOUNCING = 4;

interface Entity {
  type: string;
  id: number;
  config: {
    key: number;
    objectId: string;
    name: string;
    deviceId: number;
    supportsPause: boolean;
    supportedFormatsList: { format: string; purpose: number }[];
  };
  state?: { state: number; volume: number; muted: boolean };
  on(ev: 'state', fn: (s: { state: number; volume: number; muted: boolean }) => void): void;
  setVolume(v: number): void;
  setMediaUrl(url: string): void;
  setCommand(c: number): void;
}

describe('ESPHome native API, plaintext (@2colors/esphome-native-api)', () => {
  let t: TestHub;
  let web: Awaited<ReturnType<typeof mediaServer>>;
  let client: any;
  let port: number;
  const ext = () => t.hub.extension('esphome') as EsphomeExtension;
  /** Every state each entity key has reported, in order. */
  const seen = new Map<number, number[]>();

  beforeAll(async () => {
    web = await mediaServer();
    t = await startHub({
      speakers: { virtual: { count: 2, names: ['Kitchen', 'Living Room'] } },
      esphome: { enabled: true, port: 0, host: '127.0.0.1', areas: { Kitchen: 'Kitchen', 'Living Room': 'Lounge' } },
    });
    port = ext().status!.port;
    client = new Client({ host: '127.0.0.1', port, reconnect: false, clientInfo: 'jest' });
    client.on('error', (e: Error) => process.env.DEBUG_ESPHOME && console.log('client error', e));
    client.on('newEntity', (e: Entity) => e.on('state', (s) => seen.set(e.id, [...(seen.get(e.id) ?? []), s.state])));
    const initialized = new Promise<void>((r) => client.once('initialized', r));
    client.connect();
    await initialized;
  });

  afterAll(async () => {
    if (process.env.DEBUG_ESPHOME) console.log(t.logs.filter((l) => /esphome|ESPHome/.test(l)).join(''));
    client?.disconnect();
    await t?.close();
    await web?.close();
  });

  const entities = (): Entity[] => Object.values(client.entities);
  const deviceName = (e: Entity) =>
    (client.deviceInfo.devicesList as { deviceId: number; name: string }[]).find((d) => d.deviceId === e.config.deviceId)?.name;
  const player = (name: string) => {
    const e = entities().find((x) => deviceName(x) === name);
    if (!e) throw new Error(`no media_player for ${name}`);
    return e;
  };
  const ids = async () => {
    const list = (await t.op('device_list')).DeviceList as { DeviceID: string; DeviceName: string }[];
    return Object.fromEntries(list.map((x) => [x.DeviceName, x.DeviceID]));
  };
  const speakerIndex = async (name: string) =>
    virtualOf(t.hub)
      .speakers()
      .findIndex((s) => s.info().name === name);

  test('one device per speaker (sub-devices) and one media_player each, plus All speakers on the hub', async () => {
    const info = client.deviceInfo;
    expect(info.macAddress).toMatch(/^[0-9A-F]{2}(:[0-9A-F]{2}){5}$/);
    expect(info.name).toMatch(/^speakerhub-[0-9a-f]{6}$/);
    expect((info.devicesList as { name: string }[]).map((d) => d.name).sort()).toEqual(['Kitchen', 'Living Room']);
    // The area hints (esphome.areas): Home Assistant suggests them as the devices' areas.
    const areas = Object.fromEntries((info.areasList as { areaId: number; name: string }[]).map((a) => [a.areaId, a.name]));
    const areaOf = Object.fromEntries((info.devicesList as { name: string; areaId: number }[]).map((d) => [d.name, areas[d.areaId]]));
    expect(areaOf).toEqual({ Kitchen: 'Kitchen', 'Living Room': 'Lounge' });
    const players = entities().filter((e) => e.type === 'MediaPlayer');
    expect(players).toHaveLength(3);
    expect(players.find((e) => e.config.deviceId === 0)?.config.name).toBe('All speakers');
    const kitchen = player('Kitchen');
    expect(kitchen.config.supportsPause).toBe(true);
    expect(kitchen.config.supportedFormatsList.map((f) => f.format)).toContain('mp3');
    await eventually(() => kitchen.state?.state === IDLE, 5000, 'the initial IDLE state');
  });

  test('the identity: the MAC the banner shows, one key per media_player (derived, see units.test.ts)', async () => {
    const before = ext()
      .entities()
      .map((e) => [e.key, e.deviceId]);
    expect(new Set(before.map((b) => b[0])).size).toBe(3);
    expect(client.deviceInfo.macAddress).toBe(ext().status!.mac);
  });

  test('play a URL: the speaker fetches it and the state is PLAYING; volume; a REST stop shows IDLE', async () => {
    const kitchen = player('Kitchen');
    const i = await speakerIndex('Kitchen');
    kitchen.setMediaUrl(web.url('/music-1.wav'));
    await eventually(
      () =>
        virtualOf(t.hub)
          .speaker(i)
          .fetches.some((f) => f.url.endsWith('/music-1.wav')),
      10_000,
      'the Kitchen speaker fetching the URL',
    );
    await eventually(() => kitchen.state?.state === PLAYING, 10_000, 'PLAYING');
    expect(virtualOf(t.hub).speaker(i).state).toBe('playing');

    kitchen.setVolume(0.6);
    await eventually(
      async () => Number((await t.op('get_volume_device', { DeviceID: (await ids()).Kitchen })).Volume) === 30,
      5000,
      'volume 30 of 50',
    );
    await eventually(() => Math.abs((kitchen.state?.volume ?? 0) - 0.6) < 0.001, 5000, 'the volume state 0.6');

    await t.op('stop_play', { DeviceID: (await ids()).Kitchen });
    await eventually(() => kitchen.state?.state === IDLE, 5000, 'IDLE after a REST stop');
  });

  test('mute and unmute follow to the hub and back', async () => {
    const kitchen = player('Kitchen');
    kitchen.setCommand(pb.MediaPlayerCommand.MEDIA_PLAYER_COMMAND_MUTE);
    await eventually(() => kitchen.state?.muted === true, 5000, 'muted');
    expect(String((await t.op('get_mute_device', { DeviceID: (await ids()).Kitchen })).Mute)).toBe('true');
    kitchen.setCommand(pb.MediaPlayerCommand.MEDIA_PLAYER_COMMAND_UNMUTE);
    await eventually(() => kitchen.state?.muted === false, 5000, 'unmuted');
  });

  test('an announcement over music: ANNOUNCING, then the music is back', async () => {
    const living = player('Living Room');
    const i = await speakerIndex('Living Room');
    living.setMediaUrl(web.url('/music-2.wav'));
    await eventually(() => living.state?.state === PLAYING, 10_000, 'the music PLAYING');
    seen.set(living.id, []);
    const msg = new pb.MediaPlayerCommandRequest();
    msg.setKey(living.id);
    msg.setHasMediaUrl(true);
    msg.setMediaUrl(web.url('/chime-1.wav'));
    msg.setHasAnnouncement(true);
    msg.setAnnouncement(true);
    client.connection.sendCommandMessage(msg);
    await eventually(() => (seen.get(living.id) ?? []).includes(ANNOUNCING), 10_000, 'ANNOUNCING');
    // The hub fetched the announcement (to mix it under or play it on the speaker).
    await eventually(() => web.requests.some((r) => r.startsWith('/chime-1.wav')), 5000, 'the announcement fetched');
    await eventually(
      () => living.state?.state === PLAYING && (seen.get(living.id) ?? []).lastIndexOf(PLAYING) > (seen.get(living.id) ?? []).indexOf(ANNOUNCING),
      20_000,
      'PLAYING after the announcement',
    );
    // The speaker itself plays the music again (the restore may still be fetching it).
    await eventually(() => virtualOf(t.hub).speaker(i).state === 'playing', 10_000, 'the speaker playing the music again');
    await t.op('stop_play', { DeviceID: (await ids())['Living Room'] });
  });

  test('pause and resume of the hub’s own media; All speakers plays in party mode', async () => {
    const all = entities().find((e) => e.config.deviceId === 0)!;
    const media = (await t.op('media_list')).MediaList as { PersistentID: string }[];
    expect(String((await t.op('play_hub_media_party_mode', { PersistentID: media[0].PersistentID })).Result)).toBe('true');
    await eventually(() => all.state?.state === PLAYING, 10_000, 'All speakers PLAYING');
    all.setCommand(pb.MediaPlayerCommand.MEDIA_PLAYER_COMMAND_PAUSE);
    await eventually(() => all.state?.state === 3, 5000, 'All speakers PAUSED').catch((e) => {
      if (process.env.DEBUG_ESPHOME) console.log(JSON.stringify([...seen]));
      throw e;
    });
    expect(player('Kitchen').state?.state).toBe(3);
    all.setCommand(pb.MediaPlayerCommand.MEDIA_PLAYER_COMMAND_PLAY);
    await eventually(() => all.state?.state === PLAYING, 5000, 'All speakers PLAYING again');
    all.setCommand(pb.MediaPlayerCommand.MEDIA_PLAYER_COMMAND_STOP);
    await eventually(() => all.state?.state === IDLE && player('Kitchen').state?.state === IDLE, 5000, 'all IDLE');
  });
  test('a renamed speaker: the hub asks clients to reconnect (as a device after an update), and they list the new name', async () => {
    const c = new Client({ host: '127.0.0.1', port, reconnect: true, reconnectInterval: 200, clientInfo: 'jest-relist' });
    c.on('error', () => undefined);
    try {
      const first = new Promise<void>((r) => c.once('initialized', r));
      c.connect();
      await first;
      const i = await speakerIndex('Kitchen');
      virtualOf(t.hub).speaker(i).update({ name: 'Pantry' });
      // After the reconnect the device info comes first and the entities list after it: wait
      // for both (the list read at the moment the name shows may still be filling).
      await eventually(
        () =>
          ((c.deviceInfo?.devicesList ?? []) as { name: string }[]).some((d) => d.name === 'Pantry') &&
          Object.values((c.entities ?? {}) as Record<string, unknown>).length >= 3,
        15_000,
        'the new name listed with the entities',
      );
      expect(Object.values(c.entities as Record<string, unknown>)).toHaveLength(3);
    } finally {
      c.connection.reconnect = false;
      c.disconnect();
    }
  });
});

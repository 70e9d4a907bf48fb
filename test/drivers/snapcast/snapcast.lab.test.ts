import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { snapcastDeviceId } from '../../../src/drivers/snapcast';
import {
  allClients,
  fileSize,
  groupOf,
  HUB_STREAM,
  IDLE_STREAM,
  loudness,
  OTHER_STREAM,
  SAMPLE_FORMAT,
  SnapcastEnv,
  snapcastInstalled,
} from './harness';
import { labSuite } from '../../helpers/labs';
import { startSnapcastHub, toneWav, type SnapcastHub } from './hub';
import { eventually } from '../../helpers/wait';

/** Loudest 50 ms RMS that counts as "audio is there" (the test tones are ~8500) and as silence. */
const AUDIBLE = 2000;
const SILENT = 50;

const describeIf = labSuite('the Snapcast lab', snapcastInstalled() ? undefined : 'snapserver, snapclient or ffmpeg is not installed');

describeIf('Snapcast driver against real snapserver and snapclients', () => {
  let env: SnapcastEnv;
  let t: SnapcastHub;
  let web: Server;
  let webUrl: string;
  const ids: string[] = [];
  const clientIds = [1, 2, 3].map((n) => `speakerhub-test-client-${n}`);
  const pids: Record<string, string> = {};

  const file = (n: number) => env.clients[n - 1].file;
  const sizes = () => [1, 2, 3].map((n) => fileSize(file(n)));
  const device = async (n: number) => (await t.op('device_info', { DeviceID: ids[n - 1] })) as any;
  /** Waits until each listed client's output has audio after `from`, then checks the others stayed silent. */
  async function expectAudio(heard: number[], from: number[], timeoutMs = 8000, level = AUDIBLE): Promise<void> {
    await eventually(() => heard.every((n) => loudness(file(n), from[n - 1]) > level), timeoutMs, `audio in clients ${heard.join(', ')}`);
    for (const n of [1, 2, 3].filter((x) => !heard.includes(x))) {
      expect({ client: n, loudness: loudness(file(n), from[n - 1]) }).toEqual({ client: n, loudness: expect.any(Number) });
      expect(loudness(file(n), from[n - 1])).toBeLessThan(SILENT);
    }
  }
  /** Bytes a client writes in `ms` (its file player writes silence when nothing plays). */
  const bytesIn = (ms: number) => Math.floor((SAMPLE_FORMAT.rate * ms) / 1000) * SAMPLE_FORMAT.bytesPerFrame;
  /**
   * Silence that cannot be vacuous: each client has written at least `ms` of output since the
   * call (so it is alive and writing), and all of it is silent.
   */
  async function expectSilence(ns: number[], ms = 800): Promise<void> {
    const from = sizes();
    await eventually(
      () => ns.every((n) => fileSize(file(n)) - from[n - 1] >= bytesIn(ms)),
      ms + 5000,
      `${ms} ms of output from clients ${ns.join(', ')}`,
    );
    for (const n of ns) expect(loudness(file(n), from[n - 1])).toBeLessThan(SILENT);
  }
  /** Waits until the clients' latest 200 ms are silent (what was buffered has played out). */
  async function untilSilent(ns: number[], timeoutMs = 5000): Promise<void> {
    await eventually(
      async () => {
        const from = sizes();
        await eventually(() => ns.every((n) => fileSize(file(n)) - from[n - 1] >= bytesIn(200)), 3000, 'output');
        return ns.every((n) => loudness(file(n), from[n - 1]) < SILENT);
      },
      timeoutMs,
      `silence in clients ${ns.join(', ')}`,
    );
  }
  async function state(): Promise<{ PlaybackState: string; TimeElapsed: string }> {
    return t.op('playback_status');
  }

  beforeAll(async () => {
    env = await SnapcastEnv.create();
    await env.startServer();
    for (const n of [1, 2, 3]) await env.startClient(n);
    await env.clientsConnected(clientIds);
    // Names as a snapcast app would set them; client 3 keeps none and shows its client id.
    await env.rpc('Client.SetName', { id: clientIds[0], name: 'Kitchen' });
    await env.rpc('Client.SetName', { id: clientIds[1], name: 'Living Room' });
    web = createServer((_req, res) => {
      const wav = toneWav(20, 660, 'Web Tone');
      res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': wav.length }).end(wav);
    });
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
    webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}/radio.wav`;
    t = await startSnapcastHub(env.address, {
      'long.wav': toneWav(30, 440, 'Long Tone'),
      'short.wav': toneWav(2, 550, 'Short Tone'),
    });
    for (const id of clientIds) ids.push(snapcastDeviceId(env.address, id));
    for (const m of (await t.op('media_list')).MediaList) pids[m.Title] = m.PersistentID;
  }, 60_000);

  afterAll(async () => {
    if (process.env.SNAPCAST_TEST_LOGS) require('node:fs').writeFileSync(process.env.SNAPCAST_TEST_LOGS, t?.logs.join('') ?? '');
    await t?.close();
    if (web) await new Promise((r) => web.close(r));
    await env?.close();
  }, 30_000);

  afterEach(async () => {
    await t.op('stop_play');
    // A client writes a few more blocks of the old stream while it switches: let it settle
    // so the next test's "from" offsets see only what that test plays.
    await eventually(
      async () => {
        const from = sizes();
        await new Promise((r) => setTimeout(r, 200));
        return [1, 2, 3].every((n) => loudness(file(n), from[n - 1]) < SILENT);
      },
      5000,
      'silence after stop',
    );
  });

  test('discovers the three snapclients with their names', async () => {
    const list = (await t.op('device_list')).DeviceList;
    expect(list).toHaveLength(3);
    const byId = new Map(list.map((d: any) => [d.DeviceID, d]));
    expect(byId.get(ids[0])).toMatchObject({ DeviceName: 'Kitchen', Active: true, IsPlaying: false, IPAddress: '127.0.0.1', Role: 21 });
    expect(byId.get(ids[1])).toMatchObject({ DeviceName: 'Living Room', Active: true });
    expect(byId.get(ids[2])).toMatchObject({ DeviceName: clientIds[2], Active: true });
    expect(ids.every((id) => /^[1-9]\d{13}$/.test(id))).toBe(true);
    // A rename in a snapcast app reaches the hub by notification.
    await env.rpc('Client.SetName', { id: clientIds[2], name: 'Office' });
    await eventually(async () => (await device(3)).DeviceName === 'Office', 3000, 'the new name');
  });

  test('clients on one host get distinct names: their snapcast name, else their id (--hostID), never the shared host name', async () => {
    // All three run on this host, so snapserver reports the same host name for each.
    const hosts = new Set(allClients(await env.status()).map((c: any) => c.host.name));
    expect([...hosts]).toEqual([hostname()]);
    const before = await Promise.all([1, 2, 3].map(async (n) => (await device(n)).DeviceName as string));
    for (const id of clientIds) await env.rpc('Client.SetName', { id, name: '' });
    await eventually(
      async () => (await Promise.all([1, 2, 3].map(async (n) => (await device(n)).DeviceName === clientIds[n - 1]))).every(Boolean),
      3000,
      'names to fall back to the ids',
    );
    const names = (await t.op('device_list')).DeviceList.map((d: any) => d.DeviceName).sort();
    expect(names).toEqual(clientIds);
    for (const [i, id] of clientIds.entries()) await env.rpc('Client.SetName', { id, name: before[i] === id ? '' : before[i] });
    await eventually(async () => (await device(1)).DeviceName === before[0], 3000, 'the names back');
  });

  test('volume and mute round-trip between the hub and snapserver', async () => {
    expect((await t.op('set_volume_device', { DeviceID: ids[0], Volume: '23' })).Result).toBe('true');
    let c = (await env.rpc('Client.GetStatus', { id: clientIds[0] })).client;
    expect(c.config.volume).toEqual({ percent: 46, muted: false });
    expect((await t.op('get_volume_device', { DeviceID: ids[0] })).Volume).toBe('23');

    // 0 is mute; the percent stays so an unmute elsewhere restores the level.
    await t.op('set_volume_device', { DeviceID: ids[0], Volume: '0' });
    c = (await env.rpc('Client.GetStatus', { id: clientIds[0] })).client;
    expect(c.config.volume).toEqual({ percent: 46, muted: true });
    expect((await t.op('get_volume_device', { DeviceID: ids[0] })).Volume).toBe('0');

    await t.op('set_volume_device', { DeviceID: ids[0], Volume: '50' });
    c = (await env.rpc('Client.GetStatus', { id: clientIds[0] })).client;
    expect(c.config.volume).toEqual({ percent: 100, muted: false });

    // Another controller's change arrives as Client.OnVolumeChanged.
    await env.rpc('Client.SetVolume', { id: clientIds[1], volume: { percent: 61, muted: false } });
    await eventually(async () => (await t.op('get_volume_device', { DeviceID: ids[1] })).Volume === '31', 3000, 'volume 31');
    await env.rpc('Client.SetVolume', { id: clientIds[1], volume: { percent: 100, muted: false } });
    await eventually(async () => (await t.op('get_volume_device', { DeviceID: ids[1] })).Volume === '50', 3000, 'volume 50');
  });

  test('hub media plays on the selected clients only, in one group on the hub stream', async () => {
    const from = sizes();
    const r = await t.op('play_hub_media_selected_speakers', { PersistentID: pids['Long Tone'], DeviceIDList: `${ids[0]},${ids[1]}` });
    expect(r.Result).toBe('true');
    expect((await state()).PlaybackState).toBe('PlayerStatePlaying');
    await expectAudio([1, 2], from);
    const status = await env.status();
    const g1 = groupOf(status, clientIds[0]);
    expect(g1.stream_id).toBe(HUB_STREAM);
    expect(g1.clients.map((c: any) => c.id).sort()).toEqual([clientIds[0], clientIds[1]]);
    expect(groupOf(status, clientIds[2]).stream_id).not.toBe(HUB_STREAM);
    expect((await device(1)).IsPlaying).toBe(true);
    expect((await device(3)).IsPlaying).toBe(false);
  });

  test('pause, resume and stop: the feed stops and resumes where it was, TimeElapsed follows', async () => {
    let from = sizes();
    await t.op('play_hub_media_selected_speakers', { PersistentID: pids['Long Tone'], DeviceIDList: ids[0] });
    await expectAudio([1], from);
    await new Promise((r) => setTimeout(r, 1200));
    expect((await t.op('pause_play')).Result).toBe('true');
    const paused = await state();
    expect(paused.PlaybackState).toBe('PlayerStatePaused');
    const speaker = t.driver.speakers().find((s) => s.id === ids[0])!;
    const at = speaker.position()!;
    expect(at).toBeGreaterThan(1.5);
    expect(speaker.state).toBe('paused');
    // What was fed before the pause still plays out of snapserver's buffer (1 s), then silence.
    await untilSilent([1]);
    await expectSilence([1], 800);
    expect(await state()).toEqual(paused);
    expect(speaker.position()).toBe(at);

    from = sizes();
    expect((await t.op('resume_hub_media_selected_speakers', { PersistentID: pids['Long Tone'], DeviceIDList: ids[0] })).Result).toBe('true');
    expect((await state()).PlaybackState).toBe('PlayerStatePlaying');
    await expectAudio([1], from);
    await new Promise((r) => setTimeout(r, 1000));
    const resumed = await state();
    expect(Number(resumed.TimeElapsed)).toBeGreaterThanOrEqual(Number(paused.TimeElapsed) + 1);
    // The feed went on from the paused position (ffmpeg -ss), not from the start.
    expect(speaker.position()!).toBeGreaterThan(at + 0.5);

    expect((await t.op('stop_play')).Result).toBe('true');
    expect(await state()).toEqual({ PlaybackState: 'PlayerStateStopped', TimeElapsed: '-1' });
    // Stop releases the group at once: no group is left on the hub stream.
    expect((await env.status()).groups.filter((g: any) => g.stream_id === HUB_STREAM)).toEqual([]);
    await untilSilent([1, 2, 3]);
    await expectSilence([1, 2, 3], 800);
  });

  test('the end of the media stops the playback with reason ended, after the snapserver buffer played out', async () => {
    const reasons: (string | undefined)[] = [];
    const onState = (s: { state: string; reason?: string }) => reasons.push(s.state === 'PlayerStateStopped' ? s.reason : undefined);
    t.hub.core.events.on('playbackState', onState);
    try {
      const from = sizes();
      const started = Date.now();
      await t.op('play_hub_media_selected_speakers', { PersistentID: pids['Short Tone'], DeviceIDList: ids[1] });
      await expectAudio([2], from);
      await eventually(async () => (await state()).PlaybackState === 'PlayerStateStopped', 8000, 'the end of the media');
      expect(Date.now() - started).toBeGreaterThan(2000 + 900);
      expect(reasons).toContain('ended');
      expect((await env.status()).groups.filter((g: any) => g.stream_id === HUB_STREAM)).toEqual([]);
    } finally {
      t.hub.core.events.off('playbackState', onState);
    }
  });

  test('web media from a web server plays on every client in party mode', async () => {
    const from = sizes();
    expect((await t.op('play_web_media_party_mode', { MediaUrl: webUrl })).Result).toBe('true');
    await expectAudio([1, 2, 3], from);
    const hubGroups = (await env.status()).groups.filter((g: any) => g.stream_id === HUB_STREAM);
    expect(hubGroups).toHaveLength(1);
    expect(hubGroups[0].clients).toHaveLength(3);
  });

  test('TTS plays on the selected client only', async () => {
    const from = sizes();
    expect((await t.op('play_tts_selected_speakers', { Text: 'Dinner is ready. Please come to the kitchen.', DeviceIDList: ids[2] })).Result).toBe(
      'true',
    );
    await expectAudio([3], from, 8000, 500);
  });

  test('an unreachable web URL fails the play and leaves the groups alone', async () => {
    const before = await env.status();
    const r = await t.op('play_web_media_selected_speakers', {
      MediaUrl: webUrl.replace('/radio.wav', '/missing.wav').replace(/:\d+\//, ':1/'),
      DeviceIDList: ids[0],
    });
    expect(r.ErrorCode).toBe('PlaybackFailed');
    expect(JSON.stringify(r)).not.toContain('/media/');
    // An open port (the hub's own REST server answers 401) reads the same as a closed one: no port oracle.
    const open = await t.op('play_web_media_selected_speakers', { MediaUrl: `${t.base}/nothing.wav`, DeviceIDList: ids[0] });
    expect(open.ErrorCode).toBe('PlaybackFailed');
    expect(open.ErrorMessage).toBe(r.ErrorMessage);
    expect(r.ErrorMessage).not.toMatch(/refused|\b40[14]\b|HTTP/i);
    const after = await env.status();
    expect(groupOf(after, clientIds[0]).stream_id).toBe(groupOf(before, clientIds[0]).stream_id);
  });

  test('a speaker added to the session joins the running stream without restarting it; removing it releases only it', async () => {
    let from = sizes();
    await t.op('add_device_to_session', { DeviceID: ids[0] });
    await t.op('play_hub_media', { PersistentID: pids['Long Tone'] });
    await expectAudio([1], from);
    const first = t.driver.speakers().find((s) => s.id === ids[0])!;
    const feedsBefore = t.logs.filter((l) => l.includes('starting the decode')).length;
    from = sizes();
    expect((await t.op('add_device_to_session', { DeviceID: ids[1] })).Result).toBe('true');
    await expectAudio([1, 2], from);
    // One decode still: client 2 joined the stream client 1 hears (sample-synchronous).
    expect(t.logs.filter((l) => l.includes('starting the decode')).length).toBe(feedsBefore);
    expect(t.logs.some((l) => l.includes('joined the running feed'))).toBe(true);
    const g = groupOf(await env.status(), clientIds[0]);
    expect(g.clients.map((c: any) => c.id).sort()).toEqual([clientIds[0], clientIds[1]]);
    expect(first.position()!).toBeGreaterThan(1);

    expect((await t.op('remove_device_from_session', { DeviceID: ids[0] })).Result).toBe('true');
    const status = await env.status();
    expect(groupOf(status, clientIds[0]).stream_id).not.toBe(HUB_STREAM);
    expect(groupOf(status, clientIds[1]).stream_id).toBe(HUB_STREAM);
    await untilSilent([1]);
    from = sizes();
    await eventually(
      () => loudness(file(2), from[1]) > AUDIBLE && fileSize(file(1)) - from[0] >= bytesIn(800),
      5000,
      'client 2 audible while client 1 writes',
    );
    expect(loudness(file(1), from[0])).toBeLessThan(SILENT);
    expect((await state()).PlaybackState).toBe('PlayerStatePlaying');
    await t.op('remove_device_from_session', { DeviceID: ids[1] });
    expect((await state()).PlaybackState).toBe('PlayerStateStopped');
  });

  test("the user's own groups are not split, and released clients go back to the stream they had", async () => {
    // Clients 2 and 3 listen together to the user's own stream.
    const g2 = groupOf(await env.status(), clientIds[1]);
    await env.rpc('Group.SetClients', { id: g2.id, clients: [clientIds[1], clientIds[2]] });
    await env.rpc('Group.SetStream', { id: groupOf(await env.status(), clientIds[1]).id, stream_id: OTHER_STREAM });
    await eventually(async () => (await device(2)).GroupID === (await device(3)).GroupID, 3000, 'the hub to see the new group');

    const from = sizes();
    await t.op('play_hub_media_selected_speakers', { PersistentID: pids['Long Tone'], DeviceIDList: ids[1] });
    await expectAudio([2], from);
    let status = await env.status();
    expect(groupOf(status, clientIds[1]).clients.map((c: any) => c.id)).toEqual([clientIds[1]]);
    expect(groupOf(status, clientIds[2]).stream_id).toBe(OTHER_STREAM);

    await t.op('stop_play');
    status = await env.status();
    expect(groupOf(status, clientIds[1]).stream_id).toBe(OTHER_STREAM);
    expect(groupOf(status, clientIds[2]).stream_id).toBe(OTHER_STREAM);
    for (const g of status.groups) await env.rpc('Group.SetStream', { id: g.id, stream_id: IDLE_STREAM });
  });

  test('another controller switching the group to its own stream stops the playback there', async () => {
    const from = sizes();
    await t.op('play_hub_media_selected_speakers', { PersistentID: pids['Long Tone'], DeviceIDList: ids[0] });
    await expectAudio([1], from);
    await env.rpc('Group.SetStream', { id: groupOf(await env.status(), clientIds[0]).id, stream_id: OTHER_STREAM });
    await eventually(async () => (await state()).PlaybackState === 'PlayerStateStopped', 3000, 'the playback to stop');
    expect((await device(1)).IsPlaying).toBe(false);
    // The hub leaves the user's choice alone.
    expect(groupOf(await env.status(), clientIds[0]).stream_id).toBe(OTHER_STREAM);
    await env.rpc('Group.SetStream', { id: groupOf(await env.status(), clientIds[0]).id, stream_id: IDLE_STREAM });
  });

  test('a client that disconnects mid-play becomes inactive; the others keep playing', async () => {
    let from = sizes();
    await t.op('play_hub_media_party_mode', { PersistentID: pids['Long Tone'] });
    await expectAudio([1, 2, 3], from);
    await env.killClient(3);
    await eventually(async () => (await device(3)).Active === false, 5000, 'client 3 inactive');
    expect((await state()).PlaybackState).toBe('PlayerStatePlaying');
    from = sizes();
    await expectAudio([1, 2], from);
    expect((await device(1)).IsPlaying).toBe(true);
    expect((await device(3)).IsPlaying).toBe(false);

    // Back again, it rejoins the party play (playback.partyRejoin, default on) and hears it.
    await env.startClient(3);
    await eventually(async () => (await device(3)).Active === true, 8000, 'client 3 active again');
    await eventually(async () => (await device(3)).IsPlaying === true, 8000, 'client 3 back in the party play');
    expect(groupOf(await env.status(), clientIds[2]).id).toBe(groupOf(await env.status(), clientIds[0]).id);
    from = sizes();
    await expectAudio([1, 2, 3], from);
  });

  test('survives a snapserver restart: clients go inactive, come back, and play again', async () => {
    await t.op('play_hub_media_party_mode', { PersistentID: pids['Long Tone'] });
    await env.stopServer();
    await eventually(async () => (await t.op('device_list')).DeviceList.every((d: any) => !d.Active), 5000, 'all clients inactive');
    await eventually(async () => (await state()).PlaybackState === 'PlayerStateStopped', 3000, 'the playback to stop');
    await env.startServer();
    await env.clientsConnected(clientIds, 15_000);
    await eventually(async () => (await t.op('device_list')).DeviceList.every((d: any) => d.Active), 8000, 'all clients active again');
    const from = sizes();
    expect((await t.op('play_hub_media_selected_speakers', { PersistentID: pids['Long Tone'], DeviceIDList: ids[1] })).Result).toBe('true');
    await expectAudio([2], from);
    expect(allClients(await env.status())).toHaveLength(3);
  });
});

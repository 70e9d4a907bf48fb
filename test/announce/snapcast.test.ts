/**
 * Announcements on real snapserver/snapclients (test/snapcast's harness, loopback only), with
 * a second declared stream for announcements (snapcast.announceStream): the music goes on
 * for the other clients, the announced one moves to the announcement stream and back into
 * the music's group, at its own volume.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { snapcastDeviceId } from '../../src/drivers/snapcast';
import type { SpeakerPlayState } from '../../src/drivers/driver';
import { allClients, freePort, groupOf, HUB_STREAM, OTHER_STREAM, SnapcastEnv, snapcastInstalled, waitFor } from '../snapcast/harness';
import { startSnapcastHub, toneWav, type SnapcastHub } from '../snapcast/hub';
import { labSuite } from '../helpers/labs';

const ANNOUNCE_STREAM = 'Announce';
const suite = labSuite('the Snapcast lab', snapcastInstalled() ? undefined : 'snapserver, snapclient or ffmpeg is not installed');

jest.setTimeout(60_000);

suite('announcements on Snapcast clients', () => {
  let env: SnapcastEnv;
  let t: SnapcastHub;
  const clientIds = [1, 2, 3].map((n) => `speakerhub-test-client-${n}`);
  const ids: string[] = [];

  beforeAll(async () => {
    env = await SnapcastEnv.create('speakerhub-announce-snapcast-');
    // A second hub-fed stream for announcements, declared like the hub's own.
    const conf = join(env.dir, 'snapserver.conf');
    const port = await freePort();
    const text = await readFile(conf, 'utf8');
    await writeFile(conf, text.replace('[http]', `source = tcp://127.0.0.1:${port}?name=${ANNOUNCE_STREAM}&mode=server\n[http]`));
    await env.startServer();
    for (const n of [1, 2, 3]) await env.startClient(n);
    await env.clientsConnected(clientIds);
    t = await startSnapcastHub(env.address, { 'long.wav': toneWav(40, 440, 'Long Tone') }, { announceStream: ANNOUNCE_STREAM });
    for (const id of clientIds) ids.push(snapcastDeviceId(env.address, id));
    await waitFor(async () => (await t.op('device_list')).DeviceList.filter((d: any) => d.Active).length === 3, 10_000, 'three clients');
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await env?.close();
  }, 30_000);

  test('music on 3 clients, announce on 1: the other 2 never stop; it comes back into the music group at its volume', async () => {
    const pid = (await t.op('media_list')).MediaList[0].PersistentID;
    expect(await t.op('set_volume', { Volume: '20' })).toEqual({ Result: 'true' });
    expect(await t.op('play_hub_media_party_mode', { PersistentID: pid })).toEqual({ Result: 'true' });
    const speakers = t.driver.speakers();
    const seen: SpeakerPlayState[][] = [[], []];
    const watchers = [1, 2].map((k, i) => {
      const s = speakers.find((x) => x.id === ids[k])!;
      const fn = (state: SpeakerPlayState) => seen[i].push(state);
      s.on('state', fn);
      return () => s.off('state', fn);
    });
    const a = await t.op('announce', { Text: 'The snapcast announcement', DeviceIDList: ids[0], Volume: '40' });
    expect(a).toMatchObject({ Result: 'true' });
    await waitFor(
      async () => groupOf(await env.status(), clientIds[0])?.stream_id === ANNOUNCE_STREAM,
      15_000,
      'client 1 on the announcement stream',
    );
    expect((await t.op('get_volume_device', { DeviceID: ids[0] })).Volume).toBe('40');
    // The others are still together on the hub stream.
    const during = await env.status();
    expect(groupOf(during, clientIds[1]).stream_id).toBe(HUB_STREAM);
    expect(groupOf(during, clientIds[1]).id).toBe(groupOf(during, clientIds[2]).id);
    await waitFor(
      async () => (await t.op('announcement_status', { AnnouncementID: a.AnnouncementID })).State === 'done',
      30_000,
      'announcement done',
    );
    for (const stop of watchers) stop();
    expect(seen).toEqual([[], []]);
    const after = await env.status();
    expect(groupOf(after, clientIds[0]).stream_id).toBe(HUB_STREAM);
    expect(groupOf(after, clientIds[0]).id).toBe(groupOf(after, clientIds[1]).id);
    expect((await t.op('get_volume_device', { DeviceID: ids[0] })).Volume).toBe('20');
    expect((await t.op('device_list')).DeviceList.filter((d: any) => d.IsPlaying)).toHaveLength(3);
    expect((await t.op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    await t.op('stop_play');
  });

  test('a client grouped with another on some other stream goes back into that group and stream at its exact volume', async () => {
    // As a snapcast app would leave it: clients 1 and 2 together on "Other", client 1 at 37 %.
    const g = groupOf(await env.status(), clientIds[0]);
    await env.rpc('Group.SetClients', { id: g.id, clients: [clientIds[0], clientIds[1]] });
    await env.rpc('Group.SetStream', { id: groupOf(await env.status(), clientIds[0]).id, stream_id: OTHER_STREAM });
    await env.rpc('Client.SetVolume', { id: clientIds[0], volume: { percent: 37, muted: false } });
    await waitFor(async () => (await t.op('get_volume_device', { DeviceID: ids[0] })).Volume === '19', 5000, 'the hub to see the volume');
    const before = groupOf(await env.status(), clientIds[0]);
    const a = await t.op('announce', { Text: 'Back to your group', DeviceIDList: ids[0], Volume: '45' });
    await waitFor(
      async () => groupOf(await env.status(), clientIds[0])?.stream_id === ANNOUNCE_STREAM,
      15_000,
      'client 1 on the announcement stream',
    );
    // Client 2 stays where it was.
    expect(groupOf(await env.status(), clientIds[1]).stream_id).toBe(OTHER_STREAM);
    await waitFor(
      async () => (await t.op('announcement_status', { AnnouncementID: a.AnnouncementID })).State === 'done',
      30_000,
      'announcement done',
    );
    const after = await env.status();
    expect(groupOf(after, clientIds[0]).id).toBe(before.id);
    expect(groupOf(after, clientIds[0]).stream_id).toBe(OTHER_STREAM);
    expect(
      groupOf(after, clientIds[0])
        .clients.map((c: any) => c.id)
        .sort(),
    ).toEqual([clientIds[0], clientIds[1]].sort());
    expect(allClients(after).find((c: any) => c.id === clientIds[0]).config.volume).toEqual({ percent: 37, muted: false });
  });

  test('a muted client is unmuted for an announcement with a Volume, and muted again afterwards at its percent', async () => {
    await env.rpc('Client.SetVolume', { id: clientIds[2], volume: { percent: 30, muted: true } });
    await waitFor(async () => (await t.op('get_volume_device', { DeviceID: ids[2] })).Volume === '0', 5000, 'the hub to see the mute');
    const a = await t.op('announce', { Text: 'Even when muted', DeviceIDList: ids[2], Volume: '45' });
    await waitFor(
      async () => groupOf(await env.status(), clientIds[2])?.stream_id === ANNOUNCE_STREAM,
      15_000,
      'client 3 on the announcement stream',
    );
    expect(allClients(await env.status()).find((c: any) => c.id === clientIds[2]).config.volume).toEqual({ percent: 90, muted: false });
    await waitFor(
      async () => (await t.op('announcement_status', { AnnouncementID: a.AnnouncementID })).State === 'done',
      30_000,
      'announcement done',
    );
    expect(allClients(await env.status()).find((c: any) => c.id === clientIds[2]).config.volume).toEqual({ percent: 30, muted: true });
  });
});

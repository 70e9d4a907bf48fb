/**
 * Announcements on real snapserver/snapclients (test/drivers/snapcast's harness, loopback only), run
 * twice: with a second declared stream for announcements (snapcast.announceStream), where the
 * music goes on for the other clients while the announced one moves to that stream and back;
 * and with the documented minimal snapserver.conf (no such stream), where the announcement
 * plays on the hub stream, the music of the others is held (silent) and comes back in sync.
 * Either way every client ends up where it was, and the captured audio says so.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { snapcastDeviceId } from '../../src/drivers/snapcast';
import type { SpeakerPlayState } from '../../src/drivers/driver';
import {
  allClients,
  fileSize,
  freePort,
  groupOf,
  HUB_STREAM,
  IDLE_STREAM,
  OTHER_STREAM,
  SAMPLE_FORMAT,
  SnapcastEnv,
  snapcastInstalled,
  toneSegments,
  toneSequence,
} from '../drivers/snapcast/harness';
import { startSnapcastHub, toneWav, type SnapcastHub } from '../drivers/snapcast/hub';
import { labSuite } from '../helpers/labs';
import { eventually as waitFor } from '../helpers/wait';

const ANNOUNCE_STREAM = 'Announce';
/** The test media are pure tones, told apart by pitch in what the clients play. */
const MUSIC_HZ = 440;
const CHIME_HZ = 660;
const SPEECH_HZ = 1000;
const NEXT_HZ = 550;
const TONES = [MUSIC_HZ, CHIME_HZ, SPEECH_HZ, NEXT_HZ];
const suite = labSuite('the Snapcast lab', snapcastInstalled() ? undefined : 'snapserver, snapclient or ffmpeg is not installed');

jest.setTimeout(60_000);

const modes = [
  { title: 'with an announcement stream', announceStream: true },
  { title: 'without one (the documented minimal snapserver.conf)', announceStream: false },
];

for (const { title, announceStream } of modes)
  suite(`announcements on Snapcast clients, ${title}`, () => {
    let env: SnapcastEnv;
    let t: SnapcastHub;
    const clientIds = [1, 2, 3].map((n) => `speakerhub-test-client-${n}`);
    const ids: string[] = [];
    const pids: Record<string, string> = {};
    /** Where the announced client plays the announcement. */
    const ANNOUNCED_ON = announceStream ? ANNOUNCE_STREAM : HUB_STREAM;
    const file = (n: number) => env.clients[n - 1].file;
    const sequence = (n: number, from: number) => toneSequence(toneSegments(file(n), from, TONES));
    /** The tones a client played from `from` on, in order, gaps left out (a busy machine may drop a block). */
    const tones = (n: number, from: number) =>
      sequence(n, from).filter((x, i, all) => x !== 'silence' && x !== all.slice(0, i).findLast((y) => y !== 'silence'));
    /** The longest silence (in 50 ms windows) a client played from `from` on. */
    const longestSilence = (n: number, from: number) =>
      Math.max(0, ...toneSegments(file(n), from, TONES).map((x) => (x.tone === 'silence' ? x.windows : 0)));
    /** How long (in 50 ms windows) a client played the announcement (chime and speech). */
    const announced = (n: number, from: number) =>
      toneSegments(file(n), from, TONES).reduce((sum, x) => sum + (x.tone === CHIME_HZ || x.tone === SPEECH_HZ ? x.windows : 0), 0);

    beforeAll(async () => {
      env = await SnapcastEnv.create('speakerhub-announce-snapcast-');
      if (announceStream) {
        // A second hub-fed stream for announcements, declared like the hub's own.
        const conf = join(env.dir, 'snapserver.conf');
        const port = await freePort();
        const text = await readFile(conf, 'utf8');
        await writeFile(conf, text.replace('[http]', `source = tcp://127.0.0.1:${port}?name=${ANNOUNCE_STREAM}&mode=server\n[http]`));
      }
      await env.startServer();
      for (const n of [1, 2, 3]) await env.startClient(n);
      await env.clientsConnected(clientIds);
      t = await startSnapcastHub(
        env.address,
        {
          'long.wav': toneWav(40, MUSIC_HZ, 'Long Tone'),
          'chime.wav': toneWav(1, CHIME_HZ, 'Chime Tone'),
          'speech.wav': toneWav(2, SPEECH_HZ, 'Speech Tone'),
          'long-speech.wav': toneWav(4, SPEECH_HZ, 'Long Speech Tone'),
          'next.wav': toneWav(30, NEXT_HZ, 'Next Tone'),
        },
        // Without: the driver's default id, which this snapserver.conf does not declare.
        announceStream ? { announceStream: ANNOUNCE_STREAM } : {},
      );
      for (const id of clientIds) ids.push(snapcastDeviceId(env.address, id));
      for (const m of (await t.op('media_list')).MediaList) pids[m.Title] = m.PersistentID;
      await waitFor(async () => (await t.op('device_list')).DeviceList.filter((d: any) => d.Active).length === 3, 10_000, 'three clients');
    }, 60_000);
    afterEach(async () => {
      // A failed test must not leave its music playing into the next one.
      await t?.op('stop_play');
    });
    afterAll(async () => {
      if (process.env.SNAPCAST_TEST_LOGS)
        require('node:fs').writeFileSync(`${process.env.SNAPCAST_TEST_LOGS}.${announceStream ? 'stream' : 'held'}`, t?.logs.join('') ?? '');
      await t?.close();
      await env?.close();
    }, 30_000);

    test('the hub says once at start whether announcements have a stream of their own', () => {
      const lines = t.logs.map((l) => JSON.parse(l) as { msg: string; level: number });
      const fallback = lines.filter((l) => l.msg.includes('an announcement plays on the hub stream'));
      const own = lines.filter((l) => l.msg.includes('announcements play on their own stream'));
      expect({ fallback: fallback.length, own: own.length }).toEqual(announceStream ? { fallback: 0, own: 1 } : { fallback: 1, own: 0 });
      if (!announceStream) expect(fallback[0].msg).toContain("snapserver declares no stream 'SpeakerHubAnnounce'");
    });

    test('music on 3 clients, chime and announcement on 1: the others never drop out and play the music afterwards, all in one group', async () => {
      expect(await t.op('set_volume', { Volume: '20' })).toEqual({ Result: 'true' });
      const start = [1, 2, 3].map((n) => fileSize(file(n)));
      expect(await t.op('play_hub_media_party_mode', { PersistentID: pids['Long Tone'] })).toEqual({ Result: 'true' });
      await waitFor(() => [1, 2, 3].every((n) => sequence(n, start[n - 1]).includes(MUSIC_HZ)), 10_000, 'the music on all three clients');
      const speakers = t.driver.speakers();
      const seen: SpeakerPlayState[][] = [[], []];
      const watchers = [1, 2].map((k, i) => {
        const s = speakers.find((x) => x.id === ids[k])!;
        const fn = (state: SpeakerPlayState) => seen[i].push(state);
        s.on('state', fn);
        return () => s.off('state', fn);
      });
      const from = [1, 2, 3].map((n) => fileSize(file(n)));
      const a = await t.op('announce', { PersistentID: pids['Speech Tone'], Chime: pids['Chime Tone'], DeviceIDList: ids[0], Volume: '40' });
      expect(a).toMatchObject({ Result: 'true' });
      await waitFor(async () => groupOf(await env.status(), clientIds[0])?.stream_id === ANNOUNCED_ON, 15_000, 'client 1 on the announcement stream');
      await waitFor(() => sequence(1, from[0]).includes(CHIME_HZ), 15_000, 'the chime on client 1');
      expect((await t.op('get_volume_device', { DeviceID: ids[0] })).Volume).toBe('40');
      const during = await env.status();
      // The others are still together, on the hub stream (the music goes on) or parked off it (held).
      expect(groupOf(during, clientIds[1]).id).toBe(groupOf(during, clientIds[2]).id);
      expect(groupOf(during, clientIds[1]).stream_id === HUB_STREAM).toBe(announceStream);
      await waitFor(
        async () => (await t.op('announcement_status', { AnnouncementID: a.AnnouncementID })).State === 'done',
        30_000,
        'announcement done',
      );
      const status = await t.op('announcement_status', { AnnouncementID: a.AnnouncementID });
      if (announceStream) expect(status.RestoreLimits).toBeUndefined();
      else expect(status.RestoreLimits).toMatch(/no announcement stream.*held.*in sync/);
      // Client 1 heard the chime, then the announcement, then the music again.
      await waitFor(() => tones(1, from[0]).at(-1) === MUSIC_HZ, 10_000, 'the music back on client 1');
      expect(tones(1, from[0])).toEqual([MUSIC_HZ, CHIME_HZ, SPEECH_HZ, MUSIC_HZ].slice(tones(1, from[0])[0] === MUSIC_HZ ? 0 : 1));
      // The others never heard the announcement, and the music went on (announcement stream)
      // or came back after a silence (held) and plays now.
      await waitFor(() => [2, 3].every((n) => sequence(n, from[n - 1]).at(-1) === MUSIC_HZ), 10_000, 'the music on clients 2 and 3');
      const announcement = announced(1, from[0]);
      expect(announcement).toBeGreaterThan(40); // 3 s of chime and speech, in 50 ms windows
      for (const n of [2, 3]) {
        // Only the music, never the announcement.
        expect({ client: n, heard: tones(n, from[n - 1]) }).toEqual({ client: n, heard: [MUSIC_HZ] });
        // Played on through it (a gap, if any, far shorter than the announcement), or held
        // through all of it (silent at least as long as client 1 announced).
        const silence = longestSilence(n, from[n - 1]);
        if (announceStream) expect({ client: n, silence: silence < announcement / 3 }).toEqual({ client: n, silence: true });
        else expect({ client: n, silence: silence >= announcement }).toEqual({ client: n, silence: true });
      }
      for (const stop of watchers) stop();
      // They never dropped out of the playback (no "stopped": the old fallback released them for good).
      expect(seen).toEqual([[], []]);
      const after = await env.status();
      expect(groupOf(after, clientIds[0]).stream_id).toBe(HUB_STREAM);
      expect(
        groupOf(after, clientIds[0])
          .clients.map((c: any) => c.id)
          .sort(),
      ).toEqual(clientIds);
      expect((await t.op('get_volume_device', { DeviceID: ids[0] })).Volume).toBe('20');
      expect((await t.op('device_list')).DeviceList.filter((d: any) => d.IsPlaying)).toHaveLength(3);
      expect((await t.op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
      await t.op('stop_play');
    });

    test('a play during the announcement does not cut it: the announced client hears it out, then everyone plays the new music together', async () => {
      const start = [1, 2, 3].map((n) => fileSize(file(n)));
      expect(await t.op('play_hub_media_party_mode', { PersistentID: pids['Long Tone'] })).toEqual({ Result: 'true' });
      await waitFor(() => [1, 2, 3].every((n) => sequence(n, start[n - 1]).includes(MUSIC_HZ)), 10_000, 'the music on all three clients');
      const from = [1, 2, 3].map((n) => fileSize(file(n)));
      const a = await t.op('announce', { PersistentID: pids['Long Speech Tone'], DeviceIDList: ids[0] });
      await waitFor(() => sequence(1, from[0]).includes(SPEECH_HZ), 15_000, 'the announcement on client 1');
      expect(await t.op('play_hub_media_party_mode', { PersistentID: pids['Next Tone'] })).toEqual({ Result: 'true' });
      await waitFor(
        async () => (await t.op('announcement_status', { AnnouncementID: a.AnnouncementID })).State === 'done',
        30_000,
        'announcement done',
      );
      // Not interrupted: no Reason.
      expect((await t.op('announcement_status', { AnnouncementID: a.AnnouncementID })).Reason).toBeUndefined();
      await waitFor(() => [1, 2, 3].every((n) => sequence(n, from[n - 1]).at(-1) === NEXT_HZ), 10_000, 'the new music on every client');
      // Client 1: the announcement, then the new music (the old one does not come back).
      const t1 = tones(1, from[0]);
      expect(t1.slice(t1.indexOf(SPEECH_HZ))).toEqual([SPEECH_HZ, NEXT_HZ]);
      const announcement = announced(1, from[0]);
      for (const n of [2, 3]) {
        // Never the announcement: the old music (maybe too short to count), then the new.
        const heard = tones(n, from[n - 1]);
        expect({ client: n, heard: heard[0] === MUSIC_HZ ? heard.slice(1) : heard }).toEqual({ client: n, heard: [NEXT_HZ] });
        // Held: nothing until the announcement was over, then the new music.
        if (!announceStream) expect({ client: n, silence: longestSilence(n, from[n - 1]) >= announcement }).toEqual({ client: n, silence: true });
      }
      const after = await env.status();
      expect(groupOf(after, clientIds[0]).stream_id).toBe(HUB_STREAM);
      expect(
        groupOf(after, clientIds[0])
          .clients.map((c: any) => c.id)
          .sort(),
      ).toEqual(clientIds);
      expect((await t.op('device_list')).DeviceList.filter((d: any) => d.IsPlaying)).toHaveLength(3);
    });

    test('stop_play during the announcement: everything stops, and the others go back to the stream they had before the hub took them', async () => {
      // Clients 2 and 3 listen to the user's own stream (say, Spotify) before the party play.
      const g = groupOf(await env.status(), clientIds[1]);
      await env.rpc('Group.SetClients', { id: g.id, clients: [clientIds[1], clientIds[2]] });
      await env.rpc('Group.SetStream', { id: groupOf(await env.status(), clientIds[1]).id, stream_id: OTHER_STREAM });
      const start = [1, 2, 3].map((n) => fileSize(file(n)));
      expect(await t.op('play_hub_media_party_mode', { PersistentID: pids['Long Tone'] })).toEqual({ Result: 'true' });
      await waitFor(() => [1, 2, 3].every((n) => sequence(n, start[n - 1]).includes(MUSIC_HZ)), 10_000, 'the music on all three clients');
      const a = await t.op('announce', { PersistentID: pids['Long Speech Tone'], DeviceIDList: ids[0] });
      await waitFor(async () => groupOf(await env.status(), clientIds[0])?.stream_id === ANNOUNCED_ON, 15_000, 'client 1 on the announcement stream');
      // Held music: parked on the idle stream, not on their own (they are to hear nothing now).
      await waitFor(() => sequence(1, start[0]).includes(SPEECH_HZ), 15_000, 'the announcement on client 1');
      const during = await env.status();
      expect([1, 2].map((k) => groupOf(during, clientIds[k]).stream_id)).toEqual(
        announceStream ? [HUB_STREAM, HUB_STREAM] : [IDLE_STREAM, IDLE_STREAM],
      );
      expect(await t.op('stop_play')).toEqual({ Result: 'true' });
      await waitFor(
        async () => (await t.op('announcement_status', { AnnouncementID: a.AnnouncementID })).State === 'done',
        10_000,
        'announcement ended',
      );
      await waitFor(
        async () => {
          const st = await env.status();
          return [1, 2].every((k) => groupOf(st, clientIds[k]).stream_id === OTHER_STREAM) && groupOf(st, clientIds[0]).stream_id !== HUB_STREAM;
        },
        5000,
        'clients 2 and 3 back on their own stream',
      );
      expect(groupOf(await env.status(), clientIds[0]).stream_id).not.toBe(ANNOUNCED_ON);
      expect((await t.op('device_list')).DeviceList.filter((d: any) => d.IsPlaying)).toHaveLength(0);
    });

    test('pause during the announcement: the music stays paused after it, and resumes on all three together', async () => {
      const start = [1, 2, 3].map((n) => fileSize(file(n)));
      expect(await t.op('play_hub_media_party_mode', { PersistentID: pids['Long Tone'] })).toEqual({ Result: 'true' });
      await waitFor(() => [1, 2, 3].every((n) => sequence(n, start[n - 1]).includes(MUSIC_HZ)), 10_000, 'the music on all three clients');
      const from = [1, 2, 3].map((n) => fileSize(file(n)));
      const a = await t.op('announce', { PersistentID: pids['Long Speech Tone'], DeviceIDList: ids[0] });
      await waitFor(() => sequence(1, from[0]).includes(SPEECH_HZ), 15_000, 'the announcement on client 1');
      expect(await t.op('pause_play')).toEqual({ Result: 'true' });
      await waitFor(
        async () => (await t.op('announcement_status', { AnnouncementID: a.AnnouncementID })).State === 'done',
        30_000,
        'announcement done',
      );
      expect((await t.op('playback_status')).PlaybackState).toBe('PlayerStatePaused');
      // Silence that cannot be vacuous: every client wrote 1.5 s more output, none of it music.
      const paused = [1, 2, 3].map((n) => fileSize(file(n)));
      const second = SAMPLE_FORMAT.rate * SAMPLE_FORMAT.bytesPerFrame;
      await waitFor(() => [1, 2, 3].every((n) => fileSize(file(n)) - paused[n - 1] >= 1.5 * second), 10_000, '1.5 s of output');
      for (const n of [1, 2, 3]) expect({ client: n, heard: tones(n, paused[n - 1] + second) }).toEqual({ client: n, heard: [] });
      const resumeAt = [1, 2, 3].map((n) => fileSize(file(n)));
      expect(await t.op('resume_hub_media_party_mode', { PersistentID: pids['Long Tone'] })).toEqual({ Result: 'true' });
      await waitFor(() => [1, 2, 3].every((n) => tones(n, resumeAt[n - 1]).at(-1) === MUSIC_HZ), 10_000, 'the music again on every client');
      const after = await env.status();
      expect(groupOf(after, clientIds[0]).stream_id).toBe(HUB_STREAM);
      expect(
        groupOf(after, clientIds[0])
          .clients.map((c: any) => c.id)
          .sort(),
      ).toEqual(clientIds);
      expect((await t.op('device_list')).DeviceList.filter((d: any) => d.IsPlaying)).toHaveLength(3);
    });

    test('a client grouped with another on some other stream goes back into that group and stream at its exact volume', async () => {
      // As a snapcast app would leave it: clients 1 and 2 together on "Other", client 1 at 37 %.
      const g = groupOf(await env.status(), clientIds[0]);
      await env.rpc('Group.SetClients', { id: g.id, clients: [clientIds[0], clientIds[1]] });
      await env.rpc('Group.SetStream', { id: groupOf(await env.status(), clientIds[0]).id, stream_id: OTHER_STREAM });
      await env.rpc('Client.SetVolume', { id: clientIds[0], volume: { percent: 37, muted: false } });
      await waitFor(async () => (await t.op('get_volume_device', { DeviceID: ids[0] })).Volume === '19', 5000, 'the hub to see the volume');
      const before = groupOf(await env.status(), clientIds[0]);
      const a = await t.op('announce', { PersistentID: pids['Speech Tone'], DeviceIDList: ids[0], Volume: '45' });
      await waitFor(async () => groupOf(await env.status(), clientIds[0])?.stream_id === ANNOUNCED_ON, 15_000, 'client 1 on the announcement stream');
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
      const a = await t.op('announce', { PersistentID: pids['Speech Tone'], DeviceIDList: ids[2], Volume: '45' });
      await waitFor(async () => groupOf(await env.status(), clientIds[2])?.stream_id === ANNOUNCED_ON, 15_000, 'client 3 on the announcement stream');
      expect(allClients(await env.status()).find((c: any) => c.id === clientIds[2]).config.volume).toEqual({ percent: 90, muted: false });
      await waitFor(
        async () => (await t.op('announcement_status', { AnnouncementID: a.AnnouncementID })).State === 'done',
        30_000,
        'announcement done',
      );
      expect(allClients(await env.status()).find((c: any) => c.id === clientIds[2]).config.volume).toEqual({ percent: 30, muted: true });
    });
  });

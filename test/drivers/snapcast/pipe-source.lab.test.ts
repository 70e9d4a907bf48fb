import { snapcastDeviceId } from '../../../src/drivers/snapcast';
import { fileSize, groupOf, HUB_STREAM, loudness, SnapcastEnv, snapcastInstalled } from './harness';
import { labSuite } from '../../helpers/labs';
import { startSnapcastHub, toneWav, type SnapcastHub } from './hub';
import { eventually } from '../../helpers/wait';

const describeIf = labSuite('the Snapcast lab', snapcastInstalled() ? undefined : 'snapserver, snapclient or ffmpeg is not installed');

describeIf('Snapcast driver feeding a pipe source', () => {
  let env: SnapcastEnv;
  let t: SnapcastHub;

  beforeAll(async () => {
    env = await SnapcastEnv.create('speakerhub-snapcast-pipe-', 'pipe');
    await env.startServer();
    for (const n of [1, 2]) await env.startClient(n);
    await env.clientsConnected(env.clients.map((c) => c.hostId));
    t = await startSnapcastHub(env.address, { 'tone.wav': toneWav(20, 440, 'Tone'), 'short.wav': toneWav(1.5, 550, 'Short') });
  }, 30_000);

  afterAll(async () => {
    await t?.close();
    await env?.close();
  }, 30_000);

  test('the hub writes PCM into the FIFO snapserver reads, heard by the target client only', async () => {
    const [c1, c2] = env.clients;
    const from = [fileSize(c1.file), fileSize(c2.file)];
    const pid = (await t.op('media_list')).MediaList.find((m: any) => m.Title === 'Tone').PersistentID;
    const r = await t.op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: snapcastDeviceId(env.address, c1.hostId) });
    expect(r).toEqual({ Result: 'true' });
    await eventually(() => loudness(c1.file, from[0]) > 2000, 8000, 'audio in client 1');
    expect(loudness(c2.file, from[1])).toBeLessThan(50);
    expect(groupOf(await env.status(), c1.hostId).stream_id).toBe(HUB_STREAM);
    await t.op('stop_play');
    expect(groupOf(await env.status(), c1.hostId).stream_id).not.toBe(HUB_STREAM);
  });

  test('the end of the media is reported through the pipe too', async () => {
    const pid = (await t.op('media_list')).MediaList.find((m: any) => m.Title === 'Short').PersistentID;
    await t.op('play_hub_media_party_mode', { PersistentID: pid });
    expect((await t.op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    await eventually(async () => (await t.op('playback_status')).PlaybackState === 'PlayerStateStopped', 6000, 'the end');
    expect((await env.status()).groups.filter((g: any) => g.stream_id === HUB_STREAM)).toEqual([]);
  });
});

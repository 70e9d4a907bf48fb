/**
 * Announcements on real gmediarender renderers (network namespaces, test/drivers/upnp's lab): the
 * music goes on on the others, the announced one rejoins at the right position at its own
 * level, overlapping announcements restore once, and what another control point put on a
 * renderer (raw SOAP) comes back after. Run under `flock /tmp/speakerhub-lab.lock`.
 */
import { MEDIA, type HubProcess, type Renderer, type UpnpLab } from '../drivers/upnp/lab';
import { upnpLabSuite, useDiscoveredLab } from '../drivers/upnp/lab-suite';
import { eventually, sleep } from '../helpers/wait';
import { LAB_NETWORKS } from '../helpers/lab-networks';

const suite = upnpLabSuite();

jest.setTimeout(90_000);

suite('announcements on real UPnP renderers', () => {
  let lab: UpnpLab;
  let hub: HubProcess;
  let ids: Record<string, string>;
  let r1: Renderer, r2: Renderer, r3: Renderer;
  useDiscoveredLab(LAB_NETWORKS.announceUpnp, (l) => {
    ({ lab, hub, ids } = l);
    [r1, r2, r3] = l.renderers;
  });

  const status = (id: string) => hub.op('announcement_status', { AnnouncementID: id });
  /** Waits for done, checking on each poll that `steady` renderers keep PLAYING all along. */
  async function untilDone(id: string, steady: Renderer[] = []): Promise<void> {
    await eventually(
      async () => {
        for (const r of steady) expect(await r.transportState()).toBe('PLAYING');
        const s = await status(id);
        if (s.State === 'failed') throw new Error(`announcement failed: ${s.Reason}`);
        return s.State === 'done';
      },
      45_000,
      `announcement ${id} done`,
      200,
    );
  }

  test('music on 3 renderers, announce on 1: the others never stop; it rejoins near their position at its own volume', async () => {
    expect(await hub.op('set_volume', { Volume: '20' })).toEqual({ Result: 'true' });
    expect(await hub.op('play_hub_media_party_mode', { PersistentID: ids[MEDIA.long] })).toEqual({ Result: 'true' });
    const music = (await r1.position()).uri;
    await sleep(2000);
    const before = await r1.volume();
    const a = await hub.op('announce', { Text: 'There is someone at the door', DeviceIDList: r1.deviceId, Volume: '40' });
    expect(a).toMatchObject({ Result: 'true' });
    await eventually(async () => (await r1.position()).uri !== music && (await r1.transportState()) === 'PLAYING', 15_000, 'r1 speaking');
    expect(await r1.volume()).toBe(80);
    expect((await hub.op('get_volume_device', { DeviceID: r1.deviceId })).Volume).toBe('40');
    await untilDone(a.AnnouncementID, [r2, r3]);
    // done means restored: r1 plays the music again, in step with the others, at its old level.
    expect(await r1.transportState()).toBe('PLAYING');
    const [p1, p2] = [await r1.position(), await r2.position()];
    expect(p1.uri).toBe(music);
    expect(Math.abs(p1.rel - p2.rel)).toBeLessThanOrEqual(3);
    expect(await r1.volume()).toBe(before);
    expect((await hub.op('get_volume_device', { DeviceID: r1.deviceId })).Volume).toBe('20');
    expect((await hub.op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
  });

  test('two overlapping announcements on one renderer: one after the other, one restore to the original state', async () => {
    expect(await hub.op('play_hub_media_party_mode', { PersistentID: ids[MEDIA.long] })).toEqual({ Result: 'true' });
    const music = (await r3.position()).uri;
    const before = await r3.volume();
    const a = await hub.op('announce', { Text: 'First', DeviceIDList: r3.deviceId, Volume: '35' });
    const b = await hub.op('announce', { Text: 'Second', DeviceIDList: r3.deviceId, Volume: '45' });
    await eventually(async () => (await status(b.AnnouncementID)).State === 'playing', 20_000, 'second playing');
    // Straight from the first to the second: the music did not come back in between.
    expect((await r3.position()).uri).not.toBe(music);
    // The first has finished speaking and waits for the one restore after the second.
    expect((await status(a.AnnouncementID)).State).toBe('waiting_restore');
    await untilDone(b.AnnouncementID, [r1, r2]);
    expect((await status(a.AnnouncementID)).State).toBe('done');
    expect((await r3.position()).uri).toBe(music);
    expect(await r3.volume()).toBe(before);
  });

  test('a URI another control point set by raw SOAP plays again after the announcement, near its position, at its volume', async () => {
    await hub.op('stop_play');
    const song = `${lab.webUrl}/song.mp3`;
    await r2.soap('AVTransport', 'SetAVTransportURI', { CurrentURI: song, CurrentURIMetaData: '' });
    await r2.soap('AVTransport', 'Play', { Speed: '1' });
    await r2.soap('RenderingControl', 'SetVolume', { DesiredVolume: 37 });
    await eventually(async () => (await r2.position()).rel >= 4, 15_000, 'the other app playing 4 s in');
    const at = (await r2.position()).rel;
    const a = await hub.op('announce', { Text: 'Back to your song soon', DeviceIDList: r2.deviceId, Volume: '30' });
    await eventually(async () => (await r2.position()).uri !== song, 15_000, 'r2 speaking');
    expect(await r2.volume()).toBe(60);
    await untilDone(a.AnnouncementID);
    await eventually(async () => (await r2.transportState()) === 'PLAYING' && (await r2.position()).uri === song, 15_000, 'the song again');
    const rel = (
      await eventually(
        async () => {
          const p = await r2.position();
          return p.rel > 0 ? p : undefined;
        },
        10_000,
        'a position',
      )
    ).rel;
    expect(Math.abs(rel - at)).toBeLessThanOrEqual(4);
    expect(await r2.volume()).toBe(37);
    // (stop_play stops such a renderer once the UPnP driver reports its transport state
    // truthfully, branch drivers-harden; the engine side is tested in engine.test.ts.)
    await r2.soap('AVTransport', 'Stop');
  });

  test('a renderer that vanishes mid-announcement is skipped; the other finishes and is restored', async () => {
    expect(await hub.op('play_hub_media_party_mode', { PersistentID: ids[MEDIA.long] })).toEqual({ Result: 'true' });
    const music = (await r1.position()).uri;
    const a = await hub.op('announce', {
      Text: 'This is a somewhat longer announcement so that one renderer can vanish while it speaks',
      DeviceIDList: `${r1.deviceId},${r3.deviceId}`,
    });
    await eventually(async () => (await r3.position()).uri !== music && (await r3.transportState()) === 'PLAYING', 15_000, 'r3 speaking');
    await r3.kill('SIGKILL');
    try {
      await untilDone(a.AnnouncementID, [r2]);
      expect((await r1.position()).uri).toBe(music);
      expect(await r1.transportState()).toBe('PLAYING');
    } finally {
      await r3.start();
      await eventually(async () => (await hub.op('device_info', { DeviceID: r3.deviceId })).Active === true, 30_000, 'r3 back');
    }
  });
});

import { join } from 'node:path';
import { DlnaLab, eventually, field, http, MrcClient, REPO, soap, labUnavailableReason, type LabHub } from './lab';
import { JsonLines } from '../upnp/processes';

/**
 * The published renderers against control points no one here wrote (upnp-mediarenderer-client,
 * GUPnP, the hub's own UPnP driver in hub B), on a private LAN of network namespaces. Hub A
 * drives virtual speakers that really fetch what they play: a play is proven by the web
 * server seeing hub A fetch the URL.
 */

const reason = labUnavailableReason();
const SKIP = !!reason && process.env.SPEAKERHUB_SKIP_LABS === '1';
const d = SKIP ? describe.skip : describe;
jest.setTimeout(120_000);

d('DLNA renderers', () => {
  let lab: DlnaLab;
  let hub: LabHub;
  let notifies: JsonLines<{ evt: string; nt?: string; nts?: string; usn?: string; location?: string }>;
  let hubAddress: string;

  beforeAll(async () => {
    if (reason) throw new Error(`the DLNA lab cannot run: ${reason} (SPEAKERHUB_SKIP_LABS=1 skips it)`);
    lab = await DlnaLab.start();
    // Listening before hub A starts: its alive announcements are heard.
    notifies = new JsonLines(lab.lan.spawn('cp', process.execPath, [join(REPO, 'test/dlna/ssdp.js'), 'listen', lab.lan.host('cp').address]));
    await notifies.waitFor((e) => e.evt === 'ready', 5000, 'the SSDP listener');
    hub = await lab.startHubA(['Kitchen', 'Living Room']);
    hubAddress = lab.lan.host('hub').address;
  });

  afterAll(async () => {
    await lab?.stop();
  });

  const ids = async () => {
    const list = (await hub.op('device_list')).DeviceList as { DeviceID: string; DeviceName: string; IsPlaying: boolean }[];
    return Object.fromEntries(list.map((x) => [x.DeviceName, x.DeviceID]));
  };

  test('publishes a renderer per speaker, an announcement renderer per speaker and "All speakers", and announces them', async () => {
    expect(hub.renderers.map((r) => r.name).sort()).toEqual(['All speakers', 'Kitchen', 'Kitchen (announcements)', 'Living Room', 'Living Room (announcements)']);
    const kitchen = hub.renderer('Kitchen');
    await notifies.waitFor(
      (e) => e.nts === 'ssdp:alive' && e.nt === 'urn:schemas-upnp-org:device:MediaRenderer:1' && e.usn === `${kitchen.udn}::urn:schemas-upnp-org:device:MediaRenderer:1`,
      10000,
      "Kitchen's NOTIFY alive",
    );
    const desc = await http('GET', kitchen.location);
    expect(desc.status).toBe(200);
    expect(field(desc.body, 'friendlyName')).toBe('Kitchen');
    expect(field(desc.body, 'UDN')).toBe(kitchen.udn);
    expect(field(desc.body, 'deviceType')).toBe('urn:schemas-upnp-org:device:MediaRenderer:1');
    const icon = await http('GET', new URL('/icon.png', kitchen.location).toString());
    expect(icon.status).toBe(200);
    expect(icon.headers['content-type']).toBe('image/png');
  });

  test('answers M-SEARCH for ssdp:all, rootdevice, its UUID, the device type and each service type', async () => {
    const kitchen = hub.renderer('Kitchen');
    const search = async (st: string, expectUsn: string, alsoUsn?: string) => {
      const s = new JsonLines<{ evt: string; st?: string; usn?: string; location?: string; from?: string }>(
        lab.lan.spawn('cp', process.execPath, [join(REPO, 'test/dlna/ssdp.js'), 'search', lab.lan.host('cp').address, st, '3']),
      );
      try {
        const a = await s.waitFor((e) => e.evt === 'answer' && e.usn === expectUsn, 10000, `an answer to ST ${st}`);
        expect(a.location).toBe(kitchen.location);
        expect(a.from).toBe(hubAddress);
        if (alsoUsn) await s.waitFor((e) => e.evt === 'answer' && e.usn === alsoUsn, 10000, `an answer to ST ${st} with ${alsoUsn}`);
        const answers = s.events.filter((e) => e.evt === 'answer');
        // Only answers of the ST asked for.
        if (st !== 'ssdp:all') expect(answers.every((x) => x.st === st)).toBe(true);
        return answers;
      } finally {
        s.child.kill();
      }
    };
    await search('upnp:rootdevice', `${kitchen.udn}::upnp:rootdevice`);
    await search(kitchen.udn, kitchen.udn);
    await search('urn:schemas-upnp-org:device:MediaRenderer:1', `${kitchen.udn}::urn:schemas-upnp-org:device:MediaRenderer:1`);
    for (const svc of ['AVTransport', 'RenderingControl', 'ConnectionManager']) {
      const st = `urn:schemas-upnp-org:service:${svc}:1`;
      await search(st, `${kitchen.udn}::${st}`);
    }
    const all = await search('ssdp:all', `${kitchen.udn}::urn:schemas-upnp-org:service:AVTransport:1`, `${hub.renderer('Living Room').udn}::upnp:rootdevice`);
    expect(new Set(all.map((a) => a.st))).toEqual(
      new Set([
        'upnp:rootdevice',
        'urn:schemas-upnp-org:device:MediaRenderer:1',
        'urn:schemas-upnp-org:service:AVTransport:1',
        'urn:schemas-upnp-org:service:RenderingControl:1',
        'urn:schemas-upnp-org:service:ConnectionManager:1',
        ...hub.renderers.map((r) => r.udn),
      ]),
    );
  });

  test('a play through upnp-mediarenderer-client plays on that speaker: the virtual speaker fetches the URL, REST sees it', async () => {
    const cp = new MrcClient(lab, hub.renderer('Kitchen').location);
    try {
      await cp.ready();
      const mark = lab.webMark;
      const url = `${lab.webUrl}/song.mp3`;
      await cp.call('load', { url, options: { autoplay: true, contentType: 'audio/mpeg', metadata: { title: 'Test Song', type: 'audio' } } });
      await eventually(() => lab.webGets('/song.mp3', mark).includes(hubAddress), 10000, 'hub A fetching song.mp3');
      const status = await hub.op('playback_status');
      expect(status.PlaybackState).toBe('PlayerStatePlaying');
      const list = (await hub.op('device_list')).DeviceList as { DeviceName: string; IsPlaying: boolean }[];
      expect(list.find((x) => x.DeviceName === 'Kitchen')!.IsPlaying).toBe(true);
      expect(list.find((x) => x.DeviceName === 'Living Room')!.IsPlaying).toBe(false);
      const info = await cp.call('getTransportInfo');
      expect(info.CurrentTransportState).toBe('PLAYING');
      // The control point's own metadata comes back (title), and the other speaker's renderer is idle.
      const media = await soap(hub.renderer('Kitchen').location, 'AVTransport', 'GetMediaInfo', { InstanceID: 0 });
      expect(field(media.body, 'CurrentURI')).toBe(url);
      expect(field(media.body, 'CurrentURIMetaData')).toContain('Test Song');
      const other = await soap(hub.renderer('Living Room').location, 'AVTransport', 'GetTransportInfo', { InstanceID: 0 });
      expect(field(other.body, 'CurrentTransportState')).toBe('NO_MEDIA_PRESENT');
      await cp.call('stop');
      expect((await hub.op('playback_status')).PlaybackState).toBe('PlayerStateStopped');
    } finally {
      await cp.close();
    }
  });

  test('volume and mute both ways; a REST set_volume_device reaches the control point as a GENA LastChange', async () => {
    const { Kitchen } = await ids();
    const cp = new MrcClient(lab, hub.renderer('Kitchen').location);
    try {
      await cp.ready();
      await cp.call('setVolume', { volume: 60 });
      expect((await hub.op('get_volume_device', { DeviceID: Kitchen })).Volume).toBe('30');
      await hub.op('set_volume_device', { DeviceID: Kitchen, Volume: '10' });
      expect(await cp.call('getVolume')).toBe(20);

      await cp.call('subscribe', { service: 'RenderingControl' });
      // The initial event carries the full state (Volume 20 on 0–100).
      await eventually(() => cp.events('RenderingControl').some((e) => e.Volume === '20'), 10000, 'the initial RenderingControl event');
      const mark = cp.lines.events.length;
      await hub.op('set_volume_device', { DeviceID: Kitchen, Volume: '15' });
      await eventually(() => cp.events('RenderingControl', mark).some((e) => e.Volume === '30'), 10000, 'LastChange Volume 30 after REST');

      const setMute = await soap(hub.renderer('Kitchen').location, 'RenderingControl', 'SetMute', { InstanceID: 0, Channel: 'Master', DesiredMute: 1 });
      expect(setMute.status).toBe(200);
      expect((await hub.op('get_mute_device', { DeviceID: Kitchen })).Mute).toBe('true');
      await eventually(() => cp.events('RenderingControl', mark).some((e) => e.Mute === '1'), 10000, 'LastChange Mute 1');
      await hub.op('set_mute_device', { DeviceID: Kitchen, Mute: 'false' });
      await eventually(async () => field((await soap(hub.renderer('Kitchen').location, 'RenderingControl', 'GetMute', { InstanceID: 0, Channel: 'Master' })).body, 'CurrentMute') === '0', 5000, 'GetMute 0');
    } finally {
      await cp.close();
    }
  });
});

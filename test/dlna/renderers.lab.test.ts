import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DlnaLab, field, http, MrcClient, REPO, soap, labUnavailableReason, SUBNET, type LabHub } from './lab';
import { eventually } from '../helpers/wait';
import { JsonLines } from '../drivers/upnp/processes';

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
    expect(hub.renderers.map((r) => r.name).sort()).toEqual([
      'All speakers',
      'Kitchen',
      'Kitchen (announcements)',
      'Living Room',
      'Living Room (announcements)',
    ]);
    const kitchen = hub.renderer('Kitchen');
    await notifies.waitFor(
      (e) =>
        e.nts === 'ssdp:alive' &&
        e.nt === 'urn:schemas-upnp-org:device:MediaRenderer:1' &&
        e.usn === `${kitchen.udn}::urn:schemas-upnp-org:device:MediaRenderer:1`,
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
    const want = [
      'upnp:rootdevice',
      'urn:schemas-upnp-org:device:MediaRenderer:1',
      'urn:schemas-upnp-org:service:AVTransport:1',
      'urn:schemas-upnp-org:service:RenderingControl:1',
      'urn:schemas-upnp-org:service:ConnectionManager:1',
      ...hub.renderers.map((r) => r.udn),
    ];
    const s = new JsonLines<{ evt: string; st?: string }>(
      lab.lan.spawn('cp', process.execPath, [join(REPO, 'test/dlna/ssdp.js'), 'search', lab.lan.host('cp').address, 'ssdp:all', '3']),
    );
    try {
      // Every target of every renderer: 5 renderers × (rootdevice, UUID, device type, 3 services).
      await eventually(
        () => {
          const got = s.events.filter((e) => e.evt === 'answer');
          return want.every((st) => got.some((e) => e.st === st)) && got.length >= hub.renderers.length * 6;
        },
        10000,
        'answers to ssdp:all for every renderer',
      );
    } finally {
      s.child.kill();
    }
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

      const setMute = await soap(hub.renderer('Kitchen').location, 'RenderingControl', 'SetMute', {
        InstanceID: 0,
        Channel: 'Master',
        DesiredMute: 1,
      });
      expect(setMute.status).toBe(200);
      expect((await hub.op('get_mute_device', { DeviceID: Kitchen })).Mute).toBe('true');
      await eventually(() => cp.events('RenderingControl', mark).some((e) => e.Mute === '1'), 10000, 'LastChange Mute 1');
      await hub.op('set_mute_device', { DeviceID: Kitchen, Mute: 'false' });
      await eventually(
        async () =>
          field(
            (await soap(hub.renderer('Kitchen').location, 'RenderingControl', 'GetMute', { InstanceID: 0, Channel: 'Master' })).body,
            'CurrentMute',
          ) === '0',
        5000,
        'GetMute 0',
      );
    } finally {
      await cp.close();
    }
  });

  test('hub media started by REST: Pause and Play on the renderer pause and resume it', async () => {
    const { Kitchen } = await ids();
    const media = (await hub.op('media_list')).MediaList as { PersistentID: string; Title: string }[];
    const long = media.find((m) => m.Title === 'Long Tone')!;
    expect((await hub.op('play_hub_media_selected_speakers', { PersistentID: long.PersistentID, DeviceIDList: Kitchen })).Result).toBe('true');
    const loc = hub.renderer('Kitchen').location;
    await eventually(
      async () => field((await soap(loc, 'AVTransport', 'GetTransportInfo', { InstanceID: 0 })).body, 'CurrentTransportState') === 'PLAYING',
      10000,
      'PLAYING',
    );
    expect((await soap(loc, 'AVTransport', 'Pause', { InstanceID: 0 })).status).toBe(200);
    expect((await hub.op('playback_status')).PlaybackState).toBe('PlayerStatePaused');
    expect(field((await soap(loc, 'AVTransport', 'GetTransportInfo', { InstanceID: 0 })).body, 'CurrentTransportState')).toBe('PAUSED_PLAYBACK');
    expect((await soap(loc, 'AVTransport', 'Play', { InstanceID: 0, Speed: 1 })).status).toBe(200);
    await eventually(async () => (await hub.op('playback_status')).PlaybackState === 'PlayerStatePlaying', 10000, 'resumed');
    await hub.op('stop_play');
  });

  test('"All speakers" plays in party mode', async () => {
    const all = hub.renderer('All speakers').location;
    const mark = lab.webMark;
    const url = `${lab.webUrl}/long.wav`;
    expect((await soap(all, 'AVTransport', 'SetAVTransportURI', { InstanceID: 0, CurrentURI: url, CurrentURIMetaData: '' })).status).toBe(200);
    expect((await soap(all, 'AVTransport', 'Play', { InstanceID: 0, Speed: 1 })).status).toBe(200);
    await eventually(() => lab.webGets('/long.wav', mark).includes(hubAddress), 10000, 'hub A fetching long.wav');
    await eventually(
      async () => ((await hub.op('device_list')).DeviceList as { IsPlaying: boolean }[]).every((x) => x.IsPlaying),
      10000,
      'every speaker playing',
    );
    // Each speaker's own renderer sees the party play as its own.
    for (const name of ['Kitchen', 'Living Room']) {
      const info = await soap(hub.renderer(name).location, 'AVTransport', 'GetPositionInfo', { InstanceID: 0 });
      expect(field(info.body, 'TrackURI')).toBe(url);
    }
    expect((await soap(all, 'AVTransport', 'Stop', { InstanceID: 0 })).status).toBe(200);
    expect((await hub.op('playback_status')).PlaybackState).toBe('PlayerStateStopped');
  });

  test('announcement renderer: music on, a play on "Kitchen (announcements)" is an announce, the music comes back', async () => {
    const { Kitchen } = await ids();
    const music = `${lab.webUrl}/song.mp3`;
    expect((await hub.op('play_web_media_selected_speakers', { MediaUrl: music, DeviceIDList: Kitchen })).Result).toBe('true');
    await eventually(async () => (await hub.op('playback_status')).PlaybackState === 'PlayerStatePlaying', 10000, 'the music playing');
    const ann = hub.renderer('Kitchen (announcements)').location;
    const cp = new MrcClient(lab, ann);
    try {
      await cp.ready();
      await cp.call('subscribe', { service: 'AVTransport' });
      await eventually(() => cp.events('AVTransport').some((e) => e.TransportState), 10000, 'the initial AVTransport event');
      const mark = lab.webMark;
      await cp.call('load', { url: `${lab.webUrl}/short.wav`, options: { autoplay: true, contentType: 'audio/wav' } });
      await eventually(() => lab.webGets('/short.wav', mark).includes(hubAddress), 10000, 'hub A fetching the announcement');
      await eventually(() => cp.events('AVTransport').some((e) => e.TransportState === 'PLAYING'), 10000, 'PLAYING on the announcement renderer');
      // Restore: the music rejoins (a web stream restarts: fetched again), the renderer goes back to STOPPED.
      await eventually(() => lab.webGets('/song.mp3', mark).includes(hubAddress), 20000, 'the music fetched again after the announcement');
      await eventually(() => cp.events('AVTransport').some((e) => e.TransportState === 'STOPPED'), 20000, 'STOPPED after the announcement');
      const status = await hub.op('playback_status');
      expect(status.PlaybackState).toBe('PlayerStatePlaying');
      const info = await soap(hub.renderer('Kitchen').location, 'AVTransport', 'GetPositionInfo', { InstanceID: 0 });
      expect(field(info.body, 'TrackURI')).toBe(music);
    } finally {
      await cp.close();
      await hub.op('stop_play');
    }
  });

  test('dlna.announcementMode duck: the announcement renderer asks for Mode duck (virtual speakers cannot mix: it interrupts, and says why)', async () => {
    // A second hub A with the announcement renderers set to duck, on its own host and port.
    const ducking = await lab.startHubA(['Porch'], {
      host: 'hubb',
      port: 8094,
      dlna: { announcementMode: 'duck', duckLevel: -20, fadeMs: 200 },
      config: { dataDir: `${lab.tmp}/data-duck` },
    });
    try {
      const loc = ducking.renderer('Porch (announcements)').location;
      await soap(loc, 'AVTransport', 'SetAVTransportURI', { InstanceID: 0, CurrentURI: `${lab.webUrl}/short.wav`, CurrentURIMetaData: '' });
      expect((await soap(loc, 'AVTransport', 'Play', { InstanceID: 0, Speed: 1 })).status).toBe(200);
      // The hub logs each announcement with the mode it asked and the one it plays in.
      const queued = async () =>
        (await readFile(join(lab.tmp, 'hub-hubb.log'), 'utf8'))
          .split('\n')
          .filter((l) => l.includes('"msg":"announcement queued"'))
          .map((l) => JSON.parse(l) as { mode: string; modeReason?: string });
      await eventually(async () => (await queued()).length > 0, 10000, 'the announcement queued');
      const [a] = await queued();
      expect(a.mode).toBe('interrupt');
      expect(a.modeReason).toMatch(/duck needs every target to mix.*Porch \(virtual\)/);
    } finally {
      await ducking.stop();
    }
  });

  test('SetNextAVTransportURI: the next track plays when the current one ends', async () => {
    const loc = hub.renderer('Living Room').location;
    const mark = lab.webMark;
    await soap(loc, 'AVTransport', 'SetAVTransportURI', { InstanceID: 0, CurrentURI: `${lab.webUrl}/short.wav`, CurrentURIMetaData: '' });
    await soap(loc, 'AVTransport', 'SetNextAVTransportURI', { InstanceID: 0, NextURI: `${lab.webUrl}/next.wav`, NextURIMetaData: '' });
    expect((await soap(loc, 'AVTransport', 'Play', { InstanceID: 0, Speed: 1 })).status).toBe(200);
    await eventually(() => lab.webGets('/next.wav', mark).includes(hubAddress), 20000, 'hub A fetching next.wav after short.wav ended');
    expect(lab.webGets('/short.wav', mark)).toContain(hubAddress);
    await eventually(
      async () => field((await soap(loc, 'AVTransport', 'GetPositionInfo', { InstanceID: 0 })).body, 'TrackURI') === `${lab.webUrl}/next.wav`,
      10000,
      'next.wav as the current track',
    );
    await hub.op('stop_play');
  });

  test('GUPnP 1.6 (Python GObject introspection) discovers, subscribes and plays', async () => {
    const py = '/usr/bin/python3';
    const probe = (() => {
      try {
        require('node:child_process').execFileSync(py, ['-c', "import gi; gi.require_version('GUPnP', '1.6'); from gi.repository import GUPnP"], {
          stdio: 'ignore',
        });
        return undefined;
      } catch {
        return 'GUPnP 1.6 for Python is missing: apt-get install -y gir1.2-gupnp-1.6 python3-gi';
      }
    })();
    if (probe) throw new Error(probe);
    const mark = lab.webMark;
    const g = new JsonLines<{ evt: string; value?: unknown; udn?: string; message?: string }>(
      lab.lan.spawn('cp', py, [join(REPO, 'test/dlna/cp-gupnp.py'), 'lan0', 'Living Room', `${lab.webUrl}/song.mp3`]),
    );
    try {
      const found = await g.waitFor((e) => e.evt === 'found' || e.evt === 'error', 20000, 'GUPnP finding Living Room');
      expect(found.udn).toBe(hub.renderer('Living Room').udn);
      const vol = await g.waitFor((e) => e.evt === 'volume' || e.evt === 'error', 10000, 'GetVolume');
      expect(typeof vol.value).toBe('number');
      await g
        .waitFor((e) => e.evt === 'played' || e.evt === 'error', 15000, 'SetAVTransportURI + Play')
        .then((e) => expect(e.message).toBeUndefined());
      await eventually(() => lab.webGets('/song.mp3', mark).includes(hubAddress), 10000, 'hub A fetching what GUPnP played');
      await g.waitFor((e) => e.evt === 'lastchange' && String(e.value).includes('PLAYING'), 15000, 'a LastChange with PLAYING');
    } finally {
      g.child.kill();
      await hub.op('stop_play');
    }
  });

  test("hub B's UPnP driver discovers the renderers and plays to one: hub A's virtual speaker fetches the media", async () => {
    const b = await lab.startHubB();
    const bList = await eventually(
      async () => {
        const list = (await b.op('device_list')).DeviceList as { DeviceID: string; DeviceName: string; Active: boolean }[];
        return list.some((x) => x.DeviceName === 'Kitchen' && x.Active) ? list : undefined;
      },
      30000,
      "hub B finding hub A's Kitchen",
    );
    const kitchenOnB = bList.find((x) => x.DeviceName === 'Kitchen')!;
    const mark = lab.webMark;
    const bMark = b.mark;
    const play = await b.op('play_web_media_selected_speakers', { MediaUrl: `${lab.webUrl}/long.wav`, DeviceIDList: kitchenOnB.DeviceID });
    expect(play.Result).toBe('true');
    // Hub A's virtual Kitchen fetches the audio: from the web server or through hub B's media server.
    await eventually(
      () =>
        lab.webGets('/long.wav', mark).includes(hubAddress) || b.lines.events.slice(bMark).some((e) => e.evt === 'media' && e.from === hubAddress),
      15000,
      "hub A's speaker fetching what hub B played",
    );
    await eventually(async () => (await hub.op('playback_status')).PlaybackState === 'PlayerStatePlaying', 10000, 'hub A playing');
    expect((await b.op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    // Volume from hub B reaches hub A's speaker (B's 0–50 → UPnP 0–100 → A's 0–50).
    await b.op('set_volume_device', { DeviceID: kitchenOnB.DeviceID, Volume: '40' });
    const { Kitchen } = await ids();
    await eventually(async () => (await hub.op('get_volume_device', { DeviceID: Kitchen })).Volume === '40', 10000, "hub A's Kitchen at 40");
    await b.op('stop_play');
    await eventually(async () => (await hub.op('playback_status')).PlaybackState === 'PlayerStateStopped', 10000, 'hub A stopped');
    await b.stop();
  });

  test('speakerhub hub --dlna names the interface in its banner; without --dlna nothing answers SSDP', async () => {
    const addr = lab.lan.host('hubb').address;
    const cli = (args: string[]) =>
      new JsonLines<{ evt: string }>(
        lab.lan.spawn('hubb', process.execPath, [
          join(REPO, 'dist/cli.js'),
          'hub',
          '--interface',
          'lan0',
          '--host',
          addr,
          '--port',
          '8096',
          '--no-samples',
          '--mqtt',
          'off',
          '--data',
          join(lab.tmp, `cli-${args.length}`),
          ...args,
        ]),
      );
    const stdout = (p: JsonLines<{ evt: string }>) => {
      let out = '';
      p.child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
      return () => out;
    };
    const on = cli(['--dlna']);
    const onOut = stdout(on);
    try {
      await eventually(
        () => new RegExp(`DLNA: +\\d+ renderers? on lan0 \\(${SUBNET.replace(/\./g, '\\.')}\\.\\d+\\)`).test(onOut()),
        30000,
        'the DLNA banner line',
      );
      // 3 virtual speakers (the default): 3 + 3 announcement renderers + "All speakers".
      expect(onOut()).toMatch(/DLNA: +7 renderers on lan0/);
    } finally {
      // Already gone (it failed to start) → no 'exit' event will come.
      if (on.child.exitCode === null && on.child.signalCode === null) {
        on.child.kill('SIGTERM');
        await new Promise((r) => on.child.once('exit', r));
      }
    }
    const off = cli([]);
    const offOut = stdout(off);
    try {
      await eventually(() => /REST API:/.test(offOut()), 30000, 'the banner of the hub without --dlna');
      expect(offOut()).not.toMatch(/DLNA: /);
      expect(offOut()).not.toMatch(/"ext":"dlna"/);
      // Hub A answers the search (the positive signal); the hub without --dlna never does.
      const s = new JsonLines<{ evt: string; from?: string }>(
        lab.lan.spawn('cp', process.execPath, [join(REPO, 'test/dlna/ssdp.js'), 'search', lab.lan.host('cp').address, 'ssdp:all', '2']),
      );
      try {
        await eventually(() => s.events.filter((e) => e.evt === 'sent').length >= 2, 10000, 'two searches sent');
        await s.waitFor((e) => e.evt === 'answer' && e.from === hubAddress, 10000, "hub A's answer");
        expect(s.events.some((e) => e.evt === 'answer' && e.from === addr)).toBe(false);
      } finally {
        s.child.kill();
      }
    } finally {
      // Already gone (it failed to start) → no 'exit' event will come.
      if (off.child.exitCode === null && off.child.signalCode === null) {
        off.child.kill('SIGTERM');
        await new Promise((r) => off.child.once('exit', r));
      }
    }
  });

  test('a clean stop says byebye for every renderer', async () => {
    const mark = notifies.events.length;
    await hub.stop();
    for (const r of hub.renderers) {
      await notifies.waitFor((e) => e.nts === 'ssdp:byebye' && e.usn === `${r.udn}::upnp:rootdevice`, 10000, `byebye of ${r.name}`, mark);
    }
  });
});

import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { DlnaLab, field, http, labUnavailableReason, REPO, soap, type LabHub } from './lab';
import { eventually } from '../helpers/wait';
import { LAB_NETWORKS } from '../helpers/lab-networks';
import { JsonLines } from '../drivers/upnp/processes';
import { child, isElement, parseControlPointXml as parseXml, text, type XmlElement } from '../../src/protocols/upnp/xml';
import { LAN_IFNAME } from '../drivers/upnp/lan';
import { upnpDeviceId } from '../../src/drivers/upnp/info';
import { upnpDeviceId as dlnaUpnpDeviceId } from '../../src/dlna/extension';

/**
 * A speaker that is itself a UPnP renderer (the upnp driver's: here a real gmediarender) is not
 * published again by default, and is with dlna.publishUpnpSpeakers; its "(announcements)"
 * renderer is published by default (the real renderer has no announcements); a hub running the
 * upnp driver and --dlna together never takes its own renderers for speakers.
 */

const reason =
  labUnavailableReason() ??
  (() => {
    try {
      execFileSync('sh', ['-c', 'command -v gmediarender'], { stdio: 'ignore' });
      return undefined;
    } catch {
      return 'gmediarender is not installed (scripts/install-test-deps.sh installs it)';
    }
  })();
const d = reason && process.env.SPEAKERHUB_SKIP_LABS === '1' ? describe.skip : describe;
jest.setTimeout(120_000);

const DEN_UUID = '5eaca4e2-0b1d-4c3e-9a7f-0000000000d1';

test("the extension's UPnP DeviceID rule is the upnp driver's", () => {
  for (const udn of [`uuid:${DEN_UUID}`, 'uuid:ABCDEF01-0000-1111-2222-333344445555', ' uuid:x '])
    expect(dlnaUpnpDeviceId(udn)).toBe(upnpDeviceId(udn));
});

d('DLNA and speakers that are UPnP renderers', () => {
  let lab: DlnaLab;
  /** Set when gmediarender exits: a failed step then says why. */
  let denExit = '';

  beforeAll(async () => {
    if (reason) throw new Error(`the DLNA lab cannot run: ${reason} (SPEAKERHUB_SKIP_LABS=1 skips it)`);
    lab = await DlnaLab.start(['r1'], LAB_NETWORKS.dlnaUpnpSpeakers);
    await startDen();
  });

  let den: import('node:child_process').ChildProcess;
  /** Starts gmediarender "Den" (the same UDN every time) and waits until it is ready. */
  async function startDen(): Promise<void> {
    denExit = '';
    den = lab.lan.spawn('r1', 'gmediarender', [
      '-f',
      'Den',
      '-u',
      DEN_UUID,
      '-I',
      LAN_IFNAME,
      '-p',
      '49494',
      '--gstout-audiopipe',
      'audioconvert ! audioresample ! fakesink sync=true',
    ]);
    let out = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`gmediarender did not start: ${out}`)), 15000);
      const onData = (b: Buffer) => {
        out += b.toString();
        if (out.includes('Ready for rendering')) {
          clearTimeout(timer);
          resolve();
        }
      };
      den.stdout?.on('data', onData);
      den.stderr?.on('data', onData);
      den.once('exit', (code, signal) => {
        denExit = `exited (${code ?? signal}): ${out.slice(-2000)}`;
      });
    });
  }

  afterAll(async () => {
    await lab?.stop();
  });

  const names = async (hub: LabHub) => ((await hub.op('device_list')).DeviceList as { DeviceName: string }[]).map((x) => x.DeviceName).sort();

  test('by default the UPnP speaker gets its announcement renderer only, and the hub does not find its own renderers', async () => {
    const hub = await lab.startHubA(['Kitchen'], { drivers: ['virtual', 'upnp'] });
    try {
      await eventually(async () => (await names(hub)).includes('Den'), 20000, 'the hub finding Den');
      await eventually(
        async () => (await hub.currentRenderers()).some((r) => r.name === 'Den (announcements)'),
        10000,
        "Den's announcement renderer",
      );
      // Several search rounds (searchIntervalSeconds 5): its own renderers (the announcement one too) never became speakers.
      await new Promise((r) => setTimeout(r, 6000));
      expect(await names(hub)).toEqual(['Den', 'Kitchen']);
      const published = await hub.currentRenderers();
      expect(published.map((r) => r.name).sort()).toEqual(['All speakers', 'Den (announcements)', 'Kitchen', 'Kitchen (announcements)']);
      // A play on it is an announcement on the real renderer: gmediarender fetches it (the hub's
      // clip of it, or the URL itself).
      const loc = published.find((r) => r.name === 'Den (announcements)')!.location;
      const denAddress = lab.lan.host('r1').address;
      const [webMark, hubMark] = [lab.webMark, hub.mark];
      await soap(loc, 'AVTransport', 'SetAVTransportURI', { InstanceID: 0, CurrentURI: `${lab.webUrl}/short.wav`, CurrentURIMetaData: '' });
      const play = await soap(loc, 'AVTransport', 'Play', { InstanceID: 0, Speed: 1 });
      expect(play.status).toBe(200);
      await eventually(
        () =>
          lab.webGets('/short.wav', webMark).includes(denAddress) ||
          hub.lines.events.slice(hubMark).some((e) => e.evt === 'media' && e.method === 'GET' && e.from === denAddress),
        15000,
        'Den fetching the announcement',
      );
      expect(field((await soap(loc, 'AVTransport', 'GetCurrentTransportActions', { InstanceID: 0 })).body, 'Actions')).toBe('Play');
    } finally {
      await hub.stop();
    }
  });

  test('dlna.publishUpnpSpeakers publishes it too', async () => {
    const hub = await lab.startHubA(['Kitchen'], { drivers: ['virtual', 'upnp'], dlna: { publishUpnpSpeakers: true }, host: 'hubb', port: 8092 });
    try {
      await eventually(async () => (await names(hub)).includes('Den'), 20000, 'the hub finding Den');
      await eventually(async () => (await hub.currentRenderers()).some((r) => r.name === 'Den'), 10000, 'Den published');
      expect((await hub.currentRenderers()).map((r) => r.name).sort()).toEqual([
        'All speakers',
        'Den',
        'Den (announcements)',
        'Kitchen',
        'Kitchen (announcements)',
      ]);
      // The speaker goes (gmediarender stops, saying byebye): its renderers are withdrawn with an
      // SSDP byebye; it comes back: they are announced again.
      const denRenderer = (await hub.currentRenderers()).find((r) => r.name === 'Den')!;
      const listener = new JsonLines<{ evt: string; nts?: string; usn?: string }>(
        lab.lan.spawn('cp', process.execPath, [join(REPO, 'test/dlna/ssdp.js'), 'listen', lab.lan.host('cp').address]),
      );
      await listener.waitFor((e) => e.evt === 'ready', 5000, 'the SSDP listener');
      den.kill('SIGTERM');
      await new Promise((r) => den.once('exit', r));
      await listener.waitFor((e) => e.nts === 'ssdp:byebye' && e.usn === `${denRenderer.udn}::upnp:rootdevice`, 20000, "byebye of Den's renderer");
      expect((await hub.currentRenderers()).some((r) => r.name === 'Den')).toBe(false);
      await startDen();
      await listener.waitFor(
        (e) => e.nts === 'ssdp:alive' && e.usn === `${denRenderer.udn}::upnp:rootdevice`,
        30000,
        "alive of Den's renderer again",
      );
      expect((await hub.currentRenderers()).find((r) => r.name === 'Den')?.udn).toBe(denRenderer.udn);
      listener.child.kill();
    } finally {
      await hub.stop();
    }
  });

  test('one SOAP/GENA conversation against gmediarender and against a published renderer: the same answers, field by field', async () => {
    const hub = await lab.startHubA(['Kitchen'], { host: 'hub', port: 8097, config: { dataDir: `${lab.tmp}/data-equiv` } });
    try {
      const den = `http://${lab.lan.host('r1').address}:49494/description.xml`;
      const ours = hub.renderer('Kitchen').location;
      const SERVICE = (svc: string) => `urn:schemas-upnp-org:service:${svc}:1`;
      const endpoints = async (location: string) => {
        const doc = parseXml((await http('GET', location)).body, 1e6);
        const list = child(child(child(doc, 'root'), 'device'), 'serviceList');
        const services = isElement(list) ? ([] as unknown[]).concat(list.service) : [];
        const out: Record<string, { control: string; event: string }> = {};
        for (const svc of services as XmlElement[]) {
          const type = text(child(svc, 'serviceType'));
          out[type] = {
            control: new URL(text(child(svc, 'controlURL')), location).toString(),
            event: new URL(text(child(svc, 'eventSubURL')), location).toString(),
          };
        }
        return out;
      };
      const peers = { den: await endpoints(den), ours: await endpoints(ours) };
      for (const svc of ['AVTransport', 'RenderingControl', 'ConnectionManager']) {
        expect(peers.den[SERVICE(svc)]).toBeDefined();
        expect(peers.ours[SERVICE(svc)]).toBeDefined();
      }
      /** One action on one peer: HTTP status, the response's fields (name → text) or the UPnP error code. */
      const call = async (peer: 'den' | 'ours', svc: string, action: string, args: Record<string, string | number>) => {
        const inner = Object.entries(args)
          .map(([k, v]) => `<${k}>${String(v).replace(/&/g, '&amp;').replace(/</g, '&lt;')}</${k}>`)
          .join('');
        const body = `<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body><u:${action} xmlns:u="${SERVICE(svc)}">${inner}</u:${action}></s:Body></s:Envelope>`;
        const r = await http(
          'POST',
          peers[peer][SERVICE(svc)].control,
          { 'Content-Type': 'text/xml; charset="utf-8"', SOAPACTION: `"${SERVICE(svc)}#${action}"` },
          body,
        ).catch((e: Error) => {
          throw new Error(`${peer} ${action}: ${e.message}${peer === 'den' && denExit ? `; gmediarender ${denExit}` : ''}`);
        });
        const doc = parseXml(r.body, 1e6);
        const b = child(child(doc, 'Envelope'), 'Body');
        const resp = child(b, `${action}Response`);
        const fields: Record<string, string> = {};
        if (isElement(resp)) for (const k of Object.keys(resp).filter((k) => !k.startsWith('@_') && k !== '#text')) fields[k] = text(resp[k]);
        const code = text(child(child(child(child(b, 'Fault'), 'detail'), 'UPnPError'), 'errorCode'));
        return { status: r.status, fields, code };
      };
      const both = async (svc: string, action: string, args: Record<string, string | number>) => {
        const [a, b] = [await call('den', svc, action, args), await call('ours', svc, action, args)];
        // Every field gmediarender answers, ours answers too (gmediarender leaves some out, e.g. GetTransportSettings' two).
        const missing = Object.keys(a.fields).filter((k) => !(k in b.fields));
        expect({ action, status: b.status, code: b.code, missing }).toEqual({ action, status: a.status, code: a.code, missing: [] });
        return [a.fields, b.fields];
      };
      const url = `${lab.webUrl}/song.mp3`;
      const meta =
        '<DIDL-Lite xmlns="urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:upnp="urn:schemas-upnp-org:metadata-1-0/upnp/"><item id="1" parentID="0" restricted="1"><dc:title>Song</dc:title><upnp:class>object.item.audioItem.musicTrack</upnp:class><res protocolInfo="http-get:*:audio/mpeg:*">' +
        url.replace(/&/g, '&amp;') +
        '</res></item></DIDL-Lite>';
      const I = { InstanceID: 0 };
      await both('AVTransport', 'GetTransportInfo', I);
      await both('AVTransport', 'GetTransportSettings', I);
      await both('ConnectionManager', 'GetCurrentConnectionIDs', {});
      await both('ConnectionManager', 'GetProtocolInfo', {});
      await both('AVTransport', 'SetAVTransportURI', { ...I, CurrentURI: url, CurrentURIMetaData: meta });
      for (const f of await both('AVTransport', 'GetMediaInfo', I)) expect(f.CurrentURI).toBe(url);
      await both('AVTransport', 'Play', { ...I, Speed: 1 });
      for (const peer of ['den', 'ours'] as const) {
        await eventually(
          async () => (await call(peer, 'AVTransport', 'GetTransportInfo', I)).fields.CurrentTransportState === 'PLAYING',
          15000,
          `${peer} PLAYING`,
        );
      }
      for (const f of await both('AVTransport', 'GetPositionInfo', I)) {
        expect(f.TrackURI).toBe(url);
        expect(f.RelTime).toMatch(/^\d+:\d\d:\d\d/);
      }
      for (const f of await both('AVTransport', 'GetCurrentTransportActions', I)) expect(f.Actions).toMatch(/stop/i);
      await both('RenderingControl', 'SetVolume', { ...I, Channel: 'Master', DesiredVolume: 40 });
      for (const f of await both('RenderingControl', 'GetVolume', { ...I, Channel: 'Master' })) expect(f.CurrentVolume).toBe('40');
      for (const f of await both('RenderingControl', 'GetMute', { ...I, Channel: 'Master' })) expect(f.CurrentMute).toMatch(/^(0|false)$/);
      await both('AVTransport', 'Stop', I);
      for (const peer of ['den', 'ours'] as const) {
        await eventually(
          async () => (await call(peer, 'AVTransport', 'GetTransportInfo', I)).fields.CurrentTransportState === 'STOPPED',
          10000,
          `${peer} STOPPED`,
        );
      }
      // An unknown action: both refuse with a SOAP fault; gmediarender says 501, UDA (and the hub) 401 Invalid Action.
      const [unknownDen, unknownOurs] = [await call('den', 'AVTransport', 'NoSuchAction', I), await call('ours', 'AVTransport', 'NoSuchAction', I)];
      expect(unknownOurs.status).toBe(unknownDen.status);
      expect(unknownDen.code).toMatch(/^(401|501)$/);
      expect(unknownOurs.code).toBe('401');

      // GENA: SUBSCRIBE answers and the initial LastChange, compared.
      const got: Record<string, string[]> = { den: [], ours: [] };
      const server = createServer((req, res) => {
        const parts: Buffer[] = [];
        req.on('data', (c: Buffer) => parts.push(c));
        req.on('end', () => {
          got[req.url === '/den' ? 'den' : 'ours'].push(Buffer.concat(parts).toString());
          res.end();
        });
      });
      await new Promise<void>((r) => server.listen(0, lab.lan.root.address, r));
      try {
        const port = (server.address() as { port: number }).port;
        const answers: Record<string, Awaited<ReturnType<typeof http>>> = {};
        for (const peer of ['den', 'ours'] as const) {
          answers[peer] = await http('SUBSCRIBE', peers[peer][SERVICE('RenderingControl')].event, {
            CALLBACK: `<http://${lab.lan.root.address}:${port}/${peer}>`,
            NT: 'upnp:event',
            TIMEOUT: 'Second-300',
          });
          expect(answers[peer].status).toBe(200);
          expect(String(answers[peer].headers.sid)).toMatch(/^uuid:[0-9a-f-]{36}$/);
          expect(String(answers[peer].headers.timeout)).toMatch(/^Second-\d+$/);
        }
        await eventually(() => got.den.length > 0 && got.ours.length > 0, 10000, 'both initial events');
        const lastChange = (body: string) => {
          const ps = parseXml(body, 1e6);
          const lc = text(child(child(child(ps, 'propertyset'), 'property'), 'LastChange'));
          const inst = child(child(parseXml(lc, 1e6), 'Event'), 'InstanceID');
          const vars: Record<string, string> = {};
          if (isElement(inst)) {
            for (const [k, v] of Object.entries(inst)) {
              if (k.startsWith('@_')) continue;
              const first = Array.isArray(v) ? (v.find((x) => isElement(x) && x['@_channel'] === 'Master') ?? v[0]) : v;
              if (isElement(first)) vars[k] = String(first['@_val']);
            }
          }
          return vars;
        };
        const [den0, ours0] = [lastChange(got.den[0]), lastChange(got.ours[0])];
        for (const v of ['Volume', 'Mute']) {
          expect(den0[v]).toBeDefined();
          expect(ours0[v]).toBeDefined();
        }
        expect(ours0.Volume).toBe(den0.Volume);
        for (const peer of ['den', 'ours'] as const) {
          expect((await http('UNSUBSCRIBE', peers[peer][SERVICE('RenderingControl')].event, { SID: String(answers[peer].headers.sid) })).status).toBe(
            200,
          );
        }
      } finally {
        server.close();
      }
    } finally {
      await hub.stop();
    }
  });
});

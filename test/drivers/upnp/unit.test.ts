/**
 * The UPnP driver's protocol pieces without a network: XML escaping, SOAP envelopes and
 * faults, descriptions, LastChange, SSDP messages, DIDL-Lite, times, ids; and GENA's server
 * and subscription against fake peers on loopback.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock } from '../../../src/core/clock';
import { digitId } from '../../../src/drivers/driver';
import { UpnpConfigSchema } from '../../../src/drivers/upnp/config';
import { parseDescription, parseVolumeRange } from '../../../src/drivers/upnp/description';
import { contentTypeOf, didlLite, formatTime, parseTime, protocolInfo } from '../../../src/drivers/upnp/didl';
import { GenaServer, GenaSubscription, grantedSeconds, parseLastChange, parsePropertySet } from '../../../src/drivers/upnp/gena';
import { httpRequest } from '../../../src/drivers/upnp/http';
import { redactUrl } from '../../../src/redact';
import { upnpDeviceId } from '../../../src/drivers/upnp/renderer';
import { VolumeScale } from '../../../src/drivers/upnp/volume';
import { parseSoapResponse, SoapFault, soapEnvelope } from '../../../src/drivers/upnp/soap';
import { interpret, maxAge, parseSsdpMessage, udnOf } from '../../../src/drivers/upnp/ssdp';
import { escapeXml, parseXml, text, at } from '../../../src/drivers/upnp/xml';
import { createLogger } from '../../../src/logger';

const logger = createLogger({ level: 'silent' });

// What `gmediarender --dump-devicedesc` prints (trimmed to what matters).
const GMEDIARENDER = `<?xml version="1.0"?>
<root xmlns="urn:schemas-upnp-org:device-1-0">
<specVersion><major>1</major><minor>0</minor></specVersion>
<device>
<deviceType>urn:schemas-upnp-org:device:MediaRenderer:1</deviceType>
<presentationURL></presentationURL>
<friendlyName>Office &amp; &lt;Den&gt;</friendlyName>
<manufacturer>Ivo Clarysse, Henner Zeller</manufacturer>
<modelName>gmediarender</modelName>
<modelNumber>0.1</modelNumber>
<UDN>uuid:GMediaRender-1_0-000-000-002</UDN>
<serviceList>
<service><serviceType>urn:schemas-upnp-org:service:AVTransport:1</serviceType><serviceId>urn:upnp-org:serviceId:AVTransport</serviceId>
<SCPDURL>/upnp/rendertransportSCPD.xml</SCPDURL><controlURL>/upnp/control/rendertransport1</controlURL><eventSubURL>/upnp/event/rendertransport1</eventSubURL></service>
<service><serviceType>urn:schemas-upnp-org:service:ConnectionManager:1</serviceType><serviceId>urn:upnp-org:serviceId:ConnectionManager</serviceId>
<SCPDURL>/upnp/renderconnmgrSCPD.xml</SCPDURL><controlURL>/upnp/control/renderconnmgr1</controlURL><eventSubURL>/upnp/event/renderconnmgr1</eventSubURL></service>
<service><serviceType>urn:schemas-upnp-org:service:RenderingControl:1</serviceType><serviceId>urn:upnp-org:serviceId:RenderingControl</serviceId>
<SCPDURL>/upnp/rendercontrolSCPD.xml</SCPDURL><controlURL>/upnp/control/rendercontrol1</controlURL><eventSubURL>/upnp/event/rendercontrol1</eventSubURL></service>
</serviceList>
</device>
</root>`;

describe('XML and SOAP', () => {
  test('escapeXml escapes markup and drops characters XML cannot carry', () => {
    expect(escapeXml(`a&b<c>"d"'e'`)).toBe('a&amp;b&lt;c&gt;&quot;d&quot;&apos;e&apos;');
    expect(escapeXml('bell\u0007tab\tok')).toBe('belltab\tok');
  });

  test('a SOAP envelope escapes argument values, and parses back to the same text', () => {
    const url = 'http://h:1/media/x?a=1&b=<2>';
    const env = soapEnvelope('urn:schemas-upnp-org:service:AVTransport:1', 'SetAVTransportURI', {
      InstanceID: 0,
      CurrentURI: url,
      CurrentURIMetaData: didlLite({ url, title: 'Rock & <Roll>' }),
    });
    expect(env).not.toContain('a=1&b');
    const body = at(parseXml(env), 'Envelope', 'Body', 'SetAVTransportURI');
    expect(text(at(body, 'CurrentURI'))).toBe(url);
    // The metadata is XML inside XML: escaped twice on the wire, once after one parse.
    const didl = parseXml(text(at(body, 'CurrentURIMetaData')));
    expect(text(at(didl, 'DIDL-Lite', 'item', 'title'))).toBe('Rock & <Roll>');
    expect(text(at(didl, 'DIDL-Lite', 'item', 'res'))).toBe(url);
  });

  test('responses give their out arguments; faults become SoapFault with the UPnP code', () => {
    const ok = `<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>
      <u:GetPositionInfoResponse xmlns:u="urn:schemas-upnp-org:service:AVTransport:1"><Track>1</Track><RelTime>0:00:07</RelTime><TrackURI>http://x/a?b=1&amp;c=2</TrackURI></u:GetPositionInfoResponse></s:Body></s:Envelope>`;
    expect(parseSoapResponse('GetPositionInfo', 200, ok)).toEqual({ Track: '1', RelTime: '0:00:07', TrackURI: 'http://x/a?b=1&c=2' });
    const fault = `<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><s:Fault><faultcode>s:Client</faultcode><faultstring>UPnPError</faultstring>
      <detail><UPnPError xmlns="urn:schemas-upnp-org:control-1-0"><errorCode>701</errorCode><errorDescription>Transition not available</errorDescription></UPnPError></detail></s:Fault></s:Body></s:Envelope>`;
    let err: unknown;
    try {
      parseSoapResponse('Stop', 500, fault);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SoapFault);
    expect(err).toMatchObject({ upnpCode: 701, upnpDescription: 'Transition not available', httpStatus: 500 });
    expect(() => parseSoapResponse('Play', 500, 'garbage')).toThrow(SoapFault);
  });
});

describe('device descriptions', () => {
  test('gmediarender: names unescaped, URLs resolved against the location, address from it', () => {
    const d = parseDescription(GMEDIARENDER, 'http://10.0.0.5:49494/description.xml');
    expect(d).toMatchObject({
      udn: 'uuid:GMediaRender-1_0-000-000-002',
      friendlyName: 'Office & <Den>',
      modelName: 'gmediarender',
      modelNumber: '0.1',
      firmware: '0.1',
      macAddress: '',
      address: '10.0.0.5',
      port: 49494,
    });
    expect(d.avTransport.controlUrl).toBe('http://10.0.0.5:49494/upnp/control/rendertransport1');
    expect(d.renderingControl?.eventSubUrl).toBe('http://10.0.0.5:49494/upnp/event/rendercontrol1');
  });

  test('an embedded renderer with URLBase, a firmware version and a MAC address', () => {
    const xml = `<root xmlns="urn:schemas-upnp-org:device-1-0" xmlns:v="urn:vendor"><URLBase>http://192.168.1.9:8080/dev/</URLBase>
      <device><deviceType>urn:schemas-upnp-org:device:MediaServer:1</deviceType><UDN>uuid:root</UDN>
      <deviceList><device><deviceType>urn:schemas-upnp-org:device:MediaRenderer:1</deviceType><friendlyName>AVR</friendlyName>
      <modelName>X-1000</modelName><modelNumber>X1000</modelNumber><v:X_firmwareVersion>2.4.1</v:X_firmwareVersion><v:MACAddress>00-1a-2b-3c-4d-5e</v:MACAddress>
      <UDN>uuid:renderer</UDN><serviceList><service><serviceType>urn:schemas-upnp-org:service:AVTransport:2</serviceType>
      <controlURL>avt/control</controlURL><eventSubURL>avt/event</eventSubURL><SCPDURL>avt.xml</SCPDURL></service></serviceList></device></deviceList></device></root>`;
    const d = parseDescription(xml, 'http://192.168.1.9:8080/desc.xml');
    expect(d).toMatchObject({ udn: 'uuid:renderer', friendlyName: 'AVR', firmware: '2.4.1', macAddress: '00:1A:2B:3C:4D:5E', port: 8080 });
    expect(d.avTransport.controlUrl).toBe('http://192.168.1.9:8080/dev/avt/control');
    expect(d.renderingControl).toBeUndefined();
  });

  test('not a renderer, or not XML: a clear error', () => {
    expect(() =>
      parseDescription('<root><device><deviceType>urn:schemas-upnp-org:device:MediaServer:1</deviceType></device></root>', 'http://h/'),
    ).toThrow(/no MediaRenderer/);
    expect(() => parseDescription('<html>', 'http://h/')).toThrow();
  });

  test('the volume range comes from the RenderingControl SCPD', () => {
    const scpd = `<scpd><serviceStateTable><stateVariable sendEvents="no"><name>Mute</name><dataType>boolean</dataType></stateVariable>
      <stateVariable sendEvents="no"><name>Volume</name><dataType>ui2</dataType><allowedValueRange><minimum>0</minimum><maximum>60</maximum><step>1</step></allowedValueRange></stateVariable></serviceStateTable></scpd>`;
    expect(parseVolumeRange(scpd)).toEqual({ min: 0, max: 60 });
    expect(parseVolumeRange('<scpd><serviceStateTable/></scpd>')).toBeUndefined();
  });
});

describe('GENA payloads', () => {
  // A real gmediarender NOTIFY body (shortened).
  const notify = `<e:propertyset xmlns:e="urn:schemas-upnp-org:event-1-0"><e:property><LastChange>&lt;Event xmlns="urn:schemas-upnp-org:metadata-1-0/AVT/"&gt;
    &lt;InstanceID val="0"&gt;&lt;TransportState val="PLAYING"&gt;&lt;/TransportState&gt;&lt;AVTransportURI val="http://h/a?x=1&amp;amp;y=2"&gt;&lt;/AVTransportURI&gt;&lt;/InstanceID&gt;&lt;/Event&gt;</LastChange></e:property></e:propertyset>`;

  test('LastChange is XML inside XML: TransportState and URIs come out unescaped', () => {
    const props = parsePropertySet(notify);
    expect(parseLastChange(props.LastChange)).toEqual({ TransportState: 'PLAYING', AVTransportURI: 'http://h/a?x=1&y=2' });
  });

  test('RenderingControl: the Master channel wins', () => {
    const lc = `<Event xmlns="urn:schemas-upnp-org:metadata-1-0/RCS/"><InstanceID val="0"><Volume val="12" channel="LF"/><Volume val="37" channel="Master"/><Mute val="0" channel="Master"/></InstanceID></Event>`;
    expect(parseLastChange(lc)).toEqual({ Volume: '37', Mute: '0' });
  });

  test('TIMEOUT header', () => {
    expect(grantedSeconds('Second-1800', 300)).toBe(1800);
    expect(grantedSeconds('infinite', 300)).toBe(300);
    expect(grantedSeconds(undefined, 300)).toBe(300);
  });
});

describe('SSDP messages', () => {
  const response =
    'HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=100\r\nEXT:\r\nLOCATION: http://10.231.7.12:49494/description.xml\r\n' +
    '01-NLS: 2253dc60-e574-11f1-9ff5-a86da5c2f2bf\r\nSERVER: Linux, UPnP/1.0, Portable SDK for UPnP devices/1.8.4\r\nST: urn:schemas-upnp-org:device:MediaRenderer:1\r\n' +
    'USN: uuid:11111111-2222-3333-4444-000000000001::urn:schemas-upnp-org:device:MediaRenderer:1\r\n\r\n';

  test('an M-SEARCH answer is an alive with location and max-age', () => {
    const m = parseSsdpMessage(response)!;
    expect(interpret(m, '10.231.7.12')).toEqual({
      alive: {
        udn: 'uuid:11111111-2222-3333-4444-000000000001',
        usn: 'uuid:11111111-2222-3333-4444-000000000001::urn:schemas-upnp-org:device:MediaRenderer:1',
        type: 'urn:schemas-upnp-org:device:MediaRenderer:1',
        location: 'http://10.231.7.12:49494/description.xml',
        maxAgeSeconds: 100,
        via: 'search',
        from: '10.231.7.12',
        bootId: '2253dc60-e574-11f1-9ff5-a86da5c2f2bf',
      },
    });
  });

  test('NOTIFY alive and byebye; other control points’ M-SEARCH is ignored', () => {
    const alive = parseSsdpMessage(
      'NOTIFY * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nCACHE-CONTROL: max-age = 1800\r\nLOCATION: http://h/d.xml\r\nNT: upnp:rootdevice\r\nNTS: ssdp:alive\r\nUSN: uuid:abc::upnp:rootdevice\r\n\r\n',
    )!;
    expect(interpret(alive, 'h')?.alive).toMatchObject({ udn: 'uuid:abc', type: 'upnp:rootdevice', maxAgeSeconds: 1800, via: 'notify' });
    const bye = parseSsdpMessage(
      'NOTIFY * HTTP/1.1\r\nNT: urn:schemas-upnp-org:device:MediaRenderer:1\r\nNTS: ssdp:byebye\r\nUSN: uuid:abc::urn:schemas-upnp-org:device:MediaRenderer:1\r\n\r\n',
    )!;
    expect(interpret(bye, 'h')?.byebye).toMatchObject({ udn: 'uuid:abc' });
    const search = parseSsdpMessage('M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: "ssdp:discover"\r\nST: ssdp:all\r\n\r\n')!;
    expect(interpret(search, 'h')).toBeUndefined();
    expect(parseSsdpMessage('GET / HTTP/1.1\r\n\r\n')).toBeUndefined();
  });

  test('helpers', () => {
    expect(maxAge(undefined)).toBe(1800);
    expect(maxAge('no-cache="Ext", max-age=60')).toBe(60);
    expect(udnOf('uuid:x::urn:y')).toBe('uuid:x');
    expect(udnOf('uuid:x')).toBe('uuid:x');
  });
});

describe('DIDL-Lite, times, ids, redaction, config', () => {
  test('protocolInfo names the content type (given, else by extension, else *) and the transport', () => {
    expect(protocolInfo({ url: 'http://h/m/x', contentType: 'audio/wav' })).toBe('http-get:*:audio/wav:*');
    expect(protocolInfo({ url: 'http://h/song.MP3?x=1' })).toBe('http-get:*:audio/mpeg:*');
    expect(protocolInfo({ url: 'http://h/stream' })).toBe('http-get:*:*:*');
    expect(protocolInfo({ url: 'rtsp://h/live' })).toBe('rtsp-rtp-udp:*:*:*');
    expect(contentTypeOf({ url: 'http://h/a', contentType: 'audio/mpeg; charset=x' })).toBe('audio/mpeg');
  });

  test('DIDL-Lite carries title, duration and the URL, escaped; long titles are cut', () => {
    const didl = didlLite({ url: 'http://h/a?b=1&c=2', title: 'x'.repeat(500), duration: 3725, contentType: 'audio/mpeg' });
    expect(didl).toContain('duration="1:02:05.000"');
    expect(didl).toContain('http://h/a?b=1&amp;c=2');
    const title = text(at(parseXml(didl), 'DIDL-Lite', 'item', 'title'));
    expect(title.length).toBe(200);
  });

  test('REL_TIME formatting and parsing', () => {
    expect(formatTime(0)).toBe('0:00:00');
    expect(formatTime(3725.9)).toBe('1:02:05');
    expect(parseTime('0:00:07')).toBe(7);
    expect(parseTime('01:02:05.500')).toBe(3725.5);
    expect(parseTime('NOT_IMPLEMENTED')).toBeUndefined();
    expect(parseTime('')).toBeUndefined();
  });

  test('DeviceIDs: 14 digits, stable, case-blind, in a namespace of their own', () => {
    const id = upnpDeviceId('uuid:ABC-1');
    expect(id).toMatch(/^[1-9]\d{13}$/);
    expect(upnpDeviceId('uuid:abc-1')).toBe(id);
    expect(id).toBe(digitId('upnp:uuid:abc-1'));
    expect(id).not.toBe(digitId('uuid:abc-1'));
  });

  test('volume: 0–50 maps onto the renderer range and back to the same value, clamped', () => {
    for (const range of [
      { min: 0, max: 100 },
      { min: 0, max: 60 },
      { min: 0, max: 31 },
      { min: 10, max: 90 },
    ]) {
      const scale = new VolumeScale(range);
      const steps = range.max - range.min;
      for (let v = 0; v <= 50; v++) {
        const back = scale.toHub(scale.toRenderer(v));
        if (steps >= 50) expect(back).toBe(v);
        else expect(Math.abs(back - v)).toBeLessThanOrEqual(1);
      }
      expect(scale.toRenderer(80)).toBe(range.max);
      expect(scale.toRenderer(-3)).toBe(range.min);
    }
    expect(new VolumeScale().toRenderer(17)).toBe(34);
    expect(new VolumeScale().toHub(25)).toBe(13);
  });

  test('media URLs are never logged whole', () => {
    expect(redactUrl('http://10.0.0.2:3456/media/AbCdEfGhIjKlMnOpQrStUv/song.mp3')).toBe('http://10.0.0.2:3456/media/[redacted]/song.mp3');
    expect(redactUrl('http://u:p@radio.example/live?key=k1')).toBe('http://[redacted]@radio.example/live?key=[redacted]');
  });

  test('config: defaults, http-only renderer URLs, strict keys', () => {
    expect(UpnpConfigSchema.parse({})).toMatchObject({ renderers: [], ssdp: true, searchIntervalSeconds: 60, callbackPort: 0 });
    expect(UpnpConfigSchema.safeParse({ renderers: ['https://h/d.xml'] }).success).toBe(false);
    expect(UpnpConfigSchema.safeParse({ renderers: ['http://10.0.0.9:49494/description.xml'] }).success).toBe(true);
    expect(UpnpConfigSchema.safeParse({ bogus: 1 }).success).toBe(false);
  });
});

describe('GENA on loopback', () => {
  let gena: GenaServer;
  beforeEach(async () => {
    gena = new GenaServer({ address: '127.0.0.1', port: 0, logger });
    await gena.start();
  });
  afterEach(async () => {
    await gena.stop();
  });

  const notify = (path: string, body: string, sid = 'uuid:s') =>
    httpRequest(`http://127.0.0.1:${gena.port}${path}`, {
      method: 'NOTIFY',
      headers: { NT: 'upnp:event', NTS: 'upnp:propchange', SID: sid, SEQ: '0', 'Content-Type': 'text/xml' },
      body,
      timeoutMs: 2000,
    });

  test('every NOTIFY gets 200: routed, unknown path, malformed body', async () => {
    const seen: Record<string, string>[] = [];
    const { path } = gena.route((_sid, _seq, p) => seen.push(p));
    expect(
      (await notify(path, '<e:propertyset xmlns:e="urn:schemas-upnp-org:event-1-0"><e:property><Volume>5</Volume></e:property></e:propertyset>'))
        .status,
    ).toBe(200);
    expect((await notify('/gena/unknown', '<x/>')).status).toBe(200);
    expect((await notify(path, 'not xml <<<')).status).toBe(200);
    expect(seen).toEqual([{ Volume: '5' }]);
    expect((await httpRequest(`http://127.0.0.1:${gena.port}${path}`, { timeoutMs: 2000 })).status).toBe(405);
  });

  test('a subscription renews, resubscribes on 412 (renderer restarted), and reports a vanished renderer', async () => {
    let sids = 0;
    const known = new Set<string>();
    const requests: string[] = [];
    const renderer: Server = createServer((req, res) => {
      requests.push(`${req.method} ${req.headers.sid ? 'renew' : 'new'}`);
      if (req.method === 'SUBSCRIBE' && !req.headers.sid) {
        const sid = `uuid:sid-${++sids}`;
        known.add(sid);
        res.writeHead(200, { SID: sid, TIMEOUT: 'Second-300' });
      } else if (req.method === 'SUBSCRIBE') {
        res.writeHead(known.has(String(req.headers.sid)) ? 200 : 412, { SID: String(req.headers.sid), TIMEOUT: 'Second-300' });
      } else {
        res.writeHead(200);
      }
      res.end();
    });
    await new Promise<void>((r) => renderer.listen(0, '127.0.0.1', () => r()));
    const port = (renderer.address() as AddressInfo).port;
    const lost: Error[] = [];
    const sub = new GenaSubscription({
      server: gena,
      eventSubUrl: `http://127.0.0.1:${port}/event`,
      callbackHost: '127.0.0.1',
      timeoutSeconds: 300,
      requestTimeoutMs: 1000,
      clock: systemClock,
      logger,
      onEvent: () => undefined,
      onLost: (e) => lost.push(e),
    });
    try {
      await sub.subscribe();
      expect(sub.id).toBe('uuid:sid-1');
      await sub.renew();
      expect(sub.id).toBe('uuid:sid-1');
      known.clear(); // the renderer restarts and forgets every subscription
      await sub.renew();
      expect(sub.id).toBe('uuid:sid-2');
      expect(requests).toEqual(['SUBSCRIBE new', 'SUBSCRIBE renew', 'SUBSCRIBE renew', 'SUBSCRIBE new']);
      await new Promise<void>((r) => renderer.close(() => r()));
      renderer.closeAllConnections();
      await sub.renew();
      expect(lost).toHaveLength(1);
    } finally {
      await sub.close(false);
      renderer.close();
    }
  });
});

describe("recognising this hub's media URLs (ghost playback)", () => {
  const { hubMediaUrlMatcher } = require('../../../src/media/capability-url') as typeof import('../../../src/media/capability-url');
  const isHub = hubMediaUrlMatcher({ bindHost: '10.0.0.5', networkAddress: '10.0.0.5' });
  const id = 'AbCdEfGhIjKlMnOpQrStUv';

  test('the capability form on one of its hosts, any port (an earlier run may have had another)', () => {
    expect(isHub(`http://10.0.0.5:41234/media/${id}/song.mp3`)).toBe(true);
    expect(isHub(`http://10.0.0.5:8000/media/${id}/tts%20x.wav`)).toBe(true);
    expect(isHub(`http://10.0.0.5:8000/media/${id}`)).toBe(true);
  });

  test('anything else is not the hub: another host, another path, a wrong id length, another scheme', () => {
    expect(isHub(`http://10.0.0.6:41234/media/${id}/song.mp3`)).toBe(false);
    expect(isHub('http://10.0.0.5:8080/song.mp3')).toBe(false);
    expect(isHub(`http://10.0.0.5:8080/media/${id}x/song.mp3`)).toBe(false);
    expect(isHub(`https://10.0.0.5:8080/media/${id}/song.mp3`)).toBe(false);
    expect(isHub('not a url')).toBe(false);
    expect(isHub('')).toBe(false);
  });

  test('an advertised host name counts too', () => {
    const named = hubMediaUrlMatcher({ bindHost: '0.0.0.0', advertiseHost: 'Hub.Local' });
    expect(named(`http://hub.local:9000/media/${id}/a.wav`)).toBe(true);
  });
});

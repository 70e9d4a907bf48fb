/** SSDP messages (src/protocols/upnp/ssdp.ts), for the driver's discovery and the renderers' advertiser alike. */
import {
  interpret,
  maxAge,
  notifyMessage,
  parseSearch,
  parseSsdpMessage,
  searchAnswer,
  searchMessage,
  udnOf,
} from '../../../src/protocols/upnp/ssdp';

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

describe('what the advertiser writes, discovery reads', () => {
  const target = { nt: 'urn:schemas-upnp-org:device:MediaRenderer:1', usn: 'uuid:r1::urn:schemas-upnp-org:device:MediaRenderer:1' };
  const ad = { location: 'http://10.0.0.2:8200/r/a/description.xml', maxAgeSeconds: 900, server: 'Linux/6 UPnP/1.0 SpeakerHub/1' };

  test('a NOTIFY alive and byebye', () => {
    const alive = interpret(parseSsdpMessage(notifyMessage(target, 'ssdp:alive', ad).toString())!, '10.0.0.2');
    expect(alive?.alive).toMatchObject({ udn: 'uuid:r1', type: target.nt, location: ad.location, maxAgeSeconds: 900, via: 'notify' });
    const bye = interpret(parseSsdpMessage(notifyMessage(target, 'ssdp:byebye', ad).toString())!, '10.0.0.2');
    expect(bye?.byebye).toMatchObject({ udn: 'uuid:r1', type: target.nt });
    expect(notifyMessage(target, 'ssdp:byebye', ad).toString()).not.toContain('LOCATION');
  });

  test('an M-SEARCH and its answer', () => {
    const search = parseSearch(parseSsdpMessage(searchMessage(target.nt, 2, 'Node.js UPnP/1.1 SpeakerHub/1').toString())!);
    expect(search).toEqual({ st: target.nt, mx: 2, userAgent: 'Node.js UPnP/1.1 SpeakerHub/1' });
    const answer = interpret(parseSsdpMessage(searchAnswer(target, ad).toString())!, '10.0.0.2');
    expect(answer?.alive).toMatchObject({ udn: 'uuid:r1', type: target.nt, location: ad.location, via: 'search' });
  });

  test('a search that is not ssdp:discover, or has no ST, is no search; MX is clamped to 0–5', () => {
    const parse = (s: string) => parseSearch(parseSsdpMessage(s)!);
    expect(parse('M-SEARCH * HTTP/1.1\r\nMAN: "ssdp:other"\r\nST: ssdp:all\r\n\r\n')).toBeUndefined();
    expect(parse('M-SEARCH * HTTP/1.1\r\nMAN: "ssdp:discover"\r\n\r\n')).toBeUndefined();
    expect(parse('M-SEARCH * HTTP/1.1\r\nMAN: "ssdp:discover"\r\nST: ssdp:all\r\nMX: 120\r\n\r\n')?.mx).toBe(5);
    expect(parse('NOTIFY * HTTP/1.1\r\nMAN: "ssdp:discover"\r\nST: ssdp:all\r\n\r\n')).toBeUndefined();
  });
});

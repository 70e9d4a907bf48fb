/**
 * The shared UPnP module's SOAP and XML (src/protocols/upnp): the client envelope and answers
 * the upnp driver reads, and hostile XML (DOCTYPE, entities, bounds) against the one parser
 * every UPnP document of the hub goes through.
 */
import { parseDescription } from '../../../src/protocols/upnp/description-parse';
import { didlDocument, didlObject } from '../../../src/protocols/upnp/didl';
import { parseLastChange, parsePropertySet } from '../../../src/protocols/upnp/gena';
import { parseVolumeRange } from '../../../src/protocols/upnp/scpd';
import { parseSoapResponse, SoapFault, soapEnvelope } from '../../../src/protocols/upnp/soap-client';
import { parseSoapRequest } from '../../../src/protocols/upnp/soap';
import { at, escapeXml, parseXml, text, XmlError } from '../../../src/protocols/upnp/xml';

/** What f throws (undefined when it returns). */
function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  return undefined;
}

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
      CurrentURIMetaData: didlDocument([
        didlObject({ id: '0', parentId: '-1', title: 'Rock & <Roll>', upnpClass: 'object.item', res: { url, protocolInfo: 'http-get:*:*:*' } }),
      ]),
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
    const err = thrown(() => parseSoapResponse('Stop', 500, fault));
    expect(err).toBeInstanceOf(SoapFault);
    expect(err).toMatchObject({ upnpCode: 701, upnpDescription: 'Transition not available', httpStatus: 500 });
    expect(() => parseSoapResponse('Play', 500, 'garbage')).toThrow(SoapFault);
  });
});

describe('one envelope for both sides', () => {
  test("the driver's request is what the renderers' SOAP server reads", () => {
    const env = soapEnvelope('urn:schemas-upnp-org:service:RenderingControl:1', 'SetVolume', { InstanceID: 0, Channel: 'Master', DesiredVolume: 17 });
    expect(parseSoapRequest(env, '"urn:schemas-upnp-org:service:RenderingControl:1#SetVolume"')).toEqual({
      serviceType: 'urn:schemas-upnp-org:service:RenderingControl:1',
      action: 'SetVolume',
      args: { InstanceID: '0', Channel: 'Master', DesiredVolume: '17' },
    });
  });
});

describe('hostile XML: every document the driver reads goes through the one hardened parser', () => {
  const billionLaughs =
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>' +
    '<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><u:GetVolumeResponse xmlns:u="urn:x"><CurrentVolume>&lol2;</CurrentVolume></u:GetVolumeResponse></s:Body></s:Envelope>';
  const externalEntity =
    '<?xml version="1.0"?><!DOCTYPE root [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><root><device><friendlyName>&xxe;</friendlyName></device></root>';

  test('the parser refuses a DOCTYPE and an entity declaration, and never expands an undeclared entity', () => {
    expect(() => parseXml(billionLaughs)).toThrow(XmlError);
    expect(() => parseXml(externalEntity)).toThrow(/DOCTYPE/);
    expect(() => parseXml('<!ENTITY x "y"><a/>')).toThrow(XmlError);
    // An entity that is not one of XML's five stays as written: nothing is looked up.
    expect(text(at(parseXml('<a>&xxe; &amp; &#65;</a>'), 'a'))).toBe('&xxe; & A');
  });

  test("a renderer's SOAP answer, description, event and LastChange with a DOCTYPE are refused, not expanded", () => {
    // 200 with a body that is not acceptable XML: a SoapFault saying so, nothing parsed.
    const fault = thrown(() => parseSoapResponse('GetVolume', 200, billionLaughs));
    expect(fault).toBeInstanceOf(SoapFault);
    expect(fault).toMatchObject({ upnpDescription: 'answer is not XML', httpStatus: 200 });
    expect(() => parseDescription(externalEntity, 'http://h/d.xml')).toThrow(XmlError);
    expect(() => parsePropertySet(`<!DOCTYPE e [<!ENTITY a "b">]><e:propertyset xmlns:e="urn:schemas-upnp-org:event-1-0"/>`)).toThrow(XmlError);
    expect(() =>
      parseLastChange('<!DOCTYPE Event [<!ENTITY a "PLAYING">]><Event><InstanceID val="0"><TransportState val="&a;"/></InstanceID></Event>'),
    ).toThrow(XmlError);
    expect(() => parseVolumeRange('<!DOCTYPE scpd SYSTEM "http://evil/x.dtd"><scpd/>')).toThrow(XmlError);
  });

  test('bounds: a document too deep or too long is refused before it is parsed', () => {
    expect(() => parseXml('<a>'.repeat(40) + '</a>'.repeat(40))).toThrow(/nested deeper/);
    expect(() => parseXml(`<a>${'x'.repeat(2 * 1024 * 1024)}</a>`)).toThrow(/longer than/);
  });
});

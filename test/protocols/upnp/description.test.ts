/** Reading a renderer's device description and SCPD (src/protocols/upnp/description-parse.ts, scpd.ts). */
import { parseDescription } from '../../../src/protocols/upnp/description-parse';
import { deviceDescriptionXml } from '../../../src/protocols/upnp/description';
import { parseVolumeRange } from '../../../src/protocols/upnp/scpd';

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

describe('one description module for both sides', () => {
  test('a renderer description the hub writes reads back with its endpoints resolved', () => {
    const service = (n: string) => ({
      serviceType: `urn:schemas-upnp-org:service:${n}:1`,
      id: `urn:upnp-org:serviceId:${n}`,
      scpdUrl: `/scpd/${n}.xml`,
      controlUrl: `/r/x/${n}/control`,
      eventSubUrl: `/r/x/${n}/event`,
    });
    const xml = deviceDescriptionXml({
      deviceType: 'urn:schemas-upnp-org:device:MediaRenderer:1',
      friendlyName: 'Kitchen & Co',
      manufacturer: 'SpeakerHub',
      modelDescription: 'one speaker',
      modelName: 'SpeakerHub DLNA renderer',
      modelNumber: '1.2.3',
      serialNumber: '1',
      udn: 'uuid:00000000-0000-5000-8000-000000000001',
      services: [service('AVTransport'), service('RenderingControl')],
    });
    const d = parseDescription(xml, 'http://10.0.0.2:8200/r/x/description.xml');
    expect(d).toMatchObject({ udn: 'uuid:00000000-0000-5000-8000-000000000001', friendlyName: 'Kitchen & Co', modelNumber: '1.2.3', port: 8200 });
    expect(d.avTransport).toEqual({
      serviceType: 'urn:schemas-upnp-org:service:AVTransport:1',
      controlUrl: 'http://10.0.0.2:8200/r/x/AVTransport/control',
      eventSubUrl: 'http://10.0.0.2:8200/r/x/AVTransport/event',
      scpdUrl: 'http://10.0.0.2:8200/scpd/AVTransport.xml',
    });
  });
});

/**
 * The UPnP driver's own pieces without a network: protocolInfo and the DIDL-Lite it sends, ids,
 * volume mapping, redaction, config, hub media URLs. The protocol (XML, SOAP, descriptions,
 * SSDP, GENA, times) is tested with the shared module in test/protocols/upnp/.
 */
import { digitId } from '../../../src/drivers/driver';
import { UpnpConfigSchema } from '../../../src/drivers/upnp/config';
import { contentTypeOf, didlLite, protocolInfo } from '../../../src/drivers/upnp/didl';
import { upnpDeviceId } from '../../../src/drivers/upnp/renderer';
import { VolumeScale } from '../../../src/drivers/upnp/volume';
import { at, parseXml, text } from '../../../src/protocols/upnp/xml';
import { redactUrl } from '../../../src/redact';

describe('DIDL-Lite, ids, redaction, config', () => {
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

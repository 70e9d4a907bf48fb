import { EsphomeConfigSchema } from '../../src/esphome/config';
import { areaFor, buildModel, macFor } from '../../src/esphome/entities';
import { FrameError, PlaintextTransport, writeVarint } from '../../src/esphome/frame-codec';
import { decodeMessage, encodeMessage } from '../../src/esphome/messages';
import { CipherState, decodeNoiseKey, NoiseAuthError } from '../../src/esphome/noise';

/** The ESPHome front end's pure parts: framing, messages, the device model, the config. */

const speakers = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `1000000000${i}`, name: `Speaker ${i}`, active: true, volume: 20 }));
const kitchen = { 'Speaker 0': 'Kitchen', 'Speaker 1': 'Kitchen', 'Speaker 2': 'Kitchen', 'Speaker 3': 'Kitchen', 10000000004: 'Kitchen' };

describe('plaintext framing', () => {
  test('a frame fed byte by byte comes out whole, once', () => {
    const t = new PlaintextTransport(1024);
    const { id, data } = encodeMessage('HelloRequest', { client_info: 'x'.repeat(200), api_version_major: 1, api_version_minor: 10 });
    const bytes = t.frame(id, data);
    const got = [];
    for (const b of bytes) got.push(...t.receive(Buffer.from([b])));
    expect(got).toHaveLength(1);
    expect(decodeMessage(got[0].id, got[0].data)?.body).toMatchObject({ client_info: 'x'.repeat(200), api_version_minor: 10 });
  });

  test('several frames in one chunk', () => {
    const t = new PlaintextTransport(1024);
    const ping = encodeMessage('PingRequest');
    const chunk = Buffer.concat([t.frame(ping.id, ping.data), t.frame(ping.id, ping.data), t.frame(ping.id, ping.data)]);
    expect(t.receive(chunk).map((m) => m.id)).toEqual([7, 7, 7]);
  });

  test('refuses a length beyond the bound, a bad indicator and an overlong VarInt', () => {
    const codes = (b: Buffer) => {
      try {
        new PlaintextTransport(1024).receive(b);
        return 'none';
      } catch (e) {
        return (e as FrameError).code;
      }
    };
    expect(codes(Buffer.concat([Buffer.from([0]), writeVarint(1025), Buffer.from([1])]))).toBe('MessageTooLarge');
    expect(codes(Buffer.from([0x01, 0, 0]))).toBe('BadIndicator');
    expect(codes(Buffer.from([0, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))).toBe('BadVarint');
  });

  test('an id the excerpt does not hold decodes to undefined (ignored); a broken body throws', () => {
    expect(decodeMessage(9999, Buffer.from([1, 2, 3]))).toBeUndefined();
    expect(() => decodeMessage(1, Buffer.from([0x0a, 0x7f]))).toThrow();
  });
});

describe('the device model', () => {
  test('the same speakers give the same keys and device ids, whatever their order', () => {
    const a = buildModel(speakers(5), (s) => areaFor(kitchen, s));
    const b = buildModel(speakers(5).reverse(), (s) => areaFor(kitchen, s));
    expect(a.signature).toBe(b.signature);
    expect(a.entities).toHaveLength(6);
    expect(new Set(a.entities.map((e) => e.key)).size).toBe(6);
    expect(a.areas).toEqual([{ area_id: expect.any(Number), name: 'Kitchen' }]);
    expect(a.devices.every((d) => d.area_id === a.areas[0].area_id && d.device_id !== 0)).toBe(true);
  });

  test('a speaker added changes the signature (clients list again); names that slug alike stay apart', () => {
    const two = [...speakers(1), { id: '2000000000001', name: 'Speaker-0', active: true, volume: 1 }];
    const m = buildModel(two);
    expect(new Set(m.entities.map((e) => e.objectId)).size).toBe(3);
    expect(buildModel(speakers(1)).signature).not.toBe(m.signature);
  });

  test('the MAC is stable, unicast and locally administered', () => {
    const mac = macFor('uuid-1');
    expect(mac).toBe(macFor('uuid-1'));
    expect(mac).not.toBe(macFor('uuid-2'));
    const first = parseInt(mac.slice(0, 2), 16);
    expect(first & 0x03).toBe(0x02);
  });
});

describe('Noise pieces and config', () => {
  test('a cipher state refuses a tampered message', () => {
    const k = Buffer.alloc(32, 7);
    const c = new CipherState(k).encrypt(Buffer.from('hello'));
    expect(new CipherState(k).decrypt(c).toString()).toBe('hello');
    c[0] ^= 1;
    expect(() => new CipherState(k).decrypt(c)).toThrow(NoiseAuthError);
  });

  test('keys: base64 of exactly 32 bytes', () => {
    expect(decodeNoiseKey('AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=')?.length).toBe(32);
    expect(decodeNoiseKey('short')).toBeUndefined();
    expect(EsphomeConfigSchema.safeParse({ encryptionKey: 'short' }).success).toBe(false);
    expect(EsphomeConfigSchema.parse({})).toMatchObject({ enabled: false, port: 6053, maxConnections: 32 });
    expect(EsphomeConfigSchema.safeParse({ maxConnections: 1001 }).success).toBe(false);
  });
});

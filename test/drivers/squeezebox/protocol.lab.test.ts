import { squeezeboxDriver } from '../../../src/drivers/squeezebox/definition';
import { SqueezeboxConfigSchema } from '../../../src/drivers/squeezebox/config';
import {
  audg,
  FrameReader,
  MAX_FRAME_BODY,
  parseHelo,
  parseStat,
  SlimProtoError,
  strm,
  volumeToGain,
} from '../../../src/drivers/squeezebox/protocol';
import { parseConfig } from '../../../src/hub-config';

/** A player frame: 4-byte opcode, 4-byte big-endian length, body. */
function frame(opcode: string, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.write(opcode, 0, 'latin1');
  head.writeUInt32BE(body.length, 4);
  return Buffer.concat([head, body]);
}

/** A HELO body as squeezelite sends it: device 12, MAC, uuid, channel list, bytes, language, capabilities. */
function heloBody(mac: number[], caps: string): Buffer {
  const b = Buffer.alloc(36);
  b[0] = 12;
  Buffer.from(mac).copy(b, 2);
  return Buffer.concat([b, Buffer.from(caps)]);
}

describe('SlimProto framing and messages', () => {
  test('frames split across chunks are put back together; several in one chunk are all read', () => {
    const r = new FrameReader();
    const a = frame('HELO', heloBody([2, 0, 0, 0, 0, 1], 'Model=squeezelite,pcm'));
    const b = frame('STAT', Buffer.alloc(53));
    expect(r.push(a.subarray(0, 5))).toEqual([]);
    const got = r.push(Buffer.concat([a.subarray(5), b]));
    expect(got.map((f) => f.opcode)).toEqual(['HELO', 'STAT']);
    expect(got[1].body.length).toBe(53);
  });

  test('a bad opcode or an oversized length is refused at once (nothing buffered for it)', () => {
    expect(() => new FrameReader().push(Buffer.from('\x00\xffGARBAGE', 'latin1'))).toThrow(SlimProtoError);
    const big = Buffer.alloc(8);
    big.write('STAT', 0, 'latin1');
    big.writeUInt32BE(MAX_FRAME_BODY + 1, 4);
    expect(() => new FrameReader().push(big)).toThrow(/most/);
  });

  test('HELO: MAC, codecs, model name and firmware from the capabilities; a short HELO is an error', () => {
    const h = parseHelo(heloBody([2, 0, 0, 0xab, 0, 1], 'Model=squeezelite,Firmware=v1.9.9-1414,ModelName=SqueezeLite,flc,pcm,mp3'));
    expect(h).toMatchObject({
      deviceId: 12,
      mac: '02:00:00:ab:00:01',
      modelName: 'SqueezeLite',
      firmware: 'v1.9.9-1414',
      codecs: ['flc', 'pcm', 'mp3'],
    });
    expect(parseHelo(Buffer.from([4, 7, 1, 2, 3, 4, 5, 6])).modelName).toBe('Squeezebox 2');
    expect(() => parseHelo(Buffer.from([12, 0]))).toThrow(/HELO of 2 bytes/);
  });

  test('STAT: event, jiffies, elapsed ms and the echoed server timestamp; a short STAT is an error', () => {
    const b = Buffer.alloc(53);
    b.write('STMt', 0, 'latin1');
    b.writeUInt32BE(123456, 25);
    b.writeUInt32BE(4321, 43);
    b.writeUInt32BE(99, 47);
    expect(parseStat(b)).toMatchObject({ event: 'STMt', jiffies: 123456, elapsedMs: 4321, serverTimestamp: 99 });
    expect(() => parseStat(Buffer.alloc(20))).toThrow(/STAT of 20 bytes/);
  });

  test('strm and audg: server frames with a 2-byte length, the command and its fields', () => {
    const u = strm({ command: 'u', value: 0xdeadbeef });
    expect(u.readUInt16BE(0)).toBe(u.length - 2);
    expect(u.toString('latin1', 2, 7)).toBe('strmu');
    expect(u.readUInt32BE(6 + 14)).toBe(0xdeadbeef);
    const s = strm({ command: 's', request: 'GET /x HTTP/1.0\r\n\r\n', serverPort: 8123 });
    expect(s.readUInt16BE(6 + 18)).toBe(8123);
    expect(s.toString('latin1', 6 + 24)).toBe('GET /x HTTP/1.0\r\n\r\n');
    const g = audg(50);
    expect(g.toString('latin1', 2, 6)).toBe('audg');
    expect(g.readUInt32BE(6 + 10)).toBe(65536);
    expect(volumeToGain(0)).toBe(0);
    expect(volumeToGain(30)).toBe(Math.round(65536 * 10 ** (-20 / 20)));
  });
});

describe('Squeezebox driver configuration', () => {
  test('defaults: port 3483, discovery on; --slimproto-port and --no-slimproto-discovery map onto the part', () => {
    expect(SqueezeboxConfigSchema.parse({})).toMatchObject({ port: 3483, discovery: true, maxConnections: 64 });
    expect(squeezeboxDriver.flags!.toConfig({ slimprotoPort: 3484, slimprotoDiscovery: false })).toEqual({
      part: { port: 3484, discovery: false },
      labels: { port: '--slimproto-port', discovery: '--no-slimproto-discovery' },
    });
    expect(squeezeboxDriver.flags!.toConfig({ slimprotoDiscovery: true })).toEqual({ part: {}, labels: {} });
  });

  test('the driver runs when named; its part alone does not turn it on', () => {
    expect(parseConfig({ drivers: ['squeezebox'] }).drivers).toEqual(['squeezebox']);
    expect(parseConfig({ squeezebox: { port: 3484 } }).drivers).not.toContain('squeezebox');
    expect(() => SqueezeboxConfigSchema.parse({ port: 0 })).toThrow();
  });
});

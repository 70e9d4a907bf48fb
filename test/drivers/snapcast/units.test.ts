import { parseConfig } from '../../../src/hub-config';
import { hubVolume, snapVolume, snapcastDeviceId } from '../../../src/drivers/snapcast';
import { parseHostPort, resolveServers, SnapcastConfigSchema } from '../../../src/drivers/snapcast/config';
import { parseSampleFormat, safeUrl } from '../../../src/drivers/snapcast/feeder';
import { parseNotification, readServerAnswer, ServerModel, type Notification, type RawServer } from '../../../src/drivers/snapcast/model';
import { describeClient } from '../../../src/drivers/snapcast/client-speaker';
import { parseSource } from '../../../src/drivers/snapcast/sink';

describe('snapcast config', () => {
  test('servers are host[:port] strings or objects; defaults fill the rest', () => {
    const config = SnapcastConfigSchema.parse({
      servers: [
        'living.local',
        '10.0.0.5:1800',
        {
          address: '[fd00::1]',
          stream: 'Hub',
          source: 'pipe:///tmp/snapfifo',
          bufferMs: 600,
          announceStream: 'Announce',
          zoneStreams: ['Hub2', 'Hub', 'Hub2', 'Announce', 'Hub3'],
          clientStreams: ['Client1', 'Hub2', 'Client1', 'Hub', 'Client2'],
        },
      ],
      idleStream: 'Quiet',
    });
    expect(resolveServers(config)).toEqual([
      {
        address: 'living.local:1705',
        host: 'living.local',
        port: 1705,
        stream: 'SpeakerHub',
        source: undefined,
        idleStream: 'Quiet',
        bufferMs: 1000,
        announceStream: 'SpeakerHubAnnounce',
        zoneStreams: ['SpeakerHub2', 'SpeakerHub3', 'SpeakerHub4'],
        clientStreams: ['SpeakerHubClient1', 'SpeakerHubClient2', 'SpeakerHubClient3', 'SpeakerHubClient4'],
      },
      {
        address: '10.0.0.5:1800',
        host: '10.0.0.5',
        port: 1800,
        stream: 'SpeakerHub',
        source: undefined,
        idleStream: 'Quiet',
        bufferMs: 1000,
        announceStream: 'SpeakerHubAnnounce',
        zoneStreams: ['SpeakerHub2', 'SpeakerHub3', 'SpeakerHub4'],
        clientStreams: ['SpeakerHubClient1', 'SpeakerHubClient2', 'SpeakerHubClient3', 'SpeakerHubClient4'],
      },
      {
        address: '[fd00::1]:1705',
        host: 'fd00::1',
        port: 1705,
        stream: 'Hub',
        source: 'pipe:///tmp/snapfifo',
        idleStream: 'Quiet',
        bufferMs: 600,
        announceStream: 'Announce',
        // Each once, never the music's first stream nor the announcements'.
        zoneStreams: ['Hub2', 'Hub3'],
        // Each once, none of the streams above.
        clientStreams: ['Client1', 'Client2'],
      },
    ]);
  });

  test('the hub config accepts the snapcast section and names bad keys', () => {
    const c = parseConfig({ drivers: ['snapcast'], snapcast: { servers: ['127.0.0.1:1705'] } });
    expect(c.snapcast.servers).toEqual(['127.0.0.1:1705']);
    // Unset: Snapcast runs the hub's media.ffmpegPath.
    expect(c.snapcast.ffmpegPath).toBeUndefined();
    expect(c.media.ffmpegPath).toBe('ffmpeg');
    expect(() => parseConfig({ snapcast: { servers: [{ address: 'x', source: 'http://x' }] } })).toThrow(/snapcast\.servers\.0/);
    expect(() => parseConfig({ snapcast: { sever: [] } })).toThrow(/snapcast\.sever: unknown key/);
    expect(() => parseHostPort('host:99999', 1705)).toThrow(/bad port/);
  });

  test('sources and sample formats', () => {
    expect(parseSource('tcp://192.168.1.2:4953')).toEqual({ kind: 'tcp', host: '192.168.1.2', port: 4953 });
    expect(parseSource('tcp://snap.local')).toEqual({ kind: 'tcp', host: 'snap.local', port: 4953 });
    expect(parseSource('pipe:///tmp/snapfifo')).toEqual({ kind: 'pipe', path: '/tmp/snapfifo' });
    expect(parseSampleFormat('48000:16:2')).toEqual({ rate: 48000, bits: 16, channels: 2 });
    expect(() => parseSampleFormat('44100:24:2')).toThrow(/only 16 and 32 bit/);
  });
});

describe('snapcast volume mapping (hub 0–50, snapcast percent + mute)', () => {
  test('percent halves, rounding half up; muted reads 0', () => {
    expect(hubVolume({ percent: 100, muted: false })).toBe(50);
    expect(hubVolume({ percent: 47, muted: false })).toBe(24);
    expect(hubVolume({ percent: 1, muted: false })).toBe(1);
    expect(hubVolume({ percent: 0, muted: false })).toBe(0);
    expect(hubVolume({ percent: 80, muted: true })).toBe(0);
  });
  test('0 mutes without touching the percent; anything else unmutes at twice the value, clamped', () => {
    expect(snapVolume(0)).toEqual({ muted: true });
    expect(snapVolume(23)).toEqual({ percent: 46, muted: false });
    expect(snapVolume(80)).toEqual({ percent: 100, muted: false });
    expect(snapVolume(-3)).toEqual({ muted: true });
  });
});

describe('snapcast identities and redaction', () => {
  test('DeviceIDs are 14 digits, stable, distinct per server and client', () => {
    const a = snapcastDeviceId('10.0.0.5:1705', 'kitchen');
    expect(a).toMatch(/^[1-9]\d{13}$/);
    expect(snapcastDeviceId('10.0.0.5:1705', 'kitchen')).toBe(a);
    expect(snapcastDeviceId('10.0.0.6:1705', 'kitchen')).not.toBe(a);
    expect(snapcastDeviceId('10.0.0.5:1705', 'office')).not.toBe(a);
  });
  test('media capability ids never reach logs or error texts', () => {
    expect(safeUrl('http://10.0.0.2:8091/media/AbCdEfGhIjKlMnOpQrStUv/song.mp3')).toBe('http://10.0.0.2:8091/media/[redacted]/song.mp3');
    expect(safeUrl('http://radio.example/stream?token=secret')).toBe('http://radio.example/stream?token=[redacted]');
  });
});

describe('snapcast server model', () => {
  const client = (id: string, connected = true) => ({
    id,
    connected,
    config: { name: '', volume: { percent: 50, muted: false } },
    host: { name: id, ip: '127.0.0.1', mac: '00:00:00:00:00:00' },
  });
  const status = (): RawServer => ({
    groups: [
      { id: 'g1', name: '', stream_id: 'Idle', muted: false, clients: [client('a'), client('b')] },
      { id: 'g2', name: 'Office', stream_id: 'Hub', muted: false, clients: [client('c', false)] },
    ],
    streams: [],
  });
  const parse = (method: string, params: unknown): Notification => {
    const n = parseNotification(method, params);
    if (!n) throw new Error(`${method} is not followed`);
    return n;
  };

  test('notifications update clients and placement; unknown clients ask for a full status', () => {
    const m = new ServerModel();
    m.applyServer(status());
    expect(m.groupOf('c')?.name).toBe('Office');
    let ch = m.applyNotification(parse('Client.OnVolumeChanged', { id: 'a', volume: { percent: 20, muted: true } }));
    expect([...ch.clients]).toEqual(['a']);
    expect(m.clients.get('a')!.config.volume).toEqual({ percent: 20, muted: true });
    ch = m.applyNotification(parse('Group.OnStreamChanged', { id: 'g1', stream_id: 'Hub' }));
    expect([...ch.placement].sort()).toEqual(['a', 'b']);
    ch = m.applyNotification(parse('Client.OnConnect', { id: 'z', client: client('z') }));
    expect(ch.unknown).toBe(true);
    // One the model does not follow is not parsed at all.
    expect(parseNotification('Stream.OnProperties', { id: 'Hub', properties: {} })).toBeUndefined();
  });

  test('snapserver input of the wrong shape is a clear error, not a crash later', () => {
    expect(() => parse('Client.OnVolumeChanged', { id: 'a', volume: { percent: 'loud' } })).toThrow(/percent/);
    expect(() => parse('Group.OnStreamChanged', { id: 'g1' })).toThrow(/stream_id/);
    expect(() => parse('Server.OnUpdate', null)).toThrow();
    expect(() => readServerAnswer({ server: { groups: [{ id: 'g', stream_id: 'Hub', clients: [{ id: 'x' }] }] } })).toThrow(/connected/);
    // Fields the driver does not use are dropped; missing optional ones get defaults.
    const s = readServerAnswer({
      server: { groups: [{ id: 'g', stream_id: 'Hub', clients: [{ ...client('x'), lastSeen: { sec: 1 } }] }], extra: 1 },
    });
    expect(s.groups[0]).toEqual({ id: 'g', name: '', stream_id: 'Hub', muted: false, clients: [client('x')] });
    expect(s.streams).toEqual([]);
  });

  test('a speaker is named by its snapcast name, else its client id, never the shared host name', () => {
    const c = (id: string, name = '') => ({
      ...client(id),
      config: { name, volume: { percent: 50, muted: false } },
      host: { name: 'vm', ip: '', mac: '' },
    });
    const names = ['one', 'two', 'three'].map((id) => describeClient('127.0.0.1:1705', c(id), undefined, '0.26.0').name);
    expect(names).toEqual(['one', 'two', 'three']);
    expect(describeClient('127.0.0.1:1705', c('one', 'Kitchen'), undefined, '0.26.0').name).toBe('Kitchen');
  });

  test('a full status drops clients it no longer lists', () => {
    const m = new ServerModel();
    m.applyServer(status());
    const next = status();
    next.groups.pop();
    const ch = m.applyServer(next);
    expect([...ch.removed]).toEqual(['c']);
    expect(ch.placement.size).toBe(0);
  });
});

describe('snapcast reconnect backoff', () => {
  const { reconnectDelay } =
    require('../../../src/drivers/snapcast/server-connection') as typeof import('../../../src/drivers/snapcast/server-connection');

  /** Clock ms of the first connection attempt at or after `backAt`, for an outage starting at 0. */
  function firstAttemptAfter(backAt: number, min = 250, max = 10_000): { at: number; attempts: number } {
    let t = 0;
    let attempts = 1;
    while (t < backAt) {
      t += reconnectDelay(t, min, max);
      attempts++;
    }
    return { at: t, attempts };
  }

  test('an 8 s outage costs at most a quarter more (not the 7.5 s of a doubling backoff), in few attempts', () => {
    const { at, attempts } = firstAttemptAfter(8000);
    expect(at).toBeLessThanOrEqual(8000 * 1.25);
    expect(attempts).toBeLessThan(20);
  });

  test('short outages retry at the minimum delay; long ones thin out to the maximum', () => {
    expect(reconnectDelay(0, 250, 10_000)).toBe(250);
    expect(reconnectDelay(600, 250, 10_000)).toBe(250);
    expect(reconnectDelay(8000, 250, 10_000)).toBe(2000);
    expect(reconnectDelay(3_600_000, 250, 10_000)).toBe(10_000);
    // An hour-long outage: about one attempt per reconnectMaxMs, not a flood.
    expect(firstAttemptAfter(3_600_000).attempts).toBeLessThan(400);
  });
});

/**
 * The client-stream pool's rules and the closing pad (issue 30), without a snapserver: the lab
 * test (client-streams.lab.test.ts) shows what they do on real snapclients.
 */
import { createLogger } from '../../../src/logger';
import { ClientStreamPool, type RouteAsk } from '../../../src/drivers/snapcast/client-streams';
import { resolveServers, SnapcastConfigSchema } from '../../../src/drivers/snapcast/config';
import { parseSampleFormat } from '../../../src/drivers/snapcast/feeder';
import { closingPad } from '../../../src/drivers/snapcast/in-step';
import { ServerModel, type RawServer } from '../../../src/drivers/snapcast/model';

const stream = (id: string, port: number, sampleformat = '48000:16:2') => ({
  id,
  status: 'idle',
  uri: { raw: '', scheme: 'tcp', host: `127.0.0.1:${port}`, path: '', query: { name: id, mode: 'server', sampleformat } },
});

function pool(declared: string[], format?: string) {
  const [server] = resolveServers(SnapcastConfigSchema.parse({ servers: ['127.0.0.1'], clientStreams: ['C1', 'C2', 'C3'] }));
  const model = new ServerModel();
  const raw: RawServer = {
    groups: [],
    streams: [stream('SpeakerHub', 4953), ...declared.map((id, i) => stream(id, 4971 + i, id === 'C2' ? format : undefined))],
  };
  model.applyServer(raw);
  return new ClientStreamPool(server, model, createLogger({ level: 'silent' }));
}

const ask = (listening: string[], o: Partial<RouteAsk> = {}): RouteAsk => ({
  members: new Set(listening),
  listening,
  onZoneStream: () => false,
  format: '48000:16:2',
  starting: true,
  ...o,
});

describe('client streams', () => {
  test('a starting zone keeps one client on its stream and gives each other one a client stream while any is free', () => {
    const p = pool(['C1', 'C2']);
    const zone = {};
    expect([...p.routes(zone, ask(['a', 'b', 'c', 'd']))]).toEqual([
      ['b', 'C1'],
      ['c', 'C2'],
    ]);
    // Kept while they listen, whatever else changes.
    expect([...p.routes(zone, ask(['a', 'b', 'c', 'd'], { starting: false }))]).toEqual([
      ['b', 'C1'],
      ['c', 'C2'],
    ]);
  });

  test('a client already on the zone stream stays there; one alone gets none; undeclared and other-format streams are skipped', () => {
    expect([...pool(['C1']).routes({}, ask(['a', 'b'], { onZoneStream: (id) => id === 'b' }))]).toEqual([['a', 'C1']]);
    expect([...pool(['C1']).routes({}, ask(['a']))]).toEqual([]);
    expect([...pool(['C2', 'C3'], '44100:16:2').routes({}, ask(['a', 'b', 'c']))]).toEqual([['b', 'C3']]);
  });

  test('none to a client joining a running feed; given back when a client stops listening, and taken again at the next start', () => {
    const p = pool(['C1']);
    const zone = {};
    expect([...p.routes(zone, ask(['a', 'b'], { starting: false }))]).toEqual([]);
    expect([...p.routes(zone, ask(['a', 'b']))]).toEqual([['b', 'C1']]);
    expect([...p.routes(zone, ask(['a'], { members: new Set(['a', 'b']), starting: false }))]).toEqual([]);
    expect(p.streamOf('b')).toBeUndefined();
    // Another zone gets it now; this one's clients share its stream.
    expect([...p.routes({}, ask(['x', 'y']))]).toEqual([['y', 'C1']]);
    expect([...p.routes(zone, ask(['a', 'b']))]).toEqual([]);
    p.releaseAll(zone);
  });

  test('the stream read out longest ago is given first, and readyAt says when snapserver takes a new connection', () => {
    const p = pool(['C1', 'C2']);
    const before = performance.now();
    p.closed('C1', 100, {});
    expect(p.readyAt('C1')).toBeGreaterThanOrEqual(before + 100);
    expect(p.readyAt('C2')).toBe(0);
    expect([...p.routes({}, ask(['a', 'b']))]).toEqual([['b', 'C2']]);
  });

  test('streams one feed stop closed together go on at once while snapserver still reads them; not past that, nor with another history', () => {
    const p = pool(['C1', 'C2']);
    const paused = {};
    const now = performance.now();
    for (const s of ['SpeakerHub', 'C1']) p.closed(s, 300, paused);
    expect(p.continuesInStep(['SpeakerHub', 'C1'], now)).toBe(true);
    // Within a read chunk of the end, or past it: snapserver may have taken up the next connection afresh.
    expect(p.continuesInStep(['SpeakerHub', 'C1'], now + 290)).toBe(false);
    // A stream never fed, one closed by another feed, or with other PCM left in it: not in step with the rest.
    expect(p.continuesInStep(['SpeakerHub', 'C2'], now)).toBe(false);
    p.closed('C2', 300, {});
    expect(p.continuesInStep(['SpeakerHub', 'C1', 'C2'], now)).toBe(false);
    p.closed('C2', 420, paused);
    expect(p.continuesInStep(['SpeakerHub', 'C2'], now)).toBe(false);
    expect(p.continuesInStep([], now)).toBe(false);
  });

  test('a connection closes on whole 20 ms chunks and flac blocks: 5760 frames at 48 kHz', () => {
    const f = parseSampleFormat('48000:16:2');
    expect(closingPad(f, 0).length).toBe(0);
    expect(closingPad(f, 4).length).toBe(5760 * 4 - 4);
    expect(closingPad(f, 5760 * 4 * 3).length).toBe(0);
    // 44.1 kHz: the common multiple would be seconds long; whole 20 ms chunks only.
    expect(closingPad(parseSampleFormat('44100:16:2'), 4).length).toBe(882 * 4 - 4);
  });
});

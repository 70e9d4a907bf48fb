/**
 * Hostile AirPlay (RAOP) receivers (issue 32 items 3 and 12): fake receivers on 127.0.0.1 that
 * answer SETUP with ports out of range, send endless headers or answers nobody asked for, or
 * stay silent, next to a well-behaved one, against a real hub in a child process. The hub must
 * stay up and responsive, fail plays on them with a clear error, keep them inactive (whatever
 * the reachability probe says), keep playing to the good receiver, and stop on SIGTERM.
 */
import { spawnSync } from 'node:child_process';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { ensureBuilt } from '../../helpers/cli';
import { devicesByName, startChildHub, type ChildHub } from '../../helpers/child-hub';
import { labSuite } from '../../helpers/labs';

jest.setTimeout(90_000);

const describeIf = labSuite(
  'the hostile AirPlay receivers',
  spawnSync('sh', ['-c', 'command -v ffmpeg']).status === 0 ? undefined : 'ffmpeg is missing',
);

interface Request {
  method: string;
  cseq: string;
}

interface FakeRaop {
  port: number;
  /** TCP connections (the hub's probe connects and closes without a request). */
  connections: number;
  requests: string[];
  /** RTP packets received on its audio port (good receiver only). */
  packets: number;
  close(): Promise<void>;
}

type Behaviour = (req: Request, s: Socket, fake: FakeRaop, ports: { audio: number; control: number; timing: number }) => void;

function reply(s: Socket, req: Request, headers: Record<string, string> = {}): void {
  const h = Object.entries({ CSeq: req.cseq, Server: 'AirTunes/105.1', ...headers })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  s.write(`RTSP/1.0 200 OK\r\n${h}\r\n`);
}

/** A receiver that answers every request as shairport-sync does, except where `behaviour` says otherwise. */
const wellBehaved: Behaviour = (req, s, _fake, p) => {
  if (req.method === 'SETUP') {
    reply(s, req, {
      Transport: `RTP/AVP/UDP;unicast;mode=record;server_port=${p.audio};control_port=${p.control};timing_port=${p.timing}`,
      Session: '1',
    });
  } else if (req.method === 'RECORD') reply(s, req, { 'Audio-Latency': '11025' });
  else reply(s, req);
};

async function fakeRaop(behaviour: Behaviour): Promise<FakeRaop> {
  const sockets = new Set<Socket>();
  const udp: UdpSocket[] = [];
  const fake: FakeRaop = { port: 0, connections: 0, requests: [], packets: 0, close: async () => undefined };
  const bindUdp = () =>
    new Promise<number>((resolve) => {
      const u = createSocket('udp4');
      udp.push(u);
      u.on('message', () => udp[0] === u && fake.packets++);
      u.bind(0, '127.0.0.1', () => resolve(u.address().port));
    });
  const ports = { audio: await bindUdp(), control: await bindUdp(), timing: await bindUdp() };
  const server: Server = createServer((s) => {
    fake.connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    let buf = '';
    s.setEncoding('latin1');
    s.on('data', (d: string) => {
      buf += d;
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.slice(0, end);
        const len = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length < end + 4 + len) return;
        buf = buf.slice(end + 4 + len);
        const req = { method: head.split(' ')[0], cseq: /cseq: (\d+)/i.exec(head)?.[1] ?? '0' };
        fake.requests.push(req.method);
        if (!s.destroyed) behaviour(req, s, fake, ports);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.port = (server.address() as AddressInfo).port;
  fake.close = async () => {
    for (const s of sockets) s.destroy();
    for (const u of udp) u.close();
    await new Promise((r) => server.close(r));
  };
  return fake;
}

/** SETUP answered with `transport` (ports filled in by `fill`), everything else well-behaved. */
const badSetup =
  (fill: (p: { audio: number; control: number; timing: number }) => string): Behaviour =>
  (req, s, fake, p) =>
    req.method === 'SETUP' ? reply(s, req, { Transport: `RTP/AVP/UDP;unicast;mode=record;${fill(p)}`, Session: '1' }) : wellBehaved(req, s, fake, p);

describeIf('hostile AirPlay receivers against a real hub (child process)', () => {
  const fakes: Record<string, FakeRaop> = {};
  let hub: ChildHub;
  let mediaId = '';

  /** Waits until check() holds; the hub must stay alive and answer /healthz within 2 s on every round. */
  async function whileHealthy(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      if (!hub.alive()) throw new Error(`the hub died while waiting for ${what}:\n${hub.cli.stderr().slice(-2000)}`);
      await hub.health(2000);
      if (await check()) return;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const active = async (name: string) => (await devicesByName(hub))[name]?.Active === true;

  beforeAll(async () => {
    await ensureBuilt();
    fakes.good = await fakeRaop(wellBehaved);
    // Item 3: ports out of range in the SETUP answer.
    fakes.badServerPort = await fakeRaop(badSetup((p) => `server_port=99999;control_port=${p.control};timing_port=${p.timing}`));
    fakes.badControlPort = await fakeRaop(badSetup((p) => `server_port=${p.audio};control_port=70000;timing_port=${p.timing}`));
    fakes.badTimingPort = await fakeRaop(badSetup((p) => `server_port=${p.audio};control_port=${p.control};timing_port=1e3`));
    // A head that never ends.
    fakes.hugeHeaders = await fakeRaop((_req, s) => {
      s.write('RTSP/1.0 200 OK\r\n');
      const t = setInterval(() => (s.destroyed ? clearInterval(t) : s.write(`X-Junk: ${'j'.repeat(1000)}\r\n`)), 2);
      s.on('close', () => clearInterval(t));
    });
    // Two answers to one request.
    fakes.extraAnswer = await fakeRaop((req, s, fake, p) => {
      wellBehaved(req, s, fake, p);
      if (req.method === 'OPTIONS') wellBehaved(req, s, fake, p);
    });
    // Accepts the connection, never answers.
    fakes.silent = await fakeRaop(() => undefined);
    hub = await startChildHub({
      drivers: ['airplay'],
      airplay: {
        receivers: Object.entries(fakes).map(([name, f]) => ({ host: '127.0.0.1', port: f.port, name })),
        requestTimeoutMs: 1000,
        latencyMs: 500,
      },
    });
    mediaId = (await hub.op('media_list')).MediaList[0].PersistentID;
    // The probe (a TCP connect) finds them all reachable: before any play, all are active.
    await whileHealthy('every receiver active', async () => Object.values(await devicesByName(hub)).filter((d) => d.Active).length === 7);
  });

  afterAll(async () => {
    hub?.cleanup();
    await Promise.all(Object.values(fakes).map((f) => f.close()));
  });

  test('a play on a receiver whose SETUP names a bad port fails with a clear error, and the receiver goes inactive', async () => {
    const id = (await devicesByName(hub)).badServerPort.DeviceID;
    const r = await hub.op('play_hub_media_selected_speakers', { PersistentID: mediaId, DeviceIDList: id });
    expect(r.Result).toBe('false');
    expect(r.ErrorMessage).toMatch(/bad server_port/);
    await whileHealthy('badServerPort inactive', async () => !(await active('badServerPort')));
  });

  test('a party play with hostile receivers plays on the good one; the hub stays up; the hostile ones stay inactive', async () => {
    const before = Object.fromEntries(Object.entries(fakes).map(([n, f]) => [n, f.requests.length]));
    const r = await hub.op('play_hub_media_party_mode', { PersistentID: mediaId });
    expect(r.Result).toBe('true');
    // Every receiver that was still active got the handshake (and failed it its own way).
    for (const name of ['badControlPort', 'badTimingPort', 'hugeHeaders', 'extraAnswer', 'silent']) {
      expect([name, fakes[name].requests.length > before[name]]).toEqual([name, true]);
    }
    // Audio flows to the good receiver: the pacing timers run (where a bad port used to throw).
    await whileHealthy('audio packets at the good receiver', () => fakes.good.packets >= 100);
    const hostile = ['badServerPort', 'badControlPort', 'badTimingPort', 'hugeHeaders', 'extraAnswer', 'silent'];
    await whileHealthy('every hostile receiver inactive', async () => {
      const d = await devicesByName(hub);
      return hostile.every((n) => d[n].Active === false) && d.good.Active === true;
    });
    // The probe has reached each of them again since (a connection without a request), and they are still inactive.
    const conns = Object.fromEntries(hostile.map((n) => [n, fakes[n].connections]));
    await whileHealthy('a probe round on every hostile receiver', () => hostile.every((n) => fakes[n].connections > conns[n]), 15_000);
    const d = await devicesByName(hub);
    for (const n of hostile) expect([n, d[n].Active]).toEqual([n, false]);
    const text = hub.logs().join('\n');
    for (const why of ['bad control_port', 'bad timing_port', 'response head too long', 'an answer nobody asked for', 'no answer within']) {
      expect([why, text.includes(why)]).toEqual([why, true]);
    }
    expect((await hub.op('stop_play')).Result).toBe('true');
    await whileHealthy('the good receiver torn down', () => fakes.good.requests.includes('TEARDOWN'));
  });

  test('the hub stops on SIGTERM', async () => {
    expect(await hub.stop()).toEqual({ code: 0, signal: null });
  });
});

/**
 * Hostile SlimProto clients (issue 32 item 7, issue 31 item 7) against a real hub in a child
 * process, beside a real squeezelite. Each attacker connects from its own loopback address
 * (127.0.0.x: a host of its own as far as the hub can tell). The hub must keep answering
 * /healthz promptly, keep the real player its own (not displaced, not renamed, able to play),
 * let a restarting real player back in during a flood, and stop on SIGTERM.
 */
import { connect, type Socket } from 'node:net';
import { ensureBuilt } from '../../helpers/cli';
import { devicesByName, startChildHub, type ChildHub } from '../../helpers/child-hub';
import { fileSize, freePort, loudness, squeezeliteInstalled, SqueezelitePlayer } from './harness';

jest.setTimeout(180_000);

const missing = squeezeliteInstalled();
const describeLab = missing ? describe.skip : describe;
if (missing) console.warn(`test/drivers/squeezebox/hostile.lab.test.ts skipped: ${missing} (scripts/install-test-deps.sh installs it)`);

const REAL_MAC = '02:00:00:5c:00:01';
const STAT_TIMEOUT_MS = 3000;

function frame(opcode: string, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.write(opcode, 0, 'latin1');
  head.writeUInt32BE(body.length, 4);
  return Buffer.concat([head, body]);
}

function helo(mac: string): Buffer {
  const b = Buffer.alloc(36);
  b[0] = 12;
  Buffer.from(mac.split(':').map((x) => parseInt(x, 16))).copy(b, 2);
  return frame('HELO', Buffer.concat([b, Buffer.from('Model=squeezelite,ModelName=SqueezeLite,pcm')]));
}

/** A STMt as squeezelite answers `strm t` (53 bytes; the fields the hub reads are zero but the event). */
function stmt(): Buffer {
  const b = Buffer.alloc(53);
  b.write('STMt', 0, 'latin1');
  return frame('STAT', b);
}

function setdName(name: string): Buffer {
  return frame('SETD', Buffer.concat([Buffer.from([0]), Buffer.from(`${name}\0`)]));
}

interface Fake {
  sock: Socket;
  closed: Promise<void>;
  isClosed: boolean;
}

/**
 * A hostile client from `from` (a loopback address): says HELO with `mac`; with `answer`, it
 * answers every server frame with a STMt (an impostor that looks alive), else it stays silent.
 */
function fake(port: number, from: string, mac: string, answer: boolean | (() => boolean), extra?: Buffer): Promise<Fake> {
  return new Promise((resolve) => {
    const sock = connect({ host: '127.0.0.1', port, localAddress: from });
    const f: Fake = { sock, closed: new Promise<void>((r) => sock.once('close', () => r())), isClosed: false };
    sock.on('error', () => undefined);
    sock.once('connect', () => {
      sock.write(helo(mac));
      if (extra) sock.write(extra);
      resolve(f);
    });
    const answers = typeof answer === 'function' ? answer : () => answer;
    if (answer) sock.on('data', () => answers() && sock.writable && sock.write(stmt()));
    else sock.resume();
    sock.once('close', () => {
      f.isClosed = true;
      resolve(f);
    });
  });
}

/** A made-up MAC (locally administered, 02:ee:…), distinct for each i. */
function randomMac(i: number): string {
  const hex = (n: number) => n.toString(16).padStart(2, '0');
  return `02:ee:${hex((i >> 16) & 255)}:${hex((i >> 8) & 255)}:${hex(i & 255)}:42`;
}

/** Whether the hub logged that this MAC connected as a player. */
const admitted = (hub: ChildHub, mac: string) => hub.logs().some((l) => l.includes(`player ${mac} connected`));

describeLab('hostile SlimProto clients against a real hub (child process) beside a real squeezelite', () => {
  let hub: ChildHub;
  let port: number;
  let player: SqueezelitePlayer;
  const stopFlags: { stop: boolean }[] = [];

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

  /** Runs `attack` again and again (one at a time) until stopped: a client that keeps coming back. */
  function keepAttacking(attack: () => Promise<unknown>): { stop: boolean } {
    const flag = { stop: false };
    stopFlags.push(flag);
    void (async () => {
      while (!flag.stop) await attack().catch(() => new Promise((r) => setTimeout(r, 50)));
    })();
    return flag;
  }

  const real = async () => (await devicesByName(hub)).Kitchen;

  async function playsTone(): Promise<void> {
    const id = (await real()).DeviceID;
    const pids = Object.fromEntries(((await hub.op('media_list')).MediaList as any[]).map((m) => [m.Title, m.PersistentID]));
    const pid = Object.values(pids)[0] as string;
    expect((await hub.op('set_volume_device', { DeviceID: id, Volume: '50' })).Result).toBe('true');
    const from = fileSize(player.out);
    const res = await hub.op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: id });
    expect(res).toMatchObject({ Result: 'true' });
    try {
      await whileHealthy('the real player to sound', () => fileSize(player.out) > from + 44100 * 8 && loudness(player.out, from) > 1500, 20_000);
    } catch (e) {
      throw new Error(
        `${(e as Error).message} (size ${fileSize(player.out) - from}, level ${loudness(player.out, from)})\nsqueezelite: ${player.stderr.slice(-1500)}\nhub: ${hub.logs().slice(-15).join('\n')}`,
      );
    }
    await hub.op('stop_play');
  }

  beforeAll(async () => {
    await ensureBuilt();
    port = await freePort();
    hub = await startChildHub({
      drivers: ['squeezebox'],
      squeezebox: { port, host: '127.0.0.1', discovery: false, heloTimeoutMs: 2000, statTimeoutMs: STAT_TIMEOUT_MS },
    });
    player = await SqueezelitePlayer.create('Kitchen', REAL_MAC, port);
    await player.start();
    await whileHealthy('the real squeezelite as a speaker', async () => (await real())?.Active === true);
  });

  afterAll(async () => {
    for (const f of stopFlags) f.stop = true;
    await player?.destroy();
    hub?.cleanup();
  });

  test('the banner log says SlimProto takes no token', () => {
    expect(hub.logs().some((l) => l.includes('SlimProto takes no API token') && l.includes('squeezebox.allow'))).toBe(true);
  });

  test("a client reusing the real player's MAC (and trying to rename it) is refused, logged once; the real player keeps its speaker and plays", async () => {
    let attempts = 0;
    const attack = keepAttacking(async () => {
      attempts++;
      const f = await fake(port, '127.0.0.2', REAL_MAC, true, setdName('Hijacked'));
      await f.closed;
    });
    try {
      await whileHealthy('10 takeover attempts', () => attempts >= 10, 60_000);
      const k = await real();
      expect(k).toBeDefined();
      expect(k.Active).toBe(true);
      expect(k.IPAddress).toBe('127.0.0.1');
      expect((await devicesByName(hub)).Hijacked).toBeUndefined();
      const claimed = hub.logs().filter((l) => l.includes(`MAC ${REAL_MAC} is claimed by a second connection`));
      expect(claimed).toHaveLength(1);
      expect(claimed[0]).toContain('squeezelite -m');
      expect(claimed[0]).toContain('00:04:20');
      // The real player never left: no disconnect line for it.
      expect(hub.logs().some((l) => l.includes('Kitchen disconnected'))).toBe(false);
      await playsTone();
    } finally {
      attack.stop = true;
    }
  });

  test('300 HELOs with random MACs from one host: capped per address; silent ones never become speakers', async () => {
    const answering = Array.from({ length: 300 }, (_, i) => i);
    for (let i = 0; i < answering.length; i += 20) {
      const batch = await Promise.all(answering.slice(i, i + 20).map((k) => fake(port, '127.0.0.3', randomMac(k), true)));
      // Each is admitted (its STAT answered the probe) or refused (closed by the hub).
      await whileHealthy('the batch handled', () => batch.every((f, j) => f.isClosed || admitted(hub, randomMac(i + j))));
      for (const f of batch) f.sock.destroy();
    }
    const silent = await Promise.all(Array.from({ length: 8 }, (_, k) => fake(port, '127.0.0.6', randomMac(1000 + k), false)));
    await whileHealthy('the silent HELOs dropped', () => silent.every((f) => f.isClosed), 20_000);
    const list: any[] = (await hub.op('device_list')).DeviceList;
    expect(list.filter((d) => d.IPAddress === '127.0.0.3').length).toBeLessThanOrEqual(16);
    expect(list.filter((d) => d.IPAddress === '127.0.0.6')).toHaveLength(0);
    expect(hub.logs().some((l) => l.includes('maxPlayersPerAddress'))).toBe(true);
    expect(hub.logs().some((l) => l.includes('no STAT within'))).toBe(true);
  });

  test('random MACs from many hosts fill the table: the longest-offline are forgotten, and a new real player still gets in', async () => {
    for (let i = 0; i < 300; i += 25) {
      const batch = await Promise.all(
        Array.from({ length: 25 }, (_, j) => i + j).map((k) => fake(port, `127.0.${10 + (k >> 7)}.${(k & 127) + 1}`, randomMac(5000 + k), true)),
      );
      // Each becomes a player (its STAT answered the probe), then goes offline.
      await whileHealthy('the batch admitted', () => batch.every((_, j) => admitted(hub, randomMac(5000 + i + j))));
      for (const f of batch) f.sock.destroy();
    }
    await whileHealthy('the table bounded', async () => ((await hub.op('device_list')).DeviceList as any[]).length <= 256);
    expect(hub.logs().some((l) => l.includes('forgotten (offline the longest'))).toBe(true);
    const second = await SqueezelitePlayer.create('Garden', '02:00:00:5c:00:02', port);
    try {
      await second.start();
      await whileHealthy('a new real player admitted into a full table', async () => (await devicesByName(hub)).Garden?.Active === true);
    } finally {
      await second.destroy();
    }
    expect((await real()).Active).toBe(true);
  });

  test('idle HELO connections from one host (kept coming back) do not lock a restarting real player out', async () => {
    const idle: Fake[] = [];
    const flood = keepAttacking(async () => {
      const f = await fake(port, '127.0.0.4', randomMac(9000 + idle.length), false);
      idle.push(f);
      if (idle.length > 200) idle.splice(0, 100);
      await new Promise((r) => setTimeout(r, 20));
    });
    await whileHealthy('the idle flood refused per address', () => hub.logs().some((l) => l.includes('from that address are open already')));
    await player.kill();
    await whileHealthy('the real player offline', async () => (await real())?.Active === false);
    const t0 = Date.now();
    await player.start();
    await whileHealthy('the real player back', async () => (await real())?.Active === true, 20_000);
    console.log(`squeezebox hostile: the real player was back ${Date.now() - t0} ms after its restart, during an idle-HELO flood`);
    flood.stop = true;
    for (const f of idle) f.sock.destroy();
    await playsTone();
  });

  test('a player back after a network blip (its old connection half-dead) takes its speaker back', async () => {
    const mac = '02:00:00:5c:00:0b';
    let oldAnswers = true;
    const old = await fake(port, '127.0.0.7', mac, () => oldAnswers);
    await whileHealthy('the first connection a player', () => admitted(hub, mac));
    oldAnswers = false; // the socket stays open, nothing comes back: a half-dead connection
    const back = await fake(port, '127.0.0.8', mac, true);
    await whileHealthy('the reconnected player holding the MAC', async () => {
      const d = ((await hub.op('device_list')).DeviceList as any[]).find((x) => x.MacAddress === mac.toUpperCase());
      return d?.IPAddress === '127.0.0.8' && d.Active === true;
    });
    expect(hub.logs().some((l) => l.includes(`player ${mac} reconnected from 127.0.0.8`))).toBe(true);
    await whileHealthy('the half-dead connection closed', () => old.isClosed);
    back.sock.destroy();
  });

  test('the hub stops on SIGTERM', async () => {
    const exit = await hub.stop();
    expect(exit.code).toBe(0);
  });
});

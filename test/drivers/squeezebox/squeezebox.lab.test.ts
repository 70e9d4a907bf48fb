import { createSocket } from 'node:dgram';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createHub, type SpeakerHub } from '../../../src/hub';
import { createLogger } from '../../../src/logger';
import { labSuite } from '../../helpers/labs';
import { FRAME, fileSize, firstLoud, freePort, frequency, loudness, pulseWav, squeezeliteInstalled, SqueezelitePlayer, toneWav } from './harness';
import { eventually } from '../../helpers/wait';

const TOKEN = 'squeezebox-test-token-0123456789ab';
/** The tones peak at 12000 (RMS ~8500 at full volume); silence is 0. */
const AUDIBLE = 1500;

const describeIf = labSuite('the Squeezebox lab', squeezeliteInstalled());

describeIf('Squeezebox driver against three real squeezelite players', () => {
  let players: SqueezelitePlayer[] = [];
  let hub: SpeakerHub;
  let dataDir: string;
  let base: string;
  let session: string;
  let port: number;
  const logs: string[] = [];
  const pids: Record<string, string> = {};
  const ids: string[] = [];

  const op = async (name: string, params: Record<string, string> = {}): Promise<any> =>
    (
      await fetch(`${base}/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`, {
        headers: { Authorization: `Bearer ${TOKEN}` },
      })
    ).json();
  const device = async (id: string) => (await op('device_list')).DeviceList.find((d: any) => d.DeviceID === id);
  /** Waits for a tone of about `hz` in what the player played after byte `from`. */
  async function expectTone(p: SqueezelitePlayer, from: number, hz: number, timeoutMs = 10_000): Promise<void> {
    await eventually(
      () => loudness(p.out, from) > AUDIBLE && fileSize(p.out) - from > 44100 * 4 && Math.abs(frequency(p.out, 0.3) - hz) < hz * 0.05,
      timeoutMs,
      () =>
        `a ${hz} Hz tone from ${p.name} (last ${frequency(p.out, 0.3).toFixed(0)} Hz, level ${loudness(p.out, from).toFixed(0)})\n${p.stderr.slice(-1500)}`,
    );
  }

  beforeAll(async () => {
    port = await freePort();
    dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-squeezebox-hub-'));
    const mediaDir = join(dataDir, 'music');
    await mkdir(mediaDir);
    await writeFile(join(mediaDir, 'hub-tone.wav'), toneWav(40, 880, 'Hub Tone'));
    await writeFile(join(mediaDir, 'chime.wav'), toneWav(3, 660, 'Chime'));
    await writeFile(join(mediaDir, 'pulses.wav'), pulseWav(60, 1, 1, 'Pulses'));
    const logger = createLogger({
      level: 'debug',
      stream: new Writable({
        write(chunk, _enc, cb) {
          logs.push(String(chunk));
          if (logs.length > 5000) logs.splice(0, 1000);
          cb();
        },
      }),
    });
    hub = createHub(
      {
        dataDir,
        drivers: ['squeezebox'],
        speakers: { virtual: { count: 0 } },
        server: { host: '127.0.0.1', port: 0, token: TOKEN },
        media: { samples: false, folders: [mediaDir] },
        log: { level: 'debug' },
        squeezebox: {
          port,
          host: '127.0.0.1',
          heloTimeoutMs: 1000,
          maxConnections: 20,
          maxConnectionsPerAddress: 100,
          newConnectionsPerSecond: 10_000,
        },
      } as any,
      { logger },
    );
    await hub.start();
    base = hub.url!;
    session = (await (await fetch(`${base}/api/v1/init_session`, { headers: { Authorization: `Bearer ${TOKEN}` } })).json()).SessionToken;
    for (const m of (await op('media_list')).MediaList) pids[m.Title] = m.PersistentID;
    players = await Promise.all(
      ['Kitchen', 'Living Room', 'Garden'].map((name, i) => SqueezelitePlayer.create(name, `02:00:00:5b:00:0${i + 1}`, port)),
    );
    for (const p of players) await p.start();
  }, 60_000);

  afterAll(async () => {
    if (process.env.SQUEEZEBOX_TEST_LOGS) await writeFile(process.env.SQUEEZEBOX_TEST_LOGS, logs.join(''));
    await hub?.stop();
    await Promise.all(players.map((p) => p.destroy()));
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  test('each player that connects is a speaker: name from -n, a stable DeviceID from its MAC, model and firmware from HELO', async () => {
    await eventually(async () => (await op('device_list')).DeviceList.filter((d: any) => d.Active).length === 3, 15_000, 'three active players');
    await eventually(
      async () => (await op('device_list')).DeviceList.filter((d: any) => players.some((p) => p.name === d.DeviceName)).length === 3,
      5000,
      'names from -n',
    );
    const list = (await op('device_list')).DeviceList;
    for (const p of players) {
      const d = list.find((x: any) => x.DeviceName === p.name);
      expect(d).toMatchObject({ Active: true, ModelName: 'SqueezeLite', IPAddress: '127.0.0.1', MacAddress: p.mac.toUpperCase() });
      expect(d.DeviceID).toMatch(/^\d{14}$/);
      expect(d.Version).toMatch(/^v1\.9/);
      ids.push(d.DeviceID);
    }
    expect(new Set(ids).size).toBe(3);
  });

  test('hub media plays on a player (the captured tone), TimeElapsed comes from its reports', async () => {
    const p = players[0];
    const from = fileSize(p.out);
    expect((await op('set_volume_device', { DeviceID: ids[0], Volume: '50' })).Result).toBe('true');
    expect((await op('play_hub_media_selected_speakers', { PersistentID: pids['Hub Tone'], DeviceIDList: ids[0] })).Result).toBe('true');
    await expectTone(p, from, 880);
    // RMS of the 12000 tone, −3 dB for ffmpeg's mono → stereo centre mix: ~6000.
    expect(loudness(p.out, from)).toBeGreaterThan(5000);
    expect((await op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    expect((await device(ids[0])).IsPlaying).toBe(true);
    const t1 = Number((await op('playback_status')).TimeElapsed);
    await eventually(async () => Number((await op('playback_status')).TimeElapsed) > t1, 5000, 'TimeElapsed moving');
  });

  test('volume changes the level the player plays at', async () => {
    const p = players[0];
    expect((await op('set_volume_device', { DeviceID: ids[0], Volume: '25' })).Result).toBe('true');
    await new Promise((r) => setTimeout(r, 1000)); // the FIFO holds 0.37 s of what was played before
    const from = fileSize(p.out);
    await eventually(() => fileSize(p.out) - from > 44100 * FRAME, 5000, 'a second of capture');
    const level = loudness(p.out, from);
    // 25 of 50 is −25 dB: about 1/18 of full scale.
    expect(level).toBeGreaterThan(200);
    expect(level).toBeLessThan(1000);
    await op('set_volume_device', { DeviceID: ids[0], Volume: '50' });
  });

  test('pause, resume and stop act on the player', async () => {
    const p = players[0];
    expect((await op('pause_play')).Result).toBe('true');
    await eventually(async () => (await device(ids[0])).IsPlaying === false, 5000, 'paused');
    await new Promise((r) => setTimeout(r, 800));
    let from = fileSize(p.out);
    await eventually(() => fileSize(p.out) - from > 44100 * FRAME, 5000, 'a second of capture');
    expect(loudness(p.out, from)).toBeLessThan(50);
    const paused = Number((await op('playback_status')).TimeElapsed);
    expect((await op('resume_hub_media_selected_speakers', { PersistentID: pids['Hub Tone'], DeviceIDList: ids[0] })).Result).toBe('true');
    from = fileSize(p.out);
    await expectTone(p, from, 880);
    expect(Number((await op('playback_status')).TimeElapsed)).toBeGreaterThanOrEqual(paused);
    expect((await op('stop_play')).Result).toBe('true');
    await eventually(async () => (await device(ids[0])).IsPlaying === false, 5000, 'stopped');
    await new Promise((r) => setTimeout(r, 800));
    from = fileSize(p.out);
    await eventually(() => fileSize(p.out) - from > 44100 * FRAME, 5000, 'a second of capture');
    expect(loudness(p.out, from)).toBeLessThan(50);
  });

  test('TTS plays on a player and the play ends by itself', async () => {
    const p = players[1];
    await op('set_volume_device', { DeviceID: ids[1], Volume: '50' });
    const from = fileSize(p.out);
    expect((await op('play_tts_selected_speakers', { Text: 'Dinner is ready.', DeviceIDList: ids[1] })).Result).toBe('true');
    await eventually(() => loudness(p.out, from) > AUDIBLE, 15_000, 'speech in the capture');
    await eventually(async () => (await op('playback_status')).PlaybackState === 'PlayerStateStopped', 20_000, 'TTS ended');
  });

  test('web media plays on a player (the hub fetches and decodes it)', async () => {
    const tone = toneWav(20, 440, 'Web Tone');
    const web = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': tone.length });
      res.end(tone);
    });
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(web.address() as AddressInfo).port}/web-tone.wav`;
      const p = players[2];
      await op('set_volume_device', { DeviceID: ids[2], Volume: '50' });
      const from = fileSize(p.out);
      expect((await op('play_web_media_selected_speakers', { MediaUrl: url, DeviceIDList: ids[2] })).Result).toBe('true');
      await expectTone(p, from, 440);
      await op('stop_play');
    } finally {
      await new Promise((r) => web.close(r));
    }
  });

  /** Heard time (wall ms) of each pulse a player played after byte `from`, up to `count`. */
  function pulses(p: SqueezelitePlayer, from: number, count: number, threshold = 11_000): number[] {
    const out: number[] = [];
    let at = from;
    while (out.length < count) {
      const k = firstLoud(p.out, at, threshold); // pulses peak at ~14100 at volume 50, the test tones at ~8500
      if (k < 0) break;
      out.push(p.heardAt(k));
      at = k + 44100 * FRAME * 0.5; // past this pulse (they are 1 s apart)
    }
    return out;
  }

  test('a party play of three starts on every player together (start skew from the captured pulses)', async () => {
    for (const id of ids) await op('set_volume_device', { DeviceID: id, Volume: '50' });
    const from = players.map((p) => fileSize(p.out));
    expect((await op('play_hub_media_party_mode', { PersistentID: pids['Pulses'] })).Result).toBe('true');
    await eventually(() => players.every((p, i) => pulses(p, from[i], 3).length === 3), 15_000, 'three pulses from every player');
    const first = players.map((p, i) => pulses(p, from[i], 1)[0]);
    const skew = Math.max(...first) - Math.min(...first);
    console.log(
      `squeezebox party start skew ${skew.toFixed(1)} ms (first pulse heard at ${first.map((t) => (t - Math.min(...first)).toFixed(1)).join(', ')})`,
    );
    // Loose: the figures are the bench's job; this only proves they start together, not seconds apart.
    expect(skew).toBeLessThan(150);
    expect((await op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
  });

  test('an announcement on one player: the others play on, it rejoins the music in sync at its own volume', async () => {
    // The party play of the previous test (pulses) is running on all three.
    await op('set_volume_device', { DeviceID: ids[1], Volume: '40' });
    const [a, b, c] = players;
    const fromB = fileSize(b.out);
    const fromA = fileSize(a.out);
    const ann = await op('announce', { PersistentID: pids['Chime'], DeviceIDList: ids[1], Volume: '50' });
    expect(ann.AnnouncementID).toBeDefined();
    await expectTone(b, fromB, 660);
    // The others went on with the music meanwhile.
    await eventually(() => pulses(a, fromA, 2).length === 2, 5000, 'a plays on');
    await eventually(
      async () => (await op('announcement_status', { AnnouncementID: ann.AnnouncementID })).State === 'done',
      20_000,
      'announcement done',
    );
    expect(Number((await device(ids[1])).Volume)).toBe(40);
    const after = [a, b, c].map((p) => fileSize(p.out));
    // b plays at 40 again: its pulses peak at ~4500 (−10 dB).
    const thresholds = [11_000, 3000, 11_000];
    await eventually(() => [a, b, c].every((p, i) => pulses(p, after[i], 3, thresholds[i]).length === 3), 15_000, 'pulses from every player again');
    // In sync again: the same pulse heard at about the same time on b as on a and c.
    const pa = pulses(a, after[0], 3);
    const pb = pulses(b, after[1], 3, 3000);
    const offsets = pb.map((t) => Math.min(...pa.map((u) => Math.abs(u - t))));
    console.log(`squeezebox rejoin offset after an announcement: ${offsets.map((o) => o.toFixed(1)).join(', ')} ms`);
    expect(Math.min(...offsets)).toBeLessThan(150);
    // Its own volume: pulses at 40 (−10 dB) are quieter than at 50 on a.
    expect(loudness(b.out, after[1])).toBeLessThan(loudness(a.out, after[0]) * 0.6);
  });

  /** How far b's pulses are from a's (ms), from their next three pulses after the bytes given. */
  function offsetMs(a: SqueezelitePlayer, fromA: number, b: SqueezelitePlayer, fromB: number, thresholdB: number): number {
    const pa = pulses(a, fromA, 4);
    const pb = pulses(b, fromB, 3, thresholdB);
    return Math.min(...pb.map((t) => Math.min(...pa.map((u) => Math.abs(u - t)))));
  }

  test('a player killed mid-play is reported inactive, the others play on; restarted it is back with the same ID and rejoins in sync', async () => {
    const [a, b, c] = players;
    await b.kill();
    await eventually(async () => (await device(ids[1])).Active === false, 5000, 'b inactive');
    const fromA = fileSize(a.out);
    const fromC = fileSize(c.out);
    await eventually(() => pulses(a, fromA, 2).length === 2 && pulses(c, fromC, 2).length === 2, 5000, 'a and c play on');
    await b.start();
    await eventually(async () => (await device(ids[1])).Active === true, 15_000, 'b back');
    const list = (await op('device_list')).DeviceList;
    expect(list.filter((d: any) => d.DeviceName === b.name).map((d: any) => d.DeviceID)).toEqual([ids[1]]);
    expect(logs.some((l) => l.includes('disconnected'))).toBe(true);
    // The party play takes it back (at its own volume, 40: pulses ~4500), in step with the others.
    const [ra, rb] = [fileSize(a.out), fileSize(b.out)];
    await eventually(() => pulses(b, rb, 3, 3000).length === 3 && pulses(a, ra, 4).length === 4, 15_000, 'b playing the party again');
    const off = offsetMs(a, ra, b, rb, 3000);
    console.log(`squeezebox rejoin offset after a restart: ${off.toFixed(1)} ms`);
    expect(off).toBeLessThan(150);
  });

  test('a player removed from the session stops, the others play on; added again it joins the running play in sync', async () => {
    const [a, b] = players;
    expect((await op('remove_device_from_session', { DeviceID: ids[1] })).Result).toBe('true');
    await eventually(async () => (await device(ids[1])).IsPlaying === false, 5000, 'b stopped');
    expect((await device(ids[0])).IsPlaying).toBe(true);
    expect((await op('add_device_to_session', { DeviceID: ids[1] })).Result).toBe('true');
    const [ra, rb] = [fileSize(a.out), fileSize(b.out)];
    await eventually(() => pulses(b, rb, 3, 3000).length === 3 && pulses(a, ra, 4).length === 4, 15_000, 'b joined');
    const off = offsetMs(a, ra, b, rb, 3000);
    console.log(`squeezebox join offset (add_device_to_session): ${off.toFixed(1)} ms`);
    expect(off).toBeLessThan(150);
    await op('stop_play');
  });

  function rawClient(): Promise<{ sock: Socket; closed: Promise<number> }> {
    return new Promise((resolve, reject) => {
      const sock = connect({ host: '127.0.0.1', port });
      const t0 = Date.now();
      const closed = new Promise<number>((r) => sock.once('close', () => r(Date.now() - t0)));
      sock.on('error', () => undefined);
      sock.once('connect', () => resolve({ sock, closed }));
      sock.once('error', reject);
    });
  }

  test('malformed frames, a client that never says HELO and 1,000 connections are refused with one log line each; players are unaffected', async () => {
    const garbage = await rawClient();
    garbage.sock.write(Buffer.from('\x00\xffGARBAGE\x00\x00\x00\x10', 'latin1'));
    await garbage.closed;
    const huge = await rawClient();
    huge.sock.write(Buffer.concat([Buffer.from('HELO'), Buffer.from([0x7f, 0, 0, 0])]));
    await huge.closed;
    const short = await rawClient();
    short.sock.write(Buffer.concat([Buffer.from('HELO'), Buffer.from([0, 0, 0, 2, 12, 0])]));
    await short.closed;
    const silent = await rawClient();
    await silent.closed; // heloTimeoutMs 1000
    expect(logs.some((l) => l.includes('not a SlimProto opcode'))).toBe(true);
    expect(logs.some((l) => l.includes('frame of') && l.includes('most'))).toBe(true);
    expect(logs.some((l) => l.includes('HELO of 2 bytes'))).toBe(true);
    expect(logs.some((l) => l.includes('no HELO within 1000 ms'))).toBe(true);

    const flood = await Promise.all(Array.from({ length: 1000 }, () => rawClient().catch(() => undefined)));
    await eventually(() => logs.some((l) => l.includes('connections are open already')), 5000, 'the refusal line');
    expect(logs.filter((l) => l.includes('connections are open already')).length).toBe(1);
    for (const f of flood) f?.sock.destroy();
    // The players stayed connected and still play.
    expect((await op('device_list')).DeviceList.filter((d: any) => d.Active).length).toBe(3);
    const from = fileSize(players[0].out);
    expect((await op('play_hub_media_selected_speakers', { PersistentID: pids['Hub Tone'], DeviceIDList: ids[0] })).Result).toBe('true');
    await expectTone(players[0], from, 880);
    await op('stop_play');
  });

  test('discovery: a player broadcast "e" gets the hub\'s "E" answer on the SlimProto port', async () => {
    const udp = createSocket('udp4');
    try {
      const reply = new Promise<Buffer>((r) => udp.once('message', (m) => r(m)));
      await new Promise<void>((r) => udp.bind(0, '127.0.0.1', r));
      udp.send(Buffer.from('e'), port, '127.0.0.1');
      const m = await reply;
      expect(m.toString('latin1', 0, 5)).toBe('ENAME');
    } finally {
      udp.close();
    }
  });
});

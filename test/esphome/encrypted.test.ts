import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { EsphomeExtension } from '../../src/esphome/extension';
import { startHub, virtualOf, type TestHub } from '../helpers/hub';
import { JsonLines } from '../drivers/upnp/processes';
import { mediaServer } from './media-server';
import { eventually } from '../helpers/wait';

/**
 * The hub's ESPHome native API with Noise encryption against esphome-client (ESM-only,
 * its own Noise implementation; written by others), run as a child process. A wrong key is
 * refused the way ESPHome refuses it, and the hub goes on serving the right one.
 */
const KEY = '81sXXMpxNGoDVfdGFQfFFzRrQsDCwfk0N7eKoNHuJMU=';
const WRONG = 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=';
const PROBE = join(__dirname, 'esphome-client-probe.mjs');

interface Ev {
  evt: string;
  entities?: { id: string; key: number; name: string; type: string; deviceId?: number }[];
  devices?: { id: number; name?: string }[];
  key?: number;
  state?: number;
  volume?: number;
  message?: string;
  name?: string;
}

describe('ESPHome native API, Noise encryption (esphome-client)', () => {
  let t: TestHub;
  let web: Awaited<ReturnType<typeof mediaServer>>;
  let port: number;
  let probe: JsonLines<Ev>;
  let connected: Ev;
  const children: ReturnType<typeof spawn>[] = [];
  const start = (key: string) => {
    const child = spawn(process.execPath, [PROBE, '127.0.0.1', String(port), key], { stdio: ['pipe', 'pipe', 'pipe'] });
    children.push(child);
    return new JsonLines<Ev>(child);
  };
  const send = (id: string, options: Record<string, unknown>) => probe.child.stdin!.write(`${JSON.stringify({ id, options })}\n`);
  const entityOf = (deviceName: string) => {
    const dev = connected.devices!.find((d) => d.name === deviceName)!;
    return connected.entities!.find((e) => e.type === 'media_player' && e.deviceId === dev.id)!;
  };
  const statesOf = (key: number) => probe.events.filter((e) => e.evt === 'state' && e.key === key);
  const lastState = (key: number) => statesOf(key).at(-1);
  const deviceId = async (name: string) =>
    ((await t.op('device_list')).DeviceList as { DeviceID: string; DeviceName: string }[]).find((d) => d.DeviceName === name)!.DeviceID;

  beforeAll(async () => {
    web = await mediaServer();
    t = await startHub({
      speakers: { virtual: { count: 2, names: ['Kitchen', 'Living Room'] } },
      esphome: { enabled: true, port: 0, host: '127.0.0.1', encryptionKey: KEY },
    });
    port = (t.hub.extension('esphome') as EsphomeExtension).status!.port;
    probe = start(KEY);
    connected = await probe.waitFor((e) => e.evt === 'connected' || e.evt === 'error', 20_000, 'the encrypted connection');
  });

  afterAll(async () => {
    for (const c of children) c.kill();
    await t?.close();
    await web?.close();
  });

  test('connects with the key and lists one media_player per speaker on its sub-device', () => {
    expect(connected.evt).toBe('connected');
    expect(connected.devices!.map((d) => d.name).sort()).toEqual(['Kitchen', 'Living Room']);
    expect(connected.entities!.filter((e) => e.type === 'media_player')).toHaveLength(3);
  });

  test('play a URL (the speaker fetches it), volume, and a REST stop shows IDLE', async () => {
    const kitchen = entityOf('Kitchen');
    const i = virtualOf(t.hub)
      .speakers()
      .findIndex((s) => s.info().name === 'Kitchen');
    send(kitchen.id, { mediaUrl: web.url('/music-enc.wav') });
    await eventually(
      () =>
        virtualOf(t.hub)
          .speaker(i)
          .fetches.some((f) => f.url.endsWith('/music-enc.wav')),
      10_000,
      'the speaker fetching the URL',
    );
    await probe.waitFor((e) => e.evt === 'state' && e.key === kitchen.key && e.state === 2, 10_000, 'PLAYING');
    send(kitchen.id, { volume: 0.4 });
    await probe.waitFor((e) => e.evt === 'state' && e.key === kitchen.key && Math.abs((e.volume ?? 0) - 0.4) < 0.001, 10_000, 'volume 0.4');
    expect(Number((await t.op('get_volume_device', { DeviceID: await deviceId('Kitchen') })).Volume)).toBe(20);
    await t.op('stop_play', { DeviceID: await deviceId('Kitchen') });
    await eventually(() => lastState(kitchen.key)?.state === 1, 10_000, 'IDLE after the REST stop');
  });

  test('an announcement over music: ANNOUNCING, then PLAYING again', async () => {
    const living = entityOf('Living Room');
    send(living.id, { mediaUrl: web.url('/music-enc-2.wav') });
    await eventually(() => lastState(living.key)?.state === 2, 10_000, 'the music PLAYING');
    const from = probe.events.length;
    send(living.id, { mediaUrl: web.url('/chime-enc.wav'), announcement: true });
    await probe.waitFor((e) => e.evt === 'state' && e.key === living.key && e.state === 4, 10_000, 'ANNOUNCING', from);
    await eventually(() => lastState(living.key)?.state === 2, 20_000, 'PLAYING after the announcement');
    await t.op('stop_play', { DeviceID: await deviceId('Living Room') });
  });

  test('a second Noise implementation (@2colors/esphome-native-api over noise-c.wasm) connects and lists the same', async () => {
    const { Client } = require('@2colors/esphome-native-api');
    const client = new Client({ host: '127.0.0.1', port, encryptionKey: KEY, reconnect: false, clientInfo: 'jest-noise' });
    client.on('error', () => undefined);
    try {
      const initialized = new Promise<void>((r) => client.once('initialized', r));
      client.connect();
      await initialized;
      expect(Object.values(client.entities as Record<string, { type: string }>).filter((e) => e.type === 'MediaPlayer')).toHaveLength(3);
      expect((client.deviceInfo.devicesList as { name: string }[]).map((d) => d.name).sort()).toEqual(['Kitchen', 'Living Room']);
    } finally {
      client.disconnect();
    }
  });

  test('a wrong key is refused as ESPHome refuses it; the hub and the right client are unaffected', async () => {
    const wrong = start(WRONG);
    const err = await wrong.waitFor((e) => e.evt === 'error', 20_000, 'the refusal');
    expect(`${err.name} ${err.message}`).toMatch(/key|handshake|MAC/i);
    const plain = start('');
    const perr = await plain.waitFor((e) => e.evt === 'error', 20_000, 'a plaintext client refused');
    expect(perr.message).toBeTruthy();
    const kitchen = entityOf('Kitchen');
    const from = probe.events.length;
    send(kitchen.id, { volume: 0.5 });
    await probe.waitFor(
      (e) => e.evt === 'state' && e.key === kitchen.key && Math.abs((e.volume ?? 0) - 0.5) < 0.001,
      10_000,
      'the right client still served',
      from,
    );
    // Neither key is ever written to the log.
    expect(t.logs.some((l) => l.includes(KEY) || l.includes(WRONG))).toBe(false);
  });
});

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createHub, type SpeakerHub } from '../../src/hub';
import { createLogger } from '../../src/logger';
import { labSuite } from '../helpers/labs';
import { freePort } from '../helpers/net';
import { labUnavailableReason } from '../drivers/upnp/lab';
import * as mpdLab from '../drivers/mpd/harness';
import * as snap from '../drivers/snapcast/harness';
import * as sb from '../drivers/squeezebox/harness';
import { analyse, PartyRenderer, size, wavSamplesFrom } from './lab';
import { eventually } from '../helpers/wait';

const TOKEN = 'party-test-token-0123456789abcdef';
/** The party tone: 523 Hz, peak 12000 (RMS ~8500, ~6000 after a mono → stereo mix); silence is far below. */
const HZ = 523;
const AUDIBLE = 1500;

function unavailable(): string | undefined {
  return (
    labUnavailableReason() ??
    sb.squeezeliteInstalled() ??
    mpdLab.mpdInstalled() ??
    (snap.snapcastInstalled() ? undefined : 'snapserver, snapclient or ffmpeg is not installed')
  );
}

const describeIf = labSuite('the party lab', unavailable());

/**
 * One hub, every family at once: a virtual speaker, a real gmediarender (UPnP, in a network
 * namespace), a snapserver with a snapclient, a squeezelite and an mpd (on loopback). Each real
 * peer's captured audio is checked for the party tone; the virtual speaker by what it reports.
 */
describeIf('a party play across virtual + UPnP + Snapcast + Squeezebox + MPD', () => {
  let dir: string;
  let renderer: PartyRenderer;
  let env: snap.SnapcastEnv;
  let mpd: mpdLab.MpdLab;
  let player: sb.SqueezelitePlayer;
  let hub: SpeakerHub;
  let session = '';
  let pid = '';
  const logs: string[] = [];
  const ids: Record<'virtual' | 'upnp' | 'snapcast' | 'squeezebox' | 'mpd', string> = {
    virtual: '',
    upnp: '',
    snapcast: '',
    squeezebox: '',
    mpd: '',
  };

  const op = async (name: string, params: Record<string, string> = {}): Promise<any> =>
    (
      await fetch(`${hub.url}/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`, {
        headers: { Authorization: `Bearer ${TOKEN}` },
      })
    ).json();
  const devices = async (): Promise<any[]> => (await op('device_list')).DeviceList;
  const device = async (id: string) => (await devices()).find((d) => d.DeviceID === id);

  /** Where each capture stands now. */
  const marks = () => ({
    upnp: Math.max(44, size(renderer.recording)),
    snapcast: snap.fileSize(env.clients[0].file),
    squeezebox: sb.fileSize(player.out),
    mpd: mpdLab.fileSize(mpd.out),
  });
  type Family = keyof ReturnType<typeof marks>;
  /** Level and pitch of what a family's peer played since `from` (pitch of the last 0.3–0.5 s). */
  function heard(family: Family, from: number): { level: number; hz: number; bytes: number } {
    if (family === 'upnp') {
      const { samples, rate } = wavSamplesFrom(renderer.recording, from);
      return { ...analyse(samples, rate), bytes: size(renderer.recording) - from };
    }
    if (family === 'snapcast') {
      const file = env.clients[0].file;
      const tones = snap.toneSequence(snap.toneSegments(file, from, [HZ]));
      return { level: snap.loudness(file, from), hz: tones.includes(HZ) ? HZ : 0, bytes: snap.fileSize(file) - from };
    }
    if (family === 'squeezebox')
      return { level: sb.loudness(player.out, from), hz: sb.frequency(player.out, 0.3), bytes: sb.fileSize(player.out) - from };
    return { level: mpdLab.loudness(mpd.out, from), hz: mpdLab.frequency(mpd.out), bytes: mpdLab.fileSize(mpd.out) - from };
  }
  /** Waits until the family's peer has played at least a second of the party tone since `from`. */
  async function expectTone(family: Family, from: number, timeoutMs = 15_000): Promise<void> {
    const minBytes = { upnp: 22050 * 2, snapcast: 48000 * 4, squeezebox: 44100 * sb.FRAME, mpd: 44100 * 4 }[family];
    await eventually(
      () => {
        const h = heard(family, from);
        return h.bytes > minBytes && h.level > AUDIBLE && Math.abs(h.hz - HZ) < HZ * 0.05;
      },
      timeoutMs,
      () => `the ${HZ} Hz party tone from the ${family} peer (${JSON.stringify(heard(family, from))})`,
    );
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'speakerhub-party-'));
    const mediaDir = join(dir, 'music');
    await mkdir(mediaDir);
    await writeFile(join(mediaDir, 'party.wav'), sb.toneWav(40, HZ, 'Party Tone', 12000, 22050));

    renderer = await PartyRenderer.start(dir);
    env = await snap.SnapcastEnv.create('speakerhub-party-snap-');
    await env.startServer();
    await env.startClient(1);
    mpd = await mpdLab.MpdLab.create({});
    await mpd.start();
    await mpdLab.mpc(mpd.port, 'setvol 100');

    const slimPort = await freePort();
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
        dataDir: join(dir, 'hub'),
        drivers: ['virtual', 'squeezebox'],
        speakers: { virtual: { count: 1, names: ['Party Virtual'] } },
        server: { host: '127.0.0.1', port: 0, token: TOKEN },
        // The media server on the LAN's root address: the renderer fetches from there, the loopback peers reach it too.
        network: { interface: renderer.lan.root.ifname },
        media: { samples: false, folders: [mediaDir] },
        log: { level: 'debug' },
        upnp: { renderers: [renderer.location], ssdp: false, recheckIntervalSeconds: 2, requestTimeoutMs: 2000, playTimeoutSeconds: 10 },
        snapcast: { servers: [env.address], reconnectMinMs: 100, reconnectMaxMs: 500 },
        mpd: { servers: [{ host: '127.0.0.1', port: mpd.port, name: 'Party MPD' }], reconnectMinMs: 100, reconnectMaxMs: 1000 },
        squeezebox: { port: slimPort, host: '127.0.0.1', discovery: false },
      } as any,
      { logger },
    );
    await hub.start();
    session = (await (await fetch(`${hub.url}/api/v1/init_session`, { headers: { Authorization: `Bearer ${TOKEN}` } })).json()).SessionToken;
    pid = (await op('media_list')).MediaList.find((m: any) => m.Title === 'Party Tone').PersistentID;

    player = await sb.SqueezelitePlayer.create('Party Squeezelite', '02:00:00:5b:0a:01', slimPort);
    await player.start();
  }, 60_000);

  afterAll(async () => {
    if (process.env.PARTY_TEST_LOGS) await writeFile(process.env.PARTY_TEST_LOGS, logs.join(''));
    await hub?.stop().catch(() => undefined);
    await Promise.all([player?.destroy(), mpd?.destroy(), env?.close(), renderer?.destroy()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 30_000);

  test('every family plays the party, a killed player is reported inactive while the others play on, stop silences all', async () => {
    // One speaker of each family, all active.
    await eventually(
      async () => {
        const list = await devices();
        for (const d of list.filter((x) => x.Active)) {
          if (d.DeviceName === 'Party Virtual') ids.virtual = d.DeviceID;
          else if (d.DeviceID === renderer.deviceId) ids.upnp = d.DeviceID;
          else if (d.DeviceName === 'Party MPD') ids.mpd = d.DeviceID;
          else if (d.DeviceName === 'Party Squeezelite') ids.squeezebox = d.DeviceID;
          else if (String(d.ModelName).startsWith('Snapcast')) ids.snapcast = d.DeviceID;
        }
        return Object.values(ids).every(Boolean);
      },
      20_000,
      () => `one active speaker per family (have ${JSON.stringify(ids)})`,
    );
    for (const id of [ids.squeezebox, ids.mpd, ids.upnp, ids.snapcast])
      expect((await op('set_volume_device', { DeviceID: id, Volume: '50' })).Result).toBe('true');

    // The party: set_party on with hub media.
    const from = marks();
    expect((await op('set_party', { Party: 'on', PersistentID: pid })).Result).toBe('true');
    await Promise.all((['upnp', 'snapcast', 'squeezebox', 'mpd'] as const).map((f) => expectTone(f, from[f])));
    const status = await op('session_status');
    expect(status).toMatchObject({ PlaybackState: 'PlayerStatePlaying', PersistentID: pid });
    expect(status.PlayingDeviceIDList.split(',').sort()).toEqual(Object.values(ids).sort());
    const list = await devices();
    for (const id of Object.values(ids)) expect(list.find((d) => d.DeviceID === id)).toMatchObject({ Active: true, IsPlaying: true });

    // An MPD paused from its own app mid-party: its device says so, the party plays on.
    await mpdLab.mpc(mpd.port, 'pause 1');
    await eventually(async () => (await device(ids.mpd)).IsPlaying === false, 5000, 'the MPD paused from its app');
    expect((await op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    await mpdLab.mpc(mpd.port, 'pause 0');
    await eventually(async () => (await device(ids.mpd)).IsPlaying === true, 5000, 'the MPD playing again');

    // The squeezelite dies mid-party: reported inactive, dropped from the playback, the others play on.
    await player.kill();
    await eventually(async () => (await device(ids.squeezebox)).Active === false, 10_000, 'the killed squeezelite inactive');
    const after = marks();
    await Promise.all((['upnp', 'snapcast', 'mpd'] as const).map((f) => expectTone(f, after[f])));
    const info = await op('session_status');
    expect(info.PlaybackState).toBe('PlayerStatePlaying');
    expect(info.PlayingDeviceIDList.split(',')).not.toContain(ids.squeezebox);
    expect((await device(ids.virtual)).IsPlaying).toBe(true);
    expect(logs.some((l) => l.includes('speaker dropped out of the playback') && l.includes(ids.squeezebox))).toBe(true);

    // Restarted, it comes back with the same DeviceID and rejoins the running party.
    await player.start();
    await eventually(async () => (await device(ids.squeezebox))?.Active === true, 15_000, 'the squeezelite back');
    await expectTone('squeezebox', player.segmentStart);

    // stop: every speaker stops and says so.
    expect((await op('set_party', { Party: 'off' })).Result).toBe('true');
    expect((await op('playback_status')).PlaybackState).toBe('PlayerStateStopped');
    await eventually(
      async () => (await devices()).filter((d) => Object.values(ids).includes(d.DeviceID)).every((d) => !d.IsPlaying),
      10_000,
      'no speaker playing',
    );
    expect((await mpdLab.mpdStatus(mpd.port)).state).toBe('stop');
    // The snapclient (its file player writes silence when nothing plays) goes quiet once its buffer has played out.
    await eventually(
      async () => {
        const m = snap.fileSize(env.clients[0].file);
        await eventually(() => snap.fileSize(env.clients[0].file) - m >= 48000 * 4 * 0.3, 3000, 'snapclient output');
        return snap.loudness(env.clients[0].file, m) < 50;
      },
      10_000,
      'the snapclient silent',
    );
  }, 60_000);
});

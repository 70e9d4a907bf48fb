'use strict';
/**
 * The speakers bench/first-sound.js measures: per family, a real peer started as the family's
 * bench or test harness starts it (those harnesses are reused, compiled from test/ to
 * .bench-build/ by bench/tsconfig.first-sound.json), a hub with that driver, a capture of what
 * the peer plays (bench/first-sound-capture.js) and the floor: the same peer told to play a
 * given clip URL by its own protocol, without the hub where the protocol allows it.
 *
 * Each setup returns { label, op, deviceId, dataDir, capture, clipUrl(file), floor: { how, play(url), stop() }, close() }
 * or throws { skip: reason } when its peer cannot run here.
 */
const { execFileSync, spawnSync } = require('node:child_process');
const { copyFileSync, createReadStream, mkdirSync, readFileSync, statSync } = require('node:fs');
const { createServer } = require('node:http');
const { connect } = require('node:net');
const { join } = require('node:path');
const { DacCapture, FetchCapture, GrowthCapture, PacedCapture, SnapCapture } = require('./first-sound-capture');
const { sleep, until } = require('./helpers');

const TOKEN = 'bench-first-sound-token-0123456789ab';
const build = join(__dirname, '..', '.bench-build', 'test');
/** REST calls go through the real fetch, whatever the virtual family's capture wraps. */
const realFetch = globalThis.fetch;
/** This bench's UPnP LAN: test/helpers/lab-networks.ts `firstSoundBench` (plain JS here, so spelled out; keep them equal). */
const UPNP_LAN = { prefix: 'shfsb', subnet: '10.231.55' };
const skip = (reason) => Object.assign(new Error(reason), { skip: reason });

/** A plain HTTP server on loopback serving the floor's clip (set by clipUrl). */
async function clipServer() {
  let file;
  const server = createServer((req, res) => {
    if (!file || !req.url.startsWith('/first-sound-clip')) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': statSync(file).size });
    if (req.method === 'HEAD') res.end();
    else createReadStream(file).pipe(res);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: (f) => {
      file = f;
      return `http://127.0.0.1:${server.address().port}/first-sound-clip.wav`;
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** A hub in this process (dist/), REST on loopback, espeak-ng binary TTS as bench/announce.js runs it. */
async function inProcessHub(dir, config) {
  const { createHub } = require('../dist/index.js');
  const { createLogger } = require('../dist/logger.js');
  const dataDir = join(dir, 'hub');
  const hub = createHub(
    {
      dataDir,
      speakers: { virtual: { count: 0 } },
      server: { host: '127.0.0.1', port: 0, token: TOKEN },
      media: { samples: false },
      tts: { provider: 'espeak', espeak: { mode: 'binary' } },
      log: { level: 'silent' },
      ...config,
    },
    { logger: createLogger({ level: 'silent' }) },
  );
  await hub.start();
  const get = async (path) => (await realFetch(hub.url + path, { headers: { Authorization: `Bearer ${TOKEN}` } })).json();
  const session = (await get('/api/v1/init_session')).SessionToken;
  const op = (name, params = {}) => get(`/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`);
  return { hub, dataDir, op };
}

async function firstActive(op, what) {
  let id;
  await until(
    async () => {
      id = (await op('device_list')).DeviceList.find((d) => d.Active)?.DeviceID;
      return !!id;
    },
    20_000,
    what,
  );
  return id;
}

/** Floor through the hub's own play_web_media (families whose protocol needs the hub as the server/sender). */
const hubWebFloor = (t, id, how) => ({
  how,
  play: (url) => t.op('play_web_media_selected_speakers', { MediaUrl: url, DeviceIDList: id }),
  stop: () => t.op('stop_play'),
});

async function virtualFamily(dir) {
  const t = await inProcessHub(dir, { speakers: { virtual: { count: 1 } } });
  const capture = new FetchCapture();
  const clips = await clipServer();
  const speaker = t.hub.driver('virtual').speakers()[0];
  const deviceId = await firstActive(t.op, 'the virtual speaker');
  return {
    label: 'virtual (timing model: request → the speaker fetches the clip)',
    ...t,
    deviceId,
    capture,
    clipUrl: clips.url,
    floor: {
      how: "the speaker's play() called in process",
      play: (url) => speaker.play({ url, contentType: 'audio/wav' }),
      stop: () => speaker.stop(),
    },
    close: async () => {
      capture.close();
      await t.hub.stop();
      await clips.close();
    },
  };
}

async function squeezeboxFamily(dir) {
  const sb = require(join(build, 'drivers', 'squeezebox', 'harness.js'));
  const why = sb.squeezeliteInstalled();
  if (why) throw skip(why);
  const { Player, freePort, CAPTURE_RATE } = require('./squeezebox.js');
  const port = await freePort();
  const t = await inProcessHub(dir, { drivers: ['squeezebox'], squeezebox: { port, host: '127.0.0.1', discovery: false } });
  const player = new Player(dir, 'FirstSound', '02:00:00:f5:00:01', port);
  const clips = await clipServer();
  try {
    await player.start();
    const deviceId = await firstActive(t.op, 'the squeezelite player');
    return {
      label: 'squeezelite (Squeezebox, -o - paced at real time)',
      ...t,
      deviceId,
      capture: new PacedCapture(player, CAPTURE_RATE),
      clipUrl: clips.url,
      floor: hubWebFloor(t, deviceId, "the hub's play_web_media of the clip (SlimProto needs a server: no hub-less way to play)"),
      close: async () => {
        await t.hub.stop();
        await player.stop();
        await clips.close();
      },
    };
  } catch (e) {
    await t.hub.stop();
    await player.stop();
    await clips.close();
    throw e;
  }
}

async function mpdFamily(dir) {
  const m = require(join(build, 'drivers', 'mpd', 'harness.js'));
  const why = m.mpdInstalled();
  if (why) throw skip(why);
  const lab = await m.MpdLab.create({});
  let t;
  let capture;
  const clips = await clipServer();
  try {
    await lab.start();
    t = await inProcessHub(dir, { mpd: { servers: [{ host: '127.0.0.1', port: lab.port, name: 'First Sound MPD' }] } });
    const deviceId = await firstActive(t.op, 'the MPD speaker');
    capture = new GrowthCapture(lab.out, { rate: 44100, channels: 2 });
    return {
      label: 'mpd (pipe output through ffmpeg -re)',
      ...t,
      deviceId,
      capture,
      clipUrl: clips.url,
      floor: {
        how: 'MPD protocol: clear, add <clip URL>, play',
        play: (url) => m.mpc(lab.port, 'clear', `add ${url}`, 'play'),
        stop: () => m.mpc(lab.port, 'stop', 'clear'),
      },
      close: async () => {
        capture.close();
        await t.hub.stop();
        await lab.destroy();
        await clips.close();
      },
    };
  } catch (e) {
    capture?.close();
    await t?.hub.stop();
    await lab.destroy();
    await clips.close();
    throw e;
  }
}

async function snapcastFamily(dir) {
  const snap = require(join(build, 'drivers', 'snapcast', 'harness.js'));
  if (!snap.snapcastInstalled()) throw skip('snapserver, snapclient or ffmpeg is not installed');
  const { StampedCapture } = require(join(build, 'party', 'stamped-capture.js'));
  // A stream of the floor's own, which the hub does not know: the floor writes the clip's PCM to it.
  const env = await snap.SnapcastEnv.create('speakerhub-bench-first-sound-', 'tcp', ['FirstSoundFloor']);
  let t;
  try {
    await env.startServer();
    const client = await env.startClient(1, { output: 'stdout' });
    const capture = new SnapCapture(new StampedCapture(client.proc.stdout));
    await env.clientsConnected([client.hostId]);
    const floorPort = Number(/tcp:\/\/127\.0\.0\.1:(\d+)\?name=FirstSoundFloor/.exec(readFileSync(join(env.dir, 'snapserver.conf'), 'utf8'))[1]);
    t = await inProcessHub(dir, { snapcast: { servers: [env.address], reconnectMinMs: 100, reconnectMaxMs: 500 } });
    const deviceId = await firstActive(t.op, 'the snapclient');
    let sock;
    const groupId = async () => snap.groupOf(await env.status(), client.hostId).id;
    return {
      label: 'snapclient (Snapcast 0.26, file player on stdout)',
      ...t,
      deviceId,
      capture,
      // The clip as the stream's PCM, converted once before the runs (not on the timed path).
      clipUrl: (file) =>
        execFileSync('ffmpeg', ['-loglevel', 'error', '-i', file, '-f', 's16le', '-ar', '48000', '-ac', '2', '-'], { maxBuffer: 64 << 20 }),
      floor: {
        how: "Snapcast: the client's group set to a stream of its own (JSON-RPC Group.SetStream), the clip's PCM written to that stream's TCP source",
        play: async (pcm) => {
          await env.rpc('Group.SetStream', { id: await groupId(), stream_id: 'FirstSoundFloor' });
          sock = connect({ host: '127.0.0.1', port: floorPort });
          sock.on('error', () => undefined);
          sock.write(pcm);
        },
        stop: async () => {
          sock?.end();
          sock = undefined;
          await env.rpc('Group.SetStream', { id: await groupId(), stream_id: snap.IDLE_STREAM });
        },
      },
      close: async () => {
        await t.hub.stop();
        await env.close();
      },
    };
  } catch (e) {
    await t?.hub.stop();
    await env.close();
    throw e;
  }
}

async function upnpFamily() {
  const { UpnpLab, labUnavailableReason } = require(join(build, 'drivers', 'upnp', 'lab.js'));
  const why = labUnavailableReason();
  if (why) throw skip(why);
  const lab = await UpnpLab.start({ ...UPNP_LAN, renderers: [{ host: 'r1', friendlyName: 'First Sound', record: true }] });
  try {
    const [r1] = lab.renderers;
    const op = (name, params) => lab.hub.op(name, params);
    await until(async () => (await op('device_count')).DeviceCount === '1', 20_000, 'the renderer discovered');
    const capture = new GrowthCapture(r1.recording, { wav: true });
    return {
      label: 'gmediarender (UPnP, synced WAV filesink, own namespace LAN)',
      op,
      deviceId: r1.deviceId,
      dataDir: join(lab.tmp, 'hub-data-hub-8090'),
      capture,
      clipUrl: (file) => {
        copyFileSync(file, join(lab.webDir, 'first-sound-clip.wav'));
        return `${lab.webUrl}/first-sound-clip.wav`;
      },
      floor: {
        how: 'UPnP SOAP: SetAVTransportURI + Play, the clip on a plain HTTP server of the LAN',
        play: async (url) => {
          await r1.soap('AVTransport', 'SetAVTransportURI', { CurrentURI: url, CurrentURIMetaData: '' });
          await r1.soap('AVTransport', 'Play', { Speed: '1' });
        },
        stop: () => r1.soap('AVTransport', 'Stop'),
      },
      close: async () => {
        capture.close();
        await lab.stop();
      },
    };
  } catch (e) {
    await lab.stop();
    throw e;
  }
}

async function airplayFamily(dir) {
  const ap = require(join(build, 'drivers', 'airplay', 'harness.js'));
  if (!ap.canRunReceivers()) throw skip('shairport-sync, avahi-daemon, dbus or root (network namespaces) missing');
  const lab = new ap.ReceiverLab();
  let t;
  let capture;
  const clips = await clipServer();
  try {
    const rx = await lab.add({ name: 'First Sound' });
    // BENCH_AIRPLAY_LATENCY_MS: airplay.announcementLatencyMs to measure (the driver's default without it).
    const latency = Number(process.env.BENCH_AIRPLAY_LATENCY_MS) || undefined;
    t = await inProcessHub(dir, {
      airplay: { receivers: [{ host: rx.host, port: rx.port, name: rx.name }], ...(latency ? { announcementLatencyMs: latency } : {}) },
    });
    const deviceId = await firstActive(t.op, 'the AirPlay receiver');
    const speaker = t.hub.driver('airplay').speakers()[0];
    capture = new DacCapture(rx.out, 44100, 2);
    return {
      label: 'shairport-sync (AirPlay 1, stdout back end, own namespace)',
      ...t,
      deviceId,
      capture,
      clipUrl: clips.url,
      // The hub is the RAOP sender: the floor is its driver playing the clip as an announcement
      // plays (an overlay, at the speech latency), without the announcement machinery.
      floor: {
        how: "the AirPlay driver's play() of the clip as an overlay (the hub is the RAOP sender; no announcement machinery)",
        play: (url) => speaker.play({ url, contentType: 'audio/wav', overlay: true }),
        stop: () => speaker.stop(),
      },
      close: async () => {
        capture.close();
        await t.hub.stop();
        lab.close();
        await clips.close();
      },
    };
  } catch (e) {
    capture?.close();
    await t?.hub.stop();
    lab.close();
    await clips.close();
    throw e;
  }
}

const FAMILIES = {
  virtual: virtualFamily,
  upnp: upnpFamily,
  snapcast: snapcastFamily,
  squeezebox: squeezeboxFamily,
  mpd: mpdFamily,
  airplay: airplayFamily,
};

/** Compiles the test harnesses this bench reuses (once per run). */
function compileHarnesses() {
  const root = join(__dirname, '..');
  const r = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', join(__dirname, 'tsconfig.first-sound.json')], {
    cwd: root,
    stdio: 'inherit',
  });
  if (r.status !== 0) throw new Error('tsc -p bench/tsconfig.first-sound.json failed');
  mkdirSync(build, { recursive: true });
}

module.exports = { FAMILIES, compileHarnesses, until, sleep, UPNP_LAN };

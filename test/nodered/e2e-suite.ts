import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { createReadStream, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import type { PlaybackSnapshot } from '../../src/core/events';
import { join } from 'node:path';
import { createHub, type SpeakerHub } from '../../src/hub';
import { createLogger } from '../../src/logger';
import { ensureSampleMedia } from '../../src/media/samples';
import { OPERATIONS, type Operation } from '../../src/operations/table';
import { SHARED_SAMPLES, virtualOf } from '../helpers/hub';
import { embeddedConfig, eventRecorder, remoteConfig, TAB, testFlow } from './flows';
import { HubRest, until } from './hub-rest';
import { bridgeRequest, Probe } from '../mqtt/helpers';
import { childProcesses, ensureRuntimes, freePort, listeningSockets, ROOT, startNodeRed, VIEWER, type NodeRed, type NodeRedVersion } from './runtime';

const TOKEN = 'nodered-test-token-0123456789';

/** A WAV on a loopback web server, for the play_web_media operations. */
async function webMedia(): Promise<{ url: string; server: Server }> {
  const files = await ensureSampleMedia(SHARED_SAMPLES);
  const server = createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'audio/wav' });
    createReadStream(files[0]).pipe(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/tone.wav`, server };
}

interface Ids {
  devices: string[];
  media: string[];
  webUrl: string;
  announcementId?: string;
}

function paramsFor(op: Operation, ids: Ids): Record<string, string> {
  // The documented example's parameters, with this hub's real IDs (and a reachable URL).
  const out: Record<string, string> = { ...op.example };
  if ('DeviceID' in out) out.DeviceID = ids.devices[0];
  if ('DeviceIDList' in out) out.DeviceIDList = ids.devices.slice(0, 2).join(',');
  if ('PersistentID' in out) out.PersistentID = ids.media[0];
  if ('MediaUrl' in out) out.MediaUrl = ids.webUrl;
  if ('AnnouncementID' in out && ids.announcementId) out.AnnouncementID = ids.announcementId;
  return out;
}

/** What has to hold on the hub before an operation can succeed (set up over REST). */
async function prepare(op: Operation, rest: HubRest, ids: Ids): Promise<void> {
  if (op.name.startsWith('resume_hub_media') || op.name === 'pause_play') {
    expect((await rest.op('play_hub_media_party_mode', { PersistentID: ids.media[0] })).Result).toBe('true');
    if (op.name !== 'pause_play') expect((await rest.op('pause_play')).Result).toBe('true');
  }
  if (/^(play_(hub|web)_media|play_tts|resume_hub_media)$/.test(op.name)) expect((await rest.op('set_party_mode')).Result).toBe('true');
  if (op.name === 'announcement_status') ids.announcementId = (await rest.op('announce', { Text: 'status check' })).AnnouncementID;
}

/** The outcome on the hub, read back over REST, for operations that change or report state. */
async function verify(op: Operation, body: any, rest: HubRest, ids: Ids): Promise<void> {
  if (op.name === 'device_count') expect(body.DeviceCount).toBe((await rest.op('device_count')).DeviceCount);
  if (op.name === 'device_list') expect(body.DeviceList.map((d: any) => d.DeviceID)).toEqual(ids.devices);
  if (op.name === 'media_list') expect(body.MediaList.map((m: any) => m.PersistentID)).toEqual(ids.media);
  if (op.name === 'get_volume_device') expect(body.Volume).toBe((await rest.op('get_volume_device', { DeviceID: ids.devices[0] })).Volume);
  if (op.name === 'set_volume') expect((await rest.op('get_volume')).Volume).toBe(op.example.Volume);
  if (op.name === 'set_volume_device') expect((await rest.op('get_volume_device', { DeviceID: ids.devices[0] })).Volume).toBe(op.example.Volume);
  if (/^(play_|resume_)/.test(op.name)) expect((await rest.op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
  if (op.name === 'pause_play') expect((await rest.op('playback_status')).PlaybackState).toBe('PlayerStatePaused');
  if (op.name === 'stop_play') expect((await rest.op('playback_status')).PlaybackState).toBe('PlayerStateStopped');
  if (op.name === 'session_status') {
    const hub = await rest.op('session_status');
    expect({ selected: body.SelectedDeviceIDList, state: body.PlaybackState }).toEqual({
      selected: hub.SelectedDeviceIDList,
      state: hub.PlaybackState,
    });
  }
}

/** The hub a remote config node talks to: a real hub on loopback (restartable on its port). */
class RemoteHub {
  hub!: SpeakerHub;
  port = 0;
  dataDir = '';
  async start(): Promise<void> {
    this.dataDir ||= await mkdtemp(join(tmpdir(), 'speakerhub-nr-remote-'));
    this.port ||= await freePort();
    this.hub = createHub(
      {
        dataDir: this.dataDir,
        media: { samples: false, folders: [SHARED_SAMPLES] },
        server: { host: '127.0.0.1', port: this.port, token: TOKEN },
        log: { level: 'silent' },
      },
      { logger: createLogger({ level: 'silent' }) },
    );
    await this.hub.start();
  }
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  async stop(): Promise<void> {
    await this.hub?.stop();
  }
}

export function defineEndToEnd(version: NodeRedVersion): void {
  describe(`Node-RED ${version} end to end`, () => {
    let nr: NodeRed;
    let web: { url: string; server: Server };
    const remote = new RemoteHub();

    beforeAll(async () => {
      ensureRuntimes();
      web = await webMedia();
      await remote.start();
      nr = await startNodeRed(version);
    }, 180_000);

    afterAll(async () => {
      await nr?.stop();
      await remote.stop();
      await rm(remote.dataDir, { recursive: true, force: true });
      await new Promise((r) => web?.server.close(r));
    }, 60_000);

    async function deployAndWait(flows: object[]): Promise<void> {
      await nr.deploy(flows);
      await until(
        'the flow to answer',
        () => nr.request('/api/sh/device_count'),
        (r) => r.status === 200,
        30_000,
      );
    }

    test('the package loads: every SpeakerHub type registered, one per operation of the table, without warnings', async () => {
      const res = await nr.request('/admin/nodes', { headers: { Accept: 'application/json' } });
      expect(res.status).toBe(200);
      const sets = (res.body as any[]).filter((s) => s.module === 'homebridge-speakerhub');
      const types = sets.flatMap((s) => s.types).sort();
      expect(types).toEqual(
        [
          ...new Set([
            'speakerhub',
            'speakerhub-announce',
            'speakerhub-config',
            'speakerhub-events',
            ...OPERATIONS.map((o) => `speakerhub-${o.name}`),
          ]),
        ].sort(),
      );
      for (const s of sets) expect({ set: s.name, enabled: s.enabled, err: s.err }).toEqual({ set: s.name, enabled: true, err: undefined });
      const warnings = nr
        .output()
        .split('\n')
        .filter((l) => /\[(warn|error)\]/.test(l) && /speakerhub/i.test(l));
      expect(warnings).toEqual([]);
    });

    const modes = [
      { mode: 'remote', config: () => remoteConfig('cfg1', remote.url, TOKEN), rest: () => new HubRest(remote.url, TOKEN) },
      {
        mode: 'embedded',
        port: 0,
        config: () => embeddedConfig('cfg1', embeddedPort, TOKEN),
        rest: () => new HubRest(`http://127.0.0.1:${embeddedPort}`, TOKEN),
      },
    ] as const;
    let embeddedPort = 0;

    describe.each(modes)('$mode config node', ({ mode, config, rest: makeRest }) => {
      let rest: HubRest;
      const ids: Ids = { devices: [], media: [], webUrl: '' };

      beforeAll(async () => {
        embeddedPort ||= await freePort();
        await deployAndWait(testFlow(config()));
        rest = makeRest();
        ids.devices = (await rest.op('device_list')).DeviceList.map((d: any) => d.DeviceID);
        ids.media = (await rest.op('media_list')).MediaList.map((m: any) => m.PersistentID);
        ids.webUrl = web.url;
        expect(ids.devices.length).toBeGreaterThanOrEqual(2);
      }, 60_000);

      afterAll(async () => {
        await rest?.op('stop_play').catch(() => undefined);
      });

      // Generated from the table: adding an operation adds a case (and a node, and a route).
      test.each(OPERATIONS.map((op) => [op.name, op] as const))('%s: http-in → node → http response, outcome on the hub', async (_name, op) => {
        await prepare(op, rest, ids);
        const qs = new URLSearchParams(paramsFor(op, ids));
        const res = await nr.request(`/api/sh/${op.name}?${qs}`);
        expect({ status: res.status, body: res.body }).toMatchObject({ status: 200 });
        expect(op.response.safeParse(res.body).success).toBe(true);
        if ('Result' in res.body) expect(res.body.Result).toBe('true');
        await verify(op, res.body, rest, ids);
      });

      test('after close_session closed its session, the config node opens a new one by itself', async () => {
        expect((await nr.request('/api/sh/close_session')).body).toEqual({ Result: 'true' });
        const res = await nr.request('/api/sh/get_volume');
        expect(res.status).toBe(200);
        expect(res.body.Volume).toMatch(/^\d+$/);
      });

      test('bad input is caught by a catch node with the error code, and the flow goes on', async () => {
        await rest.op('set_volume', { Volume: '20' });
        const bad = await nr.request('/api/sh/set_volume?Volume=99');
        expect(bad.status).toBe(500);
        expect(bad.body).toMatchObject({ caught: true, code: 'InvalidParameter', source: 'speakerhub-set_volume' });
        expect(bad.body.message).toMatch(/Volume/);
        expect((await rest.op('get_volume')).Volume).toBe('20');
        const scheme = await nr.request(`/api/sh/play_web_media_party_mode?MediaUrl=${encodeURIComponent('ftp://x.example/a.mp3')}`);
        expect(scheme.body).toMatchObject({ caught: true, code: 'UnsupportedScheme' });
        const unknown = await nr.request('/api/sh/device_info?DeviceID=99999999999999');
        expect(unknown.body).toMatchObject({ caught: true, code: 'DeviceNotFound', source: 'speakerhub-device_info' });
        const ok = await nr.request('/api/sh/set_volume?Volume=21');
        expect(ok.body).toEqual({ Result: 'true' });
        expect((await rest.op('get_volume')).Volume).toBe('21');
      });

      test('the universal node runs the operation msg.topic names; its error output lets http-in answer a refused value', async () => {
        const bad = await nr.request('/api/universal?op=set_volume&Volume=99');
        expect(bad.status).toBe(422);
        expect(bad.body).toMatchObject({ Result: 'false', ErrorCode: 'InvalidParameter' });
        expect(bad.body.caught).toBeUndefined(); // answered by the flow, not thrown to the catch node
        const ok = await nr.request('/api/universal?op=set_volume&Volume=22');
        expect(ok.body).toEqual({ Result: 'true' });
        expect((await rest.op('get_volume')).Volume).toBe('22');
      });

      test("the editor's dropdown endpoint needs a logged-in user with read permission", async () => {
        const path = '/admin/speakerhub/options/cfg1';
        expect((await nr.request(path, { headers: { Authorization: 'Bearer nope' } })).status).toBe(401);
        expect((await fetch(nr.base + path)).status).toBe(401);
        const viewer = await nr.login(VIEWER, 'read');
        const res = await nr.request(path, { headers: { Authorization: `Bearer ${viewer}` } });
        expect(res.status).toBe(200);
        expect(res.body.speakers.map((s: any) => s.id)).toEqual(ids.devices);
        expect(res.body.media.map((m: any) => m.id)).toEqual(ids.media);
      });

      test('the events node emits hub events with msg.topic = the event name', async () => {
        expect((await nr.request(`/api/sh/set_volume_device?DeviceID=${ids.devices[1]}&Volume=37`)).body).toEqual({ Result: 'true' });
        await until(
          'a volume event',
          async () => (await nr.request('/api/events')).body as any[],
          (l) => l.some((e) => e.topic === 'volume' && e.payload.deviceId === ids.devices[1] && e.payload.volume === 37),
        );
        const events = (await nr.request('/api/events')).body as any[];
        expect(events.some((e) => e.topic === 'playbackState' && typeof e.payload.state === 'string')).toBe(true);
      });

      if (mode === 'remote') {
        test('remote: a speaker going unavailable arrives as a device event, and the event stream reconnects after the hub restarts', async () => {
          virtualOf(remote.hub).speaker(2).vanish();
          await until(
            'a DeviceUnavailable event',
            async () => (await nr.request('/api/events')).body as any[],
            (l) => l.some((e) => e.topic === 'device' && e.payload.reason === 'DeviceUnavailable' && e.payload.device.DeviceID === ids.devices[2]),
          );
          const seen = ((await nr.request('/api/events')).body as any[]).length;
          await remote.stop();
          await remote.start();
          // The stream starts with the current playback state: the sign that it reconnected (not
          // the old hub's last word, a playbackState with reason 'shutdown' when it was playing).
          await until(
            'the event stream to reconnect',
            async () => ((await nr.request('/api/events')).body as any[]).slice(seen),
            (l) => l.some((e) => e.topic === 'playbackState' && e.payload.reason !== 'shutdown'),
            20_000,
          );
          // New session on the new hub (the old one is gone): renewed transparently.
          expect((await nr.request(`/api/sh/set_volume_device?DeviceID=${ids.devices[0]}&Volume=41`)).body).toEqual({ Result: 'true' });
          await until(
            'a volume event from the restarted hub',
            async () => (await nr.request('/api/events')).body as any[],
            (l) => l.some((e) => e.topic === 'volume' && e.payload.deviceId === ids.devices[0] && e.payload.volume === 41),
            20_000,
          );
          rest = makeRest();
        }, 40_000);
      }

      // Fails until the announcements branch (core-announce) adds the announce operation.
      test('the announce node answers once the announcement is done and the speakers are restored', async () => {
        // An announcement still running (announcement_status's case started one) would restore
        // the volume from before it at its end: let it finish first (in remote mode the hub that
        // ran it may have restarted since, forgetting it).
        if (ids.announcementId) {
          await until(
            'the earlier announcement to finish',
            () => rest.op('announcement_status', { AnnouncementID: ids.announcementId! }),
            (s) => s.State === 'done' || s.State === 'failed' || s.ErrorCode === 'AnnouncementNotFound',
          ); // (remote: the hub restarted since)
        }
        await rest.op('set_volume_device', { DeviceID: ids.devices[0], Volume: '12' });
        const res = await nr.request(`/api/announce?Text=${encodeURIComponent('The door is open')}`);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ State: 'done' });
        expect((await rest.op('announcement_status', { AnnouncementID: res.body.AnnouncementID })).State).toBe('done');
        expect((await rest.op('get_volume_device', { DeviceID: ids.devices[0] })).Volume).toBe('12');
        const events = (await nr.request('/api/events')).body as any[];
        expect(events.some((e) => e.topic.startsWith('announce'))).toBe(true);
      }, 30_000);
    });

    test('example "React to a speaker going unavailable": the others say which speaker went offline', async () => {
      const example = JSON.parse(readFileSync(join(ROOT, 'examples', 'React to a speaker going unavailable.json'), 'utf8')) as Record<string, any>[];
      const cfg = example.find((n) => n.type === 'speakerhub-config')!;
      Object.assign(cfg, { url: remote.url, credentials: { token: TOKEN } });
      const rest = new HubRest(remote.url, TOKEN);
      await rest.op('stop_play');
      const mark = `unavailable-${randomUUID()}`;
      await nr.deploy([...example, TAB, ...eventRecorder(cfg.id, mark)]);
      // Node-RED answers a deploy before it starts the new flows, and the new config node's
      // stream connects some 50-100 ms after that: an event the hub sends meanwhile reaches
      // no one (a volume set once right after the deploy was lost 6 times in 8). So the vanish
      // waits for the playbackState the hub sends first on every new stream, recorded by this
      // deploy's recorder (its mark): earlier flows' events stay in global context, and the
      // previous check (any playbackState) passed on those as soon as the route answered.
      // The example's events node was created before the recorder's (flow order) and follows
      // the same stream, so it hears the vanish too.
      await until(
        "this deploy's event stream",
        async () => (await nr.request('/api/events')).body,
        (l) => Array.isArray(l) && l.some((e: any) => e.mark === mark && e.topic === 'playbackState'),
      );
      // The hub's own playbackState events, so a short announcement is seen whenever it plays.
      let spoken: PlaybackSnapshot | undefined;
      const onState = (snap: PlaybackSnapshot) => {
        if (snap.kind === 'tts' && snap.state === 'PlayerStatePlaying') spoken ??= snap;
      };
      remote.hub.core.events.on('playbackState', onState);
      const victim = virtualOf(remote.hub).speaker(1);
      let played: PlaybackSnapshot;
      try {
        victim.vanish();
        played = (await until(
          'the announcement of the offline speaker',
          async () => spoken,
          (snap) => snap !== undefined,
        ).catch((e: Error) => {
          throw new Error(`${e.message}\nNode-RED output:\n${nr.output().slice(-3000)}`);
        }))!;
      } finally {
        remote.hub.core.events.off('playbackState', onState);
      }
      const list = (await rest.op('device_list')).DeviceList as { DeviceID: string; Active: boolean }[];
      expect(list.filter((d) => !d.Active)).toHaveLength(1);
      expect(played.deviceIds.sort()).toEqual(
        list
          .filter((d) => d.Active)
          .map((d) => d.DeviceID)
          .sort(),
      );
      expect(played.priority).toBe(50);
      victim.reappear();
    }, 30_000);

    test('redeploying an embedded hub 20 times leaks no ports, processes or memory', async () => {
      embeddedPort ||= await freePort();
      // Every node type, but no function nodes recording events: Node-RED keeps a function node's
      // vm context for a while after a redeploy, which would blur this measurement of our nodes.
      const flows = testFlow(embeddedConfig('cfg1', embeddedPort, TOKEN), { recorder: false });
      const pid = nr.proc.pid!;
      const sample = async () => {
        const probe = (await nr.request('/api/probe')).body;
        return {
          sockets: listeningSockets(pid),
          children: childProcesses(pid),
          heap: probe.heapUsed as number,
          rss: probe.rss as number,
          live: probe.live as Record<string, number | string>,
        };
      };
      // Warm-up: Node-RED 5 on Node 24 grows its heap for the first ~10 deploys, then stays flat.
      for (let i = 0; i < 10; i++) await deployAndWait(flows);
      const before = await sample();
      for (let i = 0; i < 20; i++) {
        await deployAndWait(flows);
        // Each deploy really runs a hub: its REST server answers on the same port.
        expect((await new HubRest(`http://127.0.0.1:${embeddedPort}`, TOKEN).op('device_count')).DeviceCount).toBe('3');
      }
      const after = await sample();
      // Same number of listening sockets (the media server's port is picked afresh each start).
      expect(after.sockets.length).toBe(before.sockets.length);
      // No child process stays: the live hub's media-scan helper exits after 2 s idle, and every
      // stopped hub ended its own at once.
      await until(
        'helper processes to exit',
        async () => childProcesses(pid),
        (c) => c.length === 0,
        10_000,
      );
      // A hub left running per deploy would hold its library, servers and drivers: many MB of heap
      // over 20. Heap after a full GC is the leak signal; RSS is only logged: V8 and malloc return
      // memory to the system lazily, so on a loaded machine it drifts by tens of MB (seen: +50 MB
      // on NR5 under a parallel test load) without anything being held. Measured over deploys
      // 10→50: NR4 RSS 151→155 MB, NR5 193→198 MB; heap snapshots after 10 and 40 deploys hold
      // exactly one SpeakerHub, HubCore, RestServer and MediaServer.
      // The direct signal: exactly one live hub (the deployed one) and one of each of its servers,
      // counted by constructor after a full collection.
      expect(before.live).toEqual({ SpeakerHub: 1, HubCore: 1, RestServer: 1, MediaServer: 1 });
      expect(after.live).toEqual({ SpeakerHub: 1, HubCore: 1, RestServer: 1, MediaServer: 1 });
      // Heap growth as a coarse backstop only: 12 MB was exceeded once (+14.9 MB) under a parallel
      // test load with the counts above still at one; 20 leaked hubs would be far more.
      expect(after.heap - before.heap).toBeLessThan(24 * 1024 * 1024);
      console.log(
        `Node-RED ${version} redeploy x20: heap ${(before.heap / 1e6).toFixed(1)} → ${(after.heap / 1e6).toFixed(1)} MB, rss ${(before.rss / 1e6).toFixed(1)} → ${(after.rss / 1e6).toFixed(1)} MB, listening ${after.sockets.length}`,
      );
    }, 180_000);

    test("the embedded config node's MQTT tick runs the broker: a client connects and drives a speaker; unticked, no port", async () => {
      embeddedPort ||= await freePort();
      const mqttPort = await freePort();
      const keys = { publishKey: 'pub-nodered-0123456789', subscribeKey: 'sub-nodered-0123456789' };
      const ticked = embeddedConfig('cfg1', embeddedPort, TOKEN, { mqttEnabled: true, mqttPort, extraConfig: JSON.stringify({ pubsub: keys }) });
      await deployAndWait(testFlow(ticked, { recorder: false }));
      const rest = new HubRest(`http://127.0.0.1:${embeddedPort}`, TOKEN);
      const device = (await rest.op('device_list')).DeviceList[0].DeviceID as string;
      const client = await Probe.connect(`mqtt://127.0.0.1:${mqttPort}`, { username: keys.subscribeKey, password: keys.publishKey });
      try {
        await client.client.subscribeAsync('speakerhub/bridge/#');
        const volume = (await rest.op('get_volume_device', { DeviceID: device })).Volume === '19' ? '20' : '19';
        const set = await bridgeRequest(client, client.client, 'speakerhub', 'set_volume_device', { DeviceID: device, Volume: volume });
        expect(set.status).toBe('ok');
        // The outcome, read back through a Node-RED flow and over the hub's REST API.
        expect((await nr.request(`/api/sh/get_volume_device?DeviceID=${device}`)).body.Volume).toBe(volume);
        expect((await rest.op('get_volume_device', { DeviceID: device })).Volume).toBe(volume);
      } finally {
        await client.end();
      }
      // Unticked: the redeployed hub runs no broker (its config names no MQTT).
      await deployAndWait(testFlow(embeddedConfig('cfg1', embeddedPort, TOKEN, { mqttPort }), { recorder: false }));
      const refused = await Probe.connect(`mqtt://127.0.0.1:${mqttPort}`, { username: keys.subscribeKey, password: keys.publishKey }).then(
        async (p) => {
          await p.end();
          return 'connected';
        },
        (e: NodeJS.ErrnoException) => e.code,
      );
      expect(refused).toBe('ECONNREFUSED');
    }, 90_000);
  });
}

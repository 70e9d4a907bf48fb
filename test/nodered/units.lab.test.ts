import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../src/core/clock';
import { startHub, type TestHub, TEST_TOKEN } from '../helpers/hub';
import { until } from './hub-rest';
import { ensureRuntimes, freePort, nodeRedDir, ROOT } from './runtime';

/**
 * Fast tests of the node logic with node-red-node-test-helper (Node-RED 4's runtime in this
 * process) against a real hub on loopback (remote mode).
 */

ensureRuntimes();

const helper = require('node-red-node-test-helper');
helper.init(join(nodeRedDir(4), 'lib', 'red.js'));

const configNode = require(join(ROOT, 'nodes', 'speakerhub-config.js'));
const operationNodes = require(join(ROOT, 'nodes', 'speakerhub-operations.js'));
const eventsNode = require(join(ROOT, 'nodes', 'speakerhub-events.js'));
const announceNode = require(join(ROOT, 'nodes', 'speakerhub-announce.js'));
const universalNode = require(join(ROOT, 'nodes', 'speakerhub.js'));

const ALL = [configNode, operationNodes, eventsNode, announceNode, universalNode];

let hub: TestHub;
let devices: string[];
let media: string[];

beforeAll(async () => {
  hub = await startHub();
  devices = (await hub.op('device_list')).DeviceList.map((d: any) => d.DeviceID);
  media = (await hub.op('media_list')).MediaList.map((m: any) => m.PersistentID);
});
afterAll(async () => {
  await hub.close();
});

beforeEach((done) => {
  helper.startServer(done);
});
afterEach(async () => {
  await helper.unload();
  await new Promise((r) => helper.stopServer(r));
});

const cfg = (url = hub.base) => ({ id: 'cfg', type: 'speakerhub-config', mode: 'remote', url });
const creds = { cfg: { token: TEST_TOKEN } };

/** Loads a flow with `op` (wired to a helper node) and returns both nodes. */
async function loadOp(type: string, settings: Record<string, unknown> = {}, url?: string) {
  const flow = [cfg(url), { id: 'op', type, hub: 'cfg', wires: [['out']], ...settings }, { id: 'out', type: 'helper' }];
  await helper.load(ALL, flow, creds);
  const op = helper.getNode('op');
  const out = helper.getNode('out');
  attach(op, out);
  return { op, out };
}

// Node-RED keeps its own list of input handlers, so `once('input')` leaves stale ones behind:
// each pair gets one listener, and run() sets what it resolves.
const waiters = new WeakMap<object, { resolve(m: unknown): void; reject(e: unknown): void }>();
function attach(op: any, out: any): void {
  out.on('input', (m: unknown) => waiters.get(out)?.resolve(m));
  op.on('call:error', (c: any) => waiters.get(out)?.reject(c.args[0]));
}

/** Sends a message and resolves with the output message, or rejects with the error the node reported. */
function run(op: any, out: any, msg: Record<string, unknown>): Promise<any> {
  return new Promise((resolve, reject) => {
    waiters.set(out, { resolve, reject });
    op.receive(msg);
  });
}

test('settings give the parameters and msg.payload overrides them by API name', async () => {
  const { op, out } = await loadOp('speakerhub-set_volume_device', { DeviceID: devices[1], Volume: '10' });
  const msg = await run(op, out, { payload: { Volume: 33, Unrelated: 'ignored' }, topic: 't' });
  expect(msg.payload).toEqual({ Result: 'true' });
  expect(msg.topic).toBe('t');
  expect((await hub.op('get_volume_device', { DeviceID: devices[1] })).Volume).toBe('33');
  const msg2 = await run(op, out, { payload: 12345 }); // not an object: settings only
  expect(msg2.payload).toEqual({ Result: 'true' });
  expect((await hub.op('get_volume_device', { DeviceID: devices[1] })).Volume).toBe('10');
});

test('a string payload is the Text (or MediaUrl); an array DeviceIDList is accepted', async () => {
  const { op, out } = await loadOp('speakerhub-play_tts_selected_speakers');
  const msg = await run(op, out, { payload: { Text: 'Hello from Node-RED', DeviceIDList: [devices[0], devices[2]] } });
  expect(msg.payload).toEqual({ Result: 'true' });
  const status = await hub.op('playback_status');
  expect(status.PlaybackState).toBe('PlayerStatePlaying');
  expect(hub.hub.core.playback.latestSnapshot()).toMatchObject({ kind: 'tts', deviceIds: [devices[0], devices[2]] });
  await helper.unload();
  const again = await loadOp('speakerhub-play_tts_party_mode');
  expect((await run(again.op, again.out, { payload: 'Dinner is ready' })).payload).toEqual({ Result: 'true' });
  expect(hub.hub.core.playback.latestSnapshot()).toMatchObject({ kind: 'tts', deviceIds: devices });
});

test('the response is exactly the REST response', async () => {
  const { op, out } = await loadOp('speakerhub-device_list');
  const msg = await run(op, out, { payload: '' });
  expect(msg.payload).toEqual(await hub.op('device_list'));
});

test('bad input: node.error with the validation code, a red status, nothing sent', async () => {
  const { op, out } = await loadOp('speakerhub-set_volume', {});
  const sent = jest.fn();
  out.on('input', sent);
  const err = await run(op, out, { payload: { Volume: '51' } }).catch((e) => e);
  expect(err.code).toBe('InvalidParameter');
  expect(err.message).toMatch(/Volume/);
  expect(op.status.lastCall.args[0]).toMatchObject({ fill: 'red', text: 'InvalidParameter' });
  const missing = await run(op, out, { payload: {} }).catch((e) => e);
  expect(missing).toMatchObject({ code: 'InvalidParameter', message: 'Volume is required.' });
  expect(sent).not.toHaveBeenCalled();
  await helper.unload();
  const hubSide = await loadOp('speakerhub-play_hub_media_party_mode');
  const e2 = await run(hubSide.op, hubSide.out, { payload: { PersistentID: '1234' } }).catch((e) => e);
  expect(e2.code).toBe('MediaNotFound');
  expect(hubSide.op.status.lastCall.args[0]).toMatchObject({ fill: 'red', text: 'MediaNotFound' });
  // The status clears on the next success.
  const ok = await run(hubSide.op, hubSide.out, { payload: { PersistentID: media[0] } });
  expect(ok.payload).toEqual({ Result: 'true' });
  expect(hubSide.op.status.lastCall.args[0]).toEqual({});
});

test('with the error output on, a refused value goes out of the second output with the REST error body (an http-in flow can answer it)', async () => {
  const flow = [
    cfg(),
    { id: 'op', type: 'speakerhub-set_volume', hub: 'cfg', errorOutput: true, outputs: 2, wires: [['ok'], ['bad']] },
    { id: 'ok', type: 'helper' },
    { id: 'bad', type: 'helper' },
  ];
  await helper.load(ALL, flow, creds);
  const op = helper.getNode('op');
  const ok = helper.getNode('ok');
  const bad = helper.getNode('bad');
  const reported = jest.fn();
  op.on('call:error', reported);
  const failed = new Promise<any>((resolve) => bad.on('input', resolve));
  op.receive({ payload: { Volume: '99' }, req: { id: 'kept' } });
  const m = await failed;
  expect(m.payload).toEqual({ Result: 'false', ErrorCode: 'InvalidParameter', ErrorMessage: expect.stringMatching(/Volume/) });
  expect(m.error).toMatchObject({ code: 'InvalidParameter' });
  expect(m.req).toEqual({ id: 'kept' }); // the rest of the message (an http request's res) goes along
  expect(op.status.lastCall.args[0]).toMatchObject({ fill: 'red', text: 'InvalidParameter' });
  expect(reported).not.toHaveBeenCalled(); // handled by the flow, not thrown to catch nodes
  const answered = new Promise<any>((resolve) => ok.on('input', resolve));
  op.receive({ payload: { Volume: '12' } });
  expect((await answered).payload).toEqual({ Result: 'true' });
});

test('the universal node runs the operation in msg.topic, else its chosen one, with msg.payload as parameters', async () => {
  const flow = [
    cfg(),
    { id: 'u', type: 'speakerhub', hub: 'cfg', operation: 'get_volume', errorOutput: true, outputs: 2, wires: [['ok'], ['bad']] },
    { id: 'ok', type: 'helper' },
    { id: 'bad', type: 'helper' },
  ];
  await helper.load(ALL, flow, creds);
  const u = helper.getNode('u');
  const ok = helper.getNode('ok');
  const bad = helper.getNode('bad');
  const next = (n: any) => new Promise<any>((resolve) => n.once('input', resolve));
  let out = next(ok);
  u.receive({ topic: 'set_volume_device', payload: { DeviceID: devices[0], Volume: 17 } });
  expect((await out).payload).toEqual({ Result: 'true' });
  expect((await hub.op('get_volume_device', { DeviceID: devices[0] })).Volume).toBe('17');
  out = next(ok);
  u.receive({ payload: {} }); // no topic: the chosen get_volume
  expect((await out).payload).toEqual({ Volume: expect.stringMatching(/^\d+$/) });
  let failed = next(bad);
  u.receive({ topic: 'set_volume', payload: { Volume: 99 } });
  expect((await failed).payload).toMatchObject({ Result: 'false', ErrorCode: 'InvalidParameter' });
  await helper.unload();
  // A topic naming no operation, and none chosen: UnknownOperation.
  await helper.load(
    ALL,
    [
      cfg(),
      { id: 'u', type: 'speakerhub', hub: 'cfg', operation: '', errorOutput: true, outputs: 2, wires: [[], ['bad']] },
      { id: 'bad', type: 'helper' },
    ],
    creds,
  );
  failed = next(helper.getNode('bad'));
  helper.getNode('u').receive({ topic: 'make_coffee', payload: {} });
  expect((await failed).payload).toMatchObject({ ErrorCode: 'UnknownOperation' });
});

test('an unreachable hub is reported as HubUnreachable; a missing config node too', async () => {
  const port = await freePort();
  const { op, out } = await loadOp('speakerhub-device_count', {}, `http://127.0.0.1:${port}`);
  const err = await run(op, out, {}).catch((e) => e);
  expect(err.code).toBe('HubUnreachable');
  await helper.unload();
  await helper.load(ALL, [{ id: 'op', type: 'speakerhub-device_count', wires: [[]] }], {});
  const lone = helper.getNode('op');
  const e2 = await new Promise<any>((r) => {
    lone.once('call:error', (c: any) => r(c.args[0]));
    lone.receive({});
  });
  expect(e2.code).toBe('HubUnreachable');
});

test('an expired session is renewed transparently', async () => {
  const clock = new ManualClock();
  const timed = await startHub({}, { clock });
  try {
    const { op, out } = await loadOp('speakerhub-get_volume', {}, timed.base);
    expect((await run(op, out, {})).payload.Volume).toMatch(/^\d+$/);
    const before = timed.hub.core.sessions.size;
    clock.advance(61 * 60_000); // past sessions.idleMinutes (60)
    expect((await timed.op('get_volume')).ErrorCode).toBe('SessionNotFound'); // the test's own session expired too
    expect((await run(op, out, {})).payload.Volume).toMatch(/^\d+$/);
    expect(timed.hub.core.sessions.size).toBeGreaterThanOrEqual(1);
    expect(before).toBeGreaterThanOrEqual(1);
  } finally {
    await timed.close();
  }
});

test('the events node sends msg.topic = event name, filtered by its settings', async () => {
  const flow = [cfg(), { id: 'ev', type: 'speakerhub-events', hub: 'cfg', topics: ['volume'], wires: [['out']] }, { id: 'out', type: 'helper' }];
  await helper.load(ALL, flow, creds);
  const out = helper.getNode('out');
  const got: any[] = [];
  out.on('input', (m: any) => got.push(m));
  // The stream is open once the hub has a listener (the first playbackState is filtered out).
  await until(
    'the event stream',
    async () => hub.hub.core.events.listenerCount('volume'),
    (n) => n > 0,
  );
  await hub.op('set_volume_device', { DeviceID: devices[0], Volume: '44' });
  await until(
    'the volume event',
    async () => got,
    (g) => g.some((m) => m.payload.volume === 44),
  );
  expect(got.every((m) => m.topic === 'volume')).toBe(true);
  expect(got.find((m) => m.payload.volume === 44).payload).toEqual({ deviceId: devices[0], volume: 44 });
});

test('the events node status follows its event stream: listening once open, reconnecting while the hub is away, listening when it is back', async () => {
  const port = await freePort();
  let away = await startHub({ server: { port } });
  try {
    await helper.load(ALL, [cfg(away.base), { id: 'ev', type: 'speakerhub-events', hub: 'cfg', wires: [[]] }], creds);
    const ev = helper.getNode('ev');
    const status = async () => ev.status.lastCall?.args[0]?.text as string | undefined;
    await until('listening', status, (t) => t === 'listening');
    await away.close();
    await until('reconnecting', status, (t) => t === 'reconnecting');
    away = await startHub({ server: { port } });
    await until('listening again', status, (t) => t === 'listening');
  } finally {
    await away.close();
  }
});

test('the admin endpoint lists the hub speakers and media for the editor dropdowns', async () => {
  await helper.load(ALL, [cfg()], creds);
  const res = await helper.request().get('/speakerhub/options/cfg').expect(200);
  expect(res.body.speakers.map((s: any) => s.id)).toEqual(devices);
  expect(res.body.speakers[0]).toMatchObject({ name: expect.any(String), active: true });
  expect(res.body.media.map((m: any) => m.id)).toEqual(media);
  await helper.request().get('/speakerhub/options/nope').expect(404);
});

// Fails until the announcements branch (core-announce) adds the announce operation.
test('the announce node sends the message on once the announcement is done', async () => {
  const flow = [
    cfg(),
    { id: 'an', type: 'speakerhub-announce', hub: 'cfg', targets: [devices[0]], volume: '30', wires: [['out']] },
    { id: 'out', type: 'helper' },
  ];
  await helper.load(ALL, flow, creds);
  attach(helper.getNode('an'), helper.getNode('out'));
  const msg = await run(helper.getNode('an'), helper.getNode('out'), { payload: 'The washing machine is done' });
  expect(msg.payload).toMatchObject({ State: 'done' });
});

test('the announce node passes its Music choice (duck, level, fade): the output says the mode played and why', async () => {
  const flow = [
    cfg(),
    { id: 'an', type: 'speakerhub-announce', hub: 'cfg', targets: [devices[0]], mode: 'duck', duckLevel: '-20', fadeMs: '300', wires: [['out']] },
    { id: 'out', type: 'helper' },
  ];
  await helper.load(ALL, flow, creds);
  attach(helper.getNode('an'), helper.getNode('out'));
  const msg = await run(helper.getNode('an'), helper.getNode('out'), { payload: 'Ducked if it could' });
  // Virtual speakers fetch their media themselves: the hub cannot mix there.
  expect(msg.payload).toMatchObject({ State: 'done', Mode: 'interrupt', ModeReason: expect.stringContaining('(virtual)') });
  // A bad level is refused before anything plays.
  const e = await run(helper.getNode('an'), helper.getNode('out'), { payload: { Text: 'x', DuckLevel: '-99' } }).catch((err) => err);
  expect(e.code).toBe('InvalidParameter');
});

test('embedded mode: a bad setting or a hub that cannot start is reported as HubUnreachable with the reason', async () => {
  const bad = [
    { id: 'cfg', type: 'speakerhub-config', mode: 'embedded', restEnabled: false, extraConfig: '{"server":{"prot":1}}' },
    { id: 'op', type: 'speakerhub-device_count', hub: 'cfg', wires: [['out']] },
    { id: 'out', type: 'helper' },
  ];
  await helper.load(ALL, bad, {});
  attach(helper.getNode('op'), helper.getNode('out'));
  const e1 = await run(helper.getNode('op'), helper.getNode('out'), {}).catch((e) => e);
  expect(e1.code).toBe('HubUnreachable');
  expect(e1.message).toMatch(/server\.prot: unknown key/);
  await helper.unload();

  // The REST port is taken: the hub's start fails and rolls back; the nodes say why.
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const port = (blocker.address() as { port: number }).port;
  const dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-nr-embedded-'));
  try {
    const busy = [
      {
        id: 'cfg',
        type: 'speakerhub-config',
        mode: 'embedded',
        dataDir,
        samples: false,
        restEnabled: true,
        restHost: '127.0.0.1',
        restPort: port,
        logLevel: 'error',
      },
      { id: 'op', type: 'speakerhub-device_count', hub: 'cfg', wires: [['out']] },
      { id: 'out', type: 'helper' },
    ];
    await helper.load(ALL, busy, { cfg: { token: TEST_TOKEN } });
    attach(helper.getNode('op'), helper.getNode('out'));
    const e2 = await run(helper.getNode('op'), helper.getNode('out'), {}).catch((e) => e);
    expect(e2.code).toBe('HubUnreachable');
    expect(e2.message).toMatch(/EADDRINUSE/);
  } finally {
    await new Promise((r) => blocker.close(r));
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('embedded mode maps the editor fields onto the hub configuration (MQTT broker only when ticked)', () => {
  const { embeddedHubConfig } = require(join(ROOT, 'dist', 'nodered', 'embedded-config.js'));
  const { parseConfig } = require(join(ROOT, 'dist', 'hub-config.js'));

  const cfg = embeddedHubConfig(
    {
      drivers: 'virtual,upnp',
      virtualCount: '2',
      virtualNames: 'Kitchen, Office',
      renderers: 'http://10.0.0.5:49152/d.xml\nhttp://10.0.0.6:49152/d.xml',
      mediaFolders: '/srv/music',
      restEnabled: true,
      restPort: '8099',
      extraConfig: '{"speakers":{"virtual":{"volume":25}}}',
    },
    { token: TEST_TOKEN },
    { userDir: '/home/nr/.node-red', nodeId: 'abc.123' },
  );
  const parsed = parseConfig(cfg);
  expect(parsed.dataDir).toBe('/home/nr/.node-red/speakerhub/abc.123');
  expect(parsed.drivers).toEqual(['virtual', 'upnp']);
  expect(parsed.speakers.virtual).toEqual({ count: 2, names: ['Kitchen', 'Office'], volume: 25, maxLiveAnnouncementSeconds: 600, mix: false });
  expect(parsed.upnp.renderers).toEqual(['http://10.0.0.5:49152/d.xml', 'http://10.0.0.6:49152/d.xml']);
  expect(parsed.media.folders).toEqual(['/srv/music']);
  expect(parsed.server).toMatchObject({ enabled: true, host: '127.0.0.1', port: 8099, token: TEST_TOKEN });
  const mqtt = (parsed as { mqtt?: { enabled: boolean } }).mqtt;
  if (mqtt) expect(mqtt.enabled).toBe(false); // a hub build with the MQTT front end: off unless ticked
  expect(() => embeddedHubConfig({ extraConfig: '{nope' }, {}, { nodeId: 'x' })).toThrow(/More settings is not valid JSON/);
});

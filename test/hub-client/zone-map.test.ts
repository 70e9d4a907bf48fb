/**
 * The one zone-map rule of the protocol front ends (src/hub-client/front-end-port.ts), through
 * the hub ports the DLNA renderers and the ESPHome media players read their zones from: a
 * speaker belongs to the zone that started on it last, at once. Both ports run on a real hub
 * (virtual speakers that really fetch what they play) through an extension context, as the
 * front ends do; the DLNA front end itself multicasts, so its protocol side is a lab's
 * (test/dlna/renderers.lab.test.ts). Time is a ManualClock: nothing ends unless a test ends it.
 */
import { ManualClock } from '../../src/core/clock';
import type { ExtensionContext, HubExtension } from '../../src/extensions/extension';
import { ClientHubPort } from '../../src/dlna/hub-port';
import { EsphomeHubPort } from '../../src/esphome/hub-port';
import { OPERATIONS_BY_NAME } from '../../src/operations/table';
import { startHub, virtualOf, type TestHub } from '../helpers/hub';
import { eventually } from '../helpers/wait';

/** Keeps its context, so that the test can run the front ends' ports in it. */
class Probe implements HubExtension {
  readonly name = 'zone-map-probe';
  ctx?: ExtensionContext;
  async start(ctx: ExtensionContext) {
    this.ctx = ctx;
  }
  async stop() {}
}

describe('the zone map of the DLNA and ESPHome front ends', () => {
  const clock = new ManualClock();
  const probe = new Probe();
  let t: TestHub;
  let ids: string[];
  let pid: string;
  let dlna: ClientHubPort;
  let esphome: EsphomeHubPort;
  const ports = () =>
    [
      ['DLNA', dlna],
      ['ESPHome', esphome],
    ] as const;

  /** The zone each port shows for a speaker: its PlaybackID and members, or 'stopped'. */
  const zoneOf = (deviceId: string) =>
    ports().map(([name, port]) => {
      const z = port.playback(deviceId);
      return [name, z.playbackId ?? 'stopped', [...z.deviceIds].sort()];
    });
  /** Waits until both ports show that zone for the speaker. */
  const bothShow = (deviceId: string, playbackId: string, members: string[]) =>
    eventually(
      () => JSON.stringify(zoneOf(deviceId)) === JSON.stringify(ports().map(([name]) => [name, playbackId, [...members].sort()])),
      5000,
      `both ports show ${deviceId} in ${playbackId} with ${members.join(', ')} (now: ${JSON.stringify(zoneOf(deviceId))})`,
    );
  /** Plays the first library track on these speakers and answers the new zone's PlaybackID. */
  const play = async (deviceIds: string[]) => {
    expect(await t.op('play_hub_media_selected_speakers', { PersistentID: pid, DeviceIDList: deviceIds.join(',') })).toEqual({ Result: 'true' });
    const zone = t.hub.core.playback.list().find((z) => deviceIds.every((d) => z.deviceIds.includes(d)));
    return zone!.playbackId!;
  };

  beforeAll(async () => {
    t = await startHub({ speakers: { virtual: { count: 3 } } }, { clock, extensions: [probe] });
    ids = virtualOf(t.hub)
      .speakers()
      .map((s) => s.id);
    pid = (await t.op('media_list')).MediaList[0].PersistentID;
    const ctx = probe.ctx!;
    dlna = new ClientHubPort(ctx, ctx.logger);
    esphome = new EsphomeHubPort(ctx, ctx.logger);
    await dlna.start(() => undefined);
    await esphome.start(() => undefined);
  });
  afterAll(async () => {
    await dlna?.stop();
    await esphome?.stop();
    await t?.close();
  });
  afterEach(async () => {
    // A session with no speakers of its own: stop_play means every zone.
    const fresh = (await t.get('/api/v1/init_session')).body.SessionToken as string;
    await t.op('stop_play', { SessionToken: fresh });
    await eventually(() => t.hub.core.playback.list().length === 0, 5000, 'every zone stopped');
  });

  test('a zone that takes one speaker of another: that speaker is in the new zone, the rest stay in the old one', async () => {
    const [a, b] = ids;
    const x = await play([a, b]);
    await bothShow(a, x, [a, b]);
    const y = await play([a]);
    await bothShow(a, y, [a]);
    await bothShow(b, x, [b]);
  });

  test('a zone whose end a front end missed (it fell behind the events): the next zone on its speaker takes it at once', async () => {
    const [a, , c] = ids;
    // A zone that plays throughout, so the front ends' new subscription starts with a zone, not "nothing plays".
    const z = await play([c]);
    const x = await play([a]);
    await bothShow(a, x, [a]);
    await bothShow(c, z, [c]);
    // In one turn of the event loop: x stops, then more volume events than a front end's queue
    // holds (2,000) — it drops the backlog, x's end with it, and resubscribes.
    const ctx = probe.ctx!;
    const session = ctx.openTrustedSession();
    const behind = t.logs.filter((l) => l.includes('fell behind the hub events')).length;
    const stopped = ctx.run(OPERATIONS_BY_NAME.get('stop_play')!, { SessionToken: session, PlaybackID: x });
    for (let i = 0; i < 2200; i++) {
      ctx.run(OPERATIONS_BY_NAME.get('set_volume_device')!, { SessionToken: session, DeviceID: c, Volume: String(10 + (i % 2)) });
    }
    expect(await stopped).toMatchObject({ ok: true });
    await eventually(() => t.logs.filter((l) => l.includes('fell behind the hub events')).length >= behind + 2, 5000, 'both ports fell behind');
    const y = await play([a]);
    await bothShow(a, y, [a]);
    await bothShow(c, z, [c]);
  });
});

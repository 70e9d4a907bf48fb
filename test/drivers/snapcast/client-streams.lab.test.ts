/**
 * Client streams (issue 30) on real snapclients (the lab: test/drivers/snapcast/client-streams.ts;
 * bench/snapcast-duck-gaps.js repeats the duck under load): one zone on three clients of one
 * snapserver that declares three client streams. One client stays on the zone's stream, the
 * other two each get a client stream of their own, fed the zone's PCM in step. A ducked
 * announcement on some of them is mixed in place on their streams: every 50 ms window of an
 * announced client carries the music under the voice (on main they changed streams, 37-39
 * windows lost), and the others' windows are all there within 0.5 dB of their level before.
 * The clients on different streams play the clicks of the music at the same instants (measured,
 * logged, and bounded loosely: a misfed follower is off by tens of ms). A client that leaves
 * gives its client stream back and goes back where it was; one that joins late plays on the
 * zone's own stream (a client stream started late was 10-27 ms off), in step. snapserver.conf
 * declares `codec = pcm` (flac holds a block back per stream: docs/drivers/snapcast.md).
 * Pause and resume keep every client's stream, in step, and no snapclient has a jump in time to
 * correct afterwards (each did, seconds later, before); a client-stream group another
 * controller takes, and a client that goes away, stop there and give their streams back.
 * Without client streams the old behaviour is duck-gaps.lab.test.ts's.
 */
import { FEED_LEAD_MS } from '../../../src/drivers/snapcast/feeder';
import { labSuite } from '../../helpers/labs';
import { eventually } from '../../helpers/wait';
import { ClientStreamsLab, CLIENT_STREAMS, HUB_STREAM, type DuckRun } from './client-streams';
import { groupOf, IDLE_STREAM, OTHER_STREAM, snapcastInstalled } from './harness';

const suite = labSuite('the Snapcast lab', snapcastInstalled() ? undefined : 'snapserver, snapclient or ffmpeg is not installed');
jest.setTimeout(120_000);

/**
 * Windows a run may miss on client n (1-based) that should miss none: snapserver re-synced, or
 * that snapclient corrected its own playout (its log says so: a client starved on this 2-core
 * machine; the hub changes no stream's time in a run, only a re-sync would), while the hub was
 * on time (as duck-gaps.lab.test.ts and duck.lab.test.ts). Windows where every client dipped at
 * once are set aside already (DuckRun.excused: 5 at once on all three were seen at load average 7).
 */
const allowed = (r: DuckRun, n: number) => ((r.resyncs > 0 || r.corrections[n - 1] > 0) && r.loopMaxMs < FEED_LEAD_MS ? 3 : 0);
/**
 * Windows set aside in one run, at most: a whole-server dip is a few windows (5 seen); more than
 * this is not a passing dip, and the run fails rather than excusing it (a stream switch on one
 * client is never excused: the others do not dip with it).
 */
const MAX_EXCUSED = 10;
/**
 * Clients on different streams: a follower started off the zone's reading is off by a chunk
 * (20 ms) or more. Started right they are within 0.2 ms mostly, but snapserver stamps each
 * stream's first PCM when its thread gets to it: 2 of 11 starts under two CPU burners were
 * 4.7-5.1 ms apart, and a stream keeps that while it plays (a resume goes on from it).
 */
const SYNC_BOUND_MS = 10;

suite('client streams: a zone whose clients each have a stream, ducked in place', () => {
  const lab = new ClientStreamsLab();
  /** The clicks of the last 2 s and the next 3 s: each pair of clients heard at least two of them together, within SYNC_BOUND_MS. */
  async function expectInStep(label: string, pairs: [number, number][]): Promise<void> {
    const at = lab.sizes().map((b) => b - 2 * 192_000);
    await lab.outputFor(3);
    const o = pairs.map(([a, b]) => lab.offset(a, b, at));
    console.log(JSON.stringify({ [label]: o }));
    for (const x of o) {
      expect(x.offsetsMs.length).toBeGreaterThanOrEqual(2);
      expect(x.maxAbsMs).toBeLessThan(SYNC_BOUND_MS);
    }
  }
  beforeAll(async () => {
    await lab.start(3);
  }, 60_000);
  afterAll(async () => {
    await lab.close();
  });

  test('a zone on three clients: one on the zone stream, two alone on client streams, all in step', async () => {
    const from = lab.sizes();
    const play = await lab.op('play_hub_media_selected_speakers', { PersistentID: lab.pids.Music, DeviceIDList: lab.ids.join(',') });
    expect(play).toEqual({ Result: 'true' });
    await lab.musicHeard([1, 2, 3], from, 4);
    const streams = await lab.streams();
    expect(streams[0]).toBe(HUB_STREAM);
    expect(CLIENT_STREAMS).toEqual(expect.arrayContaining([streams[1], streams[2]]));
    expect(streams[1]).not.toBe(streams[2]);
    expect(await lab.alone()).toEqual([true, true, true]);
    // Clicks from 2 s after the start on (the players started at the moves).
    await expectInStep('syncAfterStart', [
      [1, 2],
      [1, 3],
    ]);
  });

  test('a ducked announcement on one client (on a client stream): its music never stops, the others hear it unchanged', async () => {
    const r = await lab.duck([2]);
    console.log(JSON.stringify(r));
    expect(r.excused).toBeLessThanOrEqual(MAX_EXCUSED);
    expect(Math.min(...r.windows)).toBeGreaterThan(100);
    expect(r.voice[1]).toBeGreaterThan(20);
    expect({ ...r, ok: r.missing[1] <= allowed(r, 2) }).toMatchObject({ ok: true });
    for (const n of [0, 2]) {
      expect(r.voice[n]).toBe(0);
      expect({ ...r, client: n + 1, ok: r.missing[n] <= allowed(r, n + 1) && r.off[n] <= allowed(r, n + 1) }).toMatchObject({ ok: true });
    }
    // Nobody changed stream.
    expect((await lab.streams())[0]).toBe(HUB_STREAM);
  });

  test('a ducked announcement on two of three (the zone stream and a client stream): the same', async () => {
    const r = await lab.duck([1, 3]);
    console.log(JSON.stringify(r));
    expect(r.excused).toBeLessThanOrEqual(MAX_EXCUSED);
    for (const n of [0, 2]) {
      expect(r.voice[n]).toBeGreaterThan(20);
      expect({ ...r, client: n + 1, ok: r.missing[n] <= allowed(r, n + 1) }).toMatchObject({ ok: true });
    }
    expect(r.voice[1]).toBe(0);
    expect({ ...r, ok: r.missing[1] <= allowed(r, 2) && r.off[1] <= allowed(r, 2) }).toMatchObject({ ok: true });
  });

  test('pause and resume of the whole zone: every client keeps its stream and goes on in step, with no jump in time a snapclient corrects later', async () => {
    const before = await lab.streams();
    const correctionsBefore = lab.corrections();
    expect(await lab.op('pause_play')).toEqual({ Result: 'true' });
    await eventually(async () => (await lab.op('playback_status')).PlaybackState === 'PlayerStatePaused', 10_000, 'paused');
    const from = lab.sizes();
    const r = await lab.op('resume_hub_media_selected_speakers', { PersistentID: lab.pids.Music, DeviceIDList: lab.ids.join(',') });
    expect(r).toEqual({ Result: 'true' });
    await lab.musicHeard([1, 2, 3], from, 4);
    expect(await lab.streams()).toEqual(before);
    await expectInStep('syncAfterResume', [
      [1, 2],
      [1, 3],
    ]);
    // Resumed while snapserver still read the paused PCM, every stream takes up its time where it
    // was. Before, each was stamped afresh 40 ms or more later; the snapclients played on across
    // that and each made up for it ~4.5 s later by a hard sync ("pShortBuffer->full()": 23-42 ms
    // of silence put in), each by its own amount: up to 8 ms apart until then (CI). The clicks
    // above run to past 7 s after the resume.
    expect(lab.corrections().map((x, i) => x - correctionsBefore[i])).toEqual([0, 0, 0]);
  });

  test('a client that leaves gives its client stream back and goes back where it was; joining late it plays on the zone stream, in step', async () => {
    const before = await lab.streams();
    expect(await lab.op('remove_device_from_session', { DeviceID: lab.ids[2] })).toEqual({ Result: 'true' });
    // Back on the stream it had before the zone took it (the lab's first stream, where snapclients land); nobody left on its client stream.
    await eventually(async () => (await lab.streams())[2] === IDLE_STREAM, 10_000, 'client 3 back on its stream');
    expect((await lab.streams()).slice(0, 2)).toEqual(before.slice(0, 2));
    const from = lab.sizes();
    expect(await lab.op('add_device_to_session', { DeviceID: lab.ids[2] })).toEqual({ Result: 'true' });
    await lab.musicHeard([3], from, 3);
    // A client stream started late is not exactly in step (docs/drivers/snapcast.md): it joins the zone's own stream.
    expect(await lab.streams()).toEqual([HUB_STREAM, before[1], HUB_STREAM]);
    await expectInStep('syncAfterLateJoin', [
      [1, 3],
      [2, 3],
    ]);
  });

  test('stop: every client goes back where it was, no group is left on a client stream', async () => {
    expect(await lab.op('stop_play')).toEqual({ Result: 'true' });
    await eventually(async () => (await lab.streams()).every((s) => s === IDLE_STREAM), 10_000, 'every client back on its stream');
  });

  test('another controller taking a client-stream group, and a client going away: those stop, the zone plays on, their client streams are given back', async () => {
    const from = lab.sizes();
    const play = await lab.op('play_hub_media_selected_speakers', { PersistentID: lab.pids.Music, DeviceIDList: lab.ids.join(',') });
    expect(play).toEqual({ Result: 'true' });
    await lab.musicHeard([1, 2, 3], from, 3);
    const logsFrom = lab.hub!.logs.length;
    const givenBack = (n: number) =>
      lab.hub!.logs.slice(logsFrom).some((l) => l.includes('client stream given back') && l.includes(lab.env.clients[n - 1].hostId));
    const [, s2] = await lab.streams();
    expect(CLIENT_STREAMS).toContain(s2);
    await lab.env.rpc('Group.SetStream', { id: groupOf(await lab.env.status(), lab.env.clients[1].hostId).id, stream_id: OTHER_STREAM });
    await eventually(async () => (await lab.op('device_info', { DeviceID: lab.ids[1] })).IsPlaying === false, 5000, 'client 2 stopped');
    // The hub leaves the other controller's choice alone.
    expect((await lab.streams())[1]).toBe(OTHER_STREAM);
    expect(givenBack(2)).toBe(true);
    await lab.env.killClient(3);
    await eventually(async () => (await lab.op('device_info', { DeviceID: lab.ids[2] })).Active === false, 5000, 'client 3 inactive');
    await eventually(() => givenBack(3), 5000, "client 3's client stream given back");
    const f1 = lab.sizes();
    await lab.musicHeard([1], f1, 2);
    expect((await lab.op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    expect(await lab.op('stop_play')).toEqual({ Result: 'true' });
    await eventually(async () => (await lab.streams())[0] === IDLE_STREAM, 10_000, 'client 1 back on its stream');
  });
});

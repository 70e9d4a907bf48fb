/**
 * What stands between an announcement request and its first sound (issue 30), on virtual
 * speakers (they really download what they play) with real espeak-ng: a repeated text's clip
 * is servable when `announce` answers. The operation runs through dispatch, as every front end
 * (REST included) runs it: everything after its answer is a microtask away, so what is true
 * when the answer is read was true when the answer went out. Order of events, never times.
 */
import { ManualClock } from '../../src/core/clock';
import { dispatch } from '../../src/operations/dispatch';
import { eventually, startHub, type TestHub, virtualOf } from '../helpers/hub';

describe('announcement first-sound path (virtual speakers)', () => {
  const clock = new ManualClock();
  let t: TestHub;
  let ids: string[];
  const speaker = (i: number) => virtualOf(t.hub).speaker(i);
  const status = (id: string) => t.op('announcement_status', { AnnouncementID: id });

  /** Plays out what speaker i plays and waits for the announcement's end (done or failed). */
  async function finish(id: string): Promise<string> {
    let state = '';
    for (let k = 0; k < 40 && !['done', 'failed'].includes((state = (await status(id)).State)); k++) {
      clock.advance(1000);
      await new Promise((r) => setTimeout(r, 20));
    }
    return state;
  }

  /** announce through dispatch; returns its id and the announcement media URLs reachable at the moment of the answer. */
  async function announceNow(params: Record<string, string>): Promise<{ id: string; servableAtAnswer: string[] }> {
    const r = await dispatch(t.hub.core, 'announce', { SessionToken: t.session, ...params });
    // Read in the same microtask run as the answer: nothing outside (a file read, a fetch) ran in between.
    const servableAtAnswer = [...t.hub.core.announcements.mediaInUse()];
    if (!r.ok) throw r.error;
    return { id: String(r.body.AnnouncementID), servableAtAnswer };
  }

  beforeAll(async () => {
    t = await startHub({ speakers: { virtual: { count: 2 } } }, { clock });
    ids = virtualOf(t.hub)
      .speakers()
      .map((s) => s.id);
  });
  afterAll(async () => {
    await t?.close();
  });

  test.each([
    ['without the chime', {}],
    ['with the chime', { Chime: 'true' }],
  ])('a repeated text %s: its clip is published before announce answers, and the speaker is answered with audio', async (_name, extra) => {
    const text = `The dryer has finished ${Object.keys(extra).length}`;
    // First time: synthesis and the clip happen after the answer (nothing is servable yet).
    const first = await announceNow({ Text: text, DeviceIDList: ids[0], ...extra });
    expect(first.servableAtAnswer).toEqual([]);
    expect(await finish(first.id)).toBe('done');

    const before = speaker(1).fetches.length;
    const again = await announceNow({ Text: text, DeviceIDList: ids[1], ...extra });
    // The answer went out with the clip already published: one URL, and it serves audio now.
    expect(again.servableAtAnswer).toHaveLength(1);
    const [url] = again.servableAtAnswer;
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('audio/wav');
    const body = Buffer.from(await res.arrayBuffer());
    expect(body.subarray(0, 4).toString('latin1')).toBe('RIFF');
    expect(body.length).toBeGreaterThan(10_000);
    // The speaker's own fetch of that very URL came after the answer and got the whole clip.
    await eventually(
      () => speaker(1).fetches.length > before && speaker(1).fetches.at(-1)!.bytes === body.length,
      10_000,
      'the speaker downloaded the clip',
    );
    const fetched = speaker(1).fetches.at(-1)!;
    expect(fetched).toMatchObject({ url, status: 200, contentType: 'audio/wav' });
    expect(await finish(again.id)).toBe('done');
  });

  test('a cached text whose cache file is gone is synthesized again (the memory of the cache is not trusted blindly)', async () => {
    const text = 'The kettle has boiled';
    const first = await announceNow({ Text: text, DeviceIDList: ids[0] });
    expect(await finish(first.id)).toBe('done');
    const { rm, readdir } = await import('node:fs/promises');
    const { join } = await import('node:path');
    const ttsDir = join(t.hub.config.dataDir, 'tts-cache');
    for (const f of await readdir(ttsDir)) await rm(join(ttsDir, f), { force: true });
    const again = await announceNow({ Text: text, DeviceIDList: ids[0] });
    expect(again.servableAtAnswer).toEqual([]);
    expect(await finish(again.id)).toBe('done');
    expect(speaker(0).fetches.at(-1)!.bytes).toBeGreaterThan(10_000);
  });
});

/**
 * What stands between an announcement request and its first sound (issue 30), on virtual
 * speakers (they really download what they play) with real espeak-ng: a repeated text's clip
 * is servable when `announce` answers. The operation runs through dispatch, as every front end
 * (REST included) runs it: everything after its answer is a microtask away, so what is true
 * when the answer is read was true when the answer went out. Order of events, never times.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../src/core/clock';
import { decodeWav } from '../../src/audio/pcm-wav';
import { dispatch } from '../../src/operations/dispatch';
import { startHub, type TestHub, virtualOf } from '../helpers/hub';
import { useVirtualHub } from '../helpers/virtual-suite';
import { eventually } from '../helpers/wait';

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

  useVirtualHub({ clock }, (h) => ({ t, ids } = h));

  test.each([
    ['without the chime', {}],
    ['with the chime', { Chime: 'true' }],
  ])('a repeated text %s: its clip is published before announce answers, and the speaker is answered with audio', async (_name, extra) => {
    const text = `The dryer has finished ${Object.keys(extra).length}`;
    // First time: synthesis and the clip happen after the answer (nothing is servable yet);
    // with the chime, the chime plays while the speech is made, and the one clip is made beside it.
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

  test('Volume the speaker is at already: no volume change goes to it before the play (a round trip on UPnP)', async () => {
    await t.op('set_volume_device', { DeviceID: ids[0], Volume: '30' });
    const sent: number[] = [];
    const s = speaker(0);
    const real = s.setVolume.bind(s);
    s.setVolume = async (v: number) => {
      sent.push(v);
      return real(v);
    };
    /** The levels sent to the speaker up to the moment it plays the announcement. */
    const sentBeforePlay = async (params: Record<string, string>) => {
      const since = s.fetches.at(-1);
      const a = await announceNow({ DeviceIDList: ids[0], ...params });
      await eventually(() => s.state === 'playing' && s.fetches.at(-1) !== since, 10_000, 'the announcement playing');
      const before = [...sent];
      expect(await finish(a.id)).toBe('done');
      sent.length = 0;
      return before;
    };
    try {
      expect(await sentBeforePlay({ Text: 'Same level', Volume: '30' })).toEqual([]);
      // Another level is set before the play (and put back after).
      expect(await sentBeforePlay({ Text: 'Other level', Volume: '35' })).toEqual([35]);
      expect(s.volume).toBe(30);
    } finally {
      s.setVolume = real;
    }
  });

  test('a cached text whose cache file is gone is synthesized again (the memory of the cache is not trusted blindly)', async () => {
    const text = 'The kettle has boiled';
    const first = await announceNow({ Text: text, DeviceIDList: ids[0] });
    expect(await finish(first.id)).toBe('done');
    const { readdir } = await import('node:fs/promises');
    const ttsDir = join(t.hub.config.dataDir, 'tts-cache');
    for (const f of await readdir(ttsDir)) await rm(join(ttsDir, f), { force: true });
    const again = await announceNow({ Text: text, DeviceIDList: ids[0] });
    expect(again.servableAtAnswer).toEqual([]);
    expect(await finish(again.id)).toBe('done');
    expect(speaker(0).fetches.at(-1)!.bytes).toBeGreaterThan(10_000);
  });
});

/**
 * The chime and a new text's synthesis at once (issue 30): espeak-ng is the real one, behind a
 * gate the test opens (a wrapper that marks its start and waits for a file), so "the chime plays
 * while the speech is still being made" is a fact the test sets up, not a race it hopes to win.
 */
describe('announcement: the speech is synthesized while the chime plays (virtual speakers, gated espeak-ng)', () => {
  const clock = new ManualClock();
  let t: TestHub;
  let ids: string[];
  let dir: string;
  const speaker = (i: number) => virtualOf(t.hub).speaker(i);
  const status = (id: string) => t.op('announcement_status', { AnnouncementID: id });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tts-gate-'));
    const wrapper = join(dir, 'espeak-gated');
    await writeFile(
      wrapper,
      [
        '#!/bin/sh',
        'case "$1" in --version) exec espeak-ng "$@";; esac',
        `touch '${dir}/started'`,
        'i=0',
        `while [ ! -e '${dir}/go' ] && [ ! -e '${dir}/fail' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done`,
        `if [ -e '${dir}/fail' ]; then echo 'gate: told to fail' >&2; exit 3; fi`,
        'exec espeak-ng "$@"',
        '',
      ].join('\n'),
    );
    await chmod(wrapper, 0o755);
    t = await startHub(
      { speakers: { virtual: { count: 2 } }, tts: { provider: 'espeak', espeak: { mode: 'binary', binaryPath: wrapper } } },
      { clock },
    );
    ids = virtualOf(t.hub)
      .speakers()
      .map((s) => s.id);
  });
  afterAll(async () => {
    await writeFile(join(dir, 'go'), '').catch(() => undefined);
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });
  afterEach(async () => {
    for (const f of ['started', 'go', 'fail']) await rm(join(dir, f), { force: true });
  });

  /** Speaker i's download that is not `since`, once it plays it. */
  const nextPlay = async (i: number, since: unknown) => {
    await eventually(() => speaker(i).state === 'playing' && speaker(i).fetches.at(-1) !== since, 10_000, `speaker ${i} playing something new`);
    return speaker(i).fetches.at(-1)!;
  };

  test('Chime with a new text: the chime plays before the synthesis ends, the speech (gap first) follows it as soon as the chime ends', async () => {
    const text = 'A parcel has been left at the back door';
    const events: string[] = [];
    const since = speaker(0).fetches.at(-1);
    const r = await t.op('announce', { Text: text, Chime: 'true', DeviceIDList: ids[0] });
    expect(r).toMatchObject({ Result: 'true' });
    const chime = await nextPlay(0, since);
    events.push('chime playing');
    // The chime is what plays (0.9 s), and the synthesis started and is held at the gate: not done.
    expect(chime.duration).toBeGreaterThan(0.5);
    expect(chime.duration).toBeLessThan(1.5);
    await eventually(() => existsSync(join(dir, 'started')), 10_000, 'espeak-ng started');
    events.push('synthesis started');
    expect(await t.hub.tts.cached(text)).toBeUndefined();
    await writeFile(join(dir, 'go'), '');
    await eventually(async () => (await t.hub.tts.cached(text)) !== undefined, 10_000, 'the speech synthesized');
    // Still the chime: the hub's clock has not moved, so its playback has not ended.
    expect(speaker(0).state).toBe('playing');
    expect(speaker(0).fetches.at(-1)).toBe(chime);
    events.push('speech synthesized');
    clock.advance(1000);
    events.push('chime ended');
    const speech = await nextPlay(0, chime);
    events.push('speech playing');
    expect(events).toEqual(['chime playing', 'synthesis started', 'speech synthesized', 'chime ended', 'speech playing']);
    // The speech clip: the 300 ms gap first (a late start loses silence, not the word), then the voice.
    const body = Buffer.from(await (await fetch(speech.url)).arrayBuffer());
    const pcm = decodeWav(body);
    const gap = Math.round(0.28 * pcm.rate);
    expect(pcm.channels[0].subarray(0, gap).every((x) => x === 0)).toBe(true);
    expect(pcm.channels[0].subarray(gap).some((x) => Math.abs(x) > 0.05)).toBe(true);
    expect(speech.duration!).toBeGreaterThan(1);
    for (let k = 0; k < 20 && (await status(r.AnnouncementID)).State !== 'done'; k++) {
      clock.advance(1000);
      await new Promise((res) => setTimeout(res, 20));
    }
    expect((await status(r.AnnouncementID)).State).toBe('done');
    // Once cached, the same text with the chime is one clip again (chime, gap, speech in one play).
    const before = speaker(1).fetches.length;
    const again = await t.op('announce', { Text: text, Chime: 'true', DeviceIDList: ids[1] });
    await eventually(() => speaker(1).fetches.length > before && speaker(1).state === 'playing', 10_000, 'the second announcement playing');
    expect(speaker(1).fetches.at(-1)!.duration!).toBeCloseTo(chime.duration! + speech.duration!, 1);
    for (let k = 0; k < 20 && (await status(again.AnnouncementID)).State !== 'done'; k++) {
      clock.advance(1000);
      await new Promise((res) => setTimeout(res, 20));
    }
    expect(speaker(1).fetches.length).toBe(before + 1);
  });

  test('the synthesis fails while the chime plays: the announcement fails (load_failed) after the chime and the speaker is put back', async () => {
    const since = speaker(0).fetches.at(-1);
    const r = await t.op('announce', { Text: 'This text never gets a voice', Chime: 'true', DeviceIDList: ids[0] });
    const chime = await nextPlay(0, since);
    expect(chime.duration).toBeLessThan(1.5);
    await eventually(() => existsSync(join(dir, 'started')), 10_000, 'espeak-ng started');
    await writeFile(join(dir, 'fail'), '');
    clock.advance(1000);
    let st: any;
    await eventually(async () => ['done', 'failed'].includes((st = await status(r.AnnouncementID)).State), 10_000, 'the announcement over');
    expect(st).toMatchObject({ State: 'failed', ReasonCode: 'load_failed' });
    expect(st.Reason).toMatch(/Text-to-speech/);
    expect(speaker(0).fetches.at(-1)).toBe(chime);
    expect(speaker(0).state).toBe('stopped');
  });
});

/**
 * tts.provider=festival through a real hub (issue 30): an announcement is synthesized by
 * festival and plays on a virtual speaker, which downloads it over HTTP like a networked one;
 * the test downloads the same URL and checks it is speech. Without festival the hub still
 * starts and the announcement fails saying how to install it.
 */
import { execFileSync } from 'node:child_process';
import { ManualClock } from '../../src/core/clock';
import { parseConfig } from '../../src/hub-config';
import { startHub, type TestHub, virtualOf } from '../helpers/hub';
import { speechStats } from './helpers';
import { eventually } from '../helpers/wait';

describe('tts.provider festival', () => {
  const clock = new ManualClock();
  let t: TestHub;
  beforeAll(async () => {
    t = await startHub({ speakers: { virtual: { count: 1 } }, tts: { provider: 'festival' } }, { clock });
  });
  afterAll(() => t?.close());

  test('an announcement is spoken by festival and plays on a virtual speaker', async () => {
    const speaker = virtualOf(t.hub).speakers()[0];
    const before = speaker.fetches.at(-1);
    const r = await t.op('announce', { Text: 'The washing machine has finished at 14:05.', DeviceIDList: speaker.id });
    expect(r.Result).toBe('true');
    await eventually(() => speaker.state === 'playing' && speaker.fetches.at(-1) !== before, 30_000, 'the speaker playing the announcement');
    const played = speaker.fetches.at(-1)!;
    expect(played.contentType).toBe('audio/wav');
    // festival made it (the log says which provider), and it is seconds of speech at the announcement level.
    expect(t.logs.some((l) => l.includes('"provider":"festival"') && l.includes('text synthesized'))).toBe(true);
    const wav = Buffer.from(await (await fetch(played.url)).arrayBuffer());
    const s = speechStats(wav);
    expect(s.seconds).toBeGreaterThan(2);
    expect(played.duration).toBeCloseTo(s.seconds, 1);
    expect(s.voiced).toBeGreaterThan(0.4);
    // Normalised to -16 LUFS: speech RMS sits around -20 dBFS, far above festival's own level.
    expect(s.rmsDb).toBeGreaterThan(-26);
    clock.advance(10_000);
    await eventually(
      async () => (await t.op('announcement_status', { AnnouncementID: r.AnnouncementID })).State === 'done',
      10_000,
      'announcement done',
    );
  });

  test('with the chime: chime, gap and festival speech in one clip, joined without resampling (all 22.05 kHz)', async () => {
    const speaker = virtualOf(t.hub).speakers()[0];
    // Spoken once before: a new text's speech would follow its chime as a play of its own (synthesized while the chime plays).
    const first = speaker.fetches.at(-1);
    const said = await t.op('announce', { Text: 'Dinner is ready.', DeviceIDList: speaker.id });
    await eventually(() => speaker.state === 'playing' && speaker.fetches.at(-1) !== first, 30_000, 'the speaker playing the first announcement');
    clock.advance(10_000);
    await eventually(async () => (await t.op('announcement_status', { AnnouncementID: said.AnnouncementID })).State === 'done', 30_000, 'first done');
    const before = speaker.fetches.at(-1);
    const r = await t.op('announce', { Text: 'Dinner is ready.', DeviceIDList: speaker.id, Chime: 'true' });
    await eventually(() => speaker.state === 'playing' && speaker.fetches.at(-1) !== before, 30_000, 'the speaker playing the announcement');
    const s = speechStats(Buffer.from(await (await fetch(speaker.fetches.at(-1)!.url)).arrayBuffer()));
    expect(s.rate).toBe(22050);
    // The chime, the 300 ms gap (a pause a listener hears), then the speech.
    expect(s.longestPauseMs).toBeGreaterThanOrEqual(280);
    expect(s.seconds).toBeGreaterThan(1.5);
    clock.advance(10_000);
    await eventually(
      async () => (await t.op('announcement_status', { AnnouncementID: r.AnnouncementID })).State === 'done',
      10_000,
      'announcement done',
    );
  }, 90_000);
});

test('festival not installed: the hub starts, and an announcement fails with TtsFailed saying how to install it', async () => {
  const t = await startHub({
    speakers: { virtual: { count: 1 } },
    tts: { provider: 'festival', festival: { binaryPath: '/nonexistent/text2wave' } },
  });
  try {
    expect((await t.op('device_count')).DeviceCount).toBe('1');
    const r = await t.op('announce', { Text: 'Hello' });
    let status: any;
    await eventually(
      async () => (status = await t.op('announcement_status', { AnnouncementID: r.AnnouncementID })).State === 'failed',
      10_000,
      'announcement failed',
    );
    expect(status).toMatchObject({
      ReasonCode: 'load_failed',
      Reason: expect.stringMatching(/festival is not installed .*apt-get install festival festvox-us-slt-hts/),
    });
    expect(t.logs.some((l) => l.includes('"code":"TtsEngineMissing"'))).toBe(true);
  } finally {
    await t.close();
  }
});

test('the config takes tts.provider festival with a voice name, and refuses a voice that is not one', () => {
  expect(parseConfig({ tts: { provider: 'festival' } }).tts).toMatchObject({ provider: 'festival', festival: {} });
  expect(parseConfig({ tts: { provider: 'festival', festival: { voice: 'kal_diphone' } } }).tts.festival.voice).toBe('kal_diphone');
  expect(() => parseConfig({ tts: { provider: 'festival', festival: { voice: '(system "x")' } } })).toThrow(
    /tts\.festival\.voice: .*festival voice name/,
  );
  expect(() => parseConfig({ tts: { provider: 'festivals' } })).toThrow(/tts\.provider/);
});

/** festival processes that are children of this (jest worker) process. */
function festivalChildren(): string[] {
  const out = execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(process.pid)], { encoding: 'utf8' }).trim();
  return out ? out.split('\n').filter((l) => /festival|text2wave/.test(l)) : [];
}

test('stopping the hub kills a festival synthesis still running (the log names TtsAborted)', async () => {
  const t = await startHub({ speakers: { virtual: { count: 1 } }, tts: { provider: 'festival', maxTextLength: 5000 } });
  let closed = false;
  try {
    const long = Array.from({ length: 25 }, (_, i) => `This is sentence number ${i + 1} of a very long announcement.`).join(' ');
    const r = await t.op('announce', { Text: long });
    expect(r.Result).toBe('true');
    await eventually(() => festivalChildren().length > 0, 10_000, 'festival running');
    await t.close();
    closed = true;
    await eventually(() => festivalChildren().length === 0, 5000, 'festival killed');
    expect(t.logs.some((l) => l.includes('"code":"TtsAborted"'))).toBe(true);
  } finally {
    if (!closed) await t.close();
  }
});

/**
 * Announcements end to end over HTTP with virtual speakers (which really download what they
 * play): overlays on the music, queueing, cut-in, snapshot/restore of another app's media,
 * and faults. Time is a ManualClock, so "the announcement has played" is a clock step.
 */
import { ManualClock } from '../../src/core/clock';
import type { AnnouncementEvent, PlaybackSnapshot } from '../../src/core/events';
import type { SpeakerPlayState } from '../../src/drivers/driver';
import { TEST_TOKEN, startHub, type TestHub, virtualOf } from '../helpers/hub';
import { eventually } from '../helpers/wait';
import { webServer } from './web-server';

describe('announcements (virtual speakers)', () => {
  const clock = new ManualClock();
  let t: TestHub;
  let web: Awaited<ReturnType<typeof webServer>>;
  let ids: string[];
  let pid: string;
  const announcements: AnnouncementEvent[] = [];
  /** Every AnnouncementID announce answered, and those whose last event (restored or failed) came. */
  const issued = new Set<string>();
  const over = new Set<string>();
  /** Resolves once every announcement issued so far is done or failed: on the events, not by polling. */
  const allOver = () =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (![...issued].every((id) => over.has(id))) return;
        t.hub.core.events.off('announcement', check);
        resolve();
      };
      t.hub.core.events.on('announcement', check);
      check();
    });
  const states: PlaybackSnapshot[] = [];
  const speaker = (i: number) => virtualOf(t.hub).speaker(i);
  const status = (id: string) => t.op('announcement_status', { AnnouncementID: id });
  const untilState = (id: string, state: string) => eventually(async () => (await status(id)).State === state, 10_000, `announcement ${id} ${state}`);
  /** The last download of speaker i, to wait for the next one. */
  const lastFetch = (i: number) => speaker(i).fetches.at(-1);
  /** Speaker i has downloaded something new since `since` and plays it. */
  const playsNew = (i: number, since: unknown) =>
    eventually(() => speaker(i).state === 'playing' && lastFetch(i) !== since, 10_000, `speaker ${i} playing something new`);
  /** Records every state change of a speaker until the returned function is called. */
  const recordStates = (i: number) => {
    const seen: SpeakerPlayState[] = [];
    const fn = (s: SpeakerPlayState) => seen.push(s);
    speaker(i).on('state', fn);
    return () => {
      speaker(i).off('state', fn);
      return seen;
    };
  };
  /** Plays out whatever the speakers play now (TTS is a few seconds). */
  const playOut = (ms = 8000) => clock.advance(ms);

  beforeAll(async () => {
    web = await webServer('Other App');
    t = await startHub({ speakers: { virtual: { count: 3 } } }, { clock });
    ids = virtualOf(t.hub)
      .speakers()
      .map((s) => s.id);
    const media = (await t.op('media_list')).MediaList;
    // The longest sample: the music must outlast the announcements.
    pid = [...media].sort((a: any, b: any) => b.Duration - a.Duration)[0].PersistentID;
    t.hub.core.events.on('announcement', (e) => {
      announcements.push(e);
      if (e.phase === 'restored' || e.phase === 'failed') over.add(e.announcementId);
    });
    // Every announce goes through t.op: note its id, to wait for it to be over between tests.
    const op = t.op.bind(t);
    t.op = async (name, params) => {
      const r = await op(name, params);
      if (name === 'announce' && typeof r?.AnnouncementID === 'string') issued.add(r.AnnouncementID);
      return r;
    };
    t.hub.core.events.on('playbackState', (s) => states.push(s));
  });
  afterAll(async () => {
    await t?.close();
    await web?.close();
  });
  afterEach(() => {
    // An illegal state transition (a scheduling bug) is logged, never thrown into a driver: none may happen.
    expect(t.logs.filter((l) => l.includes('announcement scheduling fault'))).toEqual([]);
  });
  beforeEach(async () => {
    await t.op('stop_play');
    await allOver();
    for (const s of virtualOf(t.hub).speakers()) {
      s.reappear();
      await s.setVolume(20);
    }
    announcements.length = 0;
    states.length = 0;
  });

  test('announce answers at once with an AnnouncementID; announcement_status and events follow it to done', async () => {
    const before = lastFetch(0);
    const r = await t.op('announce', { Text: 'Hello there', DeviceIDList: ids[0] });
    expect(r).toEqual({ Result: 'true', AnnouncementID: expect.stringMatching(/^[A-Za-z0-9_-]{12}$/) });
    await playsNew(0, before);
    expect(await status(r.AnnouncementID)).toEqual({
      AnnouncementID: r.AnnouncementID,
      State: 'playing',
      DeviceIDList: ids[0],
      Priority: '100',
      Mode: 'interrupt',
    });
    // While it speaks the device says so; the music playback (none) is what playback_status describes.
    expect((await t.op('device_info', { DeviceID: ids[0] })).IsPlaying).toBe(true);
    expect(await t.op('playback_status')).toEqual({ PlaybackState: 'PlayerStateStopped', TimeElapsed: '-1' });
    playOut();
    await untilState(r.AnnouncementID, 'done');
    expect(speaker(0).state).toBe('stopped');
    expect(announcements.filter((e) => e.announcementId === r.AnnouncementID).map((e) => e.phase)).toEqual(['started', 'ended', 'restored']);
  });

  test('the event stream (SSE) carries announcement events', async () => {
    const res = await fetch(`${t.base}/api/v1/events`, { headers: { Authorization: `Bearer ${TEST_TOKEN}` } });
    const reader = res.body!.getReader();
    let text = '';
    const before = lastFetch(2);
    const r = await t.op('announce', { Text: 'Over the wire', DeviceIDList: ids[2] });
    await playsNew(2, before);
    playOut();
    await untilState(r.AnnouncementID, 'done');
    while (!text.includes('"phase":"restored"')) text += Buffer.from((await reader.read()).value!).toString();
    await reader.cancel();
    const phases = [...text.matchAll(/event: announcement\ndata: (.*)\n/g)]
      .map((m) => JSON.parse(m[1]))
      .filter((e) => e.announcementId === r.AnnouncementID);
    expect(phases.map((e) => e.phase)).toEqual(['started', 'ended', 'restored']);
    expect(phases[2]).toMatchObject({ state: 'done', deviceIds: [ids[2]], priority: 100 });
  });

  test('music on 3 speakers, announce on 1: the other 2 never stop, the 1 rejoins at the current position at its own volume', async () => {
    expect(await t.op('play_hub_media_party_mode', { PersistentID: pid })).toEqual({ Result: 'true' });
    const music = speaker(0).fetches.at(-1)!.url;
    clock.advance(3000);
    states.length = 0;
    const others = [recordStates(1), recordStates(2)];
    const volumes: { deviceId: string; volume: number }[] = [];
    const onVolume = (v: { deviceId: string; volume: number }) => volumes.push(v);
    t.hub.core.events.on('volume', onVolume);

    const before0 = lastFetch(0);
    const r = await t.op('announce', { Text: 'Someone is at the door', DeviceIDList: ids[0], Volume: '40' });
    await playsNew(0, before0);
    expect(await t.op('get_volume_device', { DeviceID: ids[0] })).toEqual({ Volume: '40' });
    expect((await t.op('device_info', { DeviceID: ids[0] })).IsPlaying).toBe(true);
    expect(await t.op('playback_status')).toEqual({ PlaybackState: 'PlayerStatePlaying', TimeElapsed: '3' });
    playOut(5000);
    await untilState(r.AnnouncementID, 'done');

    // Back in the music at the current position (8 s), at volume 20, the others untouched.
    expect(speaker(0).fetches.at(-1)!.url).toBe(music);
    expect(speaker(0).state).toBe('playing');
    expect(speaker(0).position()).toBeCloseTo(8, 0);
    expect(speaker(1).position()).toBeCloseTo(8, 0);
    expect(await t.op('get_volume_device', { DeviceID: ids[0] })).toEqual({ Volume: '20' });
    expect(volumes.filter((v) => v.deviceId === ids[0]).map((v) => v.volume)).toEqual([40, 20]);
    expect(others.map((stop) => stop())).toEqual([[], []]);
    expect(await t.op('playback_status')).toEqual({ PlaybackState: 'PlayerStatePlaying', TimeElapsed: '8' });
    // No playbackState event along the way: the music playback did not change.
    expect(states).toEqual([]);
    t.hub.core.events.off('volume', onVolume);
  });

  test('two overlapping announcements run one after the other, with one restore after the last', async () => {
    await t.op('play_hub_media_party_mode', { PersistentID: pid });
    const music = speaker(0).fetches.at(-1)!.url;
    const mark = lastFetch(0)!;
    const since = () => speaker(0).fetches.slice(speaker(0).fetches.indexOf(mark) + 1);
    const a = await t.op('announce', { Text: 'First message', DeviceIDList: ids[0], Volume: '35' });
    const before0 = lastFetch(0);
    const b = await t.op('announce', { Text: 'Second message', DeviceIDList: ids[0], Volume: '45' });
    await playsNew(0, before0);
    expect((await status(b.AnnouncementID)).State).toBe('queued');
    playOut(6000);
    await untilState(b.AnnouncementID, 'playing');
    await eventually(() => since().length === 2 && speaker(0).state === 'playing', 10_000, 'second announcement playing');
    // Straight on: no music in between, and the first is not done until the speaker is restored:
    // it has finished speaking and says that it waits for the restore.
    expect(since().map((f) => f.url === music)).toEqual([false, false]);
    expect((await status(a.AnnouncementID)).State).toBe('waiting_restore');
    expect(speaker(0).volume).toBe(45);
    playOut(6000);
    await untilState(b.AnnouncementID, 'done');
    expect((await status(a.AnnouncementID)).State).toBe('done');
    expect(since().map((f) => f.url === music)).toEqual([false, false, true]);
    expect(speaker(0).volume).toBe(20);
    expect(speaker(0).state).toBe('playing');
  });

  test('an announcement over on its speakers but waiting for the restore behind a queued one reads waiting_restore', async () => {
    await t.op('play_hub_media_party_mode', { PersistentID: pid });
    const music = lastFetch(1)!.url;
    const before0 = lastFetch(0);
    const before1 = lastFetch(1);
    const a = await t.op('announce', { Text: 'First on two speakers', DeviceIDList: `${ids[0]},${ids[1]}` });
    await playsNew(0, before0);
    await playsNew(1, before1);
    const first0 = lastFetch(0);
    const b = await t.op('announce', { Text: 'Second on one', DeviceIDList: ids[0] });
    playOut(6000);
    await playsNew(0, first0);
    await untilState(b.AnnouncementID, 'playing');
    // Speaker 1 is back in the music; speaker 0 goes straight on to the second one, so the first
    // is over everywhere but not restored everywhere: it says so, and so does its 'ended' event.
    await eventually(() => speaker(1).state === 'playing' && lastFetch(1)!.url === music, 10_000, 'speaker 1 back in the music');
    expect(await status(a.AnnouncementID)).toEqual({
      AnnouncementID: a.AnnouncementID,
      State: 'waiting_restore',
      DeviceIDList: `${ids[0]},${ids[1]}`,
      Priority: '100',
      Mode: 'interrupt',
    });
    const ofA = () => announcements.filter((e) => e.announcementId === a.AnnouncementID);
    expect(ofA().map((e) => [e.phase, e.state])).toEqual([
      ['started', 'playing'],
      ['ended', 'waiting_restore'],
    ]);
    playOut(6000);
    await untilState(b.AnnouncementID, 'done');
    // One restore after the last: both done at once, speaker 0 back in the music.
    expect((await status(a.AnnouncementID)).State).toBe('done');
    expect(ofA().map((e) => [e.phase, e.state])).toEqual([
      ['started', 'playing'],
      ['ended', 'waiting_restore'],
      ['restored', 'done'],
    ]);
    expect(lastFetch(0)!.url).toBe(music);
    expect(speaker(0).state).toBe('playing');
  });

  test('an announcement over paused music leaves it paused; resume brings every speaker back', async () => {
    await t.op('play_hub_media_party_mode', { PersistentID: pid });
    clock.advance(2000);
    expect(await t.op('pause_play')).toEqual({ Result: 'true' });
    const before0 = lastFetch(0);
    const before1 = lastFetch(1);
    const r = await t.op('announce', { Text: 'Paused music', DeviceIDList: `${ids[0]},${ids[1]}` });
    await playsNew(0, before0);
    await playsNew(1, before1);
    playOut();
    await untilState(r.AnnouncementID, 'done');
    expect(await t.op('playback_status')).toEqual({ PlaybackState: 'PlayerStatePaused', TimeElapsed: '2' });
    expect(speaker(2).state).toBe('paused');
    expect(speaker(0).state).toBe('stopped');
    expect(await t.op('resume_hub_media_party_mode', { PersistentID: pid })).toEqual({ Result: 'true' });
    for (const i of [0, 1, 2]) {
      expect(speaker(i).state).toBe('playing');
      expect(speaker(i).position()).toBeCloseTo(2, 0);
    }
  });

  test('what another app played on a speaker comes back after the announcement, at its position and volume', async () => {
    const other = web.url('/tone.wav');
    await speaker(2).play({ url: other, startAt: 0 });
    await speaker(2).setVolume(33);
    clock.advance(4000);
    const before2 = lastFetch(2);
    const r = await t.op('announce', { Text: 'Other app', DeviceIDList: ids[2], Volume: '10' });
    await playsNew(2, before2);
    expect(speaker(2).volume).toBe(10);
    playOut(5000);
    await untilState(r.AnnouncementID, 'done');
    expect(speaker(2).fetches.at(-1)!.url).toBe(other);
    expect(speaker(2).state).toBe('playing');
    expect(speaker(2).position()).toBeCloseTo(4, 0);
    expect(speaker(2).volume).toBe(33);
  });

  test('Chime=true: a new text plays the chime while it is synthesized, then the speech (two plays); a text spoken before is one clip (one play; test/announce/clip.lab.test.ts checks its audio)', async () => {
    let before = speaker(1).fetches.length;
    const first = await t.op('announce', { Text: 'With a chime', DeviceIDList: ids[1], Chime: 'true' });
    await playsNew(1, lastFetch(1));
    // The chime, then (played out by the clock) the speech.
    for (let k = 0; k < 20 && (await status(first.AnnouncementID)).State !== 'done'; k++) {
      playOut(1000);
      await new Promise((r) => setTimeout(r, 20));
    }
    await untilState(first.AnnouncementID, 'done');
    expect(speaker(1).fetches.length).toBe(before + 2);
    before = speaker(1).fetches.length;
    const r = await t.op('announce', { Text: 'With a chime', DeviceIDList: ids[1], Chime: 'true' });
    await playsNew(1, lastFetch(1));
    playOut();
    await untilState(r.AnnouncementID, 'done');
    expect(speaker(1).fetches.length).toBe(before + 1);
  });

  test('Priority: lower than the music on a target is refused; a higher announcement cuts in and the restore is still right', async () => {
    await t.op('play_hub_media_party_mode', { PersistentID: pid, Priority: '100' });
    expect(await t.op('announce', { Text: 'too low', DeviceIDList: ids[0], Priority: '50' })).toMatchObject({
      Result: 'false',
      ErrorCode: 'PriorityTooLow',
    });
    const before0 = lastFetch(0);
    const low = await t.op('announce', { Text: 'Ordinary message', DeviceIDList: ids[0], Volume: '30' });
    await playsNew(0, before0);
    const lowFetch = lastFetch(0);
    const high = await t.op('announce', { Text: 'Doorbell', DeviceIDList: ids[0], Volume: '50', Priority: '200' });
    await playsNew(0, lowFetch);
    expect((await status(high.AnnouncementID)).State).toBe('playing');
    expect(speaker(0).volume).toBe(50);
    playOut();
    await untilState(high.AnnouncementID, 'done');
    const lowStatus = await status(low.AnnouncementID);
    expect(lowStatus).toMatchObject({ State: 'done', Reason: expect.stringContaining('Interrupted'), ReasonCode: 'interrupted' });
    expect(speaker(0).volume).toBe(20);
    expect(speaker(0).state).toBe('playing');
    expect(speaker(0).position()).toBeCloseTo(speaker(1).position()!, 0);
  });

  test('the queue per speaker is bounded (AnnouncementQueueFull); an unknown AnnouncementID is AnnouncementNotFound', async () => {
    const results = [];
    const before = lastFetch(1);
    results.push(await t.op('announce', { Text: 'Number 0', DeviceIDList: ids[1] }));
    await playsNew(1, before);
    for (let i = 1; i < 18; i++) results.push(await t.op('announce', { Text: `Number ${i}`, DeviceIDList: ids[1] }));
    expect(results.filter((r) => r.Result === 'true')).toHaveLength(17);
    expect(results.at(-1)).toMatchObject({ Result: 'false', ErrorCode: 'AnnouncementQueueFull' });
    expect(await status('nosuchannouncement')).toMatchObject({ Result: 'false', ErrorCode: 'AnnouncementNotFound' });
    await t.op('stop_play');
    for (const r of results.slice(1, 17)) expect(await status(r.AnnouncementID)).toMatchObject({ State: 'failed', ReasonCode: 'stopped_by_play' });
  });

  test('a TTS failure reports failed with the reason and touches no speaker', async () => {
    await t.op('play_hub_media_party_mode', { PersistentID: pid });
    const music = speaker(0).fetches.length;
    const r = await t.op('announce', { Text: 'unspeakable', DeviceIDList: ids[0], Voice: 'nosuchvoice', Volume: '45' });
    await untilState(r.AnnouncementID, 'failed');
    expect(await status(r.AnnouncementID)).toMatchObject({ Reason: expect.stringMatching(/Text-to-speech/), ReasonCode: 'load_failed' });
    expect(speaker(0).fetches.length).toBe(music);
    expect(speaker(0).state).toBe('playing');
    expect(speaker(0).volume).toBe(20);
    expect(announcements.map((e) => e.phase)).toEqual(['failed']);
  });

  test('play_tts* take an optional Voice (beyond the spec): another voice is another synthesis; a bad one is TtsFailed', async () => {
    expect(await t.op('play_tts_selected_speakers', { Text: 'Guten Tag', DeviceIDList: ids[1] })).toEqual({ Result: 'true' });
    const english = lastFetch(1)!.url;
    expect(await t.op('play_tts_selected_speakers', { Text: 'Guten Tag', DeviceIDList: ids[1], Voice: 'de' })).toEqual({ Result: 'true' });
    expect(lastFetch(1)!.url).not.toBe(english);
    expect(await t.op('play_tts_selected_speakers', { Text: 'Guten Tag', DeviceIDList: ids[1], Voice: 'nosuchvoice' })).toMatchObject({
      Result: 'false',
      ErrorCode: 'TtsFailed',
    });
  });

  test("an announcement no speaker can play is failed, with every speaker's reason", async () => {
    speaker(0).failNextPlay('injected fault A');
    const r = await t.op('announce', { Text: 'Nobody hears this', DeviceIDList: ids[0], Volume: '42' });
    await untilState(r.AnnouncementID, 'failed');
    expect(await status(r.AnnouncementID)).toMatchObject({ Reason: expect.stringContaining('injected fault A'), ReasonCode: 'play_failed' });
    expect(speaker(0).volume).toBe(20);
  });

  test('a speaker that vanishes mid-announcement is skipped; the others finish and are restored', async () => {
    await t.op('play_hub_media_party_mode', { PersistentID: pid });
    const before0 = lastFetch(0);
    const before1 = lastFetch(1);
    const r = await t.op('announce', { Text: 'Vanishing act', DeviceIDList: `${ids[0]},${ids[1]}`, Volume: '40' });
    await playsNew(0, before0);
    await playsNew(1, before1);
    speaker(1).vanish();
    playOut();
    await untilState(r.AnnouncementID, 'done');
    expect(speaker(0).state).toBe('playing');
    expect(speaker(0).volume).toBe(20);
    expect(speaker(2).state).toBe('playing');
    // Its level comes back with it.
    speaker(1).reappear();
    await eventually(() => speaker(1).volume === 20, 5000, 'volume restored on return');
  });

  test('stop_play during an announcement ends it, restores volumes and leaves everything stopped', async () => {
    await t.op('play_hub_media_party_mode', { PersistentID: pid });
    const before0 = lastFetch(0);
    const r = await t.op('announce', { Text: 'Stop me', DeviceIDList: ids[0], Volume: '44' });
    await playsNew(0, before0);
    expect(await t.op('stop_play')).toEqual({ Result: 'true' });
    await untilState(r.AnnouncementID, 'done');
    expect(await status(r.AnnouncementID)).toMatchObject({ Reason: 'stopped by stop_play', ReasonCode: 'stopped_by_play' });
    for (const i of [0, 1, 2]) expect(speaker(i).state).toBe('stopped');
    expect(speaker(0).volume).toBe(20);
  });

  test('stop_play while an announcement is still taking its speaker (a slow snapshot): its volume is put back all the same', async () => {
    const s0 = speaker(0);
    const own = s0.snapshot;
    let letGo!: () => void;
    let asked!: () => void;
    const gate = new Promise<void>((r) => (letGo = r));
    const snapshotAsked = new Promise<void>((r) => (asked = r));
    // A renderer that answers the snapshot query late: the announcement is still starting.
    s0.snapshot = async () => {
      asked();
      await gate;
      return own.call(s0);
    };
    try {
      const r = await t.op('announce', { Text: 'Slow speaker', DeviceIDList: ids[0], Volume: '44' });
      await snapshotAsked;
      const ended = new Promise<void>((res) => {
        const onEnded = (e: AnnouncementEvent) => {
          if (e.announcementId !== r.AnnouncementID || e.phase !== 'ended') return;
          t.hub.core.events.off('announcement', onEnded);
          res();
        };
        t.hub.core.events.on('announcement', onEnded);
      });
      const stopped = t.op('stop_play');
      await ended;
      // The snapshot answers after stop_play ended the announcement; its volume still goes on, then back.
      letGo();
      expect(await stopped).toEqual({ Result: 'true' });
      expect(await status(r.AnnouncementID)).toMatchObject({ State: 'done', ReasonCode: 'stopped_by_play' });
      expect(s0.volume).toBe(20);
      expect(s0.state).toBe('stopped');
    } finally {
      s0.snapshot = own;
      letGo();
    }
  });

  test('a doorbell announcement does not wait behind a play still starting on a URL that never answers', async () => {
    await t.op('add_device_to_session', { DeviceID: ids[0] });
    const stuck = t.op('play_web_media', { MediaUrl: web.url('/hang.mp3') });
    await eventually(() => t.hub.core.playback['starter'].startingOn(new Set([ids[0]])), 5000, 'play starting');
    const before0 = lastFetch(0);
    const r = await t.op('announce', { Text: 'Doorbell', DeviceIDList: ids[0], Priority: '200' });
    await playsNew(0, before0);
    expect(await stuck).toMatchObject({ Result: 'false', ErrorCode: 'PlaybackFailed' });
    playOut();
    await untilState(r.AnnouncementID, 'done');
    await t.op('remove_device_from_session', { DeviceID: ids[0] });
  });
});

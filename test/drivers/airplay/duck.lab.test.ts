import type { AirPlayDriver } from '../../../src/drivers/airplay/driver';
import { describeAirPlayLab as describeIf, hubWithReceivers, musicDir, toneFile } from './lab-hub';
import type { TestHub } from '../../helpers/hub';
import { ReceiverLab, analyse, beforeVoice, until, type Receiver } from './harness';

jest.setTimeout(180_000);

const MUSIC_HZ = 1000;
const VOICE_HZ = 660;
/** 50 ms windows: 50 cycles of the music, 33 of the voice. */
const WINDOW = 2205;
const db = (ratio: number) => 20 * Math.log10(ratio);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/** The music's and the voice's amplitude in each 50 ms window of a capture (s16le stereo, left channel). */
function windows(pcm: Buffer): { music: number; voice: number }[] {
  const out: { music: number; voice: number }[] = [];
  for (let o = 0; o + WINDOW * 4 <= pcm.length; o += WINDOW * 4) {
    const a = analyse(pcm.subarray(o, o + WINDOW * 4), [MUSIC_HZ, VOICE_HZ]);
    out.push({ music: a.power[MUSIC_HZ], voice: a.power[VOICE_HZ] });
  }
  return out;
}

/**
 * Ducking on AirPlay (issue 21): the hub is the RAOP sender, so a ducked announcement is mixed
 * into the PCM it encodes. Real shairport-sync receivers capture what they play: the music (a
 * 1 kHz tone) goes on without a gap, DuckLevel lower under the voice (a 660 Hz tone), and
 * comes back; its position is unaffected. A receiver sharing its stream with one not
 * announced cannot have its own mix: the announcement interrupts and says why.
 */
describeIf('AirPlay ducking (two shairport-sync receivers)', () => {
  let lab: ReceiverLab;
  let t: TestHub;
  let rx: Receiver[];
  const ids: string[] = [];
  let toneId = '';
  let voiceId = '';

  beforeAll(async () => {
    lab = new ReceiverLab();
    rx = [await lab.add({ name: 'Kitchen' }), await lab.add({ name: 'Den' })];
    const music = musicDir(lab);
    toneFile(music, 'long-tone.wav', MUSIC_HZ, 90, 'Long Tone');
    toneFile(music, 'voice-tone.wav', VOICE_HZ, 3, 'Voice Tone');
    const hub = await hubWithReceivers(rx, music);
    t = hub.t;
    ids.push(...hub.ids);
    toneId = hub.media['Long Tone'];
    voiceId = hub.media['Voice Tone'];
    for (const id of ids) await t.op('set_volume_device', { DeviceID: id, Volume: '50' });
  });

  afterAll(async () => {
    await t?.close();
    lab?.close();
  });

  const status = (id: string) => t.op('announcement_status', { AnnouncementID: id });

  /**
   * Waits until a receiver has played a second of the music without a break, and answers where
   * its capture stands then (on a frame boundary). A receiver writes silence while a play starts:
   * a count of captured bytes alone could put the mark at the music's first, still silent, windows.
   */
  const musicPlaying = async (r: Receiver, since: number): Promise<number> => {
    await until(
      `a second of music on ${r.name}`,
      () => {
        const w = windows(lab.captured(r).subarray(since));
        return w.length >= 20 && w.slice(-20).every((x) => x.music > 0.05);
      },
      20_000,
    );
    const at = lab.capturedBytes(r);
    return at - (at % 4);
  };

  test('DuckLevel -15: the music goes on under the voice, 15 dB lower, then comes back; Mode duck; position unaffected', async () => {
    await t.op('set_party_mode');
    await t.op('remove_device_from_session', { DeviceID: ids[1] });
    expect((await t.op('play_hub_media', { PersistentID: toneId })).Result).toBe('true');
    const mark = await musicPlaying(rx[0], lab.capturedBytes(rx[0]));
    const driver = t.hub.driver<AirPlayDriver>('airplay')!;
    const stream = driver.speakers().find((s) => s.id === ids[0])!.stream;
    expect(stream).toBeDefined();
    const elapsedBefore = Number((await t.op('playback_status')).TimeElapsed);
    const wallBefore = Date.now();

    const a = await t.op('announce', { PersistentID: voiceId, DeviceIDList: ids[0], Mode: 'duck', DuckLevel: '-15', FadeMs: '300' });
    expect(a.Result).toBe('true');
    await until('the announcement done', async () => (await status(a.AnnouncementID)).State === 'done', 30_000);
    const st = await status(a.AnnouncementID);
    expect(st).toMatchObject({ State: 'done', Mode: 'duck' });
    expect(st.ModeReason).toBeUndefined();
    // Three more seconds of what Kitchen plays after the announcement: the music back up.
    const done = lab.capturedBytes(rx[0]);
    await until('three seconds after the announcement', () => lab.capturedBytes(rx[0]) > done + 3 * 176400, 20_000);

    const w = windows(lab.captured(rx[0]).subarray(mark));
    const peakVoice = Math.max(...w.map((x) => x.voice));
    const voiced = w.flatMap((x, i) => (x.voice > peakVoice * 0.3 ? [i] : []));
    expect(voiced.length).toBeGreaterThan(40); // ~3 s of voice: at least 2 s heard
    const [vFirst, vLast] = [voiced[0], voiced[voiced.length - 1]];
    const before = median(w.slice(0, vFirst).map((x) => x.music));
    // Under the voice, once the 300 ms fade is down (and before it ends): DuckLevel ± 2 dB.
    const under = median(w.slice(vFirst + 8, vLast - 1).map((x) => x.music));
    // After the voice and the fade back up.
    const after = median(w.slice(vLast + 10).map((x) => x.music));
    const levels = { before, under: Number(db(under / before).toFixed(1)), after: Number(db(after / before).toFixed(1)), voiced: voiced.length };
    console.log(JSON.stringify(levels));
    expect(before).toBeGreaterThan(0.05);
    expect(Math.abs(db(under / before) + 15)).toBeLessThanOrEqual(2);
    expect(Math.abs(db(after / before))).toBeLessThanOrEqual(1);
    // No burst (issue 30): in the second before the voice, no 20 ms window above the music's
    // level before the announcement + 1 dB (the music goes down before anything louder plays).
    const v = beforeVoice(lab.captured(rx[0]).subarray(mark), VOICE_HZ, MUSIC_HZ);
    expect(v.onset).toBeGreaterThan(60);
    const prior = median(v.windows.slice(0, v.onset - 50).map((x) => x.rms));
    expect(prior).toBeGreaterThan(0.05);
    const burstDb = Number(db(v.loudest / prior).toFixed(2));
    console.log(JSON.stringify({ duckBurstDb: burstDb }));
    expect(burstDb).toBeLessThanOrEqual(1);
    // The voice is there, well above the music's own 660 Hz (none) before it.
    expect(peakVoice).toBeGreaterThan(10 * median(w.slice(0, vFirst).map((x) => x.voice)) + 0.01);
    // No gap: the music is in every window from half a second before the voice (the fade down)
    // to the end (the duck level, less 6 dB for the fades' edges). Windows earlier than that
    // were sent before the announcement and are not the mix's doing: a CI run under load once
    // had the capture's very first window low.
    const floor = before * 10 ** (-21 / 20);
    const from = Math.max(0, vFirst - 10);
    const gaps = w.slice(from, -1).flatMap((x, i) => (x.music < floor ? [from + i] : []));
    if (gaps.length) console.log(JSON.stringify({ gaps, vFirst, vLast }));
    expect(gaps).toEqual([]);
    // The music kept its place: TimeElapsed moved on with the clock, and it still plays.
    const ps = await t.op('playback_status');
    expect(ps.PlaybackState).toBe('PlayerStatePlaying');
    const moved = Number(ps.TimeElapsed) - elapsedBefore;
    const wall = (Date.now() - wallBefore) / 1000;
    expect(Math.abs(moved - wall)).toBeLessThan(2);
    // The same stream (one decode, one RTP timeline) played all along: the music was never restarted.
    expect(driver.speakers().find((s) => s.id === ids[0])!.stream).toBe(stream);
    expect(driver.speakers().find((s) => s.id === ids[0])!.state).toBe('playing');
    await t.op('stop_play');
    await until('stopped', async () => (await t.op('playback_status')).PlaybackState === 'PlayerStateStopped');
  });

  test('two ducked announcements queued on the receiver: both duck, one after the other, and the music never stops', async () => {
    await t.op('set_party_mode');
    await t.op('remove_device_from_session', { DeviceID: ids[1] });
    expect((await t.op('play_hub_media', { PersistentID: toneId })).Result).toBe('true');
    const mark = await musicPlaying(rx[0], lab.capturedBytes(rx[0]));
    const first = await t.op('announce', { PersistentID: voiceId, DeviceIDList: ids[0], Mode: 'duck', DuckLevel: '-20', FadeMs: '200' });
    const second = await t.op('announce', { PersistentID: voiceId, DeviceIDList: ids[0], Mode: 'duck', DuckLevel: '-20', FadeMs: '200' });
    for (const a of [first, second]) {
      await until('the announcements done', async () => (await status(a.AnnouncementID)).State === 'done', 40_000);
      expect(await status(a.AnnouncementID)).toMatchObject({ State: 'done', Mode: 'duck' });
    }
    const done = lab.capturedBytes(rx[0]);
    await until('two seconds after the announcements', () => lab.capturedBytes(rx[0]) > done + 2 * 176400, 20_000);
    const w = windows(lab.captured(rx[0]).subarray(mark));
    const peakVoice = Math.max(...w.map((x) => x.voice));
    // Two voices: two runs of voiced windows.
    const runs = w.reduce((n, x, i) => n + (x.voice > peakVoice * 0.3 && !(w[i - 1] && w[i - 1].voice > peakVoice * 0.3) ? 1 : 0), 0);
    expect(runs).toBe(2);
    const before = median(w.slice(0, 10).map((x) => x.music));
    const gaps = w.slice(0, -1).flatMap((x, i) => (x.music < before * 10 ** (-26 / 20) ? [i] : []));
    expect(gaps).toEqual([]);
    expect((await t.op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    await t.op('stop_play');
    await until('stopped', async () => (await t.op('playback_status')).PlaybackState === 'PlayerStateStopped');
  });

  test("Volume sets the voice's level against the receiver's own volume (50 on a receiver at 25: +6 dB); the music's level stays", async () => {
    await t.op('set_party_mode');
    await t.op('remove_device_from_session', { DeviceID: ids[1] });
    await t.op('set_volume_device', { DeviceID: ids[0], Volume: '25' });
    expect((await t.op('play_hub_media', { PersistentID: toneId })).Result).toBe('true');
    await musicPlaying(rx[0], lab.capturedBytes(rx[0]));
    /** The voice's and the music's level (medians over the voiced windows) of one ducked announcement. */
    const duckOnce = async (params: Record<string, string>) => {
      const mark = lab.capturedBytes(rx[0]);
      const a = await t.op('announce', { PersistentID: voiceId, DeviceIDList: ids[0], Mode: 'duck', DuckLevel: '-20', FadeMs: '200', ...params });
      await until('the announcement done', async () => (await status(a.AnnouncementID)).State === 'done', 30_000);
      expect(await status(a.AnnouncementID)).toMatchObject({ State: 'done', Mode: 'duck' });
      const w = windows(lab.captured(rx[0]).subarray(mark));
      const peak = Math.max(...w.map((x) => x.voice));
      const voiced = w.filter((x) => x.voice > peak * 0.5);
      return { voice: median(voiced.map((x) => x.voice)), before: median(w.slice(0, 10).map((x) => x.music)) };
    };
    const plain = await duckOnce({});
    const louder = await duckOnce({ Volume: '50' });
    console.log(JSON.stringify({ gainDb: Number(db(louder.voice / plain.voice).toFixed(1)) }));
    expect(Math.abs(db(louder.voice / plain.voice) - 20 * Math.log10(50 / 25))).toBeLessThanOrEqual(1.5);
    // The receiver's own volume (the music's level) was left alone.
    expect(Number((await t.op('device_info', { DeviceID: ids[0] })).Volume)).toBe(25);
    expect(Math.abs(db(louder.before / plain.before))).toBeLessThanOrEqual(1);
    await t.op('set_volume_device', { DeviceID: ids[0], Volume: '50' });
    await t.op('stop_play');
    await until('stopped', async () => (await t.op('playback_status')).PlaybackState === 'PlayerStateStopped');
  });

  test('both receivers of a stream announced: one mix for both; one killed mid-announcement, the other ducks on to the end', async () => {
    await t.op('set_party_mode');
    expect((await t.op('play_hub_media', { PersistentID: toneId })).Result).toBe('true');
    const start = rx.map((r) => lab.capturedBytes(r));
    await musicPlaying(rx[1], start[1]);
    const mark = await musicPlaying(rx[0], start[0]);
    const mixes = () => t.logs.filter((l) => l.includes('announcement mixed into the AirPlay music') && l.includes(ids[1])).length;
    const mixedBefore = mixes();
    const a = await t.op('announce', { PersistentID: voiceId, DeviceIDList: `${ids[0]},${ids[1]}`, Mode: 'duck', DuckLevel: '-15', FadeMs: '300' });
    await until('the announcement playing', async () => (await status(a.AnnouncementID)).State === 'playing', 20_000);
    expect((await status(a.AnnouncementID)).Mode).toBe('duck');
    // Killed while the voice is being mixed in (not while it starts).
    await until('the mix under way', () => mixes() > mixedBefore, 20_000);
    lab.kill(rx[1]);
    await until('the announcement done', async () => (await status(a.AnnouncementID)).State === 'done', 30_000).catch(async (e) => {
      throw new Error(
        `${(e as Error).message}: ${JSON.stringify(await status(a.AnnouncementID))} ${t.logs
          .filter((l) => !/"request"/.test(l) && /announce|airplay|duck|lost|restore/i.test(l))
          .slice(-25)
          .join('')}`,
      );
    });
    const done = lab.capturedBytes(rx[0]);
    await until('two seconds after the announcement', () => lab.capturedBytes(rx[0]) > done + 2 * 176400, 20_000);
    const w = windows(lab.captured(rx[0]).subarray(mark));
    const peakVoice = Math.max(...w.map((x) => x.voice));
    const voiced = w.flatMap((x, i) => (x.voice > peakVoice * 0.3 ? [i] : []));
    expect(voiced.length).toBeGreaterThan(40);
    const before = median(w.slice(0, voiced[0]).map((x) => x.music));
    const under = median(w.slice(voiced[0] + 8, voiced[voiced.length - 1] - 1).map((x) => x.music));
    expect(Math.abs(db(under / before) + 15)).toBeLessThanOrEqual(2);
    expect(w.slice(0, -1).filter((x) => x.music < before * 10 ** (-21 / 20))).toEqual([]);
    expect((await t.op('device_info', { DeviceID: ids[0] })).Active).toBe(true);
    expect((await t.op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    await t.op('stop_play');
    await lab.startReceiver(rx[1]);
    await until('the restarted receiver active', async () => (await t.op('device_info', { DeviceID: ids[1] })).Active === true, 20_000);
  });

  test('two receivers in one stream, the announcement for one: duck interrupts, and ModeReason says why', async () => {
    await t.op('set_party_mode');
    expect((await t.op('play_hub_media', { PersistentID: toneId })).Result).toBe('true');
    const from = rx.map((r) => lab.capturedBytes(r));
    await until('music on both', () => rx.every((r, i) => lab.capturedBytes(r) > from[i] + 88200), 20_000);
    const a = await t.op('announce', { PersistentID: voiceId, DeviceIDList: ids[0], Mode: 'duck' });
    expect(a.Result).toBe('true');
    await until('the announcement done', async () => (await status(a.AnnouncementID)).State === 'done', 30_000);
    const st = await status(a.AnnouncementID);
    expect(st).toMatchObject({ State: 'done', Mode: 'interrupt' });
    expect(st.ModeReason).toContain('AirPlay: the announcement is for some of the receivers sharing one stream (Den would hear it too)');
    await t.op('stop_play');
  });
});

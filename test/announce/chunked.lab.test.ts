/**
 * Issue 28, item 2: Home Assistant serves TTS with `Transfer-Encoding: chunked` and no
 * Content-Length. A virtual speaker used to take any such media as a live stream, so the
 * announcement stayed `playing` for ever and the music never came back. Here a test server
 * does what HA does, with a 3 s WAV and an MP3 made by espeak-ng and ffmpeg, and a live stream
 * that never ends: every announcement must end (at its audio's end, or at
 * speakers.virtual.maxLiveAnnouncementSeconds) and the music must come back, with the
 * announcement loudness off and at its default (the hub then tries a clip first). Time is a
 * ManualClock: "the speaker has played it" is a clock step, taken once the speaker has read
 * the body to its end (its duration is known).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../src/core/clock';
import { startHub, type TestHub, virtualOf } from '../helpers/hub';
import { liveWavHeader } from '../helpers/audio';
import { eventually } from '../helpers/wait';

/** Small for the test (the default is 600), yet longer than the 3 s files, which it also bounds. */
const LIVE_LIMIT_SECONDS = 10;

/** Writes `body` in 16 KiB chunks a few ms apart, as a server streaming what it makes. */
function writeChunked(res: ServerResponse, body: Buffer, contentType: string): void {
  // No Content-Length, chunked, as HA's aiohttp answers.
  res.writeHead(200, { 'Content-Type': contentType, 'Transfer-Encoding': 'chunked' });
  let at = 0;
  const next = () => {
    if (res.destroyed) return;
    if (at >= body.length) return void res.end();
    res.write(body.subarray(at, at + 16384));
    at += 16384;
    setTimeout(next, 5);
  };
  next();
}

describe('announcements of media of unknown length (chunked, live) end, and the music comes back', () => {
  const dir = mkdtempSync(join(tmpdir(), 'speakerhub-chunked-'));
  const live = new Set<ServerResponse>();
  let wav: Buffer;
  let mp3: Buffer;
  let server: Server;
  let base: string;

  beforeAll(async () => {
    // espeak-ng speaks, ffmpeg pads it with silence to exactly 3 s (22.05 kHz mono, espeak's rate).
    execFileSync('espeak-ng', ['-w', join(dir, 'speech.wav'), 'The washing machine has finished']);
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-i', join(dir, 'speech.wav'), '-af', 'apad', '-t', '3', join(dir, 'tts.wav')]);
    // 44.1 kHz at 320 kb/s (at espeak's 22.05 kHz MPEG-2 stops at 160 kb/s): larger than the
    // speaker's first sample, so its end is read from the chunked body. No Xing header: no length in it.
    execFileSync('ffmpeg', [
      '-v',
      'error',
      '-y',
      '-i',
      join(dir, 'tts.wav'),
      '-ar',
      '44100',
      '-c:a',
      'libmp3lame',
      '-b:a',
      '320k',
      '-write_xing',
      '0',
      join(dir, 'tts.mp3'),
    ]);
    wav = readFileSync(join(dir, 'tts.wav'));
    mp3 = readFileSync(join(dir, 'tts.mp3'));
    server = createServer((req, res) => {
      if (req.url === '/tts.wav') return writeChunked(res, wav, 'audio/x-wav');
      if (req.url === '/tts.mp3') return writeChunked(res, mp3, 'audio/mpeg');
      // /live.wav: a header, then silence for ever.
      live.add(res);
      res.writeHead(200, { 'Content-Type': 'audio/wav', 'Transfer-Encoding': 'chunked' });
      res.write(liveWavHeader());
      const tick = setInterval(() => res.write(Buffer.alloc(44100)), 200);
      res.on('close', () => clearInterval(tick));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // What the speakers will get: chunked, no length, the whole file.
    for (const [path, body] of [
      ['/tts.wav', wav],
      ['/tts.mp3', mp3],
    ] as const) {
      const res = await fetch(`${base}${path}`);
      expect([res.headers.get('transfer-encoding'), res.headers.get('content-length')]).toEqual(['chunked', null]);
      expect(Buffer.from(await res.arrayBuffer()).equals(body)).toBe(true);
    }
  });
  afterAll(async () => {
    for (const res of live) res.destroy();
    server?.closeAllConnections();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    rmSync(dir, { recursive: true, force: true });
  });

  // Loudness off: no clip is made, the speaker fetches every MediaUrl itself. The default
  // loudness (what a Home Assistant user has): the hub tries to render a clip, but ffmpeg
  // finds no length in a chunked answer, so the speaker fetches it itself there too.
  describe.each([
    { setting: 'announcements.loudness off', loudness: 'off' as const },
    { setting: 'the default loudness', loudness: undefined },
  ])('with $setting', ({ loudness }) => {
    const clock = new ManualClock();
    let t: TestHub;
    let music: string;
    const speaker = () => virtualOf(t.hub).speaker(0);
    const status = (id: string) => t.op('announcement_status', { AnnouncementID: id });

    beforeAll(async () => {
      t = await startHub(
        { speakers: { virtual: { count: 1, maxLiveAnnouncementSeconds: LIVE_LIMIT_SECONDS } }, announcements: loudness ? { loudness } : {} },
        { clock },
      );
      const media = (await t.op('media_list')).MediaList;
      // The longest sample: the music must outlast the announcements.
      const pid = [...media].sort((a: any, b: any) => b.Duration - a.Duration)[0].PersistentID;
      expect(await t.op('play_hub_media_party_mode', { PersistentID: pid })).toEqual({ Result: 'true' });
      await eventually(() => speaker().state === 'playing', 10_000, 'the music playing');
      music = speaker().fetches.at(-1)!.url;
      clock.advance(1000);
    });
    afterAll(async () => {
      await t?.close();
    });

    /** Announces `path`, waits until the speaker plays it, and returns the AnnouncementID. */
    async function announce(path: string): Promise<string> {
      const before = speaker().fetches.at(-1);
      const r = await t.op('announce', { MediaUrl: `${base}${path}` });
      expect(r.Result).toBe('true');
      await eventually(() => speaker().fetches.at(-1) !== before && speaker().state === 'playing', 10_000, `${path} playing`);
      // The speaker itself fetched the test server's chunked answer (no clip in between).
      expect(speaker().fetches.at(-1)!.url).toBe(`${base}${path}`);
      if (!loudness) expect(t.logs.filter((l) => l.includes('announcement clip not made')).at(-1)).toContain('no known length');
      expect((await status(r.AnnouncementID)).State).toBe('playing');
      return r.AnnouncementID;
    }

    /** The announcement is done and the music plays again on the speaker. */
    async function musicBack(id: string): Promise<void> {
      await eventually(async () => (await status(id)).State === 'done', 10_000, `announcement ${id} done`);
      await eventually(() => speaker().state === 'playing' && speaker().fetches.at(-1)?.url === music, 10_000, 'the music back');
      expect((await t.op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    }

    test.each([
      ['/tts.wav', 3],
      ['/tts.mp3', 3],
    ])('%s served chunked: the announcement ends when its audio does (%d s), then the music is back', async (path, seconds) => {
      const id = await announce(path);
      // The speaker reads the chunked body to its end; then it knows the audio's duration.
      let duration: number | undefined;
      await eventually(
        async () => {
          duration = (await speaker().snapshot()).duration;
          return duration !== undefined;
        },
        10_000,
        `${path} read to its end`,
      );
      // MP3 adds an encoder delay and padding of a frame or two.
      expect(Math.abs(duration! - seconds)).toBeLessThan(0.1);
      // It took the length as unknown at first, and read every byte (counted when the download is done).
      const body = path === '/tts.wav' ? wav : mp3;
      await eventually(() => speaker().fetches.at(-1)!.bytes === body.length, 10_000, `all of ${path} counted`);
      expect(speaker().fetches.at(-1)).toMatchObject({ live: true, duration });
      clock.advance(duration! * 1000 - 200);
      expect(speaker().state).toBe('playing'); // not before its audio has played
      clock.advance(300);
      await musicBack(id);
    });

    test('a live stream that never ends: the announcement ends at speakers.virtual.maxLiveAnnouncementSeconds', async () => {
      const id = await announce('/live.wav');
      expect((await speaker().snapshot()).duration).toBeUndefined();
      clock.advance(LIVE_LIMIT_SECONDS * 1000 - 100);
      expect(speaker().state).toBe('playing');
      clock.advance(200);
      await musicBack(id);
    });
  });
});

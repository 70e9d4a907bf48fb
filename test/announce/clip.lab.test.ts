/**
 * The announcement's audio as one clip (issue 21): the chime, a gap and the speech in ONE
 * play, and every announcement's audio at the target loudness. Virtual speakers really
 * download what they play; the test downloads the same URL and decodes it with ffmpeg
 * (tone detection by Goertzel, levels by RMS, loudness by ffmpeg's ebur128 filter).
 */
import { execFile } from 'node:child_process';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ManualClock } from '../../src/core/clock';
import { encodeWav } from '../../src/audio/wav';
import { startHub, type TestHub, virtualOf } from '../helpers/hub';
import { liveWavHeader, sine, toneAmplitude } from '../helpers/audio';
import { eventually, sleep } from '../helpers/wait';

const run = promisify(execFile);
const RATE = 44100;

/** A tone of `seconds` at `amplitude` (0–1), with a slow (3 Hz) tremolo so it is not a flat sine. */
function tone(seconds: number, freq: number, amplitude: number, title: string): Buffer {
  const s = sine(seconds, freq, 22050, amplitude * 32767, (t) => 0.7 + 0.3 * Math.sin(2 * Math.PI * 3 * t));
  return encodeWav(s, 22050, { title, artist: 'Test', album: '' });
}

/** Mono float samples at 44.1 kHz of what a URL serves (ffmpeg decodes). */
async function decode(url: string, dir: string): Promise<Float32Array> {
  const file = join(dir, `dl-${Date.now()}-${Math.random()}.wav`);
  await writeFile(file, Buffer.from(await (await fetch(url)).arrayBuffer()));
  const { stdout } = await run('ffmpeg', ['-v', 'error', '-i', file, '-ac', '1', '-ar', String(RATE), '-f', 'f32le', '-'], {
    encoding: 'buffer',
    maxBuffer: 64 * 1024 * 1024,
  });
  const buf = Buffer.from(stdout);
  return new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
}

/** Integrated loudness (LUFS) of a URL's audio, by ffmpeg's ebur128 filter. */
async function loudness(url: string, dir: string): Promise<number> {
  const file = join(dir, `lu-${Date.now()}-${Math.random()}.wav`);
  await writeFile(file, Buffer.from(await (await fetch(url)).arrayBuffer()));
  const { stderr } = await run('ffmpeg', ['-hide_banner', '-nostats', '-i', file, '-af', 'ebur128', '-f', 'null', '-']);
  const summary = stderr.slice(stderr.lastIndexOf('Summary:'));
  return Number(/I:\s+(-?[\d.]+) LUFS/.exec(summary)![1]);
}

function rmsDb(x: Float32Array, from: number, to: number): number {
  const a = Math.round(from * RATE);
  const b = Math.min(x.length, Math.round(to * RATE));
  let sum = 0;
  for (let i = a; i < b; i++) sum += x[i] * x[i];
  return 10 * Math.log10(sum / Math.max(1, b - a) + 1e-12);
}

/**
 * Power at one frequency relative to the window's total power (0–1), by Goertzel
 * (toneAmplitude): a tone of amplitude A over n samples has power A²·n/2 there.
 */
function toneShare(x: Float32Array, from: number, to: number, freq: number): number {
  const a = Math.round(from * RATE);
  const b = Math.min(x.length, Math.round(to * RATE));
  let total = 0;
  for (let i = a; i < b; i++) total += x[i] * x[i];
  const amplitude = toneAmplitude(x, RATE, freq, a, b - a);
  return (amplitude * amplitude * (b - a)) / (2 * Math.max(total, 1e-12));
}

describe('announcement clip: chime and speech as one play, at the target loudness', () => {
  const clock = new ManualClock();
  let t: TestHub;
  let dir: string;
  let ids: string[];
  const pids: Record<string, string> = {};
  const speaker = (i: number) => virtualOf(t.hub).speaker(i);
  const status = (id: string) => t.op('announcement_status', { AnnouncementID: id });
  const untilState = (id: string, state: string) => eventually(async () => (await status(id)).State === state, 15_000, `announcement ${id} ${state}`);

  /** Announces, waits until the speaker plays something new, plays it out; returns the URLs it fetched. */
  async function announceOn(i: number, params: Record<string, string>): Promise<string[]> {
    const before = speaker(i).fetches.length;
    const mark = speaker(i).fetches.at(-1);
    const r = await t.op('announce', { DeviceIDList: ids[i], ...params });
    expect(r).toMatchObject({ Result: 'true' });
    await eventually(() => speaker(i).state === 'playing' && speaker(i).fetches.at(-1) !== mark, 15_000, 'announcement playing');
    // Played out in steps: a second play (the old chime-then-speech) would start and be counted.
    for (let k = 0; k < 20 && (await status(r.AnnouncementID)).State !== 'done'; k++) {
      clock.advance(1000);
      await sleep(20);
    }
    await untilState(r.AnnouncementID, 'done');
    return speaker(i)
      .fetches.slice(before)
      .map((f) => f.url);
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'clip-test-'));
    const media = join(dir, 'media');
    await run('mkdir', ['-p', media]);
    // A quiet (-40 dBFS) and a loud (-1 dBFS) source, a quiet chime of its own.
    await writeFile(join(media, 'quiet.wav'), tone(4, 440, 0.01, 'Quiet'));
    await writeFile(join(media, 'loud.wav'), tone(4, 440, 0.9, 'Loud'));
    await writeFile(join(media, 'bell.wav'), tone(0.5, 880, 0.05, 'Bell'));
    t = await startHub({ media: { samples: false, folders: [media], watch: false }, speakers: { virtual: { count: 2 } } }, { clock });
    ids = virtualOf(t.hub)
      .speakers()
      .map((s) => s.id);
    for (const m of (await t.op('media_list')).MediaList) pids[m.Title] = m.PersistentID;
  });
  afterAll(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('Chime=true with Text is ONE play: the chime tone, ~300 ms of silence, then the speech', async () => {
    const plain = await announceOn(0, { Text: 'The washing machine has finished' });
    expect(plain).toHaveLength(1);
    const speech = await decode(plain[0], dir);
    const urls = await announceOn(1, { Text: 'The washing machine has finished', Chime: 'true' });
    expect(urls).toHaveLength(1);
    const clip = await decode(urls[0], dir);
    // Chime (0.9 s) + gap (0.3 s) + the same speech.
    expect(clip.length / RATE).toBeCloseTo(speech.length / RATE + 1.2, 1);
    // The chime's first note (E6, 1318.5 Hz) dominates its first 0.25 s.
    expect(toneShare(clip, 0.01, 0.25, 1318.5)).toBeGreaterThan(0.5);
    // The gap is silent, the speech after it is loud, as loud as the speech alone.
    expect(rmsDb(clip, 0.92, 1.18)).toBeLessThan(-60);
    const speechDb = rmsDb(speech, 0, speech.length / RATE);
    expect(rmsDb(clip, 1.2, clip.length / RATE)).toBeGreaterThan(-35);
    expect(Math.abs(rmsDb(clip, 1.2, clip.length / RATE) - speechDb)).toBeLessThan(1.5);
    // And it is the speech: the clip's tail matches the speech sample for sample (same render of the same parts).
    const off = Math.round(1.2 * RATE);
    let diff = 0;
    let energy = 0;
    for (let i = 0; i < speech.length && off + i < clip.length; i++) {
      diff += (clip[off + i] - speech[i]) ** 2;
      energy += speech[i] ** 2;
    }
    expect(diff / energy).toBeLessThan(0.05);
  });

  test('the clip is cached: the same text with the chime again renders nothing new (the TTS cache touching its file does not matter)', async () => {
    const rendered = () => t.logs.filter((l) => l.includes('announcement clip rendered')).length;
    // The text spoken first: a new text with the chime plays the chime while it is synthesized (other clips).
    await announceOn(0, { Text: 'Cached clip please' });
    const before = rendered();
    const [first] = await announceOn(0, { Text: 'Cached clip please', Chime: 'true' });
    expect(rendered()).toBe(before + 1);
    const [second] = await announceOn(0, { Text: 'Cached clip please', Chime: 'true' });
    expect(rendered()).toBe(before + 1);
    expect(Buffer.from(await (await fetch(second)).arrayBuffer()).length).toBeGreaterThan(0);
    expect(first).toBeDefined();
  });

  test('a PersistentID chime with hub media is one play too', async () => {
    const urls = await announceOn(0, { PersistentID: pids['Quiet'], Chime: pids['Bell'] });
    expect(urls).toHaveLength(1);
    const clip = await decode(urls[0], dir);
    expect(clip.length / RATE).toBeCloseTo(0.5 + 0.3 + 4, 1);
    expect(toneShare(clip, 0.05, 0.45, 880)).toBeGreaterThan(0.5);
    expect(rmsDb(clip, 0.55, 0.75)).toBeLessThan(-60);
    expect(toneShare(clip, 1, 4, 440)).toBeGreaterThan(0.5);
  });

  test('MediaUrl: a web file is rendered at the target loudness; a live stream (no end) is played as it is, at once', async () => {
    const finite = tone(3, 440, 0.9, 'Web');
    const live = new Set<ServerResponse>();
    const server: Server = createServer((req, res) => {
      if (req.url === '/live.wav') {
        // A WAV header with the largest size, then silence for ever: no end to be read.
        live.add(res);
        res.writeHead(200, { 'Content-Type': 'audio/wav' });
        res.write(liveWavHeader());
        const tick = setInterval(() => res.write(Buffer.alloc(44100)), 500);
        res.on('close', () => clearInterval(tick));
        return;
      }
      res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': finite.length }).end(finite);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const [url] = await announceOn(0, { MediaUrl: `${base}/file.wav` });
      expect(url.startsWith(base)).toBe(false);
      expect(Math.abs((await loudness(url, dir)) + 16)).toBeLessThan(1);

      const mark = speaker(1).fetches.at(-1);
      const r = await t.op('announce', { MediaUrl: `${base}/live.wav`, DeviceIDList: ids[1] });
      await eventually(() => speaker(1).state === 'playing' && speaker(1).fetches.at(-1) !== mark, 10_000, 'the live stream playing');
      expect(speaker(1).fetches.at(-1)!.url).toBe(`${base}/live.wav`);
      expect(t.logs.filter((l) => l.includes('announcement clip not made')).at(-1)).toContain('no known length');
      await t.op('stop_play');
      await untilState(r.AnnouncementID, 'done');
    } finally {
      for (const res of live) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  test('loudness: a quiet and a loud source, and speech, come out within ±1 LU of -16 LUFS', async () => {
    const measured: Record<string, number> = {};
    for (const name of ['Quiet', 'Loud']) {
      const [url] = await announceOn(0, { PersistentID: pids[name] });
      measured[name] = await loudness(url, dir);
    }
    // The sources themselves are far apart (about -43 and -4 LUFS).
    for (const [i, text] of ['Dinner is ready', 'Someone is at the front door, please open it', 'Ok'].entries()) {
      const [url] = await announceOn(1, { Text: text, Voice: i === 1 ? 'de' : 'en' });
      measured[text] = await loudness(url, dir);
    }
    for (const [what, lufs] of Object.entries(measured)) expect({ what, off: Math.abs(lufs + 16) < 1 }).toEqual({ what, off: true });
  });
});

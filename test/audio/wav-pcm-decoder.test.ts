/**
 * The in-process WAV source behind a Snapcast feed of an announcement clip (no ffmpeg spawned):
 * what it converts, served over real HTTP, and how it hands anything else to ffmpeg.
 */
import { createServer, type Server } from 'node:http';
import { PcmDecoder, type PcmSink } from '../../src/audio/pcm-decoder';
import { convertWav, inProcessCandidate, pcmSourceFor, WavPcmDecoder } from '../../src/audio/wav-pcm-decoder';
import { readWavInfo } from '../../src/audio/pcm-wav';
import { makeWav } from '../rest/util';
import { captureLogger } from '../media/helpers';
import { eventually } from '../helpers/wait';

const { logger } = captureLogger('silent');
const MISSING_FFMPEG = '/nonexistent/speakerhub-test/ffmpeg';
let server: Server;
let base: string;
const bodies = new Map<string, Buffer>();

beforeAll(async () => {
  bodies.set('/tone.wav', makeWav(1, 22050));
  bodies.set('/long.wav', makeWav(20, 8000));
  bodies.set('/not-really.wav', Buffer.from('ID3 this is no RIFF header at all'.repeat(4)));
  server = createServer((req, res) => {
    const body = bodies.get(req.url ?? '');
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': body.length }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise((r) => server.close(r)));

/** Collects what a source hands on; paused by the test when `hold` is set. */
function collector(hold?: { pauseAfter: number; source: () => WavPcmDecoder }) {
  const chunks: Buffer[] = [];
  let ended: string | undefined | null = null;
  const sink: PcmSink = {
    data: (c) => {
      chunks.push(c);
      if (hold && chunks.length === hold.pauseAfter) hold.source().pause();
      return true;
    },
    end: (failure) => {
      ended = failure;
    },
  };
  return { sink, chunks, all: () => Buffer.concat(chunks), ended: () => ended };
}

const int16 = (b: Buffer) => new Int16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));

describe('WAV converted in process', () => {
  test('picks the in-process source for an http(s) WAV by type or path, ffmpeg for the rest', () => {
    expect(inProcessCandidate('http://h/x/clip.wav')).toBe(true);
    expect(inProcessCandidate('https://h/x/clip', 'audio/x-wav; charset=binary')).toBe(true);
    expect(inProcessCandidate('http://h/x/clip.mp3', 'audio/mpeg')).toBe(false);
    expect(inProcessCandidate('file:///x/clip.wav')).toBe(false);
    expect(inProcessCandidate('not a url')).toBe(false);
    const o = { format: { rate: 48000, bits: 16 as const, channels: 2 }, ffmpegPath: 'ffmpeg', startTimeoutMs: 1000, what: 'x', logger };
    expect(pcmSourceFor({ ...o, url: 'http://h/a.wav' })).toBeInstanceOf(WavPcmDecoder);
    expect(pcmSourceFor({ ...o, url: 'http://h/a.mp3' })).toBeInstanceOf(PcmDecoder);
  });

  test('the same format comes out sample for sample', () => {
    const wav = makeWav(0.5, 8000);
    const info = readWavInfo(wav)!;
    const out = Buffer.concat([...convertWav(wav, info, { rate: 8000, bits: 16, channels: 1 }, 0, 0)]);
    expect(out.equals(wav.subarray(info.dataOffset))).toBe(true);
  });

  test("22 kHz mono to 48 kHz stereo keeps the tone's pitch, level and length", () => {
    const wav = makeWav(1, 22050);
    const info = readWavInfo(wav)!;
    const s = int16(Buffer.concat([...convertWav(wav, info, { rate: 48000, bits: 16, channels: 2 }, 0, 0)]));
    const frames = s.length / 2;
    expect(Math.abs(frames - 48000)).toBeLessThanOrEqual(3);
    let crossings = 0;
    let peak = 0;
    let unequal = 0;
    for (let i = 0; i < frames; i++) {
      if (s[2 * i] !== s[2 * i + 1]) unequal++;
      if (i > 0 && s[2 * (i - 1)] < 0 && s[2 * i] >= 0) crossings++;
      peak = Math.max(peak, Math.abs(s[2 * i]));
    }
    expect(unequal).toBe(0);
    // makeWav is a 440 Hz sine at 8000 peak: 440 upward crossings in a second.
    expect(Math.abs(crossings - 440)).toBeLessThanOrEqual(1);
    expect(peak).toBeGreaterThan(7900);
    expect(peak).toBeLessThanOrEqual(8000);
  });

  test('startAt skips into the clip, padMs adds silence, 32-bit output scales the samples', () => {
    const wav = makeWav(1, 8000);
    const info = readWavInfo(wav)!;
    const out = Buffer.concat([...convertWav(wav, info, { rate: 8000, bits: 32, channels: 1 }, 0.5, 250)]);
    expect(out.length).toBe((4000 + 2000) * 4);
    expect(out.readInt32LE(0)).toBe(wav.readInt16LE(info.dataOffset + 4000 * 2) * 65536);
    expect(out.subarray(4000 * 4).every((b) => b === 0)).toBe(true);
  });

  test('fetched over HTTP: resolves at the first PCM, holds while paused, ends once with everything', async () => {
    const c = collector({ pauseAfter: 3, source: () => source });
    const source = new WavPcmDecoder({
      url: `${base}/long.wav`,
      format: { rate: 8000, bits: 16, channels: 1 },
      ffmpegPath: MISSING_FFMPEG,
      startTimeoutMs: 5000,
      what: 'the media',
      logger,
    });
    await source.start(c.sink);
    await eventually(() => c.chunks.length >= 3);
    expect(source.paused).toBe(true);
    // Paused: nothing more comes until resume (the decode would otherwise run ahead unbounded).
    await new Promise((r) => setImmediate(r));
    expect(c.chunks.length).toBe(3);
    expect(source.exited).toBe(false);
    source.resume();
    await eventually(() => c.ended() !== null);
    expect(c.ended()).toBeUndefined();
    expect(source.exited).toBe(true);
    expect(c.all().length).toBe(20 * 8000 * 2);
  });

  test('what is not a PCM WAV after all goes to ffmpeg (here a missing one, so its error shows)', async () => {
    for (const p of ['/not-really.wav', '/missing.wav']) {
      const source = new WavPcmDecoder({
        url: `${base}${p}`,
        format: { rate: 8000, bits: 16, channels: 1 },
        ffmpegPath: MISSING_FFMPEG,
        startTimeoutMs: 5000,
        what: 'the media',
        logger,
      });
      await expect(source.start(collector().sink)).rejects.toThrow(/cannot run ffmpeg/);
    }
  });

  test('a stop before the first PCM rejects the start', async () => {
    const source = new WavPcmDecoder({
      url: `${base}/tone.wav`,
      format: { rate: 48000, bits: 16, channels: 2 },
      ffmpegPath: MISSING_FFMPEG,
      startTimeoutMs: 5000,
      what: 'the media',
      logger,
    });
    const started = source.start(collector().sink);
    source.stop();
    await expect(started).rejects.toThrow(/replaced before it started/);
  });
});

/**
 * The one ffmpeg PCM decode behind the Snapcast feed and the ducked announcement's voice,
 * run with the real ffmpeg: what it decodes, and every way a start fails.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ffmpegInputUrl, PcmDecoder, pcmDecodeArgs, type PcmSink } from '../../src/audio/pcm-decoder';
import { makeWav } from '../rest/util';
import { captureLogger, tempDir } from '../media/helpers';
import { eventually } from '../helpers/wait';

const FORMAT = { rate: 8000, bits: 16 as const, channels: 1 };
const BPS = 16000;
const tmp = tempDir();
const wav = path.join(tmp.dir, 'tone.wav');
/** A TCP server that accepts and never answers: ffmpeg waits on it until stopped or timed out. */
let silent: Server;
let silentUrl: string;
const silentSockets = new Set<Socket>();
/** 20 s of PCM: more than the pipe and the stream buffer hold, so a paused decode really waits. */
const longWav = path.join(tmp.dir, 'long.wav');

beforeAll(async () => {
  writeFileSync(wav, makeWav(1, 8000));
  writeFileSync(longWav, makeWav(20, 8000));
  silent = createServer((socket) => {
    silentSockets.add(socket);
    socket.on('close', () => silentSockets.delete(socket));
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  silentUrl = `http://127.0.0.1:${(silent.address() as { port: number }).port}/never.mp3`;
});
afterAll(async () => {
  for (const socket of silentSockets) socket.destroy();
  await new Promise((r) => silent.close(r));
  tmp.cleanup();
});

/**
 * An ffmpeg process decoding `file` is blocked writing its output (Linux: a thread of it waits in
 * the kernel to send; Node's child stdio is a socket pair, a shell's a pipe).
 */
function ffmpegWaitsToWrite(file: string): boolean {
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmd.startsWith('ffmpeg') || !cmd.includes(file)) continue;
      for (const task of readdirSync(`/proc/${pid}/task`)) {
        if (/pipe_write|sock_alloc_send/.test(readFileSync(`/proc/${pid}/task/${task}/wchan`, 'utf8'))) return true;
      }
    } catch {
      // the process ended while we looked
    }
  }
  return false;
}

/** Collects what a decode writes; `done` resolves at its end with the bytes and the failure, if any. */
function collector(): { sink: PcmSink; bytes: () => number; done: Promise<string | undefined> } {
  let bytes = 0;
  let end!: (failure?: string) => void;
  const done = new Promise<string | undefined>((r) => (end = r));
  return {
    sink: {
      data: (chunk) => {
        bytes += chunk.length;
        return true;
      },
      end: (failure) => end(failure),
    },
    bytes: () => bytes,
    done,
  };
}

/** Every decoder a test made: stopped after it, so a failed test leaves no ffmpeg behind. */
const made: PcmDecoder[] = [];
afterEach(() => {
  for (const d of made.splice(0)) d.stop();
});

function decoder(url: string, extra: Partial<ConstructorParameters<typeof PcmDecoder>[0]> = {}): PcmDecoder {
  const d = new PcmDecoder({
    url,
    format: FORMAT,
    ffmpegPath: 'ffmpeg',
    startTimeoutMs: 10_000,
    what: 'the media',
    logger: captureLogger().logger,
    ...extra,
  });
  made.push(d);
  return d;
}

describe('PcmDecoder', () => {
  test('decodes a whole file to raw PCM in the asked format', async () => {
    const c = collector();
    await decoder(wav).start(c.sink);
    expect(await c.done).toBeUndefined();
    expect(c.bytes()).toBe(BPS); // one second of 8 kHz 16-bit mono
  });

  test('startAt skips into the media and padMs adds silence after it', async () => {
    const c = collector();
    await decoder(wav, { startAt: 0.5, padMs: 250 }).start(c.sink);
    await c.done;
    expect(c.bytes()).toBe(0.75 * BPS);
  });

  test('pause() holds ffmpeg back until resume()', async () => {
    let bytes = 0;
    let ended = false;
    const d = decoder(longWav);
    const sink: PcmSink = {
      data: (chunk) => {
        bytes += chunk.length;
        d.pause();
        return true;
      },
      end: () => (ended = true),
    };
    await d.start(sink);
    const held = bytes;
    // The positive signal that it is held back: ffmpeg waits in the kernel to write its output.
    await eventually(() => ffmpegWaitsToWrite(longWav), 10_000, 'ffmpeg blocked writing its output');
    expect({ paused: d.paused, ended, bytes }).toEqual({ paused: true, ended: false, bytes: held });
    expect(held).toBeLessThan(20 * BPS);
    // Resumed after every chunk from now on: the rest arrives and the decode ends.
    sink.data = (chunk) => {
      bytes += chunk.length;
      return true;
    };
    d.resume();
    await new Promise<void>((r) => {
      sink.end = () => r();
    });
    expect(bytes).toBe(20 * BPS);
  });

  test('a media that does not play: one message, whatever the cause; the cause is logged without secrets', async () => {
    const log = captureLogger();
    const missing = path.join(tmp.dir, 'missing.wav');
    await expect(decoder(missing, { logger: log.logger }).start(collector().sink)).rejects.toThrow(
      'ffmpeg could not play the media: the media URL could not be fetched or does not serve audio',
    );
    const entry = log.entries().find((e) => e.msg === 'ffmpeg could not play the media');
    expect(entry).toBeDefined();
    const capability = 'http://127.0.0.1:1/media/abc123secretcapabilityid0123456789/x.mp3';
    const log2 = captureLogger();
    await expect(decoder(capability, { logger: log2.logger }).start(collector().sink)).rejects.toThrow('ffmpeg could not play the media');
    expect(log2.entries().some((e) => e.msg === 'ffmpeg could not play the media')).toBe(true);
    expect(log2.raw.join('')).not.toContain('abc123secretcapabilityid0123456789');
  });

  test('no ffmpeg: the start fails with the reason', async () => {
    await expect(decoder(wav, { ffmpegPath: path.join(tmp.dir, 'no-ffmpeg') }).start(collector().sink)).rejects.toThrow(/cannot run ffmpeg/);
  });

  test('no audio within the start timeout: rejected with what the media is called', async () => {
    await expect(decoder(silentUrl, { startTimeoutMs: 400, what: 'the announcement' }).start(collector().sink)).rejects.toThrow(
      'no audio from the announcement within 400 ms',
    );
  });

  test('stopped before the first PCM: the start rejects at once, not at the timeout', async () => {
    const d = decoder(silentUrl, { startTimeoutMs: 60_000 });
    const started = d.start(collector().sink);
    // Stopped once ffmpeg is connected to the silent server (it waits there for an answer).
    await new Promise<void>((r) => silent.once('connection', () => r()));
    d.stop();
    await expect(started).rejects.toThrow('playback was replaced before it started');
  });
});

describe('ffmpeg arguments', () => {
  test("the spec's rstp typo and mms URLs are given to ffmpeg as it knows them", () => {
    expect(ffmpegInputUrl('rstp://h/live')).toBe('rtsp://h/live');
    expect(ffmpegInputUrl('MMS://h/live')).toBe('mmsh://h/live');
    expect(ffmpegInputUrl('http://h/mms:x')).toBe('http://h/mms:x');
  });

  test('HTTP inputs get a read timeout; 32-bit formats decode to s32le', () => {
    const args = pcmDecodeArgs({ url: 'http://h/a.mp3', format: { rate: 48000, bits: 32, channels: 2 } });
    expect(args.slice(args.indexOf('-rw_timeout'), args.indexOf('-rw_timeout') + 2)).toEqual(['-rw_timeout', '15000000']);
    expect(args.slice(args.indexOf('-f'), args.indexOf('-f') + 4)).toEqual(['-f', 's32le', '-acodec', 'pcm_s32le']);
    expect(pcmDecodeArgs({ url: '/x.wav', format: FORMAT })).not.toContain('-rw_timeout');
  });
});

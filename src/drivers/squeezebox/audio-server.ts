import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../logger';
import { ffmpegInput, startFfmpeg } from '../../audio/ffmpeg';
import type { StreamFormat } from './protocol';

/** Sample rate of everything the hub sends: the players' positions are frames of it. */
export const STREAM_RATE = 44100;

/** What the hub sends a player: ffmpeg's decode of `url` from `startAt`, in the player's codec. */
export interface AudioOffer {
  url: string;
  /** Seconds into the media. */
  startAt: number;
  codec: 'pcm' | 'flac' | 'mp3';
  /** The player connected for it (the announce latency ends here). */
  onFetch?(): void;
  /** ffmpeg could not decode the media. */
  onError?(detail: string): void;
}

export const STREAM_FORMATS: Record<AudioOffer['codec'], { format: StreamFormat; ffmpeg: string[]; contentType: string }> = {
  // Raw PCM: no header, byte offsets are time, every squeezelite has it.
  pcm: {
    format: { codec: 'p', sampleSize: '1', sampleRate: '3', channels: '2', endian: '1' },
    ffmpeg: ['-f', 's16le', '-acodec', 'pcm_s16le'],
    contentType: 'audio/L16;rate=44100;channels=2',
  },
  flac: { format: { codec: 'f' }, ffmpeg: ['-f', 'flac', '-compression_level', '0'], contentType: 'audio/flac' },
  mp3: { format: { codec: 'm' }, ffmpeg: ['-f', 'mp3', '-b:a', '320k'], contentType: 'audio/mpeg' },
};

/** An offer not fetched within this time is dropped (ms). */
const OFFER_TTL_MS = 60_000;
/** Most offers waiting at once (a player gets one per play). */
const MAX_OFFERS = 256;

/**
 * The HTTP server the players fetch their audio from: one unguessable path per play (128-bit
 * token), fetched once, whose body is ffmpeg's decode of the media (hub media, web media, TTS)
 * from the play's start offset. The player's reads pace ffmpeg (TCP back pressure), so memory
 * stays bounded; at most `maxStreams` decodes run at once.
 */
export class AudioServer {
  private server?: Server;
  private readonly offers = new Map<string, AudioOffer & { expires: number }>();
  private readonly running = new Set<ServerResponse>();
  port = 0;

  constructor(private readonly opts: { host?: string; port: number; logger: Logger; maxStreams: number; ffmpegPath?: string }) {}

  async start(): Promise<void> {
    const server = createServer((req, res) => this.handle(req, res));
    server.on('clientError', (_e, socket) => socket.destroy());
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.opts.port, this.opts.host, () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const res of this.running) res.destroy();
    this.offers.clear();
    const closed = new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
    this.server?.closeAllConnections();
    await closed;
  }

  /** Registers a play; returns the request path the player asks for. */
  offer(offer: AudioOffer): string {
    const now = Date.now();
    for (const [k, o] of this.offers) if (o.expires < now) this.offers.delete(k);
    while (this.offers.size >= MAX_OFFERS) this.offers.delete(this.offers.keys().next().value!);
    const token = randomBytes(16).toString('hex');
    this.offers.set(token, { ...offer, expires: now + OFFER_TTL_MS });
    return `/sb/${token}`;
  }

  revoke(path: string): void {
    this.offers.delete(path.replace(/^\/sb\//, ''));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const m = /^\/sb\/([0-9a-f]{32})$/.exec(req.url ?? '');
    const offer = m ? this.offers.get(m[1]) : undefined;
    if (!m || !offer || req.method !== 'GET') {
      res.writeHead(404).end();
      return;
    }
    this.offers.delete(m[1]);
    if (this.running.size >= this.opts.maxStreams) {
      this.opts.logger.warn({ streams: this.running.size }, 'squeezebox: too many audio streams at once; one refused');
      res.writeHead(503).end();
      offer.onError?.('too many audio streams at once');
      return;
    }
    offer.onFetch?.();
    const kind = STREAM_FORMATS[offer.codec];
    const run = startFfmpeg([...ffmpegInput(offer.url, offer.startAt), '-vn', '-ar', String(STREAM_RATE), '-ac', '2', ...kind.ffmpeg, 'pipe:1'], {
      ffmpegPath: this.opts.ffmpegPath,
    });
    const ff = run.proc;
    this.running.add(res);
    let startError = '';
    let sent = 0;
    ff.stdout.on('data', (d: Buffer) => (sent += d.length));
    // The answer waits for ffmpeg's first audio: a media that does not play (a 404, not audio)
    // is then an error answer the player never buffers, and the play fails at once with the
    // reason, instead of a player that "plays" an empty stream and ends 0.8 s later.
    ff.stdout.once('data', (first: Buffer) => {
      if (res.destroyed) return;
      res.writeHead(200, { 'Content-Type': kind.contentType, Connection: 'close' });
      res.write(first);
      ff.stdout.pipe(res);
    });
    ff.on('error', (e) => (startError = run.startError(e)));
    ff.on('close', (code) => {
      if (sent) return;
      if (!res.headersSent) res.writeHead(502, { Connection: 'close' }).end();
      const why = startError || run.lastLine() || (code ? `ffmpeg exit ${code}` : 'it holds no audio');
      offer.onError?.(`the media could not be decoded: ${why}`);
    });
    res.on('close', () => {
      this.running.delete(res);
      run.kill();
    });
  }
}

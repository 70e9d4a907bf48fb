import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodeWav } from '../../../src/audio/wav';

/**
 * The media the conformance suite plays: a real HTTP server whose every path
 * /tone-<seconds>-<hz>.wav (any suffix after it, to make distinct URLs) is a mono 16-bit sine of
 * that length and pitch, loud enough to find in a peer's captured output. It listens on `host`
 * (the bridge address for labs whose speakers live in network namespaces).
 */
export interface ConformanceMedia {
  /** URL of a `seconds`-long tone at `hz`; `tag` makes an otherwise equal URL distinct. */
  url(seconds: number, hz?: number, tag?: string): string;
  /** The paths asked for so far, oldest first (bounded). */
  readonly requests: string[];
  close(): Promise<void>;
}

const RATE = 22050;
/** The cache of encoded tones is bounded: the suite asks for a handful. */
const MAX_CACHED = 16;

function tone(seconds: number, hz: number): Buffer {
  const samples = new Int16Array(Math.round(RATE * seconds)).map((_, i) => Math.round(12000 * Math.sin((2 * Math.PI * hz * i) / RATE)));
  return encodeWav(samples, RATE, { title: `Tone ${hz} Hz`, artist: 'Conformance', album: 'Conformance' });
}

export async function startConformanceMedia(host = '127.0.0.1'): Promise<ConformanceMedia> {
  const cache = new Map<string, Buffer>();
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const m = /^\/tone-(\d+(?:\.\d+)?)-(\d+)(?:-[\w.-]*)?\.wav$/.exec((req.url ?? '').split('?')[0]);
    requests.push(req.url ?? '');
    if (requests.length > 200) requests.shift();
    const seconds = m ? Number(m[1]) : NaN;
    const hz = m ? Number(m[2]) : NaN;
    if (!(seconds > 0 && seconds <= 120 && hz > 0 && hz < 10000)) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
      return;
    }
    const key = `${seconds}-${hz}`;
    let wav = cache.get(key);
    if (!wav) {
      wav = tone(seconds, hz);
      if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value as string);
      cache.set(key, wav);
    }
    // Byte ranges, as the hub's media server serves them: renderers seek (startAt, restore) by Range.
    const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
    let body = wav;
    let status = 200;
    const head: Record<string, string | number> = { 'Content-Type': 'audio/wav', 'Accept-Ranges': 'bytes' };
    if (range && (range[1] || range[2])) {
      const start = range[1] ? Number(range[1]) : Math.max(0, wav.length - Number(range[2]));
      const end = range[1] && range[2] ? Math.min(Number(range[2]), wav.length - 1) : wav.length - 1;
      if (start > end || start >= wav.length) {
        res.writeHead(416, { 'Content-Range': `bytes */${wav.length}` }).end();
        return;
      }
      body = wav.subarray(start, end + 1);
      status = 206;
      head['Content-Range'] = `bytes ${start}-${end}/${wav.length}`;
    }
    head['Content-Length'] = body.length;
    if (req.method === 'HEAD') res.writeHead(status, head).end();
    else res.writeHead(status, head).end(body);
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (seconds, hz = 440, tag) => `http://${host}:${port}/tone-${seconds}-${hz}${tag ? `-${tag}` : ''}.wav`,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parseFile } from 'music-metadata';
import { HubError } from '../../src/core/errors';
import { createTtsProvider, TtsService } from '../../src/tts/service';
import { VoiceRssProvider } from '../../src/tts/voicerss';
import { captureLogger, silentMp3, tempDir } from './helpers';

const KEY = 'test-key-5f0c2a';
const LANGUAGES = new Set(['en-us', 'en-gb', 'de-de']);
const AUDIO = silentMp3(1);

interface Received {
  method: string;
  contentType?: string;
  url: string;
  fields: Record<string, string>;
}

/** A stand-in for api.voicerss.org following its documented contract. */
function voiceRssServer(received: Received[]): Server {
  return createServer(async (req, res) => {
    const fields = await readFields(req);
    received.push({ method: req.method ?? '', contentType: req.headers['content-type'], url: req.url ?? '', fields });
    // Like the real service, every failure is HTTP 200 with a text body.
    const fail = (message: string): void => {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' }).end(`ERROR: ${message}`);
    };
    if (fields.key !== KEY) return fail('The API key is not available!');
    if (!fields.src) return fail('The textual content is not specified!');
    if (!LANGUAGES.has(fields.hl ?? '')) return fail('The language does not support!');
    if (fields.c !== 'MP3') return fail('The audio codec does not support!');
    if (!/^\d+khz_\d+bit_(mono|stereo)$/.test(fields.f ?? '')) return fail('The audio format does not support!');
    res.writeHead(200, { 'Content-Type': 'audio/mpeg', 'Content-Length': AUDIO.length }).end(AUDIO);
  });
}

async function readFields(req: IncomingMessage): Promise<Record<string, string>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const query = new URL(req.url ?? '/', 'http://x').searchParams;
  const form = req.method === 'POST' ? new URLSearchParams(Buffer.concat(chunks).toString('utf8')) : query;
  return Object.fromEntries(form);
}

let server: Server;
let baseUrl: string;
let received: Received[];
let tmp: ReturnType<typeof tempDir>;

beforeAll(async () => {
  received = [];
  server = voiceRssServer(received);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  received.length = 0;
  tmp = tempDir('voicerss');
});
afterEach(() => tmp.remove());

test('posts the documented form fields and saves the MP3', async () => {
  const provider = new VoiceRssProvider({ key: KEY, baseUrl });
  expect(provider.format).toEqual({ ext: 'mp3', contentType: 'audio/mpeg' });
  const out = join(tmp.dir, 'a.mp3');
  await provider.synthesize('Hello & goodbye, 100% sure?', 'en-gb:Alice', out);

  expect(received).toHaveLength(1);
  const [req] = received;
  expect(req.method).toBe('POST');
  expect(req.url).toBe('/'); // nothing, least of all the key, in the URL
  expect(req.contentType).toBe('application/x-www-form-urlencoded');
  expect(req.fields).toEqual({ key: KEY, src: 'Hello & goodbye, 100% sure?', hl: 'en-gb', v: 'Alice', r: '0', c: 'MP3', f: '44khz_16bit_stereo' });

  expect(readFileSync(out).equals(AUDIO)).toBe(true);
  const { format } = await parseFile(out);
  expect(format.codec).toBe('MPEG 1 Layer 3');
  expect(format.duration).toBeGreaterThan(0.9);
});

test("'en' and an empty voice mean the configured language; no v is sent", async () => {
  const provider = new VoiceRssProvider({ key: KEY, baseUrl, language: 'de-de' });
  await provider.synthesize('Hallo', 'en', join(tmp.dir, 'b.mp3'));
  await provider.synthesize('Hallo', '', join(tmp.dir, 'c.mp3'));
  await provider.synthesize('Hello', 'EN-US', join(tmp.dir, 'd.mp3'));
  expect(received.map((r) => [r.fields.hl, r.fields.v])).toEqual([
    ['de-de', undefined],
    ['de-de', undefined],
    ['en-us', undefined],
  ]);
});

test("an unsupported language rejects with VoiceRSS's message", async () => {
  const provider = new VoiceRssProvider({ key: KEY, baseUrl });
  await expect(provider.synthesize('Hello', 'xx-yy', join(tmp.dir, 'e.mp3'))).rejects.toThrow('ERROR: The language does not support!');
});

test('a wrong key surfaces through TtsService as TtsFailed with the message, and the key is never logged', async () => {
  const wrongKey = 'wrong-key-91d7e3';
  const { logger, text } = captureLogger();
  const provider = createTtsProvider({ provider: 'voicerss', voicerss: { key: wrongKey, baseUrl } });
  const tts = new TtsService({ provider, cacheDir: tmp.dir, voice: 'en-us', logger });

  const e = await tts.speak('Hello there').then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(HubError);
  expect((e as HubError).code).toBe('TtsFailed');
  expect((e as HubError).message).toContain('ERROR: The API key is not available!');
  expect(received[0].fields.key).toBe(wrongKey);
  expect(text()).toContain('The API key is not available!');
  expect(text()).not.toContain(wrongKey);
});

test('the right key through TtsService gives a cached MP3 with its duration', async () => {
  const provider = createTtsProvider({ provider: 'voicerss', voicerss: { key: KEY, baseUrl } });
  const tts = new TtsService({ provider, cacheDir: tmp.dir, voice: 'en-us', logger: captureLogger().logger });
  const audio = await tts.speak('Hello there');
  expect(audio.file).toMatch(/\.mp3$/);
  expect(audio.contentType).toBe('audio/mpeg');
  expect(audio.duration).toBeGreaterThan(0.9);
  await tts.speak('Hello there');
  expect(received).toHaveLength(1);
});

test('an unreachable service rejects with the network reason', async () => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const provider = new VoiceRssProvider({ key: KEY, baseUrl: `http://127.0.0.1:${port}/` });
  await expect(provider.synthesize('Hello', 'en', join(tmp.dir, 'f.mp3'))).rejects.toThrow(/VoiceRSS unreachable.*ECONNREFUSED/);
});

test('a service that does not answer in time is given up on', async () => {
  const silent = createServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  try {
    const port = (silent.address() as AddressInfo).port;
    const provider = new VoiceRssProvider({ key: KEY, baseUrl: `http://127.0.0.1:${port}/`, timeoutMs: 200 });
    await expect(provider.synthesize('Hello', 'en', join(tmp.dir, 'g.mp3'))).rejects.toThrow('VoiceRSS unreachable: no answer in time');
  } finally {
    silent.closeAllConnections();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  }
});

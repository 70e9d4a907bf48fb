/**
 * Virtual speakers' downloads (issue 7, item 6): streamed and counted, only the head kept, one
 * download shared by every virtual speaker of a play, and checked to be audio.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt } from '../upnp/lab';
import { JsonLines, eventually, terminate } from '../upnp/processes';
import { startHub, type TestHub } from '../helpers/hub';

const MiB = 1024 * 1024;
const BIG = 300 * MiB;

/** A WAV header for `dataBytes` of 8 kHz mono 16-bit PCM (the body is silence, streamed). */
function wavHeader(dataBytes: number): Buffer {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'latin1');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVEfmt ', 8, 'latin1');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(8000, 24);
  h.writeUInt32LE(16000, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'latin1');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

interface Web {
  url: (p: string) => string;
  hits: Map<string, number>;
  /** Bytes fully sent per path (counted when a response finished). */
  finished: Map<string, number>;
  close: () => Promise<void>;
}

async function webServer(): Promise<Web> {
  const hits = new Map<string, number>();
  const finished = new Map<string, number>();
  const zeros = Buffer.alloc(64 * 1024);
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path === '/page.mp3') {
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><title>Not found</title><p>Sorry.');
      return;
    }
    // A big file streamed from nothing (the server holds no copy either), with backpressure.
    const header = wavHeader(BIG - 44);
    res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': BIG });
    res.write(header);
    let sent = 44;
    const pump = () => {
      while (sent < BIG) {
        const n = Math.min(zeros.length, BIG - sent);
        sent += n;
        if (!res.write(n === zeros.length ? zeros : zeros.subarray(0, n))) return void res.once('drain', pump);
      }
      res.end();
    };
    res.on('finish', () => finished.set(path, (finished.get(path) ?? 0) + sent));
    pump();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (p) => `http://127.0.0.1:${port}${p}`,
    hits,
    finished,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

describe('virtual speaker downloads', () => {
  let web: Web;
  beforeAll(async () => {
    web = await webServer();
  });
  afterAll(async () => {
    await web?.close();
  });

  test('a 300 MiB file in party mode: one download, RSS grows < 100 MiB, every speaker plays with the duration from the header', async () => {
    ensureBuilt();
    const dataDir = mkdtempSync(join(tmpdir(), 'speakerhub-rss-'));
    const token = 'rss-test-token-0123456789abcdef';
    const child = spawn(process.execPath, ['--expose-gc', join(__dirname, 'rss-child.js'), JSON.stringify({ dataDir, token })], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const lines = new JsonLines<{ evt: string; url?: string; rss?: number; fetches?: any[] }>(child);
    try {
      const { url } = await lines.waitFor((e) => e.evt === 'ready', 30_000, 'the child hub');
      const get = async (path: string) => (await fetch(url + path, { headers: { Authorization: `Bearer ${token}` } })).json() as Promise<any>;
      const session = (await get('/api/v1/init_session')).SessionToken;
      const op = (name: string, params: Record<string, string> = {}) => get(`/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`);
      const ask = async (cmd: string, evt: string) => {
        const from = lines.events.length;
        child.stdin!.write(`${cmd}\n`);
        return lines.waitFor((e) => e.evt === evt, 10_000, cmd, from);
      };

      const before = (await ask('rss', 'rss')).rss!;
      expect(await op('play_web_media_party_mode', { MediaUrl: web.url('/big.wav') })).toEqual({ Result: 'true' });
      // Positive signal: the whole file went out, and each speaker's record counted all of it.
      await eventually(() => web.finished.get('/big.wav') === BIG, 120_000, 'the whole file sent');
      await eventually(async () => (await ask('fetches', 'fetches')).fetches!.every((f) => f?.bytes === BIG), 10_000, 'the download counted to its end');
      const after = (await ask('rss', 'rss')).rss!;

      expect(web.hits.get('/big.wav')).toBe(1);
      const fetches = (await ask('fetches', 'fetches')).fetches!;
      for (const f of fetches) expect(f).toMatchObject({ bytes: BIG, live: false, duration: (BIG - 44) / 16000 });
      const list = (await op('device_list')).DeviceList as { IsPlaying: boolean }[];
      expect(list.map((d) => d.IsPlaying)).toEqual([true, true, true]);
      if (process.env.SPEAKERHUB_REPORT) console.log(`RSS growth for a ${BIG / MiB} MiB party play: ${((after - before) / MiB).toFixed(1)} MiB`);
      // The numbers in the failure message say by how much.
      expect({ growthMiB: Math.round((after - before) / MiB), ok: after - before < 100 * MiB }).toMatchObject({ ok: true });
      await op('stop_play');
    } finally {
      child.stdin!.end();
      await terminate(child, 'SIGTERM', 5000);
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);

  describe('in process', () => {
    let t: TestHub;
    beforeAll(async () => {
      t = await startHub({ speakers: { virtual: { count: 2 } } });
    });
    afterAll(async () => {
      await t?.close();
    });

    test('a URL that answers 200 with an HTML page is not audio: PlaybackFailed, the cause in the debug log', async () => {
      const r = await t.op('play_web_media_party_mode', { MediaUrl: web.url('/page.mp3') });
      expect(r).toMatchObject({ Result: 'false', ErrorCode: 'PlaybackFailed' });
      expect(r.ErrorMessage).toContain('does not serve audio');
      const causes = t.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'media fetch failed').map((l) => l.cause);
      expect(causes).toContain('not audio: content type text/html, no known audio signature');
      expect(web.hits.get('/page.mp3')).toBe(1);
    });

    test('stopping a play lets go of its download: the big file is not read to its end', async () => {
      const path = '/stopped.wav';
      expect(await t.op('play_web_media_party_mode', { MediaUrl: web.url(path) })).toEqual({ Result: 'true' });
      const downloads = t.hub.virtual!.downloads;
      expect(downloads.size).toBe(1);
      expect(await t.op('stop_play')).toEqual({ Result: 'true' });
      // Positive signal: the shared download is gone once both speakers let go.
      await eventually(() => downloads.size === 0, 10_000, 'the download released');
      expect(web.hits.get(path)).toBe(1);
    });
  });
});

describe('webMedia.refuseLocalAddresses', () => {
  let t: TestHub;
  let web: Web;
  beforeAll(async () => {
    web = await webServer();
    t = await startHub({ speakers: { virtual: { count: 2 } }, webMedia: { refuseLocalAddresses: true } });
  });
  afterAll(async () => {
    await t?.close();
    await web?.close();
  });

  test('loopback and link-local MediaUrls are refused with MediaUrlRefused (HTTP 400), before anything is fetched', async () => {
    const port = new URL(web.url('/')).port;
    for (const url of [web.url('/a.wav'), `http://localhost:${port}/a.wav`, `http://[::1]:${port}/a.wav`, 'http://169.254.169.254/latest/meta-data', 'http://127.1.2.3:1/x.mp3']) {
      const res = await t.get(`/api/v1/play_web_media_party_mode?${new URLSearchParams({ SessionToken: t.session, MediaUrl: url })}`);
      expect({ url, status: res.status, body: res.body }).toMatchObject({
        url,
        status: 400,
        body: { Result: 'false', ErrorCode: 'MediaUrlRefused', Parameter: 'MediaUrl' },
      });
    }
    expect(web.hits.size).toBe(0);
  });

  test('hub media (served on loopback by the hub itself) still plays', async () => {
    const [media] = (await t.op('media_list')).MediaList;
    expect(await t.op('play_hub_media_party_mode', { PersistentID: media.PersistentID })).toEqual({ Result: 'true' });
    await t.op('stop_play');
  });
});

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ensureBuilt } from '../upnp/lab';
import { JsonLines, terminate } from '../upnp/processes';
import { eventually } from '../../helpers/wait';

/**
 * Memory of virtual speakers' downloads (issue 7, item 6), measured in a child hub
 * (rss-child.js, from dist/) so only the hub's own RSS counts: a party play of a big file
 * generated on the fly and served on loopback, RSS after a full GC before the play and after
 * the whole file went through. Used by test/drivers/virtual/virtual-downloads.lab.test.ts (a bound) and
 * by `npm run bench` (bench/drivers.js, the figure).
 */

const MiB = 1024 * 1024;
const REPO = findRepo(__dirname);

/** A WAV header for `dataBytes` of 8 kHz mono 16-bit PCM (the body is silence, streamed). */
export function wavHeader(dataBytes: number): Buffer {
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

export interface BigFileServer {
  url: (p: string) => string;
  hits: Map<string, number>;
  /** Bytes fully sent per path (counted when a response finished). */
  finished: Map<string, number>;
  close: () => Promise<void>;
}

/**
 * Serves a WAV of `size` bytes at any path (silence streamed from one 64 KiB buffer, with
 * backpressure: the server holds no copy), and an HTML page at /page.mp3.
 */
export async function bigFileServer(size: number): Promise<BigFileServer> {
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
    res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': size });
    res.write(wavHeader(size - 44));
    let sent = 44;
    const pump = () => {
      while (sent < size) {
        const n = Math.min(zeros.length, size - sent);
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

export interface DownloadRssReport {
  fileBytes: number;
  speakers: number;
  /** RSS after a full GC, before the play (the baseline) and after the whole file went through. */
  idleRss: number;
  afterRss: number;
  growthBytes: number;
  /** GETs the web server saw for the file (1: one download for the whole party). */
  requests: number;
  /** Each speaker's last download record. */
  fetches: { bytes: number; duration?: number; live: boolean }[];
  /** IsPlaying of every speaker after the download. */
  playing: boolean[];
}

export async function measureDownloadRss(options: { fileBytes?: number } = {}): Promise<DownloadRssReport> {
  const fileBytes = options.fileBytes ?? 300 * MiB;
  ensureBuilt();
  const web = await bigFileServer(fileBytes);
  const dataDir = mkdtempSync(join(tmpdir(), 'speakerhub-rss-'));
  const token = 'rss-test-token-0123456789abcdef';
  const child = spawn(process.execPath, ['--expose-gc', join(REPO, 'test/drivers/virtual/rss-child.js'), JSON.stringify({ dataDir, token })], {
    cwd: REPO,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines = new JsonLines<{ evt: string; url?: string; rss?: number; fetches?: any[] }>(child);
  try {
    const { url } = await lines.waitFor((e) => e.evt === 'ready', 30_000, 'the child hub');
    const get = async (path: string) => (await fetch(url + path, { headers: { Authorization: `Bearer ${token}` } })).json() as Promise<any>;
    const session = (await get('/api/v1/init_session')).SessionToken;
    const op = (name: string, params: Record<string, string> = {}) =>
      get(`/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`);
    const ask = async (cmd: string, evt: string) => {
      const from = lines.events.length;
      child.stdin!.write(`${cmd}\n`);
      return lines.waitFor((e) => e.evt === evt, 10_000, cmd, from);
    };
    const idleRss = (await ask('rss', 'rss')).rss!;
    const played = await op('play_web_media_party_mode', { MediaUrl: web.url('/big.wav') });
    if (played.Result !== 'true') throw new Error(`party play failed: ${JSON.stringify(played)}`);
    // Positive signals: the whole file went out, and the speakers' records counted all of it.
    await eventually(() => web.finished.get('/big.wav') === fileBytes, 120_000, 'the whole file sent');
    await eventually(
      async () => (await ask('fetches', 'fetches')).fetches!.every((f) => f?.bytes === fileBytes),
      10_000,
      'the download counted to its end',
    );
    const afterRss = (await ask('rss', 'rss')).rss!;
    const fetches = (await ask('fetches', 'fetches')).fetches!;
    const playing = ((await op('device_list')).DeviceList as { IsPlaying: boolean }[]).map((d) => d.IsPlaying);
    await op('stop_play');
    return {
      fileBytes,
      speakers: fetches.length,
      idleRss,
      afterRss,
      growthBytes: afterRss - idleRss,
      requests: web.hits.get('/big.wav') ?? 0,
      fetches,
      playing,
    };
  } finally {
    child.stdin!.end();
    await terminate(child, 'SIGTERM', 5000);
    await web.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function findRepo(from: string): string {
  for (let dir = resolve(from); ; dir = resolve(dir, '..')) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'test/drivers/virtual/rss-child.js'))) return dir;
    if (dir === resolve(dir, '..')) return process.cwd();
  }
}

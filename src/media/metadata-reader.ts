import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';

/** The tags and format facts the hub needs from an audio file. */
export interface FileMetadata {
  title?: string;
  artist?: string;
  albumartist?: string;
  album?: string;
  /** Seconds, when the parser could tell. */
  duration?: number;
  /** music-metadata's per-track codec names; an encrypted MP4 entry shows as '<drms>' etc. */
  codecNames: string[];
  /** Track number on its album, when tagged. */
  track?: number;
  /** MIME type of the embedded cover picture, when the file has one (its bytes: readPicture). */
  picture?: string;
}

/** An embedded cover picture. */
export interface Picture {
  mime: string;
  data: Buffer;
}

/*
 * music-metadata is ESM-only: loading it in the hub process pulls in Node's ESM loader and
 * the parser stack for good (~15 MB of RSS in a process that otherwise idles at ~60 MB). The
 * hub reads tags only when it scans, so the parser runs in a child process that exits when
 * the scan is over. The child is plain JavaScript (it also runs under jest unchanged).
 */
const CHILD_SOURCE = `
const { parseFile } = require(process.argv[1]);
const rl = require('node:readline').createInterface({ input: process.stdin });
const cover = (c) => (c.picture || []).find((p) => /^image\\/(jpe?g|png)$/i.test(p.format || ''));
const mimeOf = (p) => (/png/i.test(p.format) ? 'image/png' : 'image/jpeg');
rl.on('line', async (line) => {
  const { id, file, picture } = JSON.parse(line);
  try {
    // Covers are parsed (not skipped) to tell whether a file has one; only a picture request sends the bytes.
    const m = await parseFile(file, { skipCovers: false });
    const c = m.common;
    const p = cover(c);
    if (picture !== undefined) {
      const ok = p && p.data.length <= picture ? { mime: mimeOf(p), data: Buffer.from(p.data).toString('base64') } : {};
      process.stdout.write(JSON.stringify({ id, ok }) + '\\n');
      return;
    }
    process.stdout.write(JSON.stringify({ id, ok: {
      title: c.title, artist: c.artist, albumartist: c.albumartist, album: c.album,
      duration: m.format.duration,
      codecNames: (m.format.trackInfo || []).map((t) => t.codecName).filter(Boolean),
      track: c.track && c.track.no ? c.track.no : undefined,
      picture: p ? mimeOf(p) : undefined,
    } }) + '\\n');
  } catch (e) {
    process.stdout.write(JSON.stringify({ id, error: String((e && e.message) || e) }) + '\\n');
  }
});
`;

const IDLE_EXIT_MS = 2_000;
const READ_TIMEOUT_MS = 30_000;

/** Reads audio metadata in a helper process that lives only while there is work. */
export class MetadataReader {
  private child?: ChildProcessWithoutNullStreams;
  private seq = 0;
  private readonly pending = new Map<number, { resolve: (m: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  private idleTimer?: NodeJS.Timeout;

  read(file: string): Promise<FileMetadata> {
    return this.ask({ file }) as Promise<FileMetadata>;
  }

  /** The file's embedded cover (JPEG or PNG), when it has one of at most maxBytes. */
  async readPicture(file: string, maxBytes: number): Promise<Picture | undefined> {
    const got = (await this.ask({ file, picture: maxBytes })) as { mime?: string; data?: string };
    return got.mime && got.data ? { mime: got.mime, data: Buffer.from(got.data, 'base64') } : undefined;
  }

  private ask(request: { file: string; picture?: number }): Promise<unknown> {
    const child = this.ensureChild();
    clearTimeout(this.idleTimer);
    const id = ++this.seq;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error('reading the tags timed out'));
        this.kill();
      }, READ_TIMEOUT_MS);
      this.pending.set(id, { resolve: resolve as (m: unknown) => void, reject, timer });
      child.stdin.write(`${JSON.stringify({ id, ...request })}\n`);
    });
  }

  /** Ends the helper process now (it also ends by itself when idle). */
  close(): void {
    this.kill();
  }

  private ensureChild(): ChildProcessWithoutNullStreams {
    if (this.child) return this.child;
    const child = spawn(process.execPath, ['-e', CHILD_SOURCE, require.resolve('music-metadata')], { stdio: 'pipe' });
    this.child = child;
    createInterface({ input: child.stdout }).on('line', (line) => this.answer(line));
    child.stderr.resume();
    child.stdin.on('error', () => undefined);
    child.on('exit', (code, signal) => {
      if (this.child === child) this.child = undefined;
      this.failAll(new Error(`metadata reader exited (${signal ?? `code ${code}`})`));
    });
    return child;
  }

  private answer(line: string): void {
    let msg: { id: number; ok?: unknown; error?: string };
    try {
      msg = JSON.parse(line);
    } catch {
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    clearTimeout(p.timer);
    if (msg.ok) p.resolve(msg.ok);
    else p.reject(new Error(msg.error ?? 'unknown error'));
    if (this.pending.size === 0) {
      this.idleTimer = setTimeout(() => this.kill(), IDLE_EXIT_MS);
      this.idleTimer.unref();
    }
  }

  private failAll(e: Error): void {
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(e);
      this.pending.delete(id);
    }
  }

  private kill(): void {
    clearTimeout(this.idleTimer);
    const child = this.child;
    this.child = undefined;
    child?.stdin.end();
    child?.kill();
  }
}

/** One reader for the process: scans and TTS share it. */
export const metadataReader = new MetadataReader();

import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/logger';

export const FIXTURES = path.join(__dirname, 'fixtures');

export interface LogEntry {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export const WARN = 40;

/** A real pino logger whose lines the test reads back (pino writes synchronously to it). */
export function captureLogger(level = 'debug'): { logger: Logger; raw: string[]; entries: () => LogEntry[] } {
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      raw.push(String(chunk));
      callback();
    },
  });
  const entries = () =>
    raw
      .join('')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as LogEntry);
  return { logger: createLogger({ level, stream }), raw, entries };
}

/** A temp folder, removed by the returned cleanup. */
export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'speakerhub-media-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Deterministic noise: the same bytes on every run, so a failure can be reproduced. */
export function noise(length: number, seed: string): Buffer {
  const blocks: Buffer[] = [];
  for (let i = 0; blocks.length * 32 < length; i++) blocks.push(createHash('sha256').update(`${seed}:${i}`).digest());
  return Buffer.concat(blocks).subarray(0, length);
}

/**
 * Renames the first sample entry of type `from` inside the MP4's stsd box to `to`. Sample
 * entries share one layout, so only the type changes and the file stays well formed.
 */
export function renameSampleEntry(mp4: Buffer, from: string, to: string): Buffer {
  const copy = Buffer.from(mp4);
  const stsd = copy.indexOf('stsd', 0, 'latin1');
  const at = copy.indexOf(from, stsd, 'latin1');
  if (stsd < 0 || at < 0) throw new Error(`no '${from}' sample entry`);
  copy.write(to, at, 4, 'latin1');
  return copy;
}

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/**
 * A plain HTTP request on a fresh connection (no agent, so nothing lingers after a test).
 * rawPath is sent as is, without the URL parser's normalization of '..' segments.
 */
export function http(url: string, options: { method?: string; headers?: Record<string, string>; rawPath?: string } = {}): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: options.rawPath ?? target.pathname + target.search,
        method: options.method ?? 'GET',
        headers: options.headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * Shared helpers for the REST end-to-end tests: raw HTTP over TCP, a local WAV server the
 * virtual speakers can fetch from, and the documented error-shape check.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { ERROR_CODES } from '../../src/core/errors';
import { TEST_TOKEN } from '../helpers/hub';

export const AUTH = { Authorization: `Bearer ${TEST_TOKEN}` };

/** A valid WAV file: 16-bit PCM, mono, with a proper RIFF header, holding a 440 Hz tone. */
export function makeWav(seconds = 1, sampleRate = 8000): Buffer {
  const samples = Math.round(seconds * sampleRate);
  const dataBytes = samples * 2;
  const buf = Buffer.alloc(44 + dataBytes);
  buf.write('RIFF', 0, 'ascii');
  buf.writeUInt32LE(36 + dataBytes, 4);
  buf.write('WAVE', 8, 'ascii');
  buf.write('fmt ', 12, 'ascii');
  buf.writeUInt32LE(16, 16); // fmt chunk size
  buf.writeUInt16LE(1, 20); // PCM
  buf.writeUInt16LE(1, 22); // mono
  buf.writeUInt32LE(sampleRate, 24);
  buf.writeUInt32LE(sampleRate * 2, 28); // byte rate
  buf.writeUInt16LE(2, 32); // block align
  buf.writeUInt16LE(16, 34); // bits per sample
  buf.write('data', 36, 'ascii');
  buf.writeUInt32LE(dataBytes, 40);
  for (let i = 0; i < samples; i++) {
    buf.writeInt16LE(Math.round(Math.sin((2 * Math.PI * 440 * i) / sampleRate) * 8000), 44 + i * 2);
  }
  return buf;
}

export interface WavServer {
  /** http://127.0.0.1:port */
  base: string;
  port: number;
  /** Every request the server saw: method and raw request target (path + query). */
  requests: { method: string; url: string }[];
  close(): Promise<void>;
}

/** A local HTTP server that answers every GET with the same WAV file and records the requests. */
export async function startWavServer(wav: Buffer = makeWav()): Promise<WavServer> {
  const requests: { method: string; url: string }[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '' });
    res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': wav.length });
    res.end(req.method === 'HEAD' ? undefined : wav);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    base: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
  body: any;
}

/**
 * Sends one request over a plain TCP socket exactly as written (no encoding, no
 * validation), e.g. a request line with raw spaces and quotes, and parses the answer.
 */
export function rawRequest(
  base: string,
  requestLine: string,
  headers: Record<string, string> = AUTH,
  timeoutMs = 10_000,
  /** Writes the request in pieces cut at these offsets, a pause between them (as slow networks deliver it). */
  cuts: number[] = [],
): Promise<RawResponse> {
  const u = new URL(base);
  const head = Buffer.from(
    [requestLine, `Host: ${u.host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), 'Connection: close', '', ''].join('\r\n'),
    'utf8',
  );
  const pieces = [0, ...cuts, head.length].slice(1).map((end, i, ends) => head.subarray(i === 0 ? 0 : ends[i - 1], end));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(Number(u.port), u.hostname, async () => {
      socket.setNoDelay(true);
      for (const [i, piece] of pieces.entries()) {
        if (i > 0) await new Promise((r) => setTimeout(r, 30));
        if (!socket.destroyed) socket.write(piece);
      }
    });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer to ${JSON.stringify(requestLine.slice(0, 100))} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      try {
        resolve(parseRawResponse(Buffer.concat(chunks)));
      } catch (e) {
        reject(e);
      }
    });
  });
}

function parseRawResponse(buf: Buffer): RawResponse {
  const sep = buf.indexOf('\r\n\r\n');
  if (sep < 0) throw new Error(`not an HTTP response: ${JSON.stringify(buf.toString('latin1').slice(0, 200))}`);
  const lines = buf.subarray(0, sep).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]);
  if (!m) throw new Error(`bad status line ${JSON.stringify(lines[0])}`);
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  let bodyBuf = buf.subarray(sep + 4);
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) bodyBuf = dechunk(bodyBuf);
  const text = bodyBuf.toString('utf8');
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON: the caller checks */
  }
  return { status: Number(m[1]), headers, text, body };
}

function dechunk(buf: Buffer): Buffer {
  const out: Buffer[] = [];
  let pos = 0;
  for (;;) {
    const eol = buf.indexOf('\r\n', pos);
    if (eol < 0) break;
    const size = parseInt(buf.subarray(pos, eol).toString('latin1'), 16);
    if (!size) break;
    out.push(buf.subarray(eol + 2, eol + 2 + size));
    pos = eol + 2 + size + 2;
  }
  return Buffer.concat(out);
}

/** GET with fetch, bounded in time; the body is parsed as JSON when it is JSON. */
export async function httpGet(
  url: string,
  headers: Record<string, string> = AUTH,
  timeoutMs = 10_000,
): Promise<{ status: number; headers: Headers; text: string; body: any }> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, text, body };
}

/**
 * Asserts the documented failure shape: exactly Result "false", an ErrorCode from
 * ERROR_CODES, a non-empty ErrorMessage, optionally Parameter (a non-empty string); and
 * the HTTP status is the one ERROR_CODES documents for that code.
 */
export function expectErrorShape(status: number, body: unknown, context = ''): void {
  const where = context ? ` (${context})` : '';
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new Error(`error body is not a JSON object${where}: ${JSON.stringify(body)?.slice(0, 300)}`);
  }
  const b = body as Record<string, unknown>;
  const extra = Object.keys(b).filter((k) => !['Result', 'ErrorCode', 'ErrorMessage', 'Parameter'].includes(k));
  const problems: string[] = [];
  if (extra.length) problems.push(`unexpected fields ${extra.join(', ')}`);
  if (b.Result !== 'false') problems.push(`Result is ${JSON.stringify(b.Result)}`);
  if (typeof b.ErrorCode !== 'string' || !(b.ErrorCode in ERROR_CODES)) problems.push(`ErrorCode ${JSON.stringify(b.ErrorCode)} is not documented`);
  if (typeof b.ErrorMessage !== 'string' || b.ErrorMessage.length === 0) problems.push('ErrorMessage is not a non-empty string');
  if ('Parameter' in b && (typeof b.Parameter !== 'string' || b.Parameter.length === 0)) problems.push('Parameter is not a non-empty string');
  if (typeof b.ErrorCode === 'string' && b.ErrorCode in ERROR_CODES) {
    const expected = ERROR_CODES[b.ErrorCode as keyof typeof ERROR_CODES].status;
    if (status !== expected) problems.push(`HTTP ${status}, but ${b.ErrorCode} is documented as HTTP ${expected}`);
  }
  if (problems.length)
    throw new Error(`error body has not the documented shape${where}: ${problems.join('; ')}; body ${JSON.stringify(b).slice(0, 300)}`);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

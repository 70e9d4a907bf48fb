import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Some clients in the wild (embedded HTTP libraries, hand-rolled scripts) send requests
 * Node's strict HTTP parser rejects before any handler runs:
 * - raw spaces in the query: `GET /api/v1/play_tts?Text="Hello there" HTTP/1.1`;
 * - raw UTF-8 in it: `GET /api/v1/play_tts?Text=Grüße aus Köln HTTP/1.1`;
 * - bare LF line ends instead of CRLF (`printf 'GET … HTTP/1.1\nHost: x\n\n' | nc`).
 * This peeks at the first bytes of each new connection, percent-encodes spaces and non-ASCII
 * bytes inside the request target, turns bare LFs of the request head into CRLF, then hands
 * the socket to the HTTP server as if nothing happened. Well-formed requests pass untouched;
 * only the first request on a connection is repaired (such clients open one connection per
 * request).
 */
export function repairRequestLine(chunk: Buffer): Buffer {
  const eol = chunk.indexOf('\r\n');
  if (eol < 0) return chunk;
  const line = chunk.subarray(0, eol).toString('latin1');
  const parts = line.split(' ');
  const version = parts[parts.length - 1];
  if (parts.length < 3 || !/^HTTP\/\d\.\d$/.test(version)) return chunk;
  const rawTarget = parts.slice(1, -1).join(' ');
  // latin1 maps each byte to one char: bytes >= 0x80 (UTF-8 sequences) are encoded byte by byte.
  const target = rawTarget.replace(/[ \x80-\xff]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
  if (target === rawTarget) return chunk;
  return Buffer.concat([Buffer.from(`${parts[0]} ${target} ${version}`, 'latin1'), chunk.subarray(eol)]);
}

/** Bare LF line ends of a request head become CRLF (the body, if any, is left alone). */
export function normalizeLineEnds(chunk: Buffer): Buffer {
  const end = headEnd(chunk);
  if (end < 0) return chunk;
  const head = chunk.subarray(0, end).toString('latin1').replace(/\r?\n/g, '\r\n');
  return Buffer.concat([Buffer.from(head, 'latin1'), chunk.subarray(end)]);
}

/** Offset just past the blank line that ends a request head (LF or CRLF ends), or -1. */
function headEnd(buf: Buffer): number {
  const lf = buf.indexOf('\n\n');
  const crlf = buf.indexOf('\n\r\n');
  if (lf < 0 && crlf < 0) return -1;
  if (crlf < 0 || (lf >= 0 && lf < crlf)) return lf + 2;
  return crlf + 3;
}

export interface RepairOptions {
  /** The wait for the first request head (the HTTP server's own timeouts apply only afterwards). */
  timeoutMs: number;
  /** Beyond this the bytes are handed to the HTTP parser as they are (which refuses an over-long head). */
  maxBytes: number;
}

export function installRequestLineRepair(server: Server, options: RepairOptions): void {
  const handlers = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    // Until the HTTP server owns the socket its timeouts do not apply: guard the wait.
    const timer = setTimeout(() => socket.destroy(), options.timeoutMs);
    const handOver = () => {
      clearTimeout(timer);
      socket.off('error', onError);
      for (const h of handlers) h.call(server, socket);
    };
    const onError = () => clearTimeout(timer);
    socket.on('error', onError);
    socket.once('close', () => clearTimeout(timer));
    // The request line can arrive in several TCP segments: wait for its end (or a cap). With
    // bare LF line ends, wait for the end of the head, whose every line needs fixing.
    let pending = Buffer.alloc(0);
    const onReadable = () => {
      let chunk: Buffer | null;
      while ((chunk = socket.read() as Buffer | null) !== null) pending = Buffer.concat([pending, chunk]);
      const lf = pending.indexOf('\n');
      const bareLf = lf >= 0 && (lf === 0 || pending[lf - 1] !== 0x0d);
      const complete = lf >= 0 && (!bareLf || headEnd(pending) >= 0);
      if (pending.length && !complete && pending.length < options.maxBytes && !socket.readableEnded) return;
      socket.off('readable', onReadable);
      if (pending.length) socket.unshift(repairRequestLine(bareLf ? normalizeLineEnds(pending) : pending));
      handOver();
    };
    socket.on('readable', onReadable);
  });
}

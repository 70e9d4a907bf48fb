import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Some clients in the wild (embedded HTTP libraries, hand-rolled scripts) put raw spaces in
 * the query: `GET /api/v1/play_tts?Text="Hello there" HTTP/1.1`. Node's HTTP parser rejects
 * such a request line before any handler runs. This peeks at the first bytes of each new
 * connection and percent-encodes spaces inside the request target, then hands the socket
 * to the HTTP server as if nothing happened. Well-formed requests pass untouched; only the
 * first request on a connection is repaired (such clients open one connection per request).
 */
export function repairRequestLine(chunk: Buffer): Buffer {
  const eol = chunk.indexOf('\r\n');
  if (eol < 0) return chunk;
  const line = chunk.subarray(0, eol).toString('latin1');
  const parts = line.split(' ');
  const version = parts[parts.length - 1];
  if (parts.length <= 3 || !/^HTTP\/\d\.\d$/.test(version)) return chunk;
  const target = parts.slice(1, -1).join(' ').replace(/ /g, '%20');
  return Buffer.concat([Buffer.from(`${parts[0]} ${target} ${version}`, 'latin1'), chunk.subarray(eol)]);
}

const FIRST_BYTES_TIMEOUT_MS = 10_000;
/** Beyond this the line is handed to the HTTP parser as it is (which refuses an over-long one). */
const MAX_REQUEST_LINE_BYTES = 64 * 1024;

export function installRequestLineRepair(server: Server): void {
  const handlers = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    // Until the HTTP server owns the socket its timeouts do not apply: guard the wait.
    const timer = setTimeout(() => socket.destroy(), FIRST_BYTES_TIMEOUT_MS);
    const handOver = () => {
      clearTimeout(timer);
      socket.off('error', onError);
      for (const h of handlers) h.call(server, socket);
    };
    const onError = () => clearTimeout(timer);
    socket.on('error', onError);
    socket.once('close', () => clearTimeout(timer));
    // The request line can arrive in several TCP segments: wait for its end (or a cap).
    let pending = Buffer.alloc(0);
    const onReadable = () => {
      let chunk: Buffer | null;
      while ((chunk = socket.read() as Buffer | null) !== null) pending = Buffer.concat([pending, chunk]);
      if (pending.length && pending.indexOf('\r\n') < 0 && pending.length < MAX_REQUEST_LINE_BYTES && !socket.readableEnded) return;
      socket.off('readable', onReadable);
      if (pending.length) socket.unshift(repairRequestLine(pending));
      handOver();
    };
    socket.on('readable', onReadable);
  });
}

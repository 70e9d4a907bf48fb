import { constants, open, stat } from 'node:fs';
import { connect, Socket } from 'node:net';
import { promisify } from 'node:util';

/** Where PCM goes: a snapserver TCP source in server mode, or a pipe source's FIFO. */
export type SourceAddress = { kind: 'tcp'; host: string; port: number } | { kind: 'pipe'; path: string };

export const DEFAULT_TCP_SOURCE_PORT = 4953;

export function describeSource(s: SourceAddress): string {
  return s.kind === 'tcp' ? `tcp://${s.host.includes(':') ? `[${s.host}]` : s.host}:${s.port}` : `pipe://${s.path}`;
}

/** Parses a configured source: tcp://host:port or pipe:///path. */
export function parseSource(text: string): SourceAddress {
  if (text.startsWith('pipe://')) return { kind: 'pipe', path: text.slice('pipe://'.length) };
  const m = /^tcp:\/\/(?:\[([^\]]+)\]|([^:/?#]+))(?::(\d+))?/.exec(text);
  if (!m) throw new Error(`cannot parse source '${text}' (expected tcp://host:port or pipe:///path)`);
  return { kind: 'tcp', host: m[1] ?? m[2], port: m[3] ? Number(m[3]) : DEFAULT_TCP_SOURCE_PORT };
}

/**
 * Opens the source for writing. A TCP source must be in server mode (snapserver listens,
 * the hub connects); a pipe source must be a FIFO on this machine.
 */
export async function openSink(source: SourceAddress, timeoutMs: number): Promise<Socket> {
  if (source.kind === 'tcp') {
    return new Promise<Socket>((resolve, reject) => {
      const socket = connect({ host: source.host, port: source.port });
      const timer = setTimeout(() => socket.destroy(new Error(`connecting to ${describeSource(source)} timed out`)), timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        // Until the feed attaches its own handler, an error must not go unhandled (it would
        // crash the hub); the feed sees a destroyed socket and fails then.
        socket.on('error', () => undefined);
        socket.setNoDelay(true);
        resolve(socket);
      });
      socket.once('error', (e) => {
        clearTimeout(timer);
        reject(new Error(`cannot connect to the snapserver source ${describeSource(source)}: ${e.message}`));
      });
    });
  }
  const info = await promisify(stat)(source.path).catch((e: Error) => {
    throw new Error(`snapserver pipe source ${source.path}: ${e.message}`);
  });
  if (!info.isFIFO()) throw new Error(`snapserver pipe source ${source.path} is not a FIFO`);
  // snapserver 0.26 opens the FIFO, reads EOF while no writer has it open, closes it and
  // retries every 100 ms: a write-only open (O_NONBLOCK) nearly always fails with ENXIO,
  // and a blocking one would park a libuv thread until snapserver happens to look, forever
  // if it is not running. Opened read-write (Linux allows this on a FIFO, see fifo(7)) it
  // opens at once; snapserver then finds a writer, reads what the hub writes, and a full
  // pipe is ordinary backpressure. The hub never reads from it.
  const fd = await promisify(open)(source.path, constants.O_RDWR | constants.O_NONBLOCK).catch((e: Error) => {
    throw new Error(`cannot open the pipe ${source.path}: ${e.message}`);
  });
  const pipe = new Socket({ fd, readable: false, writable: true });
  pipe.on('error', () => undefined);
  return pipe;
}

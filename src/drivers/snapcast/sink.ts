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
 * the hub connects). A FIFO is opened non-blocking so a missing reader (snapserver not
 * running) fails at once instead of parking a libuv thread forever; the socket wrapper
 * then handles a full pipe (EAGAIN) with ordinary backpressure.
 */
export async function openSink(source: SourceAddress, timeoutMs: number): Promise<Socket> {
  if (source.kind === 'tcp') {
    return new Promise<Socket>((resolve, reject) => {
      const socket = connect({ host: source.host, port: source.port });
      const timer = setTimeout(() => socket.destroy(new Error(`connecting to ${describeSource(source)} timed out`)), timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
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
  const fd = await promisify(open)(source.path, constants.O_WRONLY | constants.O_NONBLOCK).catch((e: NodeJS.ErrnoException) => {
    throw new Error(
      e.code === 'ENXIO' ? `nobody reads the pipe ${source.path}: is snapserver running?` : `cannot open the pipe ${source.path}: ${e.message}`,
    );
  });
  return new Socket({ fd, readable: false, writable: true });
}

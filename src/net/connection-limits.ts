import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../logger';
import { LimitedLog } from '../logging/limited-log';

export interface ConnectionLimits {
  /** Open connections from all clients together. */
  maxConnections: number;
  /** Open connections from one remote address. */
  maxConnectionsPerAddress: number;
  /** Addresses the per-address limit does not apply to (the global one still does). */
  perAddressExempt?: (address: string) => boolean;
  /** Addresses served at all (an allow-list); others are reset before any byte is read. */
  admits?: (address: string) => boolean;
}

/** Loopback: on the media server, the hub's own virtual speakers (one fetch each). */
export function isLoopback(address: string): boolean {
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/**
 * Caps open connections per remote address and in total, so that one client holding
 * thousands of half-open (header-trickling) sockets can neither exhaust the process's file
 * descriptors nor lock other clients out. A connection over a limit is closed at once,
 * before any byte is read; each refusal is counted and logged (rate-limited).
 *
 * Installed last, it takes over the server's 'connection' listeners and runs them only for
 * admitted sockets.
 */
export function installConnectionLimits(server: Server, limits: ConnectionLimits, log: Logger, name: string): { open(): number } {
  const handlers = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  const perAddress = new Map<string, number>();
  let total = 0;
  const refused = new LimitedLog(log, `${name}: connection refused, limit reached`);
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '?';
    if (limits.admits && !limits.admits(address)) {
      refused.warn({ address, limit: 'allow-list' });
      socket.on('error', () => undefined);
      socket.resetAndDestroy();
      return;
    }
    const mine = perAddress.get(address) ?? 0;
    const overAddress = mine >= limits.maxConnectionsPerAddress && !limits.perAddressExempt?.(address);
    if (total >= limits.maxConnections || overAddress) {
      const limit = total >= limits.maxConnections ? 'maxConnections' : 'maxConnectionsPerAddress';
      refused.warn({ address, limit, open: total, fromAddress: mine });
      // Reset rather than FIN: nothing is owed to a client over its limit, and no TIME_WAIT is kept.
      socket.on('error', () => undefined);
      socket.resetAndDestroy();
      return;
    }
    total++;
    perAddress.set(address, mine + 1);
    socket.once('close', () => {
      total--;
      const n = (perAddress.get(address) ?? 1) - 1;
      if (n <= 0) perAddress.delete(address);
      else perAddress.set(address, n);
    });
    for (const h of handlers) h.call(server, socket);
  });
  return { open: () => total };
}

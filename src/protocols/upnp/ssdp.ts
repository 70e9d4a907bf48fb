import type { Socket } from 'node:dgram';
import { networkInterfaces } from 'node:os';

/**
 * SSDP messages, the discovery half of UPnP (UDA 1.0 §1): parsed and written here, for both
 * sides the hub plays — the upnp driver's discovery (ssdp-client.ts: M-SEARCH out, answers and
 * NOTIFYs in) and the DLNA renderers' advertiser (ssdp-server.ts: M-SEARCH in, answers and
 * NOTIFYs out). The sockets, pacing and rate limits live in those two files.
 */

export const SSDP_GROUP = '239.255.255.250';
export const SSDP_PORT = 1900;

export interface SsdpMessage {
  /** 'NOTIFY * HTTP/1.1', 'HTTP/1.1 200 OK', 'M-SEARCH * HTTP/1.1' … */
  startLine: string;
  /** Header names in lower case; the first of a repeated header wins. */
  headers: Record<string, string>;
}

/** Parses one SSDP datagram (HTTP over UDP); undefined for anything else. */
export function parseSsdpMessage(datagram: string): SsdpMessage | undefined {
  const lines = datagram.split(/\r?\n/);
  const startLine = (lines.shift() ?? '').trim();
  if (!/^(?:NOTIFY|M-SEARCH) \* HTTP\/1\.[01]$|^HTTP\/1\.[01] \d{3}/i.test(startLine)) return undefined;
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    if (i <= 0) continue;
    const name = line.slice(0, i).trim().toLowerCase();
    if (!(name in headers)) headers[name] = line.slice(i + 1).trim();
  }
  return { startLine, headers };
}

export type SsdpKind = 'notify' | 'search' | 'answer';

/** NOTIFY, M-SEARCH or an answer (HTTP/1.x status line). */
export function kindOf(message: SsdpMessage): SsdpKind {
  const s = message.startLine.toUpperCase();
  return s.startsWith('NOTIFY') ? 'notify' : s.startsWith('M-SEARCH') ? 'search' : 'answer';
}

/** max-age from CACHE-CONTROL; UDA's minimum of 1800 s when a device leaves it out. */
export function maxAge(cacheControl: string | undefined): number {
  const m = /max-age\s*=\s*"?(\d+)/i.exec(cacheControl ?? '');
  return m ? Number(m[1]) : 1800;
}

/** The uuid:… part of a USN (before '::'). */
export function udnOf(usn: string): string {
  const i = usn.indexOf('::');
  return (i >= 0 ? usn.slice(0, i) : usn).trim();
}

export interface SsdpAlive {
  /** uuid:… — the part of the USN before '::'. */
  udn: string;
  usn: string;
  /** NT of a NOTIFY, ST of a search response. */
  type: string;
  location: string;
  maxAgeSeconds: number;
  via: 'notify' | 'search';
  /** Sender's IP. */
  from: string;
  /** Changes when the device restarts: BOOTID.UPNP.ORG (UDA 1.1), else libupnp's 01-NLS. */
  bootId?: string;
}

export interface SsdpByeBye {
  udn: string;
  usn: string;
  type: string;
  from: string;
}

/** What a NOTIFY or a search answer says of a device; undefined for anything else (M-SEARCHes among them). */
export function interpret(message: SsdpMessage, from: string): { alive?: SsdpAlive; byebye?: SsdpByeBye } | undefined {
  const h = message.headers;
  const usn = h.usn;
  if (!usn || !usn.toLowerCase().startsWith('uuid:')) return undefined;
  const udn = udnOf(usn);
  const kind = kindOf(message);
  if (kind === 'notify') {
    const nts = (h.nts ?? '').toLowerCase();
    const type = h.nt ?? '';
    if (nts === 'ssdp:byebye') return { byebye: { udn, usn, type, from } };
    if (nts !== 'ssdp:alive' || !h.location) return undefined;
    return { alive: { udn, usn, type, location: h.location, maxAgeSeconds: maxAge(h['cache-control']), via: 'notify', from, bootId: bootIdOf(h) } };
  }
  if (kind === 'answer') {
    if (!/^HTTP\/1\.[01] 200/i.test(message.startLine) || !h.location) return undefined;
    return {
      alive: {
        udn,
        usn,
        type: h.st ?? '',
        location: h.location,
        maxAgeSeconds: maxAge(h['cache-control']),
        via: 'search',
        from,
        bootId: bootIdOf(h),
      },
    };
  }
  return undefined; // another control point's M-SEARCH
}

function bootIdOf(h: Record<string, string>): string | undefined {
  return h['bootid.upnp.org'] || h['01-nls'] || undefined;
}

/** An M-SEARCH: what is searched for (ST), its MX and who asks (USER-AGENT). */
export interface SsdpSearch {
  st: string;
  /** Seconds (0–5) devices may spread their answers over; 0 when absent or unreadable. */
  mx: number;
  userAgent: string;
}

/** The search a M-SEARCH datagram asks; undefined unless it is a well-formed ssdp:discover. */
export function parseSearch(message: SsdpMessage): SsdpSearch | undefined {
  const h = message.headers;
  if (kindOf(message) !== 'search' || h.man?.replace(/"/g, '') !== 'ssdp:discover' || !h.st) return undefined;
  // MX (1–5 s) spreads the answers of many devices; a unicast search without MX is answered at once.
  const mx = Math.max(0, Math.min(5, Number.parseInt(h.mx ?? '0', 10) || 0));
  return { st: h.st, mx, userAgent: h['user-agent'] ?? '' };
}

function datagram(lines: string[]): Buffer {
  return Buffer.from(lines.join('\r\n') + '\r\n\r\n');
}

/** An M-SEARCH to the group. */
export function searchMessage(st: string, mx: number, userAgent: string): Buffer {
  return datagram([
    'M-SEARCH * HTTP/1.1',
    `HOST: ${SSDP_GROUP}:${SSDP_PORT}`,
    'MAN: "ssdp:discover"',
    `MX: ${mx}`,
    `ST: ${st}`,
    `USER-AGENT: ${userAgent}`,
  ]);
}

/** One NT/USN pair a device announces (and answers searches with). */
export interface SsdpTarget {
  nt: string;
  usn: string;
}

export interface Advertised {
  location: string;
  maxAgeSeconds: number;
  /** SERVER header. */
  server: string;
}

/** A NOTIFY alive or byebye for one target (a byebye carries no location, age or server). */
export function notifyMessage(t: SsdpTarget, nts: 'ssdp:alive' | 'ssdp:byebye', a: Advertised): Buffer {
  const lines = ['NOTIFY * HTTP/1.1', `HOST: ${SSDP_GROUP}:${SSDP_PORT}`, `NT: ${t.nt}`, `NTS: ${nts}`, `USN: ${t.usn}`];
  if (nts === 'ssdp:alive') lines.push(`CACHE-CONTROL: max-age=${a.maxAgeSeconds}`, `LOCATION: ${a.location}`, `SERVER: ${a.server}`);
  return datagram(lines);
}

/** The answer to an M-SEARCH for one target. */
export function searchAnswer(t: SsdpTarget, a: Advertised, now = new Date()): Buffer {
  return datagram([
    'HTTP/1.1 200 OK',
    `CACHE-CONTROL: max-age=${a.maxAgeSeconds}`,
    `DATE: ${now.toUTCString()}`,
    'EXT:',
    `LOCATION: ${a.location}`,
    `SERVER: ${a.server}`,
    `ST: ${t.nt}`,
    `USN: ${t.usn}`,
    'CONTENT-LENGTH: 0',
  ]);
}

function toInt(ip: string): number {
  return ip.split('.').reduce((n, part) => ((n << 8) | Number(part)) >>> 0, 0);
}

/**
 * A predicate for "on the subnet of that local address" (the kernel hands a socket on port 1900
 * the group traffic of every interface); everything passes without an address, or when the
 * address is no interface's.
 */
export function subnetFilter(address: string | undefined): (ip: string) => boolean {
  if (!address) return () => true;
  const entry = Object.values(networkInterfaces())
    .flat()
    .find((a) => a?.family === 'IPv4' && a.address === address);
  if (!entry) return () => true;
  const mask = toInt(entry.netmask);
  const net = toInt(address) & mask;
  return (ip) => /^\d+\.\d+\.\d+\.\d+$/.test(ip) && (toInt(ip) & mask) === net;
}

/** Binds a UDP socket; rejects with the bind error. */
export function bindSocket(socket: Socket, options: { port: number; address?: string; exclusive?: boolean }): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(options, () => {
      socket.off('error', reject);
      resolve();
    });
  });
}

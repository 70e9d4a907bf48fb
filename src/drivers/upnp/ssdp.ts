import { createSocket, type Socket } from 'node:dgram';
import { EventEmitter } from 'node:events';
import { networkInterfaces } from 'node:os';
import type { Logger } from '../../logger';

/**
 * SSDP, the discovery half of UPnP: M-SEARCH for renderers and the NOTIFY alive/byebye
 * announcements they multicast. Written on node:dgram rather than node-ssdp so discovery
 * stays on one interface (bound to its address, multicast out of it, membership on it) and
 * the driver pulls in no unmaintained dependencies.
 */

export const SSDP_GROUP = '239.255.255.250';
export const SSDP_PORT = 1900;

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

export interface SsdpEvents {
  alive: [message: SsdpAlive];
  byebye: [message: SsdpByeBye];
}

export interface SsdpOptions {
  /** IPv4 address of the interface to discover on; all interfaces (kernel's choice for multicast) without it. */
  address?: string;
  /** ST of our M-SEARCH, e.g. urn:schemas-upnp-org:device:MediaRenderer:1. */
  searchTarget: string;
  /** Seconds renderers may wait before answering (spreads the answers out). */
  mx?: number;
  logger: Logger;
}

export interface SsdpMessage {
  /** 'NOTIFY * HTTP/1.1', 'HTTP/1.1 200 OK', 'M-SEARCH * HTTP/1.1' … */
  startLine: string;
  /** Header names in lower case. */
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

/** max-age from CACHE-CONTROL; UDA's minimum of 1800 s when a device leaves it out. */
export function maxAge(cacheControl: string | undefined): number {
  const m = /max-age\s*=\s*"?(\d+)/i.exec(cacheControl ?? '');
  return m ? Number(m[1]) : 1800;
}

export function udnOf(usn: string): string {
  const i = usn.indexOf('::');
  return (i >= 0 ? usn.slice(0, i) : usn).trim();
}

/** What a datagram means for discovery, or undefined when it does not concern us. */
export function interpret(message: SsdpMessage, from: string): { alive?: SsdpAlive; byebye?: SsdpByeBye } | undefined {
  const h = message.headers;
  const usn = h.usn;
  if (!usn || !usn.toLowerCase().startsWith('uuid:')) return undefined;
  const udn = udnOf(usn);
  if (message.startLine.toUpperCase().startsWith('NOTIFY')) {
    const nts = (h.nts ?? '').toLowerCase();
    const type = h.nt ?? '';
    if (nts === 'ssdp:byebye') return { byebye: { udn, usn, type, from } };
    if (nts !== 'ssdp:alive' || !h.location) return undefined;
    return { alive: { udn, usn, type, location: h.location, maxAgeSeconds: maxAge(h['cache-control']), via: 'notify', from, bootId: bootIdOf(h) } };
  }
  if (message.startLine.toUpperCase().startsWith('HTTP/')) {
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

export class SsdpClient extends EventEmitter<SsdpEvents> {
  private search?: Socket;
  private listen?: Socket;
  private readonly log: Logger;
  /** Accepts a sender when it is on the interface's subnet (the kernel delivers group traffic from every interface). */
  private readonly onSubnet: (ip: string) => boolean;

  constructor(private readonly options: SsdpOptions) {
    super();
    this.log = options.logger;
    this.onSubnet = subnetFilter(options.address);
  }

  async start(): Promise<void> {
    const { address } = this.options;
    const search = createSocket({ type: 'udp4' });
    search.on('message', (m, r) => this.receive(m, r.address));
    search.on('error', (e) => this.log.warn({ err: e.message }, 'SSDP search socket error'));
    await new Promise<void>((resolve, reject) => {
      search.once('error', reject);
      search.bind({ port: 0, address }, () => {
        search.off('error', reject);
        resolve();
      });
    });
    if (address) search.setMulticastInterface(address);
    search.setMulticastTTL(4);
    this.search = search;

    // Announcements go to the group on port 1900; other UPnP software on this host may hold it too.
    const listen = createSocket({ type: 'udp4', reuseAddr: true });
    listen.on('message', (m, r) => this.receive(m, r.address));
    listen.on('error', (e) => this.log.warn({ err: e.message }, 'SSDP listen socket error'));
    try {
      await new Promise<void>((resolve, reject) => {
        listen.once('error', reject);
        listen.bind({ port: SSDP_PORT, exclusive: false }, () => {
          listen.off('error', reject);
          resolve();
        });
      });
      listen.addMembership(SSDP_GROUP, address);
      this.listen = listen;
    } catch (e) {
      listen.close();
      // Discovery still works through M-SEARCH answers; only announcements between searches are missed.
      this.log.warn({ err: (e as Error).message }, 'cannot listen for SSDP announcements on port 1900; relying on M-SEARCH');
    }
    this.log.info({ address: address ?? 'all', announcements: !!this.listen }, 'SSDP discovery started');
  }

  /** Sends one M-SEARCH; answers arrive as 'alive' events. */
  searchNow(): void {
    const s = this.search;
    if (!s) return;
    const msg = Buffer.from(
      'M-SEARCH * HTTP/1.1\r\n' +
        `HOST: ${SSDP_GROUP}:${SSDP_PORT}\r\n` +
        'MAN: "ssdp:discover"\r\n' +
        `MX: ${this.options.mx ?? 2}\r\n` +
        `ST: ${this.options.searchTarget}\r\n` +
        'USER-AGENT: Node.js UPnP/1.1 SpeakerHub/1\r\n\r\n',
    );
    s.send(msg, SSDP_PORT, SSDP_GROUP, (err) => {
      if (err) this.log.warn({ err: err.message }, 'M-SEARCH could not be sent');
    });
  }

  async stop(): Promise<void> {
    const sockets = [this.search, this.listen].filter((s): s is Socket => !!s);
    this.search = undefined;
    this.listen = undefined;
    await Promise.all(sockets.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }

  private receive(datagram: Buffer, from: string): void {
    if (!this.onSubnet(from)) return;
    const message = parseSsdpMessage(datagram.toString('utf8'));
    if (!message) return;
    const meaning = interpret(message, from);
    if (meaning?.alive) this.emit('alive', meaning.alive);
    else if (meaning?.byebye) this.emit('byebye', meaning.byebye);
  }
}

function toInt(ip: string): number {
  return ip.split('.').reduce((n, part) => ((n << 8) | Number(part)) >>> 0, 0);
}

/** A predicate for "on the subnet of that local address"; everything passes without one. */
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

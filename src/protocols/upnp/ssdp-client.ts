import { createSocket, type Socket } from 'node:dgram';
import { EventEmitter } from 'node:events';
import type { Logger } from '../../logger';
import { bindSocket, interpret, parseSsdpMessage, searchMessage, SSDP_GROUP, SSDP_PORT, subnetFilter, type SsdpAlive, type SsdpByeBye } from './ssdp';

/**
 * The upnp driver's discovery: M-SEARCH for renderers and the NOTIFY alive/byebye
 * announcements they multicast (the messages: ssdp.ts). Written on node:dgram rather than
 * node-ssdp so discovery stays on one interface (bound to its address, multicast out of it,
 * membership on it) and the driver pulls in no unmaintained dependencies.
 */

export type { SsdpAlive, SsdpByeBye };

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
    await bindSocket(search, { port: 0, address });
    if (address) search.setMulticastInterface(address);
    search.setMulticastTTL(4);
    this.search = search;

    // Announcements go to the group on port 1900; other UPnP software on this host may hold it too.
    const listen = createSocket({ type: 'udp4', reuseAddr: true });
    listen.on('message', (m, r) => this.receive(m, r.address));
    listen.on('error', (e) => this.log.warn({ err: e.message }, 'SSDP listen socket error'));
    try {
      await bindSocket(listen, { port: SSDP_PORT, exclusive: false });
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
    const msg = searchMessage(this.options.searchTarget, this.options.mx ?? 2, 'Node.js UPnP/1.1 SpeakerHub/1');
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

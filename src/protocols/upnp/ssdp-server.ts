import { createSocket, type Socket } from 'node:dgram';
import type { Logger } from '../../logger';
import { LimitedLog } from '../../logging/limited-log';
import type { AllowList } from '../../net/allow-list';
import { KeyedBuckets, TokenBucket } from '../../net/token-bucket';
import { MEDIA_RENDERER } from './description';
import {
  bindSocket,
  interpret,
  kindOf,
  notifyMessage,
  parseSearch,
  parseSsdpMessage,
  searchAnswer,
  searchMessage,
  SSDP_GROUP,
  SSDP_PORT,
  subnetFilter,
  type Advertised,
  type SsdpTarget,
} from './ssdp';

/**
 * The advertiser's half of SSDP (the DLNA renderers and MediaServer; the messages: ssdp.ts): answers M-SEARCH and announces (NOTIFY alive/byebye) on one
 * interface only — bound to its address, multicast out of it, group membership on it, and
 * datagrams from other subnets ignored (the kernel hands group traffic of every interface to a
 * socket on port 1900).
 *
 * Bounded: at most MAX_PENDING answers wait to be sent, and everything leaves through one
 * paced queue (SEND_PER_TICK datagrams per TICK_MS), so a flood of M-SEARCHes costs neither
 * memory nor a packet storm. Answers are rate-limited by token buckets counted in datagrams,
 * not searches (issue 32 item 11: one 94-byte ssdp:all brings an answer per device and
 * service, ~42 for a few speakers, and a search with a forged source aims them at a victim):
 * per source ANSWERS_PER_SOURCE a second (a burst of one full ssdp:all at least), and
 * ANSWERS_TOTAL a second from all sources together. A search the buckets cannot answer whole
 * is not answered at all (a partial answer would look like missing renderers).
 */

export interface SsdpDevice {
  udn: string;
  location: string;
  /** Service types of the device. */
  services: string[];
  /** Its device type (default MediaRenderer:1; the library is a MediaServer:1). */
  deviceType?: string;
}

const MAX_PENDING = 4000;
/** Answers (datagrams) a second per source, and its burst (raised to one full ssdp:all when that is more). */
export const ANSWERS_PER_SOURCE = 50;
const SOURCE_BURST = 100;
/** Answers a second from all sources together, and the burst. */
export const ANSWERS_TOTAL = 200;
const TOTAL_BURST = 400;
const MAX_SOURCES = 1024;
const TICK_MS = 20;
const SEND_PER_TICK = 20;
const MULTICAST_TTL = 2;

interface Outgoing {
  at: number;
  message: Buffer;
  address: string;
  port: number;
}

export class SsdpServer {
  private listen?: Socket;
  private send?: Socket;
  private readonly devices = new Map<string, SsdpDevice>();
  private queue: Outgoing[] = [];
  private timer?: NodeJS.Timeout;
  private alive?: NodeJS.Timeout;
  private readonly perSource = new KeyedBuckets(SOURCE_BURST, ANSWERS_PER_SOURCE, MAX_SOURCES);
  private readonly total = new TokenBucket(TOTAL_BURST, ANSWERS_TOTAL);
  /** Answers (datagrams) refused by the rate limits since start (tests, the bench). */
  refusedAnswers = 0;
  private readonly refused: LimitedLog;
  private readonly onSubnet: (ip: string) => boolean;
  private stopped = false;
  /** Datagrams handed to the socket and not yet sent (closing the socket would drop them). */
  private inFlight = 0;
  /** Told the UDN of every other UPnP device heard (NOTIFY alive, answers to our M-SEARCH). */
  onForeignDevice?: (udn: string) => void;

  constructor(
    private readonly address: string,
    private readonly maxAgeSeconds: number,
    private readonly serverHeader: string,
    private readonly log: Logger,
    /** dlna.allow: searches from other hosts are not answered. */
    private readonly allow?: AllowList,
  ) {
    this.onSubnet = subnetFilter(address);
    this.refused = new LimitedLog(log, 'DLNA: M-SEARCH not answered (rate limit)');
  }

  async start(): Promise<void> {
    const send = createSocket({ type: 'udp4' });
    send.on('message', (m, r) => this.heard(m, r.address));
    send.on('error', (e) => this.log.warn({ err: e.message }, 'DLNA: SSDP send socket error'));
    await bindSocket(send, { port: 0, address: this.address });
    send.setMulticastInterface(this.address);
    send.setMulticastTTL(MULTICAST_TTL);
    // Off: a SpeakerHub UPnP driver on this machine (this hub's own, with --drivers upnp) must not
    // hear our NOTIFYs and take our renderers for speakers (a party play would play to itself).
    send.setMulticastLoopback(false);
    this.send = send;

    const listen = createSocket({ type: 'udp4', reuseAddr: true });
    listen.on('message', (m, r) => this.receive(m, r.address, r.port));
    listen.on('error', (e) => this.log.warn({ err: e.message }, 'DLNA: SSDP socket error'));
    await bindSocket(listen, { port: SSDP_PORT, exclusive: false });
    listen.addMembership(SSDP_GROUP, this.address);
    this.listen = listen;

    // Re-announce well within max-age, with jitter so that hubs started together do not sync up.
    const every = (this.maxAgeSeconds * 1000) / 3;
    const schedule = () => {
      this.alive = setTimeout(
        () => {
          for (const d of this.devices.values()) this.announce(d, 'ssdp:alive');
          schedule();
        },
        every * (0.8 + Math.random() * 0.2),
      );
      this.alive.unref();
    };
    schedule();
  }

  /** Adds (or updates) a device and says so on the network. */
  add(device: SsdpDevice): void {
    this.devices.set(device.udn, device);
    this.announce(device, 'ssdp:alive');
  }

  /** Removes a device, saying byebye. */
  remove(udn: string): void {
    const d = this.devices.get(udn);
    if (!d) return;
    this.devices.delete(udn);
    this.announce(d, 'ssdp:byebye');
  }

  get pending(): number {
    return this.queue.length;
  }

  /** Says byebye for every device, waits for those datagrams to leave, closes the sockets. */
  async stop(): Promise<void> {
    clearTimeout(this.alive);
    for (const d of [...this.devices.values()]) this.remove(d.udn);
    this.queue = this.queue.filter((o) => o.message.includes('ssdp:byebye'));
    // Everything due now: the byebyes go out in paced batches before the sockets close.
    for (const o of this.queue) o.at = 0;
    while (this.queue.length && this.send) {
      // Faster than in normal running: a hub with thousands of renderers must finish its shutdown.
      this.flush(SEND_PER_TICK * 5);
      if (this.queue.length) await new Promise((r) => setTimeout(r, TICK_MS));
    }
    for (let waited = 0; this.inFlight > 0 && waited < 1000; waited += 5) await new Promise((r) => setTimeout(r, 5));
    this.stopped = true;
    clearTimeout(this.timer);
    const sockets = [this.listen, this.send].filter((s): s is Socket => !!s);
    this.listen = undefined;
    this.send = undefined;
    await Promise.all(sockets.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }

  private notifyTargets(d: SsdpDevice): SsdpTarget[] {
    return [
      { nt: 'upnp:rootdevice', usn: `${d.udn}::upnp:rootdevice` },
      { nt: d.udn, usn: d.udn },
      { nt: d.deviceType ?? MEDIA_RENDERER, usn: `${d.udn}::${d.deviceType ?? MEDIA_RENDERER}` },
      ...d.services.map((s) => ({ nt: s, usn: `${d.udn}::${s}` })),
    ];
  }

  private advertised(d: SsdpDevice): Advertised {
    return { location: d.location, maxAgeSeconds: this.maxAgeSeconds, server: this.serverHeader };
  }

  private announce(d: SsdpDevice, nts: 'ssdp:alive' | 'ssdp:byebye'): void {
    for (const t of this.notifyTargets(d)) {
      // Not subject to MAX_PENDING: announcements are proportional to the published devices (bounded by the speakers).
      this.enqueue({ at: Date.now(), message: notifyMessage(t, nts, this.advertised(d)), address: SSDP_GROUP, port: SSDP_PORT }, false);
    }
  }

  private receive(datagram: Buffer, from: string, port: number): void {
    if (this.stopped || !this.onSubnet(from) || datagram.length > 4096 || (this.allow && !this.allow.allows(from))) return;
    const message = parseSsdpMessage(datagram.toString('latin1'));
    if (!message) return;
    if (kindOf(message) === 'notify') return this.heard(datagram, from);
    const search = parseSearch(message);
    if (!search) return;
    // The same rule for searches: a SpeakerHub on this very address is not answered; other
    // control points on this machine (a Home Assistant beside the hub) are.
    if (from === this.address && /SpeakerHub/i.test(search.userAgent)) return;
    const { st, mx } = search;
    const answers: { d: SsdpDevice; t: SsdpTarget }[] = [];
    for (const d of this.devices.values()) for (const t of this.notifyTargets(d)) if (st === 'ssdp:all' || st === t.nt) answers.push({ d, t });
    if (!answers.length || !this.admit(from, answers.length)) return;
    for (const { d, t } of answers) {
      const at = Date.now() + Math.floor(Math.random() * mx * 1000 * 0.5);
      if (!this.enqueue({ at, message: searchAnswer(t, this.advertised(d)), address: from, port })) return;
    }
  }

  /** Searches the LAN once for devices of a type (answers reach onForeignDevice). */
  search(st: string, mx = 1): void {
    this.enqueue({ at: 0, message: searchMessage(st, mx, this.serverHeader), address: SSDP_GROUP, port: SSDP_PORT });
  }

  /** Another device's NOTIFY alive or search answer: its UDN, unless it is one of ours. */
  private heard(datagram: Buffer, from: string): void {
    if (!this.onForeignDevice || datagram.length > 4096 || !this.onSubnet(from)) return;
    const message = parseSsdpMessage(datagram.toString('latin1'));
    const udn = message && interpret(message, from)?.alive?.udn;
    if (udn && !this.devices.has(udn)) this.onForeignDevice(udn);
  }

  /** Takes `answers` tokens from the source's bucket and the total one, or refuses the search. */
  private admit(from: string, answers: number): boolean {
    const now = Date.now();
    const mine = this.perSource.get(from, now);
    let reason: string | undefined;
    if (!mine) reason = 'too many senders';
    // A bucket smaller than one full answer would never let a search through: take it all from a full one.
    else if (!mine.take(Math.min(answers, mine.burst), now)) reason = 'answers per source';
    else if (!this.total.take(Math.min(answers, this.total.burst), now)) {
      mine.giveBack(Math.min(answers, mine.burst));
      reason = 'answers in total';
    }
    if (!reason) return true;
    this.refusedAnswers += answers;
    this.refused.warn({ from, reason, answers });
    return false;
  }

  private enqueue(o: Outgoing, bounded = true): boolean {
    if (this.stopped) return false;
    if (bounded && this.queue.length >= MAX_PENDING) {
      this.refused.warn({ to: o.address, reason: 'answer queue full' });
      return false;
    }
    this.queue.push(o);
    this.tick();
    return true;
  }

  private tick(): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
      if (this.queue.length) this.tick();
    }, TICK_MS);
  }

  private flush(budget = SEND_PER_TICK): void {
    const now = Date.now();
    let sent = 0;
    const later: Outgoing[] = [];
    for (const o of this.queue) {
      if (sent < budget && o.at <= now) {
        sent++;
        if (!this.send) continue;
        this.inFlight++;
        this.send.send(o.message, o.port, o.address, () => this.inFlight--);
      } else later.push(o);
    }
    this.queue = later;
  }
}

import { EventEmitter } from 'node:events';
import type { Clock, TimerHandle } from '../../core/clock';
import type { Logger } from '../../logger';
import { interfaceAddress } from '../../net/interface-address';
import type { DriverEvents, MediaRequest, Speaker, SpeakerDriver } from '../driver';
import type { UpnpConfig } from './config';
import { fetchDescription, MEDIA_RENDERER } from '../../protocols/upnp/description-parse';
import { GenaServer } from '../../protocols/upnp/gena-subscriber';
import { UpnpSpeaker, type PlayTicket } from './renderer';
import { SsdpClient, type SsdpAlive, type SsdpByeBye } from '../../protocols/upnp/ssdp-client';

export interface UpnpDriverOptions {
  config: UpnpConfig;
  /** Interface for SSDP, GENA callbacks and control traffic (network.interface). */
  interfaceName?: string;
  /** IPv4 address of that interface (the hub resolves it once: SpeakerHub.networkAddress). */
  address?: string;
  clock: Clock;
  logger: Logger;
  /**
   * True for a URL this hub's media server hands out (this run or an earlier one): a renderer
   * found playing one that no playback tracks is stopped. Without it, everything found
   * playing is reported as someone else's playback.
   */
  isHubMediaUrl?: (url: string) => boolean;
}

const RENDERER_TYPE = /^urn:schemas-upnp-org:device:MediaRenderer:\d+$/;
/** Extra seconds past max-age before an unannounced renderer is checked (announcements run late). */
const EXPIRY_GRACE_S = 10;
/** Extra looks for a renderer that went unavailable (see lookSoon). */
const QUICK_RECHECK_MS = [2000, 5000, 10_000];

/**
 * UPnP/DLNA MediaRenderers as hub speakers: found by SSDP on one interface and at static
 * description URLs, keyed by UDN so a renderer that moves to another address stays the same
 * speaker.
 */
export class UpnpDriver extends EventEmitter<DriverEvents> implements SpeakerDriver {
  readonly name = 'upnp';
  private readonly config: UpnpConfig;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly interfaceName?: string;
  private readonly isHubMediaUrl?: (url: string) => boolean;
  private address?: string;
  private gena?: GenaServer;
  private ssdp?: SsdpClient;
  private readonly byUdn = new Map<string, UpnpSpeaker>();
  /** Description fetches under way, by URL: a burst of announcements resolves a renderer once. */
  private readonly resolving = new Map<string, Promise<UpnpSpeaker | undefined>>();
  private readonly expiry = new Map<string, TimerHandle>();
  private readonly timers = new Set<TimerHandle>();
  private running = false;

  constructor(options: UpnpDriverOptions) {
    super();
    this.config = options.config;
    this.clock = options.clock;
    this.log = options.logger.child({ component: 'upnp' });
    this.interfaceName = options.interfaceName;
    this.address = options.address;
    this.isHubMediaUrl = options.isHubMediaUrl;
  }

  /**
   * Binds the GENA callback server (and SSDP) and starts discovery; renderers are announced
   * with speakerAdded as they answer, so this does not wait for them.
   */
  async start(): Promise<void> {
    if (this.running) return;
    if (!this.address && this.interfaceName) this.address = interfaceAddress(this.interfaceName);
    this.gena = new GenaServer({ address: this.address, port: this.config.callbackPort, logger: this.log });
    await this.gena.start();
    this.running = true;
    if (this.config.ssdp) {
      const ssdp = new SsdpClient({ address: this.address, searchTarget: MEDIA_RENDERER, mx: 1, logger: this.log });
      ssdp.on('alive', (m) => this.onAlive(m));
      ssdp.on('byebye', (m) => this.onByeBye(m));
      await ssdp.start();
      this.ssdp = ssdp;
      // Datagrams get lost: search a few times at start, then every searchIntervalSeconds.
      ssdp.searchNow();
      this.after(700, () => this.ssdp?.searchNow());
      this.after(2500, () => this.ssdp?.searchNow());
      this.every(this.config.searchIntervalSeconds * 1000, () => this.ssdp?.searchNow());
    }
    for (const url of this.config.renderers) void this.resolve(url);
    this.every(this.config.recheckIntervalSeconds * 1000, () => this.recheck());
    this.log.info(
      { interface: this.interfaceName, address: this.address, ssdp: this.config.ssdp, staticRenderers: this.config.renderers.length },
      'UPnP driver started',
    );
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    for (const t of [...this.timers, ...this.expiry.values()]) t.cancel();
    this.timers.clear();
    this.expiry.clear();
    await this.ssdp?.stop();
    this.ssdp = undefined;
    await Promise.allSettled([...this.byUdn.values()].map((s) => s.close()));
    await this.gena?.stop();
    this.gena = undefined;
    this.log.info('UPnP driver stopped');
  }

  speakers(): UpnpSpeaker[] {
    return [...this.byUdn.values()];
  }

  /**
   * Starts the media on several renderers as one act: every renderer is loaded
   * (SetAVTransportURI, after a Stop for a renderer not known to be idle) in parallel, then Play goes out to all of them at once, so one slow
   * SetAVTransportURI does not skew the others' start; then each is confirmed playing.
   */
  async playGroup(speakers: Speaker[], media: MediaRequest): Promise<PromiseSettledResult<void>[]> {
    const own = speakers.map((s) => (s instanceof UpnpSpeaker && this.byUdn.get(s.udn) === s ? s : undefined));
    const loaded = await Promise.allSettled(own.map((s) => (s ? s.load(media) : Promise.reject(new Error('not a speaker of the upnp driver')))));
    const started = await Promise.allSettled(
      loaded.map(async (r, i) => {
        if (r.status === 'rejected') throw r.reason;
        await own[i]!.start(r.value);
        return r.value;
      }),
    );
    return Promise.allSettled(
      started.map(async (r: PromiseSettledResult<PlayTicket>, i) => {
        if (r.status === 'rejected') throw r.reason;
        await own[i]!.confirm(r.value);
      }),
    );
  }

  // ---- discovery ---------------------------------------------------------------------

  private onAlive(m: SsdpAlive): void {
    if (!this.running) return;
    const known = this.byUdn.get(m.udn);
    if (!known) {
      if (RENDERER_TYPE.test(m.type)) void this.resolve(m.location);
      return;
    }
    this.refreshExpiry(known, m.maxAgeSeconds);
    const rebooted = m.bootId !== undefined && known.bootId !== undefined && m.bootId !== known.bootId;
    if (m.bootId) known.bootId = m.bootId;
    if (!known.available || known.location !== m.location) {
      void this.resolve(m.location);
    } else if (m.via === 'notify' || rebooted) {
      // A renderer announces itself at start: after a restart it has forgotten our subscriptions.
      known.checkSubscriptions(rebooted);
    }
  }

  private onByeBye(m: SsdpByeBye): void {
    const known = this.byUdn.get(m.udn);
    if (!known?.available) return;
    this.expiry.get(known.udn)?.cancel();
    this.expiry.delete(known.udn);
    known.markUnavailable('it said goodbye (SSDP byebye)');
  }

  /** Reads a description and adds or reconnects that renderer; undefined when it cannot. */
  private resolve(location: string): Promise<UpnpSpeaker | undefined> {
    let pending = this.resolving.get(location);
    if (!pending) {
      pending = this.connect(location).finally(() => this.resolving.delete(location));
      this.resolving.set(location, pending);
    }
    return pending;
  }

  private async connect(location: string): Promise<UpnpSpeaker | undefined> {
    const gena = this.gena;
    if (!gena || !this.running) return undefined;
    let found;
    try {
      found = await fetchDescription(location, { timeoutMs: this.config.requestTimeoutMs, localAddress: this.address });
    } catch (e) {
      this.log.debug({ location, err: (e as Error).message }, 'renderer description not readable');
      return undefined;
    }
    const { description, localAddress } = found;
    if (!this.running) return undefined;
    // GENA callbacks must name an address the renderer reaches: the interface's, else the one this connection used.
    const callbackHost = this.address ?? localAddress ?? '127.0.0.1';
    let speaker = this.byUdn.get(description.udn);
    const isNew = !speaker;
    speaker ??= new UpnpSpeaker(description, {
      config: this.config,
      clock: this.clock,
      logger: this.log,
      gena,
      localAddress: this.address,
      isHubMediaUrl: this.isHubMediaUrl,
    });
    try {
      await speaker.connect(description, callbackHost);
    } catch (e) {
      this.log.warn({ location, err: (e as Error).message }, 'renderer found but not controllable');
      speaker.markUnavailable((e as Error).message);
      return undefined;
    }
    if (isNew) {
      // Found twice at once (a static URL and SSDP naming it differently): keep the first.
      const first = this.byUdn.get(speaker.udn);
      if (first || !this.running) {
        await speaker.close();
        return first;
      }
      this.byUdn.set(speaker.udn, speaker);
      const added = speaker;
      added.on('availability', (available) => {
        if (!available) this.lookSoon(added);
      });
      this.log.info({ deviceId: speaker.id, name: description.friendlyName, model: description.modelName, location }, 'renderer found');
      this.emit('speakerAdded', speaker);
    }
    return speaker;
  }

  /**
   * A renderer that just went away is looked for again after 2, 5 and 10 s, besides the
   * periodic re-check: one that only hung comes back within seconds, maybe still playing
   * what the hub dropped it from, and connect() stops that left-over playback.
   */
  private lookSoon(speaker: UpnpSpeaker): void {
    for (const ms of QUICK_RECHECK_MS) {
      this.after(ms, () => {
        if (!speaker.available && this.byUdn.get(speaker.udn) === speaker) void this.resolve(speaker.location);
      });
    }
  }

  /** A renderer that stops announcing itself is checked once its max-age runs out. */
  private refreshExpiry(speaker: UpnpSpeaker, maxAgeSeconds: number): void {
    this.expiry.get(speaker.udn)?.cancel();
    const timer = this.clock.setTimer(
      () => {
        this.expiry.delete(speaker.udn);
        if (this.running) void speaker.verify('its SSDP announcement expired');
      },
      (maxAgeSeconds + EXPIRY_GRACE_S) * 1000,
    );
    this.expiry.set(speaker.udn, timer);
  }

  /**
   * Periodic: static renderers not known yet are looked for; unavailable renderers (static
   * or not) are tried at their last address; idle available static renderers are checked
   * (playing ones are polled every second anyway).
   */
  private recheck(): void {
    if (!this.running) return;
    const locations = new Set(this.config.renderers);
    for (const speaker of this.byUdn.values()) {
      if (!speaker.available) {
        void this.resolve(speaker.location);
      } else if (locations.has(speaker.location) && !speaker.busy) {
        void speaker.verify('its periodic check failed');
      }
      locations.delete(speaker.location);
    }
    for (const url of locations) void this.resolve(url);
  }

  private after(ms: number, fn: () => void): void {
    const t = this.clock.setTimer(() => {
      this.timers.delete(t);
      if (this.running) fn();
    }, ms);
    this.timers.add(t);
  }

  private every(ms: number, fn: () => void): void {
    const tick = () => {
      this.timers.delete(handle);
      if (!this.running) return;
      fn();
      handle = this.clock.setTimer(tick, ms);
      this.timers.add(handle);
    };
    let handle = this.clock.setTimer(tick, ms);
    this.timers.add(handle);
  }
}

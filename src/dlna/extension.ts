import { createHash } from 'node:crypto';
import { networkInterfaces, release } from 'node:os';
import type { ExtensionContext, HubExtension } from '../extensions/extension';
import type { Logger } from '../logger';
import { AllowList } from '../net/allow-list';
import { interfaceAddress } from '../net/interface-address';
import { Gena } from '../protocols/upnp/gena-publisher';
import { ClientHubPort, type HubPort } from './hub-port';
import { DlnaHttpServer } from './http-server';
import { LibraryDevice } from './library-device';
import { Publisher } from './publisher';
import { MEDIA_RENDERER } from '../protocols/upnp/description';
import { SsdpServer } from '../protocols/upnp/ssdp-server';

export interface DlnaStatus {
  interfaceName: string;
  address: string;
  /** Base URL of the renderers' HTTP server. */
  url: string;
  /** Who may use the renderers (dlna.allow): "any host" or the list. No API token is asked. */
  allow: string;
  renderers: number;
  /** The library's MediaServer friendlyName, when published (dlna.mediaServer). */
  mediaServer?: string;
}

/** How long the start waits for the LAN's UPnP renderers to answer, to leave the upnp driver's speakers out. */
const UPNP_SEARCH_WAIT_MS = 1500;

/**
 * The DLNA front end (`--dlna`): every speaker the hub drives published as a UPnP AV
 * MediaRenderer:1, plus "All speakers" and an announcement renderer per speaker. Off unless
 * `dlna.enabled`; SSDP runs on `network.interface` only (or, without one, the first LAN
 * interface, named in the banner).
 */
export class DlnaExtension implements HubExtension {
  readonly name = 'dlna';
  private http?: DlnaHttpServer;
  private ssdp?: SsdpServer;
  private gena?: Gena;
  private hub?: HubPort;
  private publisher?: Publisher;
  private library?: LibraryDevice;
  private _status?: DlnaStatus;

  constructor(private readonly options: { port?: (ctx: ExtensionContext, log: Logger) => HubPort } = {}) {}

  get status(): DlnaStatus | undefined {
    if (!this._status) return undefined;
    return { ...this._status, renderers: this.publisher?.count ?? 0 };
  }

  /** The published renderers (tests, the banner). */
  renderers() {
    return this.publisher?.list() ?? [];
  }

  async start(ctx: ExtensionContext): Promise<void> {
    const cfg = ctx.config.dlna;
    if (!cfg.enabled) return;
    const log = ctx.logger;
    const iface = chooseInterface(ctx.config.network.interface);
    const serverHeader = `Linux/${release()} UPnP/1.0 SpeakerHub/${ctx.version}`;
    const allow = new AllowList(cfg.allow);
    try {
      this.gena = new Gena(
        {
          maxPerService: cfg.maxSubscribersPerService,
          maxTotal: cfg.maxSubscribers,
          maxSeconds: cfg.maxSubscriptionSeconds,
          maxPerAddressPerService: cfg.maxSubscribersPerAddressPerService,
          maxPerAddress: cfg.maxSubscribersPerAddress,
        },
        log,
        iface.address,
        serverHeader,
      );
      const ref: { publisher?: Publisher } = {};
      const routes = {
        description: (slug: string) => ref.publisher?.description(slug),
        scpd: (s: string) => ref.publisher?.scpd(s),
        icon: () => ref.publisher!.icon(),
        control: async (...a: Parameters<Publisher['control']>) => ref.publisher?.control(...a),
        event: (...a: Parameters<Publisher['event']>) => ref.publisher?.event(...a),
        resource: async (path: string) => ref.publisher?.resource(path),
      };
      this.http = new DlnaHttpServer(routes, serverHeader, log, allow);
      const bound = await this.http.listen(iface.address, cfg.port);
      const url = `http://${iface.address}:${bound.port}`;
      this.ssdp = new SsdpServer(iface.address, cfg.maxAgeSeconds, serverHeader, log, allow);
      await this.ssdp.start();
      this.hub = this.options.port?.(ctx, log) ?? new ClientHubPort(ctx, log);
      const publisher = new Publisher(this.hub, cfg, ctx.uuid, ctx.version, url, this.ssdp, this.gena, log);
      ref.publisher = publisher;
      this.publisher = publisher;

      // A speaker of the upnp driver is a renderer already: its DeviceID is derived from its UDN,
      // so the UDNs heard on the LAN tell which speakers those are.
      const upnpIds = new Set<string>();
      publisher.upnpSpeaker = (s) => upnpIds.has(s.id);
      const upnpDriver = (ctx.config.drivers as readonly string[]).includes('upnp');
      if (upnpDriver && !cfg.publishUpnpSpeakers) {
        this.ssdp.onForeignDevice = (udn) => {
          const id = upnpDeviceId(udn);
          if (upnpIds.has(id) || upnpIds.size >= 10_000) return;
          upnpIds.add(id);
          if (publisher.count && this.hub?.speaker(id)) publisher.reconcile();
        };
        this.ssdp.search(MEDIA_RENDERER);
        await new Promise((r) => setTimeout(r, UPNP_SEARCH_WAIT_MS));
      }
      await this.hub.start((c) => publisher.hubChanged(c));
      if (cfg.mediaServer && ctx.library) {
        this.library = new LibraryDevice(ctx.library, ctx.uuid, ctx.version, url, this.gena, log, cfg.mediaServerName);
        publisher.publishLibrary(this.library);
      }
      this._status = {
        interfaceName: iface.name,
        address: iface.address,
        url,
        renderers: publisher.count,
        allow: allow.describe(),
        ...(this.library ? { mediaServer: this.library.friendlyName } : {}),
      };
      log.info({ interface: iface.name, address: iface.address, url, renderers: publisher.count }, 'DLNA renderers published');
      // UPnP has no way to carry the API token: say so where the operator looks (issue 32 item 6).
      log.warn(
        { allow: allow.describe(), allowLocalUrls: cfg.allowLocalUrls },
        `DLNA takes no API token: ${allow.any ? 'any host on the LAN' : `hosts in ${allow.describe()}`} may play on and set the volume of every speaker (limit with dlna.allow)`,
      );
    } catch (e) {
      await this.stop();
      throw e;
    }
  }

  /** The library's MediaServer, when published (tests). */
  get mediaServer(): { udn: string; name: string; location: string } | undefined {
    const l = this.library;
    return l && { udn: l.udn, name: l.friendlyName, location: l.location };
  }

  async stop(): Promise<void> {
    this._status = undefined;
    this.library?.close();
    this.library = undefined;
    await this.ssdp?.stop().catch(() => undefined);
    this.ssdp = undefined;
    this.gena?.close();
    this.gena = undefined;
    await this.http?.close();
    this.http = undefined;
    await this.hub?.stop().catch(() => undefined);
    this.hub = undefined;
    this.publisher = undefined;
  }
}

/** The interface SSDP runs on: network.interface, else the first non-internal IPv4 one. */
export function chooseInterface(name: string | undefined): { name: string; address: string } {
  if (name) return { name, address: interfaceAddress(name) };
  for (const [n, addrs] of Object.entries(networkInterfaces())) {
    const a = addrs?.find((x) => x.family === 'IPv4' && !x.internal);
    if (a) return { name: n, address: a.address };
  }
  throw new Error('DLNA needs a network interface with an IPv4 address (none found); choose one with --interface');
}

/**
 * The upnp driver's DeviceID for a renderer's UDN (the driver's rule: digitId('upnp:' + UDN in
 * lower case), repeated here because a front end does not import a driver).
 */
export function upnpDeviceId(udn: string): string {
  const h = createHash('sha256').update(`upnp:${udn.trim().toLowerCase()}`).digest();
  const n = h.readBigUInt64BE(0) % 10n ** 13n;
  return String(BigInt(1 + (h[8] % 9)) * 10n ** 13n + n);
}

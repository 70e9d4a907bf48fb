import type { IncomingMessage } from 'node:http';
import type { Logger } from '../logger';
import { LimitedLog } from '../logging/limited-log';
import type { DlnaConfig } from './config';
import { deviceDescription, iconPng, MODEL_NAME, rendererPath, rendererUdn } from './description';
import { propertySetOf } from '../protocols/upnp/gena';
import { Gena } from '../protocols/upnp/gena-publisher';
import type { DlnaRoutes, RoutedService } from './http-server';
import { LIBRARY_SLUG, LibraryDevice, MEDIA_SERVER } from './library-device';
import type { HubChange, HubPort, SpeakerView } from './hub-port';
import { Renderer, SINK_PROTOCOLS, toUpnpError, type RendererIdentity, type RendererKind } from './renderer';
import { SERVICES, SERVICE_NAMES, scpdXml } from './scpd';
import { parseSoapRequest, soapFault, soapResponse, UpnpError } from '../protocols/upnp/soap';
import type { SsdpServer } from '../protocols/upnp/ssdp-server';

/**
 * The set of published renderers: one per speaker (plus its announcement renderer) and "All
 * speakers", kept in step with the hub's speakers (SSDP alive when one comes, byebye when it
 * goes), and the routes of the HTTP server onto them.
 */
export class Publisher implements DlnaRoutes {
  private readonly renderers = new Map<string, Renderer>();
  /** The friendlyName each renderer was announced with: a renamed speaker is announced again. */
  private readonly announcedAs = new Map<string, string>();
  private readonly scpds = new Map<string, string>([
    ...SERVICE_NAMES.map((n) => [n, scpdXml(n)] as const),
    ['ContentDirectory', LibraryDevice.scpd()],
  ]);
  /** The hub's library as a MediaServer (dlna.mediaServer), once the extension publishes it. */
  private library?: LibraryDevice;
  /** Malformed bodies and URIs at the hub's machine: what a hostile control point sends, logged without flooding. */
  private readonly refusedLog: LimitedLog;

  constructor(
    private readonly hub: HubPort,
    private readonly config: DlnaConfig,
    private readonly hubUuid: string,
    private readonly version: string,
    private readonly baseUrl: string,
    private readonly ssdp: SsdpServer,
    private readonly gena: Gena,
    private readonly log: Logger,
  ) {
    this.refusedLog = new LimitedLog(log, 'DLNA: control request refused');
  }

  get count(): number {
    return this.renderers.size;
  }

  list(): { udn: string; name: string; kind: RendererKind; location: string }[] {
    return [...this.renderers.values()].map((r) => ({ udn: r.id.udn, name: r.friendlyName, kind: r.id.kind, location: this.location(r) }));
  }

  /**
   * Which renderers a speaker gets: none when inactive or one of ours (a renderer of this or
   * another hub found by a UPnP driver: publishing it again would loop). A speaker that is a
   * UPnP renderer already gets no second plain renderer (unless publishUpnpSpeakers), but it
   * gets its announcement renderer: announcements with the music put back after are the hub's,
   * the real renderer has none.
   */
  private publishes(s: SpeakerView): { speaker: boolean; announce: boolean } {
    if (!s.active || s.modelName === MODEL_NAME) return { speaker: false, announce: false };
    return { speaker: this.config.publishUpnpSpeakers || !this.upnpSpeaker(s), announce: this.config.announcementRenderers };
  }

  /** Publishes the library (the extension, when dlna.mediaServer and the hub has a library). */
  publishLibrary(device: LibraryDevice): void {
    this.library = device;
    this.ssdp.add({ udn: device.udn, location: device.location, services: device.serviceTypes, deviceType: MEDIA_SERVER });
    this.log.info({ name: device.friendlyName, udn: device.udn }, 'DLNA MediaServer published');
  }

  /** The library device, when published (tests, the banner). */
  get libraryDevice(): LibraryDevice | undefined {
    return this.library;
  }

  /** Set by the extension: tells the upnp driver's speakers. */
  upnpSpeaker: (s: SpeakerView) => boolean = () => false;

  hubChanged(c: HubChange): void {
    if (c.kind === 'speakers') this.reconcile();
    for (const r of this.renderers.values()) {
      if ((c.kind === 'volume' || c.kind === 'mute') && r.id.kind !== 'all' && r.id.deviceId !== c.id) continue;
      r.hubChanged(c);
    }
  }

  /** Publishes what should be, withdraws what should not (and renames: a new description for the same UDN). */
  reconcile(): void {
    const want = new Map<string, RendererIdentity>();
    const add = (kind: RendererKind, deviceId?: string) => {
      const slug = kind === 'all' ? 'all' : `${kind === 'speaker' ? 's' : 'a'}-${deviceId}`;
      want.set(slug, { kind, slug, deviceId, udn: rendererUdn(this.hubUuid, kind, deviceId) });
    };
    if (this.config.allSpeakers) add('all');
    for (const s of this.hub.speakers()) {
      const gets = this.publishes(s);
      if (gets.speaker) add('speaker', s.id);
      if (gets.announce) add('announce', s.id);
    }
    for (const [slug, r] of [...this.renderers]) {
      if (want.has(slug)) continue;
      this.renderers.delete(slug);
      this.announcedAs.delete(slug);
      this.ssdp.remove(r.id.udn);
      this.gena.dropKey(slug);
      this.log.info({ renderer: r.friendlyName, udn: r.id.udn }, 'DLNA renderer withdrawn');
    }
    for (const [slug, id] of want) {
      const known = this.renderers.get(slug);
      if (known) {
        // A new name is a new description: byebye and alive, so control points read it again.
        if (this.announcedAs.get(slug) !== known.friendlyName) {
          this.ssdp.remove(id.udn);
          this.ssdp.add({ udn: id.udn, location: this.location(known), services: SERVICE_NAMES.map((n) => SERVICES[n].type) });
          this.announcedAs.set(slug, known.friendlyName);
          this.log.info({ renderer: known.friendlyName, udn: id.udn }, 'DLNA renderer renamed');
        }
        continue;
      }
      const { announcementMode: mode, duckLevel, fadeMs } = this.config;
      const r = new Renderer(id, this.hub, this.log, (service, lc) => this.gena.publish(`${slug}/${service}`, propertySetOf({ LastChange: lc })), {
        mode,
        ...(duckLevel !== undefined ? { duckLevel } : {}),
        ...(fadeMs !== undefined ? { fadeMs } : {}),
      });
      r.allowLocalUrls = this.config.allowLocalUrls;
      // A track browsed on the hub's own MediaServer points at the hub, yet is no SSRF: its own library.
      r.ownMediaUrl = (url) => this.library?.isOwnUrl(url) ?? false;
      this.renderers.set(slug, r);
      this.announcedAs.set(slug, r.friendlyName);
      this.ssdp.add({ udn: id.udn, location: this.location(r), services: SERVICE_NAMES.map((n) => SERVICES[n].type) });
      this.log.info({ renderer: r.friendlyName, udn: id.udn }, 'DLNA renderer published');
    }
  }

  private location(r: Renderer): string {
    return `${this.baseUrl}${rendererPath(r.id.slug)}/description.xml`;
  }

  // ---- routes --------------------------------------------------------------------------------

  description(slug: string): string | undefined {
    if (slug === LIBRARY_SLUG) return this.library?.description();
    const r = this.renderers.get(slug);
    return r && deviceDescription(r.id, r.friendlyName, this.version);
  }

  scpd(service: string): string | undefined {
    return this.scpds.get(service);
  }

  icon(): Buffer {
    return iconPng();
  }

  /** The MediaServer's covers. */
  resource(path: string): Promise<{ type: string; body: Buffer } | undefined> {
    return this.library?.art(path) ?? Promise.resolve(undefined);
  }

  async control(
    slug: string,
    service: RoutedService,
    body: string,
    soapAction: string | undefined,
  ): Promise<{ status: number; body: string } | undefined> {
    if (slug === LIBRARY_SLUG) return this.library?.control(service, body, soapAction);
    const r = this.renderers.get(slug);
    if (!r || service === 'ContentDirectory') return undefined;
    try {
      let req;
      try {
        req = parseSoapRequest(body, soapAction);
      } catch (e) {
        this.refusedLog.warn({ renderer: r.friendlyName, err: (e as Error).message.slice(0, 200) });
        throw e;
      }
      if (req.serviceType !== SERVICES[service].type) throw new UpnpError('InvalidAction', `this is ${SERVICES[service].type}`);
      const out = await r.act(service, req.action, req.args);
      return { status: 200, body: soapResponse(req.serviceType, req.action, out) };
    } catch (e) {
      const err = toUpnpError(e);
      if (err.message.startsWith('refused:')) this.refusedLog.warn({ renderer: r.friendlyName, code: err.code, err: err.message });
      this.log.debug({ renderer: r.friendlyName, code: err.code, err: err.message }, 'DLNA: action refused');
      return { status: 500, body: soapFault(err) };
    }
  }

  event(method: string, slug: string, service: RoutedService, req: IncomingMessage) {
    if (slug === LIBRARY_SLUG) return this.library?.event(method, service, req.headers, req.socket.remoteAddress ?? '');
    const r = this.renderers.get(slug);
    if (!r || service === 'ContentDirectory') return undefined;
    const initial = () =>
      service === 'ConnectionManager'
        ? propertySetOf({ SourceProtocolInfo: '', SinkProtocolInfo: SINK_PROTOCOLS, CurrentConnectionIDs: '0' })
        : propertySetOf({ LastChange: r.initialLastChange(service) });
    return this.gena.handle(method, `${slug}/${service}`, req.headers, req.socket.remoteAddress ?? '', initial);
  }
}

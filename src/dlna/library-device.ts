import { hostname } from 'node:os';
import type { Logger } from '../logger';
import { LimitedLog } from '../logging/limited-log';
import type { LibraryAccess } from '../media/types';
import { deviceDescriptionXml } from '../protocols/upnp/description';
import { buildScpd, findAction } from '../protocols/upnp/scpd';
import { parseSoapRequest, soapFault, soapResponse, UpnpError } from '../protocols/upnp/soap';
import { CONTENT_DIRECTORY, ContentDirectory, protocolInfoOf } from './content-directory';
import { rendererPath, rendererUdn } from './description';
import { MEDIA_SERVER } from '../protocols/upnp/description';
import { propertySetOf } from '../protocols/upnp/gena';
import type { Gena } from '../protocols/upnp/gena-publisher';
import { SERVICES } from './scpd';

/**
 * The hub's library as a UPnP AV MediaServer:1 (dlna.mediaServer, on with --dlna): a
 * ContentDirectory (content-directory.ts) and a ConnectionManager, at /r/library/ on the DLNA
 * HTTP server, announced by the same SSDP server as the renderers and behind the same
 * dlna.allow. Its tracks' `res` are the media server's item URLs (src/media/item-urls.ts); their
 * covers are served here, at /r/library/art/<PersistentID>.
 */

export { MEDIA_SERVER };
export const LIBRARY_SLUG = 'library';
export const LIBRARY_MODEL = 'SpeakerHub library';
const ART_PATH = /^\/r\/library\/art\/(\d{1,20})$/;
/** How often the library's version is looked at, to send SystemUpdateID to subscribers. */
const UPDATE_CHECK_MS = 2000;

const CONNECTION_MANAGER = SERVICES.ConnectionManager;
export type LibraryService = 'ContentDirectory' | 'ConnectionManager';
const LIBRARY_SERVICES = { ContentDirectory: CONTENT_DIRECTORY, ConnectionManager: CONNECTION_MANAGER } as const;

export class LibraryDevice {
  readonly udn: string;
  readonly friendlyName: string;
  readonly cd: ContentDirectory;
  private readonly refused: LimitedLog;
  private timer?: NodeJS.Timeout;
  private sentUpdateId: number;

  constructor(
    private readonly library: LibraryAccess,
    hubUuid: string,
    private readonly version: string,
    readonly baseUrl: string,
    private readonly gena: Gena,
    private readonly log: Logger,
    name?: string,
  ) {
    this.udn = rendererUdn(hubUuid, 'library');
    this.friendlyName = name ?? `SpeakerHub library (${hostname()})`;
    this.cd = new ContentDirectory(library, (item) => `${baseUrl}/r/library/art/${item.persistentId}`);
    this.refused = new LimitedLog(log, 'DLNA MediaServer: request refused');
    this.sentUpdateId = this.cd.updateId;
    this.timer = setInterval(() => this.checkUpdate(), UPDATE_CHECK_MS);
    this.timer.unref();
  }

  get location(): string {
    return `${this.baseUrl}${rendererPath(LIBRARY_SLUG)}/description.xml`;
  }

  get serviceTypes(): string[] {
    return [CONTENT_DIRECTORY.type, CONNECTION_MANAGER.type];
  }

  close(): void {
    clearInterval(this.timer);
    this.gena.dropKey(LIBRARY_SLUG);
  }

  description(): string {
    const base = rendererPath(LIBRARY_SLUG);
    return deviceDescriptionXml({
      deviceType: MEDIA_SERVER,
      friendlyName: this.friendlyName,
      manufacturer: 'SpeakerHub',
      modelDescription: 'SpeakerHub media library: tracks by title, artist and album',
      modelName: LIBRARY_MODEL,
      modelNumber: this.version,
      serialNumber: 'library',
      udn: this.udn,
      dlnaDoc: 'DMS-1.50',
      icon: { url: '/icon.png', width: 48, height: 48 },
      services: (Object.keys(LIBRARY_SERVICES) as LibraryService[]).map((n) => ({
        serviceType: LIBRARY_SERVICES[n].type,
        id: LIBRARY_SERVICES[n].id,
        scpdUrl: `/scpd/${n}.xml`,
        controlUrl: `${base}/${n}/control`,
        eventSubUrl: `${base}/${n}/event`,
      })),
    });
  }

  /** The ContentDirectory's SCPD (the ConnectionManager's is the renderers'). */
  static scpd(): string {
    return buildScpd(CONTENT_DIRECTORY);
  }

  control(service: string, body: string, soapAction: string | undefined): { status: number; body: string } {
    try {
      const spec = LIBRARY_SERVICES[service as LibraryService];
      if (!spec) throw new UpnpError('InvalidAction', `no service ${service.slice(0, 32)}`);
      const req = parseSoapRequest(body, soapAction);
      if (req.serviceType !== spec.type) throw new UpnpError('InvalidAction', `this is ${spec.type}`);
      const action = findAction(spec, req.action);
      if (!action) throw new UpnpError('InvalidAction');
      for (const name of Object.keys(action.in)) if (!(name in req.args)) throw new UpnpError('InvalidArgs', `missing argument ${name}`);
      const out = spec === CONTENT_DIRECTORY ? this.cd.act(req.action, req.args) : this.connectionManager(req.action, req.args);
      return { status: 200, body: soapResponse(req.serviceType, req.action, out) };
    } catch (e) {
      const err = e instanceof UpnpError ? e : new UpnpError('CannotProcess');
      if (!(e instanceof UpnpError)) this.log.warn({ err: (e as Error).message }, 'DLNA MediaServer: action failed');
      else if (err.code === 401 || err.code === 402) this.refused.warn({ code: err.code, err: err.message.slice(0, 200) });
      return { status: 500, body: soapFault(err) };
    }
  }

  event(method: string, service: string, headers: Record<string, string | string[] | undefined>, source: string) {
    if (!(service in LIBRARY_SERVICES)) return undefined;
    const initial = () =>
      service === 'ContentDirectory'
        ? propertySetOf({ SystemUpdateID: String(this.cd.updateId) })
        : propertySetOf({ SourceProtocolInfo: this.sourceProtocols(), SinkProtocolInfo: '', CurrentConnectionIDs: '0' });
    return this.gena.handle(method, `${LIBRARY_SLUG}/${service}`, headers, source, initial);
  }

  /** Whether a URL is one of the library's track URLs (a renderer of this hub takes it). */
  isOwnUrl(url: string): boolean {
    return this.library.isItemUrl(url);
  }

  /** A cover at /r/library/art/<PersistentID>: the item's embedded picture. */
  async art(path: string): Promise<{ type: string; body: Buffer } | undefined> {
    const m = ART_PATH.exec(path);
    const item = m ? this.library.catalog.get(m[1]) : undefined;
    const pic = item && (await this.library.artwork(item));
    return pic && { type: pic.mime, body: pic.data };
  }

  /** The protocols the library's tracks are served in (GetProtocolInfo's Source). */
  sourceProtocols(): string {
    const mimes = new Set(this.library.catalog.list().map((i) => i.contentType));
    return [...mimes]
      .sort()
      .map((m) => protocolInfoOf(m))
      .join(',');
  }

  private connectionManager(action: string, args: Record<string, string>): Record<string, string | number> {
    switch (action) {
      case 'GetProtocolInfo':
        return { Source: this.sourceProtocols(), Sink: '' };
      case 'GetCurrentConnectionIDs':
        return { ConnectionIDs: '0' };
      case 'GetCurrentConnectionInfo':
        if (args.ConnectionID.trim() !== '0') throw new UpnpError('InvalidConnectionReference');
        return { RcsID: -1, AVTransportID: -1, ProtocolInfo: '', PeerConnectionManager: '', PeerConnectionID: -1, Direction: 'Output', Status: 'OK' };
      default:
        throw new UpnpError('InvalidAction');
    }
  }

  private checkUpdate(): void {
    const id = this.cd.updateId;
    if (id === this.sentUpdateId) return;
    this.sentUpdateId = id;
    this.log.debug({ updateId: id }, 'DLNA MediaServer: library changed');
    void this.gena.publish(`${LIBRARY_SLUG}/ContentDirectory`, propertySetOf({ SystemUpdateID: String(id) }));
  }
}

import { attr, child, escapeXml, parseControlPointXml, text, XmlError } from './xml';

/**
 * DIDL-Lite (ContentDirectory results, AVTransport metadata) and UPnP's H+:MM:SS times: the
 * one writer (the DLNA renderers and MediaServer; the upnp driver's SetAVTransportURI
 * metadata) and the one reader. Every value is escaped; a property is written only when it
 * has a value and the control point's Filter asks for it.
 */

const DIDL_OPEN =
  '<DIDL-Lite xmlns="urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/" xmlns:dc="http://purl.org/dc/elements/1.1/" ' +
  'xmlns:upnp="urn:schemas-upnp-org:metadata-1-0/upnp/" xmlns:dlna="urn:schemas-dlna-org:metadata-1-0/">';

export interface DidlResource {
  url: string;
  /** e.g. http-get:*:audio/mpeg:* */
  protocolInfo: string;
  /** Seconds. */
  duration?: number;
  size?: number;
}

export interface DidlObject {
  id: string;
  parentId: string;
  title: string;
  /** upnp:class, e.g. object.item.audioItem.musicTrack or object.container.album.musicAlbum. */
  upnpClass: string;
  container?: { childCount?: number; searchable?: boolean };
  artist?: string;
  album?: string;
  creator?: string;
  albumArtUri?: string;
  trackNumber?: number;
  res?: DidlResource;
}

/**
 * Which optional properties a Filter asks for: "*" (or empty, as many control points send) is
 * all of them; otherwise the comma-separated names (e.g. "dc:title,res,res@duration").
 */
export class DidlFilter {
  private readonly names?: Set<string>;

  constructor(filter: string) {
    const f = filter.trim();
    if (f === '' || f === '*' || f.split(',').some((n) => n.trim() === '*')) return;
    this.names = new Set(f.split(',').map((n) => n.trim()));
  }

  has(name: string): boolean {
    return !this.names || this.names.has(name);
  }

  static readonly ALL = new DidlFilter('*');
}

/** H+:MM:SS.FFF, the form of res@duration. */
export function formatDuration(seconds: number): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const s = Math.floor(ms / 1000);
  return `${Math.floor(s / 3600)}:${pad(Math.floor(s / 60) % 60)}:${pad(s % 60)}.${pad(ms % 1000, 3)}`;
}

/** One object (item or container) of a DIDL-Lite document. */
export function didlObject(o: DidlObject, filter: DidlFilter = DidlFilter.ALL): string {
  const e = escapeXml;
  const parts: string[] = [`<dc:title>${e(o.title)}</dc:title>`, `<upnp:class>${e(o.upnpClass)}</upnp:class>`];
  if (o.artist && filter.has('upnp:artist')) parts.push(`<upnp:artist>${e(o.artist)}</upnp:artist>`);
  if ((o.creator ?? o.artist) && filter.has('dc:creator')) parts.push(`<dc:creator>${e(o.creator ?? o.artist!)}</dc:creator>`);
  if (o.album && filter.has('upnp:album')) parts.push(`<upnp:album>${e(o.album)}</upnp:album>`);
  if (o.trackNumber && filter.has('upnp:originalTrackNumber')) parts.push(`<upnp:originalTrackNumber>${o.trackNumber}</upnp:originalTrackNumber>`);
  // No dlna:profileID: the cover is the file's own picture, of whatever size, and a wrong profile is worse than none.
  if (o.albumArtUri && filter.has('upnp:albumArtURI')) parts.push(`<upnp:albumArtURI>${e(o.albumArtUri)}</upnp:albumArtURI>`);
  if (o.res && filter.has('res')) {
    const r = o.res;
    const attrs = [`protocolInfo="${e(r.protocolInfo)}"`];
    if (r.duration !== undefined && filter.has('res@duration')) attrs.push(`duration="${formatDuration(r.duration)}"`);
    if (r.size !== undefined && filter.has('res@size')) attrs.push(`size="${r.size}"`);
    parts.push(`<res ${attrs.join(' ')}>${e(r.url)}</res>`);
  }
  const head = `id="${e(o.id)}" parentID="${e(o.parentId)}" restricted="1"`;
  if (o.container) {
    const count = o.container.childCount !== undefined && filter.has('@childCount') ? ` childCount="${o.container.childCount}"` : '';
    const searchable = o.container.searchable ? ' searchable="1"' : '';
    return `<container ${head}${count}${searchable}>${parts.join('')}</container>`;
  }
  return `<item ${head}>${parts.join('')}</item>`;
}

/** A DIDL-Lite document of these objects. */
export function didlDocument(objects: string[]): string {
  return `${DIDL_OPEN}${objects.join('')}</DIDL-Lite>`;
}

/** Largest metadata string read (a control point's DIDL-Lite of one item). */
const MAX_DIDL_CHARS = 32 * 1024;

export interface ItemMetadata {
  title?: string;
  protocolInfo?: string;
}

/** The title (and res protocolInfo) of the first item; {} for empty or unreadable metadata (it is optional). */
export function readDidl(metadata: string): ItemMetadata {
  if (!metadata.trim() || metadata.trim() === 'NOT_IMPLEMENTED') return {};
  try {
    const doc = parseControlPointXml(metadata, MAX_DIDL_CHARS);
    const didl = child(doc, 'DIDL-Lite');
    const item = child(didl, 'item') ?? child(didl, 'container');
    const title = text(child(item, 'title')).slice(0, 500) || undefined;
    const protocolInfo = attr(child(item, 'res'), 'protocolInfo');
    return { title, protocolInfo };
  } catch (e) {
    if (e instanceof XmlError) return {};
    throw e;
  }
}

/** Seconds → H:MM:SS (REL_TIME values and Seek targets); '0:00:00' for no time or a negative one. */
export function formatTime(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds) || seconds < 0) return '0:00:00';
  const s = Math.floor(seconds);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${Math.floor(s / 3600)}:${pad(Math.floor(s / 60) % 60)}:${pad(s % 60)}`;
}

/** Seconds from H+:MM:SS[.F+] (or H+:MM:SS[.F0/F1]); undefined when it is not one (NOT_IMPLEMENTED, '', none). */
export function parseTime(value: string | undefined): number | undefined {
  const m = /^\+?(\d{1,5}):([0-5]?\d):([0-5]?\d)(?:\.(\d+)(?:\/\d+)?)?$/.exec((value ?? '').trim());
  if (!m) return undefined;
  return Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]) + (m[4] ? Number(`0.${m[4]}`) : 0);
}

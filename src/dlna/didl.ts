import { didlDocument, didlObject } from '../protocols/upnp/didl';
import { attr, child, parseXml, text, XmlError } from './xml';

/** DIDL-Lite metadata and UPnP's H+:MM:SS times. */

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
    const doc = parseXml(metadata, MAX_DIDL_CHARS);
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

/** A DIDL-Lite document for a track the hub plays (a play that did not come from this control point). */
export function writeDidl(url: string, title: string | undefined, mime = '*'): string {
  return didlDocument([
    didlObject({
      id: '0',
      parentId: '-1',
      title: title ?? url,
      upnpClass: 'object.item.audioItem.musicTrack',
      // No URL (hub media, whose URL is a secret): a title without a resource.
      ...(url ? { res: { url, protocolInfo: `http-get:*:${mime}:*` } } : {}),
    }),
  ]);
}

export function formatTime(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds) || seconds < 0) return '0:00:00';
  const s = Math.floor(seconds);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${Math.floor(s / 3600)}:${pad(Math.floor(s / 60) % 60)}:${pad(s % 60)}`;
}

/** Seconds from H+:MM:SS[.F+] (or H+:MM:SS[.F0/F1]); undefined when it is not one. */
export function parseTime(value: string): number | undefined {
  const m = /^\+?(\d{1,5}):([0-5]?\d):([0-5]?\d)(?:\.(\d+)(?:\/\d+)?)?$/.exec(value.trim());
  if (!m) return undefined;
  return Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]) + (m[4] ? Number(`0.${m[4]}`) : 0);
}

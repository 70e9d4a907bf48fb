import { extname } from 'node:path';
import type { MediaRequest } from '../driver';
import { escapeXml } from './xml';

/**
 * What SetAVTransportURI carries besides the URL: DIDL-Lite metadata with the title and a
 * protocolInfo naming the content type. Many renderers refuse a URI without metadata, and
 * some pick their decoder from protocolInfo rather than from the HTTP Content-Type.
 */

const BY_EXTENSION: Record<string, string> = {
  '.mp3': 'audio/mpeg',
  '.wav': 'audio/wav',
  '.flac': 'audio/flac',
  '.ogg': 'audio/ogg',
  '.oga': 'audio/ogg',
  '.opus': 'audio/ogg',
  '.m4a': 'audio/mp4',
  '.aac': 'audio/aac',
  '.wma': 'audio/x-ms-wma',
};

/** The media's content type: given by the hub, else guessed from the URL, else unknown ('*'). */
export function contentTypeOf(media: MediaRequest): string {
  if (media.contentType) return media.contentType.split(';', 1)[0].trim() || '*';
  try {
    return BY_EXTENSION[extname(new URL(media.url).pathname).toLowerCase()] ?? '*';
  } catch {
    return '*';
  }
}

/** protocolInfo for a <res>: transport by URL scheme, then the content type. */
export function protocolInfo(media: MediaRequest): string {
  const scheme = media.url.slice(0, Math.max(0, media.url.indexOf(':'))).toLowerCase();
  const transport = scheme === 'rtsp' || scheme === 'rstp' ? 'rtsp-rtp-udp' : 'http-get';
  return `${transport}:*:${contentTypeOf(media)}:*`;
}

/** Longest title sent: TTS titles are the whole text, and some renderers choke on long metadata. */
const MAX_TITLE = 200;

export function didlLite(media: MediaRequest): string {
  const rawTitle = media.title?.trim() || 'SpeakerHub';
  const title = rawTitle.length > MAX_TITLE ? `${rawTitle.slice(0, MAX_TITLE - 1)}…` : rawTitle;
  const duration = media.duration !== undefined && media.duration > 0 ? ` duration="${formatTime(media.duration)}.000"` : '';
  return (
    '<DIDL-Lite xmlns="urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/" xmlns:dc="http://purl.org/dc/elements/1.1/" ' +
    'xmlns:upnp="urn:schemas-upnp-org:metadata-1-0/upnp/">' +
    '<item id="0" parentID="-1" restricted="1">' +
    `<dc:title>${escapeXml(title)}</dc:title>` +
    '<upnp:class>object.item.audioItem.musicTrack</upnp:class>' +
    `<res protocolInfo="${escapeXml(protocolInfo(media))}"${duration}>${escapeXml(media.url)}</res>` +
    '</item></DIDL-Lite>'
  );
}

/** Seconds → H:MM:SS (REL_TIME targets and DIDL durations). */
export function formatTime(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return `${h}:${String(m).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

/** H:MM:SS[.F] → seconds; undefined for NOT_IMPLEMENTED and other non-times. */
export function parseTime(value: string | undefined): number | undefined {
  const m = /^\s*(\d+):(\d{1,2}):(\d{1,2})(?:\.(\d+))?(?:\s*)$/.exec(value ?? '');
  if (!m) return undefined;
  const frac = m[4] ? Number(`0.${m[4]}`) : 0;
  return Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]) + frac;
}

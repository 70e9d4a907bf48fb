import { extname } from 'node:path';
import type { MediaRequest } from '../driver';
import { didlDocument, didlObject } from '../../protocols/upnp/didl';

/**
 * What SetAVTransportURI carries besides the URL: DIDL-Lite metadata with the title and a
 * protocolInfo naming the content type. Many renderers refuse a URI without metadata, and
 * some pick their decoder from protocolInfo rather than from the HTTP Content-Type. The
 * document is written by the one DIDL-Lite writer (src/protocols/upnp/didl.ts).
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
  // Whole seconds, as this driver has always sent them (res@duration is H+:MM:SS.FFF).
  const duration = media.duration !== undefined && media.duration > 0 ? Math.floor(media.duration) : undefined;
  return didlDocument([
    didlObject({
      id: '0',
      parentId: '-1',
      title,
      upnpClass: 'object.item.audioItem.musicTrack',
      res: { url: media.url, protocolInfo: protocolInfo(media), duration },
    }),
  ]);
}
